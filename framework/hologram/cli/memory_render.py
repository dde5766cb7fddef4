"""`hologram memory`'s text output: tables a newcomer reads, and the Graphviz form of a neighbourhood.

Tables are laid out by display width (cli/_width.py: Chinese text stays aligned) and cut to the terminal's
width on their last, free-text column. DOT output names nodes ``n0, n1, …`` and puts every entity and
predicate in a quoted, escaped ``label`` — an entity called ``say "hi"\\`` or ``a -> b`` cannot break the
graph.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from hologram.cli._width import one_line, table

LAYER_NAMES = {"l1": "L1", "l2": "L2", "L3": "L3", "l3": "L3"}


def _columns() -> int:
    return shutil.get_terminal_size((120, 24)).columns


def _when(ts_ms: Any) -> str:
    if not ts_ms:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(ts_ms) / 1000))


def _short(session: Any) -> str:
    return str(session) if session else "-"


def render(name: str, result: dict[str, Any], *, where: str, data: Path) -> str:
    """The text form of ``kernel.memory.<name>``'s `result`; `where`: "kernel" or "offline"."""
    origin = "from the running kernel" if where == "kernel" else "offline: no kernel runs, read from the files"
    head = f"memory of {data} — {origin}"
    body = {"stats": _stats, "search": _search, "graph": _graph, "distill": _distill, "scenes": _scenes}[name]
    return head + "\n" + body(result)


def _stats(r: dict[str, Any]) -> str:
    rows = [
        ("LAYER", "COUNT", "WHAT"),
        ("sessions", str(r.get("sessions", 0)), "conversations"),
        ("L1", str(r.get("l1", 0)), "recent events, sent to the model as they are"),
        ("L2", str(r.get("l2", 0)), "cold context: older events, recalled when relevant"),
        ("L3", str(r.get("l3_events", 0)), "events distilled into the knowledge graph"),
        ("L3 triples", str(r.get("l3_triples", 0)), "facts (subject, predicate, value), each with its source"),
        ("L3 entities", str(r.get("l3_entities", 0)), "the things the facts are about"),
        ("L3 blocks", str(r.get("l3_blocks", 0)), "source blocks L3 holds"),
        ("scenes", str(r.get("scenes", 0)), "recurring situations recall prefers memory from"),
    ]
    lines = table(rows, total=_columns())
    if r.get("l3_problem"):
        lines.append(f"L3 is unavailable: {one_line(str(r['l3_problem']))}")
    return "\n".join(lines)


def _search(r: dict[str, Any]) -> str:
    hits = r.get("hits") or []
    if not hits:
        return "no matches (try other words; `hologram memory stats` shows what memory holds)"
    rows = [("LAYER", "KIND", "WHEN", "SESSION", "TEXT")]
    for h in hits:
        text = str(h.get("text", ""))
        said = marked(*_lead(str(h["passage"]), h.get("marks") or [])) if h.get("passage") else None
        if h.get("kind") == "triple" and (said or h.get("source_text")):
            text = f"{text}  ← {said or one_line(str(h['source_text']))}"
        elif said:
            text = said
        if h.get("indexed_chars"):
            text = f"[only its first {h['indexed_chars']:,} of {h.get('chars', 0):,} characters are searchable] {text}"
        rows.append(
            (
                LAYER_NAMES.get(str(h.get("layer")), str(h.get("layer"))),
                str(h.get("kind", "")),
                _when(h.get("ts_ms")),
                _short(h.get("session")),
                text,
            )
        )
    return "\n".join(table(rows, total=_columns())) + f"\n{len(hits)} hit(s)"


#: Characters a search row shows before its first match (the table cuts the rest of a long row at its end).
LEAD = 30


def _lead(text: str, marks: list[list[int]]) -> tuple[str, list[list[int]]]:
    """The passage from a word boundary about `LEAD` characters before its first match, so a terminal row
    that cuts the text at its width still shows the match."""
    if not marks or min(int(m[0]) for m in marks) <= LEAD:
        return text, marks
    first = min(int(m[0]) for m in marks)
    space = text.find(" ", first - LEAD, first)
    start = space + 1 if space >= 0 else first - LEAD
    return "…" + text[start:], [[int(s) - start + 1, int(e) - start + 1] for s, e in marks if int(s) >= start]


def marked(text: str, marks: list[list[int]]) -> str:
    """`text` with each matched span between « and » (a terminal table cannot carry colour reliably)."""
    out, at = [], 0
    for start, end in sorted((int(s), int(e)) for s, e in marks):
        if start < at or end > len(text):
            continue
        out += [text[at:start], "«", text[start:end], "»"]
        at = end
    return "".join(out) + text[at:]


