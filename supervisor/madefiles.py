"""What a sandboxed task makes that git runs, seen as it is made.

What a sandbox protects by a mount must exist as the command starts. What it makes of
the rest (a ``.git/commondir`` pointing git at a config of its own, a repository it
makes, a submodule's git dir, a nested ``.git``) is judged as it ends
(``worker.sandbox.Sources.move_made``); until then git outside read it: a background
command's ``commondir`` had a ``git status`` outside run its config's ``core.fsmonitor``
(a trial). This watches the directories where such things appear (inotify), as its tasks
run or linger, and has :class:`~wave_bash.supervisor.tasks.TaskManager` judge a task again
as soon as something that matters is made there. Where no inotify instance or watch can
be had (the user's limits, shared with their editors and with the commands themselves),
its tasks are judged again every :data:`POLL_SECONDS` instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable

from wave_bash.worker.inotify import IN_ISDIR, MADE, OVERFLOW, WRITTEN, NameWatch
from wave_bash.worker.sandbox import (
    GIT_DIR,
    GIT_DIR_WATCHED,
    MODULES,
    NESTED,
    WORKSPACE,
    open_plain,
)

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often tasks with a directory no watch covers are judged again."""
JUDGE_DELAY = 0.02
"""Events within this many seconds are judged together (what one command puts in place,
`mv a b c .`, judged whole)."""
JUDGE_INTERVAL = 0.25
"""Seconds between two judgements of the same tasks, at least (each may run git for up to
32 configs: a command making repositories in a loop kept the supervisor's loop busy)."""
WATCHED_PER_TASK = 1024
"""Directories watched for one task at most (a flood of submodules' directories): past
them, the task is judged every :data:`POLL_SECONDS`."""

Target = tuple[str, frozenset[str]]
"""What a directory is to a task (``worker.sandbox.watch_targets``) and its names."""


