"""Hermes agent (PyPI `hermes-agent`): `hermes gateway run` with its API server platform enabled.

Quirks: the API server refuses to start without an `API_SERVER_KEY` of 16+ characters; the model is a
`custom` provider pointed at the mock in `$HERMES_HOME/config.yaml`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from bench.peers.common import http, http_up
from bench.peers.peer import Peer

KEY = "bench-peers-api-key-0123456789"


class Hermes(Peer):
    name = "Hermes"
    version = "0.19.0"

    @property
    def bin(self) -> Path:
        return self.root / "venv" / "bin" / "hermes"

    def installed(self) -> bool:
        return self.bin.exists() and any((self.root / "venv" / "lib").glob("python*/site-packages/aiohttp"))

    def install(self) -> None:
        # the API server runs on aiohttp, which only the messaging extra brings
        self.venv_install(f"hermes-agent[messaging]=={self.version}")

    def install_dirs(self) -> list[Path]:
        return [self.root / "venv"]

    @property
    def hermes_home(self) -> Path:
        return self.home / ".hermes"

    def configure(self, mock_url: str) -> None:
        self.hermes_home.mkdir(parents=True, exist_ok=True)
        # YAML is a superset of JSON: no YAML writer needed.
        config = {"model": {"default": "mock-model", "provider": "custom", "base_url": mock_url, "api_key": "sk-mock"}}
        (self.hermes_home / "config.yaml").write_text(json.dumps(config, indent=2))

    def launch(self) -> tuple[list[str], dict[str, str]]:
        env = self.env(
            HERMES_HOME=str(self.hermes_home),
            API_SERVER_ENABLED="true",
            API_SERVER_KEY=KEY,
            API_SERVER_HOST="127.0.0.1",
            API_SERVER_PORT=str(self.port),
            OPENAI_API_KEY="sk-mock",
        )
        return [str(self.bin), "gateway", "run"], env

    def ready(self) -> Callable[[], bool]:
        return http_up(f"http://127.0.0.1:{self.port}/health")

    def turn(self, text: str, session: str) -> str:
        payload = {"model": "hermes-agent", "messages": [{"role": "user", "content": text}]}
        headers = {"Authorization": f"Bearer {KEY}", "X-Hermes-Session-Id": session}
        status, body = http("POST", f"http://127.0.0.1:{self.port}/v1/chat/completions", payload, headers=headers)
        if status != 200:
            raise RuntimeError(f"Hermes answered HTTP {status}: {body[:200]!r}")
        return str(json.loads(body)["choices"][0]["message"]["content"])
