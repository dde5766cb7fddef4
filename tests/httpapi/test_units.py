"""The HTTP channel's parts on their own: its configuration checks, the names it answers to, the token
file, and the per-session fan-out's replay rules (what the e2e tests rely on, case by case)."""

from __future__ import annotations

import asyncio
import logging
import stat
from pathlib import Path
from typing import Any

import pytest

from hologram_plugins.http.access import allowed_hosts, load_token
from hologram_plugins.http.config import ConfigError, HttpConfig
from hologram_plugins.http.events import Fanout


def test_the_defaults_are_loopback_on_8080() -> None:
    config = HttpConfig.from_config({})
    assert (config.host, config.port, config.tls, config.loopback) == ("127.0.0.1", 8080, False, True)


@pytest.mark.parametrize("port", [True, -1, 70000, "80", 8.5])
def test_a_bad_port_names_the_key(port: Any) -> None:
    with pytest.raises(ConfigError, match=r"\[plugins.http\] port: must be a whole number 0-65535"):
        HttpConfig.from_config({"port": port})


def test_off_loopback_needs_tls_or_an_explicit_yes(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tls_certfile and tls_keyfile, or allow_insecure_remote = true"):
        HttpConfig.from_config({"host": "0.0.0.0"})
    assert not HttpConfig.from_config({"host": "0.0.0.0", "allow_insecure_remote": True}).loopback
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("x")
    key.write_text("x")
    assert HttpConfig.from_config({"host": "0.0.0.0", "tls_certfile": str(cert), "tls_keyfile": str(key)}).tls
    with pytest.raises(ConfigError, match="both tls_certfile and tls_keyfile"):
        HttpConfig.from_config({"tls_certfile": str(cert)})
    with pytest.raises(ConfigError, match="tls_keyfile: there is no file"):
        HttpConfig.from_config({"tls_certfile": str(cert), "tls_keyfile": str(tmp_path / "missing.pem")})
    with pytest.raises(ConfigError, match="allow_insecure_remote: must be true or false"):
        HttpConfig.from_config({"allow_insecure_remote": "yes"})
    for host in ("localhost", "::1", "127.0.0.2"):
        assert HttpConfig.from_config({"host": host}).loopback, host


def test_the_names_it_answers_to() -> None:
    hosts = allowed_hosts("127.0.0.1", 8123, tls=False)
    assert hosts == {"127.0.0.1:8123", "localhost:8123", "[::1]:8123"}
    assert "myhost.lan:8123" in allowed_hosts("myhost.lan", 8123, tls=True)
    assert "[fd00::5]:9000" in allowed_hosts("fd00::5", 9000, tls=True)
    assert {"localhost", "127.0.0.1:80"} <= allowed_hosts("127.0.0.1", 80, tls=False)  # browsers omit :80
    assert "localhost" not in allowed_hosts("127.0.0.1", 443, tls=False)


def test_the_token_file_is_made_private_once_and_reused(tmp_path: Path) -> None:
    token = load_token(tmp_path)
    path = tmp_path / "http-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(token) >= 43
    path.chmod(0o644)
    assert load_token(tmp_path) == token and stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("")  # cut short by a crash: a new one
    fresh = load_token(tmp_path)
    assert fresh != token and len(fresh) >= 43


def event(kind: str, seq: int, turn: str = "t1", **extra: Any) -> dict[str, Any]:
    return {"session": "s", "turn": turn, "seq": seq, "type": kind, **extra}


def drain(listener: Any) -> list[int]:
    seqs = []
    while not listener.queue.empty():
        seqs.append(listener.queue.get_nowait()["seq"])
    return seqs


def test_the_fanout_replays_by_seq_and_never_twice() -> None:
    async def go() -> None:
        idle: list[str] = []
        fanout = Fanout(on_idle=idle.append)
        fanout.publish(event("turn.started", 3))
        fanout.publish(event("content.delta", 5, text="a"))
        fanout.publish(event("content.delta", 5, text="a"))  # the same seq again: dropped
        from_start = fanout.subscribe("s", None)
        resumed = fanout.subscribe("s", 3)
        late = fanout.subscribe("s", 99)
        fanout.publish(event("content.delta", 8, text="b"))
        fanout.publish(event("turn.ended", 9))
        assert drain(from_start) == [3, 5, 8, 9]
        assert drain(resumed) == [5, 8, 9]
        assert drain(late) == []
        after_end = fanout.subscribe("s", None)  # the turn is over: nothing replayed, the next turn comes
        again = fanout.subscribe("s", 5)  # a client that missed the end still gets it
        fanout.publish(event("turn.started", 12, turn="t2"))
        assert drain(after_end) == [12] and drain(again) == [8, 9, 12]
        for listener in (from_start, resumed, late, after_end, again):
            fanout.unsubscribe(listener)
        assert idle == []  # t2 runs
        fanout.publish(event("turn.ended", 13, turn="t2"))
        assert idle == ["s"]

    asyncio.run(go())


def test_a_started_turn_keeps_the_session_busy_until_its_end() -> None:
    idle: list[str] = []
    fanout = Fanout(on_idle=idle.append)
    fanout.expect("s", "t1")  # the start answered before the ring brought turn.started
    fanout.unsubscribe(fanout.subscribe("s", None))
    assert idle == []
    fanout.publish(event("turn.started", 1))
    fanout.publish(event("turn.ended", 2))
    assert idle == ["s"]
    fanout.expect("s", "t1")  # the end came before the start's answer: idle at once
    assert idle == ["s", "s"]


def test_up_says_when_the_web_ui_is_reachable_from_other_machines(tmp_path: Path) -> None:
    import json
    import os

    from hologram.cli._web import remote_exposure, web_info, web_link

    def write(host: str, tls: bool, pid: int = os.getpid()) -> None:
        info = {"url": f"http://{host}:8080", "host": host, "port": 8080, "pid": pid, "tls": tls}
        (tmp_path / "http.json").write_text(json.dumps(info))

    (tmp_path / "http-token").write_text("tok/en\n")
    write("127.0.0.1", False)
    assert remote_exposure(tmp_path) is None
    assert web_link(tmp_path) == "http://127.0.0.1:8080/?token=tok%2Fen"
    write("0.0.0.0", False)
    assert "WITHOUT TLS" in str(remote_exposure(tmp_path))
    write("0.0.0.0", True)
    assert "over TLS" in str(remote_exposure(tmp_path))
    write("127.0.0.1", False, pid=2**22 + 12345)  # a plugin that was killed left its file behind
    assert web_info(tmp_path) is None and web_link(tmp_path) is None


def test_the_lazy_openai_routes_are_the_openai_modules_routes() -> None:
    """The app routes /v1 by `app.OPENAI_ROUTES` and imports `openai_api` on the first such request; a route
    added there and not here would be a 404. Mutation check (done): dropping /v1/models/{model} from
    OPENAI_ROUTES turns this red."""
    from hologram_plugins.http import app, openai_api

    assert {(path, tuple(methods)) for path, methods in app.OPENAI_ROUTES} == {
        (route.path, tuple(sorted(route.methods - {"HEAD"}))) for route in openai_api.ROUTES
    }
    assert set(openai_api.ENDPOINTS) == {path for path, _ in app.OPENAI_ROUTES}


def _turn(fanout: Fanout, session: str, turn: str, first_seq: int, deltas: int) -> None:
    fanout.publish({**event("turn.started", first_seq, turn), "session": session})
    for i in range(deltas):
        fanout.publish({**event("content.delta", first_seq + 1 + i, turn, text="abcd"), "session": session})
    fanout.publish({**event("turn.ended", first_seq + 1 + deltas, turn), "session": session})


def test_an_idle_session_keeps_its_turn_only_among_the_latest_few() -> None:
    """The ring brings every client's turns; keeping each session's latest turn for good grew the plugin with
    every session ever used. Mutation check (done): making `Fanout._retire` a no-op turns this red."""
    from hologram_plugins.http.events import MAX_IDLE_SESSIONS, MAX_UNHEARD

    async def go() -> None:
        idle: list[str] = []
        fanout = Fanout(on_idle=idle.append)
        _turn(fanout, "cli", "t1", 1, 500)  # a terminal's turn nobody here listened to
        assert idle == ["cli"]
        fanout.expect("cli", "t1")  # its start's answer after its end: idle at once, not busy for good
        assert idle == ["cli", "cli"] and fanout.sessions["cli"].pending is None
        others = [f"ask{i}" for i in range(MAX_UNHEARD)]
        for name in others:  # more turns nobody listened to: only the latest few are kept
            _turn(fanout, name, "t1", 1, 50)
        assert fanout.sessions["cli"].turn == []
        assert all(len(fanout.sessions[name].turn) == 52 for name in others)
        names = [f"web{i}" for i in range(MAX_IDLE_SESSIONS + 4)]
        for name in names:
            listener = fanout.subscribe(name, None)
            _turn(fanout, name, "t1", 1, 50)
            fanout.unsubscribe(listener)  # the page went away after the end
        kept = [name for name in names if fanout.sessions[name].turn]
        assert kept == names[-MAX_IDLE_SESSIONS:]
        resumed = fanout.subscribe(names[-1], 49)  # a page that lost its stream near the end gets the rest
        assert drain(resumed) == [50, 51, 52]
        assert drain(fanout.subscribe(names[0], 49)) == []  # too long ago: the page reloads the session

    asyncio.run(go())


def test_a_turn_that_ends_before_its_starter_subscribes_is_replayed_whole() -> None:
    """`hologram chat --url` and the page start a turn (``POST /api/turns``), then read the session's events from
    ``seq`` 0; a fast turn can end in between, and the ring can even bring its end before the start's answer
    reaches `expect`. Either way the starter must get every event: it hung on the second line under load when
    an unheard turn was dropped at its end. Mutation check (done): dropping an unheard turn at once in
    `Fanout._retire` (as before) and not marking a turn started here as listened each turn this red."""
    from hologram_plugins.http.events import MAX_UNHEARD

    async def go() -> None:
        fanout = Fanout()
        fanout.expect("s", "t1")  # the start's answer came first, then the whole turn, then the subscribe
        _turn(fanout, "s", "t1", 1, 3)
        for i in range(MAX_UNHEARD + 2):  # other clients' turns meanwhile do not push it out
            _turn(fanout, f"other{i}", "t1", 1, 3)
        assert drain(fanout.subscribe("s", 0)) == [1, 2, 3, 4, 5]

        _turn(fanout, "s2", "t9", 1, 3)  # the whole turn came before the start's answer
        fanout.expect("s2", "t9")
        assert drain(fanout.subscribe("s2", 0)) == [1, 2, 3, 4, 5]

    asyncio.run(go())


@pytest.mark.parametrize("value", [True, 0, -5, "1mb", 1.5])
def test_a_bad_max_body_bytes_names_the_key(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"\[plugins.http\] max_body_bytes: must be a whole number of bytes"):
        HttpConfig.from_config({"max_body_bytes": value})
    assert HttpConfig.from_config({}).max_body_bytes == 8 * 1024 * 1024  # the OpenAI API's own limit


@pytest.mark.parametrize(
    "damaged",
    ["tökén-with-umlauts-ünd-more".encode(), b"\xff\xfe\x00garbage-bytes-here!!", b"two words in a token file"],
)
def test_a_damaged_token_file_is_set_aside_and_replaced(
    tmp_path: Path, damaged: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "http-token"
    path.write_bytes(damaged)
    with caplog.at_level(logging.WARNING, "hologram_plugins.http"):
        token = load_token(tmp_path)
    assert token.isascii() and len(token) >= 43 and path.read_text().strip() == token
    assert (tmp_path / "http-token.damaged").read_bytes() == damaged  # kept, not lost
    [line] = [r.getMessage() for r in caplog.records]
    assert str(path) in line and "new token" in line and token not in line
