"""Protected files a sandboxed task makes while it runs, seen as they are made.

A file the sandbox protects that was missing as the command started (a ``.git/commondir``,
a ``config.worktree``) cannot be held read-only by a mount: what the command makes of it
is moved aside as it ends (``worker.sandbox.Sources.move_made``). Until then git outside
read it: a background command's ``.git/commondir`` pointing at a config of its own ran
that config's ``core.fsmonitor`` at the next ``git status`` outside (a trial). This
watches the directories of those files while their tasks run (or linger), and tells
:class:`~wave_bash.supervisor.tasks.TaskManager` of one made at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable

from wave_bash.worker.inotify import OVERFLOW, NameWatch
from wave_bash.worker.sandbox import open_plain

log = logging.getLogger(__name__)


class MadeFiles:
    """The watched paths of each task, and one inotify instance for all of them."""

    def __init__(self, on_made: Callable[[str, str], None]) -> None:
        self.on_made = on_made
        """Called with (task ID, path) for a watched path that was made."""
        self._watch: NameWatch | None = None
        self._warned = False
        self._paths: dict[str, list[tuple[int, str]]] = {}
        """Task ID → (watch, path) of each path watched for it."""
        self._names: dict[int, dict[str, set[str]]] = {}
        """Watch → name in its directory → the tasks watching for it."""

    def watch(self, task_id: str, paths: Iterable[str]) -> None:
        """Tell when any of ``paths`` (absolute, each missing as the task started) is
        made, by the task or anyone, until :meth:`forget`; one there already is told at
        once (made before the watch began)."""
        watch = self._instance()
        if watch is None:
            return  # (no inotify: moved aside as the task ends, as before)
        for path in paths:
            directory, name = os.path.split(path)
            fd = open_plain("/", directory)
            if fd is None:  # (no such directory, or a link: judged as the task ends)
                continue
            try:
                wd = watch.add(fd)
            except OSError as exc:  # (the watch limit): judged as the task ends
                log.warning("cannot watch %s for task %s: %s", directory, task_id, exc)
                continue
            finally:
                os.close(fd)
            self._paths.setdefault(task_id, []).append((wd, path))
            self._names.setdefault(wd, {}).setdefault(name, set()).add(task_id)
        for _, path in self._paths.get(task_id, []):
            if os.path.lexists(path):
                self.on_made(task_id, path)

    def forget(self, task_id: str) -> None:
        """Stop watching for the task (it ended, with every process it left)."""
        for wd, path in self._paths.pop(task_id, []):
            names = self._names.get(wd, {})
            name = os.path.basename(path)
            names.get(name, set()).discard(task_id)
            if not names.get(name):
                names.pop(name, None)
            if not names:
                self._names.pop(wd, None)
                if self._watch is not None:
                    self._watch.remove(wd)

    def close(self) -> None:
        if self._watch is not None:
            asyncio.get_running_loop().remove_reader(self._watch.fd)
            self._watch.close()
            self._watch = None

    def _instance(self) -> NameWatch | None:
        if self._watch is None:
            try:
                self._watch = NameWatch()
            except OSError as exc:  # (tried again for the next task: the limit of instances
                if not self._warned:  # is the user's, shared with their editors)
                    self._warned = True
                    log.warning("protected files sandboxed tasks make are judged as they end: %s",
                                exc)  # fmt: skip
                return None
            asyncio.get_running_loop().add_reader(self._watch.fd, self._read)
        return self._watch

    def _read(self) -> None:
        assert self._watch is not None
        made: dict[tuple[str, str], None] = {}
        for wd, name in self._watch.read():
            if wd == OVERFLOW:  # (events lost: every watched path is looked at)
                for task_id, watched in self._paths.items():
                    for _, path in watched:
                        if os.path.lexists(path):
                            made[(task_id, path)] = None
                continue
            for task_id in self._names.get(wd, {}).get(name, ()):
                for watched_wd, path in self._paths[task_id]:
                    if watched_wd == wd and os.path.basename(path) == name:
                        made[(task_id, path)] = None
        for task_id, path in made:
            try:
                self.on_made(task_id, path)
            except Exception:  # one failure must not keep the others unjudged
                log.exception("judging %s, made by task %s", path, task_id)
