"""skills as a real subprocess: SKILL.md folders in <data>/skills and in plugin packages, listed in the system
prompt by the pre_action stage (bounded), read with skill_read; a broken one is one line naming file and field.

Mutation checks (done): the listing without its cap (every skill described) turns
test_many_skills_are_listed_within_the_cap red; skill_read resolving a file without the containment check turns
test_skill_read_loads_instructions_and_files_beside_them red; scan() stopping at the first broken SKILL.md
(raising instead of recording) turns test_a_broken_skill_is_one_line_and_the_others_are_listed red."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.kit.loop import run
from tests.plugins.helpers import err, harness, ok


def write_skill(
    root: Path, name: str, description: str, body: str = "Do the thing.", files: dict[str, str] | None = None
) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    for relative, text in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def pre_action(system: str = "You are Hologram.") -> dict[str, Any]:
    return {"stage": "pre_action", "session_id": "s1", "turn_id": "t1", "step": 0, "input": "hi", "system": system}


async def system_prompt(h: Any, system: str = "You are Hologram.") -> str:
    answer = await h.call_stage("pre_action", pre_action(system))
    return str((answer or {}).get("system", system))


def test_skills_are_listed_in_the_system_prompt(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "pdf-forms", "Fill in PDF forms. Use when the user sends a PDF form to complete.")
    write_skill(skills, "release-notes", "写发布说明：从 git log 整理变更。Use for release notes.")

    async def go() -> None:
        async with harness("skills", data_dir=tmp_path) as h:
            prompt = await system_prompt(h)
            assert prompt.startswith("You are Hologram.\n\nSkills (instructions for particular tasks)")
            assert "- pdf-forms: Fill in PDF forms. Use when the user sends a PDF form to complete." in prompt
            assert "- release-notes: 写发布说明：从 git log 整理变更。Use for release notes." in prompt
            # a skill added while the plugin runs is listed on the next turn; one removed is gone
            write_skill(skills, "tax-return", "Prepare a tax return checklist.")
            (skills / "pdf-forms" / "SKILL.md").unlink()
            prompt = await system_prompt(h)
            assert "- tax-return: Prepare a tax return checklist." in prompt and "pdf-forms" not in prompt

    run(go())


def test_no_skills_leave_the_system_prompt_alone(tmp_path: Path) -> None:
    async def go() -> None:
        async with harness("skills", data_dir=tmp_path) as h:
            assert await h.call_stage("pre_action", pre_action()) in (None, {})
            assert ok(await h.call_tool("skill_read", {})) == "0 skill(s)"

    run(go())


def test_skill_read_loads_instructions_and_files_beside_them(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (tmp_path / "secret.txt").write_text("not for the model")
    folder = write_skill(
        skills,
        "csv-report",
        "Turn a CSV into a report.",
        body="# CSV report\n\n1. Read the CSV.\n2. Run scripts/summary.py on it.",
        files={"reference.md": "Columns: date, amount.", "scripts/summary.py": "print('summary')\n"},
    )
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)

    async def go() -> None:
        async with harness("skills", data_dir=tmp_path) as h:
            text = ok(await h.call_tool("skill_read", {"name": "csv-report"}))
            assert text.startswith(f"Skill csv-report — its folder is {folder.resolve()}")
            assert "logo.png, reference.md, scripts/summary.py" in text
            assert text.endswith("# CSV report\n\n1. Read the CSV.\n2. Run scripts/summary.py on it.")
            assert "name: csv-report" not in text  # the front matter is the listing's, not the instructions'
            assert ok(await h.call_tool("skill_read", {"name": "csv-report", "file": "reference.md"})).startswith(
                "Columns: date, amount."
            )
            assert "print('summary')" in ok(
                await h.call_tool("skill_read", {"name": "csv-report", "file": "scripts/summary.py"})
            )
            assert "outside the skill's folder" in err(
                await h.call_tool("skill_read", {"name": "csv-report", "file": "../../secret.txt"})
            )
            assert "not text (a binary file)" in err(
                await h.call_tool("skill_read", {"name": "csv-report", "file": "logo.png"})
            )
            assert "has no file 'nope.md'; its files: logo.png" in err(
                await h.call_tool("skill_read", {"name": "csv-report", "file": "nope.md"})
            )
            assert "no skill named 'csv'; the skills: csv-report" in err(
                await h.call_tool("skill_read", {"name": "csv"})
            )

    run(go())


BROKEN = {
    "no-front-matter": ("# just text\n", "no front matter; start the file with a '---' line"),
    "no-name": ("---\ndescription: x\n---\n", "field 'name' is missing; add name: no-name"),
    "Bad_Name": ("---\nname: Bad_Name\ndescription: x\n---\n", "field 'name' 'Bad_Name': use lowercase letters"),
    "other-folder": ("---\nname: elsewhere\ndescription: x\n---\n", "is not the folder's name 'other-folder'"),
    "no-description": ("---\nname: no-description\n---\n", "field 'description' is missing"),
    "long-description": (
        "---\nname: long-description\ndescription: " + "x" * 1100 + "\n---\n",
        "field 'description' has 1100 characters; at most 1024",
    ),
    "unclosed": ("---\nname: unclosed\ndescription: x\n", "the front matter is never closed"),
}


def test_a_broken_skill_is_one_line_and_the_others_are_listed(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    for name, (text, _) in BROKEN.items():
        (skills / name).mkdir(parents=True)
        (skills / name / "SKILL.md").write_text(text)
    write_skill(skills, "good-one", "Still listed.")
    (skills / "quoted").mkdir()
    (skills / "quoted" / "SKILL.md").write_text(
        textwrap.dedent(
            """\
            ---
            name: "quoted"   # YAML comment
            description: >
              Folded over
              two lines.
            license: Apache-2.0
            metadata:
              author: someone
            ---
            Body.
            """
        )
    )

    async def go() -> None:
        async with harness("skills", data_dir=tmp_path) as h:
            prompt = await system_prompt(h)
            assert "- good-one: Still listed." in prompt and "- quoted: Folded over two lines." in prompt
            assert not any(name in prompt for name in BROKEN)
            listed = ok(await h.call_tool("skill_read", {}))
            problems = [line for line in listed.splitlines() if line.startswith("! not listed: ")]
            assert len(problems) == len(BROKEN), listed
            for name, (_, why) in BROKEN.items():
                line = next(p for p in problems if f"/{name}/SKILL.md" in p)
                assert str(skills / name / "SKILL.md") in line and why in line, line
            # the status line says so too (hologram status)
            assert h.plugin.status.startswith(f"2 skill(s); {len(BROKEN)} not listed: ")

    run(go())


def test_many_skills_are_listed_within_the_cap(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    for i in range(120):
        write_skill(skills, f"skill-{i:03d}", "Long words to fill the line. " * 20, body=f"Skill number {i}.")

    async def go() -> None:
        async with harness("skills", data_dir=tmp_path) as h:  # the shipped defaults: 1,200 characters
            listing = await system_prompt(h, "")
            assert len(listing) <= 1200
            lines = listing.splitlines()
            described = [line for line in lines if line.startswith("- skill-")]
            assert 3 <= len(described) <= 30 and all(len(line) <= 2 + 9 + 2 + 100 for line in described)
            assert all(line.endswith("…") for line in described)  # cut at description_chars
            more = lines[-1]
            assert more.startswith("- more, by name (skill_read without a name describes them): skill-")
            named = more.split(": ", 1)[1].split(", … and ")[0].split(", ")
            assert named[0] == f"skill-{len(described):03d}" and len(named) >= 10
            assert more.endswith(f", … and {120 - len(described) - len(named)} more")
            assert ok(await h.call_tool("skill_read", {})).startswith("120 skill(s):")
            assert "Skill number 119." in ok(await h.call_tool("skill_read", {"name": "skill-119"}))
        for budget in (200, 300, 5000):  # any budget holds, down to the smallest allowed
            async with harness("skills", data_dir=tmp_path, config={"max_listing_chars": budget}) as h:
                listing = await system_prompt(h, "")
                assert len(listing) <= budget and listing.splitlines()[-1].startswith("- more, by name"), listing

    run(go())


def test_skills_shipped_in_an_installed_plugin_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed plugin distribution (its ``hologram.plugins`` entry point) ships skills in its package's
    ``skills/``; the user's own skill of the same name wins, and the other one is reported."""
    site = tmp_path / "site"
    package = site / "acme_plugin"
    write_skill(package / "skills", "acme-deploy", "Deploy with Acme's tool.", body="Run acme_deploy.")
    write_skill(package / "skills", "shared-name", "The plugin's version.")
    (package / "__init__.py").write_text("raise RuntimeError('the skills plugin must not import me')\n")
    dist = site / "acme_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[hologram.plugins]\nacme = acme_plugin\n")
    monkeypatch.setenv("PYTHONPATH", f"{site}")
    write_skill(tmp_path / "skills", "shared-name", "The user's version.")

    async def go() -> None:
        async with harness("skills", data_dir=tmp_path) as h:
            prompt = await system_prompt(h)
            assert (
                "- shared-name: The user's version." in prompt and "- acme-deploy: Deploy with Acme's tool." in prompt
            )
            listed = ok(await h.call_tool("skill_read", {}))
            assert "- acme-deploy (acme): Deploy with Acme's tool." in listed
            assert (
                f"! not listed: {package / 'skills' / 'shared-name' / 'SKILL.md'}: field 'name' 'shared-name' is taken by"
                in listed
            )
            assert "Run acme_deploy." in ok(await h.call_tool("skill_read", {"name": "acme-deploy"}))

    run(go())


def test_the_conformance_kit_passes() -> None:
    from hologram.testing.conformance import check_conformance
    from tests.plugins.helpers import MANIFESTS

    report = check_conformance(MANIFESTS / "skills.toml")
    assert report.ok, report.render()
