"""Bounded growth and idleness: log cap, pruning of old tasks, WAL checkpoints, idle exit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wave_bash.api.states import EndReason
from wave_bash.worker.tail import file_size

from .context import Context
from .faults import crash_point
from .journal import Journal, TaskRow, storage_problem
from .tasks import SESSION_TEMPS, session_temp_dir

log = logging.getLogger(__name__)

HOUSEKEEPING_SECONDS = 1.0
"""How often log sizes and idleness are looked at."""

GC_SECONDS = 3600.0
"""How often finished tasks past the retention age are pruned (serve() also does at start)."""


async def prune(ctx: Context, older_than: float, notices_kept: float | None = None) -> list[str]:
    """Delete finished tasks that ended more than ``older_than`` seconds ago, with their
    files, and checkpoint the WAL; then the sandbox ``/tmp`` of each session that has no
    task left. Running tasks are never touched, nor an ended one whose processes still
    run (TaskStop stops them), nor one whose caller's answer is being made
    (``TaskManager.answering_for``), nor a task whose notice is pending and that ended
    less than ``notices_kept`` seconds ago (default: ``older_than``); returns the IDs
    deleted.

    The files go in a thread (a session's ``/tmp`` can hold a ``node_modules``, and the
    supervisor answers nothing while its loop waits), before the rows, which are marked
    first: a supervisor that stops meanwhile leaves marked rows, which the next prune
    (at the next start) takes whatever their age, never files no row names. One prune at
    a time."""
    journal, tasks_dir = ctx.journal, ctx.layout.tasks
    async with ctx.pruning:
        now = time.time()
        kept = older_than if notices_kept is None else max(notices_kept, older_than)
        chosen = [  # (an ended task whose processes run on stays stoppable: TR4)
            task_id
            for task_id in journal.prunable(now - older_than, now - kept)
            if not ctx.tasks.leftover_count(task_id) and task_id not in ctx.tasks.answering
        ]
        if chosen:
            journal.mark_pruning(chosen)
            await in_thread(remove_task_files, tasks_dir, set(chosen))
            crash_point("pruned_files")
        removed = journal.delete_tasks(chosen)
        journal.checkpoint()
        if removed:
            log.info("pruned %d finished task(s) older than %gs", len(removed), older_than)
        trees = set_aside_session_temps(journal, tasks_dir.parent, older_than)
        if trees:
            await in_thread(remove_trees, trees)
        return removed


def prune_in_background(ctx: Context) -> None:
    """:func:`prune` by the retention, beside the requests (at start, hourly)."""
    task = asyncio.get_running_loop().create_task(prune(ctx, ctx.settings.retention))
    ctx.background.add(task)
    task.add_done_callback(_prune_done(ctx))


def _prune_done(ctx: Context) -> Callable[[asyncio.Task[list[str]]], None]:
    def done(task: asyncio.Task[list[str]]) -> None:
        ctx.background.discard(task)
        if task.cancelled() or (exc := task.exception()) is None:
            return
        problem = storage_problem(exc)
        if problem is not None:  # (a full disk, a locked journal: tried again next hour)
            log.warning("prune put off: %s", problem)
        else:
            log.error("prune failed", exc_info=exc)

    return done


async def in_thread(work: Callable[..., None], *args: Any) -> None:
    """Run ``work`` in a daemon thread and wait for it: a supervisor that stops does not
    wait for it (what it leaves, the next prune takes)."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()

    def report(error: BaseException | None) -> None:
        if finished.done():  # (the waiter was cancelled: the supervisor stops)
            return
        if error is None:
            finished.set_result(None)
        else:
            finished.set_exception(error)

    def run() -> None:
        error: BaseException | None = None
        try:
            work(*args)
        except BaseException as exc:  # (handed to the waiter)
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(report, error)

    threading.Thread(target=run, name="prune", daemon=True).start()
    await finished


def remove_task_files(tasks_dir: Path, task_ids: set[str]) -> None:
    """Remove every file of these tasks: one pass over the directory (thousands of
    tasks may go at once, among tens of thousands of files)."""
    try:
        entries = list(os.scandir(tasks_dir))
    except OSError as exc:
        log.warning("cannot list %s to prune: %s", tasks_dir, exc)
        return
    for entry in entries:
        if entry.name.split(".", 1)[0] in task_ids:
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                pass
            except OSError as exc:  # (a directory someone put there: theirs, left alone)
                log.warning("cannot remove %s as its task is pruned: %s", entry.path, exc)


def remove_trees(trees: list[str]) -> None:
    """Remove sandbox ``/tmp`` directories put aside (:func:`set_aside_session_temps`)."""
    for tree in trees:
        try:
            _remove_tree(tree)
        except (OSError, RecursionError) as exc:  # never a reason for the supervisor to fail
            log.warning("could not remove the sandbox /tmp %s: %s", tree, exc)


SET_ASIDE = ".removing-"
"""The name prefix of a sandbox ``/tmp`` put aside for removal."""


