"""Pointers a sandboxed task makes in an existing git dir, seen as they are made.

What a sandbox protects by a mount must exist as the command starts. One of an existing
repository's pointers it makes (a ``.git/commondir`` naming a git dir of its own,
``worker.planted.POINTERS``) was judged as it ended (``worker.planted.move_made``), and until
then git outside read it: a background command's ``commondir`` had a ``git status``
outside run its config's ``core.fsmonitor`` (a trial). This watches those git dirs
(inotify) while their tasks run or linger, and has
:class:`~wave_bash.supervisor.tasks.TaskManager` judge a task again as soon as one is made
or written. Where no inotify instance or watch can be had (the user's limits, shared with
their editors and with the commands themselves), its tasks are judged again every
:data:`POLL_SECONDS` instead. (A repository a command makes anew is judged as it ends:
watching where one may appear, a review found, missed those made by a rename, in a
directory made again, or past the judgement's budgets, and stopped `git worktree add`.)
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from wave_bash.worker.inotify import IN_IGNORED, MADE, OVERFLOW, WRITTEN, NameWatch
from wave_bash.worker.planted import open_plain

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often tasks with a directory no watch covers are judged again."""
JUDGE_DELAY = 0.02
"""Events within this many seconds are judged together."""
JUDGE_INTERVAL = 0.25
"""Seconds between two judgements, at least: each is a task's whole judgement (it may run
git for up to 32 configs), and a command may write a pointer in a loop."""


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
        self._targets: dict[str, dict[str, frozenset[str]]] = {}
        """Directory → task ID → the names in it watched for the task."""
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
        self._instance(warn=False)

    def watch(
        self, task_id: str, targets: list[tuple[str, frozenset[str]]], *, judge: bool
    ) -> None:
        """Watch ``targets`` (directory, names: ``worker.planted.watch_targets``) for the
        task until :meth:`forget`; ``judge``: judge it once soon (a re-adopted task: what
        it made while no supervisor watched)."""
        for directory, names in targets:
            self._add(task_id, directory, names)
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

    def _instance(self, warn: bool = True) -> NameWatch | None:
        if self._watch is None:
            try:
                self._watch = self._new_instance()
            except OSError as exc:  # (tried again: see _poll)
                if warn and not self._warned:
                    self._warned = True
                    log.warning("no inotify instance (%s): sandboxed tasks are judged every "
                                "%gs while they run", exc, POLL_SECONDS)  # fmt: skip
                return None
            asyncio.get_running_loop().add_reader(self._watch.fd, self._read)
        return self._watch

    def _add(self, task_id: str, directory: str, names: frozenset[str]) -> None:
        users = self._targets.setdefault(directory, {})
        users[task_id] = users.get(task_id, frozenset()) | names
        self._tasks.setdefault(task_id, set()).add(directory)
        if directory in self._watches:
            return
        watch = self._instance()
        if watch is None:
            self._polled.add(task_id)
            self._poll_soon()
            return
        fd = open_plain("/", directory)
        if fd is None:  # (gone, or a link: judged as the task ends)
            return
        try:  # (made empty, then written in place: `>> .git/config.worktree`)
            wd = watch.add(fd, MADE | WRITTEN)
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
            if mask & IN_IGNORED:  # (the kernel dropped it: its directory is gone)
                del self._directories[wd]
                self._watches.pop(directory, None)
                continue
            for task_id, names in self._targets.get(directory, {}).items():
                if name in names:
                    self._due.add(task_id)
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
                        targets = [(d, self._targets[d][task_id]) for d in self._tasks[task_id]]
                        self.forget(task_id)
                        self.watch(task_id, targets, judge=True)
                    continue
                try:
                    self.judge(sorted(self._polled))
                except Exception:  # (the next round tries again)
                    log.exception("judging sandboxed tasks no watch covers")
        finally:
            self._poller = None
