"""Process identity that survives PID reuse: pid + start time + boot id (DESIGN "Identity").

The boot id can be replaced for tests through one documented seam, the environment
variable ``WAVE_BOOT_ID`` of the supervisor process (used to simulate a host restart).
"""

from __future__ import annotations

import os
import uuid
from functools import cache

import psutil

from wave_bash.worker import process_tag

BOOT_ID_OVERRIDE = "WAVE_BOOT_ID"


@cache
def boot_id() -> str:
    """This boot's id (Linux ``/proc/sys/kernel/random/boot_id``), overridable for tests."""
    override = os.environ.get(BOOT_ID_OVERRIDE)
    if override:
        return override
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return f"boot-{int(psutil.boot_time())}"


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started: clock ticks since boot on Linux (immune to wall-clock jumps)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        # The command name (field 2) may contain spaces and parentheses: split after it.
        return int(data[data.rindex(b")") + 2 :].split()[19])
    except (FileNotFoundError, ProcessLookupError):  # (ESRCH: it exited as it was read)
        return None
    except OSError:
        if os.path.isdir("/proc/self"):  # psutil reads the same file, and says ms since 1970
            raise
    try:
        return int(psutil.Process(pid).create_time() * 1000)
    except psutil.Error:
        return None


def same_process(
    pid: int, ticks: int | None, recorded_boot: str | None, task_id: str | None = None
) -> bool:
    """True only if ``pid`` is alive and is the process recorded (never pid alone).

    Start ticks have a 10 ms resolution, so where environments are readable (Linux) the
    process must also carry the task's ``WAVE_TASK_ID`` tag: a reused pid started in the
    same tick is still told apart.
    """
    if ticks is None or recorded_boot != boot_id() or start_ticks(pid) != ticks:
        return False
    if task_id is not None and os.path.isdir("/proc/self"):
        return process_tag(pid) == task_id
    return True


def new_task_id() -> str:
    """A short random ID, ``[a-z0-9]{8}`` (uniqueness is checked against the journal)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    n = uuid.uuid4().int
    return "".join(digits[(n >> (6 * i)) % 36] for i in range(8))
