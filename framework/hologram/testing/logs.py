"""The plugin's log during a conformance run: its stderr as the supervisor logs it, and the supervisor's own lines
about it, in arrival order, so a problem can show what the plugin said around it."""

from __future__ import annotations

import logging

LOG_TAIL = 12  # lines of the plugin's log shown with a problem


class LogCapture(logging.Handler):
    """The plugin's stderr (the supervisor logs each line as ``hologram.plugin.NAME``) and the supervisor's own
    warnings about it, in arrival order."""

    def __init__(self, plugin: str) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self._loggers = [logging.getLogger(f"hologram.plugin.{plugin}"), logging.getLogger("hologram.supervisor")]
        self._levels = [logger.level for logger in self._loggers]
        self._prefix = f"[{plugin}] "

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.name.startswith("hologram.supervisor") and self._prefix not in message:
            return  # about another process (the zygote, another plugin)
        self.lines.append(message.removeprefix(self._prefix))

    def __enter__(self) -> LogCapture:
        for logger in self._loggers:
            logger.addHandler(self)
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc: object) -> None:
        for logger, level in zip(self._loggers, self._levels, strict=True):
            logger.removeHandler(self)
            logger.setLevel(level)

    def tail(self, start: int = 0, count: int = LOG_TAIL) -> str:
        lines = self.lines[start:]
        return "\n".join(lines[-count:]) if lines else "(nothing)"
