"""OpenClaw (npm `openclaw`): `openclaw gateway run`, turns through its OpenAI-compatible HTTP endpoint.

Quirks: it requires Node >= 24.16 (its install script refuses an older one), so the npm package `node@24`
is installed first and put ahead on PATH for both the install and every run. Set up with `openclaw
onboard --non-interactive --accept-risk --skip-health --auth-choice custom-api-key --custom-base-url URL
--custom-compatibility openai`, then `update.checkOnStart=false` and `models.catalogRefresh.enabled=false`
(no update check or catalog fetch at start), and the gateway's `/v1/chat/completions` endpoint enabled so a
warm turn is measured over HTTP like the others' (not through a new CLI process). After tool results it
sends an extra `user` message; the measured turns call no tools, and the mock answers any request, so
that extra request would be counted as a request of the same turn, never as a new one.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.peers.common import http, http_up, run
from bench.peers.peer import Peer


class OpenClaw(Peer):
    name = "OpenClaw"
    version = "2026.9.6"

    @property
    def node_bin(self) -> Path:
        return self.root / "node24" / "node_modules" / ".bin"

    @property
    def bin(self) -> str:
        return str(self.root / "app" / "node_modules" / ".bin" / "openclaw")

    def env(self, **extra: str) -> dict[str, str]:
        base = super().env(**extra)
        return {**base, "PATH": f"{self.node_bin}:{base.get('PATH', '/usr/bin:/bin')}"}

    def installed(self) -> bool:
        return Path(self.bin).exists() and (self.node_bin / "node").exists()

    def install(self) -> None:
        npm = ["npm", "install", "--no-audit", "--no-fund"]
        for sub, spec in (("node24", "node@24"), ("app", f"openclaw@{self.version}")):
            where = self.root / sub
            where.mkdir(parents=True, exist_ok=True)
            if not (where / "package.json").exists():
                (where / "package.json").write_text('{"name": "bench-peer", "private": true}\n')
            run(
                [*npm, "--prefix", str(where), spec],
                env={**self.env(), "HOME": str(self.root), **_user_npmrc()},
                log=self.log,
                timeout=self.install_timeout,
            )

    def install_dirs(self) -> list[Path]:
        return [self.root / "node24", self.root / "app"]

    @property
    def config_path(self) -> Path:
        return self.home / ".openclaw" / "openclaw.json"

    def configure(self, mock_url: str) -> None:
        argv = [self.bin, "onboard", "--non-interactive", "--accept-risk", "--skip-health"]
        argv += ["--auth-choice", "custom-api-key", "--custom-base-url", mock_url, "--custom-compatibility", "openai"]
        argv += ["--custom-api-key", "sk-mock", "--custom-model-id", "mock-model"]
        argv += ["--gateway-port", str(self.port), "--gateway-bind", "loopback", "--no-install-daemon"]
        argv += ["--skip-channels", "--skip-skills", "--skip-search", "--skip-ui", "--skip-hooks"]
        run(argv, env=self.env(), log=self.log, timeout=300)
        config: dict[str, Any] = json.loads(self.config_path.read_text())
        config.setdefault("update", {})["checkOnStart"] = False
        config.setdefault("models", {}).setdefault("catalogRefresh", {})["enabled"] = False
        http_cfg = config.setdefault("gateway", {}).setdefault("http", {}).setdefault("endpoints", {})
        http_cfg["chatCompletions"] = {"enabled": True}
        self.config_path.write_text(json.dumps(config, indent=2))
        self.token = str(config["gateway"]["auth"]["token"])

    def launch(self) -> tuple[list[str], dict[str, str]]:
        return [self.bin, "gateway", "run"], self.env()

    def ready(self) -> Callable[[], bool]:
        return http_up(f"http://127.0.0.1:{self.port}/readyz")

    def turn(self, text: str, session: str) -> str:
        payload = {"model": "openclaw/default", "messages": [{"role": "user", "content": text}]}
        headers = {"Authorization": f"Bearer {self.token}", "x-openclaw-session-key": session}
        url = f"http://127.0.0.1:{self.port}/v1/chat/completions"
        status, body = http("POST", url, payload, headers=headers, timeout=300)
        if status != 200:
            raise RuntimeError(f"OpenClaw answered HTTP {status}: {body[:200]!r}")
        return str(json.loads(body)["choices"][0]["message"]["content"])


def _user_npmrc() -> dict[str, str]:
    """Keep the user's own npm configuration (registry, CA file) when HOME moves to the throwaway directory and
    `--prefix` moves npm's default global config with it (`${prefix}/etc/npmrc`): without them npm met a
    self-signed CA in the chain and the install failed (seen on a machine behind a proxy whose CA file is set in
    the global config, /usr/etc/npmrc)."""
    keep: dict[str, str] = {}
    rc = Path.home() / ".npmrc"
    if rc.exists():
        keep["npm_config_userconfig"] = str(rc)
    try:
        found = subprocess.run(["npm", "config", "get", "globalconfig"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return keep
    path = found.stdout.strip()
    if found.returncode == 0 and path and Path(path).is_file():
        keep["npm_config_globalconfig"] = path
    return keep
