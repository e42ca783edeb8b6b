"""``output``: TaskOutput (SPEC B6): new output since this session's last read, with a real wait."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from wave_bash.api.constants import MAX_OUTPUT_CHARS
from wave_bash.api.errors import InvalidInputError, TaskNotFoundError
from wave_bash.api.models import TaskOutputResult, UnreadResult
from wave_bash.api.protocol import OutputParams, UnreadParams
from wave_bash.api.states import TaskStatus
from wave_bash.worker.tail import (
    PatternScanner,
    changes,
    compile_pattern,
    file_size,
    matching_lines,
    settled_end,
    whole_lines_end,
)

from .. import views
from ..context import Connection, Context
from ..journal import TaskRow
from ..tasks import LiveTask
from ..terminals import TerminalLink
from .tasks import not_found

T = TypeVar("T")


PATTERN_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="pattern")
"""Compiling and matching patterns happens here, off the event loop and apart from the
default pool (which stops use): costly patterns only ever wait for each other."""


FILTER_THREADS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="filter")
"""BashOutput's filters read all the output a read returns (up to the log's cap): two of
them on big logs held both pattern threads, and another session's pattern wait answered
after 39 s, not its 10 (a trial)."""


async def _in_pattern_thread(func: Callable[..., T], *args: Any) -> T:
    return await asyncio.get_running_loop().run_in_executor(PATTERN_THREADS, func, *args)


async def _filtered(
    path: str, keep: Any, begin: int, end: int, conn: Connection
) -> tuple[str, int]:
    """:func:`matching_lines` in a filter thread, ended once its caller has gone."""
    gone = threading.Event()

    def stop(_: object) -> None:
        gone.set()

    conn.closed.add_done_callback(stop)
    try:
        return await asyncio.get_running_loop().run_in_executor(
            FILTER_THREADS, matching_lines, path, keep, begin, end, MAX_OUTPUT_CHARS, gone
        )
    finally:
        conn.closed.remove_done_callback(stop)
        gone.set()  # (a caller cancelled here: the thread stops at its next chunk)


async def _compile(pattern: str | None, name: str = "pattern") -> Any:
    if pattern is None:
        return None
    try:
        return await _in_pattern_thread(compile_pattern, pattern)
    except ValueError as exc:
        raise InvalidInputError(
            f"{name} is not a valid regular expression here: {exc} (RE2 syntax, matched in "
            "linear time: no backreferences or lookaround)"
        ) from None


class _Search:
    """A pattern's search of a log, a chunk per job in the pattern threads, one job at a
    time: searches take the threads in turn (a job that searched to a big log's end held
    one for its whole wait: beside two 40-s waits, a 2-s wait on six bytes answered after
    29 s, a review), and each stops within a chunk of its wait's end."""

    def __init__(self, scanner: PatternScanner) -> None:
        self.scanner = scanner
        self._step: asyncio.Future[bool] | None = None
        """The job under way: a wait that gave up leaves it running (it cannot be
        stopped in its thread), and the next search begins once it is done."""

    async def run(self, deadline: float, more: Callable[[], bool]) -> bool:
        """Search on to the log's end as it is now, a chunk at least (a wait that ran out
        still sees what came last, if not too much), then while it is before
        ``deadline`` (monotonic) and ``more()``; whether the pattern matched."""
        if self._step is not None:
            await asyncio.shield(self._step)
        size = file_size(self.scanner.path)
        loop = asyncio.get_running_loop()
        while True:
            self._step = loop.run_in_executor(PATTERN_THREADS, self.scanner.step, size)
            over = await asyncio.shield(self._step)
            self._step = None
            if over or time.monotonic() >= deadline or not more():
                return self.scanner.found


PROMPT_CHECK_SECONDS = 0.1
"""How often a stream's piece looks for a prompt to show while its command waits for
input with nothing new (it waits on for a line meanwhile)."""


def _waits(task: LiveTask | None) -> bool:
    return task is not None and task.waiting_for_input


