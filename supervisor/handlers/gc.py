"""``gc``: prune finished tasks (rows, notices, logs) and checkpoint the journal."""

from __future__ import annotations

from wave_bash.api.models import GcResult
from wave_bash.api.protocol import GcParams

from ..context import Connection, Context
from ..retention import prune


async def handle(ctx: Context, p: GcParams, conn: Connection) -> GcResult:
    older_than = ctx.settings.retention if p.older_than is None else p.older_than
    removed = prune(ctx.journal, ctx.layout.tasks, older_than)
    return GcResult(removed=removed, older_than_seconds=older_than)
