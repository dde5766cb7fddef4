"""The Plugins tab adds and removes plugins (issue 36 item 4, the page's part), in a real headless Chromium
against a real `hologram up --port 0` with the strict mock as its provider. The kernel runs from a throwaway
venv (tests/kit/venv.py) on a lock of the built-ins and the installed distributions, as
tests/e2e/test_plugin_add_e2e.py's does, so what the page adds — plugin projects made in a temp dir
(tests/kit/plugin_project.py), installed editable by the kernel's real pip, offline — lands there. The tests
run in file order as one person's visit: the table, an add, the layout with a preview open, the remove,
refused adds, a plugin installed but not locked, one that cannot start.

Proven through the page (its DOM, clicks and typing), and checked against the kernel (the lock's bytes, each
plugin's pid and restarts over the control socket, `pip list` of the venv):
- the table is `hologram plugin list`: every plugin with installed / locked / state and pid, how it was added;
- an add shows the preview — what the manifest provides, requires and may do (the tool needing approval, the
  kernel facility it asks for), which plugin starts, the lock's diff — and changes nothing until the confirm
  button; then the plugin is seen starting (its start waits for a gate file), then ready with its pid, and
  every other plugin kept its pid and restarts;
- a remove asks the same way, then the plugin is gone: lock, pids and `pip list` exactly as before the add;
- a plugin requiring a facility nobody provides is refused with the resolver's error shown, and nothing
  changed — the kernel's state and the table; a package pip cannot install, with pip's error;
- a plugin added but unable to start shows failed with its error, in the outcome and its row;
- at 360, 768 and 1280 px, in English and 中文, with a preview open and an added plugin in the table, the
  page does not scroll sideways; in 中文 no English string of the page is left on the tab, and the preview's
  lines are the page's own Chinese.

Screenshots: build/screenshots/plugins-*.png.

Mutation checks (done, the static file copied aside and back, each turned the named test red):
plugin-change.js calling confirm as soon as the preview is drawn (not waiting for the button) —
test_adding_from_a_path_previews_then_confirms (a second call in flight under the preview); its `summary`
leaving out the tools that need approval — the same test; plugins.js taking its rows from `/api/plugins` alone
(no inventory) — test_the_table_shows_installed_locked_and_running (installed and locked "–") and
test_an_installed_plugin_not_in_the_lock_says_so; `mayItem` showing the kernel's English sentence instead of the
page's string — test_the_tab_fits_narrow_screens_in_both_languages at every width (English left in 中文);
app.css without the Plugins table's wrapping rules — the same test at 768 px (973 px wide in 753), and
without the diff's own scrolling — at 360 px (686 px in 345). The routes' mutations are in
tests/httpapi/test_up_and_admin.py.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.kit.plugin_project import SDK_PLUGIN, plugin_project, tool_toml
from tests.kit.providers import provider_toml, write_settings
from tests.kit.venv import make_wheel, offline_env, pip_install, throwaway_venv
from tests.kit.wait import wait_until

from .browser import Page, WebKernel, chinese_left, english_left, page_at, require_browser

pytestmark = pytest.mark.slow

PIP_S = 180  # a failure bound for a call that runs pip on the kernel's side (an editable install, offline)
# what the Plugins tab shows that is not its own wording: names, versions, sources, directories, facility and
# tool names, the lock's diff, the kernel's warnings and refusals, logs
DATA = (
    ".lang, #plugins-body .name, #plugins-body .waiting, #plugin-log, "
    "#plugin-summaries h3, #plugin-summaries .source, #plugin-summaries .provides, #plugin-summaries .requires, "
    "#plugin-summaries .tools, #plugin-summaries dd.approval, #plugin-diff, #plugin-warnings, #plugin-error, "
    "#plugin-status .warning, #plugin-add-target"
)


class Kernel(WebKernel):
    def __init__(self, root: Path, python: Path) -> None:
        super().__init__(root / "kernel", python)
        self.python = python
        self.projects = root / "projects"
        self.link = ""

    def status(self) -> dict[str, dict[str, Any]]:
        return {p["name"]: p for p in call(self.data, "status", timeout=10)["plugins"]}

    def running(self) -> dict[str, tuple[int, int]]:
        """Each plugin's (pid, restarts): what an add or remove must leave as it was for the others."""
        return {n: (p["pid"], p["restarts"]) for n, p in self.status().items()}

    def pip_list(self) -> list[dict[str, str]]:
        out = subprocess.run(
            [str(self.python), "-m", "pip", "list", "--format=json"],
            capture_output=True, text=True, check=True, env=offline_env(),
        ).stdout  # fmt: skip
        listed: list[dict[str, str]] = json.loads(out)
        return listed

    def snapshot(self) -> tuple[bytes, dict[str, tuple[int, int]], list[dict[str, str]]]:
        return self.lock.read_bytes(), self.running(), self.pip_list()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[Kernel]:
    require_browser()
    root = tmp_path_factory.mktemp("webplugins")
    k = Kernel(root, throwaway_venv(root / "venv"))
    write_settings(k.data / "settings.toml", provider_toml(mock, "mock"))
    try:
        k.link = k.start()
        wait_until(lambda: k.status(), accept=lambda s: all(p["state"] == "ready" or p["on_demand"] for p in s.values()),
                   timeout=120, what="every plugin ready", interval=0.1)  # fmt: skip
        # notes is `[start] lazy`, and acme requires its notes.store: started now, so that adding and removing
        # acme leaves every pid as it was (a lazy provider woken by an add: tests/launcher/test_lazy_start.py)
        call(k.data, "plugin/start", {"name": "notes"}, timeout=30)
        wait_until(lambda: k.status()["notes"], accept=lambda p: p["state"] == "ready", timeout=60, what="notes ready")
        yield k
    finally:
        k.stop()


