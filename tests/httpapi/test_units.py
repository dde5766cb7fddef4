"""The HTTP channel's parts on their own: its configuration checks, the names it answers to, the token
file, and how events are routed to its clients: each seq once, in order, a resumed stream's replay from the kernel
merged with the live events, every client's queue bounded in bytes (what the e2e tests rely on, case by case)."""

from __future__ import annotations

import asyncio
import logging
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from hologram_plugins.http.access import allowed_hosts, load_token
from hologram_plugins.http.config import ConfigError, HttpConfig
from hologram_plugins.http.events import Listener, Out, Router


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


def out(seq: int, kind: str = "content.delta", session: str = "s") -> Out:
    return Out(seq, orjson.dumps({"session": session, "turn": "t1", "seq": seq, "type": kind}))


def drain(listener: Listener) -> list[int]:
    seqs = []
    while not listener.queue.empty():
        item = listener.queue.get_nowait()
        seqs.append(item.seq if item is not None else -1)  # -1: the stream ends
    return seqs


def test_a_listener_passes_each_seq_once_in_order() -> None:
    async def go() -> None:
        listener = Listener("s", 3, 1 << 20)
        for seq in (2, 3, 4, 4, 7, 5, 9):  # at or below what it has, or again: dropped
            listener.put(out(seq))
        assert drain(listener) == [4, 7, 9]

    asyncio.run(go())


@pytest.mark.parametrize("answer_first", [True, False])
def test_a_resuming_listener_passes_its_replay_and_the_live_events_in_order_once(answer_first: bool) -> None:
    """The plugin already watches the session: live events come, among them copies of some the kernel replays
    (seqs 11-12 came live, then 10-13 replayed), and the next live ones (14, 15) come after the replay. The
    listener must pass 10-15, each once, in order, whichever comes first: the kernel's answer or its replay.
    Mutation checks (done): releasing when the replay's last seq first comes (its live copy, before the replay)
    turns the answer-first case red (10 lost); not counting a replayed seq held as its live copy (``_missing``
    from ``replayed`` alone) leaves the listener holding for good when the replay comes first (red)."""

    async def go() -> None:
        listener = Listener("s", 9, 1 << 20, catching_up=True)
        if answer_first:
            listener.caught_up(4, 10, 13)
        for seq in (11, 12):  # live, before the replay
            listener.put(out(seq))
        listener.put(out(13))  # live too: the replay's last seq, before the replay
        assert drain(listener) == []  # held: 10 has not come
        for seq in (10, 11, 12, 13):  # the replay
            listener.put(out(seq))
        if not answer_first:
            assert drain(listener) == []  # the answer has not said where the replay ends
            listener.caught_up(4, 10, 13)
        for seq in (14, 15):
            listener.put(out(seq))
        assert drain(listener) == [10, 11, 12, 13, 14, 15]

    asyncio.run(go())


def test_a_listener_with_nothing_replayed_passes_what_comes_after_the_floor() -> None:
    async def go() -> None:
        listener = Listener("s", None, 1 << 20, catching_up=True)
        listener.put(out(5))  # came before the answer, not newer than the kernel's seq then: not this client's
        listener.put(out(8))
        listener.caught_up(0, None, None, floor=6)
        listener.put(out(9))
        assert drain(listener) == [8, 9]

    asyncio.run(go())


def test_a_listener_beyond_its_byte_bound_is_dropped_and_released() -> None:
    """Mutation check (done): `Listener._enqueue` without its bound check turns this red."""

    async def go() -> None:
        one = len(out(1).line)
        listener = Listener("s", 0, 3 * one)
        for seq in (1, 2, 3):
            listener.put(out(seq))
        assert listener.queued_bytes == 3 * one and not listener.dropped
        assert (await listener.get()) == out(1)  # the client read one: room for one more
        listener.put(out(4))
        listener.put(out(5))  # over the bound
        assert listener.dropped and listener.queued_bytes == 0
        assert drain(listener) == [-1]  # what waited is released, and the stream ends
        listener.put(out(6))
        assert drain(listener) == []
        big = Listener("s", 0, 10)
        big.put(out(1))  # larger than the whole bound, with nothing waiting: it goes
        assert drain(big) == [1] and not big.dropped

    asyncio.run(go())


def test_a_resumed_listener_gets_its_replay_whole_and_is_dropped_only_beyond_it() -> None:
    """A replay larger than the bound is no reason to drop a stream (the page opening a long running turn): the
    bound is on what waits beyond it. Mutation check (done): `Listener._release` without its allowance turns this
    red (dropped on its own replay)."""

    async def go() -> None:
        one = len(out(1).line)
        listener = Listener("s", 0, 2 * one, catching_up=True)
        for seq in range(1, 6):  # the replay: five events, over a bound of two
            listener.put(out(seq))
        listener.caught_up(5, 1, 5, size=5 * one)
        assert not listener.dropped and drain(listener) == [1, 2, 3, 4, 5]
        again = Listener("s", 0, 2 * one, catching_up=True)
        for seq in range(1, 6):
            again.put(out(seq))
        again.caught_up(5, 1, 5, size=5 * one)
        again.put(out(6))
        again.put(out(7))  # two beyond the replay: within the bound
        assert not again.dropped
        again.put(out(8))  # three: too far behind
        assert again.dropped

    asyncio.run(go())


def test_when_the_kernel_drops_the_plugin_every_stream_ends_and_nothing_is_watched() -> None:
    """``watch.dropped``: the kernel watches nothing for the plugin any more; each stream ends so its client
    reconnects (and the plugin watches again, with the client's seq). Mutation check (done): `Channel.on_event`
    passing watch.dropped on as an event turns this red."""
    from hologram_plugins.http.channel import Channel

    async def never(facility: str, method: str, params: dict[str, Any]) -> Any:
        raise AssertionError(f"no call to the kernel expected: {method}")

    async def go() -> None:
        channel = Channel(never)
        page = channel.listen("s")
        channel.watching.add("s")
        channel.running["s"] = {"t1"}
        channel.on_event({"type": "content.delta", "session": "s", "turn": "t1", "seq": 1, "text": "a"})
        channel.on_event({"type": "watch.dropped", "session": "", "turn": "", "seq": 1})
        assert drain(page) == [-1]  # what waited is released too: the client resumes from the seq it has
        assert not channel.watching and not channel.running

    asyncio.run(go())


def test_the_router_sends_a_session_to_its_listeners_only_and_says_when_one_is_left_unheard() -> None:
    async def go() -> None:
        idle: list[str] = []
        router = Router(1 << 20, on_idle=idle.append)
        a, b, other = router.listen("s", 0), router.listen("s", 0), router.listen("o", 0)
        router.publish({"session": "s", "turn": "t", "seq": 1, "type": "content.delta", "text": "你好"})
        assert drain(a) == drain(b) == [1] and drain(other) == []
        router.unlisten(a)
        assert idle == []
        router.unlisten(b)
        assert idle == ["s"] and not router.listened("s")
        router.end()  # the kernel dropped the plugin: every stream ends
        assert drain(other) == [-1]

    asyncio.run(go())


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
