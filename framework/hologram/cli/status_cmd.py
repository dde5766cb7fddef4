"""`hologram status`: the running kernel's plugins, providers and memory (`hologram plugin`: cli/plugin_cmd.py)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from hologram.cli._common import add_data_option, command_parser

# What the command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py).

STATUS_DETAILS = """\
Every plugin of the running kernel with its state (waiting, starting, ready, crashed, stopping, stopped,
failed), pid, restarts, uptime and, for a waiting plugin, the facilities it waits on and why; then each LLM
provider of the fallback chain: healthy, cooling (skipped after its retries were spent; how long still) or
half-open (the next request probes it), with its last error.

examples:
  hologram status
  hologram status --json | jq '.plugins[] | select(.state != "ready")'
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = command_parser(subparsers, "status", "show the running kernel's plugins", STATUS_DETAILS)
    add_data_option(status)
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(run=run_status)


def _format_uptime(seconds: Any) -> str:
    if seconds is None:
        return "-"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def plugin_rows(plugins: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The plugins' table, its header first. A `[start] lazy` plugin not called yet reads "on demand", not
    "stopped": nothing is wrong with it, its first tool call starts it (a newcomer read 12 stopped plugins as 12
    failures)."""
    rows: list[tuple[str, ...]] = [("PLUGIN", "STATE", "PID", "RESTARTS", "UPTIME", "DETAIL")]
    for plugin in plugins:
        rows.append(
            (
                plugin["name"],
                "on demand" if plugin.get("on_demand") else plugin["state"],
                str(plugin["pid"] or "-"),
                str(plugin["restarts"]),
                _format_uptime(plugin["uptime_s"]),
                plugin.get("status") or plugin["reason"] or "",
            )
        )
    return rows


def run_status(args: argparse.Namespace) -> int:
    from hologram.cli._web import web_info
    from hologram.kernel.control import call

    status = call(args.data, "status")
    web = web_info(args.data)
    if web is not None:
        status["web"] = {"url": web["url"], "tls": bool(web.get("tls"))}  # never the token
    if args.json:
        print(json.dumps(status, indent=2, sort_keys=True))
        return 0
    kernel = status["kernel"]
    uptime = _format_uptime(kernel["uptime_s"])
    print(f"kernel {kernel['version']}  pid {kernel['pid']}  up {uptime}  data {kernel['data_dir']}")
    if web is not None:
        print(f"web UI {web['url']}  (`hologram open` for the link with its token)")
    rows = plugin_rows(status["plugins"])
    _table(rows)
    providers = status.get("providers") or []
    if providers:
        print()
        rows = [("PROVIDER", "STATE", "COOLDOWN", "FAILURES", "LAST ERROR")]  # same type as above
        for p in providers:
            left = float(p.get("cooldown_left_s") or 0)
            rows.append(
                (p["name"], p["state"], f"{left:.0f}s" if left else "-", str(p["failures"]), p.get("last_error") or "")
            )
        _table(rows)
    memory = status.get("memory")
    if memory:
        model = memory.get("embedder") or ("loading" if not memory.get("embedder_ready") else "none (BM25 only)")
        released = memory.get("sessions_released") or 0
        idle = f"; {released:,} idle session(s) released so far (read back on their next turn)" if released else ""
        print(
            f"\nmemory: {memory['l2_events']:,} events in cold context (L2), {memory['sessions_indexed']} "
            f"session(s) indexed in memory ({memory['events_indexed']:,} events){idle}, embedder {model}"
        )
        if memory.get("across_inputs") is not None:
            print(
                f"memory across sessions: {memory['across_inputs']:,} statement(s) held "
                "for the same person's other chats"
            )
        if memory.get("l3_triples") is not None:
            pid = memory.get("l3_pid")
            where = f" (in its own process, pid {pid})" if pid else ""
            print(f"memory graph (L3): {memory['l3_triples']:,} triples, {memory['l3_blocks']:,} blocks{where}")
        if memory.get("l3_problem"):
            print(f"memory graph (L3): unavailable: {memory['l3_problem']}")
        if memory.get("cooling"):
            print(_cooling(memory["cooling"]))
    delivery = status.get("delivery")
    if delivery:
        kept = delivery["replay_bytes"] + delivery["idle_bytes"]
        print(
            f"delivery: {kept / 1024:,.0f} KiB of events kept for clients that reconnect "
            f"({delivery['sessions']} session(s) in use, {delivery['idle_sessions']} idle), "
            f"{delivery['queued_bytes'] / 1024:,.0f} KiB waiting for {delivery['watchers']} client(s)"
        )
    return 0


def _table(rows: list[tuple[str, ...]]) -> None:
    """Columns padded to their widest cell; the last column is free text."""
    last = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    for row in rows:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:last])) + "  " + row[last])


def _cooling(cooling: dict[str, Any]) -> str:
    """The cooling line: the extractor the settings name, and what the last run that found anything did."""
    names = {"auto": "auto (the model; the rules for what it cannot read)", "rules": "rules", "llm": "llm (the model)"}
    line = f"cooling: extractor {names.get(cooling.get('extractor', ''), cooling.get('extractor'))}"
    last = cooling.get("last")
    if not last:
        return line + "; no run has found anything to cool yet"
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(last["at"])))
    line += (
        f"; last run {when}: {last['moved']} of {last['eligible']} eligible event(s) moved to L3 "
        f"({last['triples']} triples), {last['failed']} failed"
    )
    fallbacks: dict[str, int] = last.get("fallbacks") or {}
    if fallbacks:
        reasons = "; ".join(f"{n}: {why}" for why, n in sorted(fallbacks.items(), key=lambda kv: (-kv[1], kv[0])))
        line += f", {sum(fallbacks.values())} read by the rules because the model could not ({reasons})"
    return line
