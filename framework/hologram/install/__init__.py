"""Plugins a person adds to (and removes from) a project at run time: `hologram plugin add/remove/list`.

- `target`: what `add` was given — a Python project to install editable, a directory of manifests, or a
  package from the index.
- `environment`: pip into the interpreter `hologram` runs from, and what that environment holds.
- `record`: what `add` installed and how, kept in the data directory so `remove` undoes exactly that.
- `summary`: what a plugin's manifest provides, requires and may do, for the person who confirms.
- `transaction`: add and remove as prepare → (confirm) → apply → finish, or roll back; nothing half-done.
- `inventory`: installed vs locked (the kernel adds running).

The CLI runs these in its own process and asks the running kernel to adopt the new lock (`kernel.plugins`
`reload`); the kernel serves the same steps to the web page (`kernel/admin_install.py`).
"""
