"""notes: the tools over the protocol, Chinese text, and notes.store served to another plugin."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hologram.manifest import load_manifest
from hologram.plan.lock import LockedPlugin, plugin_entry
from hologram.rpc import RingWriter
from hologram.supervisor import PluginSpec, State, Supervisor
from tests.kit.loop import run
from tests.kit.wait import wait_until_async
from tests.plugins.helpers import MANIFESTS, err, harness, ok


def test_create_read_update_list_search(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("notes", data_dir=tmp_path) as h:
            assert (
                ok(
                    await h.call_tool(
                        "notes_create", {"title": "Shopping", "body": "- milk\n- bread\n", "tags": ["home"]}
                    )
                )
                == "created note 'Shopping'"
            )
            assert "already exists" in err(await h.call_tool("notes_create", {"title": "Shopping", "body": "x"}))
            shown = ok(await h.call_tool("notes_read", {"title": "Shopping"}))
            assert shown.startswith("# Shopping\ntags: home\nupdated: ") and shown.endswith("- milk\n- bread\n")
            ok(await h.call_tool("notes_update", {"title": "Shopping", "append": "- eggs"}))
            assert ok(await h.call_tool("notes_read", {"title": "Shopping"})).endswith("- bread\n- eggs")
            ok(await h.call_tool("notes_update", {"title": "Shopping", "body": "nothing", "tags": ["done"]}))
            updated = ok(await h.call_tool("notes_read", {"title": "Shopping"}))
            assert "\ntags: done\n" in updated and updated.endswith("\n\nnothing")
            missing = err(await h.call_tool("notes_read", {"title": "Shoping"}))
            assert missing.removeprefix("error: ") == "no note titled 'Shoping'; did you mean 'Shopping'?"
            assert "give body" in err(await h.call_tool("notes_update", {"title": "Shopping"}))
            assert "no note titled" in err(await h.call_tool("notes_update", {"title": "Nope", "body": "x"}))
            ok(await h.call_tool("notes_create", {"title": "Ideas", "body": "Use the shopping list app"}))
            listing = ok(await h.call_tool("notes_list", {}))
            assert listing.splitlines()[0].startswith("- Ideas") and "- Shopping  [done]" in listing
            assert ok(await h.call_tool("notes_list", {"tag": "done"})).startswith("- Shopping")
            hits = ok(await h.call_tool("notes_search", {"query": "SHOPPING"}))
            assert hits.splitlines()[0].startswith("- Shopping") and "- Ideas: Use the shopping list app" in hits
            assert (
                ok(await h.call_tool("notes_search", {"query": "shopping app"})) == "- Ideas: Use the shopping list app"
            )

    run(go())
    files = sorted(p.name for p in (tmp_path / "plugins" / "notes" / "notes").iterdir())
    assert files == ["Ideas.md", "Shopping.md"]


def test_chinese_titles_and_bodies(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("notes", data_dir=tmp_path) as h:
            ok(
                await h.call_tool(
                    "notes_create", {"title": "会议记录/三月", "body": "今天讨论了预算和招聘计划。\n下周再议。"}
                )
            )
            ok(await h.call_tool("notes_create", {"title": "会议记录:三月", "body": "另一份：预算已批准"}))
            assert ok(await h.call_tool("notes_read", {"title": "会议记录/三月"})).endswith("下周再议。")
            assert ok(await h.call_tool("notes_read", {"title": "会议记录:三月"})).endswith("预算已批准")
            hits = ok(await h.call_tool("notes_search", {"query": "预算"}))
            assert {line.split(":")[0] for line in hits.splitlines()} == {"- 会议记录/三月", "- 会议记录"}
            assert "招聘计划" in ok(await h.call_tool("notes_search", {"query": "招聘"}))
            assert ok(await h.call_tool("notes_search", {"query": "不存在的词"})).startswith("no notes")

    run(go())
    files = sorted(p.name for p in (tmp_path / "plugins" / "notes" / "notes").iterdir())
    assert files == ["会议记录-三月-2.md", "会议记录-三月.md"], "titles become safe names; a clash gets -2"


def test_unsafe_titles_stay_in_the_folder(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("notes", data_dir=tmp_path) as h:
            for title in ("../../escape", "/etc/passwd", ".hidden", "a" * 300):
                result = await h.call_tool("notes_create", {"title": title, "body": "x"})
                if len(title) > 200:
                    assert "at most 200" in err(result)
                else:
                    ok(result)
                    assert ok(await h.call_tool("notes_read", {"title": title})).endswith("x")

    run(go())
    folder = tmp_path / "plugins" / "notes" / "notes"
    assert sorted(p.name for p in folder.iterdir()) == ["escape.md", "etc-passwd.md", "hidden.md"]
    assert not (tmp_path / "escape.md").exists()


def test_facility_methods(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("notes", data_dir=tmp_path) as h:
            assert await h.call_facility("notes.store", "get", title="x") is None
            put = await h.call_facility("notes.store", "put", title="x", body="早上好", tags=["t"])
            assert put["title"] == "x" and put["body"] == "早上好" and put["tags"] == ["t"]
            again = await h.call_facility("notes.store", "put", title="x", body="晚上好")
            assert again["tags"] == ["t"] and again["created"] == put["created"]
            assert (await h.call_facility("notes.store", "get", title="x"))["body"] == "晚上好"
            assert await h.call_facility("notes.store", "search", query="晚上") == [
                {"title": "x", "snippet": "晚上好", "score": 1}
            ]
            assert [n["title"] for n in await h.call_facility("notes.store", "list")] == ["x"]
            assert ok(await h.call_tool("notes_read", {"title": "x"})).endswith("晚上好")

    run(go())


def test_one_plugin_serves_another(tmp_path: Path) -> None:
    """A real consumer process calls notes.store through the kernel's facility routing (`facility/call`)."""
    loaded = load_manifest(MANIFESTS / "notes.toml")
    notes = PluginSpec(LockedPlugin.model_validate(plugin_entry(loaded.manifest, requires={})), loaded.path.parent)
    memo = PluginSpec(
        LockedPlugin.model_validate(
            {
                "name": "memo",
                "version": "0.1.0",
                "run": {"command": [sys.executable, str(Path(__file__).with_name("consumer_plugin.py"))]},
                "requires": {"notes.store": "notes"},
            }
        )
    )

    async def go() -> None:
        ring = RingWriter(64 * 1024)
        supervisor = Supervisor([notes, memo], tmp_path, kernel_facilities=[], ring=ring)
        supervisor.start()
        try:
            await wait_until_async(  # generous: the machine may be busy with other test runs
                lambda: [(p.name, p.state, p.reason) for p in supervisor.plugins.values()],
                accept=lambda states: all(state is State.READY for _, state, _ in states),
                timeout=30,
                what="notes and memo to be ready",
            )
            assert supervisor.plugins["memo"].state is State.READY, [
                (p.name, p.state, p.reason) for p in supervisor.plugins.values()
            ]
            saved = await supervisor.invoke_tool(
                "memo", "memo_save", {"title": "备忘", "text": "买牛奶"}, call_id="c1", session_id="s"
            )
            assert json.loads(saved.content)["title"] == "备忘"
            found = await supervisor.invoke_tool("memo", "memo_find", {"query": "牛奶"}, call_id="c2", session_id="s")
            assert "买牛奶" in [hit["snippet"] for hit in json.loads(found.content)]
            read = await supervisor.invoke_tool("notes", "notes_read", {"title": "备忘"}, call_id="c3", session_id="s")
            assert read.content.startswith("# 备忘\ntags: memo\n") and read.content.endswith("买牛奶")
        finally:
            await supervisor.shutdown()
            ring.close()

    run(go())
