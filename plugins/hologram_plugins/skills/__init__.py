"""skills: folders of instructions (SKILL.md, Anthropic's agent-skills format) the model reads when a task fits.

Where skills come from, first name wins: the user's ``<data>/skills/`` (``[plugins.skills] dirs``), then a
``skills/`` folder inside the package of a plugin — a built-in's (``hologram_plugins/NAME/skills``) or an
installed plugin's (the package its ``hologram.plugins`` entry point names, located without importing it).

Every model request of a turn carries only the names and descriptions, appended to the system prompt by the
``pre_action`` stage, capped (``max_listed``, ``max_listing_chars``; the rest is counted and found with
``skill_read`` without a name), so a hundred skills cannot swell the one-word request. ``skill_read`` loads
one skill's instructions, or a file beside them, when the model needs it. The folders are read afresh every
turn (a stat per skill; a SKILL.md is parsed again only when it changed), so a skill added while Hologram runs
is listed on the next turn. A broken SKILL.md is left out with one line naming the file and the field: in the
plugin's status, its log and skill_read's listing.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hologram.sdk import Plugin, PreActionView, StartContext, tool_error
from hologram_plugins.skills.catalog import SKILL_FILE, Catalog, Skill, SkillError, front_matter, scan

log = logging.getLogger("hologram_plugins.skills")
ENTRY_POINT_GROUP = "hologram.plugins"


class SkillsConfig(BaseModel):
    """settings.toml's ``[plugins.skills]``, checked at start (its JSON Schema: manifests/skills.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    dirs: list[str] = Field(
        default_factory=lambda: ["../../skills"],
        description="Folders of skill folders, relative to the plugin's data dir (../../skills is <data>/skills).",
    )
    plugin_skills: bool = Field(True, description="Also list the skills plugins ship in their package's skills/.")
    max_listed: int = Field(
        30, ge=0, le=500, description="Skills listed with their descriptions; the others are named or counted."
    )
    max_listing_chars: int = Field(
        1200, ge=200, le=50_000, description="The listing's size in the system prompt, at most."
    )
    description_chars: int = Field(100, ge=20, le=1024, description="A description in the listing is cut there.")
    max_read_bytes: int = Field(65_536, ge=1024, le=4 * 1024 * 1024, description="skill_read returns this much.")


@dataclass
class Skills:
    """The plugin's state: where to look, and what each SKILL.md said while unchanged."""

    config: SkillsConfig
    roots: list[tuple[Path, str]]
    cache: dict[Path, tuple[tuple[int, int], Skill | str]] = field(default_factory=dict)
    reported: tuple[str, ...] = ()

    def catalog(self) -> Catalog:
        return scan(self.roots, self.cache)


def plugin_roots() -> list[tuple[Path, str]]:
    """``skills/`` of every built-in plugin's package and of every installed plugin's, found without importing."""
    roots: list[tuple[Path, str]] = []
    builtins = Path(__file__).resolve().parents[1]
    for folder in sorted(builtins.iterdir()):
        if (folder / "skills").is_dir() and not folder.name.startswith("_"):
            roots.append((folder / "skills", folder.name))
    for name, value in sorted(entry_point_values()):
        top, *inner = value.split(":", 1)[0].strip().split(".")
        try:
            spec = importlib.util.find_spec(top)  # the top package only: find_spec("a.b") would import a
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec is not None else []:
            folder = Path(location).joinpath(*inner) / "skills"
            if folder.is_dir():
                roots.append((folder, name))
    return roots


