"""`hologram memory` offline — no kernel runs on the data directory, so the command opens the files itself —
over a real session store, cold store and scenes store written the way the kernel writes them; and its text
forms: the DOT of a neighbourhood (labels with quotes, backslashes and newlines survive a DOT parser), tables
aligned by display width (Chinese).

Each test runs the real `hologram` entry point (`hologram.cli.main`) and asserts what it printed, and that
it went the offline way (the header says so; no socket exists).

Mutation checks (done, memory_render.py and _width.py copied aside and back): dropping the backslash escape from
`dot_quote` turns test_dot_labels_survive_a_parser red (the label parses back without its backslash); padding
table cells by `len` instead of display width turns test_chinese_rows_stay_aligned red.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from hologram.cli import main
from hologram.cli._width import table, width
from hologram.cli.memory_render import dot, dot_quote
from hologram.cli.memory_source import kernel_runs
from hologram.kernel.control import socket_path
from tests.cli.dot_parse import parse_dot
from tests.cli.memory_seed import seed, seed_graph


def hologram(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_stats_json_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    seed(data)
    assert not kernel_runs(data) and not socket_path(data).exists()  # the offline path, for certain
    code, out, err = hologram(capsys, "memory", "stats", "--data", str(data), "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert {"l1": 3, "l2": 1, "l3_triples": 0, "scenes": 1}.items() <= stats.items(), stats
    assert stats["sessions"] == 2 and stats["l3_events"] == 0
    assert stats.pop("l3_problem") is None and all(isinstance(v, int) for v in stats.values()), stats

    code, out, _ = hologram(capsys, "memory", "stats", "--data", str(data))
    assert code == 0 and "offline" in out.splitlines()[0], out
    assert any(line.split()[:2] == ["L2", "1"] for line in out.splitlines()), out


def test_search_offline_names_each_hit_layer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    ids = seed(data)
    code, out, err = hologram(capsys, "memory", "search", "Bartholomew saffron", "--data", str(data), "--json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    assert hits and hits[0]["session"] == ids["en"] and hits[0]["layer"] == "L2", hits  # the event put in L2
    assert "Bartholomew" in hits[0]["text"]
    code, out, err = hologram(capsys, "memory", "search", "小橘子", "--data", str(data))
    assert code == 0, err
    row = next(line for line in out.splitlines() if "小橘子" in line)
    assert row.startswith("L1 ") and ids["zh"] in row, out


def test_scenes_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    seed(data)
    code, out, err = hologram(capsys, "memory", "scenes", "--data", str(data), "--json")
    assert code == 0, err
    [scene] = json.loads(out)["scenes"]
    assert scene["features"]["channel"] == "qq" and scene["features"]["partner"] == "alice", scene
    assert scene["strength"] > 1
    code, out, _ = hologram(capsys, "memory", "scenes", "--data", str(data))
    assert "channel=qq" in out and "partner=alice" in out, out


def test_empty_graph_offline_is_no_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No graph was ever written: graph and distill answer empty and zero, and create no database file."""
    data = tmp_path / "data"
    seed(data)
    code, out, err = hologram(capsys, "memory", "graph", "Bartholomew", "--data", str(data), "--json")
    assert code == 0, err
    assert json.loads(out) == {"entity": "Bartholomew", "triples": []}
    code, out, err = hologram(capsys, "memory", "graph", "Bartholomew", "--data", str(data))
    assert code == 0 and "nothing known about 'Bartholomew'" in out, (out, err)
    code, out, err = hologram(capsys, "memory", "distill", "--data", str(data), "--json")  # nothing idle 72 h
    assert code == 0 and json.loads(out)["moved"] == 0, err
    assert not (data / "graph.kz").exists()  # looking created nothing (and never imported the database)


