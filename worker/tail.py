"""Log tailing: watchfiles is the wake-up hint, byte offsets in the file are the truth."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

from watchfiles import awatch

from .output import clean_bytes

RECHECK_MS = 200
"""Even without a change event the file is looked at this often: an event can be missed,
e.g. a write that lands before the watcher is set up."""


async def changes(path: Path | str, stop: asyncio.Event) -> AsyncIterator[None]:
    """Yield whenever ``path`` may have changed, and at least every ``RECHECK_MS``.

    Works with ``WATCHFILES_FORCE_POLLING=1`` too; ends when ``stop`` is set.
    """
    async for _ in awatch(
        path,
        stop_event=stop,
        debounce=5,
        step=5,
        rust_timeout=RECHECK_MS,
        yield_on_timeout=True,
        recursive=False,
    ):
        yield None


def file_size(path: Path | str) -> int:
    """Current size of a log (0 when missing)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class PatternScanner:
    """Finds a regex in output as it grows, reading each new byte once.

    The last unfinished line is kept so a match that spans two reads is still found.
    """

    MAX_SCAN = 1024 * 1024

    def __init__(self, path: Path | str, pattern: re.Pattern[str], start: int) -> None:
        self.path = path
        self.pattern = pattern
        self.pos = start
        self.carry = ""

    def scan(self, size: int) -> bool:
        """Look at bytes up to ``size``; True once the pattern matched."""
        if size <= self.pos:
            return False
        start = max(self.pos, size - self.MAX_SCAN)
        with open(self.path, "rb") as fh:
            fh.seek(start)
            text = self.carry + clean_bytes(fh.read(size - start))
        self.pos = size
        if self.pattern.search(text):
            return True
        cut = text.rfind("\n")
        self.carry = text[cut + 1 :] if cut >= 0 else text[-4096:]
        return False
