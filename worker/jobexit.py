"""A job's exit status read from the kernel as the job exits, before its monitor wakes.

Only a process's parent can wait for it, and a task's job is its monitor's child: the
monitor is the one that records the status. But a pidfd polls readable for anyone who
holds it as its process exits; until the parent reaps it, the zombie's ``/proc`` entry
shows its status, and from Linux 6.15 the kernel keeps it with the pidfd after the reap
(``PIDFD_GET_INFO`` with ``PIDFD_INFO_EXIT``, filled at reap time). A caller waiting for
a task then has its result without
waiting for the monitor's bash to wake, write the record and exit (about 1 ms here, two
process wake-ups). The monitor still records the same status, durably: nothing about
crash recovery changes.

Only a job that *exited* is read this way: one killed by a signal may have died before it
took its instructions (then its monitor hands them to another job), so its monitor's
record stays the answer.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct

_INFO_SIZE = 72
"""``struct pidfd_info`` up to ``exit_code`` and the fields after it (``PIDFD_INFO_SIZE_VER1``)."""
_GET_INFO = (3 << 30) | (_INFO_SIZE << 16) | (0xFF << 8) | 11
"""``PIDFD_GET_INFO``: ``_IOWR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info)``."""
_INFO_PID, _INFO_CGROUP_ID, _INFO_EXIT = 1 << 0, 1 << 2, 1 << 3
_CGROUP_ID_AT, _PPID_AT, _EXIT_CODE_AT = 8, 24, 60
_STAT_EXIT_CODE = 49
"""``exit_code``, field 52 of ``/proc/PID/stat``, counted from the state (field 3)."""

_supported = hasattr(os, "pidfd_open")
"""False once this kernel has shown it has no ``PIDFD_GET_INFO`` (before Linux 6.13)."""


def _info(pidfd: int, mask: int) -> tuple[int, bytearray] | None:
    """``PIDFD_GET_INFO``: the mask of what it told, and the struct; None once the
    process has been reaped with nothing kept (ESRCH), or with no support here."""
    global _supported
    buffer = bytearray(struct.pack("=Q", mask) + bytes(_INFO_SIZE - 8))
    try:
        fcntl.ioctl(pidfd, _GET_INFO, buffer)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            _supported = False
        return None
    return struct.unpack_from("=Q", buffer)[0], buffer


def open_job(monitor_pid: int) -> tuple[int, int] | None:
    """The pid of, and a pidfd on, the one child of a monitor this process started and
    has not reaped (so its pid is the monitor's own), or None: no support here, no child
    (the job not forked yet, or ended), or more than one. That child is the job, or a command
    substitution of the monitor's start: :func:`exited_status` tells them apart."""
    if not _supported:
        return None
    try:
        with open(f"/proc/{monitor_pid}/task/{monitor_pid}/children", "rb") as fh:
            children = fh.read().split()
        pid = int(children[0]) if len(children) == 1 else 0
        pidfd = os.pidfd_open(pid) if pid else None
    except (OSError, ValueError):
        return None
    if pidfd is None:
        return None
    # Checked through the pidfd, which holds the process: a pid reused since the read is
    # another process's, with another parent.
    info = _info(pidfd, _INFO_PID | _INFO_EXIT)
    if info is None or info[0] & _INFO_EXIT or _field(info[1], _PPID_AT) != monitor_pid:
        os.close(pidfd)
        return None
    return pid, pidfd


def _field(buffer: bytearray, offset: int) -> int:
    return int(struct.unpack_from("=I", buffer, offset)[0])


def _zombie_status(pid: int) -> int | None:
    """The wait status in ``/proc/PID/stat`` of a process that has exited and is not
    reaped yet (a zombie), else None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rpartition(b")")[2].split()
    except OSError:
        return None
    if len(fields) <= _STAT_EXIT_CODE or fields[0] != b"Z":
        return None
    return int(fields[_STAT_EXIT_CODE])


def exited_status(pidfd: int, pid: int, cgroup_id: int) -> int | None:
    """Once ``pidfd`` (:func:`open_job`, on ``pid``) polls readable: the code its process
    gave to ``exit`` when it was the task's job, which ended in the task's cgroup
    (``cgroup_id``, its directory's inode number; the job joins it before it takes its
    instructions); None when it was killed by a signal, was not the job, or its status
    cannot be known here. The monitor records the same code.

    The kernel keeps the status with the pidfd once the monitor has reaped the job (Linux
    6.15); until then the job is a zombie whose ``/proc`` entry shows it. That entry is
    believed only if the pidfd still shows no reaping after it was read (the pid is then
    still the job's).
    """
    info = _info(pidfd, _INFO_CGROUP_ID | _INFO_EXIT)
    if info is not None and not info[0] & _INFO_EXIT:
        zombie = _zombie_status(pid)
        info = _info(pidfd, _INFO_CGROUP_ID | _INFO_EXIT)
        if info is not None and not info[0] & _INFO_EXIT:
            if zombie is None:
                return None
            struct.pack_into("=i", info[1], _EXIT_CODE_AT, zombie)
    if info is None or struct.unpack_from("=Q", info[1], _CGROUP_ID_AT)[0] != cgroup_id:
        return None
    status = struct.unpack_from("=i", info[1], _EXIT_CODE_AT)[0]
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
