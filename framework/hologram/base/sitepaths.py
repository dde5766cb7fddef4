"""The `.pth` files of this interpreter's site directories: what a fresh interpreter puts on `sys.path`.

`pip install -e ./plugin` (and many an ordinary install) adds a `.pth` file to site-packages; the interpreter
reads those files once, at start-up. A process that was already running — the kernel, the zygote whose forks
become plugins, the CLI that just ran pip — does not see the new entries, and `import plugin` fails there
while it works in a new `python -m plugin`. Two answers, both here:

* `fingerprint()`: the `.pth` files now (name, size, mtime). The zygote records it when it starts and serves
  a spawn only while it is unchanged (a changed one means its children would not be what `python -m` is).
* `refresh()`: process the site directories again (`site.addsitedir`: the documented way to read a site
  directory's `.pth` files), for a process that must find what was just installed.
"""

from __future__ import annotations

import importlib
import os
import site

Fingerprint = tuple[tuple[str, int, int], ...]


def site_dirs() -> list[str]:
    """The directories whose `.pth` files the interpreter reads at start-up."""
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def fingerprint() -> Fingerprint:
    """Every `.pth` file of the site directories, as (path, size, mtime_ns), sorted."""
    found: list[tuple[str, int, int]] = []
    for directory in site_dirs():
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if not name.endswith(".pth"):
                continue
            path = os.path.join(directory, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            found.append((path, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(found))


def refresh() -> None:
    """Read the site directories' `.pth` files again, so this process imports what was installed since it
    started (entries already on `sys.path` are not added twice); drop the import system's cached listings."""
    for directory in site_dirs():
        site.addsitedir(directory)
    importlib.invalidate_caches()
