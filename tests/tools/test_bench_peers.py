"""tools/bench/peers without the peers: the measurement run on a stand-in peer, and the shared table shape.

The real peers are installed and measured only on demand (`python tools/bench/peers/run.py`); what is
held here is what every column depends on: the mock out of process records what a peer sends, the
measurement times a launch to ready and to the first answer, counts the turn's request and the tree's
PSS, and the JSON table merges with sweep.py's by measure key.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.peers import table
from bench.peers.common import MockProcess, PeerError, Result, http, http_up, request_size
from bench.peers.peer import Peer, measure

# A peer in 30 lines: an HTTP server that answers /health and forwards each turn to the model, with a
# system prompt and one tool, the way the real peers do.
STAND_IN = textwrap.dedent(
    """
    import json, sys, urllib.request
    from http.server import BaseHTTPRequestHandler, HTTPServer
    port, model = int(sys.argv[1]), sys.argv[2]
    TOOL = {"type": "function", "function": {"name": "read_file", "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
    class H(BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def _send(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code); self.send_header("Content-Length", str(len(data))); self.end_headers()
            self.wfile.write(data)
        def do_GET(self):
            self._send(200, {"ok": True})
        def do_POST(self):
            text = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["text"]
            req = {"model": "m", "messages": [{"role": "system", "content": "You are a stand-in."},
                   {"role": "user", "content": text}], "tools": [TOOL]}
            r = urllib.request.Request(model + "/chat/completions", data=json.dumps(req, separators=(",", ":")).encode(),
                                       headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(r) as resp:
                answer = json.loads(resp.read())["choices"][0]["message"]["content"]
            self._send(200, {"answer": answer})
    HTTPServer(("127.0.0.1", port), H).serve_forever()
    """
)


class StandIn(Peer):
    name = "StandIn"
    version = "1"

    def installed(self) -> bool:
        return True

    def install(self) -> None:
        pass

    def install_dirs(self) -> list[Path]:
        return [self.root / "app"]

    def configure(self, mock_url: str) -> None:
        self.mock_url = mock_url
        app = self.root / "app"
        app.mkdir(parents=True, exist_ok=True)
        (app / "peer.py").write_text(STAND_IN)

    def launch(self) -> tuple[list[str], dict[str, str]]:
        return [sys.executable, str(self.root / "app" / "peer.py"), str(self.port), self.mock_url], self.env()

    def ready(self) -> Callable[[], bool]:
        return http_up(f"http://127.0.0.1:{self.port}/health")

    def turn(self, text: str, session: str) -> str:
        status, body = http("POST", f"http://127.0.0.1:{self.port}/turn", {"text": text})
        assert status == 200, body
        return str(json.loads(body)["answer"])


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_measure_fills_every_cell_from_a_driven_peer(tmp_path: Path) -> None:
    peer = StandIn(tmp_path, _free_port())
    result = Result(peer.system)
    with MockProcess(tmp_path, reply="hello") as mock:
        measure(peer, mock, result, warm_turns=3, launches=3)
        sent = [r for r in mock.requests() if "chat/completions" in r["path"]]
    v = result.values
    assert result.details["first_reply"] == "hello"
    assert 0 < v["ready_s"] <= v["first_answer_s"]  # type: ignore[operator]
    # the turn's request as the mock received it: its bytes, its one tool, its system prompt
    assert v["request_hello_bytes"] == int(sent[0]["headers"]["content-length"])
    assert v["request_hello_tokens"] == int(sent[0]["headers"]["content-length"]) // 4
    assert v["request_hello_tools"] == 1
    assert v["request_hello_system_bytes"] == len(json.dumps("You are a stand-in."))
    assert v["idle_processes"] == 1 and v["idle_pss_mb"] and v["idle_pss_mb"] > 1
    assert len(result.details["warm_turns_s"]) == 3 and v["warm_turn_s"] and v["warm_turn_s"] > 0
    # the first turn, the warm ones and one turn per further launch: one request each, none rejected
    assert len(sent) == 1 + 3 + 2
    launches = result.details["launches_s"]
    assert len(launches) == 3 and all(0 < ready <= first for ready, first in launches)
    assert v["first_answer_s"] == sorted(first for _, first in launches)[1]
    assert result.notes["first_answer_s"] == "median of 3 launches"
    assert "mock_rejections" not in result.details
    assert v["install_mb"] is not None


def test_a_peer_that_dies_keeps_what_was_measured_and_says_why(tmp_path: Path) -> None:
    class Dies(StandIn):
        def launch(self) -> tuple[list[str], dict[str, str]]:
            return [sys.executable, "-c", "raise SystemExit(3)"], self.env()

    peer = Dies(tmp_path, _free_port())
    result = Result(peer.system)
    with MockProcess(tmp_path) as mock, pytest.raises(PeerError, match="exited with code 3"):
        measure(peer, mock, result, warm_turns=1)
    assert result.values["install_mb"] is not None and "ready_s" not in result.values


def test_request_size_counts_tools_and_system_prompt() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": "abc"}, {"role": "user", "content": "hello"}],
        "tools": [{"type": "function", "function": {"name": "t"}}],
    }
    size = request_size({"body": body, "headers": {"content-length": "400"}, "status": 200})
    assert size == {
        "bytes": 400,
        "tokens": 100,
        "status": 200,
        "tools": 1,
        "tool_schema_bytes": len(json.dumps(body["tools"])),
        "system_bytes": len(json.dumps("abc")),
        "messages": 2,
    }


def test_tables_merge_by_measure_key_so_sweep_and_peers_print_side_by_side() -> None:
    hologram = table.build("sweep", [("Hologram", {"idle_pss_mb": 320.0, "ready_s": 0.7}, {})])
    peers = table.build(
        "peers",
        [
            ("nanobot 0.3.5", {"idle_pss_mb": 117.0, "ready_s": 1.0}, {}),
            ("OpenClaw 2026.9.6", {"idle_pss_mb": None}, {"idle_pss_mb": "cannot be driven: no Node 24"}),
        ],
    )
    merged = table.merge([hologram, peers])
    assert merged["systems"] == ["Hologram", "nanobot 0.3.5", "OpenClaw 2026.9.6"]
    row = next(r for r in merged["rows"] if r["measure"] == "idle_pss_mb")
    assert row["values"] == {"Hologram": 320.0, "nanobot 0.3.5": 117.0, "OpenClaw 2026.9.6": None}
    text = table.markdown(merged)
    assert (
        "| idle after one turn, PSS of the whole process tree | 320 MB | 117 MB | — (cannot be driven: no Node 24) |"
        in text
    )
    assert json.loads(json.dumps(merged)) == merged  # the JSON file is this document


def test_sweep_json_as_it_is_becomes_the_hologram_column(tmp_path: Path) -> None:
    sweep = {
        "start": {"default": {"plugins": 7, "ready_s": 0.71, "first_answer_s": 1.93}, "50": {"ready_s": 2.0}},
        "turn": {"first_s": 0.4, "warm_median_s": 0.05},
        "footprint": {"idle": {"processes": {"kernel": {}, "memory": {}}, "total_pss_mb": 330.5}},
        "request": {
            "bytes": 12000,
            "tokens_approx": 3000,
            "tools": 20,
            "tool_schema_bytes": 11000,
            "system_prompt_bytes": 600,
        },
        "install": {"bytes": 328_000_000},
    }
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep))
    values = {r["measure"]: r["values"]["Hologram"] for r in table.load(path)["rows"]}
    assert values == {
        "request_hello_tokens": 3000,
        "request_hello_bytes": 12000,
        "request_hello_tools": 20,
        "request_hello_tool_schema_bytes": 11000,
        "request_hello_system_bytes": 600,
        "idle_pss_mb": 330.5,
        "idle_processes": 2,
        "ready_s": 0.71,
        "first_answer_s": 1.93,
        "warm_turn_s": 0.05,
        "install_mb": 328,
    }
