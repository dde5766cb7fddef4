"""Hologram's peers measured the way `tools/bench/sweep.py` measures Hologram: on demand, never in CI.

    .venv/bin/python tools/bench/peers/run.py --dir /tmp/hologram-peers --json peers.json [--launches 3]

`run.py` installs each peer into `--dir` (pip in a venv per peer; npm for OpenClaw, with `node@24`), drives
it against the strict mock out of process and prints one table (shape: `table.py`). One module per peer
(`nanobot.py`, `hermes.py`, `qwenpaw.py`, `openclaw.py`) holds only that peer's quirks; `peer.py` holds
the measurement they all share; `common.py` the mock, process-tree PSS and waiting.
"""
