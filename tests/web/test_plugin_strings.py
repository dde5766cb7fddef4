"""The page words what a plugin may do itself (i18n.js, so it can say it in Chinese) from the kernel's data
(`Ask`: kind, names, facility); these tests hold its English to the kernel's sentences — the ones
`hologram plugin add` prints — so the page and the terminal never say different things, and hold every kind
and kernel grant the kernel can send to a string in both languages. No browser: i18n.js is read as text.

Mutation checks (done): a word changed in one of summary.py's sentences turns
test_the_pages_english_is_the_kernels_sentence red; a kernel grant added to KERNEL_GRANTS without strings
turns test_every_kind_and_grant_has_both_languages red.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hologram.install.summary import KERNEL_GRANTS, Summary, summarise
from hologram.manifest import load_manifest
from tests.kit.manifests import write_manifest

STATIC = Path(__file__).resolve().parents[2] / "plugins" / "hologram_plugins" / "http" / "static"
ENTRY = re.compile(r'^\s*"([^"]+)":\s*("(?:[^"\\]|\\.)*"),?\s*$')


def tables() -> dict[str, dict[str, str]]:
    """i18n.js's STRINGS: {"en": {key: text}, "zh-CN": {...}}, read line by line."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in (STATIC / "i18n.js").read_text(encoding="utf-8").splitlines():
        if line.strip() in ("en: {", '"zh-CN": {'):
            current = out.setdefault("en" if line.strip() == "en: {" else "zh-CN", {})
        elif line.strip() in ("},", "};"):
            current = None
        elif current is not None and (m := ENTRY.match(line)):
            current[m.group(1)] = json.loads(m.group(2))
    return out


def fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def worded(table: dict[str, str], ask: dict[str, Any]) -> str:
    """An ask as plugin-change.js's `mayItem` words it."""
    if ask["kind"] == "grant":
        grant = table["plugins.grant." + ask["facility"]]
        return fill(table["plugins.may.grant"], {"grant": grant, "facility": ask["facility"]})
    return fill(table["plugins.may." + ask["kind"]], {"names": ", ".join(ask["names"])})


def summaries(tmp_path: Path) -> list[Summary]:
    """Two plugins that between them ask for everything: a process one (every kernel grant, an approval
    tool, environment variables, stage hooks) and an in-process one."""
    extra = (
        "[stages]\non_input = { order = 10 }\nbefore_output = { order = 50 }\n\n"
        '[[tools]]\nname = "zap"\ndescription = "d"\nneeds_approval = true\n\n'
        '[[tools]]\nname = "look"\ndescription = "d"\n'
    )
    run = {"module": "everything", "env": {"B_TOKEN": "x", "A_URL": "y"}}
    every = write_manifest(tmp_path, "everything", run=run, requires=sorted(KERNEL_GRANTS), extra=extra)
    inside = write_manifest(tmp_path, "inside", run={"inproc": "inside_mod"})
    return [summarise(load_manifest(p, source="path")) for p in (every, inside)]


def test_the_pages_english_is_the_kernels_sentence(tmp_path: Path) -> None:
    en = tables()["en"]
    kinds = set()
    for summary in summaries(tmp_path):
        data = summary.to_json()
        assert (
            [a["text"] for a in data["may"]]
            == data["asks"]
            == [line.removeprefix("  may       ") for line in summary.lines() if line.startswith("  may")]
        )
        for ask in data["may"]:
            kinds.add(ask["kind"])
            assert worded(en, ask) == ask["text"], ask
        runs = en["plugins.runs.inproc" if data["inproc"] else "plugins.runs.process"]
        assert fill(runs, {"command": data["command"]}) == data["runs"]
    assert kinds == {"process", "inproc", "approval", "grant", "env", "stages"}, "every kind was worded"


def test_every_kind_and_grant_has_both_languages() -> None:
    strings = tables()
    page_kinds = re.search(r"const KINDS = \[([^\]]*)\]", (STATIC / "plugin-change.js").read_text())
    assert page_kinds is not None
    kinds = json.loads("[" + page_kinds.group(1) + "]")
    assert sorted(kinds) == sorted(["process", "inproc", "approval", "grant", "env", "stages"])
    keys = [f"plugins.may.{k}" for k in kinds] + [f"plugins.grant.{f}" for f in KERNEL_GRANTS]
    keys += ["plugins.runs.process", "plugins.runs.inproc"]
    for lang in ("en", "zh-CN"):
        missing = [k for k in keys if not strings[lang].get(k)]
        assert missing == [], (lang, missing)
    assert set(strings["en"]) == set(strings["zh-CN"]), "each string in both languages"
