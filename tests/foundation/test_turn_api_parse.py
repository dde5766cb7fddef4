"""`turn_api.parse_event` (pydantic, strictly, over the events' dataclasses) and the params' `parse` (pydantic
models): a known event with a wrong field is a `ValueError` naming the field, extra keys of an event are ignored,
an unknown type is kept as `UnknownEvent`; params forbid unknown keys, check the length bounds and report every
problem at once.

Mutation check (done): the events' fields typed ``int``/``bool`` instead of ``StrictInt``/``StrictBool`` turns test_wrong_types_name_the_field red (seq
True, is_error "no" accepted); ``extra="forbid"`` dropped from `_Params` turns test_params_forbid_unknown_keys red.
"""

from __future__ import annotations

import pytest

from hologram.api import params as params_api
from hologram.api import turn as api


def test_a_known_event_round_trips() -> None:
    event = api.TurnEnded(session="s", turn="t", seq=3, output="hi", usage=[{"total_tokens": 5}])
    assert api.parse_event(api.wire(event)) == event
    call = api.ToolCallStarted(session="s", turn="t", call_id="c", tool="x", arguments={"a": [1, {"b": None}]})
    assert api.parse_event(api.wire(call)) == call


def test_extra_keys_of_a_known_event_are_ignored() -> None:
    parsed = api.parse_event({"type": "content.delta", "session": "s", "turn": "t", "text": "x", "new": 1})
    assert parsed == api.ContentDelta(session="s", turn="t", text="x")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"type": "content.delta", "turn": "t"}, "malformed content.delta event: session: Field required"),
        (
            {"type": "content.delta", "session": 1, "turn": "t"},
            "malformed content.delta event: session: Input should be a valid string",
        ),
        (
            {"type": "turn.ended", "session": "s", "turn": "t", "stop_reason": "bored"},
            "malformed turn.ended event: stop_reason: Input should be 'answer', 'denied', 'respond', 'loop', "
            "'max_steps', 'max_tool_calls', 'max_time', 'cancelled' or 'error'",
        ),
        (
            {"type": "turn.ended", "session": "s", "turn": "t", "seq": True},
            "malformed turn.ended event: seq: Input should be a valid integer",
        ),
        (
            {"type": "turn.ended", "session": "s", "turn": "t", "usage": [1]},
            "malformed turn.ended event: usage.0: Input should be an object",
        ),
        (
            {"type": "tool.result", "session": "s", "turn": "t", "is_error": "no"},
            "malformed tool.result event: is_error: Input should be a valid boolean",
        ),
    ],
)
def test_wrong_types_name_the_field(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        api.validate_event(data)
    assert str(caught.value) == message


def test_parse_event_names_a_missing_field_and_validate_event_passes_a_good_one() -> None:
    with pytest.raises(ValueError, match=r"^malformed content.delta event: session: Field required$"):
        api.parse_event({"type": "content.delta", "turn": "t"})
    good = api.wire(api.ToolResult(session="s", turn="t", seq=9, call_id="c", content="ok"))
    assert (
        api.validate_event(good)
        == api.parse_event(good)
        == api.ToolResult(session="s", turn="t", seq=9, call_id="c", content="ok")
    )
    assert isinstance(api.validate_event({"type": "future.x", "session": "s", "turn": "t"}), api.UnknownEvent)


def test_the_clients_send_only_the_models_fields() -> None:
    """TurnClient builds its params as plain dicts (no pydantic in `hologram ask`): every key it sends is a
    field of the method's model, and the kernel accepts the dict."""
    import asyncio

    from hologram.clients import TurnClient

    sent: list[tuple[str, dict[str, object]]] = []

    class Recorder:
        async def request(self, method: str, params: dict[str, object]) -> dict[str, object]:
            sent.append((method, params))
            return {"session": "s", "turn": "t", "accepted": True, "cancelled": True, "sessions": [], "deleted": True,
                    "protocol_version": 2, "tools": [], "status": "stored"}  # fmt: skip

    async def drive() -> None:
        client = TurnClient.__new__(TurnClient)
        client.connection = Recorder()  # type: ignore[assignment]
        client.client, client.approvals, client._streams, client.version = "cli", True, set(), "1.0"
        await client.initialize()
        await client.read_turn("s", "t")
        await client.start("hi", session="s", scene="chan:qq/peer:1", partner="p")
        await client.watch("s", after=3)
        await client.unwatch("s")
        await client.cancel("s")
        request = api.ApprovalRequested(session="s", turn="t", approval="a")
        await client.approve(request, True, "ok")
        await client.read("s")
        await client.read("s", limit=5, before=9)
        await client.media_read("s", "0" * 64)
        await client.create_session("title")
        await client.append("s", "said meanwhile", partner="p")
        await client.rename("s", "title")
        await client.delete("s")
        await client.tools_list()
        await client.sessions_page(limit=5, cursor="abc")
        await client.tools_call("notes_read", {"title": "x"})
        await client.mcp_servers("s", [{"name": "fs", "command": "mcp-fs", "args": ["/tmp"], "env": {"A": "1"}}])

    asyncio.run(drive())
    assert {method for method, _ in sent} >= set(params_api.METHOD_PARAMS) - {api.SESSIONS_LIST}
    for method, params in sent:
        model = params_api.METHOD_PARAMS[method]
        assert set(params) <= set(model.model_fields), (method, set(params) - set(model.model_fields))
        model.parse(method, params)  # what the kernel does with it


def test_an_unknown_type_is_kept() -> None:
    parsed = api.parse_event({"type": "future.thing", "session": "s", "turn": "t", "seq": 2, "x": 1})
    assert parsed == api.UnknownEvent(session="s", turn="t", seq=2, type="future.thing", data={"x": 1})
    with pytest.raises(ValueError, match="must be a JSON object, not list"):
        api.parse_event([])


def test_params_forbid_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"^turn/start: colour: Extra inputs are not permitted$"):
        params_api.StartParams.parse(api.TURN_START, {"text": "hi", "colour": "red"})


