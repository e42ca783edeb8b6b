"""``notifications``, ``claim``, ``ack`` and ``release``: completion notices, each delivered
exactly once however many readers race (SPEC B5); ``relay`` and ``delivered``: results a
relay passes on (:mod:`..relays`).

Taking notices is one transaction (a claim), so two readers never get the same one. A
reader that must first show them somewhere (an MCP result written to its host) holds
them under a lease and confirms or gives them back; one that dies loses them to the
next reader when the lease ends.
"""

from __future__ import annotations

import secrets
import time

from wave_bash.api.errors import TaskNotFoundError
from wave_bash.api.models import (
    AckResult,
    AnnounceResult,
    DeliveredResult,
    Notice,
    NoticeClaim,
    RelayResult,
    ReleaseResult,
)
from wave_bash.api.protocol import (
    AckParams,
    ClaimParams,
    DeliveredParams,
    NotificationsParams,
    RelayParams,
    ReleaseParams,
    TaskParams,
)
from wave_bash.api.states import BackgroundReason, Owner

from .. import views
from ..context import Connection, Context


def _claim(
    ctx: Context,
    session: str,
    lease: float,
    deliver: bool = False,
    token: str | None = None,
    limit: int | None = None,
) -> tuple[str, list[Notice], int]:
    token = token or secrets.token_hex(8)
    rows, more = ctx.journal.claim_notices(session, token, lease, deliver=deliver, limit=limit)
    return token, [views.notice(row, ctx.tasks.leftover_count(row.id)) for row in rows], more


async def handle_notifications(
    ctx: Context, p: NotificationsParams, conn: Connection
) -> list[Notice]:
    """Pending notices of the session; with ``ack`` they are taken and delivered."""
    if not p.ack:
        rows = ctx.journal.pending_notices(p.session)
        return [views.notice(row, ctx.tasks.leftover_count(row.id)) for row in rows]
    return _claim(ctx, p.session, lease=60, deliver=True)[1]  # taken and delivered at once


async def handle_claim(ctx: Context, p: ClaimParams, conn: Connection) -> NoticeClaim:
    token, notices, more = _claim(ctx, p.session, p.lease, token=p.claim, limit=p.limit)
    if notices:  # (a relay killed with them in hand: back to the session at once)
        conn.give_back.append(lambda: ctx.journal.settle_claim(token, delivered=False))
    problem = ctx.journal.problem
    if notices or problem is None:
        return NoticeClaim(claim=token, notices=notices, more=more)
    # (said none while notices waited for a full disk: a review)
    waiting = len(ctx.journal.pending_notices(p.session))
    return NoticeClaim(
        claim=token, notices=[], waiting=waiting, storage_problem=problem if waiting else None
    )


async def handle_ack(ctx: Context, p: AckParams, conn: Connection) -> AckResult:
    """The receiver confirms it showed these notices; they are never sent again."""
    count = ctx.journal.settle_claim(p.claim, delivered=True) if p.claim else 0
    if p.task_ids:
        count += ctx.journal.mark_delivered(p.session, p.task_ids)
    ctx.journal.write_deferred()  # committed before the answer: a reader told so is done
    return AckResult(acknowledged=count)


async def handle_release(ctx: Context, p: ReleaseParams, conn: Connection) -> ReleaseResult:
    """The receiver could not show them: pending again for the next reader."""
    released = ctx.journal.settle_claim(p.claim, delivered=False, shown_too=p.shown)
    return ReleaseResult(released=released)


async def handle_relay(ctx: Context, p: RelayParams, conn: Connection) -> RelayResult:
    """A relay's presence, until it closes the connection (or the supervisor stops). It
    counts as no connection for the cap or the idle exit, as a kept one (PR1): each MCP
    server took a place under the cap for its whole life, and kept the supervisor up
    (a review)."""
    ctx.active_connections -= 1
    ctx.served_connections -= 1
    try:
        return RelayResult(given_back=await ctx.relays.attend(p.relay, conn))
    finally:
        ctx.active_connections += 1
        ctx.served_connections += 1


async def handle_delivered(ctx: Context, p: DeliveredParams, conn: Connection) -> DeliveredResult:
    return DeliveredResult(confirmed=ctx.relays.confirm(p.receipts))


async def handle_announce(ctx: Context, p: TaskParams, conn: Connection) -> AnnounceResult:
    """A foreground result never reached its caller: its task's end becomes a notice."""
    if ctx.journal.get(p.task_id) is None:
        raise TaskNotFoundError(p.task_id)
    return AnnounceResult(announced=announce_unseen(ctx, p.task_id))


def announce_unseen(ctx: Context, task_id: str) -> bool:
    """A foreground or prompt result never reached its caller: the task's end (or its
    prompt) becomes a notice; whether it did (False: it was one already)."""
    row = ctx.journal.get(task_id)
    if row is None:  # (pruned since)
        return False
    task = ctx.tasks.live.get(row.id)
    if task is not None:  # still running: it just moves to the background
        moved = ctx.tasks.move_to_background(task, BackgroundReason.CALLER_LOST)
        if not moved and task.row.interactive:
            # The prompt it returned at (a Bash call's, or a TaskInput call's, whatever
            # took it to the background), never shown: a notice, and the session's next
            # read shows it again.
            ctx.tasks.announce_prompt(task, again=True)
            shown = task.prompt_read
            if shown is not None and ctx.journal.read_offset(task.id, row.session) == shown[1]:
                ctx.journal.set_read_offset(task.id, row.session, shown[0])
            return True
        return moved
    if row.owner is not Owner.FOREGROUND:
        return False
    row.owner, row.background_reason, row.owner_changed_at = (
        Owner.BACKGROUND,
        BackgroundReason.CALLER_LOST,
        time.time(),
    )
    ctx.journal.finish_task(row, row.session)  # the row as it is, plus its notice
    return True
