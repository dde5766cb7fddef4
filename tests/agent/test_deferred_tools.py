"""Deferred tool schemas (`hologram.agent.tools`): a tool whose manifest says ``deferred = true`` is named in
``tools_load``'s description instead of sent, is sent from the step after it is loaded (for the rest of the
session), and stays callable by name; what is sent is the wire form of a schema (no
``additionalProperties: false``) while the arguments are still checked against the whole schema.

The registry reads a catalog as the supervisor gives it (`Supervisor.tool_catalog`: the lock's tool entries
plus ``plugin``); the full path — a real `hologram up`, the strict mock sending ``tools_load`` — is in
tests/e2e/test_tools_e2e.py.

Mutation checks (done): `ToolRegistry.snapshot` handing each `ToolSet` a fresh set instead of the session's
(``self.loaded(session)`` → ``set()``) fails `test_a_load_is_sent_from_the_next_snapshot_of_the_session` and
`test_a_call_by_name_runs_and_loads_it`; `wire_schema` returning the schema unchanged fails
`test_the_wire_form_drops_additional_properties_but_the_check_keeps_it`; dropping the eviction loop in
`ToolRegistry.loaded` fails `test_loaded_sets_are_kept_for_a_bounded_number_of_sessions`; ``tools_load``'s
handler bound to its set again (``self._load`` as before) fails
`test_a_step_s_tool_set_is_freed_when_dropped_without_the_cycle_collector`.
"""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from typing import Any

from hologram.agent.tools import LOAD_TOOL, LOADED_SESSIONS, ToolInvocation, ToolRegistry, ToolSet


def _tool(name: str, plugin: str, *, deferred: bool = False, **props: Any) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "additionalProperties": False,
        "required": list(props),
        "properties": {k: {"type": v} for k, v in props.items()},
    }
    entry = {"name": name, "plugin": plugin, "description": f"{name} does it", "parameters": parameters}
    return entry | ({"deferred": True} if deferred else {})


CATALOG = [
    _tool("files_read", "files", path="string"),
    _tool("calendar_add", "calendar", deferred=True, summary="string"),
    _tool("calendar_list", "calendar", deferred=True),
    _tool("notes_read", "notes", deferred=True, title="string"),
]


def registry(defer: bool = True) -> ToolRegistry:
    return ToolRegistry(lambda: CATALOG, defer=defer)


def sent(tools: ToolSet) -> list[str]:
    return [s["function"]["name"] for s in tools.schemas()]


def load(tools: ToolSet, *names: str) -> dict[str, Any]:
    tool = tools.get(LOAD_TOOL)
    assert tool is not None and tool.kernel_handler is not None, f"no {LOAD_TOOL} in {sorted(tools.tools)}"
    arguments, problem = tools.parse(tool, json.dumps({"names": list(names)}))
    assert arguments is not None, problem
    result: dict[str, Any] = asyncio.run(tool.kernel_handler(arguments, ToolInvocation("c1", "s1")))
    return result


def test_deferred_tools_are_named_not_sent() -> None:
    tools = registry().snapshot("s1")
    assert sent(tools) == [LOAD_TOOL, "files_read"]
    description = tools.schemas()[0]["function"]["description"]
    assert all(name in description for name in ("calendar_add", "calendar_list", "notes_read")), description
    assert "files_read" not in description
    assert set(tools.tools) == {LOAD_TOOL, "files_read", "calendar_add", "calendar_list", "notes_read"}


def test_without_deferral_every_schema_is_sent_and_there_is_no_load_tool() -> None:
    tools = registry(defer=False).snapshot("s1")
    assert sent(tools) == ["files_read", "calendar_add", "calendar_list", "notes_read"]


