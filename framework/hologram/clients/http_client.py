"""The turn API over HTTP: `HttpTurnClient`, what `hologram ask/chat --url` use to talk to a kernel elsewhere.

The same surface and event types as `hologram.clients.TurnClient` (start, watch, approve, cancel, sessions …;
an async context manager; streams of `hologram.api.turn` events), spoken to the HTTP channel plugin's native
API (docs/web.md): ``POST /api/turns`` starts a turn, ``GET /api/sessions/{sid}/events`` is the session's
Server-Sent-Events stream. Each SSE event carries ``id: <seq>``; when the connection drops mid-turn the client
reconnects with ``Last-Event-ID`` = the last seq it saw, and drops any event it already has (seq ≤ last), so
a delta is never lost nor shown twice — an HTTP connection across a network drops where a local socket does
not. One SSE connection per watched session, shared by the streams of that session.

``transport=`` (an ``httpx.AsyncBaseTransport``) is the seam for tests and unusual setups: an
``httpx.MockTransport``, a Unix-socket or proxy transport.

Errors a user can act on are `HologramError`s saying what to do: the token refused, the URL unreachable
(named), a server speaking another turn-API version.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from hologram._version import __version__
from hologram.api import turn as api
from hologram.base.errors import HologramError, Problem
from hologram.base.sse import sse_events
from hologram.clients.stream import _END, EventStream, answer_params, start_params

TOKEN_REFUSED = "the token was refused: copy it from `hologram open --print` on that machine"
RESUME_WITHIN_S = 30.0  # how long a dropped event stream is retried before the client gives up
REFUSED_NO_PERSON = "refused: the client that started this turn is not on a terminal, there is nobody to ask"
READ_TIMEOUT_S = 60.0  # the server sends a keepalive every 15 s: 60 s of silence is a dead connection


def _checked_url(url: str) -> str:
    """The base URL without a trailing slash; `HologramError` for one httpx could not send to."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise HologramError(Problem(f"--url {url!r} is not a URL: {exc}", hint="e.g. http://host:8080")) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise HologramError(
            Problem(f"--url {url!r} must be http:// or https:// with a host", hint="e.g. http://host:8080")
        )
    return url.rstrip("/")


def _quoted(part: str) -> str:
    return quote(part, safe="")


