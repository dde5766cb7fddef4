"""nanobot (PyPI `nanobot-ai`): `nanobot serve`, its OpenAI-compatible API, one session per `session_id`.

Quirks: the model name must be one nanobot sends to chat completions (`deepseek-chat`; a name it maps to
the Responses API would not reach the mock's route), and `nanobot serve` needs aiohttp, which
`nanobot plugins enable api` installs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bench.peers.common import http, http_up, run
from bench.peers.peer import Peer


class Nanobot(Peer):
    name = "nanobot"
    version = "0.3.5"

    @property
    def bin(self) -> Path:
        return self.root / "venv" / "bin" / "nanobot"

    def installed(self) -> bool:
        return (self.root / "venv" / ".api-enabled").exists()

    def install(self) -> None:
        self.venv_install(f"nanobot-ai=={self.version}")
        self.home.mkdir(parents=True, exist_ok=True)
        run([str(self.bin), "plugins", "enable", "api"], env=self.env(), log=self.log, timeout=self.install_timeout)
        (self.root / "venv" / ".api-enabled").touch()

    def install_dirs(self) -> list[Path]:
        return [self.root / "venv"]

    def configure(self, mock_url: str) -> None:
        config = {
            "agents": {"defaults": {"model": "deepseek-chat", "provider": "custom"}},
            "providers": {"custom": {"apiKey": "sk-mock", "apiBase": mock_url}},
            "api": {"host": "127.0.0.1", "port": self.port},
        }
        path = self.home / ".nanobot" / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=2))

    def launch(self) -> tuple[list[str], dict[str, str]]:
        return [str(self.bin), "serve", "--port", str(self.port)], self.env()

    def ready(self) -> Callable[[], bool]:
        return http_up(f"http://127.0.0.1:{self.port}/health")

    def turn(self, text: str, session: str) -> str:
        payload = {"messages": [{"role": "user", "content": text}], "session_id": session}
        status, body = http("POST", f"http://127.0.0.1:{self.port}/v1/chat/completions", payload)
        if status != 200:
            raise RuntimeError(f"nanobot answered HTTP {status}: {body[:200]!r}")
        return str(json.loads(body)["choices"][0]["message"]["content"])
