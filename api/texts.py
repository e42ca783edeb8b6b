"""The exact texts shown to the model (SPEC B4, F3, B5), rendered from the constants.

No text about a timeout says "timed out": a command that outlives its timeout keeps
running, so the words must not suggest a failure.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, assert_never

from .states import EndReason, TaskStatus


def format_seconds(ms: float) -> str:
    """Milliseconds as seconds the way people write them: ``120``, ``2``, ``1.5``, to the
    microsecond (1.5 ms was ``0.002``: a trial); under a millisecond, its own three
    digits (0.5 ms was ``0.001``: a trial), never in exponent form (``1e-06``, a trial),
    to 15 places at most."""
    places = 6
    if 0 < ms < 1:
        places = min(15, 5 - math.floor(math.log10(ms)))  # (of ms: 5e-324 / 1000 is 0)
    return f"{ms / 1000:.{places}f}".rstrip("0").rstrip(".")


def auto_backgrounded_text(task_id: str, output_path: str, timeout_ms: float) -> str:
    """B4a: the foreground timeout passed and the command moved to the background."""
    return (
        f"Command exceeded the timeout ({format_seconds(timeout_ms)}s) and was moved to the "
        f"background with ID: {task_id}. It is still running — you will be notified when it "
        f"completes. Output is being written to: {output_path}"
    )


def user_backgrounded_text(task_id: str, output_path: str) -> str:
    """B4b: the user moved the running command to the background."""
    return (
        f"Command was manually backgrounded by user with ID: {task_id}. "
        f"Output is being written to: {output_path}"
    )


def background_started_text(task_id: str, output_path: str) -> str:
    """B4c: the command was started with ``run_in_background``."""
    return f"Command running in background with ID: {task_id}. Output is being written to: {output_path}"


def waiting_for_input_text(task_id: str, output_path: str) -> str:
    """P2: an interactive command waits for input; the call returned, the command runs."""
    return (
        f"Command is waiting for input (ID: {task_id}). It is still running. Answer with "
        f'TaskInput (task_id "{task_id}"; end a line with \\n to press Enter, \\u0003 is '
        f"Ctrl+C, \\u0004 is Ctrl+D), read more with TaskOutput, or stop it with TaskStop. "
        f"Output is being written to: {output_path}"
    )


def unread_output_text(task_id: str, output_path: str) -> str:
    """A result whose output could not be read as it was given (out of descriptors)."""
    return (
        f"Its output is not shown: the supervisor had no file descriptor free to read it. "
        f"It is all in {output_path} (TaskOutput {task_id} reads it)."
    )


def sleep_terminated_text(timeout_ms: float) -> str:
    """F3 exception: a ``sleep`` command passed its timeout and was terminated."""
    return f"Command exceeded the timeout ({format_seconds(timeout_ms)}s) and was terminated."


def finished_text(output: str, exit_code: int | None) -> str:
    """R1: the output of a finished command, plus ``Exit code N`` when it is not zero."""
    if exit_code in (0, None):
        return output
    tail = f"Exit code {exit_code}"
    return f"{output}\n{tail}" if output else tail


NOT_STARTED_TEXT = (
    "The command was never started: its supervisor stopped before handing it over, so "
    "nothing ran (it can be run again)."
)
"""R1: a foreground command whose supervisor died before it ran (D3a)."""


def moved_aside_text(paths: list[str], task_id: str, unjudged: Sequence[str] = ()) -> str:
    """SB1: protected files a sandboxed command made, which no mount could keep (they were
    missing), moved aside as it ended; where there was more to judge than it looks at."""
    said = []
    if paths:
        said.append(
            "The sandbox moved aside what the command made where git or a shell would run "
            f"it outside: {', '.join(paths)} (now *.moved-by-wave-bash-{task_id}*). A "
            "repository without its config or hooks works only in part: the user may "
            "review each and, if it runs nothing unwanted, move it back outside the sandbox."
        )  # (a clone's config gone, the sandbox kept its git dir read-only, and it said
        # not what to do: a trial)
    if unjudged:
        said.append(
            f"The sandbox could not look at all the command made in {', '.join(unjudged)} "
            "(too many directories or files): review the repositories there before git runs "
            "in them."
        )
    return " ".join(said)


def stopped_text(exit_code: int | None, end_reason: EndReason | None) -> str | None:
    """Why a foreground command was ended by wave-bash, where its exit code (143, 137)
    alone reads as a crash or an out-of-memory kill; None when nothing ended it."""
    if end_reason not in (
        EndReason.STOPPED,
        EndReason.LOG_CAP,
        EndReason.MEMORY_LIMIT,
        EndReason.TIMEOUT,
        EndReason.SANDBOX_ESCAPE,
    ):
        return None
    if end_reason is EndReason.STOPPED:
        return "The command was stopped (TaskStop) before it ended."
    if end_reason is EndReason.TIMEOUT:
        return "The command was stopped at its timeout (a `sleep` is not moved to the background)."
    return f"The command {_killed_text(exit_code, end_reason)}."


def outcome_text(
    status: TaskStatus, exit_code: int | None, end_reason: EndReason | None = None
) -> str:
    """How a task ended (or that it runs), as a phrase for its completion notice."""
    match status:
        case TaskStatus.RUNNING:
            return "is still running"
        case TaskStatus.COMPLETED:
            return "completed with exit code 0"
        case TaskStatus.FAILED:
            return f"failed with exit code {exit_code}"
        case TaskStatus.KILLED:
            return _killed_text(exit_code, end_reason)
        case TaskStatus.LOST:
            if end_reason is EndReason.MONITOR_LOST:
                return "was lost: its exit status could not be recorded"
            if end_reason is EndReason.NOT_STARTED:
                return "was never started (its supervisor stopped first; nothing ran)"
            return "was lost when the host restarted"
        case _:
            assert_never(status)


def _killed_text(exit_code: int | None, end_reason: EndReason | None) -> str:
    match end_reason:
        case None if exit_code is not None:
            return f"was killed by signal {exit_code - 128}"
        case EndReason.LOG_CAP:
            return "was stopped because its output reached the log size cap"
        case EndReason.MEMORY_LIMIT:
            return "was killed because it reached the task memory limit"
        case EndReason.SANDBOX_ESCAPE:
            return (
                "was stopped because a file that git outside the sandbox would run was made "
                "in its workspace"
            )
        case (
            None
            | EndReason.STOPPED
            | EndReason.TIMEOUT
            | EndReason.MONITOR_LOST
            | EndReason.NOT_STARTED
            | EndReason.HOST_RESTART
        ):
            return "was stopped"
        case _:
            assert_never(end_reason)


def notice_text(
    task_id: str,
    command: str,
    description: str | None,
    status: TaskStatus,
    exit_code: int | None,
    output_path: str,
    end_reason: EndReason | None = None,
    leftovers: int = 0,
    storage_note: str | None = None,
    caller_lost: bool = True,
) -> str:
    """B5: the completion notice of a background task (bounded: a command's first line),
    with what a full state dir did as it ended (DF4); ND5: one running waits for input
    (``caller_lost``: its caller went away, else it went on in the background)."""
    label = short_command(description if description and description.strip() else command)
    if status is TaskStatus.RUNNING:
        why = ": its caller went away before its prompt reached it" if caller_lost else ""
        return (
            f'Interactive command "{label}" (ID: {task_id}) is waiting for input{why}. Read '
            f"it with TaskOutput, answer with TaskInput, or stop it with TaskStop. Output: "
            f"{output_path}"
        )
    return (
        f'Background command "{label}" (ID: {task_id}) '
        f"{outcome_text(status, exit_code, end_reason)}{leftover_text(leftovers)}. "
        f"Output: {output_path}" + (f"\n{storage_note}" if storage_note else "")
    )


def leftover_text(count: int) -> str:
    """What a task that ended left running, as a clause (empty when nothing)."""
    if count <= 0:
        return ""
    these = "process it started is" if count == 1 else "processes it started are"
    return f"; {count} {these} still running (TaskStop stops them)"


def left_running_text(task_id: str, count: int) -> str:
    """The line of a foreground result whose command left processes running."""
    if count == 1:
        these, them, are = "1 process it started is", "it", "it is"
    else:
        these, them, are = f"{count} processes it started are", "them", "they are"
    return (
        f"Note: {these} still running (task {task_id}). Stop {them} with TaskStop "
        f'(task_id "{task_id}") once {are} no longer needed.'
    )


NOTICE_LABEL_CHARS = 80
"""How much of a command a notice quotes when the task has no description."""


_CONTROLS = {
    **{code: f"^{chr(code + 64)}" for code in range(32)},
    0x7F: "^?",
    **{code: f"\\x{code:02x}" for code in range(0x80, 0xA0)},
}


def visible(text: str) -> str:
    """``text`` with its control characters shown, as ``cat -v`` does (``^[`` for ESC):
    printed raw, a command's colour codes or carriage returns would act on the table."""
    return text.translate(_CONTROLS)


_CONTROLS_BUT_LINES = {code: shown for code, shown in _CONTROLS.items() if code not in (9, 10)}
_UNSEEN_CATEGORIES = frozenset({"Cf", "Zl", "Zp", "Co", "Cn", "Cs"})
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters that draw nothing (Hangul fillers, the blank Braille pattern)."""


def for_approval(text: str) -> str:
    """``text`` as a person deciding on it must see it: its lines and tabs kept, every
    other control character shown (:func:`visible`), and each character that shows
    nothing or moves lines (a bidirectional override, a zero-width space, a Unicode line
    separator, a Hangul filler, a private or unassigned one) named, ``<U+202E>``. Printed
    raw, a command's ``ESC[2K`` and carriage return rewrote the question's line to name
    another command, and "yes" ran the hidden one (helpers 215, 218)."""
    import unicodedata  # (only when asking: the CLI starts without it)

    return "".join(
        _unseen(ch)
        if ch in _BLANK_LETTERS or unicodedata.category(ch) in _UNSEEN_CATEGORIES
        else ch
        for ch in text.translate(_CONTROLS_BUT_LINES)
    )


def _unseen(ch: str) -> str:
    """A character that shows nothing, named: a byte that is no UTF-8 (a path's
    ``\\udcff``) as ``\\xff``, the rest as ``<U+202E>``. A surrogate went raw into an MCP
    question, which the SDK could not send: the server ended without a word (a review)."""
    code = ord(ch)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"<U+{code:04X}>"


def short_command(command: str, limit: int = NOTICE_LABEL_CHARS) -> str:
    """A command's first line, cut to ``limit`` characters with an ellipsis: a notice or
    record that names a command stays short whatever the command (a 100 KB heredoc).
    Its control characters are shown (:func:`visible`): an escape sequence in a command
    went as it was into notices for a model, as it did to a terminal (a trial)."""
    lines = command.strip().splitlines() or [""]
    first = visible(lines[0])
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first + (" …" if len(lines) > 1 else "")


SANDBOX_DENIALS = (
    "read-only file system", "operation not permitted", "permission denied",
    "device or resource busy",
)  # fmt: skip
"""What a command that failed prints when the sandbox refused it something (as Codex's
``is_likely_sandbox_denied`` looks for; `git config` meets a bound file's EBUSY)."""
SANDBOX_NETWORK_DENIALS = (
    "could not resolve host", "temporary failure in name resolution",
    "name or service not known", "network is unreachable", "connection refused",
    "couldn't connect to server", "failed to connect",
)  # fmt: skip
"""The same, where the sandbox has no network."""


EVIDENCE_CHARS = 200
"""Most characters of the line a sandbox hint quotes, around the words it matched."""


def sandbox_denial(output: str, network: bool) -> str | None:
    """The first line of a failed sandboxed command's output that reads as the sandbox
    refusing it something, cut around the words that matched (a long line's start was
    quoted without them: a review); ``None``: none does."""
    words = SANDBOX_DENIALS + (() if network else SANDBOX_NETWORK_DENIALS)
    for line in output.splitlines():
        line = line.strip()
        lower = line.lower()
        found = [lower.find(word) for word in words if word in lower]
        if found:
            start = max(0, min(found) - EVIDENCE_CHARS // 2)
            end = start + EVIDENCE_CHARS
            return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")
    return None


def sandbox_failure_text(evidence: str, mode: str, workspace: str | None, network: bool) -> str:
    """SB: a sandboxed command failed, by its output maybe for the sandbox: said, with what
    the sandbox allows (the kernel's words alone, "Device or resource busy" from `git
    config`, "Connection refused" from a dev server another command started, sent agents
    debugging git or the server: a trial)."""
    where = "in the session's own /tmp and an empty /var/tmp (not the host's)"
    if mode == "workspace-write" and workspace:
        where = (
            f"only in {workspace}, the session's own /tmp and an empty /var/tmp (not the host's)"
        )
    net = (
        ""
        if network
        else "; it has no network, not even loopback to a server another command started "
        "(each command has its own)"
    )
    quoted = json.dumps(evidence, ensure_ascii=False)  # (its quotes escaped: the output
    # cannot end the quote and speak as wave-bash, a review)
    return (
        f"This may be the sandbox's doing (its output: {quoted}): the command ran in the "
        f"{mode} sandbox, which lets it write {where}, with each repository's .git/config and "
        f"hooks read-only{net}. A command that needs more must run outside the sandbox, "
        "which the user decides."
    )


def log_gone_text(path: str) -> str:
    """B6d: a task whose log was removed (``output`` said nothing, exit 0: a review)."""
    return (
        f"its log {path} is gone: it was removed or replaced outside wave-bash, so its "
        "output cannot be shown"
    )


def more_notices_text(count: int) -> str:
    """Notices left for the next results: one result carries a bounded number."""
    if count == 1:
        return "1 more background task ended; its notice comes with the next result"
    return f"{count} more background tasks ended; their notices come with the next results"


def notices_waiting_text(claim: dict[str, Any]) -> str:
    """DF2: notices a full state dir keeps back (no claim can be recorded)."""
    count = int(claim.get("waiting") or 0)
    these = (
        "a background task ended; its notice waits"
        if count == 1
        else f"{count} background tasks ended; their notices wait"
    )
    return f"{these} until the state dir can be written again ({claim.get('storageProblem')})"


def tool_result_text(tool: str, data: dict[str, Any]) -> str:
    """The text a model sees for a tool result (contract JSON ``data``).

    Bash results carry their own ``message``; TaskOutput shows status, exit code and the
    new output; TaskStop confirms what was stopped.
    """
    if "message" in data:
        return str(data["message"])
    status, code = data.get("status"), data.get("exitCode")
    state = f"Status: {status}" + ("" if code is None else f" (exit code {code})")
    if data.get("endReason") and "output" in data:  # (a TaskStop's text says it was stopped)
        reason = EndReason(data["endReason"])
        state += f"; it {outcome_text(TaskStatus(str(status)), code, reason)}"
    state += leftover_text(int(data.get("leftoverProcesses") or 0))
    if data.get("patternMatched") is False:  # (a prompt ends a wait too: no timeout)
        timed_out = status == TaskStatus.RUNNING and not data.get("waitingForInput")
        state += "; the pattern was not found" + (" before the timeout" if timed_out else "")
        unsearched = int(data.get("unsearchedBytes") or 0)
        if unsearched:  # (the read ends where the search got to: the rest comes next)
            state += (
                f"; {unsearched} more bytes of output, not searched yet, come with the next read"
            )
    if data.get("waitingForInput"):
        state += "; waiting for input (answer with TaskInput)"
    elif tool == "TaskInput" and status == TaskStatus.RUNNING:  # its timeout passed
        state += "; no prompt before the timeout (TaskOutput waits for the next one, or the end)"
    if data.get("logGone"):
        return f"{state}\n({log_gone_text(str(data.get('outputPath')))})"
    if "output" in data:
        error = f"\n{data['error']}" if data.get("error") else ""  # (DF4)
        return f"{state}\n{data['output'] or '(no new output)'}{error}"
    stopped = int(data.get("stoppedProcesses") or 0)
    if stopped:
        these = "the process" if stopped == 1 else f"the {stopped} processes"
        state += f"; stopped {these} it had left running"
    return f"Task {data.get('id')} {'was stopped' if status == TaskStatus.KILLED else status}. {state}."


def cancelled_still_running_text(task_id: str, command: str, output_path: str) -> str:
    """I3c: the command of a Bash call the host cancelled (its own timeout, Esc) still
    runs: said with the next result, or a model that took the cancel for a failure ran
    it again (a trial)."""
    return (
        f'The command of a cancelled call, "{short_command(command)}", is still running in '
        f"the background with ID: {task_id} — you will be notified when it completes. "
        f"Output is being written to: {output_path}"
    )


def cancelled_input_typed_text(task_id: str, typed: str, said: bool = True) -> str:
    """I3d: the input of a TaskInput call the host cancelled was typed all the same (the
    call had reached the task): said with the next result, or a model that retried the
    call answered the task's next prompt with it (a trial). Not ``said`` (the call was
    cancelled before it answered): most likely typed."""
    shown = json.dumps(typed[:NOTICE_LABEL_CHARS], ensure_ascii=False)
    cut = "…" if len(typed) > NOTICE_LABEL_CHARS else ""
    how = (
        "was typed into task {} all the same"
        if said
        else ("was most likely typed into task {} (the call was cancelled before it answered)")
    )
    return (
        f"The input of a cancelled TaskInput call, {shown}{cut}, {how.format(task_id)}: "
        "read its output (TaskOutput) before you type it again."
    )


def remote_paths_text(remote: str) -> str:
    """What a model is told of the output paths of a remote's tasks: they are no files of
    its host's (one read them with its own file reader, which found nothing there or
    another file: a trial)."""
    return (
        f"(These paths are on the remote dev box {remote}, not on this machine: read a "
        "task's output with TaskOutput.)"
    )


def removed_cwd_text(removed: str, start: str, nearest: str | None = None) -> str:
    """A command that ended in a directory it removed: where the next one starts, or,
    where the one it started in is gone too (``nearest``: the nearest directory above it
    that exists), that one (it said the working directory "stays" where none was)."""
    if nearest is None:
        return (
            f"Note: the command ended in {removed}, which no longer exists; the working "
            f"directory stays {start}."
        )
    if removed == start:
        gone = f"the directory the command ran in, {start}, no longer exists"
    else:
        gone = f"the command ended in {removed}, which no longer exists, nor does {start}"
    return f"Note: {gone} (the nearest directory above that exists: {nearest})."