def test_missing_data_dir_and_bad_params_say_what_to_do(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = hologram(capsys, "memory", "stats", "--data", str(tmp_path / "nowhere"))
    assert code == 1 and "no data directory here" in err and "--data" in err, err
    assert "Traceback" not in err
    data = tmp_path / "data"
    seed(data)
    code, _, err = hologram(capsys, "memory", "search", "x", "--limit", "0", "--data", str(data))
    assert code == 1 and "limit: a whole number from 1 to 200" in err, err


def test_a_stale_socket_file_is_no_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel killed with -9 leaves its socket file; nothing listens, so the command reads offline."""
    import socket

    data = tmp_path / "d"
    seed(data)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(socket_path(data)))  # bound, never listening, then closed: a dead kernel's socket
    assert socket_path(data).exists() and not kernel_runs(data)
    code, out, err = hologram(capsys, "memory", "stats", "--data", str(data), "--json")
    assert code == 0 and json.loads(out)["l2"] == 1, err


TRICKY = ['say "hi"', "back\\slash", "two\nlines", "a -> b", "小明", "x;y{z}", 'end\\"']


def test_dot_labels_survive_a_parser() -> None:
    result = {
        "entity": TRICKY[0],
        "triples": [
            {"subject": TRICKY[0], "predicate": p, "value": v, "source": {}}
            for p, v in zip(TRICKY[1:], reversed(TRICKY[1:]), strict=True)
        ],
    }
    text = dot(result)
    graph = parse_dot(text)
    assert set(graph.labels.values()) == set(TRICKY), graph.labels
    edges = {(graph.labels[a], label, graph.labels[b]) for a, b, label in graph.edges}
    expected = {(t["subject"], t["predicate"], t["value"]) for t in result["triples"]}
    assert edges == expected
    if shutil.which("dot"):  # Graphviz itself, where installed
        done = subprocess.run(["dot", "-Tplain"], input=text, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr


def test_dot_quote() -> None:
    assert dot_quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


def test_graph_dot_from_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    seed(data)
    code, out, err = hologram(capsys, "memory", "graph", 'O"Brien', "--dot", "--data", str(data))
    assert code == 0, err
    assert set(parse_dot(out).labels.values()) == {'O"Brien'}


def test_chinese_rows_stay_aligned() -> None:
    lines = table([("NAME", "VALUE", "NOTE"), ("小橘子", "猫", "喜欢晒太阳"), ("Bartholomew", "walrus", "x")])
    starts = [width(line[: line.index(note)]) for line, note in zip(lines, ("NOTE", "喜欢", "x"), strict=True)]
    assert len(set(starts)) == 1, lines
    cut = table([("A", "TEXT"), ("a", "很长的中文句子" * 20)], total=30)
    assert all(width(line) <= 30 for line in cut) and cut[1].endswith("…"), cut


def test_graph_offline_shows_triples_with_their_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    ids = seed(data)
    seed_graph(data, ids["en"])
    code, out, err = hologram(capsys, "memory", "graph", "caroline", "--data", str(data), "--json")
    assert code == 0, err
    r = json.loads(out)
    got = {(t["subject"], t["predicate"], t["value"]) for t in r["triples"]}
    assert got == {("Caroline", "likes", "pottery"), ("Caroline", 'has "best" friend', "Mel")}, r
    source = r["triples"][0]["source"]
    assert source["event"] == "ev_caroline" and source["session"] == ids["en"]
    assert source["ts_ms"] == 1_700_000_000_000 and "I love pottery" in source["text"]
    code, out, err = hologram(capsys, "memory", "graph", "Caroline", "--hops", "2", "--data", str(data), "--json")
    assert ("Mel", "lives in", "北京") in {
        (t["subject"], t["predicate"], t["value"]) for t in json.loads(out)["triples"]
    }

    code, out, err = hologram(capsys, "memory", "graph", "Caroline", "--hops", "2", "--data", str(data), "--dot")
    parsed = parse_dot(out)
    edges = {(parsed.labels[a], label, parsed.labels[b]) for a, b, label in parsed.edges}
    assert ("Caroline", 'has "best" friend', "Mel") in edges and ("Mel", "lives in", "北京") in edges, out

    code, out, err = hologram(capsys, "memory", "graph", "Caroline", "--data", str(data))
    assert code == 0 and "I love pottery" in out and "likes" in out and ids["en"] in out, out

    code, out, err = hologram(capsys, "memory", "stats", "--data", str(data), "--json")
    stats = json.loads(out)
    assert stats["l3_triples"] == 3 and stats["l3_blocks"] == 1 and stats["l3_entities"] == 4, stats


def test_distill_offline_moves_l2_into_l3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`distill --idle-hours 0` with no kernel: the L2 event is distilled by the rules extractor (no provider
    configured) into the graph; afterwards stats count it in L3, not L2, and search labels it L3."""
    data = tmp_path / "data"
    ids = seed(data)
    assert not (data / "graph.kz").exists()
    code, out, err = hologram(capsys, "memory", "distill", "--idle-hours", "0", "--data", str(data), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["eligible"] == 1 and report["moved"] == 1 and report["failed"] == 0, report
    assert (data / "graph.kz").exists()
    code, out, err = hologram(capsys, "memory", "stats", "--data", str(data), "--json")
    stats = json.loads(out)
    assert (stats["l1"], stats["l2"], stats["l3_events"], stats["l3_blocks"]) == (3, 0, 1, 1), stats
    code, out, err = hologram(capsys, "memory", "search", "Bartholomew saffron", "--data", str(data), "--json")
    hits = json.loads(out)["hits"]
    assert hits and hits[0]["layer"] == "L3" and hits[0]["session"] == ids["en"], hits
    code, out, err = hologram(capsys, "memory", "distill", "--idle-hours", "0", "--data", str(data))
    assert code == 0 and "eligible 0" in out and "nothing was eligible" in out, out


def test_offline_with_the_graph_held_elsewhere_fails_loudly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Offline, another process holds the graph (here: this test): the command must not print 0 triples as if
    L3 were empty; it exits 1 naming the lock.

    Mutation check (done): without the `graph.problem` check in memory_source._offline, stats exits 0 with
    ``"l3_triples": 0`` and this test turns red."""
    from hologram.memory.graph import open_graph_store

    data = tmp_path / "data"
    ids = seed(data)
    seed_graph(data, ids["en"])
    with open_graph_store(data / "graph.kz"):
        code, out, err = hologram(capsys, "memory", "stats", "--data", str(data), "--json")
    assert code == 1 and "open in another process" in err, (out, err)
