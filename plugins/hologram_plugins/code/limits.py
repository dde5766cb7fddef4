"""Resource limits for code_run's child, applied in the child between fork and exec (preexec).

`RLIMIT_AS` bounds memory (address space, so a runaway allocation fails with MemoryError instead of pushing
the machine into swap), `RLIMIT_CPU` bounds CPU seconds (SIGXCPU, then SIGKILL at the hard limit), and
`RLIMIT_FSIZE` bounds the size of any file it writes. The wall-clock timeout lives in the runner.
"""

from __future__ import annotations

import resource
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 512
    cpu_s: int = 30
    max_file_mb: int = 64

    def preexec(self) -> Callable[[], None]:
        """A function safe to run after fork: only setrlimit calls, no allocation-heavy Python."""
        memory = self.memory_mb * 1024 * 1024
        cpu = self.cpu_s
        fsize = self.max_file_mb * 1024 * 1024

        def apply() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        return apply
