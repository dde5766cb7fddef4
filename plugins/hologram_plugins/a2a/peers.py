"""Peer A2A agents as tools: ``a2a_agents`` lists them, ``a2a_send`` asks one and returns its answer.

A peer is configured in settings (``[plugins.a2a.peers.NAME]``: ``url``, ``token``, …); the model names it, never
a URL, so it reaches only the agents the user chose. The token goes in the ``Authorization`` header of each
request and nowhere else: not in a result, an error or a log line (the errors of httpx and the ``a2a-sdk`` name
the URL, which holds none). The peer's answer streams in as the call's live output (``tool_output`` events, as
a shell command's), and is the call's result when the peer's task ends — or stops to ask for input, which the
result says, with the context and task to answer in.

The ``a2a-sdk`` client resolves the peer's card and speaks the version it offers (1.0, or 0.3).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from hologram_plugins.a2a.config import A2aConfig, Peer

log = logging.getLogger("hologram_plugins.a2a")

Publish = Callable[[str], Awaitable[None]]  # live output of the call
CARD_TIMEOUT_S = 10.0
ANSWER_CHARS = 100_000


class PeerError(Exception):
    """What the model reads when a peer cannot be asked (never with the token)."""


def _headers(peer: Peer) -> dict[str, str]:
    return {"authorization": f"Bearer {peer.token.get_secret_value()}"} if peer.token is not None else {}


def _why(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:300]


async def agents(config: A2aConfig) -> str:
    """One line per configured peer: its name, what the settings and its card say it does."""
    if not config.peers:
        return "no peer agents are configured ([plugins.a2a.peers.NAME] url and token in settings.toml)"
    cards = await asyncio.gather(*(_card(peer) for peer in config.peers.values()), return_exceptions=True)
    lines = []
    for (name, peer), card in zip(config.peers.items(), cards, strict=True):
        said = f" — {peer.description}" if peer.description else ""
        if isinstance(card, BaseException):
            lines.append(f"{name}{said} (its card could not be read: {_why(card)})")
            continue
        skills = ", ".join(s.name for s in card.skills) or "no skills listed"
        lines.append(f"{name}{said}: {card.name}: {card.description} (skills: {skills})")
    return "\n".join(lines)


async def _card(peer: Peer) -> Any:
    import httpx
    from a2a.client.card_resolver import A2ACardResolver

    async with httpx.AsyncClient(headers=_headers(peer), timeout=CARD_TIMEOUT_S) as http:
        return await A2ACardResolver(http, str(peer.url)).get_agent_card()


async def send(config: A2aConfig, agent: str, text: str, context: str, live: Publish) -> str:
    """Ask ``agent``; its answer as it streamed, and where to continue (context, task, state)."""
    peer = config.peers.get(agent)
    if peer is None:
        known = ", ".join(sorted(config.peers)) or "none configured"
        raise PeerError(f"there is no peer agent {agent!r} (known: {known}); a2a_agents lists them")
    try:
        return await asyncio.wait_for(_send(peer, agent, text, context, live), peer.timeout_s)
    except TimeoutError:
        raise PeerError(
            f"{agent} did not finish within {peer.timeout_s:g} s ([plugins.a2a.peers.{agent}] timeout_s)"
        ) from None
    except PeerError:
        raise
    except Exception as exc:  # the peer refused, is down, or spoke something else
        raise PeerError(f"{agent} could not be asked: {type(exc).__name__}: {_why(exc)}") from None


async def _send(peer: Peer, agent: str, text: str, context: str, live: Publish) -> str:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.helpers.proto_helpers import new_text_message
    from a2a.types import a2a_pb2 as pb

    answer: list[str] = []
    task_id, context_id, state, note = "", context, "", ""
    async with httpx.AsyncClient(headers=_headers(peer), timeout=peer.timeout_s) as http:
        client = await ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create_from_url(str(peer.url))
        try:
            message = new_text_message(text, context_id=context or None, role=pb.ROLE_USER)
            async for event in client.send_message(pb.SendMessageRequest(message=message)):
                if event.HasField("task"):
                    task = event.task
                    task_id, context_id = task.id or task_id, task.context_id or context_id
                    state = pb.TaskState.Name(task.status.state)
                    if not answer:  # a peer that does not stream: the answer is the task's artifacts
                        whole = "".join(p.text for a in task.artifacts for p in a.parts if p.text)
                        if whole:
                            answer.append(whole)
                            await live(whole)
                    if task.status.HasField("message"):
                        note = "".join(p.text for p in task.status.message.parts)
                elif event.HasField("artifact_update"):
                    chunk = "".join(p.text for p in event.artifact_update.artifact.parts if p.text)
                    if chunk:
                        answer.append(chunk)
                        await live(chunk)
                elif event.HasField("status_update"):
                    update = event.status_update
                    state = pb.TaskState.Name(update.status.state)
                    task_id = update.task_id or task_id
                    if update.status.HasField("message"):
                        note = "".join(p.text for p in update.status.message.parts)
                elif event.HasField("message"):
                    chunk = "".join(p.text for p in event.message.parts if p.text)
                    answer.append(chunk)
                    context_id = event.message.context_id or context_id
                    await live(chunk)
                    state = state or "MESSAGE"
        finally:
            await client.close()
    said = "".join(answer)[:ANSWER_CHARS]
    state_name = state.removeprefix("TASK_STATE_").lower().replace("_", "-") or "unknown"
    where = f"(agent {agent}; context {context_id or '-'}; task {task_id or '-'}; state {state_name})"
    if state_name == "input-required":
        return f"{said}\n{note}\n{where}: it asks for input; answer with a2a_send in the same context".strip()
    if state_name in ("failed", "rejected", "canceled"):
        raise PeerError(f"{agent}'s task ended {state_name}: {note or said or 'no reason given'} {where}")
    return f"{said}\n\n{where}; pass context to continue the conversation"
