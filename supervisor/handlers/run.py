"""``run``: start a command; wait in the foreground with the timeout rule of SPEC F3."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from api.constants import DEFAULT_TIMEOUT_MS, PROGRESS_INTERVAL_MS
from api.models import BashInput, BashResult
from api.protocol import RunParams

from .. import views
from ..context import Connection, Context
from ..tasks import LiveTask, is_sleep_command


async def handle(ctx: Context, p: RunParams, conn: Connection) -> BashResult | None:
    # The same validation as the tool input (T4–T6): the protocol is a door too.
    BashInput.parse(
        {"command": p.command, "timeout": p.timeout, "run_in_background": p.run_in_background}
    )
    task = ctx.tasks.start(p)
    if p.run_in_background:
        return views.backgrounded_result(task)
    timeout_ms = DEFAULT_TIMEOUT_MS if p.timeout is None else p.timeout
    if p.progress:  # tell a live view which task it shows (it may background it: Ctrl+B)
        await conn.send(
            {"type": "started", "data": {"taskId": task.id, "outputPath": task.row.output_path}}
        )
    return await wait_foreground(ctx, task, timeout_ms, conn, p.progress)


async def wait_foreground(
    ctx: Context, task: LiveTask, timeout_ms: float, conn: Connection, want_progress: bool
) -> BashResult | None:
    """Wait for the end, the timeout, a user's ``bg`` or the caller's disappearance."""
    deadline = task.row.started_at + timeout_ms / 1000
    helpers: list[asyncio.Task[Any]] = [asyncio.create_task(task.backgrounded.wait())]
    if want_progress:
        helpers.append(asyncio.create_task(stream_progress(task, conn)))
    try:
        waits: list[asyncio.Future[Any]] = [task.ended, helpers[0], conn.closed]
        await asyncio.wait(
            waits,
            timeout=max(0.0, deadline - time.time()),
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        for helper in helpers:
            helper.cancel()
    if task.row.owner == "background":  # backgrounded by the user (bg) before it ended
        return views.backgrounded_result(task)
    if task.ended.done():
        return views.finished_result(task)
    if conn.closed.done():
        ctx.tasks.move_to_background(task, "caller_lost")
        return None
    if is_sleep_command(task.row.command):
        await ctx.tasks.stop([task])
        return views.terminated_result(task, timeout_ms)
    ctx.tasks.move_to_background(task, "timeout")
    return views.backgrounded_result(task, timeout_ms)


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
