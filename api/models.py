"""The data of the contract: tool input, results, task records and notices (SPEC §2, §6, I4).

Python code uses snake_case attributes; JSON uses the camelCase names of the contract
(``model_dump(by_alias=True)`` / :func:`to_json`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    StrictBool,
    StrictStr,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel

from .errors import InvalidInputError
from .states import BackgroundReason, EndReason, Owner, TaskStatus
from .units import TIMEOUT_ERROR, check_timeout_ms, json_kind

_TYPE_WORDS = {"string": "a string", "bool": "a boolean", "int": "an integer", "float": "a number"}


class ContractModel(BaseModel):
    """Base of every contract model: camelCase JSON, snake_case Python, unknown keys ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=False
    )

    def to_json_dict(self) -> dict[str, Any]:
        """The contract's JSON object (camelCase keys, ISO-8601 times)."""
        return self.model_dump(mode="json", by_alias=True)


class BashInput(ContractModel):
    """The Bash tool input (SPEC T1); build it with :meth:`parse` to get contract errors."""

    command: StrictStr
    timeout: float | None = None
    description: StrictStr | None = None
    run_in_background: StrictBool = False
    interactive: StrictBool = False
    """Run on a pseudo-terminal that TaskInput types into (SPEC P1)."""

    @field_validator("command")
    @classmethod
    def _command_is_runnable(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("command must not be empty")
        if "\x00" in value:
            raise ValueError("command must not contain a NUL byte")
        try:  # a lone UTF-16 surrogate (JSON allows "\ud800") has no bytes a shell could run
            value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise ValueError(
                "command must be valid Unicode text (it has a lone surrogate)"
            ) from None
        return value

    @classmethod
    def parse(cls, raw: object) -> BashInput:
        """Validate raw tool input (a JSON object) and raise :class:`InvalidInputError`."""
        if not isinstance(raw, dict):
            raise InvalidInputError("Bash input must be a JSON object")
        data = dict(raw)
        timeout = check_timeout_ms(data.pop("timeout", None))
        for flag in ("run_in_background", "interactive"):
            if data.get(flag) is None:
                data.pop(flag, None)
        try:
            model = cls.model_validate(data)
        except ValidationError as exc:
            raise InvalidInputError(describe_validation_error(exc)) from None
        model.timeout = timeout
        return model


_BOUNDS = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
"""A number's bound, in words (pydantic's ``greater_than_equal``… errors)."""


def describe_validation_error(exc: ValidationError) -> str:
    """One readable sentence per problem, naming the field (no pydantic jargon: "session
    must not be empty", not "String should have at least 1 character")."""
    parts = []
    for err in exc.errors():
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        field = field.lstrip(".") or "input"
        msg = str(err["msg"]).removeprefix("Value error, ")
        kind, ctx = err["type"], err.get("ctx") or {}
        if kind == "missing":
            msg = "is required"
        elif kind.endswith("_type"):  # (what was sent named too: `"yes"` for a boolean
            kind = kind.removesuffix("_type")  # said only what it must be, a trial)
            wanted = _TYPE_WORDS.get(kind, kind.replace("_", " "))
            msg = f"must be {wanted}, got {json_kind(err.get('input'))}"
        elif kind == "string_too_short":
            least = ctx.get("min_length", 1)
            msg = "must not be empty" if least == 1 else f"must have at least {least} characters"
        elif kind == "string_unicode":  # (a byte that is no UTF-8: `--session $'s\xe9'`)
            msg = "must be UTF-8 text (it has a byte that is no UTF-8)"
        elif kind == "string_pattern_mismatch":
            msg = "must be printable text (no control characters)"
        elif kind == "string_too_long":
            msg = f"must have at most {ctx.get('max_length')} characters, not {len(err['input'])}"
        elif kind in ("too_short", "too_long"):
            bound = ctx.get("min_length" if kind == "too_short" else "max_length")
            msg = f"must have {'at least' if kind == 'too_short' else 'at most'} {bound} items"
        elif bound_word := next((_BOUNDS[k] for k in _BOUNDS if k in ctx), None):
            bound = next(ctx[k] for k in _BOUNDS if k in ctx)
            msg = f"must be {bound_word} {bound}, not {err['input']}"
        parts.append(msg if msg.startswith(field) else f"{field} {msg}")
    return "; ".join(parts)


class PermissionInfo(ContractModel):
    """How a command's permission was decided (SPEC PM4): recorded with its task, and in
    the result of a command that was refused or needs approval."""

    decision: str
    """``allow``, ``ask`` or ``deny``."""
    reason: str
    rule: str | None = None
    source: str = "rules"
    """``rules``, ``hook``, ``user`` (approved when asked) or ``none`` (no rules given)."""


class BashResult(ContractModel):
    """The result of one Bash call (SPEC §6)."""

    success: bool
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    interrupted: bool = False
    background_task_id: str | None = None
    backgrounded_by_user: bool = False
    assistant_auto_backgrounded: bool = False
    output_path: str | None = None
    truncated: bool = False
    cwd: str | None = None
    duration_ms: int = 0
    message: str = ""
    error: str | None = None
    waiting_for_input: bool = False
    """An interactive command waits for input: answer with TaskInput (SPEC P2)."""
    permission: PermissionInfo | None = None
    """Set when the permission check refused the command or asks for approval (PM3)."""
    leftover_processes: int = 0
    """Processes the command started that still ran as it ended (TR4: TaskStop on the
    task of ``output_path`` stops them); the message says so too."""

    @property
    def ends_turn(self) -> bool:
        """True only when the user backgrounded the command (SPEC F4): hosts end the turn."""
        return self.backgrounded_by_user

    def __repr__(self) -> str:
        state = (
            f"background {self.background_task_id}"
            if self.background_task_id
            else f"exit {self.exit_code}"
        )
        return f"<BashResult {'ok' if self.success else 'failed'} {state}>"


class Progress(ContractModel):
    """A live update while a foreground command runs (SPEC S1)."""

    task_id: str
    short_result: str
    result: str
    elapsed_ms: int
    output_bytes: int
    truncated: bool = False


class TaskRecord(ContractModel):
    """One task as listed by ``tasks`` (SPEC I4)."""

    id: str
    command: str
    description: str | None = None
    status: TaskStatus
    owner: Owner
    background_reason: BackgroundReason | None = None
    exit_code: int | None = None
    pid: int | None = None
    started_at: datetime
    ended_at: datetime | None = None
    output_path: str
    session: str
    cwd: str
    end_reason: EndReason | None = None
    """Why it ended when the exit code does not say."""
    leftover_processes: int = 0
    """Processes it started that still run although it ended (TaskStop stops them)."""
    stopped_processes: int = 0
    """Set by TaskStop on a task that had ended: the processes it had left running that
    this stop ended."""
    monitor_lost: bool = False
    """Running, but its monitor was killed: it ends (``lost``) when its processes do."""
    cpu_seconds: float | None = None
    """CPU time of all its processes, where cgroups count it (so far, while running)."""
    peak_memory_bytes: int | None = None
    """Its processes' peak memory together, where a memory cgroup counts it."""
    interactive: bool = False
    """It runs on a pseudo-terminal (SPEC P1)."""
    waiting_for_input: bool = False
    """It is interactive and waits for input now (SPEC P2)."""
    permission: PermissionInfo | None = None
    """How running it was allowed, when rules or a hook were given (SPEC PM4)."""
    sandbox: str | None = None
    """The sandbox it ran in (``read-only``, ``workspace-write``), if any (SPEC SB1)."""

    def __repr__(self) -> str:
        return f"<TaskRecord {self.id} {self.status} {self.owner} {self.command[:30]!r}>"


class Notice(ContractModel):
    """A completion notice for a background task (SPEC B5, I4)."""

    task_id: str
    status: TaskStatus
    exit_code: int | None = None
    command: str
    description: str | None = None
    output_path: str
    ended_at: datetime | None = None
    message: str


class NoticeClaim(ContractModel):
    """Notices taken by one reader until it confirms (``ack``) or gives them back."""

    claim: str
    notices: list[Notice]
    more: int = 0
    """Pending notices left for the next claims: over the claim's ``limit``."""
    waiting: int = 0
    """Pending notices not handed out: the state dir refuses writes, so no claim can be
    recorded (SPEC DF2); they come once it takes them again."""
    storage_problem: str | None = None
    """Why the state dir refuses writes, when notices wait."""


class TaskOutputResult(ContractModel):
    """What TaskOutput returns (SPEC B6, I4)."""

    task_id: str
    status: TaskStatus
    exit_code: int | None = None
    end_reason: EndReason | None = None
    """Why it ended where wave-bash ended it (D7): 143 alone reads as a crash, and this
    result takes the place of the notice that would say why (a helper's trial)."""
    output: str
    truncated: bool = False
    output_path: str
    next_offset: int | None = None
    """Byte offset in the log where this read ended (for followers)."""
    start_offset: int | None = None
    """Where it began: a read whose result never reached its reader is given back from
    there (``unread``)."""
    leftover_processes: int = 0
    """Processes it started that still run although it ended."""
    waiting_for_input: bool = False
    """An interactive task waits for input now (SPEC P2)."""
    log_gone: bool = False
    """Its log file was removed outside wave-bash: no output can be shown (SPEC B6d)."""
    line_ended: bool | None = None
    """A piece of a stream (``follow``): whether it ended a line, whose newline its
    ``output`` leaves out (every other byte of it is there, blank lines too); none else."""
    pattern_matched: bool | None = None
    """A blocking read with a ``pattern``: whether the pattern was found (false: the wait
    ended without it, at the timeout or the task's end); none else. (A wait for "server
    ready" that timed out looked like one that matched: a trial.)"""
    unsearched_bytes: int | None = None
    """A blocking read with a ``pattern`` that did not match: the bytes after this read
    that the pattern had no time to search (a big log): the next read returns them;
    none else."""
    error: str | None = None
    """An ended task's end on a full state dir (DF4): its output may be cut short. (The
    answer that shows the end confirms its notice, which alone said so: a leftover.)"""


class TerminalResult(ContractModel):
    """``terminal``: raw terminal bytes of an interactive task for a person attached to it
    (SPEC P5), or of any task's log for ``output --raw``, from ``offset``, base64-encoded
    (any bytes, escapes included)."""

    task_id: str
    data: str
    offset: int
    """Where the next read starts."""
    status: TaskStatus
    exit_code: int | None = None
    waiting_for_input: bool = False
    size_before: tuple[int, int] | None = None
    """The terminal's columns and rows before this call's ``resize`` (none without one)."""
    alternate_screen: bool | None = None
    """Whether the task's program is on the alternate screen (a full-screen one: vim,
    less), with a ``resize``: an attach enters that screen too, and has it drawn again."""
    log_gone: bool = False
    """Nothing was read because the log was removed outside wave-bash (SPEC B6d)."""
    sizer_forgotten: bool = False
    """The terminal host had counted the ``sizer``'s attach as gone (not heard from for a
    while: stopped, or its output stalled): it sets its size again to be counted."""


class SupervisorStatus(ContractModel):
    """What ``supervisor status`` reports."""

    running: bool
    pid: int | None = None
    state_dir: str
    socket_path: str | None = None
    protocol_version: int | None = None
    version: str | None = None
    running_tasks: int = 0
    lingering_tasks: int = 0
    """Ended tasks whose processes still run (TR4), each stoppable by its ID."""
    started_at: datetime | None = None
    tracking: str | None = None
    """How task processes are found: one cgroup per task, or the process table."""
    held_writes: int = 0
    """Journal writes kept in memory because the state dir's disk refused them."""
    storage_problem: str | None = None
    """Why they are held (``No space left on device``), while they are."""
    sandbox: str | None = None
    """Whether commands can be sandboxed here (bubblewrap and its version, or why not);
    each task's own mode is in its record (SPEC SB3)."""
    relays: int = 0
    """MCP servers present as relays (ND6)."""
    held_results: int = 0
    """Their results whose effects wait until they confirm them passed on to their host."""


class AckResult(ContractModel):
    """``ack``: how many notices were confirmed."""

    acknowledged: int


class ReleaseResult(ContractModel):
    """``release``: how many notices were given back."""

    released: int


class UnreadResult(ContractModel):
    """``unread``: whether the read was given back (False: one after it read on)."""

    unread: bool


class RelayResult(ContractModel):
    """``relay``: once the relay left, how many of its results were given back (its
    answer goes nowhere: the relay is gone; the supervisor logs it)."""

    given_back: int


class DeliveredResult(ContractModel):
    """``delivered``: how many held results were let go (the others were unknown here)."""

    confirmed: int


class AnnounceResult(ContractModel):
    """``announce``: whether the task's end became a notice (False: it already was one)."""

    announced: bool


class GcResult(ContractModel):
    """``gc``: the tasks removed, and the age used."""

    removed: list[str]
    older_than_seconds: float
    kept_unread: int = 0
    """Finished tasks old enough but kept: their completion notices are still pending
    (they go when read, or when the retention ends)."""
    kept_running: int = 0
    """Finished tasks old enough but kept: processes they started still run (TaskStop
    stops them)."""


class ShutdownResult(ContractModel):
    """``shutdown``: the supervisor stops; its running tasks keep running."""

    stopping: bool
    running_tasks: int
    lingering_tasks: int = 0
    held_writes: int = 0
    """Journal writes a full state dir refused, lost with it unless the disk takes them
    as it closes (SPEC DF5: ends come back from the exit records)."""
    storage_problem: str | None = None


class LoginPathResult(ContractModel):
    """``login_path``: the login shell's PATH (None: the probe failed) and that shell."""

    path: str | None
    shell: str


__all__ = [
    "TIMEOUT_ERROR",
    "AckResult",
    "AnnounceResult",
    "BackgroundReason",
    "BashInput",
    "BashResult",
    "ContractModel",
    "EndReason",
    "GcResult",
    "LoginPathResult",
    "Notice",
    "NoticeClaim",
    "Owner",
    "Progress",
    "ReleaseResult",
    "ShutdownResult",
    "SupervisorStatus",
    "TaskOutputResult",
    "TaskRecord",
    "TaskStatus",
    "UnreadResult",
    "check_timeout_ms",
    "describe_validation_error",
]
