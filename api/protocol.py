"""The protocol's requests as models: one class per verb, its parameters and its result
type (the lines themselves are :mod:`.wire`'s)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, get_args

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from .constants import (
    DEFAULT_SESSION,
    DEFAULT_TASK_INPUT_TIMEOUT_MS,
    DEFAULT_TASK_OUTPUT_TIMEOUT_MS,
    MAX_INPUT_CHARS,
    RAW_PIECE_MAX,
    TERMINAL_SIDE_MAX,
)
from .errors import InvalidInputError, ProtocolError
from .models import (
    AckResult,
    AnnounceResult,
    BashResult,
    DeliveredResult,
    GcResult,
    LoginPathResult,
    Notice,
    NoticeClaim,
    RelayResult,
    ReleaseResult,
    ShutdownResult,
    SupervisorStatus,
    TaskOutputResult,
    TaskRecord,
    TerminalResult,
    UnreadResult,
    check_timeout_ms,
    describe_validation_error,
)
from .wire import (
    PROTOCOL_VERSION,
    encode,
)

TimeoutMs = Annotated[float | None, BeforeValidator(check_timeout_ms)]
"""A timeout in ms validated as the contract says (T5): the protocol is a door too."""

PrintableText = Annotated[
    StrictStr, Field(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")
]
"""A name or ID: printable text (the constraints also refuse lone surrogates)."""


def _tidy_task_id(value: object) -> object:
    """An ID as a model copies it: without the blanks around it, in lower case (IDs are
    ``[a-z0-9]{8}``): `" bwlefvaw "` was no task, and the error showed no blank (a trial)."""
    return value.strip().lower() if isinstance(value, str) else value


TaskId = Annotated[
    PrintableText,
    BeforeValidator(_tidy_task_id),
    Field(validation_alias=AliasChoices("task_id", "shell_id", "bash_id")),
]
"""A task ID; ``shell_id`` and ``bash_id`` are older names still sent by some hosts."""

ByteOffset = Annotated[StrictInt, Field(ge=0, le=2**62)]
"""A position in a log (a JSON integer: no ``true``, no ``1e23``)."""

TerminalSize = tuple[
    Annotated[StrictInt, Field(ge=1, le=TERMINAL_SIDE_MAX)],
    Annotated[StrictInt, Field(ge=1, le=TERMINAL_SIDE_MAX)],
]
"""A terminal's columns and rows."""


def _typed_text(value: str) -> str:
    if len(value) > MAX_INPUT_CHARS:
        raise ValueError(f"must have at most {MAX_INPUT_CHARS} characters, not {len(value)}")
    try:  # (pydantic's own length check refused any surrogate, bytes of ours too)
        value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (it has a lone surrogate)") from None
    return value


TypedText = Annotated[StrictStr, AfterValidator(_typed_text)]
"""What TaskInput types: any characters, control characters included, and bytes that are
no UTF-8 as the surrogate escapes that carry them (``$'caf\\xe9'`` given to ``wave-bash
input``; JSON's ``\\udce9`` from any host is that byte too); any other lone surrogate,
such as ``\\ud800``, is refused: it has no bytes."""

PROBE_TIMEOUT_MAX_MS = 60_000
"""The longest a login shell may take to print its PATH."""


def _not_blank(name: str) -> str:
    if not name.strip():
        raise ValueError("blanks alone")
    return name


SessionName = Annotated[PrintableText, AfterValidator(_not_blank)]
"""An agent session's name (blanks alone are none: `--session " "` was taken, where `""`
was refused, a trial)."""


def check_session(name: str) -> str:
    """``name`` if it is a valid session name, else :class:`InvalidInputError` saying why."""
    try:
        return _SESSION.validate_python(name)
    except ValidationError:
        raise InvalidInputError(
            f"session name must be 1 to 200 printable characters, not blanks alone: {name!r}"
        ) from None


_SESSION: TypeAdapter[str] = TypeAdapter(SessionName)


class Params(BaseModel):
    """Base of request parameters: unknown keys ignored so newer clients stay compatible;
    ``null`` means "not given" for every parameter (``{"block": null}`` is the default)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_not_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and None in data.values():
            return {key: value for key, value in data.items() if value is not None}
        return data

    session: SessionName = DEFAULT_SESSION


class RulesSpec(BaseModel):
    """Permission rules sent with a command (SPEC PM1): Claude Code's syntax, checked by
    the supervisor before anything runs; ``origin`` names their file in messages."""

    model_config = ConfigDict(extra="forbid")
    allow: list[Annotated[StrictStr, Field(max_length=4096)]] = Field(default_factory=list)
    ask: list[Annotated[StrictStr, Field(max_length=4096)]] = Field(default_factory=list)
    deny: list[Annotated[StrictStr, Field(max_length=4096)]] = Field(default_factory=list)
    origin: Annotated[StrictStr, Field(max_length=4096)] = "the rules"


class HookVerdict(BaseModel):
    """What the caller's permission hook answered for this command (SPEC PM2)."""

    model_config = ConfigDict(extra="forbid")
    verdict: Literal["allow", "ask", "deny"]
    reason: Annotated[StrictStr, Field(max_length=4096)] = ""