async def _wait(
    task: LiveTask,
    search: _Search | None,
    deadline: float,
    conn: Connection,
    until_waiting: bool = False,
    shown_to: int | None = None,
) -> None:
    """Until the task ends, ``search``'s pattern matches output after its start, or the
    ``deadline`` (monotonic); with ``until_waiting`` (an interactive task), also once its
    command waits for input (at once if it does: nothing comes before an answer), with
    ``shown_to`` (a stream's piece) only if its log goes on past there (a prompt to show).

    The pattern is matched in a worker thread, chunk by chunk, so that a big log never
    holds the event loop; the search stops at the next chunk once the wait is over.
    """
    path = task.row.output_path
    stop = asyncio.Event()

    def wake(_: object) -> None:
        stop.set()  # the task ended or the caller left: no need to look further

    async def waits(terminal: TerminalLink, shown_to: int) -> None:
        """Until the command waits for input with something not shown yet (a prompt,
        also after an answer with no echo, `read -s`: a review)."""
        while True:
            await terminal.waiting_for_input()
            if file_size(path) > shown_to:
                return
            await asyncio.sleep(PROMPT_CHECK_SECONDS)

    async def watch() -> None:
        if search is not None and await search.run(deadline, lambda: not stop.is_set()):
            return
        async for _ in changes(path, stop):  # ends when the task ends or the caller leaves
            if search is not None and await search.run(deadline, lambda: not stop.is_set()):
                return

    task.ended.add_done_callback(wake)
    conn.closed.add_done_callback(wake)
    waiting: asyncio.Task[None] | None = None
    if until_waiting:
        task.connect_terminal()
        if task.terminal is not None:
            terminal = task.terminal
            waiting = asyncio.create_task(
                terminal.waiting_for_input() if shown_to is None else waits(terminal, shown_to)
            )
            waiting.add_done_callback(wake)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watch(), timeout=deadline - time.monotonic())
    finally:
        stop.set()
        task.ended.remove_done_callback(wake)
        conn.closed.remove_done_callback(wake)
        if waiting is not None:
            waiting.remove_done_callback(wake)
            waiting.cancel()


async def _searched_to(
    search: _Search | None, pattern: Any, path: str, start: int, deadline: float, conn: Connection
) -> int | None:
    """Search what a read from ``start`` returns, on from where its wait got to: where the
    read ends so that ``patternMatched`` agrees with what it returns (none after a match).

    A wait ends by its timeout, a prompt or the task's end before it may have seen the
    last bytes (a review); this search stops at its chunk past the wait's ``deadline``
    (searched to the end of a big log, six waits of 8 s on 20 MB answered after 11 to 36
    s: a trial). A read that begins elsewhere than the wait's search (another reader of
    the session took output meanwhile) is searched anew: it may hold no match.
    """
    if search is None or search.scanner.start != start:
        search = _Search(PatternScanner(path, pattern, start))
    found = await search.run(deadline, lambda: not conn.closed.done())
    return None if found else search.scanner.searched_to


async def handle(ctx: Context, p: OutputParams, conn: Connection) -> TaskOutputResult:
    timeout_ms = p.timeout or 0.0
    deadline = time.monotonic() + timeout_ms / 1000  # (a compile waits in the pattern threads)
    pattern = await _compile(p.pattern)
    keep = await _compile(p.filter, "filter")  # (before anything is read)
    row = ctx.journal.get(p.task_id)
    if row is None:
        raise not_found(ctx, p.task_id, p.session)
    with ctx.tasks.answering_for(row.id):  # (a prune as it waited lost the task: a review)
        return await _answer(ctx, p, conn, row, pattern, keep, deadline)


