"""The supervisor's own log: size-capped and rotated, repeated errors said once per burst.

A supervisor at a resource limit (no file descriptors, a full disk) meets the same error
in a loop; written each time, it would fill the disk it is short of. So each message is
written the first time, then counted for :data:`BURST_SECONDS`, and a line says how often
it came back.
"""

from __future__ import annotations

import asyncio
import logging
import logging.handlers
import time
from typing import Any

from wave_bash.api.paths import StateLayout

LOG_MAX_BYTES = 8 * 1024 * 1024
"""``supervisor.log`` is rotated at this size ..."""
LOG_BACKUPS = 2
"""... keeping this many older files (``supervisor.log.1``, ``.2``)."""
BURST_SECONDS = 60.0
"""A message repeated within this long after its first time is counted, not written."""


class RepeatFilter(logging.Filter):
    """Lets a message (logger, level, text and exception) through once per burst."""

    def __init__(self, burst: float = BURST_SECONDS, clock: Any = time.monotonic) -> None:
        super().__init__()
        self.burst = burst
        self.clock = clock
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}  # bounded below
        """key → (when the burst started, how many were held back)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        detail = f"{type(exc).__name__}: {exc}" if exc is not None else ""
        key = (record.name, record.levelno, f"{record.getMessage()}|{detail}")
        now = self.clock()
        first, held = self._seen.get(key, (None, 0))
        if first is not None and now - first < self.burst:
            self._seen[key] = (first, held + 1)
            return False
        if held:
            record.msg = f"{record.msg} [repeated {held} more time(s) in the last {self.burst:g}s]"
        self._seen[key] = (now, 0)
        if len(self._seen) > 1000:  # many distinct messages: forget the oldest bursts
            for old in sorted(self._seen, key=lambda k: self._seen[k][0])[:500]:
                del self._seen[old]
        return True


def setup_logging(layout: StateLayout, level: str = "INFO") -> None:
    """Log to ``supervisor.log`` (0600 by the supervisor's umask), rotated, bursts folded."""
    handler = logging.handlers.RotatingFileHandler(
        layout.log, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    handler.addFilter(RepeatFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


def log_loop_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Route the loop's own errors (``accept()`` out of descriptors, ...) through the
    folded log, keyed on their message rather than on each exception's text."""
    logger = logging.getLogger("supervisor.loop")

    def handler(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        message = str(context.get("message") or "event loop error").replace("%", "%%")
        logger.error(message, exc_info=context.get("exception"))

    loop.set_exception_handler(handler)
