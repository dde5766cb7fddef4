"""A real `hologram up` with the shipped qq plugin, shell, code and the approval-needing recorder of the approvals
e2e tests, and a tool that reads but waits at a gate (so a test holds a turn mid-call without a clock), against
the strict mock; `[plugins.qq]` pointing at a `FakeNapCat` either way."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.e2e.test_approvals_e2e import ApprovalKernel
from tests.kit.manifests import copy_shipped
from tests.kit.wait import wait_until

TOKEN = "napcat-secret-token"
BOT = 10000
GROUP, OTHER_GROUP, APPROVAL_GROUP, FLOOD_GROUP = 111, 222, 333, 444
GROUPS = list(range(501, 530))  # one per test where a test's answers must not count against another's limit
ALICE, BOB, CAROL, STRANGER, ADMIN = 10001, 10002, 10003, 10099, 10042

GATE_MANIFEST = """\
[plugin]
name = "gatetools"
version = "0.1.0"
description = "a tool that reads, and waits at a gate the test opens"
run = { module = "gatetools", env = { PYTHONPATH = "{path}", GATE_DIR = "{root}" } }

[[tools]]
name = "gate"
effect = "read"
description = "wait at the gate"
parameters = { type = "object", properties = {} }
"""

GATE = """\
import asyncio, os
from pathlib import Path
from hologram.sdk import Plugin

plugin = Plugin("gatetools")


@plugin.tool("gate")
async def gate() -> str:
    root = Path(os.environ["GATE_DIR"])
    (root / "gate-started").write_text("in")
    for _ in range(6000):  # a bound: the test opens the gate long before
        if (root / "gate-open").exists():
            return "through the gate"
        await asyncio.sleep(0.02)
    return "the gate stayed shut"


if __name__ == "__main__":
    plugin.run()
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def qq_settings(transport: str, **extra: Any) -> str:
    table = {
        "access_token": TOKEN,
        "groups": [GROUP, OTHER_GROUP, APPROVAL_GROUP, FLOOD_GROUP, *GROUPS],
        "users": [ALICE],
        "admins": [ADMIN],
        "keywords": ["hologram"],
        "language": "en",
        "group_rate": 3,
        "user_rate": 6,
        "rate_window_s": 3600,  # the flood test counts: no window passes however slow the machine
        "reconnect_max_s": 0.5,
        **extra,
    }
    lines = ["[plugins.qq]", transport]
    lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    lines += ["", f"[channels.qq.peers.group_{APPROVAL_GROUP}]", 'tools = ["@read", "deploy"]', ""]
    return "\n".join(lines)


class QQKernel(ApprovalKernel):
    def __init__(self, root: Path, mock: MockLLM, transport: str) -> None:
        super().__init__(root, mock, plugins={"gatetools": (GATE_MANIFEST, GATE)})
        copy_shipped("qq", root / "manifests")
        self.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(self.lock), check=True)
        settings = self.data / "settings.toml"
        settings.write_text(settings.read_text() + "\n" + qq_settings(transport))

    def plugin(self, name: str = "qq") -> dict[str, Any]:
        return next(p for p in self.status()["plugins"] if p["name"] == name)

    def wait_status(self, needle: str, timeout: float = 60) -> str:
        found: str = wait_until(
            lambda: self.plugin()["status"], accept=lambda s: needle in s, timeout=timeout,
            what=f"the qq plugin's status to say {needle!r}",
        )  # fmt: skip
        return found

    def session(self, sid: str) -> list[dict[str, Any]]:
        try:
            return list(call(self.data, "sessions/read", {"session": sid})["events"])
        except Exception:  # not created yet
            return []

    def inputs(self, sid: str) -> list[dict[str, Any]]:
        return [e for e in self.session(sid) if e["kind"] == "input"]

    def gate_started(self) -> bool:
        return (self.root / "gate-started").exists()

    def open_gate(self) -> None:
        (self.root / "gate-open").write_text("open")

    def reset_gate(self) -> None:
        for name in ("gate-started", "gate-open"):
            (self.root / name).unlink(missing_ok=True)
