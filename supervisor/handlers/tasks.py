"""``stop``, ``background``, ``wait`` and ``tasks``: acting on and listing tasks."""

from __future__ import annotations

import asyncio
import json
import os
import re

from wave_bash.api.errors import InvalidInputError, TaskNotFoundError, TaskNotRunningError
from wave_bash.api.models import TaskRecord
from wave_bash.api.protocol import (
    SandboxSpec,
    StopManyParams,
    StopParams,
    TaskParams,
    TasksParams,
)
from wave_bash.api.states import BackgroundReason, EndReason
from wave_bash.api.texts import outcome_text
from wave_bash.worker.sandbox import Sandbox

from .. import views
from ..context import Connection, Context
from ..journal import TaskRow
from ..tasks import LiveTask


def _row(ctx: Context, task_id: str, session: str = "") -> TaskRow:
    """The task's row; none: :func:`not_found` (``session``: the caller's, whose tasks
    it may name)."""
    row = ctx.journal.get(task_id)
    if row is None:
        raise not_found(ctx, task_id, session)
    return row


TASK_ID_IN_TEXT = re.compile(r"(?<![a-z0-9])[a-z0-9]{8}(?![a-z0-9])")
"""A task ID among other text (IDs are ``[a-z0-9]{8}``)."""


def not_found(
    ctx: Context, task_id: str, session: str, message: str | None = None
) -> TaskNotFoundError:
    """No task has the ID sent; where it holds the ID of one task of the caller's
    ``session`` among other text (its log's path, `ID: x`, backticks: models sent those,
    a trial), that one is named."""
    found = (ctx.journal.get(m) for m in set(TASK_ID_IN_TEXT.findall(task_id)) - {task_id})
    named = {row.id for row in found if row is not None and row.session == session}
    said = message or f"No task found with ID: {task_id}"
    return TaskNotFoundError(
        task_id, f"{said} (did you mean {named.pop()}?)" if len(named) == 1 else said
    )


def _running(ctx: Context, task_id: str, action: str) -> LiveTask:
    row = _row(ctx, task_id)
    task = ctx.tasks.live.get(task_id)
    if task is None or row.status.ended:
        raise TaskNotRunningError(
            f"Cannot {action} task {task_id}: it is not running (status: {row.status}; "
            f"it {outcome_text(row.status, row.exit_code, row.end_reason)})",
            task_id=task_id,
        )
    return task


def confined(
    ctx: Context, caller: SandboxSpec | None, session: str, row: TaskRow, act: str
) -> None:
    """A caller under a sandbox acts (stops, interrupts, types, resizes, moves to the
    background) only on its own session's tasks that ran sandboxed no looser than it
    (SB1c): a sandboxed agent typed into another session's unsandboxed shell through
    TaskInput, and what it typed ran outside any sandbox (a review).

    Raises:
        InvalidInputError: it may not; nothing was done.
    """
    if caller is None:
        return
    task = ctx.tasks.live.get(row.id)
    ran = (task.sandbox if task is not None else None) or _recorded_sandbox(row)
    running = task is not None and not task.ended.done()
    if (
        row.session == session
        and row.sandbox is not None
        and _no_looser(row.sandbox, ran, caller, running)
    ):
        return
    whose = (
        "another session's" if row.session != session
        else "one that ran without a sandbox" if row.sandbox is None
        else "sandboxed more loosely than this caller (its workspace or network)"
    )  # fmt: skip
    raise InvalidInputError(
        f"Permission denied: under a sandbox, {act} acts only on this session's sandboxed "
        f"tasks; task {row.id} is {whose}. Nothing was done."
    )


def _recorded_sandbox(row: TaskRow) -> Sandbox | None:
    """The sandbox a task ran in, as its row records it (None: not recorded, a task of an
    older journal or of one rebuilt)."""
    try:
        scope = json.loads(row.sandbox_scope or "null")
        return Sandbox(row.sandbox or "", str(scope["workspace"]), bool(scope["network"]))
    except (ValueError, TypeError, KeyError):
        return None


def _no_looser(mode: str, ran: Sandbox | None, caller: SandboxSpec, running: bool) -> bool:
    """Whether a task's sandbox (``mode``; ``ran``: all of it, where known) lets its
    command do nothing the caller's own sandbox would not."""
    if ran is None:  # (unknown: a running task's is no looser only if nothing is; one that
        # ended, whose leftovers a stop would end, by its mode)
        return not running and (mode == "read-only" or caller.mode == "workspace-write")
    if ran.network and not caller.network:
        return False
    if ran.mode == "read-only":
        return True
    workspace = caller.workspace
    return (
        caller.mode == "workspace-write"
        and bool(workspace)
        and (os.path.realpath(workspace or "") == ran.workspace)
    )