@pytest.fixture(scope="module")
def before(kernel: Kernel) -> tuple[bytes, dict[str, tuple[int, int]], list[dict[str, str]]]:
    """The lock, the pids and `pip list` before the page added anything: what the remove must give back."""
    return kernel.snapshot()


@pytest.fixture(scope="module")
def page(kernel: Kernel) -> Iterator[Page]:
    with page_at(kernel.link) as p:
        p.visible("#view-chat")
        p.click("#tab-plugins")
        yield p


def rows(page: Page) -> dict[str, dict[str, str]]:
    """The table as shown: each row's cells by their class."""
    found: dict[str, dict[str, str]] = page.js("""
        const out = {};
        for (const tr of document.querySelectorAll('#plugins-body tr[data-plugin]')) {
          const cell = (css) => { const e = tr.querySelector(css); return e ? e.textContent.trim() : null; };
          out[tr.dataset.plugin] = { state: cell('.state'), pid: cell('.pid'), installed: cell('.installed'),
            locked: cell('.locked'), added: cell('.added .kind'), target: cell('.added .target'),
            remove: tr.querySelector('button.remove') ? 'yes' : 'no', restart: tr.querySelector('button.restart') ? 'yes' : 'no' };
        }
        return out;""")
    return found


def fresh_rows(page: Page) -> dict[str, dict[str, str]]:
    """The table redrawn from the kernel now (Refresh, and wait for the new rows), as shown."""
    page.js(
        "for (const tr of document.querySelectorAll('#plugins-body tr')) tr.dataset.old = '1';"
        "document.getElementById('plugins-refresh').click();"
    )  # wherever the view is scrolled to
    page.wait(
        lambda: page.finds("#plugins-body tr") and not page.finds("#plugins-body tr[data-old]"), "the table redrawn"
    )
    return rows(page)


def texts(page: Page, css: str) -> list[str]:
    return [str(e.text) for e in page.finds(css)]


def preview_add(page: Page, target: Path | str) -> None:
    page.type("#plugin-add-target", str(target))
    page.click("#plugin-add")


