"""`uvicorn_core`: the plugin's server loads uvicorn's Config and Server without the CLI, and the package still
completes itself for any other code in the process that imports uvicorn the usual way.

Fresh interpreters (a subprocess each): what is imported is the point, and the test process has imported
uvicorn already. Mutation check (done): making `uvicorn_core.load` a plain ``import uvicorn`` turns the first
test red (click imported); dropping `_completing`'s hook turns the second red (no ``uvicorn.run``).
"""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_server_module_loads_uvicorn_without_its_cli() -> None:
    out = _run(
        "import sys\n"
        "from hologram_plugins.http import server\n"
        "assert server.Server.__module__ == 'uvicorn.server', server.Server\n"
        "print(sorted(m for m in ('uvicorn.main', 'click', 'watchfiles', 'multiprocessing') if m in sys.modules))"
    )
    assert out == "[]", f"the http server module imported {out}"


def test_the_partial_package_completes_on_first_use_of_a_name_it_lacks() -> None:
    out = _run(
        "import sys\n"
        "from hologram_plugins.http import server\n"
        "import uvicorn\n"
        "from uvicorn import Config\n"  # set by load: no completion needed
        "assert Config is server.Config and 'uvicorn.main' not in sys.modules\n"
        "from uvicorn import run\n"  # not set: runs uvicorn's own __init__
        "print(run.__module__, uvicorn.__version__ == __import__('importlib.metadata').metadata.version('uvicorn'))"
    )
    assert out == "uvicorn.main True"
