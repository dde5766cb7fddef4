"""The pieces under the administration facilities, without a kernel: the settings rewrite, the merge of a
saved entry with the stored provider, the plugin log tail. tests/e2e/test_admin_e2e.py runs them for real.

The settings rewrite (`hologram.config.settings_write`, tomlkit) is held to exact texts: what the user wrote
outside the providers, byte for byte, and every result parsed back by tomli equal to what was meant.
Mutation checks (done) are named in each test's docstring.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import tomli

from hologram.agent.admin_providers import describe, merge_entry
from hologram.base.errors import HologramError
from hologram.config.settings import load_settings
from hologram.config.settings_write import replace_providers
from hologram.kernel.admin_plugins import tail_matching
from hologram.llm import ProviderSettings
from hologram.rpc import RpcError
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


LAID_OUT = """\
# my settings, with my comments
[agent]
max_steps = 9  # why nine: see the wiki

# the one I pay for
[[providers]]
name = "old"  # since 2024
kind = "openai"
base_url = "http://127.0.0.1:1/v1"
model = "m"  # the model I like
# a comment at the end of old's table

# the fallback
[[providers]]
name = "spare"
kind = "openai"
base_url = "http://127.0.0.1:2/v1"
model = "s"

# approvals, written above them
[approvals]
default = "ask"
# the end of the file
"""


def meant(text: str, providers: Sequence[Mapping[str, object]]) -> dict[str, object]:
    others = {k: v for k, v in tomli.loads(text).items() if k != "providers"}
    return {**others, "providers": providers} if providers else others


OLD: dict[str, object] = {"name": "old", "kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"}
NEW: dict[str, object] = {"name": "new", "kind": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "n"}


def test_rewrite_keeps_comments_above_between_inside_and_after_the_tables(tmp_path: Path) -> None:
    """A kept provider keeps its comments and place; a dropped one goes with the comment above it; a new one
    is appended; the comment above `[approvals]` stays above it. Mutation checks (done): building every table
    anew instead of `_fill`ing the old one loses "# since 2024" (red); dropping what stood above the next
    table (`end_blank + end_above` → `[]`) loses "# approvals, written above them" (red)."""
    path = write_settings(tmp_path / "settings.toml", LAID_OUT)
    replace_providers(path, [stored(), stored(name="new", model="n")])
    text = path.read_text()
    assert text == (
        LAID_OUT.split("# the fallback")[0].rstrip("\n").rsplit("\n", 1)[0]
        + "\n# a comment at the end of old's table\n\n"
        + '[[providers]]\nname = "new"\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "n"\n\n'
        + '# approvals, written above them\n[approvals]\ndefault = "ask"\n# the end of the file\n'
    ), text
    assert tomli.loads(text) == meant(LAID_OUT, [OLD, NEW])


def test_rewrite_moves_each_kept_provider_with_the_comment_above_it(tmp_path: Path) -> None:
    """Reordered: "# the fallback" goes with spare to the top, "# the one I pay for" with old to the end.
    Mutation check (done): giving each slot the comment that stood above the same position
    (`above[olds[slot]]` instead of `above[names[slot]]`) leaves them in place (red)."""
    path = write_settings(tmp_path / "settings.toml", LAID_OUT)
    spare = stored(name="spare", base_url="http://127.0.0.1:2/v1", model="s")
    replace_providers(path, [spare, stored(name="new", model="n"), stored()])
    text = path.read_text()
    head, _, rest = LAID_OUT.partition("# the one I pay for\n")
    old_table, _, spare_table = rest.partition("\n# the fallback\n")
    spare_table, _, after = spare_table.partition("\n# approvals")
    new_table = '[[providers]]\nname = "new"\nkind = "openai"\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "n"\n'
    expected = head + "# the fallback\n" + spare_table + "\n" + new_table + "\n# the one I pay for\n" + old_table
    assert text == expected + "\n# approvals" + after, text
    assert tomli.loads(text) == meant(
        LAID_OUT, [{"name": "spare", "kind": "openai", "base_url": "http://127.0.0.1:2/v1", "model": "s"}, NEW, OLD]
    )


def test_rewrite_of_a_changed_provider_keeps_the_comments_of_its_unchanged_keys(tmp_path: Path) -> None:
    """Unchanged keys keep their line's comment and their quoting. Mutation check (done): `_fill` building
    a new table (not editing the old) writes `base_url` with double quotes, without "# mine" (red)."""
    original = LAID_OUT.replace('base_url = "http://127.0.0.1:1/v1"', "base_url = 'http://127.0.0.1:1/v1'  # mine")
    path = write_settings(tmp_path / "settings.toml", original)
    replace_providers(path, [stored(model="m2", timeout_s=5)])
    text = path.read_text()
    assert "base_url = 'http://127.0.0.1:1/v1'  # mine\n" in text
    assert 'name = "old"  # since 2024\n' in text and "# the one I pay for\n[[providers]]" in text
    assert "spare" not in text and "# approvals, written above them\n[approvals]" in text
    assert tomli.loads(text) == meant(original, [{**OLD, "model": "m2", "timeout_s": 5.0}])


def test_rewrite_to_no_provider_keeps_the_comment_above_the_next_table(tmp_path: Path) -> None:
    path = write_settings(tmp_path / "settings.toml", LAID_OUT)
    replace_providers(path, [])
    text = path.read_text()
    assert text == (
        "# my settings, with my comments\n[agent]\nmax_steps = 9  # why nine: see the wiki\n\n"
        '# approvals, written above them\n[approvals]\ndefault = "ask"\n# the end of the file\n'
    ), text
    assert tomli.loads(text) == meant(LAID_OUT, [])


def test_rewrite_of_an_inline_providers_array_appends_tables_and_keeps_the_rest(tmp_path: Path) -> None:
    """An inline ``providers = [...]`` is no ``[[providers]]`` table: it is removed, the tables appended.
    Mutation check (done): `_appended` not removing the inline array makes both edits fail the parse-back
    (a key defined twice), and the whole-document fallback drops "# agent, mine" (red)."""
    original = 'title = "x"\nproviders = [{ name = "x", base_url = "http://h", model = "m" }]\n\n# agent, mine\n[agent]\nmax_steps = 3\n'
    path = write_settings(tmp_path / "settings.toml", original)
    replace_providers(path, [stored()])
    text = path.read_text()
    assert text.startswith('title = "x"\n\n# agent, mine\n[agent]\nmax_steps = 3\n\n[[providers]]\n'), text
    assert tomli.loads(text) == meant(original, [OLD])


def test_rewrite_of_a_crlf_file_with_chinese_comments_keeps_both(tmp_path: Path) -> None:
    """Mutation check (done): without `_same_line_endings` the new table's lines end in LF alone (red)."""
    original = (
        "# 我的设置：密钥在这里，请勿分享\r\n[agent]\r\nmax_steps = 9  # 九步就够了\r\n\r\n[[providers]]\r\n"
        'name = "old"  # 旧的\r\nbase_url = "http://127.0.0.1:1/v1"\r\nmodel = "m"\r\n\r\n'
        '# 审批：先问我\r\n[approvals]\r\ndefault = "ask"\r\n'
    )
    path = tmp_path / "settings.toml"
    path.write_bytes(original.encode("utf-8"))
    replace_providers(path, [stored(), stored(name="new", model="n")])
    data = path.read_bytes()
    text = data.decode("utf-8")
    assert data.count(b"\n") == data.count(b"\r\n") > 0, text
    for comment in ("# 我的设置：密钥在这里，请勿分享", "# 九步就够了", "# 旧的", "# 审批：先问我\r\n[approvals]"):
        assert comment in text
    assert tomli.loads(text) == meant(original, [OLD, NEW])


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    """A directory where the temporary file goes makes the write fail before anything is written.
    Mutation check (done): writing `path` directly (no temporary file) leaves it half-written/changed (red)."""
    path = write_settings(tmp_path / "settings.toml", LAID_OUT)
    (tmp_path / f".settings.toml.{os.getpid()}.tmp").mkdir()
    with pytest.raises(IsADirectoryError):
        replace_providers(path, [stored(name="new", model="n")])
    assert path.read_text() == LAID_OUT


def test_a_file_that_is_not_toml_is_an_error_naming_the_file_never_the_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_settings(tmp_path / "settings.toml", f'[[providers]]\nname = "x"\napi_key = "{KEY}\n')
    with pytest.raises(HologramError) as raised:
        replace_providers(path, [stored()])
    message = str(raised.value)
    assert str(path) in message and "not valid TOML" in message and KEY not in message, message
    assert KEY not in caplog.text and KEY in path.read_text()


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