def test_the_table_shows_installed_locked_and_running(page: Page, kernel: Kernel) -> None:
    status = kernel.status()
    shown = page.wait(lambda: (r := rows(page)) and set(status) <= set(r) and r, "a row for every running plugin")
    for name, plugin in status.items():
        row = shown[name]
        # a `[start] lazy` built-in not called yet has no process and says it starts on demand (docs/manifest.md)
        state, pid = (
            ("on demand (starts at its first call)", "–") if plugin["on_demand"] else ("ready", str(plugin["pid"]))
        )
        assert (row["installed"], row["locked"], row["state"]) == ("yes", "yes", state), (name, row)
        assert row["pid"] == pid and row["added"] is None and row["restart"] == "yes", (name, row)
    assert "http" in shown and "notes" in shown


def test_adding_from_a_path_previews_then_confirms(
    page: Page, kernel: Kernel, before: tuple[bytes, dict[str, tuple[int, int]], list[dict[str, str]]]
) -> None:
    gate = kernel.projects / "acme-may-start"
    acme = plugin_project(kernel.projects, "acme", ["notes.store", "kernel.sessions"], approval=True, gate=gate,
                          start={"timeout_s": 120})  # fmt: skip
    preview_add(page, acme)
    page.visible("#plugin-change", timeout=PIP_S)

    assert page.text("#plugin-change-title") == "Add acme?"
    summary = "#plugin-summaries section[data-plugin=acme]"
    assert page.text(f"{summary} h3") == "acme 0.1.0 — a test plugin"
    assert page.text(f"{summary} .source") == "entry-point:acme-plugin"
    assert page.text(f"{summary} .runs") == "its own process: python -m acme"
    assert page.text(f"{summary} .provides") == "acme.svc"
    assert page.text(f"{summary} .requires") == "notes.store, kernel.sessions"
    assert page.text(f"{summary} .tools") == "acme_ping"
    assert page.text(f"{summary} dd.approval") == "acme_ping"  # the tool that needs approval, set apart
    assert texts(page, f"{summary} ul.may li") == [
        "read and write your files and reach the network (a plugin process has your user's rights)",
        "call tools that need your approval each time: acme_ping",
        "list and read your conversations (kernel.sessions)",
    ]
    assert page.text("#plugin-changes .starts") == "Starts in the running kernel: acme"
    diff = page.text("#plugin-diff")
    assert '+name = "acme"' in diff and '+"notes.store" = "notes"' in diff
    assert page.find("#plugin-confirm").text == "Add acme"
    page.shot_full("plugins-add-preview")
    # the preview changed nothing: pip's install to read the manifest was undone, no plugin started; and the
    # page waits for the button: no second call in flight (it would say "Adding…" and hold the button)
    assert page.find("#plugin-confirm").is_enabled() and not page.find("#plugin-status").is_displayed()
    assert kernel.snapshot() == before
    assert "acme" not in fresh_rows(page)

    page.click("#plugin-confirm")
    page.wait(lambda: rows(page).get("acme", {}).get("state") == "starting", "acme shown starting", PIP_S)
    assert page.text("#plugin-status").startswith("Adding acme")
    assert page.find("#plugin-add").get_attribute("disabled") is not None, "no second change meanwhile"
    page.shot_full("plugins-add-starting")
    gate.touch()
    status = page.wait(lambda: page.text("#plugin-status .ok"), "the outcome of the add", PIP_S)
    pid = kernel.status()["acme"]["pid"]
    assert status == f"acme: ready (pid {pid})"
    page.wait(lambda: rows(page)["acme"]["state"] == "ready", "acme ready in the table")
    row = rows(page)["acme"]
    assert (row["installed"], row["locked"], row["pid"]) == ("yes", "yes", str(pid))
    assert (row["added"], row["target"], row["remove"]) == ("added, editable", str(acme), "yes")
    assert kernel.running() == {**before[1], "acme": (pid, 0)}, "the other plugins kept their pids and restarts"
    assert 'name = "acme"' in kernel.lock.read_text()
    assert any(p["name"] == "acme-plugin" for p in kernel.pip_list())
    assert page.find("#plugin-change").is_displayed() is False
    page.shot_full("plugins-added")