def test_a_load_is_sent_from_the_next_snapshot_of_the_session() -> None:
    reg = registry()
    step1 = reg.snapshot("s1")
    result = load(step1, "calendar")  # a plugin's name loads all its deferred tools
    assert result == {"content": "loaded calendar_add, calendar_list: call them from your next step", "is_error": False}
    assert sent(step1) == [LOAD_TOOL, "files_read"], "a step's schemas are fixed when it is taken"
    step2 = reg.snapshot("s1")
    assert sent(step2) == [LOAD_TOOL, "files_read", "calendar_add", "calendar_list"]
    assert "calendar_add" not in step2.schemas()[0]["function"]["description"]
    assert sent(reg.snapshot("s2")) == [LOAD_TOOL, "files_read"], "another session has loaded nothing"
    load(step2, "notes_read")
    assert LOAD_TOOL not in sent(reg.snapshot("s1")), "nothing left to load: no load tool"


def test_loading_what_is_there_or_what_is_not_says_so() -> None:
    tools = registry().snapshot("s1")
    assert load(tools, "files_read") == {"content": "already yours: files_read", "is_error": False}
    result = load(tools, "calendar_ad", "notes_read")
    assert result["is_error"] is False
    assert result["content"] == (
        "loaded notes_read: call them from your next step; no tool named 'calendar_ad' "
        "(to load: calendar_add, calendar_list)"
    )


def test_a_call_by_name_runs_and_loads_it() -> None:
    """A model that knows a deferred tool (from earlier in the session, or a script) calls it directly: valid
    arguments run it; invalid ones get the check's error and the schema from the next step."""
    reg = registry()
    tools = reg.snapshot("s1")
    add, read = tools.get("calendar_add"), tools.get("notes_read")
    assert add is not None and read is not None
    assert tools.parse(add, '{"summary": "Dentist"}') == ({"summary": "Dentist"}, None)
    arguments, problem = tools.parse(read, '{"name": "x"}')
    assert arguments is None and problem is not None
    assert "required property" in problem and problem.endswith("Its schema is in your tools from your next step.")
    assert sent(reg.snapshot("s1")) == [LOAD_TOOL, "files_read", "calendar_add", "notes_read"]


def test_the_wire_form_drops_additional_properties_but_the_check_keeps_it() -> None:
    tools = registry(defer=False).snapshot("s1")
    parameters = tools.schemas()[0]["function"]["parameters"]
    assert parameters == {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}
    files_read = tools.get("files_read")
    assert files_read is not None and files_read.parameters["additionalProperties"] is False
    arguments, problem = tools.parse(files_read, '{"path": "a", "paht": "b"}')
    assert arguments is None and problem is not None and "'paht' was unexpected" in problem, problem


def test_loaded_sets_are_kept_for_a_bounded_number_of_sessions() -> None:
    reg = registry()
    load(reg.snapshot("first"), "calendar_add")
    for n in range(LOADED_SESSIONS):
        reg.snapshot(f"other-{n}")
    assert len(reg._loaded) == LOADED_SESSIONS
    assert "calendar_add" not in sent(reg.snapshot("first")), "the least recently used session was dropped"


def test_a_call_by_name_with_broken_json_loads_it_too() -> None:
    reg = registry()
    tools = reg.snapshot("s1")
    read = tools.get("notes_read")
    assert read is not None
    arguments, problem = tools.parse(read, '{"title": ')
    assert arguments is None and problem is not None and "not valid JSON" in problem
    assert problem.endswith("Its schema is in your tools from your next step."), problem
    assert "notes_read" in sent(reg.snapshot("s1"))


def test_a_step_s_tool_set_is_freed_when_dropped_without_the_cycle_collector() -> None:
    """Every LLM step takes a snapshot; one that lived into the collector's oldest generation was garbage until
    the next full collection (a soak piled them up). Freed by reference counting, it is gone at once."""
    reg = registry()
    tools = reg.snapshot("s1")
    assert load(tools, "notes_read")["is_error"] is False  # its tools_load works while the step holds it
    gone = weakref.ref(tools)
    gc.disable()
    try:
        del tools
        assert gone() is None, "the step's tool set is alive in a reference cycle"
    finally:
        gc.enable()
    assert "notes_read" in sent(reg.snapshot("s1"))  # the load outlives the set it was made through
