"""Resource limits for code_run's child, applied by the process guardian between fork and exec.

`RLIMIT_AS` bounds memory (address space, so a runaway allocation fails with MemoryError instead of pushing
the machine into swap), `RLIMIT_CPU` bounds CPU seconds (SIGXCPU, then SIGKILL at the hard limit), and
`RLIMIT_FSIZE` bounds the size of any file it writes. The wall-clock timeout lives in the runner, the
process limit in the guardian (RLIMIT_NPROC counts every process of the user, and root ignores it, so it
cannot bound one call).
"""

from __future__ import annotations

from dataclasses import dataclass

from hologram_plugins._process.tree import Rlimit


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 512
    cpu_s: int = 30
    max_file_mb: int = 64

    def rlimits(self) -> list[Rlimit]:
        memory = self.memory_mb * 1024 * 1024
        fsize = self.max_file_mb * 1024 * 1024
        return [
            Rlimit("AS", memory, memory),
            Rlimit("CPU", self.cpu_s, self.cpu_s + 1),
            Rlimit("FSIZE", fsize, fsize),
            Rlimit("CORE", 0, 0),
        ]
