"""Find skills and read their SKILL.md: the folder format of Anthropic's agent skills (agentskills.io).

A skill is a folder holding ``SKILL.md``: front matter between ``---`` lines with ``name`` (lowercase letters,
digits and hyphens, ≤ 64 characters, the folder's own name) and ``description`` (≤ 1,024 characters: what it
does and when to use it), then the instructions in Markdown; scripts, references and templates sit beside it.
Only the names and descriptions go into every request; the rest is read when the model asks (skill_read).

The front matter is YAML, but skills use a small part of it — ``key: value`` lines, quoted strings, ``|`` and
``>`` blocks, nested maps such as ``metadata`` — and that part is read here rather than pulling in a YAML
library for two keys. A SKILL.md that breaks the rules is not listed; its problem is one line naming the file
and the field, and every other skill is still found (`Catalog.problems`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

SKILL_FILE = "SKILL.md"
NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_SKILL_BYTES = 256 * 1024  # a SKILL.md larger than this is not instructions; it is refused, not read whole


class SkillError(Exception):
    """A SKILL.md that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    source: str  # "data" (the user's <data>/skills) or the plugin that ships it

    @property
    def file(self) -> Path:
        return self.folder / SKILL_FILE


@dataclass
class Catalog:
    """The skills found, by name (the first root that has a name wins), and the problems, one line each."""

    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _unquote(value: str, where: str, key: str) -> str:
    """A scalar: a quoted string (YAML's escapes of the two kinds that skills use) or plain text, either with
    a trailing ``# comment``."""
    value = value.strip()
    quote = value[:1]
    if quote in ("'", '"'):
        i, chars = 1, []
        while i < len(value):
            c = value[i]
            if quote == "'" and c == "'" and value[i + 1 : i + 2] == "'":
                chars.append("'")
                i += 2
                continue
            if quote == '"' and c == "\\" and i + 1 < len(value):
                chars.append({"n": "\n", "t": "\t"}.get(value[i + 1], value[i + 1]))
                i += 2
                continue
            if c == quote:
                break
            chars.append(c)
            i += 1
        if i >= len(value) or not re.fullmatch(r"\s*(#.*)?", value[i + 1 :]):
            raise SkillError(f"{where}: field {key!r}: the quote that opens its value is never closed")
        return "".join(chars)
    return re.sub(r"\s+#.*$", "", value)


def front_matter(text: str, where: str) -> tuple[dict[str, str], str]:
    """The top-level ``key: value`` pairs of the front matter (nested maps are skipped) and the body."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{where}: no front matter; start the file with a '---' line, then name: and description:")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SkillError(f"{where}: the front matter is never closed; end it with a '---' line") from None
    fields: dict[str, str] = {}
    i = 1
    while i < end:
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#") or line[:1] in " \t":
            continue  # blank, a comment, or a nested value of a key read (or skipped) above
        key, colon, value = line.partition(":")
        key = key.strip()
        if not colon or not key:
            raise SkillError(f"{where} line {i}: {line.strip()[:60]!r} is not 'key: value'")
        value = value.strip()
        if value[:1] and value[0] in "|>":  # a block: the indented lines that follow
            block: list[str] = []
            while i < end and (not lines[i].strip() or lines[i][:1] in " \t"):
                block.append(lines[i].strip())
                i += 1
            joined = "\n" if value[0] == "|" else " "
            fields[key] = joined.join(block).strip()
        else:
            fields[key] = _unquote(value, f"{where} line {i}", key)
    return fields, "\n".join(lines[end + 1 :]).lstrip("\n")


def read_skill(folder: Path, source: str) -> Skill:
    """One skill's name and description, checked against the format's rules."""
    path = folder / SKILL_FILE
    where = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_BYTES:
            limit = f"{MAX_SKILL_BYTES:,}"
            raise SkillError(f"{where}: {size:,} bytes; a SKILL.md may hold {limit} (move detail into files beside it)")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{where}: not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise SkillError(f"{where}: cannot be read: {exc.strerror or exc}") from None
    fields, _ = front_matter(text, where)
    name = fields.get("name", "").strip()
    description = " ".join(fields.get("description", "").split())
    if not name:
        raise SkillError(f"{where}: field 'name' is missing; add name: {folder.name} to the front matter")
    if len(name) > MAX_NAME or not NAME.match(name):
        raise SkillError(
            f"{where}: field 'name' {name[:70]!r}: use lowercase letters, digits and single hyphens, "
            f"at most {MAX_NAME} characters"
        )
    if name != folder.name:
        raise SkillError(f"{where}: field 'name' {name!r} is not the folder's name {folder.name!r}; make them equal")
    if not description:
        raise SkillError(f"{where}: field 'description' is missing; say what the skill does and when to use it")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(
            f"{where}: field 'description' has {len(description)} characters; at most {MAX_DESCRIPTION} are allowed"
        )
    return Skill(name, description, folder, source)


def skill_folders(root: Path) -> Iterator[Path]:
    """The folders of ``root`` that hold a SKILL.md, by name (hidden ones skipped)."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(".") and entry.is_dir() and os.path.isfile(os.path.join(entry.path, SKILL_FILE)):
            yield Path(entry.path)


def scan(roots: Iterable[tuple[Path, str]], cache: dict[Path, tuple[tuple[int, int], Skill | str]]) -> Catalog:
    """Every skill of ``roots`` (each a folder of skill folders, and whose they are); ``cache`` keeps what a
    SKILL.md said while its size and mtime stay the same, so a scan per turn costs a stat per skill."""
    catalog = Catalog()
    seen: set[Path] = set()
    for root, source in roots:
        for folder in skill_folders(root):
            path = folder / SKILL_FILE
            seen.add(path)
            try:
                stat = path.stat()
            except OSError:
                continue
            key = (stat.st_mtime_ns, stat.st_size)
            known = cache.get(path)
            if known is None or known[0] != key:
                try:
                    known = (key, read_skill(folder, source))
                except SkillError as exc:
                    known = (key, str(exc))
                except Exception as exc:  # a parser bug must cost one skill, never the listing of the rest
                    known = (key, f"{path}: cannot be read: {type(exc).__name__}: {exc}")
                cache[path] = known
            found = known[1]
            if isinstance(found, str):
                catalog.problems.append(found)
            elif found.name in catalog.skills:
                first = catalog.skills[found.name]
                taken = f"{path}: field 'name' {found.name!r} is taken by {first.file}; this one is not listed"
                catalog.problems.append(taken)
            else:
                catalog.skills[found.name] = found
    for stale in set(cache) - seen:
        del cache[stale]
    return catalog
