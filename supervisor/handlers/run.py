"""``run``: start a command; wait in the foreground with the timeout rule of SPEC F3."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from wave_bash.api.constants import DEFAULT_TIMEOUT_MS, PROGRESS_INTERVAL_MS
from wave_bash.api.errors import InvalidInputError, TaskNotFoundError
from wave_bash.api.models import BashInput, BashResult
from wave_bash.api.protocol import AttachParams, RunParams
from wave_bash.api.states import BackgroundReason, EndReason, Owner
from wave_bash.worker.tail import file_size

from .. import policy, views
from ..context import Connection, Context
from ..tasks import LiveTask, is_sleep_command
from .notifications import announce_unseen


async def handle(ctx: Context, p: RunParams, conn: Connection) -> BashResult | None:
    # The same validation as the tool input (T4–T6): the protocol is a door too.
    BashInput.parse(
        {
            "command": p.command,
            "timeout": p.timeout,
            "run_in_background": p.run_in_background,
            "interactive": p.interactive,
        }
    )
    # SPEC PM: before anything is journaled or spawned
    kept = (os.path.realpath(ctx.layout.root),) if p.rules else ()  # (its records: a
    # write there asks)
    decision = await policy.check(p, ctx.tasks.sandbox_view(p) if p.rules else None, kept)
    if decision.verdict != "allow":
        policy.audit_refusal(decision, p)
        return views.refused_result(decision, policy.refusal_text(decision, p))
    earlier = ctx.journal.by_request_key(p.request_key) if p.request_key else None
    if earlier is not None and (earlier.session, earlier.command) != (p.session, p.command):
        raise InvalidInputError("this request key was already used for another request")
    if earlier is not None:  # sent again after the supervisor went away: never twice
        conn.send_now(
            {"type": "started", "data": {"taskId": earlier.id, "outputPath": earlier.output_path}}
        )
        attach = AttachParams(
            session=p.session, task_id=earlier.id, progress=p.progress, exact_output=p.exact_output
        )
        return await handle_attach(ctx, attach, conn)
    # The caller learns the task ID as soon as it is journaled: a live view may background
    # it (Ctrl+B), and a caller that loses this connection attaches to the same task again.
    task = ctx.tasks.start(
        p,
        decision,
        announce=lambda row: conn.send_now(
            {"type": "started", "data": {"taskId": row.id, "outputPath": row.output_path}}
        ),
    )
    if p.run_in_background:
        ctx.tasks.announce_prompt(task)  # (an interactive one's: no caller waits for it)
        return views.backgrounded_result(task)
    return await wait_foreground(ctx, task, _timeout_ms(task), conn, p.progress, p.exact_output)


def _timeout_ms(task: LiveTask) -> float:
    return DEFAULT_TIMEOUT_MS if task.row.timeout_ms is None else task.row.timeout_ms


async def handle_attach(ctx: Context, p: AttachParams, conn: Connection) -> BashResult | None:
    """A caller lost its connection during a foreground run and waits for the task again.

    The answer is what the original call would have answered: the result, or the
    background text when the task had moved to the background meanwhile.
    """
    row = ctx.journal.get(p.task_id)
    if row is None:
        raise TaskNotFoundError(p.task_id)
    task = ctx.tasks.live.get(row.id)
    if task is not None:
        if task.row.background_reason is BackgroundReason.CALLER_LOST:
            ctx.tasks.move_to_foreground(task)  # its caller is back
        if task.row.owner is Owner.FOREGROUND:
            return await wait_foreground(
                ctx, task, _timeout_ms(task), conn, p.progress, p.exact_output
            )
        return views.backgrounded_result(task, _timeout_ms(task))
    ended = ctx.tasks.ended_task(row)
    if (
        row.owner is Owner.FOREGROUND
        or row.background_reason is BackgroundReason.CALLER_LOST
        or row.end_reason is EndReason.NOT_STARTED  # (a background start said it runs: a
    ):  # review; D3a: a caller learns that nothing ran, to run it again)
        session, task_id = row.session, row.id  # the caller gets the result itself, once
        conn.after_reply = lambda: ctx.journal.mark_delivered(session, [task_id])  # it left
        conn.give_back.append(lambda: announce_unseen(ctx, task_id))  # (a relay's, ND6)
        if row.background_reason is BackgroundReason.CALLER_LOST:  # (it came back: its
            ctx.tasks.move_to_foreground(ended)  # task was listed as lost still, a review)
        return views.finished_result(ended, exact=p.exact_output)
    return views.backgrounded_result(ended, _timeout_ms(ended))


async def wait_foreground(
    ctx: Context,
    task: LiveTask,
    timeout_ms: float,
    conn: Connection,
    want_progress: bool,
    exact: bool = False,
) -> BashResult | None:
    """Wait for the end, the timeout, a user's ``bg`` or the caller's disappearance
    (``exact``: the result's output with its blank edge lines, ``RunParams``). Until its
    result is made, no prune takes the task (a `gc --older-than 0` beside it removed the
    log of a command that had just ended, and its result showed no output: a review)."""
    with ctx.tasks.answering_for(task.id):
        return await _wait_foreground(ctx, task, timeout_ms, conn, want_progress, exact)


async def _wait_foreground(
    ctx: Context,
    task: LiveTask,
    timeout_ms: float,
    conn: Connection,
    want_progress: bool,
    exact: bool,
) -> BashResult | None:
    deadline = task.row.started_at + timeout_ms / 1000
    ctx.tasks.watch_job(task)
    task.attached += 1
    helpers: list[asyncio.Task[Any]] = [asyncio.create_task(task.backgrounded.wait())]
    waits: list[asyncio.Future[Any]] = [task.ended, helpers[0], conn.closed]
    if task.terminal is not None:  # an interactive command that waits for input returns
        helpers.append(asyncio.create_task(task.terminal.waiting_for_input()))
        waits.append(helpers[-1])
    if want_progress:
        helpers.append(asyncio.create_task(stream_progress(task, conn)))
    try:
        await asyncio.wait(
            waits,
            timeout=max(0.0, deadline - time.time()),
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        task.attached -= 1
        for helper in helpers:
            helper.cancel()
    if task.row.owner is Owner.BACKGROUND:  # backgrounded by the user (bg) before it ended
        return views.backgrounded_result(task)
    # (a result that shows the end or a prompt: a relay that never passes it on, killed
    # with it in hand, leaves them to a notice, :mod:`..relays`; not one its own caller
    # stopped, a Ctrl+C's stop that answered it: its call, cut by the Ctrl+C, found the
    # end, and its result, never sent, became a "Background command" notice, a CI run)
    conn.give_back.append(lambda: task.interrupted or announce_unseen(ctx, task.id))
    if task.ended.done():
        return views.finished_result(task, await ctx.tasks.left_running(task), exact=exact)
    if conn.closed.done():
        conn.give_back.clear()
        # (not lost: a caller that stops it after Ctrl+C; one still waiting for it on
        # another connection, the same call sent again over a new ssh while the old one
        # froze: as the old one dropped, the new one got "running in the background",
        # and `run` exited 0 while the command ran on, a trial)
        if not task.interrupted and not task.attached:
            ctx.tasks.move_to_background(task, BackgroundReason.CALLER_LOST)
        return None
    if task.waiting_for_input:  # P2: the caller answers with TaskInput
        ctx.tasks.move_to_background(task, BackgroundReason.INPUT)
        end = file_size(task.row.output_path)  # shown now: TaskInput starts after it
        task_id, session = task.id, task.row.session
        waiting = views.waiting_result(task, end)
        if waiting.error is None:  # (unread: the next read starts before it)
            task.prompt_read = (ctx.journal.read_offset(task_id, session), end)
            conn.after_reply = lambda: _prompt_shown(ctx, task, end)
        return waiting
    if is_sleep_command(task.row.command):
        task.attached += 1  # (its caller is here for the answer: its end is no notice)
        try:
            await ctx.tasks.stop([task], reason=EndReason.TIMEOUT)
        finally:
            task.attached -= 1
        if task.row.end_reason is not EndReason.TIMEOUT:  # a stop under way went first (B3:
            # its reason stands; the result blamed the timeout, the record TaskStop: a trial)
            return views.finished_result(task, await ctx.tasks.left_running(task), exact=exact)
        return views.terminated_result(task, timeout_ms)
    conn.give_back.clear()  # (in the background: its end is a notice anyway)
    ctx.tasks.move_to_background(task, BackgroundReason.TIMEOUT)
    return views.backgrounded_result(task, timeout_ms)


def _prompt_shown(ctx: Context, task: LiveTask, end: int) -> None:
    """The prompt a caller (back) got: the next read starts after it, and the notice of
    a prompt its caller had not seen goes (it would say so, now wrongly: a review); not
    an end's that came meanwhile (the caller saw the prompt only)."""
    ctx.journal.set_read_offset(task.id, task.row.session, end)
    ctx.tasks.prompt_settled(task)


async def stream_progress(task: LiveTask, conn: Connection) -> None:
    """Send a progress update when the log grew, at most once per ``PROGRESS_INTERVAL_MS``."""
    interval = PROGRESS_INTERVAL_MS / 1000
    poll = min(0.25, interval / 4)
    last_size, last_sent = 0, 0.0
    while True:
        await asyncio.sleep(poll)
        with contextlib.suppress(OSError):
            size = os.stat(task.row.output_path).st_size
            now = time.monotonic()
            if size != last_size and now - last_sent >= interval:
                update = views.progress(task, size)
                await conn.send({"type": "progress", "data": update.to_json_dict()})
                last_size, last_sent = size, now
