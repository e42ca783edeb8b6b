"""The Python client (SPEC I1): talks to the supervisor, starting it when absent."""

from __future__ import annotations

import contextlib
import difflib
import os
import shlex
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, NoReturn

from . import texts
from .calls import (
    CALLER_GONE,
    FOREGROUND_PATIENCE,
    RECONNECT_PATIENCE,
    Caller,
    CallScope,
    cli_words,
)
from .connection import (
    caller_environment,
    chosen_ssh_options,
    connector_for,
    supervisor_log,
    with_own_entries,
)
from .constants import DEFAULT_SESSION, DEFAULT_TASK_OUTPUT_TIMEOUT_MS, DEFAULT_TIMEOUT_MS
from .errors import (
    InvalidInputError,
    SandboxUnavailableError,
    ShellNotFoundError,
    SpawnError,
    StorageError,
    WaveError,
    error_text,
)
from .models import (
    BashInput,
    BashResult,
    Notice,
    NoticeClaim,
    PermissionInfo,
    Progress,
    SupervisorStatus,
    TaskOutputResult,
    TaskRecord,
    TerminalResult,
)
from .paths import StateLayout, current_umask, resolve_state_dir
from .protocol import (
    NOTICE_LEASE_SECONDS,
    AckRequest,
    AnnounceRequest,
    BackgroundRequest,
    ClaimRequest,
    DeliveredRequest,
    GcRequest,
    InputRequest,
    InterruptRequest,
    LoginPathRequest,
    NotificationsRequest,
    OutputRequest,
    RelayRequest,
    ReleaseRequest,
    Request,
    ResultT,
    RunRequest,
    ShutdownRequest,
    StatusRequest,
    StopManyRequest,
    StopRequest,
    TasksRequest,
    TerminalRequest,
    UnreadRequest,
    WaitRequest,
    check_session,
    parse_params,
    parse_result,
)
from .relay import Presence
from .tools import (
    BASH_TOOL,
    TASK_INPUT_TOOL,
    TASK_OUTPUT_TOOL,
    TASK_STOP_TOOL,
    TOOL_ALIASES,
    tool_definitions,
)
from .transport import (
    Remote,
    chosen_transport,
)
from .wire import PROTOCOL_VERSION, encode

if TYPE_CHECKING:
    from .connection import Connector
    from .permissions import Hook, RuleSet

ProgressCallback = Callable[[Progress], None]
StartCallback = Callable[[str], None]
AskCallback = Callable[[BashResult], "bool | None"]
"""Asked about a command that needs approval (its result says why): True runs it,
False refuses it, None leaves the "needs approval" result as it is."""
CwdCallback = Callable[[str], None]