def set_aside_session_temps(journal: Journal, state_dir: Path, older_than: float) -> list[str]:
    """Put aside (rename) the sandbox ``/tmp`` of sessions with no task in the journal
    any more and nothing changed in it for ``older_than`` seconds, so that a new command
    of the session gets a new one; returns the directories to remove, with those put
    aside before and not removed yet (anything else of that name is removed here).

    No process uses such a directory: a session with a running or lingering task has
    that task in the journal.
    """
    parent = state_dir / SESSION_TEMPS
    try:
        if not stat.S_ISDIR(os.lstat(parent).st_mode):  # (a link: never followed, X1)
            log.warning("not pruning the sandbox /tmp dirs: %s is no directory", parent)
            return []
        entries = list(os.scandir(parent))
    except OSError:  # none yet
        return []
    kept = {session_temp_dir(state_dir, session).name for session in journal.sessions()}
    cutoff = time.time() - older_than
    trees, retired = [], 0
    for entry in entries:
        try:
            if entry.name.startswith(SET_ASIDE):
                if entry.is_dir(follow_symlinks=False):
                    trees.append(entry.path)
                else:  # (only our uid, outside any sandbox, can make one)
                    os.unlink(entry.path)
                continue
            if (
                entry.name in kept
                or not entry.is_dir(follow_symlinks=False)
                or entry.stat(follow_symlinks=False).st_mtime > cutoff
            ):
                continue
            os.chmod(entry.path, 0o700)  # (a directory, not a link; a move writes its "..")
            aside = parent / f"{SET_ASIDE}{entry.name}-{secrets.token_hex(4)}"
            os.rename(entry.path, aside)
        except OSError as exc:
            log.warning("could not remove the sandbox /tmp %s: %s", entry.path, exc)
            continue
        trees.append(str(aside))
        retired += 1
    if retired:
        log.info("removing the sandbox /tmp of %d session(s) with no task left", retired)
    return trees


def _open_up(name: str, dir_fd: int | None = None) -> None:
    """Mode 0700 for a directory of ours, whatever its mode, never through a link: it is
    opened as a path only, no link followed, and changed through that descriptor's
    ``/proc`` entry (by name, a link swapped in after a look had its target changed: a
    review)."""
    fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.chmod(f"/proc/self/fd/{fd}", 0o700)
    finally:
        os.close(fd)


def _remove_tree(root: str) -> None:
    """Remove a directory tree a sandboxed command wrote, however deep (no recursion: a
    tree of thousands of levels is fine) and never through a link: each directory is
    opened by descriptor relative to its parent, without following links; directories
    it made unreadable or read-only (they are ours) are opened up first."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    _open_up(root)
    stack: list[tuple[int, str]] = [(os.open(root, flags), root)]  # (descriptor, its name)
    try:
        while stack:
            fd = stack[-1][0]
            child = None
            with os.scandir(fd) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    os.unlink(entry.name, dir_fd=fd)
            if child is not None:  # emptied first, removed when its turn comes back
                _open_up(child, fd)
                stack.append((os.open(child, flags, dir_fd=fd), child))
                continue
            fd, name = stack.pop()
            os.close(fd)
            if stack:
                os.rmdir(name, dir_fd=stack[-1][0])
    finally:
        for fd, _ in stack:
            os.close(fd)
    os.rmdir(root)


async def housekeeping(ctx: Context) -> None:
    """Runs for the supervisor's life: held journal writes, log cap, pruning, idle exit."""
    last_gc = time.monotonic()  # serve() pruned once at start
    while not ctx.stop_event.is_set():
        try:
            if await _chores(ctx, last_gc):
                last_gc = time.monotonic()
        except Exception:  # a bug or a full disk must not end the chores for good
            log.exception("housekeeping failed")
        await asyncio.sleep(HOUSEKEEPING_SECONDS)


async def _chores(ctx: Context, last_gc: float) -> bool:
    """One round of housekeeping; returns whether it pruned."""
    settings = ctx.settings
    ctx.journal.flush()  # writes held while the disk was full, once it takes them
    ctx.tasks.flush_identities()
    ctx.tasks.check_leftovers()
    pruned = time.monotonic() - last_gc >= GC_SECONDS
    if pruned:
        prune_in_background(ctx)
    cap = settings.log_cap or None  # (0: none, as `WAVE_IDLE_EXIT=0` is no idle exit)
    watched = [*ctx.tasks.live.values(), *ctx.tasks.lingering.values()]  # (what a task left
    over = [t for t in watched if cap and _log_size(t.row) > cap]  # running writes its log)
    if over:
        log.warning("stopping %s: log over the %d-byte cap", [t.id for t in over], settings.log_cap)
        await ctx.tasks.stop(over, reason=EndReason.LOG_CAP)
    idle = not ctx.tasks.live and ctx.active_connections == 0 and not ctx.journal.held
    idle = idle and not ctx.relays.held  # (what relays' results took: given back, if need be)
    if idle and settings.idle_exit and time.monotonic() - ctx.last_activity >= settings.idle_exit:
        log.info("idle for %gs with no task running: exiting", settings.idle_exit)
        ctx.stop_event.set()
    return pruned


def _log_size(row: TaskRow) -> int:
    return file_size(row.output_path) + (file_size(row.err_path) if row.err_path else 0)
