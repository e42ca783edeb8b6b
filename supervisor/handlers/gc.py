"""``gc``: prune finished tasks (rows, notices, logs) and checkpoint the journal."""

from __future__ import annotations

import time

from wave_bash.api.errors import StorageError
from wave_bash.api.models import GcResult
from wave_bash.api.protocol import GcParams

from ..context import Connection, Context
from ..journal import storage_problem
from ..retention import prune


async def handle(ctx: Context, p: GcParams, conn: Connection) -> GcResult:
    """A person's or a script's prune: a task whose notice no session has read yet stays
    until the retention ends (an agent of another session would never learn its end)."""
    older_than = ctx.settings.retention if p.older_than is None else p.older_than
    retention = ctx.settings.retention
    kept_for = None if p.unread else retention
    try:
        removed = await prune(ctx, older_than, notices_kept=kept_for)  # (others answered
        # meanwhile)
    except Exception as exc:
        problem = storage_problem(exc)
        if problem is None or p.unread:
            raise
        # (said as a full disk alone, plain `gc` never freed the space of a background
        # task that filled it, whose notice cannot be read while the disk is full: a trial)
        raise StorageError(
            f"{problem} in the state dir {ctx.layout.root}: tasks whose completion notice "
            "no session has read were kept, and a task that filled the disk in the "
            "background is one: `gc --unread` prunes them too"
        ) from None
    cutoff = time.time() - older_than
    running = {
        task_id
        for task_id, task in ctx.tasks.lingering.items()
        if (task.row.ended_at or 0) < cutoff and ctx.tasks.leftover_count(task_id)
    }  # (each kept for one reason, this one first: `--unread` does not prune them)
    unread = set() if p.unread else set(ctx.journal.undelivered_ended_before(cutoff)) - running
    return GcResult(
        removed=removed,
        older_than_seconds=older_than,
        kept_unread=len(unread),
        kept_running=len(running),
    )