async def _answer(
    ctx: Context,
    p: OutputParams,
    conn: Connection,
    row: TaskRow,
    pattern: Any,
    keep: Any,
    deadline: float,
) -> TaskOutputResult:
    stored = p.offset is None
    start = p.offset or 0
    search = None
    task = ctx.tasks.live.get(row.id)
    if p.block and task is not None:
        ctx.tasks.watch_job(task)
        since = ctx.journal.read_offset(row.id, p.session) if stored else start
        if pattern is not None:
            search = _Search(PatternScanner(row.output_path, pattern, since))
        # (a stream goes on past a prompt, which it shows once its command waits: its
        # pieces of whole lines never showed `Proceed? [y/N] `, a trial)
        shown_to = since if p.follow else None
        await _wait(task, search, deadline, conn, row.interactive, shown_to)
        row = task.row
    if stored:  # (read in turn, once the wait is over: another reader may have taken
        start = await stored_start(ctx, row.id, p.session, conn)  # some meanwhile)
    searched_to = None  # (an ended task's too: its wait's search may not have got far)
    if p.block and pattern is not None:
        searched_to = await _searched_to(search, pattern, row.output_path, start, deadline, conn)
    # (not waiting: what is there now, a running task's unfinished last line too; cut
    # short of it, `output ID` printed it as a 30,000-character excerpt: a review)
    now = not p.block or row.id not in ctx.tasks.live or (p.follow and _waits(task))
    result = read_output(
        ctx, row, p.session, start, stored, conn,
        follow=p.follow, to_end=now, exact=p.exact_output, limit=searched_to,
    )  # fmt: skip
    if keep is not None:  # (BashOutput's: the matching lines alone, of all it read)
        end = result.next_offset if result.next_offset is not None else file_size(row.output_path)
        begin = result.start_offset if result.start_offset is not None else start
        try:
            kept, omitted = await _filtered(row.output_path, keep, begin, end, conn)
        except OSError as exc:  # (no descriptor to read with: busy, nothing moved)
            views.unread(exc)
            raise
        result = result.model_copy(update={"output": kept, "truncated": bool(omitted)})
    if not p.block or pattern is None:
        return result
    return result.model_copy(update={"pattern_matched": searched_to is None})


async def handle_unread(ctx: Context, p: UnreadParams, conn: Connection) -> UnreadResult:
    """Give a read back whose result never reached its reader (B6c), in turn with the
    session's other readers of that task: only while no read after it moved on."""
    await stored_start(ctx, p.task_id, p.session, conn)
    if p.back_to >= p.read_to:
        return UnreadResult(unread=False)
    return UnreadResult(unread=give_back_read(ctx, p.task_id, p.session, p.read_to, p.back_to))


def give_back_read(ctx: Context, task_id: str, session: str, read_to: int, back_to: int) -> bool:
    """The session's read offset of the task back from ``read_to`` to ``back_to`` (its
    result never reached the reader), unless a read after it moved it on."""
    if ctx.journal.get(task_id) is None or ctx.journal.read_offset(task_id, session) != read_to:
        return False
    ctx.journal.set_read_offset(task_id, session, back_to)
    return True


def _recorded_read(
    ctx: Context, task_id: str, session: str, start: int, end: int
) -> tuple[Callable[[], None], Callable[[], object]]:
    """How a read from ``start`` to ``end`` is recorded once its reply left, and how it is
    given back: only once recorded. A reply that never left moved nothing, and gave back
    the read of another reader, who had read the same output as its own (its caller gone,
    it had read without its turn): that output was shown twice (a review)."""
    recorded = False

    def record() -> None:
        nonlocal recorded
        ctx.journal.set_read_offset(task_id, session, end)
        recorded = True

    def undo() -> bool:
        return recorded and give_back_read(ctx, task_id, session, end, start)

    return record, undo


async def stored_start(ctx: Context, task_id: str, session: str, conn: Connection) -> int:
    """The session's read offset of the task once this reader's turn has come: what it
    reads from there is its own until its reply has left (``read_output``)."""
    await ctx.read_turns.take(task_id, session, conn)
    return ctx.journal.read_offset(task_id, session)