class Client:
    """A connection point to the supervisor of one state dir, for one agent session.

    Args:
        state_dir: the state directory (default ``WAVE_STATE_DIR`` or the user state dir).
        session: the agent session name; reuse it after a restart to get its notices.
        cwd: where commands start (default: this process's cwd at each call).
        follow_cd: start the next command where the previous one ended (SPEC E3).
        on_cwd_change: called with the new directory when a command ends elsewhere.
        env: the environment sent with each command (default: this process's, at each call).
        autostart: start the supervisor when none is running.
        transport: ``"unix"`` or ``"tcp"`` (default: ``WAVE_TRANSPORT``, else Unix sockets).
        remote: ``ssh://[user@]host[:port]`` (default ``WAVE_REMOTE``): every call goes to
            the supervisor on that machine through ``ssh HOST wave-bash bridge``; commands
            get the remote environment and start in the remote home unless ``cwd`` is set;
            paths in results are remote paths.
        ssh_options: extra ``ssh`` arguments (``-i KEY``, ``-o …``; default
            ``WAVE_SSH_OPTIONS``, split as a shell would); ``~/.ssh/config`` applies.
        remote_command: how to run wave-bash there (default ``WAVE_REMOTE_COMMAND`` or
            ``wave-bash``).
        connector: how to reach the supervisor, instead of the one the arguments above
            choose (e.g. an in-memory :class:`~wave_bash.api.connection.MemoryConnector`).
    """

    def __init__(
        self,
        state_dir: str | os.PathLike[str] | None = None,
        session: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        follow_cd: bool = False,
        on_cwd_change: CwdCallback | None = None,
        *,
        env: Mapping[str, str] | None = None,
        autostart: bool = True,
        transport: str | None = None,
        remote: str | None = None,
        ssh_options: Sequence[str] = (),
        remote_command: str | None = None,
        connector: Connector | None = None,
        rules: str | os.PathLike[str] | Mapping[str, Any] | RuleSet | None = None,
        permission: Hook | None = None,
        on_ask: AskCallback | None = None,
        sandbox: str | None = None,
        allow_network: bool | None = None,
        workspace: str | os.PathLike[str] | None = None,
    ) -> None:
        """``rules`` (a TOML/JSON file, a mapping or a :class:`RuleSet`; default the file
        named by ``WAVE_RULES``) and ``permission`` (a hook given the parsed command)
        decide whether a command may run (SPEC PM); ``on_ask`` is asked about a command
        that needs approval (True: run it). ``sandbox`` (``read-only`` or
        ``workspace-write``; default ``WAVE_SANDBOX``) runs every command under
        bubblewrap, with the network when ``allow_network`` (``WAVE_SANDBOX_NETWORK=1``),
        writable ``workspace`` (``WAVE_SANDBOX_WORKSPACE``; default the project root of
        the command's directory) (SPEC SB).

        Raises:
            InvalidInputError: an unreadable or invalid rules file, an unknown sandbox mode.
        """
        _check_arguments(state_dir=state_dir, cwd=cwd, workspace=workspace, env=env,
                         follow_cd=follow_cd, transport=transport)  # fmt: skip
        self.layout = StateLayout(resolve_state_dir(state_dir))
        if session is None:  # (a given one is checked as given: "" is no name)
            session = os.environ.get("WAVE_SESSION") or DEFAULT_SESSION
        self.session = check_session(session)
        self.follow_cd = follow_cd
        self.on_cwd_change = on_cwd_change
        self.env = dict(env) if env is not None else None
        self.transport = transport.lower() if transport else chosen_transport()
        if remote == "":  # (`remote=os.environ.get("HOST", "")` ran here: as the CLI's)
            raise InvalidInputError("remote is empty: name ssh://[user@]host[:port], or None")
        remote = remote or os.environ.get("WAVE_REMOTE") or None
        self.remote = Remote.parse(remote) if remote else None
        self.cwd = os.fspath(cwd) if cwd is not None else None
        if self.cwd and self.remote is None:  # (relative to this process, as
            self.cwd = os.path.abspath(self.cwd)  # subprocess reads it: the supervisor's differs)
        self.ssh_options = chosen_ssh_options(ssh_options) if self.remote else list(ssh_options)
        self.remote_command = remote_command or os.environ.get("WAVE_REMOTE_COMMAND") or "wave-bash"
        self.connector: Connector = connector or connector_for(
            self.layout,
            transport=self.transport,
            remote=remote,
            ssh_options=self.ssh_options,
            remote_command=self.remote_command,
            autostart=autostart,
        )
        self.calls = Caller(self.connector, supervisor_log(self.connector, self.layout))
        self.calls.cli_hint = cli_words(
            str(self.layout.root) if state_dir is not None else None,
            str(self.remote) if self.remote else None,
            [shlex.quote(option) for option in self.ssh_options],
            None if self.remote_command == "wave-bash" else self.remote_command,
            None if self.session == DEFAULT_SESSION else self.session,
        )
        from . import guard

        self.rules, self.sandbox = guard.from_environment(
            rules, sandbox, allow_network, os.fspath(workspace) if workspace else None
        )
        if self.sandbox is not None and self.sandbox["workspace"] is None:
            # Pinned now: a command's `cd` (follow_cd) must not move what is writable.
            if self.remote is None:
                here = self.cwd or os.getcwd()
                self.sandbox["workspace"] = guard.workspace_for(self.sandbox["mode"], here)
            elif follow_cd:
                raise InvalidInputError(
                    "with a remote, follow_cd and a sandbox, give the sandbox's workspace "
                    "(workspace=, --workspace): it must not move with the commands' cd"
                )
        self.permission = permission
        self.on_ask = on_ask

    @property
    def autostart(self) -> bool:
        """Whether a call starts the supervisor when none runs."""
        return self.connector.may_start

    @autostart.setter
    def autostart(self, value: bool) -> None:
        self.connector.may_start = value

    def __repr__(self) -> str:
        return f"<Client state_dir={str(self.layout.root)!r} session={self.session!r}>"

    def remote_options(self) -> dict[str, Any]:
        """The arguments that make another client reach the same remote (none if local)."""
        if self.remote is None:
            return {}
        return {
            "remote": str(self.remote),
            "ssh_options": self.ssh_options,
            "remote_command": self.remote_command,
        }

    # --- the Bash tool -------------------------------------------------------------------

    def bash(
        self,
        command: str,
        timeout: float | None = None,
        run_in_background: bool = False,
        description: str | None = None,
        on_progress: ProgressCallback | None = None,
        *,
        separate_stderr: bool = False,
        on_start: StartCallback | None = None,
        interactive: bool = False,
        terminal_size: tuple[int, int] | None = None,
        on_ask: AskCallback | None = None,
        scope: CallScope | None = None,
    ) -> BashResult:
        """Run a command the way the Bash tool does (SPEC F, B1).

        Errors of the call itself (bad input, no shell, bad cwd) come back as a result with
        ``success=False`` and ``error`` set, ready to show to a model. Only an unreachable
        supervisor or unusable state dir raises. ``on_start`` receives the task ID of a
        foreground command as soon as it runs (so a UI can offer to background it).
        ``interactive`` runs it on a pseudo-terminal of ``terminal_size`` (columns, rows;
        default 80×24): a command that waits for input returns ``waiting_for_input`` and
        is answered with :meth:`task_input` (SPEC P). A command the rules refuse comes
        back with ``success=False`` and ``permission``; one that needs approval is run
        only if ``on_ask`` (or the client's) returns True for it (SPEC PM3). ``scope``
        lets another thread abandon the call (:class:`CallScope`). An exception raised by
        ``on_start`` or ``on_progress`` ends the call, the command running on in the
        background: a note on the exception names its task.
        """
        try:
            checked = BashInput.parse(
                {
                    "command": command,
                    "timeout": timeout,
                    "description": description,
                    "run_in_background": run_in_background,
                    "interactive": interactive,
                }
            )
            params = parse_params(
                RunRequest,
                dict(
                    session=self.session,
                    command=checked.command,
                    timeout=checked.timeout,
                    description=checked.description,
                    run_in_background=checked.run_in_background,
                    cwd=self.cwd or self.connector.default_cwd(),
                    env=self._command_env(),
                    progress=on_progress is not None or on_start is not None,
                    separate_stderr=separate_stderr,
                    umask=current_umask(),
                    request_key=uuid.uuid4().hex,
                    # A default directory deleted under the caller falls back as a
                    # followed `cd` does (see ``current_dir``); one named does not.
                    cwd_fallback=self.follow_cd or not self.cwd,
                    interactive=checked.interactive,
                    terminal_size=terminal_size,
                    rules=self.rules,
                    hook=self._hook_answer(checked.command, checked.interactive),
                    sandbox=self.sandbox,
                ),
            )
            wait_s = (checked.timeout or DEFAULT_TIMEOUT_MS) / 1000
            patience = RECONNECT_PATIENCE if run_in_background else max(FOREGROUND_PATIENCE, wait_s)
            result = self._call(params, on_progress, on_start, patience=patience, scope=scope)
            ask = on_ask or self.on_ask
            if result.permission is not None and result.permission.decision == "ask":
                try:
                    approved = ask(result) if ask is not None else None
                except Exception as exc:  # (the call still gets a result: declined, and why)
                    approved, result = None, _declined(result, exc)
                if approved is True:  # the same command again, approved by a person
                    params = params.model_copy(
                        update={"approved": True, "request_key": uuid.uuid4().hex}
                    )
                    result = self._call(
                        params, on_progress, on_start, patience=patience, scope=scope
                    )
                elif approved is False:
                    result = _declined(result)
                elif approved is not None:  # ("no" ran it: only True approves, a review)
                    result = _declined(result, UnclearAnswer(approved))
        except (
            InvalidInputError, ShellNotFoundError, SpawnError, StorageError,
            SandboxUnavailableError,
        ) as exc:  # fmt: skip
            return BashResult(success=False, message=exc.message, error=exc.message)
        if result.cwd:
            if self.follow_cd:
                self.cwd = result.cwd
            if self.on_cwd_change is not None:
                try:
                    self.on_cwd_change(result.cwd)
                except BaseException as failed:  # (the result was lost unsaid: a review)
                    failed.add_note(_result_note(result))
                    raise
        return result

    def _hook_answer(self, command: str, interactive: bool) -> dict[str, str] | None:
        """The permission hook's answer for ``command`` (parsed here, as the hook wants)."""
        if self.permission is None:
            return None
        from .permissions import hook_decision, parse_command

        decision = hook_decision(self.permission, parse_command(command, interactive=interactive))
        return {"verdict": decision.verdict, "reason": decision.reason}

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        on_progress: ProgressCallback | None = None,
        on_start: StartCallback | None = None,
        on_ask: AskCallback | None = None,
        scope: CallScope | None = None,
        keep_notice: bool = False,
    ) -> dict[str, Any]:
        """Run one tool call as a model sent it (``Bash``, ``TaskOutput``, ``TaskStop``, or the
        older ``BashOutput``, ``KillShell`` and ``KillBash``, with ``shell_id`` and ``bash_id``
        accepted for ``task_id``); returns contract JSON.
        ``on_start`` receives a Bash command's task ID as soon as it runs; ``scope`` lets
        another thread abandon the call (:class:`CallScope`); ``keep_notice``: a TaskInput
        answer that shows its task's end leaves the end's notice to be confirmed by the
        caller (the MCP server, once written). A field no tool's schema offers is refused
        (`background: true` ran in the foreground; a model set a request's own fields).

        Raises:
            WaveError: bad input or an unknown/ended task (``str()`` is the text for the model).
        """
        older = name == "BashOutput"  # (it never blocked, as Claude Code's: a trial)
        name = TOOL_ALIASES.get(name, name)
        if (refusal := _misnamed(name, arguments)) is not None:
            raise InvalidInputError(refusal)
        args = dict(arguments)  # (BashOutput's `filter` too, on TaskOutput: dropped there,
        # every line came back, a review)
        if older:  # (null is "not given", T5: it blocked, a trial)
            args["block"] = False if arguments.get("block") is None else arguments["block"]
        if name == BASH_TOOL:
            parsed = BashInput.parse(args)
            return self.bash(
                parsed.command,
                parsed.timeout,
                parsed.run_in_background,
                parsed.description,
                on_progress,
                on_start=on_start,
                interactive=parsed.interactive,
                on_ask=on_ask,
                scope=scope,
            ).to_json_dict()
        if name == TASK_STOP_TOOL:
            stop = parse_params(
                StopRequest, {**args, "session": self.session, "sandbox": self.sandbox}
            )
            return self._call(stop, scope=scope).to_json_dict()
        if name == TASK_OUTPUT_TOOL:
            read = parse_params(OutputRequest, {**args, "session": self.session})
            return self._call(read, scope=scope).to_json_dict()
        if name == TASK_INPUT_TOOL:
            guard = {"rules": self.rules, "sandbox": self.sandbox}
            typed = parse_params(
                InputRequest, {**args, "session": self.session, **guard, "keep_notice": keep_notice}
            )
            return self._call(typed, scope=scope).to_json_dict()
        known = ", ".join(tool["name"] for tool in tool_definitions("mcp"))
        raise InvalidInputError(f"unknown tool {name!r}: the tools are {known}")

    def _command_env(self) -> dict[str, str]:
        if self.env is not None:
            return dict(self.env)
        return {} if self.connector.remote else caller_environment()  # a bridge uses its own

    def status(self) -> SupervisorStatus:
        """The supervisor's status (starting it if needed)."""
        return self._call(StatusRequest(session=self.session))

    def login_path(self, timeout_ms: float = 5000) -> str | None:
        """Probe the user's login shell for its PATH (SPEC E1); ``None`` when it fails."""
        params = LoginPathRequest(
            session=self.session, env=caller_environment(), timeout=timeout_ms
        )
        return self._call(params).path

    # --- background tasks -------------------------------------------------------------------

    def task_stop(self, task_id: str) -> TaskRecord:
        """Stop a task and its whole process tree (SPEC B3). Its completion notice stays
        pending, as for :meth:`wait`."""
        return self._call(StopRequest(session=self.session, task_id=task_id, sandbox=self.sandbox))

    def task_stop_many(self, task_ids: list[str]) -> list[TaskRecord]:
        """Stop several tasks at once; unknown IDs raise before anything is stopped."""
        return self._call(
            StopManyRequest(session=self.session, task_ids=task_ids, sandbox=self.sandbox)
        )

    def background(self, task_id: str) -> TaskRecord:
        """Move a running foreground command to the background (SPEC F4)."""
        return self._call(
            BackgroundRequest(session=self.session, task_id=task_id, sandbox=self.sandbox)
        )

    def interrupt(self, task_id: str) -> TaskRecord:
        """Press Ctrl+C for a running task (SPEC B3b): SIGINT to its command's process
        group (an interactive task: the key typed into its terminal). It runs on until
        the command ends by it, if it does; :meth:`stop` ends it whatever it does."""
        return self._call(
            InterruptRequest(session=self.session, task_id=task_id, sandbox=self.sandbox)
        )

    def task_output(
        self,
        task_id: str,
        block: bool = True,
        timeout: float = DEFAULT_TASK_OUTPUT_TIMEOUT_MS,
        pattern: str | None = None,
        *,
        offset: int | None = None,
    ) -> TaskOutputResult:
        """New output of a task since this session's last read (SPEC B6).

        With ``offset``, read from that byte of the log instead, without recording a read
        (how ``output --follow`` tails a task).
        """
        params = OutputRequest(
            session=self.session,
            task_id=task_id,
            block=block,
            timeout=timeout,
            pattern=pattern,
            offset=offset,
        )
        return self._call(params)

    def task_input(
        self, task_id: str, input: str, timeout: float | None = None
    ) -> TaskOutputResult:
        """Type ``input`` into an interactive task (control characters included: ``\x03``
        is Ctrl+C, ``\x04`` Ctrl+D; ``\n`` presses Enter) and wait until it waits for
        input again, ends, or ``timeout`` ms pass (default 10 s); its new output since
        this session's last read (SPEC P3)."""
        params = parse_params(
            InputRequest,
            {
                "session": self.session,
                "task_id": task_id,
                "input": input,
                "timeout": timeout,
                "request_key": uuid.uuid4().hex,
                "rules": self.rules,
                "sandbox": self.sandbox,
            },
        )
        return self._call(params)

    def terminal(
        self,
        task_id: str,
        input: str | None = None,
        *,
        resize: tuple[int, int] | None = None,
        sizer: str | None = None,
        only_if_last: bool = False,
        offset: int | None = None,
        wait: float = 0,
    ) -> TerminalResult:
        """A person's view of an interactive task's terminal (what ``attach`` uses): type
        ``input``, apply ``resize`` (set by ``sizer``, if given; with ``only_if_last``, only
        while that one set the size last; the result's ``size_before`` is the one it had),
        then the raw output from ``offset``
        (default: the last 4 KiB), waiting up to ``wait`` ms for some (SPEC P5)."""
        params = TerminalRequest(
            session=self.session, task_id=task_id, input=input, resize=resize,
            sizer=sizer, only_if_last=only_if_last, offset=offset, wait=wait,
            request_key=uuid.uuid4().hex if input else None,
            rules=self.rules if input else None,
            sandbox=self.sandbox if input or resize else None,
        )  # fmt: skip
        return self._call(params)

    def wait(self, task_id: str, timeout: float | None = None) -> TaskRecord:
        """Wait until a task ends (or ``timeout`` ms pass) and return its record. Its
        completion notice stays pending (:meth:`notifications` gives it): a host that
        shows this end says so with :meth:`ack_ends`, as the CLI's ``wait`` does."""
        return self._call(WaitRequest(session=self.session, task_id=task_id, timeout=timeout))

    def tasks(self, all: bool = False) -> list[TaskRecord]:
        """This session's tasks; with ``all`` every session's."""
        return self._call(TasksRequest(session=self.session, all=all))

    def notifications(self) -> list[Notice]:
        """Pending completion notices of this session, each delivered exactly once (SPEC B5):
        claimed in one step, so concurrent readers (threads, processes) never share one,
        then confirmed once they arrived here. A claim whose answer a cut connection lost is
        sent again with its token and gets the same notices (RM3); confirmed never, they go
        to the next reader when the lease ends."""
        token = uuid.uuid4().hex
        claim = self._call(ClaimRequest(session=self.session, claim=token))
        if claim.notices:
            self._call(AckRequest(session=self.session, claim=token))
        elif claim.waiting:  # (an empty list said none ended: a review)
            raise StorageError(texts.notices_waiting_text(claim.model_dump(by_alias=True)))
        return claim.notices

    def pending_notices(self) -> list[Notice]:
        """This session's pending notices, left pending (the next reader still gets them)."""
        return self._call(NotificationsRequest(session=self.session, ack=False))

    def claim_notices(
        self,
        lease: float = NOTICE_LEASE_SECONDS,
        scope: CallScope | None = None,
        limit: int | None = None,
    ) -> NoticeClaim:
        """Take this session's pending notices for ``lease`` seconds, to show them somewhere
        first; then :meth:`ack_notices` (shown) or :meth:`release_notices` (not shown).
        Unconfirmed, they go to the next reader when the lease ends (or when the relay
        whose receipt ``scope`` names ends first). With ``limit``, at most that many,
        the oldest (``more`` counts the others, left for the next claims)."""
        request = ClaimRequest(session=self.session, lease=lease, limit=limit)
        return self._call(request, scope=scope)

    def ack_notices(self, claim: str) -> int:
        """The claimed notices were shown: they are never delivered again."""
        return self._call(AckRequest(session=self.session, claim=claim)).acknowledged

    def ack_ends(self, task_ids: list[str]) -> int:
        """The ends of these tasks were shown (a :meth:`wait`'s or :meth:`task_stop`'s
        record): their completion notices are never delivered. Returns how many were
        pending. (Without it, a host on this API showed each end twice: a trial.)"""
        return self._call(AckRequest(session=self.session, task_ids=task_ids)).acknowledged

    def release_notices(self, claim: str, shown: bool = False) -> int:
        """The claimed notices were not shown: the next reader gets them (``shown``: also
        those :meth:`ack_notices` confirmed, which never were after all)."""
        request = ReleaseRequest(session=self.session, claim=claim, shown=shown)
        return self._call(request).released

    def unread_output(self, task_id: str, read_to: int, back_to: int) -> bool:
        """A read of new output (TaskOutput, TaskInput) whose result never reached its
        reader: the next read starts at ``back_to`` again, unless one after it moved on
        from ``read_to``. Returns whether it did."""
        request = UnreadRequest(
            session=self.session, task_id=task_id, read_to=read_to, back_to=back_to
        )
        return self._call(request).unread

    def attend_as_relay(self, relay: str) -> Presence:
        """Be present at the supervisor as the relay ``relay`` (an MCP server: see
        :mod:`.relay`) from a thread, until :meth:`Presence.close` or this process ends."""
        request = RelayRequest(session=self.session, relay=relay)
        line = encode({"v": PROTOCOL_VERSION, **request.model_dump(mode="json")})
        return Presence(self.layout, self.transport, line)

    def confirm_delivered(self, receipts: list[str]) -> int:
        """A relay passed these results on to its host (see :mod:`.relay`): what they
        took stands. Returns how many the supervisor held."""
        return self._call(DeliveredRequest(session=self.session, receipts=receipts)).confirmed

    def announce_result(self, task_id: str) -> bool:
        """A foreground result never reached its caller (its host died as it was sent):
        the task's end becomes a notice of this session (``caller_lost``). Returns
        whether it did (False: it was already in the background)."""
        return self._call(AnnounceRequest(session=self.session, task_id=task_id)).announced

    def gc(self, older_than: float | None = None, unread: bool = False) -> list[str]:
        """Prune finished tasks that ended more than ``older_than`` seconds ago (default:
        the supervisor's retention), with ``unread`` also those whose completion notices
        no session has read; returns the IDs removed."""
        request = GcRequest(session=self.session, older_than=older_than, unread=unread)
        return self._call(request).removed

    def shutdown(self) -> bool:
        """Stop the supervisor if one runs (tasks keep running). Returns whether one ran."""
        req = ShutdownRequest(session=self.session)
        return self.calls.shutdown(req.model_dump(mode="json", exclude={"op"})) is not None

    # --- transport --------------------------------------------------------------------

    def _call(
        self,
        req: Request[ResultT],
        on_progress: ProgressCallback | None = None,
        on_start: StartCallback | None = None,
        *,
        patience: float = RECONNECT_PATIENCE,
        scope: CallScope | None = None,
    ) -> ResultT:
        """Send one request (see :meth:`Caller.call`) and return its result, validated."""
        progress = None
        if on_progress is not None:
            callback = on_progress

            def progress(data: dict[str, Any]) -> None:
                callback(Progress.model_validate(data))

        params = req.model_dump(mode="json", exclude={"op"})
        if isinstance(env := getattr(req, "env", None), dict):  # (names as they are: the
            params["env"] = dict(env)  # JSON mode wrote a name's undecodable bytes as U+FFFD,
            # and two names could become one: a trial; the wire carries them escaped)
        data = self.calls.call(req.op, params, progress, on_start, patience=patience, scope=scope)
        return parse_result(req, data)

    def close(self, reason: str = CALLER_GONE) -> None:
        """The caller is gone for good (``reason``: why, for the calls it ends): see
        :meth:`Caller.close`."""
        self.calls.close(reason)

    def __reduce__(self) -> NoReturn:
        """A client is not copied nor pickled: a copy shared its connection, and closing
        it closed this one (a review); make another with the same arguments."""
        raise TypeError(
            "a wave-bash Client cannot be copied or pickled: make another with the same arguments"
        )

    def __copy__(self) -> NoReturn:
        self.__reduce__()

    def __deepcopy__(self, memo: object) -> NoReturn:
        self.__reduce__()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        """Closed as the ``with`` block ends (its commands go on, as a caller's gone)."""
        self.close()

    def abort_calls(self) -> None:
        """The caller went away (its host died): see :meth:`Caller.abort_calls`."""
        self.calls.abort_calls()