class SandboxSpec(BaseModel):
    """Run the command under bubblewrap (SPEC SB1)."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["read-only", "workspace-write"]
    workspace: StrictStr | None = None
    """The writable directory of ``workspace-write`` (default: the project root of cwd)."""
    network: StrictBool = False


class RunParams(Params):
    """``run``: start a command (foreground or background)."""

    command: StrictStr
    timeout: TimeoutMs = None
    description: StrictStr | None = None
    run_in_background: StrictBool = False
    cwd: StrictStr
    env: dict[str, str] = Field(default_factory=dict)
    progress: StrictBool = False
    exact_output: StrictBool = False
    """A finished command's output as the log has it, cleaned, blank lines at its edges
    too (what a person's ``run`` prints); a model's result leaves them out."""
    separate_stderr: StrictBool = False
    umask: Annotated[StrictInt, Field(ge=0, le=0o777)] | None = None
    """The caller's umask, so files the command creates get the caller's permissions."""
    cwd_fallback: StrictBool = False
    """When ``cwd`` no longer exists (a followed ``cd`` into a directory deleted since),
    start in its nearest existing ancestor and say so, instead of refusing."""
    request_key: PrintableText | None = None
    """The caller's unique key for this request: the same request sent again (after the
    supervisor went away) attaches to the task the first one started, never a second."""
    interactive: StrictBool = False
    """Run on a pseudo-terminal (SPEC P1)."""
    terminal_size: TerminalSize | None = None
    """Its columns and rows (default 80×24); only with ``interactive``."""
    rules: RulesSpec | None = None
    """Permission rules to check first (SPEC PM)."""
    hook: HookVerdict | None = None
    """The caller's permission hook's answer (SPEC PM2)."""
    approved: StrictBool = False
    """A person approved this command when it asked (SPEC PM3); never overrides deny."""
    sandbox: SandboxSpec | None = None
    """Run under bubblewrap (SPEC SB)."""


class TaskParams(Params):
    """``stop``, ``background``, ``interrupt``, ``wait``: act on one task (``shell_id`` is
    an older name)."""

    task_id: TaskId
    timeout: TimeoutMs = None
    sandbox: SandboxSpec | None = None
    """The caller's own sandbox (SB1c): under one, it acts only on its own session's
    tasks that run sandboxed no looser than it (``wait`` only reads)."""


class StopParams(TaskParams):
    """``stop``; ``interrupted``: its own foreground caller stops it (Ctrl+C in ``run``),
    so it ends as that caller's command, even if the caller's connection was seen lost
    first (then no notice tells anyone else of a "background" command)."""

    interrupted: StrictBool = False


class AttachParams(Params):
    """``attach``: wait again for a foreground command after the connection was lost."""

    task_id: TaskId
    progress: StrictBool = False
    exact_output: StrictBool = False


class StopManyParams(Params):
    """``stop_many``: stop several tasks at once (one process-table scan for all)."""

    task_ids: list[PrintableText]
    sandbox: SandboxSpec | None = None
    """As for ``stop`` (SB1c)."""


class OutputParams(Params):
    """``output``: TaskOutput for one task."""

    task_id: TaskId
    block: StrictBool = True
    timeout: TimeoutMs = DEFAULT_TASK_OUTPUT_TIMEOUT_MS
    pattern: StrictStr | None = None
    offset: ByteOffset | None = None
    """Read from this byte offset instead of the session's last read (and do not record it)."""
    follow: StrictBool = False
    """A piece of a stream (``output --follow``): whole lines only (the rest of the last
    line once the task has ended), at most ``FOLLOW_PIECE_BYTES``, so never truncated and
    never cleaned apart from the rest of its line."""
    exact_output: StrictBool = False
    """An excerpt (not ``follow``) with the blank lines at its edges (``RunParams``'s)."""
    filter: StrictStr | None = None
    """Only the lines of the output that match this RE2 expression; the others are read
    all the same (the older ``BashOutput`` tool's ``filter``, as Claude Code had it)."""


