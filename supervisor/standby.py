"""A monitor started ahead of the next command, so that a command starts with one write to
a pipe instead of a process start (bash's exec and start-up: about a millisecond here; a
Python interpreter where only zsh exists).

A monitor is fixed at exec time by the caller's environment, the shells and the task's
files; the working directory, umask and command come later with its instructions. The
environment is the same from one call of an agent to the next, so once a reply has gone
out (to any request) the supervisor starts standbys for commands like the last one (two
when that one found one, so that a command sent at once after it finds one ready). A
request that differs gets a monitor of its own, and the standbys are replaced. A standby
holds a reserved task ID, an empty log and its exit record's placeholder (no task
record), and no journal row: nothing else ever sees it. When the supervisor goes away
its pipe closes and the standby exits, recording nothing; the files it leaves are removed
at the next start (:func:`remove_leftovers`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wave_bash.worker import (
    Monitor,
    Shell,
    TaskFiles,
    read_exit_record,
    reap_monitor,
    start_monitor,
)

from .journal import Journal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorKey:
    """What a monitor process is started with (and so cannot change afterwards)."""

    env: Mapping[str, str]
    shell: Shell
    monitor_bash: str | None
    separate_stderr: bool


STANDBY_DEPTH = 2
"""Monitors kept waiting at most. Standbys are started once a reply has gone out (see
``TaskManager.refill_standby``), and a foreground command's reply goes out as it ends:
the second is for another caller's command sent meanwhile."""


class Standby:
    """Monitors waiting for the next commands, all started for one :class:`MonitorKey`."""

    def __init__(
        self, tasks_dir: Path, release: Callable[[Monitor, bool], None], subreaper: bool = False
    ) -> None:
        """``release`` lets a monitor go that will run no command (``True``: reaped
        already); ``subreaper``: monitors become child subreapers (see
        :func:`start_monitor`)."""
        self.tasks_dir = tasks_dir
        self.subreaper = subreaper
        self._release = release
        self._monitors: list[Monitor] = []
        """Oldest first (the readiest)."""
        self._key: MonitorKey | None = None
        self._closed = False

    def count(self, key: MonitorKey) -> int:
        """How many standbys for ``key`` wait."""
        return len(self._monitors) if self._key == key else 0

    def drop_dead(self) -> bool:
        """Reap the standbys that ended meanwhile and let them go, with their cgroups;
        returns whether one ended on its own, with a status (not killed): its bash
        cannot run in this environment (a broken library, say), and nor would another."""
        failed = False
        for monitor in list(self._monitors):
            ended = reap_monitor(monitor.pid)
            if ended:
                self._monitors.remove(monitor)
                self._release(monitor, True)
                failed = failed or ended.code is not None
        return failed

    def reserved(self, task_id: str) -> bool:
        """Whether a standby will run under that task ID."""
        return any(m.task_id == task_id for m in self._monitors)

    def take(self, key: MonitorKey) -> Monitor | None:
        """The oldest standby, if they were started for ``key``; otherwise ``None`` (and
        they are all let go). One that ended meanwhile is reaped and skipped; one that
        could not exec bash is let go with the rest (the command gets a monitor of its
        own, whose start says what is wrong)."""
        if self._key != key:
            self.discard()
            return None
        self.drop_dead()
        if not self._monitors:
            return None
        monitor = self._monitors.pop(0)
        failure = monitor.exec_failure()
        if failure is not None:  # (its bash went meanwhile): the command starts its own,
            log.warning("a standby monitor could not start: %s", failure)  # which says why
            self._release(monitor, False)
            self.discard()
            return None
        if not os.path.exists(monitor.files.exit):  # (its files removed with `tasks/`, made
            log.warning("the standby monitors' files are gone: let go")  # again: a review)
            self._release(monitor, False)
            self.discard()
            return None
        return monitor

    def start(self, key: MonitorKey, task_id: str, joins: Sequence[str] = ()) -> None:
        """Start a standby for the next command like ``key``, its job in the cgroups
        ``joins`` already; standbys for another key are let go.

        Raises:
            OSError, ValueError: it could not start, or the supervisor stops (which only
            costs speed).
        """
        if self._closed:
            raise ValueError("the supervisor stops: no standby starts")
        if self._key != key:
            self.discard()
            self._key = key
        files = TaskFiles.for_task(self.tasks_dir, task_id, key.separate_stderr)
        self._monitors.append(
            start_monitor(
                task_id, key.env, key.shell, key.monitor_bash, files, joins=joins,
                subreaper=self.subreaper, ahead=True,
            )
        )  # fmt: skip

    def discard(self) -> None:
        """Let every standby go (another environment came, or the supervisor stops)."""
        monitors, self._monitors = self._monitors, []
        for monitor in monitors:
            self._release(monitor, False)

    def close(self) -> None:
        """The supervisor stops: every standby goes, and none starts after."""
        self._closed = True
        self.discard()


def remove_leftovers(journal: Journal, tasks_dir: Path) -> int:
    """Remove what standbys of a killed supervisor left (an empty log, the exit record's
    placeholder); returns how many standbys. Their log is created first
    (:func:`worker.start_monitor`): whatever a standby left, it left a log.

    A task's record is written in its exit record before its journal row, and a
    standby's holds none, with no row: an empty log with neither belongs to no task.
    """
    removed = 0
    for task_id in list(TaskFiles.logged_ids(tasks_dir)):
        if journal.exists(task_id):  # (most are: no file read for them at each start)
            continue
        files = TaskFiles.for_task(tasks_dir, task_id, separate_stderr=True)
        if read_exit_record(files.exit).record is not None or _nonempty(files.meta):
            continue
        try:
            if files.log.stat().st_size == 0:
                files.remove_unused()
                removed += 1
        except OSError:
            continue
    return removed


def _nonempty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False
