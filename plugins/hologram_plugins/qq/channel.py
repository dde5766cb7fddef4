"""The QQ channel: NapCat's events in, turns and recorded messages through ``kernel.turns``, answers out.

- A message is handled once (`SeenIds`), never one of the bot's own, and only from an allowed group, or in private
  from an allowed user or an admin.
- **Groups** (session ``qq:group:<id>``, scene ``chan:qq/peer:group_<id>``, partner: the sender): every message is
  stored in the group's session as ``nickname (QQ id): text`` with ``sessions_append`` — no model call — so the
  agent knows the conversation; one that @-mentions the bot, replies to one of its messages or names a keyword
  starts a turn instead, rate limited per group and per person (over the limit: one short notice, then silence).
  The answer quotes that message and @-mentions its sender.
- **Private chats** (``qq:private:<id>``): every message is a turn, rate limited per person. An admin's
  ``/approve ID`` and ``/deny ID`` answer the approval requests the channel sends them.
- **Approvals**: the channel watches its sessions with approvals when admins are configured; a request goes to
  each admin by private message; the kernel denies it after ``[approvals] timeout_s`` when nobody answers (and the
  web page, watching the session, may answer it too).

The messages of one session are handled in order by one task (a recorded message, then a turn, keep their order);
an answer is sent when its turn ends, from ``turn.ended``'s ``output`` only — reasoning never reaches QQ.
What the channel holds between events — the turns it waits on, the approvals it relayed, the bot's recent message
ids — lives only while it matters; the conversation itself is the kernel's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hologram.sdk import RpcError
from hologram_plugins.qq.config import QqConfig
from hologram_plugins.qq.limits import RateLimit, Verdict
from hologram_plugins.qq.link import ActionFailed, Link, LinkDown
from hologram_plugins.qq.onebot import Incoming, read_message
from hologram_plugins.qq.seen import SeenIds
from hologram_plugins.qq.text import plain_text, split

log = logging.getLogger("hologram_plugins.qq")
Turns = Callable[..., Awaitable[Any]]  # kernel.turns: (method, **params) → result
CLIENT = "qq"
SENT_KEPT = 2000  # the bot's own message ids remembered (a reply to one of them addresses the bot)
DONE = ("answer", "respond", "denied", "loop", "max_steps", "max_tool_calls", "max_time")

WORDS = {
    "en": {
        "limited": "Too many requests here; I'll answer again in a moment.",
        "failed": "Sorry, I could not answer that just now.",
        "approval": "Approval needed ({id}): {summary} — asked in {where} by {who}. Reply /approve {id} or /deny {id}"
        " (denied after {timeout} s without an answer).",
        "resolved": "Approval {id}: {outcome} ({by}).",
        "approved": "approved",
        "denied": "denied",
        "no_request": "There is no open approval {id}.",
        "usage": "Commands: /approve ID, /deny ID",
        "group": "group {id}",
        "private": "a private chat",
    },
    "zh": {
        "limited": "请求太多了，请稍后再试。",
        "failed": "抱歉，暂时无法回答。",
        "approval": "需要审批（{id}）：{summary} —— 来自{where}的 {who}。回复 /approve {id} 允许，或 /deny {id} 拒绝"
        "（{timeout} 秒内无人回复即拒绝）。",
        "resolved": "审批 {id}：{outcome}（{by}）。",
        "approved": "已允许",
        "denied": "已拒绝",
        "no_request": "没有待处理的审批 {id}。",
        "usage": "命令：/approve ID，/deny ID",
        "group": "群 {id}",
        "private": "私聊",
    },
}


@dataclass
class Waiting:
    """A turn the channel started: where its answer goes."""

    session: str
    incoming: Incoming


class Channel:
    def __init__(self, config: QqConfig, data_dir: str, turns: Turns, set_status: Callable[[str], Awaitable[None]]):
        self.config = config
        self.turns = turns
        self.set_status = set_status
        self.words = WORDS[config.language]
        token = config.access_token.get_secret_value() if config.access_token else ""
        self.link = Link(
            token=token,
            on_event=self.on_event,
            on_change=self._status_changed,
            listen=config.listen,
            path=config.path,
            url=config.connect,
            reconnect_max_s=config.reconnect_max_s,
        )
        self.seen = SeenIds(Path(data_dir) / "seen-message-ids.txt", config.seen_ids)
        self.group_limit = RateLimit(config.group_rate, config.rate_window_s)
        self.user_limit = RateLimit(config.user_rate, config.rate_window_s)
        self.sent: OrderedDict[str, None] = OrderedDict()  # the bot's own message ids (replies to it address it)
        self.waiting: dict[str, Waiting] = {}  # turn → where its answer goes
        self.ended: OrderedDict[str, dict[str, Any]] = OrderedDict()  # turn.ended that came before start's answer
        self.approvals: dict[str, tuple[str, str]] = {}  # approval id → (session, where it was asked)
        self.created: set[str] = set()  # sessions made (or found) in this process
        self.queues: dict[str, asyncio.Queue[Incoming]] = {}
        self.workers: dict[str, asyncio.Task[None]] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self._status_pending = False

    # -- life --------------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.link.start()
        await self.set_status(self.link.describe())

    async def stop(self) -> None:
        await self.link.stop()
        for task in [*self.workers.values(), *self.tasks]:
            task.cancel()

    def _status_changed(self) -> None:
        if self._status_pending:
            return
        self._status_pending = True

        async def send() -> None:
            self._status_pending = False
            with contextlib.suppress(Exception):
                await self.set_status(self.link.describe())

        self._spawn(send())

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- NapCat's events ---------------------------------------------------------------------------------

    async def on_event(self, event: dict[str, Any]) -> None:
        """Called by the link for each event, in order; never blocks the link (the work is queued)."""
        if event.get("post_type") != "message":  # meta events, notices, requests, the bot's own (message_sent)
            return
        incoming = read_message(event, self.link.self_id)
        if incoming is None:
            return
        if self.link.self_id is not None and incoming.user_id == self.link.self_id:
            return  # never its own messages
        if incoming.kind == "group" and incoming.group_id not in self.config.groups:
            return
        if incoming.kind == "private" and incoming.user_id not in (*self.config.users, *self.config.admins):
            log.info("qq: a private message from %s, who is not in users or admins; ignored", incoming.user_id)
            return
        if not self.seen.add(incoming.key):
            log.info("qq: message %s was handled before; ignored", incoming.key)
            return
        session = session_of(incoming)
        queue = self.queues.get(session)
        if queue is None:
            queue = self.queues[session] = asyncio.Queue()
            self.workers[session] = asyncio.get_running_loop().create_task(self._work(session, queue))
        queue.put_nowait(incoming)

    async def _work(self, session: str, queue: asyncio.Queue[Incoming]) -> None:
        while True:
            incoming = await queue.get()
            try:
                await self._handle(session, incoming)
            except asyncio.CancelledError:
                raise
            except Exception:  # one message's failure (the kernel refused it) costs that message
                log.exception("qq: message %s could not be handled", incoming.key)

    async def _handle(self, session: str, incoming: Incoming) -> None:
        admin = incoming.kind == "private" and incoming.user_id in self.config.admins
        if admin and incoming.text.startswith("/") and await self._command(incoming):
            return
        await self._ensure_session(session, incoming)
        said = f"{incoming.name} ({incoming.user_id}): {incoming.text}" if incoming.kind == "group" else incoming.text
        if not said.strip():
            return
        if incoming.kind == "group" and not self._addressed(incoming):
            await self.turns("sessions_append", session=session, text=said, partner=str(incoming.user_id))
            return
        verdict = self._limit(incoming)
        if verdict is not Verdict.ALLOWED:
            if incoming.kind == "group":  # what was said stays part of the conversation
                await self.turns("sessions_append", session=session, text=said, partner=str(incoming.user_id))
            if verdict is Verdict.NOTICE:
                self._spawn(self._send(incoming, self.words["limited"]))
            return
        started = await self.turns(
            "start",
            session=session,
            text=said,
            client=CLIENT,
            partner=str(incoming.user_id),
            scene=scene_of(incoming),
            approvals=bool(self.config.admins),
            on_disconnect="continue",
        )
        turn = str(started["turn"])
        self.waiting[turn] = Waiting(session, incoming)
        early = self.ended.pop(turn, None)
        if early is not None:  # the turn's end overtook start's answer on the connection
            await self.on_turn_event(early)

    def _addressed(self, incoming: Incoming) -> bool:
        if incoming.mentioned or (incoming.reply_to is not None and incoming.reply_to in self.sent):
            return True
        lowered = incoming.text.lower()
        return any(word.lower() in lowered for word in self.config.keywords if word.strip())

    def _limit(self, incoming: Incoming) -> Verdict:
        user = self.user_limit.check(str(incoming.user_id))
        if incoming.kind != "group" or user is not Verdict.ALLOWED:
            return user
        group = self.group_limit.check(str(incoming.group_id))
        if group is not Verdict.ALLOWED:
            self.user_limit.refund(str(incoming.user_id))
        return group

    async def _ensure_session(self, session: str, incoming: Incoming) -> None:
        if session in self.created:
            return
        title = (
            f"QQ group {incoming.group_id}" if incoming.kind == "group" else f"QQ {incoming.name} ({incoming.user_id})"
        )
        await self.turns("sessions_create", session=session, title=title)
        self.created.add(session)

    # -- turns -------------------------------------------------------------------------------------------

    async def on_turn_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "turn.ended":
            waiting = self.waiting.pop(str(event.get("turn")), None)
            if waiting is None:
                self.ended[str(event.get("turn"))] = event
                while len(self.ended) > 100:
                    self.ended.popitem(last=False)
                return
            reason = str(event.get("stop_reason") or "")
            output = str(event.get("output") or "")
            if reason in DONE and output.strip():
                self._spawn(self._send(waiting.incoming, plain_text(output), quote=True))
            elif reason == "error":
                self._spawn(self._send(waiting.incoming, self.words["failed"], quote=True))
        elif kind == "approval.requested":
            self._spawn(self._ask_admins(event))
        elif kind == "approval.resolved":
            asked = self.approvals.pop(str(event.get("approval")), None)
            if asked is not None and event.get("by") != CLIENT:  # decided elsewhere: the web page, the timeout
                outcome = self.words["approved" if event.get("approved") else "denied"]
                note = self.words["resolved"].format(id=event.get("approval"), outcome=outcome,
                                                     by=event.get("reason") or event.get("by"))  # fmt: skip
                for admin in self.config.admins:
                    self._spawn(self._private(admin, note))

    async def _ask_admins(self, event: dict[str, Any]) -> None:
        session = str(event.get("session"))
        turn = self.waiting.get(str(event.get("turn")))
        if turn is not None:
            incoming = turn.incoming
            where = (
                self.words["group"].format(id=incoming.group_id) if incoming.kind == "group" else self.words["private"]
            )
            who = f"{incoming.name} ({incoming.user_id})"
        else:
            where, who = session, "?"
        approval = str(event.get("approval"))
        self.approvals[approval] = (session, where)
        summary = str(event.get("summary") or event.get("tool") or "")[:500]
        text = self.words["approval"].format(
            id=approval, summary=summary, where=where, who=who, timeout=int(float(event.get("timeout_s") or 0))
        )
        for admin in self.config.admins:
            await self._private(admin, text)

    async def _command(self, incoming: Incoming) -> bool:
        words = incoming.text.split()
        command = words[0].lower() if words else ""
        if command not in ("/approve", "/deny"):
            return False
        if len(words) != 2:
            await self._private(incoming.user_id, self.words["usage"])
            return True
        approval = words[1]
        asked = self.approvals.get(approval)
        if asked is None:
            await self._private(incoming.user_id, self.words["no_request"].format(id=approval))
            return True
        decision = "approve_once" if command == "/approve" else "deny"
        by = f"QQ admin {incoming.name} ({incoming.user_id})"
        try:
            answer = await self.turns(
                "approve", session=asked[0], approval=approval, decision=decision, reason=f"{decision} by {by}"
            )
        except RpcError as exc:
            log.warning("qq: /%s %s: %s", command, approval, exc.message)
            await self._private(incoming.user_id, self.words["no_request"].format(id=approval))
            return True
        outcome = self.words["approved" if decision == "approve_once" else "denied"]
        if answer.get("accepted"):
            self.approvals.pop(approval, None)
            await self._private(incoming.user_id, self.words["resolved"].format(id=approval, outcome=outcome, by=by))
        else:
            await self._private(incoming.user_id, self.words["no_request"].format(id=approval))
        return True

    # -- sending -----------------------------------------------------------------------------------------

    async def _send(self, incoming: Incoming, text: str, *, quote: bool = False) -> None:
        """``text`` to where ``incoming`` came from, in pieces under ``max_chars``; the first quotes it (and, in a
        group, @-mentions its sender) when ``quote``."""
        for i, piece in enumerate(split(text, self.config.max_chars)):
            message: list[dict[str, Any]] = []
            if i == 0 and (quote or incoming.kind == "group"):
                message.append({"type": "reply", "data": {"id": incoming.message_id}})
                if incoming.kind == "group":
                    message.append({"type": "at", "data": {"qq": str(incoming.user_id)}})
                    piece = " " + piece
            message.append({"type": "text", "data": {"text": piece}})
            if incoming.kind == "group":
                await self._action("send_group_msg", {"group_id": incoming.group_id, "message": message})
            else:
                await self._action("send_private_msg", {"user_id": incoming.user_id, "message": message})

    async def _private(self, user_id: int, text: str) -> None:
        await self._action(
            "send_private_msg", {"user_id": user_id, "message": [{"type": "text", "data": {"text": text}}]}
        )

    async def _action(self, action: str, params: dict[str, Any]) -> None:
        config = self.config
        try:
            data = await self.link.call(action, params, timeout=config.action_timeout_s, wait_s=config.deliver_wait_s)
        except (ActionFailed, LinkDown) as exc:
            log.warning("qq: %s", exc)  # once: a send is not repeated (it may have arrived)
            return
        sent = data.get("message_id") if isinstance(data, dict) else None
        if sent is not None:
            self.sent[str(sent)] = None
            while len(self.sent) > SENT_KEPT:
                self.sent.popitem(last=False)


def session_of(incoming: Incoming) -> str:
    if incoming.kind == "group":
        return f"qq:group:{incoming.group_id}"
    return f"qq:private:{incoming.user_id}"


def scene_of(incoming: Incoming) -> str:
    if incoming.kind == "group":
        return f"chan:qq/peer:group_{incoming.group_id}"
    return f"chan:qq/peer:private_{incoming.user_id}"
