"""Kernel administration (``kernel.llm`` providers, ``kernel.plugins``, ``kernel.memory``) end to end: a real
`hologram up` started with NO provider, the strict mock (one DeepSeek mock that wants a key, one without), and
the control socket's ``admin/<method>`` — the same methods the web plugin calls as facilities.

What is proven:
- first run: a kernel with no provider refuses a turn; ``providers_save`` (the keyed mock) makes the next
  turn answer, with no restart, the key reaching the vendor;
- a turn already running keeps the chain it started with (it waits on an approval while the chain is
  replaced); the next turn uses the new one;
- ``providers_save`` keeps a stored key when the entry omits ``api_key`` (the keyed mock would answer 401
  otherwise), reorders (the first entry answers the next turn), removes (an entry left out is gone from the
  file), clears a key on ``clear_api_key``;
- a bad entry is -32602 naming ``providers[i].field``, no value echoed, the settings file byte for byte
  unchanged;
- after every save the file is 0600, its other tables and comments survive;
- the key is absent from every answer (list, save, test, status) and from the kernel's log and output;
- ``providers_test``: ok against the mock, and the vendor's 401 / 400 message verbatim when it fails;
- plugins: list, restart (pid changes, restarts + 1), stop, start, log (the plugin's real stderr lines);
- memory: stats count sessions and events, search finds a stored turn by its words, English and Chinese;
- a plugin reaches all of it through ``plugin.facility(...)`` (the web plugin's path), and a plugin that
  restarts itself gets its answer first.

Mutation checks (done): making `merge_entry` drop the stored key turns
`test_save_keeps_key_reorders_removes` red (the keyed mock answers 401); making `write_private` create and
fchmod its file 0o644 turns `test_settings_file_private_and_tables_kept` red (mode 0o644).
"""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomli

from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.kernel import control
from mock_llm import MockLLM
from tests.kit.loop import run
from tests.kit.wait import wait_until

from .kernel import E2EKernel

pytestmark = pytest.mark.slow
KEY = "sk-admin-e2e-0123456789abcdef"
CHATTY_MANIFEST = """\
[plugin]
name = "chatty"
version = "0.1.0"
description = "says on stderr that it started, in English and Chinese"
run = {{ module = "chatty", env = {{ PYTHONPATH = "{path}" }} }}

[facilities]
provides = ["chatty.words@1"]
"""
CHATTY = """\
import os, sys
from hologram.sdk import Plugin

plugin = Plugin("chatty")

if __name__ == "__main__":
    print(f"chatty started pid {os.getpid()}", file=sys.stderr, flush=True)
    print("chatty 启动了", file=sys.stderr, flush=True)
    plugin.run()
"""
INSPECTOR_MANIFEST = """\
[plugin]
name = "inspector"
version = "0.1.0"
description = "uses the administration facilities as the web plugin does, and restarts itself once"
run = {{ module = "inspector", env = {{ PYTHONPATH = "{path}", INSPECT_FILE = "{record}" }} }}

[facilities]
requires = ["kernel.llm", "kernel.plugins", "kernel.memory"]

[[tools]]
name = "hold"
description = "holds the turn until a person approves it"
needs_approval = true
parameters = {{ type = "object", properties = {{}} }}
"""
INSPECTOR = """\
import asyncio, json, os
from hologram.sdk import Plugin

plugin = Plugin("inspector")
tasks = set()


async def look():
    seen = {
        "providers": await plugin.facility("kernel.llm").call("providers_list"),
        "plugins": await plugin.facility("kernel.plugins").call("list"),
        "stats": await plugin.facility("kernel.memory").call("stats"),
    }
    try:
        await plugin.facility("kernel.llm").call("providers_save", providers=[{"name": "x"}])
    except Exception as exc:
        seen["bad_save"] = str(exc)
    first = not os.path.exists(os.environ["INSPECT_FILE"])
    with open(os.environ["INSPECT_FILE"], "a") as f:
        f.write(json.dumps(seen) + "\\n")
    if first:  # a plugin restarting itself is answered before it is stopped
        answer = await plugin.facility("kernel.plugins").call("restart", name="inspector")
        with open(os.environ["INSPECT_FILE"], "a") as f:
            f.write(json.dumps({"restart_answer": answer}) + "\\n")


@plugin.tool("hold")
async def hold() -> str:
    return "held"


@plugin.on_start
async def begin(ctx):
    tasks.add(asyncio.get_running_loop().create_task(look()))


if __name__ == "__main__":
    plugin.run()
"""
OTHER_TABLE = "[approvals]\n# the user's own comment, kept by every save\ntimeout_s = 7\n"