class InputParams(Params):
    """``input``: TaskInput (SPEC P3), type into an interactive task's terminal and wait
    until it waits for input again, ends, or ``timeout`` ms pass."""

    task_id: TaskId
    input: TypedText
    timeout: TimeoutMs = DEFAULT_TASK_INPUT_TIMEOUT_MS
    request_key: PrintableText | None = None
    """The caller's unique key: the same input sent again (after the supervisor went
    away) is not typed twice."""
    keep_notice: StrictBool = False
    """The caller confirms the end's notice itself, with the answer that shows the end,
    once that reached its reader (the MCP server, as for TaskOutput): the answer does not
    mark it delivered (P3)."""
    rules: RulesSpec | None = None
    """The caller's permission rules (PM): under them, input goes only into an
    interactive command of its own session that rules let start (P3)."""
    sandbox: SandboxSpec | None = None
    """The caller's own sandbox: under one, input goes only where a stop may (SB1c)."""


class TerminalParams(Params):
    """``terminal``: a person's view of an interactive task's terminal (SPEC P5): types
    ``input`` (if any), applies ``resize`` (if any), returns raw output from ``offset``
    (default: the last 4 KiB), waiting up to ``wait`` ms for some."""

    task_id: TaskId
    input: TypedText | None = None
    request_key: PrintableText | None = None
    """As for ``input``: keys sent again are not typed twice."""
    resize: TerminalSize | None = None
    sizer: PrintableText | None = None
    """Who sets the size with ``resize`` (an attach's token): the terminal remembers the
    last."""
    only_if_last: StrictBool = False
    """Apply ``resize`` only while ``sizer`` set the size last: an attach that leaves gives
    back the size it found, unless another attach or caller set one since."""
    offset: ByteOffset | None = None
    wait: Annotated[StrictInt | StrictFloat, Field(ge=0, le=5000)] = 0
    size: Annotated[StrictInt, Field(ge=1, le=RAW_PIECE_MAX)] | None = None
    """Bytes to read at most (default 64 KiB). A read that names it, with no ``input`` or
    ``resize``, may be of any task: ``output --raw`` reads its log's bytes so."""
    rules: RulesSpec | None = None
    """As for ``input``: under the caller's rules, its keys go only where TaskInput's may
    (P3). ``attach`` sends none: a person types there."""
    sandbox: SandboxSpec | None = None
    """As for ``input``: under the caller's sandbox, keys and sizes go only where a stop
    may (SB1c)."""


class TasksParams(Params):
    """``tasks``: list this session's tasks (or all with ``all``)."""

    all: StrictBool = False


class NotificationsParams(Params):
    """``notifications``: pending completion notices. With ``ack`` (the default) they are
    taken and marked delivered in one step, so concurrent readers never share one;
    without, they are only looked at."""

    ack: StrictBool = True


NOTICE_LEASE_SECONDS = 60.0
"""How long claimed notices stay with their reader before others may take them again."""


ClaimToken = Annotated[PrintableText, Field(min_length=16, max_length=64)]
"""A reader's claim on notices: random, and never the supervisor's own short holds (a
notice held for a foreground caller was released, or confirmed as shown, by any client
that sent the hold's name: a review)."""


class ClaimParams(Params):
    """``claim``: take the pending notices for a while (``lease`` seconds); the reader
    then confirms with ``ack`` once it showed them, or gives them back with ``release``.
    A reader that dies meanwhile loses them to the next one when the lease ends."""

    lease: Annotated[StrictFloat, Field(ge=1, le=3600)] = NOTICE_LEASE_SECONDS
    claim: ClaimToken | None = None
    """A token of the reader's choosing (random): the claim sent again with it (its
    connection cut before the answer) gets the notices it already holds, and any new."""
    limit: Annotated[StrictInt, Field(ge=1, le=10_000)] | None = None
    """At most this many, the oldest (those it holds first); the others wait for the next
    claim (``NoticeClaim.more``)."""


class AckParams(Params):
    """``ack``: notices reached the user: by ``claim`` token, or by task ID."""

    task_ids: list[PrintableText] = Field(default_factory=list)
    claim: ClaimToken | None = None


class UnreadParams(Params):
    """``unread``: a read of a task's new output whose result never reached its reader
    (an MCP call cancelled as it ended): the session's read offset goes back from
    ``read_to`` to ``back_to``, unless a read after it moved it on."""

    task_id: TaskId
    read_to: ByteOffset
    back_to: ByteOffset


