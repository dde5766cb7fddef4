"""`hologram up`'s times count from the command, not from when the supervisor started (cli/progress.py)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import time
first_line = time.monotonic()
while time.monotonic() - first_line < 0.2:  # work the process does before anything is timed
    pass
from hologram.cli.progress import process_started
age = time.monotonic() - process_started()
print(age, time.monotonic() - first_line)
"""


def test_the_clock_starts_with_the_process() -> None:
    """The process's age covers at least what it did since its first line (the interpreter's start comes
    on top), to the kernel's 10 ms tick. Mutation check (done): `process_started` returning `time.monotonic()`
    (the supervisor's clock of before) turns this red."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    age, since_first_line = (float(x) for x in done.stdout.split())
    assert age >= since_first_line - 0.011, (age, since_first_line)
