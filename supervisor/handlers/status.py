"""``status`` and ``shutdown``: the supervisor's own state."""

from __future__ import annotations

import importlib.metadata
import os
from datetime import UTC, datetime

from wave_bash.api.models import ShutdownResult, SupervisorStatus
from wave_bash.api.protocol import Params
from wave_bash.api.wire import PROTOCOL_VERSION

from ..context import Connection, Context
from ..journal import disk_problem

try:
    VERSION: str | None = importlib.metadata.version("wave-bash")
except importlib.metadata.PackageNotFoundError:  # running from a source tree
    VERSION = None


async def handle_status(ctx: Context, p: Params, conn: Connection) -> SupervisorStatus:
    return SupervisorStatus(
        running=True,
        pid=os.getpid(),
        state_dir=str(ctx.layout.root),
        socket_path=str(ctx.layout.tcp_endpoint if ctx.token else ctx.layout.socket),
        protocol_version=PROTOCOL_VERSION,
        version=VERSION,
        running_tasks=len(ctx.tasks.live),
        lingering_tasks=len(ctx.tasks.lingering),
        started_at=datetime.fromtimestamp(ctx.started_at, UTC),
        tracking=ctx.tasks.tracking,
        held_writes=ctx.journal.held,
        # (the disk's own figures too: a supervisor started on a full disk has failed no
        # write yet, and said nothing was wrong; a review)
        storage_problem=ctx.journal.problem or disk_problem(ctx.layout.root),
        sandbox=ctx.tasks.sandbox_status,
        relays=ctx.relays.count,
        held_results=ctx.relays.held,
    )


async def handle_shutdown(ctx: Context, p: Params, conn: Connection) -> ShutdownResult:
    """Stop the supervisor; running tasks keep running and are re-adopted by the next one."""
    ctx.stop_event.set()
    held = ctx.journal.held
    return ShutdownResult(
        stopping=True, running_tasks=len(ctx.tasks.live),
        lingering_tasks=len(ctx.tasks.lingering), held_writes=held,
        storage_problem=ctx.journal.problem if held else None,
    )  # fmt: skip