RelayId = Annotated[str, Field(pattern=r"^[0-9a-f]{16,64}$")]
"""A relay's name (random): an MCP server that passes results on to its host."""
RECEIPT_PATTERN = r"^[0-9a-f]{16,64}:[0-9a-f]{1,16}$"
Receipt = Annotated[str, Field(pattern=RECEIPT_PATTERN)]
"""A result a relay passes on: ``RELAY:N``, sent as a request's top-level ``receipt``
(a call sent again names it again)."""


class RelayParams(Params):
    """``relay``: a relay's presence, held open while it lives. What its calls' results
    took (a read, a foreground end that is no notice, a claim) is given back if it goes
    before confirming them passed on (``delivered``): a server killed with a result in
    hand lost it for good (a trial)."""

    relay: RelayId


class DeliveredParams(Params):
    """``delivered``: results a relay passed on to its host; what they took stands."""

    receipts: Annotated[list[Receipt], Field(max_length=1000)]


class ReleaseParams(Params):
    """``release``: give claimed notices back, undelivered, to the next reader;
    ``shown``: also those of the claim confirmed as shown, which never were (the host
    cancelled the call as its result came)."""

    claim: ClaimToken
    shown: StrictBool = False


class GcParams(Params):
    """``gc``: prune finished tasks older than ``older_than`` seconds (default: the
    supervisor's retention)."""

    older_than: Annotated[StrictFloat, Field(ge=0)] | None = None
    unread: StrictBool = False
    """Also tasks whose completion notices no session has read (kept otherwise)."""


class LoginPathParams(Params):
    """``login_path``: probe the caller's login shell for its PATH (SPEC E1)."""

    env: dict[str, str] = Field(default_factory=dict)
    timeout: Annotated[TimeoutMs, Field(le=PROBE_TIMEOUT_MAX_MS)] = 5000


P = TypeVar("P", bound=Params)
ResultT = TypeVar("ResultT")


