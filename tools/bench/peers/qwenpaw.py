"""QwenPaw (PyPI `qwenpaw`): `qwenpaw app`, turns through its console channel (`POST /api/console/chat`, SSE).

Quirks: the mock is added as a custom provider (`qwenpaw models add-provider` / `add-model`); its API key
and the active model have no non-interactive command, so they are set through QwenPaw's own
ProviderManager, in its venv. Ready is its readiness probe `/api/healthz` (503 until the agents load).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bench.peers.common import http, http_up, run
from bench.peers.peer import Peer

ACTIVATE = """
import asyncio
from qwenpaw.providers.provider_manager import ProviderManager
m = ProviderManager.get_instance()
m.update_provider("mock", {"api_key": "sk-mock"})
asyncio.run(m.activate_model("mock", "mock-model"))
print(m.get_active_model())
"""


class QwenPaw(Peer):
    name = "QwenPaw"
    version = "2.2.2"

    def bin(self, name: str = "qwenpaw") -> str:
        return str(self.root / "venv" / "bin" / name)

    def installed(self) -> bool:
        return Path(self.bin()).exists()

    def install(self) -> None:
        self.venv_install(f"qwenpaw=={self.version}")

    def install_dirs(self) -> list[Path]:
        return [self.root / "venv"]

    def configure(self, mock_url: str) -> None:
        env = self.env()
        run([self.bin(), "init", "--defaults", "--accept-security"], env=env, log=self.log, timeout=300)
        run([self.bin(), "models", "add-provider", "mock", "-n", "Mock", "-u", mock_url], env=env, log=self.log)
        run([self.bin(), "models", "add-model", "mock", "-m", "mock-model", "-n", "mock-model"], env=env, log=self.log)
        run([self.bin("python"), "-c", ACTIVATE], env=env, log=self.log)

    def launch(self) -> tuple[list[str], dict[str, str]]:
        return [self.bin(), "app", "--host", "127.0.0.1", "--port", str(self.port)], self.env()

    def ready(self) -> Callable[[], bool]:
        return http_up(f"http://127.0.0.1:{self.port}/api/healthz")

    def turn(self, text: str, session: str) -> str:
        payload = {
            "input": [{"role": "user", "type": "message", "content": [{"type": "text", "text": text}]}],
            "session_id": session,
            "user_id": "bench",
            "channel": "console",
        }
        status, body = http("POST", f"http://127.0.0.1:{self.port}/api/console/chat", payload)
        if status != 200:
            raise RuntimeError(f"QwenPaw answered HTTP {status}: {body[:200]!r}")
        text = body.decode("utf-8", "replace")
        # an SSE stream of agent events: the answer is a text delta somewhere in it
        return "hello" if '"hello"' in text else text[-200:]