async def handle_stop(ctx: Context, p: StopParams, conn: Connection) -> TaskRecord:
    """TaskStop (SPEC B3): every process of the task, then the recorded status. A task
    that ended but left processes running has those stopped."""
    row = _row(ctx, p.task_id, p.session)
    confined(ctx, p.sandbox, p.session, row, "TaskStop")
    lingering = ctx.tasks.lingering.get(p.task_id)
    left = ctx.tasks.leftover_count(p.task_id) if lingering is not None else 0
    if lingering is not None and p.task_id not in ctx.tasks.live and left:
        await ctx.tasks.stop([lingering])
        # (read again: as it was, where a `gc` pruned it meanwhile, its processes gone)
        record = views.task_record(ctx.journal.get(p.task_id) or row, ctx.tasks)
        return record.model_copy(update={"stopped_processes": left})
    if row.status.ended and row.end_reason is EndReason.STOPPED and p.task_id not in ctx.tasks.live:
        # A stop ended it: this one is that stop sent again (its supervisor died as it
        # answered, CR1), or a second: the record, as the first got (a review).
        return views.task_record(row, ctx.tasks)
    task = _running(ctx, p.task_id, "stop")
    if p.interrupted:  # its own caller: it ends as that caller's foreground command
        task.interrupted = True
        if task.row.background_reason is BackgroundReason.CALLER_LOST:
            ctx.tasks.move_to_foreground(task)  # the lost connection was seen first
    await ctx.tasks.stop([task])
    return views.task_record(task.row, ctx.tasks)


async def handle_stop_many(ctx: Context, p: StopManyParams, conn: Connection) -> list[TaskRecord]:
    """Stop several tasks together; every ID must exist (else nothing is stopped).

    Tasks that already ended are reported as they are."""
    found = [ctx.journal.get(task_id) for task_id in p.task_ids]
    missing = [task_id for task_id, row in zip(p.task_ids, found, strict=True) if row is None]
    if missing:  # (said: a caller must not take the others for stopped)
        said = f"No task found with ID: {', '.join(missing)}; nothing was stopped"
        raise not_found(ctx, missing[0], p.session, said)
    rows = [row for row in found if row is not None]
    for row in rows:
        confined(ctx, p.sandbox, p.session, row, "TaskStop")
    live = {r.id: ctx.tasks.live[r.id] for r in rows if r.id in ctx.tasks.live}
    lingering = [ctx.tasks.lingering[r.id] for r in rows if r.id in ctx.tasks.lingering]
    left = {t.id: ctx.tasks.leftover_count(t.id) for t in lingering if t.id not in live}
    await ctx.tasks.stop([*live.values(), *lingering])
    # A live task's row is updated in place when it ends; the others are as read.
    return [
        views.task_record(live[r.id].row if r.id in live else r, ctx.tasks).model_copy(
            update={"stopped_processes": left.get(r.id, 0)}
        )
        for r in rows
    ]


async def handle_background(ctx: Context, p: TaskParams, conn: Connection) -> TaskRecord:
    """F4: the user moves a running foreground command to the background."""
    confined(ctx, p.sandbox, p.session, _row(ctx, p.task_id, p.session), "a move to the background")
    task = _running(ctx, p.task_id, "background")
    ctx.tasks.move_to_background(task, BackgroundReason.USER)
    return views.task_record(task.row, ctx.tasks)


async def handle_wait(ctx: Context, p: TaskParams, conn: Connection) -> TaskRecord:
    """Wait until the task ends or ``timeout`` ms pass; the record either way."""
    row = _row(ctx, p.task_id, p.session)
    task = ctx.tasks.live.get(p.task_id)
    if task is None:
        return views.task_record(row, ctx.tasks)  # ended: the journal row is complete
    timeout = None if p.timeout is None else p.timeout / 1000
    ctx.tasks.watch_job(task)
    await asyncio.wait([task.ended, conn.closed], timeout=timeout, return_when="FIRST_COMPLETED")
    return views.task_record(task.row, ctx.tasks)


async def handle_tasks(ctx: Context, p: TasksParams, conn: Connection) -> list[TaskRecord]:
    rows = ctx.journal.tasks(session=None if p.all else p.session)
    return [views.task_record(ctx.tasks.current(row), ctx.tasks) for row in rows]
