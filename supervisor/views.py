"""Turn journal rows and task files into the contract's models (SPEC §6, I4, B5, S1)."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import assert_never

from wave_bash.api import texts
from wave_bash.api.constants import MAX_OUTPUT_CHARS, SHORT_RESULT_LINES
from wave_bash.api.errors import BusyError
from wave_bash.api.models import BashResult, Notice, PermissionInfo, Progress, TaskRecord
from wave_bash.api.permissions import Decision
from wave_bash.api.states import BackgroundReason, EndReason, TaskStatus
from wave_bash.worker import Excerpt, last_lines, read_excerpt, read_piece
from wave_bash.worker.files import SHORT_OF_DESCRIPTORS, gone_or_replaced

from .journal import TaskRow
from .tasks import LiveTask, TaskManager

log = logging.getLogger(__name__)

NOTICE_COMMAND_CHARS = 200
"""A notice record quotes at most this much of its command (its first line)."""


def _time(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, UTC) if ts is not None else None


def log_excerpt(
    path: str, start: int = 0, end: int | None = None, *, exact: bool = False
) -> Excerpt:
    """Cleaned, truncated output of a task log (an empty excerpt if the log is gone).

    Raises:
        BusyError: see :func:`unread`.
    """
    try:
        return read_excerpt(path, MAX_OUTPUT_CHARS, start=start, end=end, exact=exact)
    except OSError as exc:  # (gone, or replaced by something else: a directory, a FIFO)
        unread(exc)
        return Excerpt("", False, 0)


def log_piece(path: str, start: int, end: int) -> tuple[str, bool]:
    """A bounded piece of a task log, cleaned, nothing trimmed (see :func:`read_piece`);
    nothing if the log is gone.

    Raises:
        BusyError: see :func:`unread`.
    """
    try:
        return read_piece(path, start, end)
    except OSError as exc:  # (gone, or replaced by something else: a directory, a FIFO)
        unread(exc)
        return "", False


def unread(exc: OSError) -> None:
    """A log the supervisor has no descriptor to open is there, unread: not one gone (it
    read as empty, and the session's read offset went past what no one saw: a trial). A
    read is tried again by its client (nothing was read, nothing moved)."""
    if exc.errno in SHORT_OF_DESCRIPTORS:
        raise BusyError(
            f"the supervisor is out of file descriptors ({exc.strerror}): the output was not read"
        ) from None


def result_excerpt(task: LiveTask, path: str, end: int | None = None, *,
                   exact: bool = False) -> tuple[Excerpt, str | None]:  # fmt: skip
    """A log's excerpt for a result that cannot be asked again (its command ran), and a
    line saying where the output is when it cannot be read now, or that it is gone
    (B6d: removed while the command ran, its result said nothing at all: a review)."""
    try:
        excerpt = log_excerpt(path, end=end, exact=exact)
    except BusyError:
        return Excerpt("", False, 0), texts.unread_output_text(task.id, path)
    if (
        not excerpt.text
        and task.row.end_reason is not EndReason.NOT_STARTED
        and gone_or_replaced(path)
    ):
        said = texts.log_gone_text(path)
        return excerpt, f"{said[0].upper()}{said[1:]}."
    return excerpt, None


def task_record(row: TaskRow, tasks: TaskManager) -> TaskRecord:
    """A task's record, with what only the supervisor knows now: processes it left
    running, a lost monitor, what it used so far."""
    live = tasks.live.get(row.id)
    usage = tasks.usage_now(row)
    return TaskRecord(
        id=row.id, command=row.command, description=row.description,
        status=row.status, owner=row.owner,
        background_reason=row.background_reason, exit_code=row.exit_code,
        pid=row.pid, started_at=_time(row.started_at) or datetime.now(UTC),
        ended_at=_time(row.ended_at), output_path=row.output_path, session=row.session,
        cwd=row.cwd, end_reason=row.end_reason,
        leftover_processes=tasks.leftover_count(row.id),
        monitor_lost=live is not None and live.monitor_lost,
        cpu_seconds=usage.cpu_seconds, peak_memory_bytes=usage.peak_memory,
        interactive=row.interactive,
        waiting_for_input=live is not None and live.waiting_for_input,
        permission=PermissionInfo.model_validate_json(row.permission) if row.permission else None,
        sandbox=row.sandbox,
    )  # fmt: skip


def refused_result(decision: Decision, message: str) -> BashResult:
    """PM3: a command the permission check did not let run (nothing was started)."""
    return BashResult(
        success=False, message=message, error=message,
        permission=PermissionInfo.model_validate(decision.to_json()),
    )  # fmt: skip


def notice(row: TaskRow, leftovers: int = 0) -> Notice:
    status = row.status
    return Notice(
        task_id=row.id, status=status, exit_code=row.exit_code,
        command=texts.short_command(row.command, NOTICE_COMMAND_CHARS),
        description=texts.short_command(row.description, NOTICE_COMMAND_CHARS)
        if row.description
        else None,
        output_path=row.output_path, ended_at=_time(row.ended_at),
        message=texts.notice_text(
            row.id, row.command, row.description, status, row.exit_code, row.output_path,
            row.end_reason, leftovers, row.storage_note,
            row.background_reason in (BackgroundReason.CALLER_LOST, BackgroundReason.INPUT),
        ),
    )  # fmt: skip


def progress(task: LiveTask, size: int) -> Progress:
    ex, _ = result_excerpt(task, task.row.output_path, size)  # (the next one shows it)
    return Progress(
        task_id=task.id,
        short_result=last_lines(ex.text, SHORT_RESULT_LINES),
        result=ex.text,
        elapsed_ms=int((time.time() - task.row.started_at) * 1000),
        output_bytes=size,
        truncated=ex.truncated,
    )


def _duration_ms(task: LiveTask) -> int:
    end = task.row.ended_at or time.time()
    return int((end - task.row.started_at) * 1000)


def finished_result(task: LiveTask, left_running: int = 0, *, exact: bool = False) -> BashResult:
    """A foreground command that ended before its timeout (SPEC R1, R2); with
    ``left_running`` processes it started still running (a server put in the background
    with ``&``), said with the task ID that TaskStop takes; with ``exact``, its output
    with the blank lines at its edges (``RunParams.exact_output``)."""
    row = task.row
    out, unshown = result_excerpt(task, row.output_path, exact=exact)
    err, err_unshown = (
        result_excerpt(task, row.err_path) if row.err_path else (Excerpt("", False, 0), None)
    )
    unshown = unshown or err_unshown
    code = row.exit_code
    message = texts.finished_text(out.text, code)
    never_started = row.end_reason is EndReason.NOT_STARTED  # (an error of the call, R2:
    if never_started:  # nothing ran; `run` exited 1, as if the command had failed)
        message = texts.NOT_STARTED_TEXT
    elif row.status is TaskStatus.LOST:
        message = (
            f"{out.text}\nThe command's exit status was lost (its monitor was killed).".lstrip()
        )
    stopped = texts.stopped_text(code, row.end_reason) if row.status is TaskStatus.KILLED else None
    if stopped:
        message = f"{message}\n{stopped}".lstrip()
    if left_running:
        message = f"{message}\n{texts.left_running_text(row.id, left_running)}".lstrip()
    if unshown:
        message = f"{message}\n{unshown}".lstrip()
    sandbox = task.sandbox
    if sandbox is not None and code not in (0, None) and not stopped:
        net = sandbox.network
        evidence = texts.sandbox_denial(out.text, net) or texts.sandbox_denial(err.text, net)
        if evidence is not None:
            said = texts.sandbox_failure_text(evidence, sandbox.mode, sandbox.workspace, net)
            message = f"{message}\n{said}"
    return BashResult(
        success=code == 0,
        stdout=out.text,
        stderr=err.text,
        exit_code=code,
        output_path=row.output_path,
        truncated=out.truncated or err.truncated,
        cwd=task.final_cwd or (row.cwd if task.cwd_note else None),
        duration_ms=_duration_ms(task),
        message=_with_notes(task, message),
        error=task.storage_note or unshown or (message if never_started else None),
        leftover_processes=left_running,
    )


def _with_notes(task: LiveTask, message: str) -> str:
    """A result's text with what the model must know beside the output, one line each."""
    lines = [task.cwd_note, message, task.storage_note, task.sandbox_note]
    return "\n".join(line for line in lines if line)


def terminated_result(task: LiveTask, timeout_ms: float) -> BashResult:
    """The ``sleep`` exception of F3: terminated, still a success."""
    row = task.row
    out, unshown = result_excerpt(task, row.output_path)
    note = "\n".join(filter(None, (texts.sleep_terminated_text(timeout_ms), unshown)))
    return BashResult(
        success=True,
        stdout=out.text,
        exit_code=row.exit_code,
        interrupted=True,
        output_path=row.output_path,
        truncated=out.truncated,
        duration_ms=_duration_ms(task),
        message=f"{out.text}\n{note}" if out.text else note,
        error=unshown,
    )


def backgrounded_result(task: LiveTask, timeout_ms: float | None = None) -> BashResult:
    """B4a (timeout), B4b (user) or B4c (explicit) for a task now owned by the background;
    P2 for an interactive one that waited for input (with its output so far)."""
    row = task.row
    path = row.output_path
    reason = row.background_reason
    match reason:
        case BackgroundReason.INPUT:
            return waiting_result(task)
        case BackgroundReason.TIMEOUT:
            message = texts.auto_backgrounded_text(row.id, path, timeout_ms or 0)
        case BackgroundReason.USER:
            message = texts.user_backgrounded_text(row.id, path)
        case BackgroundReason.EXPLICIT | BackgroundReason.CALLER_LOST | None:
            message = texts.background_started_text(row.id, path)
        case _:
            assert_never(reason)
    return BashResult(
        success=True,
        cwd=row.cwd if task.cwd_note else None,
        background_task_id=row.id,
        backgrounded_by_user=reason is BackgroundReason.USER,
        assistant_auto_backgrounded=reason is BackgroundReason.TIMEOUT,
        output_path=path,
        duration_ms=_duration_ms(task),
        message=_with_notes(task, message),
    )


def waiting_result(task: LiveTask, end: int | None = None) -> BashResult:
    """P2: an interactive command waits for input: its output so far (up to ``end``) and
    how to answer."""
    row = task.row
    out, unshown = result_excerpt(task, row.output_path, end)
    note = "\n".join(filter(None, (unshown, texts.waiting_for_input_text(row.id, row.output_path))))
    return BashResult(
        success=True,
        stdout=out.text,
        cwd=row.cwd if task.cwd_note else None,
        background_task_id=row.id,
        output_path=row.output_path,
        truncated=out.truncated,
        duration_ms=_duration_ms(task),
        message=_with_notes(task, f"{out.text}\n{note}" if out.text else note),
        waiting_for_input=task.waiting_for_input,
        error=unshown,
    )