OLDER_TASK_ID = frozenset({"shell_id", "bash_id"})
"""Older names of ``task_id``, still sent by some hosts."""


@cache
def _schema_fields(name: str) -> tuple[str, ...]:
    """The fields a tool's schema offers a model, in its order (none: no such tool)."""
    for tool in tool_definitions("mcp"):
        if tool["name"] == name:
            return tuple(tool["inputSchema"]["properties"])
    return ()


@cache
def _tool_fields(name: str) -> frozenset[str]:
    """The fields a tool takes: its schema's, and older names still sent (``shell_id`` and
    ``bash_id`` for ``task_id``, BashOutput's ``filter``)."""
    older = set(OLDER_TASK_ID) if "task_id" in _schema_fields(name) else set()
    if name == TASK_OUTPUT_TOOL:
        older.add("filter")
    return frozenset(_schema_fields(name)) | older


def _misnamed(name: str, arguments: Mapping[str, Any]) -> str | None:
    """Why a call with a field its tool does not take is refused, as Claude Code refuses
    one (ignored, `background: true` ran a dev server in the foreground until its
    timeout, a review), beside the required field it lacks, if one: the field sent that
    looks like it (`cmd`, `Command`, `taskId`) is named, as "command is required" alone
    had a model guess again (a trial)."""
    schema = _schema_fields(name)
    fields = _tool_fields(name)
    ids = {k: v for k in ("task_id", *sorted(OLDER_TASK_ID)) if (v := arguments.get(k)) is not None}
    named = {v.strip().lower() if isinstance(v, str) else repr(v) for v in ids.values()} - {""}
    if "task_id" in schema and len(named) > 1:  # (one was taken, the others ignored, which
        # one by the tool: a trial; each as it is taken: `ABC` is `abc`)
        sent = ", ".join(f"{k} {v!r}" for k, v in ids.items())
        return f"{sent} name different tasks: send task_id alone"
    unknown = [key for key in arguments if key not in fields] if schema else []
    if not unknown:
        return None  # (no such tool: said as such; else the tool's parse checks the rest)
    takes = f"{name} takes {', '.join(schema)}"
    missing = [field for field in _required_fields(name) if not _given(field, arguments)]
    guesses = {}  # (each named: a model mends the one named and sends the next again)
    for sent in unknown:
        for field in missing:  # a missing field it looks like (or an older name of it) first
            names = [field, *(sorted(OLDER_TASK_ID) if field == "task_id" else [])]
            if difflib.get_close_matches(str(sent).lower(), names, 1, 0.6):
                guesses[sent] = field
                break
        else:
            if near := difflib.get_close_matches(str(sent).lower(), schema, 1, 0.6):
                guesses[sent] = near[0]
    if len(unknown) == 1:
        hint = f"did you mean {guesses[unknown[0]]!r}?" if guesses else ""
    else:
        hint = "; ".join(f"{near!r} for {_shown(sent)}" for sent, near in guesses.items())
        hint = f"did you mean {hint}?" if hint else ""
    if missing:
        meant = any(guess in missing for guess in guesses.values())
        return f"{missing[0]} is required ({_unexpected(unknown)}: {hint if meant else takes})"
    return f"{_unexpected(unknown)} ({takes})" + (f": {hint}" if hint else "")


