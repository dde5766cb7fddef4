from pathlib import Path
from typing import Any

from hologram.agent import ToolRegistry
from hologram.memory.cold.overflow import OverflowGuard
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore


async def requests(data_dir: Path, store: SessionStore, sid: str, query: str) -> tuple[Any, ...]:
    memory = SessionMemory.open(data_dir, store, load_model=False)  # cold.db, vectors.db; segmenter warm-up;
    tools = ToolRegistry()  # without load_model=False, the embedder loads in a thread (BM25 only until then)
    w, f = 2_000, 300  # the model's window, and what every request carries (system prompt, tool schemas)
    prepared = await memory.prepare(sid, query, window_tokens=w, fixed_tokens=f)  # before every LLM request
    messages = prepared.request_messages("You are helpful.")  # [system, note?, *history: kept L1 + recalled L2]
    moved = prepared.recalled, prepared.pruned  # L2 events sent this time; L1 events moved to L2
    shown = await memory.preview(sid, "a question", window_tokens=w, fixed_tokens=f)  # the same, nothing moved
    guard = OverflowGuard(w)  # one per turn; provider_error: the provider said the prompt is too long
    again = await memory.recover(sid, query, window_tokens=w, fixed_tokens=f, guard=guard, provider_error=True)
    hits = await memory.search(sid, "text", 5, since=0.0, until=None, tool="shell")  # this session's L2
    tools.add_kernel_tool(memory.kernel_tool())  # coldcontext_query: search + move back to L1
    await memory.index(sid)  # passage vectors off the loop (also scheduled by prepare)
    await memory.aclose()
    return messages, moved, shown, again, hits
