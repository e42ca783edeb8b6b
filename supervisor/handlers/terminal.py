"""``input`` (TaskInput, SPEC P3), ``terminal`` (a person attached, SPEC P5) and
``interrupt`` (Ctrl+C, B3b): typing into an interactive task's terminal, or as a terminal
would."""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import Awaitable
from typing import Any

from wave_bash.api.errors import InvalidInputError, TaskNotRunningError
from wave_bash.api.models import TaskOutputResult, TaskRecord, TerminalResult
from wave_bash.api.protocol import InputParams, InterruptRequest, TerminalParams
from wave_bash.worker import open_regular
from wave_bash.worker.output import ESCAPE_ROOM, finished_start
from wave_bash.worker.tail import file_size

from .. import policy, views
from ..context import Connection, Context
from ..journal import TaskRow
from ..tasks import LiveTask
from ..terminals import TYPING_WINDOW, TerminalGone, TerminalLink, TypedThenGone
from .output import read_output, removed_outside, stored_start
from .tasks import _row, _running, confined

INTERRUPT_KEY = "\x03"
"""Ctrl+C, as a terminal's keyboard sends it (the terminal's ``intr`` character)."""
TERMINAL_CHUNK = 64 * 1024
"""Most log bytes one ``terminal`` answer carries."""
TERMINAL_BACKLOG = 4096
"""What a person who attaches sees first: the log's last bytes."""
OUTPUT_POLL_TYPING = 0.005
OUTPUT_POLL_IDLE = 0.05
"""How often a waiting ``terminal`` call looks at the log's size: often while keys are
being typed (``TYPING_WINDOW``: their echo shows at once), else 20 times a second, woken
at once by the next keys (an idle attach costs the supervisor ~0.5 % of a core here; it
was 2.5 % polling every 10 ms)."""


def _interactive(row: TaskRow) -> None:
    if not row.interactive:
        raise InvalidInputError(
            f"Task {row.id} is not interactive: its input is /dev/null. Run the command "
            "again with Bash's interactive=true (from a shell: `wave-bash run -i`) to type "
            "into it."
        )


async def _allowed_input(p: InputParams | TerminalParams, row: TaskRow) -> None:
    """Under permission rules (PM), input goes only into an interactive command of the
    caller's own session that rules let start (which they do only when a person approved
    it, or when they allow anything): what is typed is the program's to run, and no rule
    sees it. A review typed `touch` past a deny rule into another session's shell."""
    if p.rules is None:
        return
    loop = asyncio.get_running_loop()  # (rules are compiled off the event loop, as for run)
    rules = await loop.run_in_executor(policy.CHECKS, policy.rule_set, p.rules)
    if rules.allows_anything():
        return
    if row.session != p.session or row.permission is None:
        whose = "another session's" if row.session != p.session else "one started without rules"
        raise InvalidInputError(
            f"Permission denied: under your permission rules, TaskInput types only into an "
            f"interactive command they let start in this session; task {row.id} is "
            f"{whose}. Nothing was typed."
        )


def _terminal(task: LiveTask) -> TerminalLink:
    task.connect_terminal()
    assert task.terminal is not None
    return task.terminal


async def handle_input(ctx: Context, p: InputParams, conn: Connection) -> TaskOutputResult:
    """Type the input, then wait until the command waits for input again, ends, or the
    timeout passes; the new output since this session's last read."""
    _interactive(row := _row(ctx, p.task_id, p.session))
    confined(ctx, p.sandbox, p.session, row, "TaskInput")
    task = _running(ctx, p.task_id, "type into")
    await _allowed_input(p, task.row)
    link = _terminal(task)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (p.timeout / 1000 if p.timeout is not None else 86400.0)
    typing = link.type(p.input, p.request_key, deadline - loop.time(), lines=True)
    await _typed(ctx, task, typing)
    ctx.tasks.prompt_settled(task)  # (answered: a notice of it would be stale)
    waiting = asyncio.create_task(link.waiting_for_input())
    try:
        waits: list[asyncio.Future[Any]] = [task.ended, waiting, conn.closed]
        timeout = max(0.0, deadline - loop.time())
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
    if conn.closed.done():  # (its caller gone: the prompt it would have shown is a notice,
        ctx.tasks.announce_prompt(task)  # as for a lost Bash caller's REPL, ND5; a trial)
    elif not task.ended.done() and not task.waiting_for_input:  # (its timeout passed: the
        ctx.tasks.announce_prompt(task, again=True)  # next prompt is told, a review)
    start = await stored_start(ctx, task.id, p.session, conn)  # (in turn, as TaskOutput)
    result = read_output(ctx, task.row, p.session, start, True, conn)
    if task.ended.done() and not p.keep_notice:
        end_reported(ctx, conn, task.row, p.session)
    return result


async def handle_interrupt(ctx: Context, p: InterruptRequest, conn: Connection) -> TaskRecord:
    """Ctrl+C for a running task (SPEC B3b), as a terminal gives it: an interactive task's
    terminal has the key typed (its line discipline signals what runs in front there);
    any other task's job gets SIGINT, its process group. The command decides what it
    means; the task runs on until it ends (a stop ends it whatever it decides). SIGPIPE
    (its CLI's reader gone) goes to the job's group as its command next writes."""
    confined(ctx, p.sandbox, p.session, _row(ctx, p.task_id, p.session), "an interrupt")
    task = _running(ctx, p.task_id, "interrupt")
    if p.signal == "PIPE":
        ctx.tasks.pipe_at_next_write(task)
    elif task.row.interactive:
        await _typed(ctx, task, _terminal(task).type(INTERRUPT_KEY))
    elif not await ctx.tasks.interrupt(task):
        _running(ctx, p.task_id, "interrupt")  # (it ended meanwhile: said as such)
        raise TaskNotRunningError(
            f"Cannot interrupt task {task.id}: its command has no process to interrupt "
            f"(not started yet, or ending); stop it instead",
            task_id=task.id,
        )
    return views.task_record(task.row, ctx.tasks)


