"""Bounded growth and idleness: log cap, pruning of old tasks, WAL checkpoints, idle exit."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
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


def prune(journal: Journal, tasks_dir: Path, older_than: float) -> list[str]:
    """Delete finished tasks that ended more than ``older_than`` seconds ago, with their
    files, and checkpoint the WAL; then the sandbox ``/tmp`` of each session that has no
    task left. Running tasks are never touched."""
    removed = journal.prune(time.time() - older_than)
    for task_id in removed:
        for path in TaskFiles.every_file(tasks_dir, task_id):
            path.unlink(missing_ok=True)
    journal.checkpoint()
    if removed:
        log.info("pruned %d finished task(s) older than %gs", len(removed), older_than)
    prune_session_temps(journal, tasks_dir.parent, older_than)
    return removed


def prune_session_temps(journal: Journal, state_dir: Path, older_than: float) -> int:
    """Remove the sandbox ``/tmp`` of sessions with no task in the journal any more and
    nothing changed in it for ``older_than`` seconds; returns how many.

    No process uses such a directory: a session with a running or lingering task has
    that task in the journal.
    """
    parent = state_dir / SESSION_TEMPS
    try:
        entries = list(os.scandir(parent))
    except OSError:  # none yet
        return 0
    kept = {session_temp_dir(state_dir, session).name for session in journal.sessions()}
    cutoff = time.time() - older_than
    removed = 0
    for entry in entries:
        try:
            if (
                entry.name in kept
                or not entry.is_dir(follow_symlinks=False)
                or entry.stat(follow_symlinks=False).st_mtime > cutoff
            ):
                continue
            _remove_tree(entry.path)
        except OSError as exc:
            log.warning("could not remove the sandbox /tmp %s: %s", entry.path, exc)
            continue
        removed += 1
    if removed:
        log.info("removed the sandbox /tmp of %d session(s) with no task left", removed)
    return removed


def _remove_tree(root: str) -> None:
    """Remove a directory tree a sandboxed command wrote. Links are removed, never
    followed (``rmtree`` works through descriptors); directories it made unreadable or
    read-only (they are ours) are opened up, without following links, then removed."""
    try:
        shutil.rmtree(root)
        return
    except OSError:
        pass
    pending = [root]
    while pending:
        directory = pending.pop()
        os.chmod(directory, 0o700)
        with os.scandir(directory) as entries:
            pending.extend(e.path for e in entries if e.is_dir(follow_symlinks=False))
    shutil.rmtree(root)


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
        prune(ctx.journal, ctx.layout.tasks, settings.retention)
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
