"""``notifications`` and ``ack``: completion notices, delivered exactly once (SPEC B5)."""

from __future__ import annotations

from api.models import Notice
from api.protocol import AckParams, NotificationsParams

from .. import views
from ..context import Connection, Context


async def handle_notifications(
    ctx: Context, p: NotificationsParams, conn: Connection
) -> list[Notice]:
    """Pending notices of the session; with ``ack`` they are marked delivered at once."""
    rows = ctx.journal.pending_notices(p.session)
    if p.ack and rows:
        ctx.journal.mark_delivered(p.session, [row.id for row in rows])
    return [views.notice(row) for row in rows]


async def handle_ack(ctx: Context, p: AckParams, conn: Connection) -> dict[str, int]:
    """The receiver confirms it showed these notices; they are never sent again."""
    return {"acknowledged": ctx.journal.mark_delivered(p.session, p.task_ids)}
