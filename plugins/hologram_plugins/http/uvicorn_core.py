"""uvicorn's ``Config`` and ``Server`` without its package ``__init__``: the plugin serves, it never runs a CLI.

``import uvicorn`` runs ``uvicorn/__init__.py``, which imports ``uvicorn.main`` — the command line (click), the
reloader (watchfiles, a Rust extension) and the worker supervisor (multiprocessing, pickle). The plugin uses
none of them, yet every idle http plugin held them: ~1.6 MB of its PSS (tools/bench/footprint.py --turns;
docs/performance.md). Python cannot import ``uvicorn.config`` without first executing the package, so `load`
registers the package module with its search path but without running its ``__init__``, imports the two
submodules it needs, and leaves the package to complete itself: the first lookup of a name it lacks (say
``uvicorn.run``, or ``__version__``) runs the real ``__init__`` into the same module, so other code in the
process that imports uvicorn the usual way still gets all of it (`complete`). If uvicorn was already imported,
nothing is done. ``tests/guard/test_http_imports.py`` keeps click, watchfiles and multiprocessing out.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

PACKAGE = "uvicorn"
PARTIAL = "__hologram_partial__"  # set on the package module while its __init__ has not run


def load() -> tuple[type[Any], type[Any]]:
    """(uvicorn.Config, uvicorn.Server), importing only what they need."""
    if PACKAGE not in sys.modules:
        spec = importlib.util.find_spec(PACKAGE)  # a top-level package: found, not executed
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            raise ImportError("uvicorn is not installed as a package: pip install uvicorn")
        package = importlib.util.module_from_spec(spec)
        setattr(package, PARTIAL, True)
        package.__getattr__ = _completing(package)  # type: ignore[method-assign]
        sys.modules[PACKAGE] = package
    config = importlib.import_module("uvicorn.config")
    server = importlib.import_module("uvicorn.server")
    package = sys.modules[PACKAGE]
    if getattr(package, PARTIAL, False):  # what uvicorn's own modules import from the package itself
        # e.g. uvicorn.lifespan.off does `from uvicorn import Config`
        package.__dict__.update(Config=config.Config, Server=server.Server)
    return config.Config, server.Server


def complete(package: ModuleType) -> None:
    """Run the package's real ``__init__`` into the partial module (idempotent)."""
    if not package.__dict__.pop(PARTIAL, False):
        return
    package.__dict__.pop("__getattr__", None)
    spec = package.__spec__
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(package)


def _completing(package: ModuleType) -> Any:
    def __getattr__(name: str) -> Any:  # the module-level hook (PEP 562)
        if name.startswith("__") and name.endswith("__") and name != "__version__":
            raise AttributeError(name)  # probes such as __path__ lookups by tools: not a reason to complete
        complete(package)
        try:
            return package.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'uvicorn' has no attribute {name!r}") from None

    return __getattr__
