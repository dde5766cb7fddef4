"""files: the tools over the protocol, and the confinement rules (each security test was mutation-checked)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.kit.loop import run
from tests.plugins.helpers import err, harness, ok


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_manifest_tools_and_parallel_safety(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("files", config={"workspace": str(_ws(tmp_path))}) as h:
            safe = {name: bool(tool.get("parallel_safe")) for name, tool in h.tools.items()}
            assert safe == {
                "files_list": True,
                "files_read": True,
                "files_search": True,
                "files_write": False,
                "files_edit": False,
            }

    run(go())


def test_write_read_list_edit_search(tmp_path: Path) -> None:
    ws = _ws(tmp_path)

    async def go() -> None:
        async with harness("files", config={"workspace": str(ws)}) as h:
            assert "created src/a.py" in ok(
                await h.call_tool("files_write", {"path": "src/a.py", "content": "x = 1\ny = 2\nz = 3\n"})
            )
            assert (ws / "src" / "a.py").read_text() == "x = 1\ny = 2\nz = 3\n"
            ok(await h.call_tool("files_write", {"path": "docs/说明.md", "content": "中文内容 TODO\n"}))
            listing = ok(await h.call_tool("files_list", {"recursive": True}))
            assert "src/" in listing and "src/a.py  (18 bytes)" in listing and "docs/说明.md" in listing
            assert ok(await h.call_tool("files_read", {"path": "src/a.py"})) == "x = 1\ny = 2\nz = 3\n"
            ranged = ok(await h.call_tool("files_read", {"path": "src/a.py", "start_line": 2, "end_line": 3}))
            assert ranged == "[lines 2-3 of 3 in src/a.py]\ny = 2\nz = 3\n"
            assert "past the end" in err(await h.call_tool("files_read", {"path": "src/a.py", "start_line": 9}))

            assert "line 2" in ok(
                await h.call_tool("files_edit", {"path": "src/a.py", "old_text": "y = 2", "new_text": "y = 20"})
            )
            assert (ws / "src" / "a.py").read_text() == "x = 1\ny = 20\nz = 3\n"
            none = err(await h.call_tool("files_edit", {"path": "src/a.py", "old_text": "nope", "new_text": ""}))
            assert "not found" in none
            ok(await h.call_tool("files_write", {"path": "dup.txt", "content": "a\na\n"}))
            twice = err(await h.call_tool("files_edit", {"path": "dup.txt", "old_text": "a", "new_text": "b"}))
            assert "occurs 2 times" in twice
            assert (ws / "dup.txt").read_text() == "a\na\n"

            assert ok(await h.call_tool("files_search", {"pattern": "*.py"})) == "src/a.py"
            assert ok(await h.call_tool("files_search", {"pattern": "**/*.md"})) == "docs/说明.md"
            hits = ok(await h.call_tool("files_search", {"query": "中文"}))
            assert hits == "docs/说明.md:1: 中文内容 TODO"
            assert ok(await h.call_tool("files_search", {"query": r"y = \d+", "regex": True})) == "src/a.py:2: y = 20"

    run(go())


def test_write_is_atomic_rename(tmp_path: Path) -> None:
    """The new content arrives by rename: the old inode is untouched and no temp file stays behind."""
    ws = _ws(tmp_path)
    target = ws / "f.txt"
    target.write_text("old")
    target.chmod(0o640)
    old_inode = target.stat().st_ino
    kept = os.open(target, os.O_RDONLY)  # a reader holding the old file keeps seeing the old content

    async def go() -> None:
        async with harness("files", config={"workspace": str(ws)}) as h:
            ok(await h.call_tool("files_write", {"path": "f.txt", "content": "new"}))

    try:
        run(go())
        assert os.pread(kept, 100, 0) == b"old"
    finally:
        os.close(kept)
    assert target.read_text() == "new"
    assert target.stat().st_ino != old_inode
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in ws.iterdir()) == ["f.txt"]


def test_binary_refused_and_large_file_goes_through_the_arena(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    big = "".join(f"line {i} " + "x" * 90 + "\n" for i in range(5000))  # ~500 KB
    (ws / "big.txt").write_text(big)

    async def go() -> None:
        async with harness("files", config={"workspace": str(ws), "max_inline_bytes": 10_000}) as h:
            assert "binary file" in err(await h.call_tool("files_read", {"path": "img.png"}))
            result = await h.call_tool("files_read", {"path": "big.txt"})
            content = ok(result)
            assert content.startswith("line 0 ") and len(content) < 11_000
            assert "5000 lines" in content and "start_line=" in content
            assert "ref" in result["blob"], "a large file travels as an arena reference, not inline"
            assert h.read_blob(result["blob"]) == big.encode()
            tail = ok(await h.call_tool("files_read", {"path": "big.txt", "start_line": 5000}))
            assert tail.endswith("line 4999 " + "x" * 90 + "\n")

    run(go())


def test_path_escape_refused(tmp_path: Path) -> None:
    """`..` and absolute paths are refused with the path named; nothing outside is read or written.

    Mutation-checked: dropping the `..` check or the absolute-path check in Workspace.resolve makes this fail.
    """
    ws = _ws(tmp_path)
    (tmp_path / "secret.txt").write_text("secret")

    async def go() -> None:
        async with harness("files", config={"workspace": str(ws)}) as h:
            for tool, args in (
                ("files_read", {"path": "../secret.txt"}),
                ("files_read", {"path": "sub/../../secret.txt"}),
                ("files_write", {"path": "../evil.txt", "content": "x"}),
                ("files_list", {"path": ".."}),
                ("files_search", {"path": "..", "query": "secret"}),
                ("files_edit", {"path": "../secret.txt", "old_text": "secret", "new_text": "pwned"}),
            ):
                message = err(await h.call_tool(tool, args))
                assert "'..'" in message and repr(args["path"]) in message, message
            absolute = str(tmp_path / "secret.txt")
            message = err(await h.call_tool("files_read", {"path": absolute}))
            assert "absolute" in message and absolute in message
            assert "absolute" in err(await h.call_tool("files_write", {"path": "/tmp/evil.txt", "content": "x"}))

    run(go())
    assert (tmp_path / "secret.txt").read_text() == "secret"
    assert not (tmp_path / "evil.txt").exists()


def test_symlink_escape_refused(tmp_path: Path) -> None:
    """A symlink (file or directory) pointing out of the workspace cannot be read, written or searched through.

    Mutation-checked: replacing the containment test in Workspace.resolve with `True` makes the read, write
    and edit assertions fail; letting walk_files skip its containment check makes the search assertion fail.
    """
    ws = _ws(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (ws / "out").symlink_to(outside)
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "inside.txt").write_text("fine")
    (ws / "ok-link").symlink_to(ws / "inside.txt")

    async def go() -> None:
        async with harness("files", config={"workspace": str(ws)}) as h:
            for tool, args in (
                ("files_read", {"path": "link.txt"}),
                ("files_read", {"path": "out/secret.txt"}),
                ("files_write", {"path": "out/new.txt", "content": "x"}),
                ("files_write", {"path": "link.txt", "content": "x"}),
                ("files_edit", {"path": "link.txt", "old_text": "top", "new_text": "no"}),
                ("files_list", {"path": "out"}),
            ):
                message = err(await h.call_tool(tool, args))
                assert "outside the workspace" in message and repr(args["path"]) in message, message
            assert ok(await h.call_tool("files_read", {"path": "ok-link"})) == "fine"
            found = ok(await h.call_tool("files_search", {"query": "secret"}))
            assert found.startswith("no matches"), found
            listing = ok(await h.call_tool("files_list", {}))
            assert "out -> outside the workspace (not accessible)" in listing

    run(go())
    assert (outside / "secret.txt").read_text() == "top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