def test_params_check_bounds_and_defaults() -> None:
    params = params_api.StartParams.parse(api.TURN_START, {"text": "hi"})
    assert (params.session, params.watch, params.on_disconnect) == (None, True, "cancel")
    with pytest.raises(ValueError, match=r"^turn/start: text: String should have at least 1 character$"):
        params_api.StartParams.parse(api.TURN_START, {"text": ""})
    with pytest.raises(ValueError, match=r"^sessions/rename: title: String should have at most 200 characters$"):
        params_api.RenameParams.parse(api.SESSIONS_RENAME, {"session": "s", "title": "x" * 201})
    for neither_or_both in ({}, {"decision": "deny", "approved": False}):
        with pytest.raises(ValueError, match=r"^turn/approve: \(params\): send either decision \(approve_once \| "):
            params_api.ApproveParams.parse(api.TURN_APPROVE, {"session": "s", "approval": "a", **neither_or_both})
    v1 = {"session": "s", "approval": "a"}
    assert params_api.ApproveParams.parse(api.TURN_APPROVE, {**v1, "approved": True}).chosen == "approve_once"
    assert params_api.ApproveParams.parse(api.TURN_APPROVE, {**v1, "approved": False}).chosen == "deny"
    assert params_api.ApproveParams.parse(api.TURN_APPROVE, {**v1, "decision": "always"}).chosen == "always"
    with pytest.raises(
        ValueError, match=r"^turn/watch: \(params\): Input should be a valid dictionary or instance of WatchParams$"
    ):
        params_api.WatchParams.parse(api.TURN_WATCH, [1])
    with pytest.raises(ValueError, match=r"^turn/approve: session: Field required$"):
        params_api.ApproveParams.parse(api.TURN_APPROVE, {"approval": "a"})
    with pytest.raises(ValueError, match="frozen"):
        params.text = "changed"  # type: ignore[misc]
