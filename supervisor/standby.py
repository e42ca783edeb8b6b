"""A monitor started ahead of the next command, so that a command starts with one write to
a pipe instead of a process start (bash's exec and start-up: about a millisecond here; a
Python interpreter where only zsh exists).

A monitor is fixed at exec time by the caller's environment, the shells and the task's
files; the working directory, umask and command come later with its instructions. The
environment is the same from one call of an agent to the next, so after each start the
supervisor starts a standby for a command like it. A request that differs gets a monitor
of its own, and the standby is replaced. The standby holds a reserved task ID and an
empty log, and no journal row: nothing else ever sees it. When the supervisor goes away
its pipe closes and the standby exits, recording nothing; the empty log it leaves is
removed at the next start (:func:`remove_leftovers`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wave_bash.worker import Monitor, Shell, TaskFiles, reap_monitor, start_monitor

from .journal import Journal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MonitorKey:
    """What a monitor process is started with (and so cannot change afterwards)."""

    env: Mapping[str, str]
    shell: Shell
    monitor_bash: str | None
    separate_stderr: bool


class Standby:
    """At most one monitor waiting for the next command."""

    def __init__(
        self, tasks_dir: Path, release: Callable[[Monitor], None], subreaper: bool = False
    ) -> None:
        """``release`` lets a monitor go that will run no command; ``subreaper``: monitors
        become child subreapers (see :func:`start_monitor`)."""
        self.tasks_dir = tasks_dir
        self.subreaper = subreaper
        self._release = release
        self._monitor: Monitor | None = None
        self._key: MonitorKey | None = None

    @property
    def ready(self) -> bool:
        """Whether a standby waits."""
        return self._monitor is not None

    @property
    def reserved_id(self) -> str | None:
        """The task ID the standby will run under."""
        return self._monitor.task_id if self._monitor is not None else None

    def take(self, key: MonitorKey) -> Monitor | None:
        """The standby, if it was started for ``key`` and still waits; otherwise ``None``
        (and it is discarded)."""
        monitor, self._monitor = self._monitor, None
        if monitor is None:
            return None
        if self._key != key:
            self._release(monitor)
            return None
        if reap_monitor(monitor.pid):  # killed meanwhile (now reaped)
            monitor.cancel()
            return None
        return monitor

    def prepare(self, key: MonitorKey, task_id: str, joins: Sequence[str] = ()) -> None:
        """Start a standby for the next command like ``key`` (failures only cost speed),
        its job in the cgroups ``joins`` already."""
        if self._monitor is not None:
            return
        files = TaskFiles.for_task(self.tasks_dir, task_id, key.separate_stderr)
        try:
            self._monitor = start_monitor(
                task_id, key.env, key.shell, key.monitor_bash, files, joins=joins,
                subreaper=self.subreaper,
            )  # fmt: skip
        except (OSError, ValueError) as exc:
            log.debug("no standby monitor: %s", exc)
            return
        self._key = key

    def discard(self) -> None:
        """Let the standby go (the supervisor stops)."""
        monitor, self._monitor = self._monitor, None
        if monitor is not None:
            self._release(monitor)


def remove_leftovers(journal: Journal, tasks_dir: Path) -> int:
    """Remove what standbys of a killed supervisor left (an empty log and the exit
    record's placeholder); returns how many standbys.

    A task's ``.json`` record is written before its journal row, and a standby has
    neither: an empty log with neither belongs to no task.
    """
    removed = 0
    for task_id in list(TaskFiles.logged_ids(tasks_dir)):
        files = TaskFiles.for_task(tasks_dir, task_id, separate_stderr=True)
        if files.meta.exists() or journal.exists(task_id):
            continue
        try:
            if files.log.stat().st_size == 0:
                files.remove_unused()
                removed += 1
        except OSError:
            continue
    return removed
