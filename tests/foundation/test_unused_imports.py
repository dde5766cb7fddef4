"""hologram/base/_unused_imports.py: Hologram's processes refuse httpx's CLI and trio, and httpx still works.

A forked plugin gets the refusal lifted (tests/launcher/test_zygote.py checks it from inside one).

Mutation-checked: with refuse_unused_imports() removed from hologram/cli/__init__.py the CLI test fails
(httpx._main and trio are imported); with an empty UNUSED the subprocess test fails.
"""

from __future__ import annotations

import json
import subprocess
import sys

from hologram.base._unused_imports import UNUSED

PROBE = """
import json, sys
{setup}
import httpx, httpcore._synchronization
client = httpx.AsyncClient()  # constructing one is what the kernel and plugins do at start
print(json.dumps({{"loaded": [m for m in ("httpx._main", "trio", "click") if sys.modules.get(m) is not None],
                  "trio_backend": httpcore._synchronization.trio is not None}}))
"""


def _probe(setup: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup)], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_refused_modules_are_not_imported_and_httpx_still_works() -> None:
    out = _probe("from hologram.base._unused_imports import refuse_unused_imports; refuse_unused_imports()")
    assert out == {"loaded": [], "trio_backend": False}


def test_the_cli_refuses_them_before_its_commands_import_httpx() -> None:
    out = _probe("import hologram.cli")
    assert out["loaded"] == [] and out["trio_backend"] is False


def test_importing_hologram_alone_refuses_nothing() -> None:
    """A program embedding Hologram keeps trio (where installed) and httpx's CLI."""
    code = f"import sys, hologram, hologram.memory; print([m for m in {UNUSED!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_lifting_the_refusal_lets_a_plugin_import_them() -> None:
    """What the zygote does in each forked child before the plugin's code runs (mutation-checked: without
    the call in zygote/main.py the zygote test sees ['httpx._main', 'trio'] refused inside a plugin)."""
    code = (
        "import sys; from hologram.base._unused_imports import allow_unused_imports, refuse_unused_imports; "
        "marked = refuse_unused_imports(); print(sorted(allow_unused_imports()) == sorted(marked), "
        "[m for m in sys.modules if sys.modules[m] is None])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True []"