def _unexpected(unknown: Sequence[Any]) -> str:
    """The fields a tool does not take that a call sent, each named."""
    if len(unknown) == 1:
        return f"an unexpected parameter {_shown(unknown[0])} was sent"
    named = [_shown(sent) for sent in unknown[:8]] + [f"{len(unknown) - 8} more"] * (
        len(unknown) > 8
    )
    return f"unexpected parameters {', '.join(named[:-1])} and {named[-1]} were sent"


def _shown(field: Any) -> str:
    """A field's name as said back: a long one cut (a name is any JSON string)."""
    text = str(field)
    return repr(text if len(text) <= 40 else f"{text[:37]}...")


def _given(field: str, arguments: Mapping[str, Any]) -> bool:
    """Whether a field was sent, by its name or an older one."""
    return field in arguments or (field == "task_id" and bool(OLDER_TASK_ID & set(arguments)))


@cache
def _required_fields(name: str) -> tuple[str, ...]:
    """The fields a tool's schema requires (its definitions are rendered anew each time:
    34 µs, on every tool call)."""
    for tool in tool_definitions("mcp"):
        if tool["name"] == name:
            return tuple(tool["inputSchema"].get("required", []))
    return ()


_login_path_injected = False


def _check_arguments(*, env: object, follow_cd: object, transport: object, **paths: object) -> None:
    """A client's arguments of the wrong kind are said as such (`env="A=b"` raised
    `ValueError` from `dict()`, `cwd=5` a `TypeError`, `transport="TCP"` was taken for
    Unix sockets, `follow_cd="yes"` named an internal field: a trial).

    Raises:
        InvalidInputError: one of them is not what it must be.
    """
    for name, value in paths.items():
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise InvalidInputError(f"{name} must be a path (str or os.PathLike), not {value!r}")
    if env is not None and not isinstance(env, Mapping):
        raise InvalidInputError(f"env must be a mapping of names to values, not {env!r}")
    if not isinstance(follow_cd, bool):
        raise InvalidInputError(f"follow_cd must be True or False, not {follow_cd!r}")
    if transport and str(transport).lower() not in ("unix", "tcp"):  # ("": the default)
        raise InvalidInputError(f'transport must be "unix" or "tcp", not {transport!r}')


