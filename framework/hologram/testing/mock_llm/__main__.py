"""The mock as its own process: ``python -m hologram.testing.mock_llm --port 8765 --script steps.json``.

Prints ``mock_llm listening on <base_url>`` once the socket is bound, so a parent can wait for that line
(with ``--port 0`` it also learns the port), and serves until SIGINT or SIGTERM. The script file is a JSON
list of steps, or an object ``{"steps": [...], "default": step}`` (script.py says what a step is); a running
mock takes more on ``POST /_mock/script`` and shows what it was sent on ``GET /_mock/requests``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from hologram.testing.mock_llm.script import ScriptError
from hologram.testing.mock_llm.server import MockLLM


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m hologram.testing.mock_llm",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback)")
    ap.add_argument("--port", type=int, default=0, help="port (default 0: any free one, printed at start)")
    ap.add_argument(
        "--vendor",
        choices=["openai", "deepseek"],
        default="openai",
        help="whose validation rules it applies: settings.toml's provider `kind` (default openai)",
    )
    ap.add_argument("--api-key", default=None, help="refuse requests without this Bearer token (default: any)")
    ap.add_argument("--script", default=None, help="JSON file with the steps it answers with, in order")
    ap.add_argument("--reuse-index-zero", action="store_true", help="stream every tool call with index 0")
    ap.add_argument("--thinking-default", action="store_true", help="deepseek: thinking mode unless disabled")
    ap.add_argument("--max-context-tokens", type=int, default=None, help="refuse longer requests (4 chars a token)")
    ap.add_argument("--chunk-chars", type=int, default=4, help="characters per streamed chunk")
    args = ap.parse_args(argv)
    mock = MockLLM(
        args.vendor,
        api_key=args.api_key,
        reuse_index_zero=args.reuse_index_zero,
        thinking_default=args.thinking_default,
        max_context_tokens=args.max_context_tokens,
        chunk_chars=args.chunk_chars,
        host=args.host,
        port=args.port,
    )
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            data = json.load(fh)
        try:
            if isinstance(data, list):
                mock.script(data)
            else:
                mock.script(data.get("steps", []), default=data.get("default"))
        except ScriptError as e:
            print(f"mock_llm: {args.script}: {e}", file=sys.stderr)
            return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with mock:
        print(f"mock_llm listening on {mock.base_url}", flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