class MadeFiles:
    """The directories watched for each task, in one inotify instance."""

    def __init__(
        self, judge: Callable[[list[str]], None], instance: Callable[[], NameWatch] = NameWatch
    ) -> None:
        self.judge = judge
        """Called with the IDs of tasks to judge again (something was made)."""
        self._new_instance = instance
        """Where an inotify instance comes from (a test's fails: exhausting the user's
        instances for real would fail every other watcher of the machine meanwhile)."""
        self._watch: NameWatch | None = None
        self._warned = False
        self._targets: dict[str, dict[str, Target]] = {}
        """Directory → task ID → what it is to the task."""
        self._watches: dict[str, int] = {}
        """Directory → its watch."""
        self._directories: dict[int, str] = {}
        self._tasks: dict[str, set[str]] = {}
        """Task ID → its directories."""
        self._polled: set[str] = set()
        """Tasks with a directory no watch covers."""
        self._due: set[str] = set()
        self._judging: asyncio.TimerHandle | None = None
        self._judged_at = 0.0
        self._poller: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Take the inotify instance now, as the supervisor starts (a command that took
        every instance the user may have could otherwise keep it from this one)."""
        self._instance()

    def watch(
        self, task_id: str, targets: list[tuple[str, str, frozenset[str]]], *, judge: bool
    ) -> None:
        """Watch ``targets`` for the task until :meth:`forget`; ``judge``: judge it once
        soon (a re-adopted task: what it made while no supervisor watched)."""
        for directory, kind, names in targets:
            self._add(task_id, directory, kind, names)
        if judge:
            self._due.add(task_id)
            self._soon()

    def forget(self, task_id: str) -> None:
        """Stop watching for the task (it ended, with every process it left)."""
        self._polled.discard(task_id)
        self._due.discard(task_id)
        for directory in self._tasks.pop(task_id, set()):
            users = self._targets.get(directory, {})
            users.pop(task_id, None)
            if not users:
                self._targets.pop(directory, None)
                wd = self._watches.pop(directory, None)
                if wd is not None and self._watch is not None:
                    self._directories.pop(wd, None)
                    self._watch.remove(wd)

    def close(self) -> None:
        if self._judging is not None:
            self._judging.cancel()
        if self._poller is not None:
            self._poller.cancel()
        if self._watch is not None:
            asyncio.get_running_loop().remove_reader(self._watch.fd)
            self._watch.close()
            self._watch = None

    def _instance(self) -> NameWatch | None:
        if self._watch is None:
            try:
                self._watch = self._new_instance()
            except OSError as exc:  # (tried again: see _poll)
                if not self._warned:
                    self._warned = True
                    log.warning("no inotify instance (%s): sandboxed tasks are judged every "
                                "%gs while they run", exc, POLL_SECONDS)  # fmt: skip
                return None
            asyncio.get_running_loop().add_reader(self._watch.fd, self._read)
        return self._watch

    def _add(self, task_id: str, directory: str, kind: str, names: frozenset[str]) -> None:
        users = self._targets.setdefault(directory, {})
        if task_id in users:  # (the names of both)
            kind, names = users[task_id][0], users[task_id][1] | names
        users[task_id] = (kind, names)
        mine = self._tasks.setdefault(task_id, set())
        mine.add(directory)
        if directory in self._watches:
            return
        watch = self._instance()
        if watch is None or len(mine) > WATCHED_PER_TASK:
            self._polled.add(task_id)
            self._poll_soon()
            return
        fd = open_plain("/", directory)
        if fd is None:  # (gone, or a link: judged as the task ends)
            return
        try:  # (what git reads in a git dir may be written in place: `>> .git/config`)
            wd = watch.add(fd, MADE | (WRITTEN if kind in (GIT_DIR, MODULES) else 0))
        except OSError as exc:  # (the user's watch limit)
            log.warning("cannot watch %s for task %s (%s): judged every %gs", directory,
                        task_id, exc, POLL_SECONDS)  # fmt: skip
            self._polled.add(task_id)
            self._poll_soon()
            return
        finally:
            os.close(fd)
        self._watches[directory] = wd
        self._directories[wd] = directory

    def _read(self) -> None:
        assert self._watch is not None
        for wd, mask, name in self._watch.read():
            if wd == OVERFLOW:  # (events lost: every task is judged)
                self._due.update(self._tasks)
                continue
            directory = self._directories.get(wd)
            if directory is None:
                continue
            made = os.path.join(directory, name)
            for task_id, (kind, names) in list(self._targets.get(directory, {}).items()):
                if _matters(kind, names, name):
                    self._due.add(task_id)
                if mask & IN_ISDIR and (inner := _inner(kind, name)) is not None:
                    self._add(task_id, made, *inner)
                    self._due.add(task_id)  # (what was made in it before its watch)
        self._soon()

    def _soon(self) -> None:
        if self._due and self._judging is None:
            loop = asyncio.get_running_loop()
            wait = max(JUDGE_DELAY, self._judged_at + JUDGE_INTERVAL - loop.time())
            self._judging = loop.call_later(wait, self._judge)

    def _judge(self) -> None:
        self._judging = None
        self._judged_at = asyncio.get_running_loop().time()
        due, self._due = sorted(self._due), set()
        if due:
            self.judge(due)

    def _poll_soon(self) -> None:
        if self._poller is None:
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def _poll(self) -> None:
        """Judge the tasks no watch covers every :data:`POLL_SECONDS` while there are any;
        an instance had again takes them back (their directories watched anew)."""
        try:
            while self._polled:
                await asyncio.sleep(POLL_SECONDS)
                if self._watch is None and self._instance() is not None:
                    for task_id in list(self._polled):
                        targets = [(d, *self._targets[d][task_id]) for d in self._tasks[task_id]]
                        self.forget(task_id)
                        self.watch(task_id, targets, judge=True)
                    continue
                with contextlib.suppress(Exception):  # (logged by the judge)
                    self.judge(sorted(self._polled))
        finally:
            self._poller = None


def _matters(kind: str, names: frozenset[str], name: str) -> bool:
    """Whether ``name`` made in a directory of ``kind`` is judged."""
    if kind == WORKSPACE:
        return name in (".git", "HEAD")
    if kind == NESTED:
        return name == ".git"
    if kind == MODULES:
        return True
    return name in names


def _inner(kind: str, name: str) -> tuple[str, frozenset[str]] | None:
    """What a directory ``name`` made in a directory of ``kind`` is watched as, if at all."""
    if name == ".git" and kind in (WORKSPACE, NESTED):
        return GIT_DIR, GIT_DIR_WATCHED
    if kind == WORKSPACE:
        return NESTED, frozenset()
    if kind == MODULES or (kind == GIT_DIR and name == "modules"):
        return MODULES, frozenset()
    return None