async def handle_terminal(ctx: Context, p: TerminalParams, conn: Connection) -> TerminalResult:
    """Raw output from ``offset`` for a person's terminal, after typing their keys; or,
    a read that names its ``size``, of any task (``output --raw``: its log's bytes)."""
    row = _row(ctx, p.task_id, p.session)
    if p.input or p.resize is not None or p.size is None:  # (an attach names no size)
        _interactive(row)
    if p.input or p.resize is not None:
        confined(ctx, p.sandbox, p.session, row, "typing")
    task = ctx.tasks.live.get(row.id)
    resize = p.resize if task is not None and not task.ended.done() else None
    if p.input:
        await _allowed_input(p, row)
    sized: tuple[object, object] = (None, None)  # (the size it had, the alternate screen)
    forgotten = False
    path = row.output_path
    # A replay (no offset) that resizes is what the program printed before: what it draws
    # for its new size comes next (within the replay, vim's redraw ran in the margins it
    # had set for the old size, shifted in the person's terminal: a trial).
    printed = file_size(path) if p.offset is None and resize is not None else None
    if p.input or resize is not None:  # (an ended task's terminal has no size to set:
        task = _running(ctx, p.task_id, "type into")  # a person attaching sees its end)
        link = _terminal(task)
        if resize is not None:
            resizing = link.resize(*resize, sizer=p.sizer, only_if_last=p.only_if_last)
            answer = await _typed(ctx, task, resizing)
            sized = answer if isinstance(answer, tuple) else sized
        if p.input:
            await _typed(ctx, task, link.type(p.input, p.request_key))
            ctx.tasks.prompt_settled(task)  # (answered by a person: its notice, stale)
    elif p.sizer is not None and task is not None and not task.ended.done():
        forgotten = await _terminal(task).seen(p.sizer) is False  # (an attach's wait for
        # output: it is there; one the host had counted as gone sets its size again)
    end = file_size(path) if printed is None else printed
    offset = _replay_start(path, end) if p.offset is None else p.offset
    loop = asyncio.get_running_loop()
    deadline = loop.time() + p.wait / 1000
    while (
        file_size(path) <= offset
        and task is not None
        and not task.ended.done()
        and not conn.closed.done()
        and loop.time() < deadline
    ):
        host = task.terminal
        if host is not None and loop.time() - host.typed_at < TYPING_WINDOW:
            await asyncio.sleep(OUTPUT_POLL_TYPING)
        elif host is not None and not host.closed:
            await asyncio.wait([host.keys], timeout=OUTPUT_POLL_IDLE)
        else:
            await asyncio.sleep(OUTPUT_POLL_IDLE)
    data = _read_at(
        path, offset, (p.size or TERMINAL_CHUNK) if printed is None else printed - offset
    )
    current = task.row if task is not None else row
    log_gone = not data and row.log_gone and removed_outside(ctx, row)
    return TerminalResult(
        task_id=row.id,
        data=base64.b64encode(data).decode("ascii"),
        offset=offset + len(data),
        status=current.status,
        exit_code=current.exit_code,
        waiting_for_input=task is not None and task.waiting_for_input,
        size_before=sized[0] if isinstance(sized[0], tuple) else None,
        alternate_screen=sized[1] if isinstance(sized[1], bool) else None,
        log_gone=log_gone,
        sizer_forgotten=forgotten,
    )


async def _typed(ctx: Context, task: LiveTask, typing: Awaitable[object]) -> object:
    """Await a request to the terminal; a terminal that closed because the task ended
    (typing raced its end) is the "not running" error, as for a task that had ended;
    unless the host took the input first: the command ended as it read it (the end is
    the answer). Returns what the request answered."""
    try:
        return await typing
    except TerminalGone as exc:
        await asyncio.wait([task.ended], timeout=2)
        if task.ended.done():
            if isinstance(exc, TypedThenGone):
                return None
            _running(ctx, task.id, "type into")  # raises TaskNotRunningError
        raise


def _replay_start(path: str, end: int) -> int:
    """Where what a person who attaches sees first begins: the log's last
    ``TERMINAL_BACKLOG`` bytes, from the ESC of an escape sequence they begin inside, else
    from a character's start (cut inside one, its end was shown as text, ``31m`` or
    U+FFFD: a trial)."""
    cut = max(0, end - TERMINAL_BACKLOG)
    before = max(0, cut - ESCAPE_ROOM)
    return before + finished_start(_read_at(path, before, end - before), cut - before)


def _read_at(path: str, offset: int, size: int) -> bytes:
    """The log's bytes (none where it is gone); busy where no descriptor is free to read
    them with (none read as its end: `output --raw` stopped short, a review)."""
    try:
        with open_regular(path, buffering=0) as fh:
            return os.pread(fh.fileno(), size, offset)
    except OSError as exc:
        views.unread(exc)
        return b""


def end_reported(ctx: Context, conn: Connection, row: TaskRow, session: str) -> None:
    """TaskInput's answer tells the task's own session how it ended (P3): no completion
    notice says it again, once that answer has left. (TaskOutput's notice stays: the MCP
    server acknowledges it with the result that shows the end, once written to the host.)"""
    if row.session != session:
        return
    recorded, task_id = conn.after_reply, row.id

    def after_reply() -> None:
        if recorded is not None:
            recorded()
        ctx.journal.mark_delivered(session, [task_id])

    conn.after_reply = after_reply