@pytest.mark.parametrize("width", [360, 768, 1280])
def test_the_tab_fits_narrow_screens_in_both_languages(page: Page, kernel: Kernel, width: int) -> None:
    """With acme in the table (its long directory) and a preview open (the diff's long lines), in English and
    中文: the document is no wider than the viewport; in 中文 nothing of the page's English is left on the tab
    and the preview's lines are Chinese; back in English, nothing Chinese."""
    if not page.find("#plugin-change").is_displayed():
        zeta = plugin_project(kernel.projects, "zeta", ["kernel.turns"], approval=True)
        preview_add(page, zeta)
        page.visible("#plugin-change", timeout=PIP_S)
    page.viewport(width, 900)
    try:
        for lang in ("en", "zh"):
            page.click(f"#lang-{lang}")
            tab = "Plugins" if lang == "en" else "插件"
            page.wait(lambda: page.text("#tab-plugins") == tab, f"the page in {lang}")  # noqa: B023 (waited for here)
            wide = page.js("return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert wide[0] <= wide[1], f"plugins at {width} px ({lang}): {wide[0]} px wide in a {wide[1]} px page"
            page.shot_full(f"plugins-{width}-{lang}")
            if lang == "zh":
                assert english_left(page, DATA) == []
                assert page.text("#plugin-change-title") == "添加 zeta？"
                assert texts(page, "#plugin-summaries ul.may li") == [
                    "读写你的文件并访问网络（插件进程拥有你这个用户的权限）",
                    "调用每次都需要你批准的工具：zeta_ping",
                    "以你的名义让模型开始新的一轮对话（kernel.turns）",
                ]
                assert rows(page)["acme"]["added"] == "已添加，可编辑安装"
            else:
                assert chinese_left(page, DATA) == []
    finally:
        page.click("#lang-en")
        page.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    if width == 1280:
        page.click("#plugin-cancel")
        page.wait(lambda: not page.find("#plugin-change").is_displayed(), "the preview closed")


def test_removing_asks_then_stops_it_and_gives_back_what_was_there(
    page: Page, kernel: Kernel, before: tuple[bytes, dict[str, tuple[int, int]], list[dict[str, str]]]
) -> None:
    pid = kernel.status()["acme"]["pid"]
    page.click("#plugins-body tr[data-plugin=acme] button.remove")
    page.visible("#plugin-change", timeout=PIP_S)
    assert page.text("#plugin-change-title") == "Remove acme?"
    assert page.text("#plugin-changes .stops") == "Stops: acme"
    assert '-name = "acme"' in page.text("#plugin-diff") and not page.finds("#plugin-summaries section")
    assert page.find("#plugin-confirm").text == "Remove acme"
    page.shot_full("plugins-remove-preview")
    assert kernel.status()["acme"]["pid"] == pid, "asking changed nothing"

    page.click("#plugin-confirm")
    assert page.wait(lambda: page.text("#plugin-status .ok"), "the outcome of the remove", PIP_S) == "Removed acme."
    page.wait(lambda: "acme" not in rows(page), "acme gone from the table")
    assert kernel.snapshot() == before, "the lock byte for byte, every pid and restart, pip list: as before the add"
    wait_until(lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2],
               timeout=30, what="acme's process to end")  # fmt: skip
    page.shot_full("plugins-removed")


def test_a_plugin_requiring_a_missing_facility_is_refused_and_nothing_changes(
    page: Page, kernel: Kernel, before: tuple[bytes, dict[str, tuple[int, int]], list[dict[str, str]]]
) -> None:
    bad = plugin_project(kernel.projects, "bad", ["missing.facility"])
    table = fresh_rows(page)
    preview_add(page, bad)
    error = page.wait(lambda: page.text("#plugin-error"), "the refusal shown", PIP_S)

    # the resolver's own error, as `hologram plugin add` prints it, under the page's own words
    assert f"{bad}/bad/plugin.toml: error: facility 'missing.facility' is required by bad" in error
    assert "nothing changed" in error and "pip uninstalled bad-plugin again" in error, "pip did install it"
    assert page.text("#plugin-status .fail") == f"{bad} was not added:"
    assert not page.find("#plugin-change").is_displayed(), "no preview, no confirm button"
    page.shot_full("plugins-refused")
    assert kernel.snapshot() == before
    assert fresh_rows(page) == table


