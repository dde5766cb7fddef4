"""End to end, damaged storage: a real `hologram up` on files damaged on disk, `hologram doctor --repair`,
and a real `hologram ask` turn in a session with damaged rows, against the strict DeepSeek mock (which
answers HTTP 400 to a call without its result or a result without its call, as the vendors do).

Mutation checks (done):
- `SessionStore.__init__` without its damage conversion (``_raise`` re-raising as is) and without
  `check_file` → ``test_up_on_a_damaged_database_prints_one_error_and_exits_1[sessions.db-*]`` red
  (``sqlite3.DatabaseError`` traceback, exit 1 without the hint).
- `SessionStore.events` without the bytes re-read (the decode error propagates) →
  ``test_a_session_with_damaged_rows_keeps_working`` red (the turn fails: "Could not decode to UTF-8").
- `SessionStore._stand_in` returning None for every row (skip all) → the same test red: the damaged result's
  call then has no result in the stored history (`pairing_problems`) and the request carries no
  damaged-result message.
- `settings.read_text` reading with ``read_text(encoding="utf-8")`` again →
  ``test_up_with_settings_that_are_not_utf8_or_not_toml[not-utf8]`` red (UnicodeDecodeError traceback).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from damaged_files import break_text, build_cold, build_sessions, smash_header, truncate_half
from hologram.sessions import SessionStore, pairing_problems
from hologram.sessions.damaged import DAMAGED_RESPONSE, DAMAGED_RESULT
from mock_llm import MockLLM

from .kernel import E2EKernel, session_of

pytestmark = pytest.mark.slow

DAMAGES: dict[str, Callable[[Path], object]] = {"truncated": truncate_half, "header": smash_header}


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stores")
    build_sessions(root / "sessions.db", turns=60)
    build_cold(root / "cold.db", events=60)
    return root


@pytest.fixture
def kernel(tmp_path: Path, mock: MockLLM) -> Iterator[E2EKernel]:
    k = E2EKernel(tmp_path, [mock])
    yield k
    k.stop()


def up(kernel: E2EKernel) -> tuple[int, str]:
    """`hologram up` run to its end: a refused start exits by itself (a started kernel would run until the
    timeout, failing the test)."""
    result = kernel.hologram("up", "--port", "0", "--lock", str(kernel.lock), "--data", str(kernel.data), timeout=120)
    return result.returncode, result.stdout + result.stderr


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "error:" in line]


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("name", ["sessions.db", "cold.db"])
def test_up_on_a_damaged_database_prints_one_error_and_exits_1(
    kernel: E2EKernel, pristine: Path, name: str, damage: str
) -> None:
    for store in ("sessions.db", "cold.db"):
        shutil.copyfile(pristine / store, kernel.data / store)
    target = kernel.data / name
    DAMAGES[damage](target)
    with pytest.raises(sqlite3.DatabaseError):  # what `hologram up` used to die of
        sqlite3.connect(target).execute("SELECT * FROM sqlite_master").fetchall()
    before = target.read_bytes()
    code, output = up(kernel)
    assert code == 1, output
    assert "Traceback" not in output
    assert error_lines(output) == [
        next(line for line in output.splitlines() if line.startswith(f"{target}: error: damaged database: "))
    ]
    assert f"hint: run `hologram doctor --repair --data {kernel.data}`" in output
    assert target.read_bytes() == before


def test_doctor_repair_then_up_and_a_turn_in_a_recovered_session(
    kernel: E2EKernel, pristine: Path, mock: MockLLM
) -> None:
    for store in ("sessions.db", "cold.db"):
        shutil.copyfile(pristine / store, kernel.data / store)
    truncate_half(kernel.data / "sessions.db")
    smash_header(kernel.data / "cold.db")
    assert up(kernel)[0] == 1
    repair = kernel.hologram("doctor", "--repair", "--data", str(kernel.data))
    assert repair.returncode == 0, repair.stdout + repair.stderr
    assert " of 360 rows recovered (" in repair.stdout and "cold_events: 60 of 60 rows recovered" in repair.stdout
    kernel.start()
    refused = kernel.hologram("doctor", "--repair", "--data", str(kernel.data))  # a kernel runs now
    assert refused.returncode == 1 and "a kernel is running with this data directory" in refused.stderr
    mock.script([{"reasoning_content": "r", "content": "still here"}])
    result = kernel.ask("hello again", "--session", "s1")  # session s1: its first turns were in the first half
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "still here"
    assert mock.rejections == []
    sent = mock.requests[-1].body["messages"]
    assert any("question 1:" in str(m.get("content")) for m in sent if m["role"] == "user")


def lookups(*xs: int) -> list[dict[str, str]]:
    return [{"id": f"c{x}", "name": "lookup", "arguments": json.dumps({"x": x})} for x in xs]


def test_a_session_with_damaged_rows_keeps_working(kernel: E2EKernel, mock: MockLLM) -> None:
    """Three rows of one session damaged on disk — an input, a tool result, a response with calls — then a
    turn in that session: accepted by the strict mock, every call paired with one result on disk."""
    kernel.start()
    mock.script(
        [
            {"reasoning_content": "plan", "tool_calls": lookups(918273, 2)},
            {"reasoning_content": "r", "content": "first done"},
        ]
    )
    # the marker off the first line: the session's title (its first input's first line) must not hold it too
    first = kernel.ask("what is it?\nMARK-input-A")
    assert first.returncode == 0, first.stderr
    session = session_of(first)
    mock.script(
        [
            {"reasoning_content": "MARK-reason-B", "tool_calls": lookups(4)},
            {"reasoning_content": "r", "content": "second done"},
        ]
    )
    assert kernel.ask("and now?", "--session", session).returncode == 0
    kernel.stop()
    sessions = kernel.data / "sessions.db"
    for marker in ("MARK-input-A", "v918273", "MARK-reason-B"):
        break_text(sessions, marker)
    with pytest.raises(sqlite3.OperationalError, match="Could not decode to UTF-8"):  # the path claimed
        sqlite3.connect(sessions).execute("SELECT data FROM events WHERE session = ?", (session,)).fetchall()

    kernel.start()
    mock.reset()
    mock.script([{"reasoning_content": "r", "content": "third done"}])
    third = kernel.ask("and the rest?", "--session", session)
    assert third.returncode == 0, third.stderr
    assert third.stdout.strip() == "third done"
    assert mock.rejections == []
    sent = mock.requests[-1].body["messages"]
    assert not any("input-A" in str(m.get("content")) for m in sent)  # the damaged input is skipped
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results == {"c918273": DAMAGED_RESULT, "c2": "v2", "c4": "v4"}
    rebuilt = next(m for m in sent if m["role"] == "assistant" and m.get("content") == DAMAGED_RESPONSE)
    assert [c["id"] for c in rebuilt["tool_calls"]] == ["c4"]
    mock.script([{"reasoning_content": "r", "content": "fourth done"}])
    assert kernel.ask("once more", "--session", session).returncode == 0
    assert mock.rejections == []
    kernel.stop()

    store = SessionStore(sessions)
    assert pairing_problems(store.events(session)) == []
    store.close()
    log = "\n".join(p.read_text() for p in (kernel.data / "logs").glob("*.log"))
    warnings = [line for line in log.splitlines() if f"of session {session} is damaged" in line]
    assert len(warnings) == 3, warnings  # once each, in the kernel that read them (two turns, one report)
    raw = sqlite3.connect(sessions).execute("SELECT CAST(data AS BLOB) FROM events").fetchall()
    assert sum(b"v\xff18273" in r[0] for r in raw) == 1  # the damaged bytes are still there, untouched


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (b'[agent]\nmax_steps = 4\nsystem_prompt = "caf\xe9"\n', 3, "not UTF-8 text"),
        (b"[agent]\nmax_steps = = 4\n", 2, "not valid TOML"),
    ],
    ids=["not-utf8", "not-toml"],
)
def test_up_with_settings_that_are_not_utf8_or_not_toml(
    kernel: E2EKernel, content: bytes, line: int, message: str
) -> None:
    path = kernel.data / "settings.toml"
    path.write_bytes(content)
    code, output = up(kernel)
    assert code == 1
    assert "Traceback" not in output
    assert len(error_lines(output)) == 1
    assert f"{path}:{line}: error: {message}" in output
