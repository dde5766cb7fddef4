"""An idle plugin holds only what serving needs: heavy libraries load with the first call that uses them.

Each module a plugin imports at start is private memory in every plugin process that imports it (the zygote
shares only what it preloaded itself): httpx costs the web and rss plugins ~4.5 MB each idle, icalendar the
calendar plugin ~4 MB (tools/bench/footprint.py --turns). And the zygote, whose pages every plugin shares,
must not pull in the kernel's memory stack (numpy, the embedding model, the segmenter).

A plugin is measured beyond what the zygote preloads: those pages are shared, not the plugin's own. The
zygote preloads pydantic (a plugin's config is a pydantic model, issue 34), and pydantic imports
``email.utils`` itself, so `email` counts as heavy for a plugin but not in the zygote, where it is paid once.

Mutation check (done): ``import httpx`` at the top of hologram_plugins/web/__init__.py turns the zygote case
red (the zygote preloads hologram_plugins.web.guard, which runs the package's ``__init__``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "httpx", "icalendar", "recurring_ical_events", "croniter", "dateutil", "xml.etree", "email", "numpy",
    "onnxruntime", "hologram.memory", "pyte",
)  # fmt: skip


PRELOAD = "from hologram.zygote.main import preload; preload()"


def imported_after(code: str) -> set[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize(
    "plugin",
    [
        "web",
        "rss",
        "calendar",
        "shell",
        "code",
        "files",
        "notes",
        "reminders",
        "todos",
        "agents",
        "admin",
        "skills",
        "terminal",
        "browser",
    ],
)
def test_a_plugin_imports_no_heavy_library_until_a_call_needs_it(plugin: str) -> None:
    zygote = imported_after(PRELOAD)
    assert heavy(imported_after(f"{PRELOAD}\nimport hologram_plugins.{plugin}") - zygote) == []


def test_the_zygote_preloads_no_memory_or_model_code() -> None:
    found = heavy(imported_after(PRELOAD))
    assert [m for m in found if m != "email" and not m.startswith("email.")] == []


def test_the_calendar_still_reads_and_writes_its_file(tmp_path: object) -> None:
    """The deferred import is in place on the paths that use it (a new file, an event added and listed)."""
    from datetime import datetime, timezone
    from pathlib import Path

    from hologram_plugins.calendar.store import CalendarFile

    store = CalendarFile(Path(str(tmp_path)) / "c.ics")
    uid = store.add(
        "dentist", datetime(2026, 1, 5, 9, tzinfo=timezone.utc), datetime(2026, 1, 5, 10, tzinfo=timezone.utc)
    )
    assert uid in store.path.read_text()
