"""``gc``: prune finished tasks (rows, notices, logs) and checkpoint the journal."""

from __future__ import annotations

import time

from wave_bash.api.models import GcResult
from wave_bash.api.protocol import GcParams

from ..context import Connection, Context
from ..retention import prune


async def handle(ctx: Context, p: GcParams, conn: Connection) -> GcResult:
    """A person's or a script's prune: a task whose notice no session has read yet stays
    until the retention ends (an agent of another session would never learn its end)."""
    older_than = ctx.settings.retention if p.older_than is None else p.older_than
    retention = ctx.settings.retention
    kept_for = None if p.unread else retention
    removed = await prune(ctx, older_than, notices_kept=kept_for)  # (others answered meanwhile)
    kept = ctx.journal.undelivered_ended_before(time.time() - older_than)
    return GcResult(removed=removed, older_than_seconds=older_than, kept_unread=kept)
