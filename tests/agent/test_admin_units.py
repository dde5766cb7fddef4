"""The pieces under the administration facilities, without a kernel: the settings rewrite, the merge of a
saved entry with the stored provider, the plugin log tail. tests/e2e/test_admin_e2e.py runs them for real.

Mutation check (done): making `_without_provider_tables` keep the old provider tables turns
`test_rewrite_keeps_other_tables_and_comments` red (two chains in the file fail the parse-back comparison
and the fallback emitter drops the comment).
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import tomli

from hologram.agent.admin_providers import describe, merge_entry
from hologram.kernel.admin_plugins import tail_matching
from hologram.llm import ProviderSettings
from hologram.rpc import RpcError
from hologram.settings import load_settings
from hologram.settings_write import replace_providers
from tests.kit.providers import write_settings

KEY = "sk-unit-0123456789"
SETTINGS = f"""\
# my settings, with my comments
[agent]
max_steps = 9  # why nine: see the wiki

[[providers]]
name = "old"
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
model = "m"
api_key = "{KEY}"

[approvals]
# ask me first
default = "ask"

[approvals.tools.shell_run]
mode = "allow-list"
allow = ["ls", "git status"]

[plugins.web]
pass_env = ["GITHUB_TOKEN"]
"""


def stored(**fields: object) -> ProviderSettings:
    values: dict[str, object] = {"name": "old", "base_url": "http://127.0.0.1:1/v1", "model": "m", **fields}
    return ProviderSettings.model_validate(values)


def test_rewrite_keeps_other_tables_and_comments(tmp_path: Path) -> None:
    path = write_settings(tmp_path / "settings.toml", SETTINGS)
    before = tomli.loads(SETTINGS)
    new = [stored(name="a", model="x"), stored(name="b", api_key=KEY, timeout_s=5)]
    replace_providers(path, new)
    text = path.read_text()
    assert "# why nine: see the wiki" in text and "# ask me first" in text and "# my settings" in text
    after = tomli.loads(text)
    assert {k: v for k, v in after.items() if k != "providers"} == {k: v for k, v in before.items() if k != "providers"}
    assert after["providers"] == [
        {"name": "a", "kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "x"},
        {"name": "b", "kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m", "timeout_s": 5.0,
         "api_key": KEY},
    ]  # fmt: skip
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in load_settings(tmp_path).providers] == ["a", "b"]

    replace_providers(path, [])
    assert "providers" not in tomli.loads(path.read_text())
    assert "# ask me first" in path.read_text()


def test_rewrite_of_a_layout_it_cannot_cut_falls_back_to_a_whole_document(tmp_path: Path) -> None:
    """An inline ``providers = []`` is no ``[[providers]]`` table: the cut leaves it, the check notices."""
    path = write_settings(tmp_path / "settings.toml", "providers = []\n\n[agent]\nmax_steps = 3\n")
    replace_providers(path, [stored()])
    assert tomli.loads(path.read_text())["agent"] == {"max_steps": 3}
    assert [p["name"] for p in tomli.loads(path.read_text())["providers"]] == ["old"]


def test_rewrite_creates_a_missing_file_private(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    replace_providers(path, [stored()])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in load_settings(tmp_path).providers] == ["old"]


def test_merge_keeps_replaces_and_clears_the_key() -> None:
    saved = {"old": stored(api_key=KEY, context_window=9000)}
    page = {**describe(saved["old"]), "model": "m2"}  # what a page sends back: no key, api_key_set
    kept = merge_entry("providers[0]", page, saved)
    assert kept.api_key is not None and kept.api_key.get_secret_value() == KEY and kept.model == "m2"
    assert kept.context_window == 9000
    for blank in (None, "", "  "):  # an empty key field of a form keeps the key too
        again = merge_entry("providers[0]", {**page, "api_key": blank}, saved)
        assert again.api_key is not None and again.api_key.get_secret_value() == KEY
    renamed = merge_entry("providers[0]", {**page, "name": "new"}, saved)
    assert renamed.api_key is None  # a key belongs to its name
    replaced = merge_entry("providers[0]", {**page, "api_key": "sk-other"}, saved)
    assert replaced.api_key is not None and replaced.api_key.get_secret_value() == "sk-other"
    by_env = merge_entry("providers[0]", {**page, "api_key_env": "MY_KEY"}, saved)
    assert by_env.api_key is None and by_env.api_key_env == "MY_KEY"
    cleared = merge_entry("providers[0]", {**page, "clear_api_key": True}, saved)
    assert cleared.api_key is None and cleared.api_key_env is None


@pytest.mark.parametrize(
    ("entry", "where"),
    [
        ({"name": "x", "base_url": "ftp://h", "model": "m"}, "providers[2].base_url: "),
        ({"name": "x", "base_url": "http://h", "model": "m", "kind": "openai", "thinking": True}, "providers[2].thinking: "),
        ({"name": "x", "base_url": "http://h", "model": "m", "api_key": KEY, "api_key_env": "E"}, "providers[2].api_key: "),
        ({"name": "x", "base_url": "http://h"}, "providers[2].model: "),
        ({"name": "x", "base_url": "http://h", "model": "m", "timeout_s": -1}, "providers[2].timeout_s: "),
        ("not an object", "providers[2]: "),
    ],
)  # fmt: skip
def test_merge_errors_name_the_field_never_the_value(entry: object, where: str) -> None:
    with pytest.raises(RpcError) as caught:
        merge_entry("providers[2]", entry, {})
    assert caught.value.code == -32602 and str(caught.value.message).startswith(where), caught.value.message
    assert KEY not in str(caught.value.message) and "ftp://h" not in str(caught.value.message)


def test_log_tail_reads_matching_lines_from_the_end(tmp_path: Path) -> None:
    log = tmp_path / "hologram.log"
    lines = []
    for i in range(20_000):  # several chunks, lines of both plugins interleaved
        lines.append(f"t INFO hologram.plugin.a: [a] line {i}")
        lines.append(f"t INFO hologram.plugin.ab: [ab] other {i}")
    lines.append("t INFO hologram.supervisor: [a] facility a.x ready")
    log.write_text("\n".join(lines) + "\n")
    markers = (" hologram.plugin.a: ", " hologram.supervisor: [a] ")
    tail = tail_matching(log, markers, 3)
    assert tail == ["t INFO hologram.plugin.a: [a] line 19998", "t INFO hologram.plugin.a: [a] line 19999",
                    "t INFO hologram.supervisor: [a] facility a.x ready"]  # fmt: skip
    assert len(tail_matching(log, markers, 5000)) == 5000
    assert tail_matching(log, (" hologram.plugin.zz: ",), 10) == []
