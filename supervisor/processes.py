"""Processes the supervisor watches, its monitors and what they leave: whether one still
runs, is on its way out or stopped, which of its children run, and a call in the event
loop as one exits (a pidfd; without one, a waiter thread for a child of ours or one
polling thread for the rest).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path

import psutil

from wave_bash.worker import Monitor, process_tag, reap_monitor, wait_monitor_exited
from wave_bash.worker.files import read_small_file

from .identity import start_ticks

log = logging.getLogger(__name__)


def runs(pid: int, ticks: int) -> bool:
    """Whether the process recorded with these start ticks still runs (a zombie left for
    its new parent to reap does not)."""
    try:
        return start_ticks(pid) == ticks and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


PF_EXITING = 0x4
"""The kernel's flag of a process in its exit (``/proc/PID/stat``'s ninth field)."""


def _stat_fields(pid: int) -> list[bytes] | None:
    """``/proc/PID/stat``'s fields from the state on (None: the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields or None


def exiting(pid: int) -> bool:
    """Whether a process is on its way out: a sandbox's own init, still ending as its
    command's end is reported (bubblewrap's outer process leaves first), is not left
    running."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 7:
        return True  # gone already
    return fields[0] in (b"Z", b"X") or bool(int(fields[6]) & PF_EXITING)


def stopped(pid: int) -> bool:
    """Whether a process is stopped (``kill -STOP $$`` of a command, whose ``$$`` is its
    monitor's pid, F1c)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] == b"T"


def no_child_running(pid: int) -> bool:
    """Whether none of a process's children runs: a stopped monitor whose job has ended,
    reaped as the stop came, or exited since (unreaped: the monitor is stopped)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as fh:
            children = fh.read(4096).split()
    except OSError:
        return False
    return all((_stat_fields(int(child)) or [b"Z"])[0] == b"Z" for child in children)


def children_running(pid: int) -> dict[int, int]:
    """A process's children that run (not zombies), each with its start ticks; never this
    supervisor (a command may have started it: a daemon, reparented to its monitor)."""
    found: dict[int, int] = {}
    for _ in range(CHILDREN_LOOKS):  # (one listed that exited as it was looked at handed
        # its own children to this one after the list was read: a chain that hops on was
        # taken for none under a CI run's load; the list is read again)
        try:
            with open(f"/proc/{pid}/task/{pid}/children", "rb") as fh:
                words = fh.read(LEFT_LIST_LIMIT).split()
        except OSError:
            return {}
        for word in words:
            child = int(word)
            fields = _stat_fields(child)
            running = fields is not None and fields[0] not in (b"Z", b"X")
            ticks = start_ticks(child) if running else None
            if ticks is not None:
                found[child] = ticks
        found.pop(os.getpid(), None)  # (a review)
        if found or not words:
            return found
    return found


CHILDREN_LOOKS = 3
"""Reads of a process's children list while every child it names has just exited."""


LEFT_LIST_LIMIT = 64 * 1024
"""Most bytes of a leftovers list read (a monitor writes a line of pids)."""


LEFT_LIST_PIDS = 256
"""Most pids of a leftovers list looked at."""


def listed_leftovers(
    path: Path, task_id: str, started_at: float, monitors: Collection[int], own: int | None
) -> dict[int, int]:
    """The processes a monitor (``own``) listed as left behind as its command ended, each
    with its start ticks. The list is the task's own file, which its command could
    write: a pid counts only if it is one of ours, started after the task did and before
    the list was written (its pid reused since, while no supervisor looked, is another
    process), carries no other task's tag, and is neither pid 1, the supervisor, an
    ancestor of it, anything it started other than through ``own``, nor anything under
    another task's monitor. (``own`` may not have exited yet: its task ends as it records
    the status.) It must be ``own``'s descendant, or an orphan whose parent is the one
    that adopts ``own``'s orphans once it has exited (pid 1 or one of the supervisor's
    ancestors, a subreaper): a process another session of the user started after the
    task, whose parent lives elsewhere, is none of the task's, whatever the list says.
    The list stays with the task's files: a journal rebuilt from them reads it again."""
    me = os.getpid()
    monitors = set(monitors) - {own}
    found: dict[int, int] = {}
    try:
        ancestors = {p.pid for p in psutil.Process(me).parents()}
        listed_at = os.stat(path, follow_symlinks=False).st_ctime  # (its command can set
        # the time it was changed, `touch -d`, not the time of that change)
        text = read_small_file(path, LEFT_LIST_LIMIT).decode("ascii", "replace")
        words = dict.fromkeys(text.split()[:LEFT_LIST_PIDS])
        for word in words:
            if not (word.isascii() and word.isdigit()) or len(word) > 10:
                continue
            pid = int(word)
            if pid <= 1 or pid == me or pid in monitors or pid in ancestors:
                continue
            try:
                proc = psutil.Process(pid)
                parents = [p.pid for p in proc.parents()]
                if own in parents:
                    lineage = set(parents[: parents.index(own)])
                elif parents and (parents[0] == 1 or parents[0] in ancestors):
                    lineage = set(parents)  # (orphaned as its monitor exited)
                else:
                    continue
                if (
                    proc.uids().real != os.getuid()
                    or me in lineage
                    or lineage & monitors
                    or not started_at - 1 <= proc.create_time() <= listed_at
                    or process_tag(pid) not in (None, task_id)
                ):
                    continue
            except (psutil.Error, AttributeError, OSError):
                continue
            ticks = start_ticks(pid)
            if ticks is not None:
                found[pid] = ticks
    except FileNotFoundError:
        pass  # (nothing was left)
    except Exception:  # a bad list never keeps a task from ending
        log.exception("ignoring the leftovers list %s", path)
        found = {}
    return found


def on_exit(pid: int, child: bool, callback: Callable[[], object]) -> None:
    """Call ``callback`` in the running loop once process ``pid`` has exited.

    A pidfd in the event loop (no thread per child); without pidfds (old kernel, macOS) one
    waiter thread, which waits for a ``child`` of this process with waitpid. Reaping a
    child is the callback's business (see :func:`worker.reap_monitor`).
    """
    loop = asyncio.get_running_loop()
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        loop.call_soon(callback)
        return
    except (AttributeError, OSError):
        pidfd = -1
    if pidfd >= _pidfd_ceiling():  # (the rest is for connections, files, /proc reads)
        os.close(pidfd)
        pidfd = -1
    if pidfd < 0 and child:
        threading.Thread(target=_wait_thread, args=(pid, loop, callback), daemon=True).start()
        return
    if pidfd < 0:
        EXIT_POLLER.watch(pid, loop, callback)
        return

    def on_readable() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        callback()

    loop.add_reader(pidfd, on_readable)


def _pidfd_ceiling() -> int:
    """Descriptors at or above this are not kept as pidfds: three quarters of the limit,
    so that tasks beyond it (a supervisor started under a lower limit than the one
    before it, re-adopting them all) are watched without one (:class:`ExitPoller`), and
    the descriptors left still open the journal, ``/proc`` and connections (a review: a
    replacement supervisor under `ulimit -n 48` with 60 live tasks could not start)."""
    try:
        import resource
    except ImportError:  # Windows
        return 1 << 30
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return (1 << 30) if soft == resource.RLIM_INFINITY else soft * 3 // 4


def reap_soon(pid: int) -> None:
    """Reap a monitor of ours that has recorded its status: now if it has exited (as
    most have by then when many tasks end at once), else as it exits."""
    if reap_monitor(pid) is None:
        on_exit(pid, True, lambda: reap_monitor(pid))


def release(monitor: Monitor) -> None:
    """Let a monitor go that will run no command (its files removed); it exits on its
    closed pipe and is reaped then."""
    monitor.cancel()
    on_exit(monitor.pid, True, lambda: reap_monitor(monitor.pid))


def _wait_thread(pid: int, loop: asyncio.AbstractEventLoop, done: Callable[[], object]) -> None:
    wait_monitor_exited(pid)  # not reaped: _finish wants its status
    loop.call_soon_threadsafe(done)


class ExitPoller:
    """Tells when processes that are not our children exit, where no pidfd watches them
    (old kernels, macOS, past the pidfd ceiling): one thread that looks every
    ``INTERVAL`` seconds, opening nothing (a thread each, polling ``/proc``, ran a
    supervisor with few descriptors out of them: a review)."""

    INTERVAL = 0.05

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, list[tuple[asyncio.AbstractEventLoop, Callable[[], object]]]] = {}
        self._running = False

    def watch(self, pid: int, loop: asyncio.AbstractEventLoop, done: Callable[[], object]) -> None:
        """Call ``done`` in ``loop`` once ``pid`` has exited."""
        with self._lock:
            self._watched.setdefault(pid, []).append((loop, done))
            if not self._running:
                self._running = True
                threading.Thread(target=self._poll, name="exits", daemon=True).start()

    def _poll(self) -> None:
        while True:
            time.sleep(self.INTERVAL)
            with self._lock:
                gone = [pid for pid in self._watched if not _exists(pid)]
                calls = [call for pid in gone for call in self._watched.pop(pid)]
                done_watching = not self._watched
                if done_watching:  # (the next watch starts a thread again)
                    self._running = False
            for loop, done in calls:
                with contextlib.suppress(RuntimeError):  # (its loop closed)
                    loop.call_soon_threadsafe(done)
            if done_watching:
                return


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # (another user's: ours is gone, its pid reused)
        return False
    return True


EXIT_POLLER = ExitPoller()
