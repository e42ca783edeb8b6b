"""Bounded growth and idleness: log cap, pruning of old tasks, WAL checkpoints, idle exit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from wave_bash.api.states import EndReason
from wave_bash.worker import TaskFiles
from wave_bash.worker.tail import file_size

from .context import Context
from .journal import Journal, TaskRow
from .tasks import SESSION_TEMPS, session_temp_dir

log = logging.getLogger(__name__)

HOUSEKEEPING_SECONDS = 1.0
"""How often log sizes and idleness are looked at."""

GC_SECONDS = 3600.0
"""How often finished tasks past the retention age are pruned (serve() also does at start)."""


@dataclass(frozen=True)
class Pruned:
    """What a prune took out of the journal, and the files it leaves to remove
    (:func:`remove_pruned`), off the event loop: a session's sandbox ``/tmp`` can hold a
    ``node_modules``, and the supervisor answers nothing while its loop waits."""

    task_ids: list[str]
    files: list[Path]
    """The pruned tasks' files (no row names them any more)."""
    trees: list[str]
    """Sandbox ``/tmp`` directories put aside (renamed, so a new command of their session
    gets a new one) to remove, and any a supervisor stopped before it removed them."""


def prune(
    journal: Journal, tasks_dir: Path, older_than: float, notices_kept: float | None = None
) -> Pruned:
    """Delete finished tasks that ended more than ``older_than`` seconds ago and
    checkpoint the WAL; put aside the sandbox ``/tmp`` of each session that has no task
    left. Running tasks are never touched, nor a task whose notice is pending and that
    ended less than ``notices_kept`` seconds ago (default: ``older_than``). Their files
    are removed by :func:`remove_pruned`."""
    now = time.time()
    kept = older_than if notices_kept is None else max(notices_kept, older_than)
    removed = journal.prune(now - older_than, now - kept)
    journal.checkpoint()
    if removed:
        log.info("pruned %d finished task(s) older than %gs", len(removed), older_than)
    files = [path for task_id in removed for path in TaskFiles.every_file(tasks_dir, task_id)]
    return Pruned(removed, files, set_aside_session_temps(journal, tasks_dir.parent, older_than))


def remove_pruned(pruned: Pruned) -> None:
    """Remove what a prune left (in a thread: see :class:`Pruned`); never fails."""
    for path in pruned.files:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    for tree in pruned.trees:
        try:
            _remove_tree(tree)
        except FileNotFoundError:  # (another prune's, removed meanwhile)
            continue
        except (OSError, RecursionError) as exc:  # never a reason for the supervisor to fail
            log.warning("could not remove the sandbox /tmp %s: %s", tree, exc)


def remove_pruned_later(pruned: Pruned) -> None:
    """:func:`remove_pruned` in a thread of its own, which the supervisor does not wait
    for as it stops (what it leaves is set aside, and removed by a later prune)."""
    if pruned.files or pruned.trees:
        threading.Thread(target=remove_pruned, args=(pruned,), name="prune", daemon=True).start()


SET_ASIDE = ".removing-"
"""The name prefix of a sandbox ``/tmp`` put aside for removal."""


def set_aside_session_temps(journal: Journal, state_dir: Path, older_than: float) -> list[str]:
    """Put aside (rename) the sandbox ``/tmp`` of sessions with no task in the journal
    any more and nothing changed in it for ``older_than`` seconds; returns the
    directories to remove, with those put aside before and not removed yet.

    No process uses such a directory: a session with a running or lingering task has
    that task in the journal.
    """
    parent = state_dir / SESSION_TEMPS
    try:
        entries = list(os.scandir(parent))
    except OSError:  # none yet
        return []
    kept = {session_temp_dir(state_dir, session).name for session in journal.sessions()}
    cutoff = time.time() - older_than
    trees, retired = [], 0
    for entry in entries:
        if entry.name.startswith(SET_ASIDE):
            trees.append(entry.path)
            continue
        try:
            if (
                entry.name in kept
                or not entry.is_dir(follow_symlinks=False)
                or entry.stat(follow_symlinks=False).st_mtime > cutoff
            ):
                continue
            os.chmod(entry.path, 0o700)  # (moving a directory writes its "..")
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


def _remove_tree(root: str) -> None:
    """Remove a directory tree a sandboxed command wrote, however deep (no recursion: a
    tree of thousands of levels is fine) and never through a link: each directory is
    opened by descriptor relative to its parent, without following links; directories
    it made unreadable or read-only (they are ours) are opened up first."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    os.chmod(root, 0o700)  # a directory, not a link (the caller looked)
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
                os.chmod(child, 0o700, dir_fd=fd)
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
        remove_pruned_later(prune(ctx.journal, ctx.layout.tasks, settings.retention))
    over = [t for t in ctx.tasks.live.values() if _log_size(t.row) > settings.log_cap]
    if over:
        log.warning("stopping %s: log over the %d-byte cap", [t.id for t in over], settings.log_cap)
        await ctx.tasks.stop(over, reason=EndReason.LOG_CAP)
    idle = not ctx.tasks.live and ctx.active_connections == 0 and not ctx.journal.held
    if idle and settings.idle_exit and time.monotonic() - ctx.last_activity >= settings.idle_exit:
        log.info("idle for %gs with no task running: exiting", settings.idle_exit)
        ctx.stop_event.set()
    return pruned


def _log_size(row: TaskRow) -> int:
    return file_size(row.output_path) + (file_size(row.err_path) if row.err_path else 0)