def inject_login_path(client: Client | None = None, timeout_ms: float = 5000) -> str | None:
    """Probe the login shell's PATH once per process and put it in ``os.environ`` (SPEC E1),
    after the entries of this process's PATH it lacks: those its starter put there (an
    activated venv's ``bin``, a host's ``env``), which a profile that sets the PATH anew
    (Debian's ``/etc/profile``) dropped, and `python` was not found (a review).

    Every later command inherits it and runs with plain ``-c``; no profile is loaded per
    command. A failed probe changes nothing and raises nothing. Returns the PATH in force.
    ``client``: the one to probe with (pass yours: without one, a client of the default
    state dir starts a supervisor there).
    """
    global _login_path_injected
    if not _login_path_injected:
        _login_path_injected = True
        with contextlib.suppress(WaveError, OSError):
            path = (client or Client()).login_path(timeout_ms)
            if path:
                os.environ["PATH"] = with_own_entries(path, os.environ.get("PATH", ""))
    return os.environ.get("PATH")


class UnclearAnswer(Exception):
    """An approval callback's answer that is not True, False or None."""

    def __init__(self, answer: object) -> None:
        super().__init__(f"it answered {answer!r}, not True (approved), False or None")


def _result_note(result: BashResult) -> str:
    """What a caller whose callback raised after its command ran is told of the result."""
    if result.background_task_id:
        return f"wave-bash: task {result.background_task_id} keeps running in the background"
    return (
        f"wave-bash: the command ran (exit code {result.exit_code}); its output is in "
        f"{result.output_path}"
    )


def _declined(result: BashResult, failure: BaseException | None = None) -> BashResult:
    """A command a person was asked about and did not approve, or whose approval callback
    raised ``failure`` (declined too, with the error as the reason)."""
    reason = result.permission.reason if result.permission else "it needed approval"
    if failure is None:
        why = "the user declined"
        text = f"The user did not approve this command ({reason}). Nothing was run."
    else:
        why = f"the approval callback failed: {error_text(failure)}"
        text = f"This command was not approved ({reason}): {why}. Nothing was run."
    info = PermissionInfo(decision="deny", reason=why, source="user",
                          rule=result.permission.rule if result.permission else None)  # fmt: skip
    return BashResult(success=False, message=text, error=text, permission=info)