FOLLOW_PIECE_BYTES = 512 * 1024
"""What a piece of ``output --follow`` reads at most: whole lines up to here, or else the
first whole line up to ``FOLLOW_LINE_BYTES`` (a piece is never truncated). Each piece is a
call, over ``--remote`` a new ssh session: 16 KiB pieces took 226 s for 27 MB there (a
trial), where ``ssh cat`` takes 0.7 s; the largest piece, JSON-escaped, stays well under
a message's bound."""
FOLLOW_LINE_BYTES = 1 << 20
"""A line longer than this is cut (at a character boundary) into pieces."""


def removed_outside(ctx: Context, row: TaskRow) -> bool:
    """Whether ``row``'s log, found gone, was removed outside wave-bash (B6d).

    Raises:
        TaskNotFoundError: a prune removed it (the row is being deleted): the task is gone,
            as it is once its row is (it read as removed outside wave-bash: a trial).
    """
    if ctx.journal.get(row.id) is None:
        raise TaskNotFoundError(row.id)
    return True


def read_output(
    ctx: Context,
    row: TaskRow,
    session: str,
    start: int,
    stored: bool,
    conn: Connection,
    *,
    follow: bool = False,
    to_end: bool = False,
    exact: bool = False,
    limit: int | None = None,
) -> TaskOutputResult:
    """The output of ``row``'s log from ``start`` to its end, with the task's state; with
    ``stored``, the end becomes the session's read offset once the result has left; with
    ``follow``, a piece of a stream (whole lines, bounded; with ``to_end``, an unfinished
    last line too, as of an ended task); ``exact``: an excerpt keeps its blank edge lines;
    ``limit``: the read ends there at the latest (a pattern's search got no further)."""
    end = size = file_size(row.output_path)
    if start > end:  # cut in place (`: > LOG`, logrotate's copytruncate): read again from
        start = 0  # its start, as `tail -f` does (what it wrote next was never shown: a trial)
    if limit is not None:
        end = max(start, min(end, limit))
    live = ctx.tasks.live.get(row.id)
    if live is not None and not live.ended.done():  # (written on: no half of a character)
        end = settled_end(row.output_path, start, end)
    if follow:
        if to_end and end - start <= FOLLOW_PIECE_BYTES:
            pass  # the last piece: its last line too, newline or not
        else:
            try:
                end = whole_lines_end(
                    row.output_path, start, end, FOLLOW_PIECE_BYTES, FOLLOW_LINE_BYTES, to_end
                )
            except OSError as exc:  # (no descriptor to read with: busy, nothing moved)
                views.unread(exc)
                raise
    line_ended: bool | None = None
    if follow:  # (exact: trimmed and printed as lines, pieces lost blank lines at their
        text, line_ended = views.log_piece(row.output_path, start, end)  # edges and cut
        truncated = False  # long lines with a newline: a trial)
    else:
        excerpt = views.log_excerpt(row.output_path, start=start, end=end, exact=exact)
        text, truncated = excerpt.text, excerpt.truncated
    if stored and end > start:  # recorded once the result left: a lost reply is re-read
        conn.after_reply, undo = _recorded_read(ctx, row.id, session, start, end)
        conn.give_back.append(undo)
    log_gone = row.log_gone and removed_outside(ctx, row)
    shown = live is not None and live.waiting_for_input and stored and not conn.closed.done()
    if live is not None and shown and session == row.session:  # (its notice: stale once
        ctx.tasks.prompt_settled(live)  # answered; only its session's read: a review)
    storage = None  # (DF4: an ended one's, the line its notice has)
    if row.status is not TaskStatus.RUNNING:
        storage = row.storage_note or (live.storage_note if live is not None else None)
    return TaskOutputResult(
        task_id=row.id, status=row.status,
        exit_code=row.exit_code, end_reason=row.end_reason if row.status.ended else None,
        output=text, truncated=truncated, output_path=row.output_path,
        next_offset=end, start_offset=start, leftover_processes=ctx.tasks.leftover_count(row.id),
        waiting_for_input=live is not None and live.waiting_for_input,
        log_gone=log_gone,
        line_ended=line_ended,
        unsearched_bytes=None if limit is None else size - end,  # (where the read ended)
        error=storage,
    )  # fmt: skip