def entry_point_values(group: str = ENTRY_POINT_GROUP) -> list[tuple[str, str]]:
    """(name, value) of the entry points of ``group``, read from the ``entry_points.txt`` of the distributions
    on sys.path (the first of a name wins, as importlib.metadata has it). ``importlib.metadata.entry_points()``
    builds a Distribution and parses the METADATA of every installed package: 0.5 MB of the plugin's memory
    for good (measured under the harness: 17.55 against 17.03 MB PSS without plugin skills)."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()
    for folder in sys.path:
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            distribution = name.split("-", 1)[0].lower().replace("_", "-").replace(".", "-")
            if distribution in seen:
                continue
            seen.add(distribution)
            try:
                with open(os.path.join(folder or ".", name, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:
                continue
            section = ""
            for line in (raw.strip() for raw in text.splitlines()):
                if line.startswith("[") and line.endswith("]"):
                    section = line[1:-1].strip()
                elif section == group and "=" in line and not line.startswith(("#", ";")):
                    key, value = line.split("=", 1)
                    found.append((key.strip(), value.strip()))
    return found


def _state(ctx: StartContext[SkillsConfig]) -> Skills:
    data = Path(ctx.data_dir)
    roots = [((data / d).resolve(), "data") for d in ctx.config.dirs]
    if ctx.config.plugin_skills:
        roots.extend(plugin_roots())
    return Skills(ctx.config, roots)


plugin = Plugin("skills", state=_state, config=SkillsConfig)


@plugin.on_start
async def _report_at_start(ctx: StartContext[SkillsConfig]) -> None:
    await _report(plugin.state.catalog())


async def _report(catalog: Catalog) -> None:
    """Log each problem once and keep the status line saying how many skills there are and what is wrong."""
    skills: Skills = plugin.state
    problems = tuple(catalog.problems)
    if problems == skills.reported:
        return
    for problem in problems:
        if problem not in skills.reported:
            log.warning("skill not listed: %s", problem)
    skills.reported = problems
    status = f"{len(catalog.skills)} skill(s)"
    if problems:
        status += f"; {len(problems)} not listed: {problems[0]}"
    await plugin.set_status(status[:500])


HEADER = "Skills (instructions for particular tasks): when a task fits one, first read it with skill_read."
MORE = "- more, by name (skill_read without a name describes them): "


def listing(catalog: Catalog, config: SkillsConfig) -> str:
    """The system prompt's lines: a header, ``- name: description`` while they fit the budget, then the other
    names alone while they fit, then how many are left out. Never longer than ``max_listing_chars``."""
    if not catalog.skills:
        return ""
    budget = config.max_listing_chars
    # room kept for the names-only line (so more skills are at least named), and never less than that line's
    # own words: whatever the budget, the listing stays within it
    reserve = max(min(400, budget // 4), len(MORE) + 20)
    lines = [HEADER]
    used = len(HEADER)
    skills = list(catalog.skills.values())
    shown = 0
    for skill in skills[: config.max_listed]:
        text = skill.description
        if len(text) > config.description_chars:
            text = text[: config.description_chars - 1].rstrip() + "…"
        line = f"- {skill.name}: {text}"
        if used + 1 + len(line) > budget - reserve:
            break
        lines.append(line)
        used += 1 + len(line)
        shown += 1
    rest = [s.name for s in skills[shown:]]
    if rest:
        named: list[str] = []
        room = budget - used - 1 - len(MORE) - len(", … and 9999 more")
        for name in rest:
            if len(name) + 2 > room:
                break
            named.append(name)
            room -= len(name) + 2
        left = len(rest) - len(named)
        tail = f"{', ' if named else ''}… and {left} more" if left else ""
        if named or left:
            lines.append(MORE + ", ".join(named) + tail)
    return "\n".join(lines)


@plugin.stage("pre_action")
async def list_skills(view: PreActionView) -> Any:
    """Append the listing to the system prompt of the turn's requests (nothing when there are no skills)."""
    skills: Skills = plugin.state
    # On the loop, not in a thread: a stat per skill (~2 µs each; a SKILL.md parsed only when it changed). A
    # worker thread cost the plugin ~1 MB of PSS for good (its stack and malloc arena; tools/bench/footprint.py
    # --turns: 8.4 against the others' 7.4 MB) to save less than a millisecond a turn.
    catalog = skills.catalog()
    await _report(catalog)
    text = listing(catalog, skills.config)
    if not text:
        return {}
    return view.rewrite(f"{view.system}\n\n{text}" if view.system else text)


# -- skill_read ----------------------------------------------------------------------------------------------

MAX_FILES_LISTED = 60


@plugin.tool("skill_read")
async def skill_read(name: str | None = None, file: str | None = None) -> Any:
    skills: Skills = plugin.state
    catalog = skills.catalog()
    await _report(catalog)
    if not name:
        if file:
            return tool_error("file needs the skill's name too: skill_read(name, file)")
        return _all(catalog)
    skill = catalog.skills.get(name.strip())
    if skill is None:
        known = ", ".join(catalog.skills) or "none are installed"
        return tool_error(f"no skill named {name!r}; the skills: {known}")
    if file:
        return _read_beside(skill, file, skills.config.max_read_bytes)  # ≤ max_read_bytes of a local file
    return _instructions(skill, skills.config.max_read_bytes)


def _all(catalog: Catalog) -> str:
    lines = [f"{len(catalog.skills)} skill(s){':' if catalog.skills else ''}"]
    lines += [f"- {s.name} ({s.source}): {s.description}" for s in catalog.skills.values()]
    lines += [f"! not listed: {p}" for p in catalog.problems]
    return "\n".join(lines)


def _instructions(skill: Skill, limit: int) -> Any:
    try:
        text = skill.file.read_text(encoding="utf-8")
        _, body = front_matter(text, str(skill.file))
    except (OSError, UnicodeDecodeError) as exc:
        return tool_error(f"{skill.file}: cannot be read now: {exc}")
    except SkillError as exc:  # it changed since it was listed
        return tool_error(str(exc))
    files = _files(skill.folder)
    head = f"Skill {skill.name} — its folder is {skill.folder} (paths in it are relative to that folder)."
    if files:
        shown = ", ".join(files[:MAX_FILES_LISTED])
        more = f" and {len(files) - MAX_FILES_LISTED} more" if len(files) > MAX_FILES_LISTED else ""
        head += f"\nFiles beside SKILL.md (skill_read with file= reads one): {shown}{more}"
    return f"{head}\n\n{_cut(body, limit)}"


def _files(folder: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and relative.as_posix() != SKILL_FILE and not any(p.startswith(".") for p in relative.parts):
            found.append(relative.as_posix())
        if len(found) > 10 * MAX_FILES_LISTED:
            break
    return found


def _read_beside(skill: Skill, file: str, limit: int) -> Any:
    folder = skill.folder.resolve()
    target = (folder / file).resolve()
    if not target.is_relative_to(folder):
        return tool_error(f"file {file!r} is outside the skill's folder; give a path inside it, e.g. one it lists")
    if not target.is_file():
        listed = ", ".join(_files(skill.folder)[:MAX_FILES_LISTED]) or "none"
        return tool_error(f"skill {skill.name} has no file {file!r}; its files: {listed}")
    with target.open("rb") as handle:
        data = handle.read(limit + 1)
    try:
        text = data[:limit].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < limit - 4:  # not just a character cut in two by the limit
            return tool_error(f"{file!r} is not text (a binary file); use it from {target} with the tool that opens it")
        text = data[: exc.start].decode("utf-8")
    return _cut(text, limit, cut=len(data) > limit)


def _cut(text: str, limit: int, *, cut: bool = False) -> str:
    if len(text.encode()) > limit:
        text, cut = text.encode()[:limit].decode("utf-8", errors="ignore"), True
    return f"{text}\n[cut at {limit:,} bytes: the file goes on]" if cut else text