def test_an_installed_plugin_not_in_the_lock_says_so(page: Page, kernel: Kernel, tmp_path: Path) -> None:
    """The inventory's part of the table: a distribution installed behind the kernel's back is found (its
    manifest is there) but not locked, and the row says what starts it."""
    files = {
        "__init__.py": SDK_PLUGIN.format(name="stray", tool="stray_ping"),
        "plugin.toml": '[plugin]\nname = "stray"\nversion = "0.2.0"\nrun = { module = "strayplug" }\n\n'
        + tool_toml("stray_ping"),
    }
    wheel = make_wheel(tmp_path, "stray-plugin", "strayplug", files, "[hologram.plugins]\nstray = strayplug\n")
    pip_install(kernel.python, str(wheel))
    try:
        row = page.wait(lambda: fresh_rows(page).get("stray"), "the stray plugin's row")
        assert (row["installed"], row["locked"], row["pid"]) == ("yes", "no", "–")
        assert row["state"] == "not in the lock: `hologram build` adds it"
        assert (row["restart"], row["remove"]) == ("no", "no"), "nothing to restart, and `add` did not bring it"
    finally:
        subprocess.run([str(kernel.python), "-m", "pip", "uninstall", "-y", "stray-plugin"],
                       capture_output=True, check=True, env=offline_env())  # fmt: skip


def test_a_package_pip_cannot_install_is_refused_with_pips_error(
    page: Page, kernel: Kernel, before: tuple[bytes, dict[str, tuple[int, int]], list[dict[str, str]]]
) -> None:
    preview_add(page, "nosuch-hologram-plugin==1.0")  # a package name: pip, offline here, finds no such thing
    error = page.wait(lambda: page.text("#plugin-error"), "pip's refusal shown", PIP_S)
    assert "installing nosuch-hologram-plugin==1.0 failed (pip exited 1)" in error, error
    assert "No matching distribution found for nosuch-hologram-plugin==1.0" in error, "pip's own words"
    assert page.text("#plugin-status .fail") == "nosuch-hologram-plugin==1.0 was not added:"
    assert kernel.snapshot() == before


def test_a_plugin_that_cannot_start_shows_failed_with_its_error(
    page: Page, kernel: Kernel, before: tuple[bytes, dict[str, tuple[int, int]], list[dict[str, str]]]
) -> None:
    """Added (the lock has it), but its process dies at start: the outcome and its row say failed, and why."""
    broken = plugin_project(kernel.projects, "broken", [], start={"restart": "never", "timeout_s": 60})
    (broken / "broken" / "__main__.py").unlink()  # `python -m broken` cannot run
    preview_add(page, broken)
    page.visible("#plugin-change", timeout=PIP_S)
    page.click("#plugin-confirm")
    outcome = page.wait(lambda: page.text("#plugin-status .fail"), "the outcome of the add", PIP_S)
    assert outcome.startswith("broken: failed — start failed: exited with code 1"), outcome
    page.wait(lambda: rows(page).get("broken", {}).get("state") == "failed", "broken failed in the table")
    assert "start failed" in page.text("#plugins-body tr[data-plugin=broken] .name")  # its last error, in the row
    page.shot_full("plugins-failed")
    page.click("#plugins-body tr[data-plugin=broken] button.remove")
    page.visible("#plugin-change", timeout=PIP_S)
    page.click("#plugin-confirm")
    assert page.wait(lambda: page.text("#plugin-status .ok"), "the outcome of the remove", PIP_S) == "Removed broken."
    assert kernel.snapshot() == before