class Request(Params, Generic[ResultT]):
    """One request: its verb (``op``, the discriminator of :data:`AnyRequest`), its
    parameters (the fields) and the type of its result (``ResultT``, ``result_type`` at
    run time). Clients build these; the supervisor dispatches on their type."""

    op: str
    result_type: ClassVar[Any]

    def __init__(self, **data: Any) -> None:
        """Bad parameters are an :class:`InvalidInputError` in plain words, as at the
        supervisor (a caller catching ``WaveError`` never meets pydantic's error)."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidInputError(describe_validation_error(exc)) from None


def new_request_key() -> str:
    """A request's own key: sent again after the supervisor went away, it is not run (or
    typed) twice."""
    return os.urandom(16).hex()


class RunRequest(RunParams, Request[BashResult]):
    op: Literal["run"] = "run"
    result_type: ClassVar[Any] = BashResult
    request_key: PrintableText | None = Field(default_factory=new_request_key)


class AttachRequest(AttachParams, Request[BashResult]):
    op: Literal["attach"] = "attach"
    result_type: ClassVar[Any] = BashResult


class StopRequest(StopParams, Request[TaskRecord]):
    op: Literal["stop"] = "stop"
    result_type: ClassVar[Any] = TaskRecord


class StopManyRequest(StopManyParams, Request[list[TaskRecord]]):
    op: Literal["stop_many"] = "stop_many"
    result_type: ClassVar[Any] = list[TaskRecord]


class BackgroundRequest(TaskParams, Request[TaskRecord]):
    op: Literal["background"] = "background"
    result_type: ClassVar[Any] = TaskRecord


class InterruptRequest(TaskParams, Request[TaskRecord]):
    op: Literal["interrupt"] = "interrupt"
    signal: Literal["INT", "PIPE"] = "INT"
    """SIGINT, Ctrl+C's; or SIGPIPE, what a pipe's writer gets as it writes once its reader
    has gone (the CLI's `run -- CMD | head -1`): to the job's process group, as the
    command next writes."""
    result_type: ClassVar[Any] = TaskRecord


class WaitRequest(TaskParams, Request[TaskRecord]):
    op: Literal["wait"] = "wait"
    result_type: ClassVar[Any] = TaskRecord


class OutputRequest(OutputParams, Request[TaskOutputResult]):
    op: Literal["output"] = "output"
    result_type: ClassVar[Any] = TaskOutputResult


class InputRequest(InputParams, Request[TaskOutputResult]):
    op: Literal["input"] = "input"
    result_type: ClassVar[Any] = TaskOutputResult
    request_key: PrintableText | None = Field(default_factory=new_request_key)
    """(Every door gets one: the TaskInput tool's had none, and was typed twice.)"""


class TerminalRequest(TerminalParams, Request[TerminalResult]):
    op: Literal["terminal"] = "terminal"
    result_type: ClassVar[Any] = TerminalResult


class TasksRequest(TasksParams, Request[list[TaskRecord]]):
    op: Literal["tasks"] = "tasks"
    result_type: ClassVar[Any] = list[TaskRecord]


class NotificationsRequest(NotificationsParams, Request[list[Notice]]):
    op: Literal["notifications"] = "notifications"
    result_type: ClassVar[Any] = list[Notice]


class AnnounceRequest(TaskParams, Request[AnnounceResult]):
    op: Literal["announce"] = "announce"
    result_type: ClassVar[Any] = AnnounceResult


class AckRequest(AckParams, Request[AckResult]):
    op: Literal["ack"] = "ack"
    result_type: ClassVar[Any] = AckResult


class ClaimRequest(ClaimParams, Request[NoticeClaim]):
    op: Literal["claim"] = "claim"
    result_type: ClassVar[Any] = NoticeClaim


class UnreadRequest(UnreadParams, Request[UnreadResult]):
    op: Literal["unread"] = "unread"
    result_type: ClassVar[Any] = UnreadResult


class ReleaseRequest(ReleaseParams, Request[ReleaseResult]):
    op: Literal["release"] = "release"
    result_type: ClassVar[Any] = ReleaseResult


class RelayRequest(RelayParams, Request[RelayResult]):
    op: Literal["relay"] = "relay"
    result_type: ClassVar[Any] = RelayResult


class DeliveredRequest(DeliveredParams, Request[DeliveredResult]):
    op: Literal["delivered"] = "delivered"
    result_type: ClassVar[Any] = DeliveredResult


class StatusRequest(Request[SupervisorStatus]):
    op: Literal["status"] = "status"
    result_type: ClassVar[Any] = SupervisorStatus


class ShutdownRequest(Request[ShutdownResult]):
    op: Literal["shutdown"] = "shutdown"
    result_type: ClassVar[Any] = ShutdownResult


class LoginPathRequest(LoginPathParams, Request[LoginPathResult]):
    op: Literal["login_path"] = "login_path"
    result_type: ClassVar[Any] = LoginPathResult


class GcRequest(GcParams, Request[GcResult]):
    op: Literal["gc"] = "gc"
    result_type: ClassVar[Any] = GcResult


AnyRequest = Annotated[
    RunRequest
    | AttachRequest
    | StopRequest
    | StopManyRequest
    | BackgroundRequest
    | InterruptRequest
    | WaitRequest
    | OutputRequest
    | InputRequest
    | TerminalRequest
    | TasksRequest
    | NotificationsRequest
    | AnnounceRequest
    | UnreadRequest
    | AckRequest
    | ClaimRequest
    | ReleaseRequest
    | RelayRequest
    | DeliveredRequest
    | StatusRequest
    | ShutdownRequest
    | LoginPathRequest
    | GcRequest,
    Field(discriminator="op"),
]
"""Every request the supervisor serves, told apart by ``op`` (the one registry of verbs)."""

REQUEST_TYPES: tuple[type[Request[Any]], ...] = get_args(get_args(AnyRequest)[0])
OPS: frozenset[str] = frozenset(t.model_fields["op"].default for t in REQUEST_TYPES)

_REQUEST: TypeAdapter[Any] | None = None
_RESULTS: dict[type[Request[Any]], TypeAdapter[Any]] = {}


def parse_request(message: Mapping[str, Any]) -> Request[Any]:
    """The request a protocol line carries; an unknown ``op`` is a :class:`ProtocolError`,
    bad parameters an :class:`InvalidInputError` in plain words."""
    global _REQUEST
    op = message.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise ProtocolError(f"unknown operation {op!r}")
    if _REQUEST is None:
        _REQUEST = TypeAdapter(AnyRequest)
    try:
        parsed: Request[Any] = _REQUEST.validate_python(message)
    except ValidationError as exc:
        raise InvalidInputError(describe_validation_error(exc)) from None
    return parsed


def parse_result(req: Request[ResultT], data: Any) -> ResultT:
    """A request's result from its JSON, as the request's result type."""
    kind = type(req)
    adapter = _RESULTS.get(kind)
    if adapter is None:
        adapter = _RESULTS[kind] = TypeAdapter(kind.result_type)
    result: ResultT = adapter.validate_python(data)
    return result


def parse_params(model: type[P], data: Mapping[str, Any]) -> P:
    """Validate request parameters; problems raise :class:`InvalidInputError` in plain words."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(describe_validation_error(exc)) from None


def request(req: Request[Any]) -> bytes:
    """Encode a request line."""
    return encode({"v": PROTOCOL_VERSION, **req.model_dump(mode="json")})