def _graph(r: dict[str, Any]) -> str:
    triples = r.get("triples") or []
    entity = r.get("entity", "")
    if not triples:
        return (
            f"nothing known about {entity!r} in L3 (entities are matched by name, case and width folded; "
            "`hologram memory search` finds words anywhere)"
        )
    rows = [("SUBJECT", "PREDICATE", "VALUE", "WHEN", "SESSION", "SOURCE")]
    for t in triples:
        source = t.get("source") or {}
        rows.append(
            (
                str(t.get("subject", "")),
                str(t.get("predicate", "")),
                str(t.get("value", "")),
                _when(source.get("ts_ms")),
                _short(source.get("session")),
                str(source.get("text", "")),
            )
        )
    return "\n".join(table(rows, total=_columns())) + f"\n{len(triples)} triple(s) around {entity!r}"


def _by_reason(counts: dict[str, int]) -> str:
    """``{"the answer is not JSON": 17, …}`` → "17: the answer is not JSON; 2: …", most first (as the
    kernel's log line, ``cooling.fallback_summary``; not imported from there: rendering stays cheap)."""
    return "; ".join(f"{n}: {why}" for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _distill(r: dict[str, Any]) -> str:
    lines = [
        f"eligible {r.get('eligible', 0)}, moved to L3 {r.get('moved', 0)} event(s) with {r.get('triples', 0)} "
        f"triple(s); held back {r.get('held_back', 0)} (part of a tool call not yet idle), failed "
        f"{r.get('failed', 0)} (kept in L2, retried later), reconciled {r.get('reconciled', 0)}"
    ]
    # one line per reason, not per event: a model that never answers JSON fails every event the same way
    reasons: dict[str, list[str]] = {}
    for failure in r.get("failures") or []:
        event = str(failure.get("event", ""))
        why = one_line(str(failure.get("why", ""))).replace(f"event {event}: ", "")
        reasons.setdefault(why, []).append(event)
    for why, events in reasons.items():
        more = f" and {len(events) - 1} more" if len(events) > 1 else ""
        lines.append(f"  {events[0]}{more}: {why}")
    fallbacks: dict[str, int] = r.get("fallbacks") or {}
    if fallbacks:
        lines.append(
            f"read by the rules because the model could not: {sum(fallbacks.values())} event(s) "
            f"({_by_reason(fallbacks)}); they moved to L3 with what the rules read"
        )
    if reasons and any("not JSON" in why or "schema" in why for why in reasons):
        lines.append(
            "  the model did not answer the extraction prompt with the JSON asked for; set "
            '[memory.cooling] extractor = "rules" in settings.toml to distill without it'
        )
    if not r.get("eligible"):
        lines.append(
            "nothing was eligible: L2 events cool after [memory.cooling] idle_hours without use "
            "(--idle-hours 0 takes every event in L2)"
        )
    return "\n".join(lines)


def _scenes(r: dict[str, Any]) -> str:
    scenes = r.get("scenes") or []
    if not scenes:
        return "no scenes yet (a scene forms when a situation recurs, or when a plugin declares one)"
    rows = [("SCENE", "KEY", "STRENGTH", "LAST SEEN", "FEATURES")]
    for s in scenes:
        f = s.get("features") or {}
        parts = [f"{k}={f[k]}" for k in ("channel", "partner", "time_of_day") if f.get(k)]
        if f.get("tools"):
            parts.append("tools=" + ",".join(f["tools"]))
        if f.get("topic"):
            parts.append("topic=" + ",".join(f["topic"]))
        rows.append(
            (
                str(s.get("id", "")),
                str(s.get("key") or "-"),
                f"{float(s.get('strength', 0)):.2f}",
                _when(float(s.get("last_seen") or 0) * 1000),
                " ".join(parts),
            )
        )
    return "\n".join(table(rows, total=_columns()))


def dot_quote(text: str) -> str:
    """`text` as a DOT quoted string: backslash and double quote escaped, line breaks as ``\\n``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{escaped}"'


def dot(r: dict[str, Any]) -> str:
    """The neighbourhood as a Graphviz digraph: one node per entity, one labelled edge per triple."""
    entity = str(r.get("entity", ""))
    nodes: dict[str, str] = {}
    lines = ["digraph memory {", "  graph [rankdir=LR];", "  node [shape=box];"]

    def node(name: str) -> str:
        if name not in nodes:
            nodes[name] = f"n{len(nodes)}"
            style = ", style=bold" if name == entity else ""
            lines.append(f"  {nodes[name]} [label={dot_quote(name)}{style}];")
        return nodes[name]

    node(entity)
    for t in r.get("triples") or []:
        a, b = node(str(t.get("subject", ""))), node(str(t.get("value", "")))
        lines.append(f"  {a} -> {b} [label={dot_quote(str(t.get('predicate', '')))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