class AdminKernel(E2EKernel):
    """E2EKernel's plugins plus ``chatty``; settings with an extra table and no provider at all."""

    def __init__(self, root: Path) -> None:
        code = root / "code"
        code.mkdir(parents=True)
        (code / "chatty.py").write_text(CHATTY)
        (root / "manifests").mkdir()
        (root / "manifests" / "chatty.toml").write_text(CHATTY_MANIFEST.format(path=code))
        (code / "inspector.py").write_text(INSPECTOR)
        self.inspected = root / "inspected.jsonl"
        (root / "manifests" / "inspector.toml").write_text(INSPECTOR_MANIFEST.format(path=code, record=self.inspected))
        super().__init__(root, [])
        settings = self.data / "settings.toml"
        settings.write_text(settings.read_text() + "\n" + OTHER_TABLE)
        self.output = ""

    @property
    def settings_file(self) -> Path:
        return self.data / "settings.toml"


def rpc(data: Path, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One control-socket request; the whole JSON-RPC answer (``result`` or ``error`` with its code)."""
    return control.request(data, method, params)


ANSWERS: list[str] = []  # every admin answer of this module, searched for the key at the end


def admin(kernel: AdminKernel, method: str, **params: Any) -> Any:
    answer = rpc(kernel.data, f"admin/{method}", params)
    ANSWERS.append(json.dumps(answer, ensure_ascii=False))
    assert "error" not in answer, answer
    return answer["result"]


def admin_error(kernel: AdminKernel, method: str, **params: Any) -> dict[str, Any]:
    answer = rpc(kernel.data, f"admin/{method}", params)
    ANSWERS.append(json.dumps(answer, ensure_ascii=False))
    assert "error" in answer, answer
    error: dict[str, Any] = answer["error"]
    return error


def entry(mock: MockLLM, name: str, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "deepseek",
        "base_url": mock.base_url,
        "model": "deepseek-chat",
        "thinking": True,
        "timeout_s": 10,
        "max_retries": 0,
        **fields,
    }


@pytest.fixture(scope="module")
def keyed() -> Iterator[MockLLM]:
    with MockLLM("deepseek", api_key=KEY) as m:
        yield m


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdminKernel]:
    k = AdminKernel(tmp_path_factory.mktemp("admin"))
    k.start()
    yield k
    k.output = k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM, keyed: MockLLM) -> None:
    mock.reset()
    keyed.reset()


def answer_step(text: str) -> dict[str, Any]:
    return {"reasoning_content": "thinking it over", "content": text}


def test_first_run_save_then_a_turn_answers(kernel: AdminKernel, keyed: MockLLM) -> None:
    assert admin(kernel, "providers_list") == {"providers": []}
    refused = kernel.ask("hello?")
    assert refused.returncode != 0 and "no LLM provider is configured" in refused.stderr, refused

    saved = admin(kernel, "providers_save", providers=[entry(keyed, "keyed", api_key=KEY)])
    [shown] = saved["providers"]
    assert shown["name"] == "keyed" and shown["api_key_set"] is True and shown["api_key_env"] is None
    assert "api_key" not in shown
    assert admin(kernel, "providers_list") == saved

    keyed.script([answer_step("hello from the first provider")])
    result = kernel.ask("hello?")
    assert result.returncode == 0, result.stderr
    assert "hello from the first provider" in result.stdout
    [request] = keyed.requests
    assert request.status == 200 and request.headers["authorization"] == f"Bearer {KEY}"


def test_save_keeps_key_reorders_removes(kernel: AdminKernel, keyed: MockLLM, mock: MockLLM) -> None:
    """The keyed entry comes back without ``api_key`` (as a page sends it): the stored key is kept."""
    admin(kernel, "providers_save", providers=[entry(keyed, "keyed", api_key=KEY)])
    listed = admin(kernel, "providers_list")["providers"]
    reordered = [entry(mock, "plain"), {**listed[0], "max_retries": 0}]  # listed[0] has api_key_set, no key
    saved = admin(kernel, "providers_save", providers=reordered)["providers"]
    assert [p["name"] for p in saved] == ["plain", "keyed"]
    assert [p["api_key_set"] for p in saved] == [False, True]
    written = tomli.loads(kernel.settings_file.read_text())["providers"]
    assert [p["name"] for p in written] == ["plain", "keyed"] and written[1]["api_key"] == KEY

    mock.script([answer_step("the plain one answers first")])
    first = kernel.ask("who answers?")
    assert "the plain one answers first" in first.stdout, first.stderr
    assert len(mock.requests) == 1 and keyed.requests == []

    # remove "plain": the keyed one answers, authenticated with the key that was never sent back
    saved = admin(kernel, "providers_save", providers=[saved[1]])["providers"]
    assert [p["name"] for p in saved] == ["keyed"]
    assert [p["name"] for p in tomli.loads(kernel.settings_file.read_text())["providers"]] == ["keyed"]
    keyed.script([answer_step("the keyed one, key kept")])
    second = kernel.ask("and now?")
    assert "the keyed one, key kept" in second.stdout, second.stderr
    [request] = keyed.requests
    assert request.status == 200 and request.headers["authorization"] == f"Bearer {KEY}"


def test_a_running_turn_keeps_its_chain_the_next_uses_the_new(
    kernel: AdminKernel, keyed: MockLLM, mock: MockLLM
) -> None:
    """The turn waits on an approval (deterministic: nothing moves until the test answers); the chain is
    replaced meanwhile; the turn's second request still goes to the old chain, the next turn to the new.

    Mutation checks (done): making `_Turn._complete` call ``self.agent.llm`` again sends the second request
    to the new provider; making `ProviderAdmin._close_idle` close every replaced chain closes the one this
    turn still uses, and its second request fails. Either turns this red."""
    admin(kernel, "providers_save", providers=[entry(keyed, "keyed", api_key=KEY)])
    keyed.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "h1", "name": "hold", "arguments": "{}"}]},
            answer_step("finished on the old chain"),
        ]
    )
    mock.script([answer_step("the new chain answers")])

    async def turn() -> list[Any]:
        async with await TurnClient.connect(kernel.data, client="tester", approvals=True) as client:
            started = await client.start("hold on")
            async with asyncio.timeout(60):
                async for event in started:
                    if isinstance(event, api.ApprovalRequested):
                        await asyncio.to_thread(admin, kernel, "providers_save", providers=[entry(mock, "plain")])
                        await client.approve(event, True, "go on")
            return started.events

    events = run(turn())
    [ended] = [e for e in events if isinstance(e, api.TurnEnded)]
    assert ended.output == "finished on the old chain", events
    assert len(keyed.requests) == 2 and mock.requests == []
    after = kernel.ask("and the next turn?")
    assert "the new chain answers" in after.stdout, after.stderr
    admin(kernel, "providers_save", providers=[entry(keyed, "keyed", api_key=KEY)])  # for the tests after


def test_clear_api_key(kernel: AdminKernel, keyed: MockLLM) -> None:
    admin(kernel, "providers_save", providers=[entry(keyed, "keyed", api_key=KEY)])
    [shown] = admin(kernel, "providers_save", providers=[entry(keyed, "keyed", clear_api_key=True)])["providers"]
    assert shown["api_key_set"] is False
    assert "api_key" not in tomli.loads(kernel.settings_file.read_text())["providers"][0]
    admin(kernel, "providers_save", providers=[entry(keyed, "keyed", api_key=KEY)])  # for the tests after


def test_bad_entry_names_the_field_and_leaves_the_file(kernel: AdminKernel, keyed: MockLLM, mock: MockLLM) -> None:
    before = kernel.settings_file.read_bytes()
    bad = [entry(mock, "plain"), entry(keyed, "keyed", base_url="ftp://nowhere", api_key=KEY)]
    error = admin_error(kernel, "providers_save", providers=bad)
    assert error["code"] == -32602 and error["message"].startswith("providers[1].base_url: "), error
    assert "ftp://nowhere" not in error["message"] and KEY not in error["message"]

    unknown = admin_error(kernel, "providers_save", providers=[entry(mock, "plain", colour="blue")])
    assert unknown["code"] == -32602 and "providers[0].colour: unknown field" in unknown["message"], unknown
    kind = admin_error(kernel, "providers_save", providers=[entry(mock, "plain", kind="nope")])
    assert kind["code"] == -32602 and kind["message"].startswith("providers[0].kind: unknown provider kind")
    twice = admin_error(kernel, "providers_save", providers=[entry(mock, "same"), entry(mock, "same")])
    assert twice["code"] == -32602 and twice["message"].startswith("providers[1].name: ")
    not_a_list = admin_error(kernel, "providers_save", providers="all of them")
    assert not_a_list["code"] == -32602 and not_a_list["message"].startswith("providers: ")
    extra = admin_error(kernel, "providers_save", providers=[], force=True)
    assert extra["code"] == -32602 and "force" in extra["message"]
    assert kernel.settings_file.read_bytes() == before


def test_settings_file_private_and_tables_kept(kernel: AdminKernel, keyed: MockLLM, mock: MockLLM) -> None:
    admin(kernel, "providers_save", providers=[entry(mock, "plain"), entry(keyed, "keyed")])
    path = kernel.settings_file
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "# the user's own comment, kept by every save" in text
    document = tomli.loads(text)
    assert document["approvals"] == {"timeout_s": 7}
    assert document["agent"] == {"max_steps": 6} and "cooldown_s" in document["llm"]
    assert [p["name"] for p in document["providers"]] == ["plain", "keyed"]
    assert not list(path.parent.glob(".settings.toml.*"))  # no temporary file left behind
    admin(kernel, "providers_save", providers=[entry(keyed, "keyed")])


def test_providers_test_ok_and_vendor_errors_verbatim(kernel: AdminKernel, keyed: MockLLM, mock: MockLLM) -> None:
    keyed.script([answer_step("x")])
    ok = admin(kernel, "providers_test", name="keyed")  # the saved one, with its stored key
    assert ok["ok"] is True and ok["status"] == 200 and ok["error"] is None and ok["model"], ok
    assert isinstance(ok["latency_ms"], int) and ok["latency_ms"] >= 0
    [request] = keyed.requests
    assert request.body["max_tokens"] == 1 and request.headers["authorization"] == f"Bearer {KEY}"

    wrong = admin(kernel, "providers_test", provider=entry(keyed, "draft", api_key="sk-wrong-key-9999"))
    assert wrong["ok"] is False and wrong["status"] == 401, wrong
    assert wrong["error"] == "HTTP 401: Authentication Fails, Your api key: ****9999 is invalid"

    mock.script([{"error": {"status": 400, "message": "Model Not Exist"}}])
    rejected = admin(kernel, "providers_test", provider=entry(mock, "draft", model="deepseek-nope"))
    assert rejected == {**rejected, "ok": False, "status": 400, "error": "HTTP 400: Model Not Exist"}

    unknown = admin_error(kernel, "providers_test", name="nobody")
    assert unknown["code"] == -32602 and "keyed" in unknown["message"]


def test_plugins_list_restart_stop_start_log(kernel: AdminKernel) -> None:
    listed = {p["name"]: p for p in admin(kernel, "list")["plugins"]}
    chatty = listed["chatty"]
    assert chatty["state"] == "ready" and chatty["pid"] and chatty["provides"] == ["chatty.words"]
    assert set(chatty) == {
        "name", "state", "on_demand", "reason", "pid", "restarts", "uptime_s", "waiting_on", "provides", "requires",
        "tools", "last_error", "status"
    }  # fmt: skip
    assert chatty["on_demand"] is False
    assert "lookup" in listed["e2e-tools"]["tools"]

    assert admin(kernel, "restart", name="chatty") == {"ok": True}
    kernel.wait_ready("chatty")
    after = {p["name"]: p for p in admin(kernel, "list")["plugins"]}["chatty"]
    assert after["pid"] != chatty["pid"] and after["restarts"] == chatty["restarts"] + 1

    lines = wait_until(
        lambda: admin(kernel, "log", name="chatty", lines=50)["lines"],
        accept=lambda ls: any(f"chatty started pid {after['pid']}" in line for line in ls),
        timeout=30, what="chatty's second start in its log",
    )  # fmt: skip
    assert any(f"chatty started pid {chatty['pid']}" in line for line in lines)
    assert any("chatty 启动了" in line for line in lines)
    assert all("chatty" in line for line in lines)
    assert len(admin(kernel, "log", name="chatty", lines=1)["lines"]) == 1

    assert admin(kernel, "stop", name="chatty") == {"ok": True}
    stopped = {p["name"]: p for p in admin(kernel, "list")["plugins"]}["chatty"]
    assert stopped["state"] == "stopped" and stopped["pid"] is None
    assert admin(kernel, "start", name="chatty") == {"ok": True}
    kernel.wait_ready("chatty")

    claimed = admin_error(kernel, "restart", name="chatty", caller="chatty")
    assert claimed["code"] == -32602 and "caller" in claimed["message"]
    unknown = admin_error(kernel, "restart", name="nobody")
    assert "nobody" in unknown["message"] and "chatty" in unknown["message"]
    assert admin_error(kernel, "log", name="chatty", lines=0)["code"] == -32602


def test_memory_stats_and_search(kernel: AdminKernel, keyed: MockLLM) -> None:
    before = admin(kernel, "stats")
    keyed.script([answer_step("noted"), answer_step("记下了")])
    english = kernel.ask("the walrus named Bartholomew likes saffron pancakes")
    chinese = kernel.ask("我的猫叫做小橘子，它喜欢晒太阳")
    assert english.returncode == 0 and chinese.returncode == 0, (english.stderr, chinese.stderr)
    after = admin(kernel, "stats")
    assert after["sessions"] == before["sessions"] + 2
    assert after["l1"] >= before["l1"] + 4  # an input and a response each
    assert isinstance(after["l3_triples"], int) and isinstance(after["scenes"], int)

    hits = admin(kernel, "search", text="Bartholomew saffron pancakes", limit=5)["hits"]
    assert hits and "Bartholomew" in hits[0]["text"] and hits[0]["layer"] in ("L1", "L2"), hits
    events = [h["score"] for h in hits if h["layer"] != "L3"]  # L3's own hits rank apart (interleaved)
    assert events == sorted(events, reverse=True)
    hits = admin(kernel, "search", text="小橘子 晒太阳")["hits"]
    assert hits and "小橘子" in hits[0]["text"], hits
    assert admin_error(kernel, "search", text="")["code"] == -32602


def test_a_plugin_uses_the_facilities_and_restarts_itself(kernel: AdminKernel) -> None:
    """The web plugin's path: ``plugin.facility("kernel.plugins").call(...)``; a self-restart is answered."""

    def records() -> list[dict[str, Any]]:
        lines = kernel.inspected.read_text().splitlines() if kernel.inspected.exists() else []
        return [json.loads(line) for line in lines]

    seen = wait_until(
        records, accept=lambda rs: len(rs) >= 3, timeout=60, what="the inspector's two starts and its answer"
    )
    first, answer, second = seen[:3]
    assert answer == {"restart_answer": {"ok": True}}
    assert "inspector" in {p["name"] for p in first["plugins"]["plugins"]}
    assert set(first["stats"]) == {
        "sessions", "l1", "l2", "l3_events", "l3_triples", "l3_blocks", "l3_entities", "scenes", "l3_problem",
    }  # fmt: skip
    assert "providers" in first["providers"] and "providers[0]" in first["bad_save"]
    assert second["plugins"] and KEY not in json.dumps(seen)
    kernel.wait_ready("inspector")
    [me] = [p for p in admin(kernel, "list")["plugins"] if p["name"] == "inspector"]
    assert me["restarts"] == 1 and me["requires"] == ["kernel.llm", "kernel.memory", "kernel.plugins"]


def test_key_never_in_answers_or_logs(kernel: AdminKernel) -> None:
    """Last: every admin answer of the module, the status, the log file and the kernel's output."""
    ANSWERS.append(json.dumps(rpc(kernel.data, "status")))
    assert ANSWERS and not [a for a in ANSWERS if KEY in a]
    logs = [p.read_text(errors="replace") for p in (kernel.data / "logs").glob("*.log")]
    assert logs and not [text for text in logs if KEY in text]
    assert KEY not in kernel.stop()
