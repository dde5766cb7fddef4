"""The table shape that `tools/bench/peers/` writes, and `sweep.py` can write too, so both print side by side.

JSON: ``{"bench": str, "when": iso-8601, "machine": {...}, "systems": [name, ...], "rows": [row, ...]}`` with
one row per measure::

    {"measure": "idle_pss_mb", "label": "idle after one turn, PSS of the whole process tree",
     "unit": "MB", "values": {"nanobot 0.3.5": 117.0, "OpenClaw 2026.9.6": null},
     "notes": {"OpenClaw 2026.9.6": "why the cell is empty, or how it was measured"}}

A value is a number in the row's unit, or null with a note saying why. Tables are merged by the
``measure`` key: `merge` puts the columns of several files into one table (``--with sweep.json``).
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

# measure key -> (label, unit). The keys are the contract with sweep.py: same key, same meaning.
MEASURES: dict[str, tuple[str, str]] = {
    "request_hello_tokens": ('request for a one-word "hello" (≈ tokens, bytes/4)', "tokens"),
    "request_hello_bytes": ('request for a one-word "hello", bytes the mock received', "bytes"),
    "request_hello_tools": ("tools in that request", "count"),
    "request_hello_tool_schema_bytes": ("tool schemas in that request", "bytes"),
    "request_hello_system_bytes": ("system prompt in that request", "bytes"),
    "idle_pss_mb": ("idle after one turn, PSS of the whole process tree", "MB"),
    "idle_processes": ("processes in that tree", "count"),
    "ready_s": ("launch until it reports ready", "s"),
    "first_answer_s": ("launch until the first answer", "s"),
    "warm_turn_s": ("warm turn end to end, instant model (median)", "s"),
    "install_mb": ("install size", "MB"),
}


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_1m": os.getloadavg()[0],
    }


def build(bench: str, columns: list[tuple[str, dict[str, float | None], dict[str, str]]]) -> dict[str, Any]:
    """The JSON document from (system, values, notes) columns."""
    rows = []
    for key, (label, unit) in MEASURES.items():
        rows.append(
            {
                "measure": key,
                "label": label,
                "unit": unit,
                "values": {name: values.get(key) for name, values, _ in columns},
                "notes": {name: notes[key] for name, _, notes in columns if key in notes},
            }
        )
    return {
        "bench": bench,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "systems": [name for name, _, _ in columns],
        "rows": rows,
    }


def merge(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One table with the columns of every document, rows matched by ``measure`` (first document's order,
    then rows only later ones have)."""
    systems: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    for doc in docs:
        systems += [s for s in doc["systems"] if s not in systems]
        for row in doc["rows"]:
            into = rows.setdefault(row["measure"], {**row, "values": {}, "notes": {}})
            into["values"].update(row["values"])
            into["notes"].update(row.get("notes", {}))
    return {**docs[0], "systems": systems, "rows": list(rows.values())}


def cell(value: float | None, unit: str, note: str | None) -> str:
    if value is None:
        return f"— ({note})" if note else "—"
    if unit == "tokens":
        text = f"{value / 1000:.1f}k"
    elif unit == "bytes":
        text = f"{value:,.0f} B"
    elif unit == "MB":
        text = f"{value:,.0f} MB"
    elif unit == "s":
        text = f"{value:.3f} s" if value < 0.1 else f"{value:.2f} s"
    else:
        text = f"{value:g}"
    return f"{text} ({note})" if note else text


def markdown(doc: dict[str, Any]) -> str:
    systems = doc["systems"]
    lines = ["| measure | " + " | ".join(systems) + " |", "|---|" + "---|" * len(systems)]
    for row in doc["rows"]:
        cells = [cell(row["values"].get(s), row["unit"], row.get("notes", {}).get(s)) for s in systems]
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _get(doc: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def from_sweep(result: dict[str, Any], system: str = "Hologram") -> dict[str, Any]:
    """sweep.py's own `--json` (sections start/turn/footprint/request/install) as one column of this
    shape: the same measure on the same key, so the tables print side by side. Sections the sweep did
    not run stay empty."""
    idle = _get(result, "footprint", "idle") or {}
    install = _get(result, "install", "bytes")
    values: dict[str, float | None] = {
        "request_hello_tokens": _get(result, "request", "tokens_approx"),
        "request_hello_bytes": _get(result, "request", "bytes"),
        "request_hello_tools": _get(result, "request", "tools"),
        "request_hello_tool_schema_bytes": _get(result, "request", "tool_schema_bytes"),
        "request_hello_system_bytes": _get(result, "request", "system_prompt_bytes"),
        "idle_pss_mb": idle.get("total_pss_mb"),
        "idle_processes": len(idle["processes"]) if "processes" in idle else None,
        "ready_s": _get(result, "start", "default", "ready_s"),
        "first_answer_s": _get(result, "start", "default", "first_answer_s"),
        # The peers' warm turn is an HTTP request to their OpenAI-compatible endpoint: the same for Hologram
        # where the sweep measured it (its http plugin), else the turn API over the control socket.
        "warm_turn_s": _get(result, "turn", "http", "warm_median_s") or _get(result, "turn", "warm_median_s"),
        "install_mb": round(install / 1e6) if install else None,
    }
    via = "HTTP" if _get(result, "turn", "http", "warm_median_s") else "turn API"
    notes = {"warm_turn_s": via, "idle_pss_mb": "after an English and a Chinese turn"}
    return build("sweep", [(system, values, {k: v for k, v in notes.items() if values.get(k) is not None})])


def load(path: Path) -> dict[str, Any]:
    """A table of this shape, or sweep.py's own JSON converted to one."""
    doc = json.loads(path.read_text())
    if isinstance(doc, dict) and "rows" in doc and "systems" in doc:
        return doc
    if isinstance(doc, dict) and any(k in doc for k in ("start", "footprint", "request", "turn", "install")):
        return from_sweep(doc)
    raise SystemExit(
        f"{path}: neither a bench table ('systems' and 'rows', see tools/bench/peers/table.py) nor sweep.py JSON"
    )
