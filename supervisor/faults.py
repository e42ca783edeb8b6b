"""Fault injection for tests: ``WAVE_FAULT=<point>`` makes the supervisor kill itself there.

This is the one documented seam through which the fault-injection suite places a
supervisor crash at an exact step (between journal insert and spawn, after spawn, just
before an exit is recorded, ...). Unset in normal use; a no-op then.
"""

from __future__ import annotations

import os
import signal

POINTS = frozenset(
    {
        "before_serving",
        "after_insert",
        "after_spawn",
        "before_finish",
        "before_reply",
        "after_reply",
        "pruned_files",
    }
)


_CHOSEN = os.environ.get("WAVE_FAULT")
"""Read once: a supervisor's environment is set as it starts (read at every point, the
lookups were 7 % of the supervisor's samples in a profile of a stop of 1000 tasks)."""


def crash_point(name: str) -> None:
    """SIGKILL this process if ``WAVE_FAULT`` names ``name`` (a real, uncatchable crash)."""
    if name == _CHOSEN:
        os.kill(os.getpid(), signal.SIGKILL)