class HttpTurnClient:
    """A client of one kernel's HTTP API. Build it with `connect` (checks the URL, the token, the version)."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        client: str = "cli",
        approvals: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
        resume_within_s: float = RESUME_WITHIN_S,
    ) -> None:
        self.url = _checked_url(url)
        self.client = client
        self.approvals = approvals
        self.resume_within_s = resume_within_s
        self.http = httpx.AsyncClient(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": f"hologram/{__version__}"},
            transport=transport,
            timeout=httpx.Timeout(30.0, read=READ_TIMEOUT_S),
        )
        self._streams: set[EventStream] = set()
        self._readers: dict[str, asyncio.Task[None]] = {}
        self.last_seq: dict[str, int] = {}  # per session: the last event seq received (what a resume sends)
        self.reconnects = 0  # event streams re-opened after a drop (tests and `--json` read it)
        self.malformed: list[str] = []  # events that did not validate: kept, not raised (as TurnClient)
        self.failure: str | None = None  # why the event streams ended for good (shown by the CLI)
        self.info: dict[str, Any] = {}
        self._started: set[str] = set()  # turns this client started (approvals=False: it refuses their requests)
        self._background: set[asyncio.Future[Any]] = set()
        self._ended: set[str] = set()  # turns whose turn.ended came
        self._closing = False

    @classmethod
    async def connect(
        cls,
        url: str,
        token: str,
        *,
        client: str = "cli",
        approvals: bool = False,
        transport: httpx.AsyncBaseTransport | None = None,
        resume_within_s: float = RESUME_WITHIN_S,
    ) -> HttpTurnClient:
        """A client whose server answered ``GET /api/info`` with this turn-API version and took the token."""
        self = cls(url, token, client=client, approvals=approvals, transport=transport, resume_within_s=resume_within_s)
        try:
            info = await self._request("GET", "/api/info")
            version = info.get("turn_api")
            if version is None:
                raise HologramError(
                    Problem(
                        f"the server at {self.url} does not say which turn API it speaks (an older Hologram?)",
                        hint=f"upgrade it to this client's version ({__version__}), or use a client as old as it",
                    )
                )
            if version not in api.SUPPORTED_VERSIONS:
                raise HologramError(
                    Problem(
                        f"the server at {self.url} speaks turn API version {version}, this hologram "
                        f"({__version__}) speaks version {api.TURN_API_VERSION}",
                        hint="upgrade the older of the two (server version: " + str(info.get("version")) + ")",
                    )
                )
            self.info = info
        except BaseException:
            await self.http.aclose()
            raise
        return self

    # -- requests -------------------------------------------------------------------------------------

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        try:
            response = await self.http.request(method, path, json=body)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from None
        self._check(response, f"{method} {path}")
        try:
            answer = response.json()
        except ValueError:
            raise HologramError(
                Problem(f"{self.url}{path} answered something that is not JSON", hint=self._not_hologram())
            ) from None
        if not isinstance(answer, dict):
            raise HologramError(Problem(f"{self.url}{path} answered {type(answer).__name__}, not an object"))
        return answer

    def _unreachable(self, exc: Exception) -> HologramError:
        reason = str(exc) or type(exc).__name__
        if "CERTIFICATE_VERIFY_FAILED" in reason:
            return HologramError(
                Problem(
                    f"the certificate of {self.url} is not trusted here: {reason}",
                    hint="a certificate of your own (self-signed, a private CA): point SSL_CERT_FILE at it",
                )
            )
        return HologramError(
            Problem(
                f"cannot reach {self.url}: {reason}",
                hint="is `hologram up` running there with the http plugin? `hologram status` on that machine "
                "shows its URL; check the host, the port and a firewall between",
            )
        )

    def _not_hologram(self) -> str:
        return f"is {self.url} a Hologram kernel's web address (`hologram open --print` on that machine)?"

    def _check(self, response: httpx.Response, what: str) -> None:
        if response.status_code < 400:
            return
        if response.status_code == 401:
            raise HologramError(Problem(TOKEN_REFUSED))
        message = ""
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            message = str(response.json()["error"]["message"])
        if response.status_code == 404 and what.endswith("/api/info"):
            raise HologramError(
                Problem(
                    f"{self.url} has no /api/info: not a Hologram HTTP API, or one older than this client",
                    hint=self._not_hologram(),
                )
            )
        raise HologramError(
            Problem(f"{what} failed: HTTP {response.status_code}" + (f": {message}" if message else ""))
        )

    # -- turns ----------------------------------------------------------------------------------------

    async def start(
        self,
        text: str | None,
        *,
        session: str | None = None,
        on_disconnect: api.OnDisconnect | None = None,
        scene: str | None = None,
        partner: str | None = None,
        parts: list[dict[str, Any]] | None = None,
    ) -> EventStream:
        """Start a turn; its events come on the returned stream. The same params as `TurnClient.start`, sent
        as ``POST /api/turns``' body. ``on_disconnect`` None: ``continue`` — over HTTP a turn outlives its
        connection by default (a dropped stream is resumed); Ctrl-C in the CLI cancels it explicitly.
        ``parts``: typed input parts (`hologram.clients.parts`) instead of ``text``."""
        body = start_params(text, self.client, True, session, on_disconnect or "continue", scene, partner, parts)
        # approvals: true, as the page's turns: the page may answer; a client that cannot ask a person refuses
        # each request itself (`_refuse`), as it always did
        answer = await self._request("POST", "/api/turns", body)
        stream = EventStream(self, answer["session"], answer["turn"])
        self._streams.add(stream)
        self._started.add(stream.turn or "")
        # after=0: the server replays the turn's events from its start (also when it ran before we connected)
        self._read(stream.session or "", after=0)
        return stream

    async def watch(self, session: str, *, after: int | None = None) -> EventStream:
        """Every event of ``session`` from now on (``after``: also the running turn's since that ``seq``)."""
        stream = EventStream(self, session, None)
        self._streams.add(stream)
        self._read(session, after=after)
        return stream

    async def unwatch(self, session: str) -> None:
        for stream in [s for s in self._streams if s.session == session]:
            stream.close()
        reader = self._readers.pop(session, None)
        if reader is not None:
            reader.cancel()

    async def cancel(self, session: str) -> bool:
        answer = await self._request("POST", f"/api/sessions/{_quoted(session)}/cancel")
        return bool(answer.get("cancelled"))

    async def approve(self, request: api.ApprovalRequested, decision: bool | str, reason: str = "") -> bool:
        """Answer an approval request with a decision (as `TurnClient.approve`; a bool is version 1's
        ``approved``); False when it was already decided (another client, the timeout)."""
        path = f"/api/sessions/{_quoted(request.session)}/approvals/{_quoted(request.approval)}"
        answer = await self._request("POST", path, answer_params(decision, reason))
        return bool(answer.get("accepted"))

    # -- the event stream -----------------------------------------------------------------------------

    def _read(self, session: str, *, after: int | None) -> None:
        if session in self._readers and not self._readers[session].done():
            return
        if after is not None:
            self.last_seq[session] = max(self.last_seq.get(session, 0), after)
        self._readers[session] = asyncio.ensure_future(self._reader(session, resume=after is not None))

    async def _reader(self, session: str, *, resume: bool) -> None:
        """Read the session's SSE stream until no stream wants it; reconnect after a drop, resuming after the
        last seq received."""
        loop = asyncio.get_running_loop()
        failing_since: float | None = None
        delay = 0.1
        try:
            while self._wanted(session):
                error: Exception | None = None
                try:
                    received = await self._read_once(session, resume=resume or session in self.last_seq)
                except HologramError as exc:  # refused token, a 4xx: retrying will not help
                    self._fail(exc.problems[0].message)
                    return
                except (httpx.TransportError, httpx.StreamError) as exc:
                    received, error = False, exc
                if not self._wanted(session):
                    return
                if received:
                    failing_since, delay = None, 0.1
                now = loop.time()
                failing_since = failing_since if failing_since is not None else now
                if now - failing_since > self.resume_within_s:
                    detail = f": {error}" if error else ""
                    self._fail(f"lost the event stream of {self.url} and could not resume it{detail}")
                    return
                self.reconnects += 1
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        finally:
            if self._readers.get(session) is asyncio.current_task():
                del self._readers[session]
            if not self._closing and self.failure is None and self._wanted(session):
                # a turn started in this session just as this reader decided it was no longer wanted
                self._read(session, after=self.last_seq.get(session, 0))

    async def _read_once(self, session: str, *, resume: bool) -> bool:
        """One SSE connection, until it ends; True when it delivered an event (it was alive)."""
        headers = {"Accept": "text/event-stream"}
        if resume:
            headers["Last-Event-ID"] = str(self.last_seq.get(session, 0))
        received = False
        async with self.http.stream("GET", f"/api/sessions/{_quoted(session)}/events", headers=headers) as response:
            if response.status_code >= 400:
                await response.aread()
                self._check(response, f"GET /api/sessions/{session}/events")
            async for event in sse_events(response.aiter_lines()):
                received = True
                self._deliver(session, event.id, event.data)
                if not self._wanted(session):
                    return True
        return received

    def _deliver(self, session: str, event_id: str | None, data: str) -> None:
        try:
            event = api.parse_event(json.loads(data))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            self.malformed.append(f"event {event_id}: {exc}")
            return
        last = self.last_seq.get(session, 0)
        if event.seq and event.seq <= last:  # already delivered before the connection dropped
            return
        if event.seq:
            self.last_seq[session] = event.seq
        if isinstance(event, api.TurnEnded):
            self._ended.add(event.turn)
        if isinstance(event, api.ApprovalRequested) and not self.approvals and event.turn in self._started:
            # The HTTP API starts every turn able to ask (a page may answer); a client that cannot ask a
            # person refuses at once, as the local API does for it, instead of leaving the call to time out.
            task = asyncio.ensure_future(self._refuse(event))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        for stream in list(self._streams):
            stream._offer(event)

    async def _refuse(self, event: api.ApprovalRequested) -> None:
        with contextlib.suppress(HologramError):  # the turn's own events say what came of it
            await self.approve(event, False, REFUSED_NO_PERSON)

    def _wanted(self, session: str) -> bool:
        """Whether a stream still waits for events of ``session`` (a turn's stream stops at its end: the
        connection is closed then, not kept open until the next event)."""
        return any(s.session == session and (s.turn is None or s.turn not in self._ended) for s in self._streams)

    def _fail(self, message: str) -> None:
        self.failure = message
        for stream in list(self._streams):
            stream._queue.put_nowait(_END)

    def abandon(self) -> None:
        """Stop waiting (a second Ctrl-C): the streams end; the turn runs on at the server."""
        self._fail("stopped waiting; the turn goes on at the server")

    # -- sessions -------------------------------------------------------------------------------------

    async def sessions(self) -> list[dict[str, Any]]:
        answer = await self._request("GET", "/api/sessions")
        return list(answer["sessions"])

    async def read(self, session: str) -> dict[str, Any]:
        """The session as stored: ``events`` and the ``messages`` a model would be sent."""
        return await self._request("GET", f"/api/sessions/{_quoted(session)}")

    async def rename(self, session: str, title: str) -> None:
        await self._request("PATCH", f"/api/sessions/{_quoted(session)}", {"title": title})

    async def delete(self, session: str) -> bool:
        answer = await self._request("DELETE", f"/api/sessions/{_quoted(session)}")
        return bool(answer.get("deleted"))

    # -- life -----------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        self._closing = True
        readers = list(self._readers.values())
        for reader in readers:
            reader.cancel()
        for reader in readers:
            with contextlib.suppress(BaseException):
                await reader
        await self.http.aclose()

    async def __aenter__(self) -> HttpTurnClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
