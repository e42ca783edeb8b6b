"""Fault injection for tests: ``WAVE_FAULT=<point>`` makes the supervisor kill itself there
(or, at a pause point, wait there).

This is the one documented seam through which the fault-injection suite places a
supervisor crash at an exact step (between journal insert and spawn, after spawn, just
before an exit is recorded, ...). Unset in normal use; a no-op then.
"""

from __future__ import annotations

import os
import signal
import time

POINTS = frozenset(
    {"after_insert", "after_spawn", "before_finish", "before_reply", "after_reply", "pruned_files"}
)
PAUSE_SECONDS = 3.0
PAUSE_POINTS = frozenset({"slow_standby"})
"""Where a test has the supervisor wait :data:`PAUSE_SECONDS`: a slow step (a standby's
start on a slow disk), to see that nothing else waits for it."""


def crash_point(name: str) -> None:
    """SIGKILL this process if ``WAVE_FAULT`` names ``name`` (a real, uncatchable crash)."""
    if os.environ.get("WAVE_FAULT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def pause_point(name: str) -> None:
    """Wait :data:`PAUSE_SECONDS` here if ``WAVE_FAULT`` names ``name``."""
    if os.environ.get("WAVE_FAULT") == name:
        time.sleep(PAUSE_SECONDS)
