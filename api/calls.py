"""Calls to a supervisor through supervisor restarts, on plain JSON (no models: the CLI's
hot path uses this directly, the :class:`~wave_bash.api.client.Client` validates on top).
"""

from __future__ import annotations

import functools
import threading
import time

from .constants import DEFAULT_TIMEOUT_MS, MAX_REQUEST_BYTES
from .errors import (
    BusyError,
    CallAbandonedError,
    ForbiddenError,
    InvalidInputError,
    OutOfDescriptorsError,
    SupervisorNotAnsweringError,
    SupervisorRefusedError,
    SupervisorUnavailableError,
    WaveError,
    error_from_wire,
)
from .wire import PROTOCOL_VERSION, AnswerOverdue, NotAnswering, encode

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms
    from collections.abc import Callable, Sequence
    from typing import Any

    from .connection import Channel, Connector

    RawProgress = Callable[[dict[str, Any]], None]
    StartCallback = Callable[[str], None]

RECONNECT_PATIENCE = 30.0
"""How long a call other than a foreground command keeps trying to reach a supervisor that
went away (a foreground command keeps trying until its own timeout has passed)."""
FOREGROUND_PATIENCE = 10.0
"""The least a foreground call keeps trying (its timeout, when longer): a restart takes
a moment even when the timeout is short."""
DESCRIPTOR_PATIENCE = 5.0
"""How long a call tries again while this process has no descriptor left to connect
with (threads of a burst close theirs in a moment; a leak never does)."""
RETRY_NOTICE_SECONDS = 2.0
"""How long a call tries again before :attr:`Caller.on_retrying` is told (a supervisor's
restart takes a moment: no word for it)."""
BACKOFF_FIRST, BACKOFF_MAX = 0.05, 1.0
"""Seconds between attempts to reach the supervisor again: doubling, up to the maximum."""
ANSWER_SLACK = 30.0
"""Seconds past a call's own time limit (a command's timeout, a wait's) its answer may
take before the supervisor counts as gone: a stopped or frozen one (or link) keeps the
connection open and silent, and the call would wait forever."""
QUICK_CALL_LIMIT = 120.0
"""Seconds a call with no time limit of its own (tasks, stop) waits for its answer."""
STATUS_LIMIT = 10.0
"""Seconds ``status`` waits for its answer: a supervisor answers it at once, and a
frozen one was reported as none running after 2 minutes (a review)."""
TIMED_OPS = frozenset({"wait", "output", "input"})
"""Calls whose ``timeout`` is what they wait: sent again after a restart, with what is left."""
_MAYBE_STARTED = (
    "its command may have started before the supervisor named its task: if it did, it "
    "keeps running in the background, and its end comes as a notice"
)
"""Said of a command whose call was abandoned before its task was named (a Ctrl+C in its
first milliseconds said nothing of it, though it ran: a trial)."""
CALLER_GONE = "its caller went away"
"""Why a call was abandoned, unless its caller said otherwise (:meth:`Caller.abort_calls`)."""


def answer_deadline(op: str, params: dict[str, Any], began: float) -> float | None:
    """When a call's answer is overdue (``time.monotonic()``), or None: it may take as
    long as its task runs (``wait`` with no timeout, ``output --follow``) or its work
    (``gc``: a prune of many files)."""
    timeout = params.get("timeout")
    if op == "run" and timeout is None:
        timeout = DEFAULT_TIMEOUT_MS
    if params.get("follow") or (op == "wait" and timeout is None) or op == "gc":
        return None
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return began + timeout / 1000 + ANSWER_SLACK
    return began + (STATUS_LIMIT if op == "status" else QUICK_CALL_LIMIT)


class _ConnectionLost(SupervisorUnavailableError):
    """The connection ended before the answer (the supervisor died or was stopped)."""

    def __init__(
        self,
        message: str,
        answered: bool = True,
        *,
        ssh_failed: bool = False,
        cut: bool = False,
        overdue: bool = False,
        frozen: bool = False,
    ) -> None:
        super().__init__(message)
        self.answered = answered
        """Whether any message had arrived before the connection ended."""
        self.ssh_failed = ssh_failed
        """Whether ``ssh`` itself failed (its error is the message)."""
        self.cut = cut
        """Whether that ssh had connected, then lost its connection (tried again)."""
        self.overdue = overdue or frozen
        """Whether no answer came in time (the connection is still open)."""
        self.frozen = frozen
        """Whether the supervisor went silent and answered no check either (stopped,
        frozen, or a remote that never answers): no use sending it again."""


class _Use:
    """One call's use of a channel: what an abandon interrupts. A kept channel carries
    the next call once this one has ended: an abandon that comes late (it listed this
    use, then the call ended) must not cut that next call."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self._lock = threading.Lock()
        self._active = True

    def interrupt(self) -> None:
        with self._lock:
            if self._active:
                self.channel.interrupt()

    def end(self) -> None:
        with self._lock:
            self._active = False


class CallScope:
    """Lets another thread abandon one call (an MCP host cancelled its request): it ends
    as a lost caller's does (see :meth:`Caller.abort_calls`, which ends them all), its
    command, if one started, in the background, announced as a notice later."""

    def __init__(self, receipt: str | None = None) -> None:
        self._lock = threading.Lock()
        self._uses: set[_Use] = set()
        self.abandoned = False
        self.receipt = receipt
        """A relay's receipt for the call's results (``RELAY:N``): the supervisor holds
        what they take until the relay confirms them passed on (``delivered``)."""
        self.held = False
        """Whether the supervisor held something under the receipt (then confirm it)."""
        self.sent = False
        """Whether a request of the call's was written whole to a supervisor's connection
        (it may have been acted on)."""

    def abandon(self) -> None:
        """End the call now, from any thread; it sends nothing more."""
        with self._lock:
            self.abandoned = True
            uses = list(self._uses)
        for use in uses:
            use.interrupt()

    def enter(self, use: _Use) -> bool:
        """Track the channel the call uses now; False when the call was abandoned."""
        with self._lock:
            self._uses.add(use)
            return not self.abandoned

    def leave(self, use: _Use) -> None:
        with self._lock:
            self._uses.discard(use)


SHUTDOWN_PATIENCE = 30.0
"""Seconds ``supervisor stop`` waits for its answer (one stopped by SIGSTOP never gives
it: the stop waited for good, a review)."""


class Caller:
    """Sends requests through a :class:`Connector`, again when the supervisor goes away."""

    def shutdown(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """Stop the supervisor if one runs (its tasks keep running), by a ``shutdown``
        request of ``params``: its answer, or None where none ran.

        Raises:
            SupervisorUnavailableError: it did not answer within :data:`SHUTDOWN_PATIENCE`
                (stopped, frozen).
        """
        try:
            channel = self.connector.open(start=False)
        except SupervisorUnavailableError:
            return None
        deadline = time.monotonic() + SHUTDOWN_PATIENCE
        try:
            answer = self.exchange(
                channel, "shutdown", params, deadline=deadline, check=self._answers
            )
        except _ConnectionLost as lost:
            if time.monotonic() < deadline and not lost.overdue:
                raise
            raise SupervisorNotAnsweringError(
                "the supervisor did not answer the stop: it may be stopped (SIGSTOP: "
                "`kill -CONT` it; it then reads the stop and stops) or frozen (its log: "
                f"{self.log_hint})"
            ) from lost
        finally:
            channel.close()
        self.connector.wait_stopped(deadline)
        return dict(answer or {})

    def __init__(self, connector: Connector, log_hint: str) -> None:
        self.connector = connector
        self.log_hint = log_hint
        """Where to look when a supervisor closes a connection unanswered."""
        self._lock = threading.Lock()
        self._in_flight: set[_Use] = set()
        self._abort_epoch = 0
        self._abort_reason = CALLER_GONE
        self._closed = False
        self.cli_hint = "wave-bash"
        """How a hint names the CLI that reaches this supervisor (``texts.cli_words``)."""
        self.on_retrying: Callable[[str, float], None] | None = None
        """Told once an outage has had a call try again for :data:`RETRY_NOTICE_SECONDS`
        (why, and the seconds it goes on trying): a person at a remote `run` whose sshd
        went down saw nothing for 96 s (a trial). Once for all the calls that meet it,
        until one gets through (a `run`'s streaming calls said it twice: a trial)."""
        self._retrying_said = False

    def call(
        self,
        op: str,
        params: dict[str, Any],
        on_progress: RawProgress | None = None,
        on_start: StartCallback | None = None,
        *,
        patience: float = RECONNECT_PATIENCE,
        scope: CallScope | None = None,
    ) -> Any:
        """Send one request and return its result's data, through supervisor restarts.

        When the supervisor goes away, or cannot be started for a while, the request is
        sent again (with backoff) for ``patience`` seconds. A ``run`` carries a request
        key, so a resent one never starts its command twice: the supervisor answers with
        the task the first one started. Once the command's task ID is known, the call
        waits for that task again (``attach``). It never reports failure for a command it
        knows started without naming it.
        """
        started: list[str] = []
        epoch = self._abort_epoch
        sent = False
        first_op = op
        began = time.monotonic()
        deadline = answer_deadline(op, params, began)  # (kept when sent again: `attach`)
        first_timeout = params.get("timeout") or 0

        def note_start(task_id: str) -> None:
            if not started:
                started.append(task_id)
                if on_start is not None:
                    on_start(task_id)

        give_up = time.monotonic() + patience
        delay = BACKOFF_FIRST
        failing_since: float | None = None
        short_since: float | None = None  # (every try since then found no descriptor)
        while True:
            if self._closed:
                raise CallAbandonedError("this client was closed: its caller went away")
            try:
                result = self._attempt(op, params, on_progress, note_start, epoch, scope, deadline)
                self._retrying_said = False
                return result
            except _ConnectionLost as lost:
                if lost.frozen:  # (it answers no one: a `tasks` waited 2 minutes, a trial)
                    raise _not_answering(lost, started, first_op, self.cli_hint, params) from None
                if lost.ssh_failed and not (sent or started or lost.cut):  # never connected
                    raise SupervisorUnavailableError(str(lost)) from None  # nothing ran
                # (ssh failing to connect again after a cut: the host or its sshd may be
                # back in a moment, a network change, a restart: tried for the patience)
                sent = True
                if lost.answered and not started:
                    raise
                failure: WaveError = lost
            except ForbiddenError:
                raise
            except BusyError as exc:  # answered before the request was read: it may go again
                failure = exc
            except SupervisorNotAnsweringError as exc:  # (one runs: none can start)
                raise _not_answering(exc, started, first_op, self.cli_hint, params) from None
            except SupervisorUnavailableError as exc:  # could not start one (yet)
                refused = isinstance(exc, SupervisorRefusedError)
                if (not self.connector.may_start or refused) and not sent:
                    raise  # ssh failed, none may be started, or it refuses: nothing was sent
                failure = exc
            except BaseException as exc:  # a callback's own error, a Ctrl+C: the command
                if started and not isinstance(exc, WaveError):  # runs on, unnamed (a trial)
                    exc.add_note(f"wave-bash: task {started[0]} keeps running in the background")
                elif first_op == "run" and not isinstance(exc, WaveError):  # (before its
                    exc.add_note(f"wave-bash: {_MAYBE_STARTED} (`{self.cli_hint} tasks`)")  # ID)
                raise
            if epoch != self._abort_epoch or (scope is not None and scope.abandoned):
                why = self._abort_reason if epoch != self._abort_epoch else CALLER_GONE
                what = (
                    f"task {started[0]} keeps running in the background"
                    if started
                    else _MAYBE_STARTED
                    if first_op == "run"
                    else None
                )
                raise CallAbandonedError(
                    f"the call was abandoned: {why}" + (f" ({what})" if what else ""),
                    task_id=started[0] if started else None,
                ) from None
            left = give_up - time.monotonic()
            if isinstance(failure, OutOfDescriptorsError):  # (its own short patience while
                # it lasts: one that never cleared held a call for its whole timeout, a
                # review; past it, a busy supervisor gets the call's own: a CI run failed)
                short_since = short_since or time.monotonic()
                left = min(left, short_since + DESCRIPTOR_PATIENCE - time.monotonic())
            else:
                short_since = None
            failing_since = failing_since or time.monotonic()
            trying = time.monotonic() - failing_since
            if left <= 0:  # (before any word of trying again: "for up to 0 s", then this)
                task_id = started[0] if started else None
                raise SupervisorUnavailableError(
                    _give_up_text(
                        failure,
                        task_id,
                        first_op == "run" and sent,
                        self.cli_hint,
                        _tasks_named(params),
                    ),
                    task_id=task_id,
                ) from None
            said = self._retrying_said
            if self.on_retrying is not None and trying >= RETRY_NOTICE_SECONDS and not said:
                self._retrying_said = True
                self.on_retrying(str(failure), left)
            time.sleep(min(delay, left))  # (the last try at the end of the patience: a
            # delay that went past it gave up a second early, a review)
            delay = min(delay * 2, BACKOFF_MAX)
            if started:
                # The supervisor went away while a command ran (killed, restarted). The
                # command keeps running and a new supervisor re-adopts it: wait for it again.
                op = "attach"
                params = {
                    "session": params.get("session"),
                    "task_id": started[0],
                    "progress": on_progress is not None,
                    "exact_output": params.get("exact_output", False),
                }
            elif op in TIMED_OPS and isinstance(params.get("timeout"), (int, float)):
                elapsed = (time.monotonic() - began) * 1000  # (what is left of it, not again)
                params = {**params, "timeout": max(0.0, float(first_timeout) - elapsed)}
            # Otherwise the same request goes again: a run with the same key (never twice).

    def _attempt(
        self,
        op: str,
        params: dict[str, Any],
        on_progress: RawProgress | None,
        on_start: StartCallback,
        epoch: int,
        scope: CallScope | None = None,
        deadline: float | None = None,
    ) -> Any:
        channel = self.connector.open()
        use = self._track(channel, epoch, scope)
        closed = answered = False
        try:
            # (a `status` is that check: asked again after its silence, it took 20 s to
            # say a frozen supervisor does not answer, where its own limit is 10 s)
            check = None if op == "status" else functools.partial(self._answers, epoch, scope)
            result = self.exchange(
                channel, op, params, on_progress, on_start, deadline, check, scope=scope
            )
            answered = True
            return result
        except _ConnectionLost as lost:
            failure, closed = channel.close(), True
            if failure and not lost.overdue:  # the carrier itself failed (ssh unreachable,
                # killed; not by us, after a silence: that is what is said)
                cut = bool(getattr(failure, "cut", False))
                raise _ConnectionLost(failure, lost.answered, ssh_failed=True, cut=cut) from None
            raise
        finally:
            self._untrack(use, scope)
            if answered:  # (an error answer: closed, as the supervisor may close it too)
                channel.release()
            elif not closed:
                channel.close()

    def _track(self, channel: Channel, epoch: int, scope: CallScope | None) -> _Use:
        """List a call's channel among those an abandon interrupts (at once if the call
        was abandoned while it connected)."""
        use = _Use(channel)
        with self._lock:
            self._in_flight.add(use)
            abandoned = epoch != self._abort_epoch or self._closed  # left while we connected
        if scope is not None and not scope.enter(use):
            abandoned = True
        if abandoned:
            channel.interrupt()
        return use

    def _untrack(self, use: _Use, scope: CallScope | None) -> None:
        with self._lock:
            self._in_flight.discard(use)
        if scope is not None:
            scope.leave(use)
        use.end()  # (no late abandon reaches the channel's next call)

    def exchange(
        self,
        channel: Channel,
        op: str,
        params: dict[str, Any],
        on_progress: RawProgress | None = None,
        on_start: StartCallback | None = None,
        deadline: float | None = None,
        check: Callable[[], bool] | None = None,
        *,
        scope: CallScope | None = None,
    ) -> Any:
        """One request on one channel: its result's data, or its error raised; past
        ``deadline`` with no answer, a connection lost; with ``check``, also when nothing
        came for a while and ``check`` found no answer either (:meth:`_answers`); the
        ``scope``'s receipt goes with it, and what the answer says of it comes back there."""
        keep = {"keep": True} if channel.keeps else {}  # (PR1: open after the answer)
        receipt = {"receipt": scope.receipt} if scope is not None and scope.receipt else {}
        line = encode({"v": PROTOCOL_VERSION, "op": op, **params, **keep, **receipt})
        if len(line) > MAX_REQUEST_BYTES:  # the supervisor would refuse it: never sent
            sizes = [(len(encode({k: v})), k) for k, v in params.items()]  # (as sent: `é` is
            size, name = max(sizes, default=(0, "command"))  # 6 bytes)
            advice = (  # (a 10 MB description was told to put its command in a script)
                "write a command this long to a script file and run that"
                if name == "command"
                else f"its `{name}` alone is {size} bytes: shorten it"
            )
            raise InvalidInputError(
                f"the request is {len(line)} bytes, over the {MAX_REQUEST_BYTES >> 20} MiB a "
                f"request can have: {advice}"
            )
        try:
            channel.send(line)
        except OSError as exc:  # it closed before reading it all: its answer may say why
            refusal = _refusal(channel)
            if refusal is not None:
                raise refusal from None
            raise _ConnectionLost(f"the supervisor closed the connection: {exc}", False) from None
        if scope is not None:
            scope.sent = True
        answered = False
        try:
            for message in channel.messages(deadline, check):
                answered = True
                kind = message.get("type")
                if kind == "started":
                    if on_start is not None:
                        on_start(str(message["data"]["taskId"]))
                elif kind == "progress":
                    if on_progress is not None:
                        on_progress(message["data"])
                elif kind == "result":
                    channel.kept_open = message.get("keep") is True
                    if scope is not None and message.get("held") is True:
                        scope.held = True
                    return message.get("data")
                elif kind == "error":
                    raise error_from_wire(
                        str(message.get("code")), str(message.get("message")), message.get("taskId")
                    )
        except AnswerOverdue as overdue:
            silent = isinstance(overdue, NotAnswering)
            # Over ssh, silence may be the link's (a network cut): sent again as a cut,
            # once ssh's keepalives end it (RM3; given up at once, a cut of 20 s failed
            # a `wait`: a review). Here, nothing but the supervisor is silent.
            link = " (over ssh: or its link, down)" if self.connector.remote else ""
            raise _ConnectionLost(
                f"the supervisor has not answered in time (stopped or frozen? see {self.log_hint})"
                + (
                    f": silent, and no answer to a check on another connection{link}"
                    if silent
                    else ""
                ),
                answered,
                overdue=True,
                frozen=silent and not self.connector.remote,
            ) from None
        raise _ConnectionLost(
            f"the supervisor closed the connection before answering (see {self.log_hint})",
            answered,
        )

    def _answers(self, epoch: int = -1, scope: CallScope | None = None) -> bool:
        """Whether the supervisor answers a ``status`` on another connection within
        :data:`STATUS_LIMIT`, asked after a silence: one stopped, frozen or (over ssh) a
        remote that never answers held a `tasks` for 2 minutes (a trial), a `wait` for
        ever. Where none can be asked (none runs, no descriptor), the call's own
        connection tells. An abandon of the call (``epoch``, ``scope``) ends it too."""
        try:
            channel = self.connector.open(start=False)
        except SupervisorNotAnsweringError:
            return False
        except (WaveError, OSError):
            return True
        use = self._track(channel, self._abort_epoch if epoch < 0 else epoch, scope)
        answered = False
        try:
            self.exchange(channel, "status", {}, deadline=time.monotonic() + STATUS_LIMIT)
            answered = True
        except _ConnectionLost as lost:
            return not lost.overdue
        except (WaveError, OSError):  # (an answer all the same, or no connection)
            return True
        finally:
            self._untrack(use, scope)
            if answered:
                channel.release()
            else:
                channel.close()
        return True

    def close(self, reason: str = CALLER_GONE) -> None:
        """The caller is gone for good: calls in flight end as lost callers (see
        :meth:`abort_calls`) and every later call fails at once, running nothing."""
        self._closed = True
        self.abort_calls(reason)
        self.connector.drop_kept()

    def abort_calls(self, reason: str = CALLER_GONE) -> None:
        """The caller went away (its host died; ``reason`` says so in the calls' errors):
        end every call in flight as a lost caller, without waiting again. The supervisor
        keeps their commands running in the background (``caller_lost``) and announces
        their ends as notices (SPEC F5). Calls made afterwards work as usual."""
        with self._lock:
            self._abort_reason = reason
            self._abort_epoch += 1
            in_flight = list(self._in_flight)
        for use in in_flight:
            use.interrupt()


def cli_words(
    state_dir: str | None,
    remote: str | None = None,
    ssh_options: Sequence[str] = (),
    remote_command: str | None = None,
    session: str | None = None,
) -> str:
    """How a hint names the CLI that reaches a task's supervisor: with the state dir and
    remote it was given (the task is there: pasted hints got "No task found" from another
    supervisor, and started one in the default state dir: trials), the ssh options (each
    as ``--ssh-option`` splits it again) and remote command that reach it, and the
    session (its read offsets: an `input` hint without it showed what was shown, a
    trial)."""
    import shlex

    words = ["wave-bash"]
    if state_dir:
        words += ["--state-dir", state_dir]
    if session:
        words += ["--session", session]
    if remote is None:
        return shlex.join(words)
    words += ["--remote", remote, *(f"--ssh-option={option}" for option in ssh_options)]
    words += ["--remote-command", remote_command] if remote_command else []
    return shlex.join(words)


def _not_answering(
    failure: BaseException, started: list[str], first_op: str, cli: str, params: dict[str, Any]
) -> SupervisorNotAnsweringError:
    """The error of a call given up at once: its supervisor answers nothing (a call on
    tasks names them: a `wait` named none, a trial)."""
    task_id = started[0] if started else None
    text = _give_up_text(failure, task_id, first_op == "run", cli, _tasks_named(params))
    return SupervisorNotAnsweringError(text, task_id=task_id)


def _tasks_named(params: dict[str, Any]) -> list[str]:
    """The tasks a request is about (``task_id``, or ``stop_many``'s ``task_ids``)."""
    about = params.get("task_id") or params.get("task_ids")
    if isinstance(about, str):
        return [about]
    return [str(task_id) for task_id in about] if isinstance(about, list) else []


def _give_up_text(
    failure: BaseException,
    task_id: str | None,
    maybe_started: bool,
    cli: str,
    about: Sequence[str] = (),
) -> str:
    """Why a call gave up, and what became of its command (``cli``: how the hint names
    the CLI, with what reaches this supervisor: a remote one's hint named none of it, and
    pasted asked the local default state dir, a trial); ``about``: the tasks a call on
    tasks (`wait`, `output`, `stop`) was about (it named none: a trial)."""
    text = f"{failure}; gave up reaching the supervisor"
    if task_id is not None:
        return (
            f"{text}: the command (task {task_id}) may still be running, see TaskOutput or "
            f"`{cli} output {task_id}`"
        )
    if len(about) == 1:
        return f"{text}: task {about[0]} may still be running, see `{cli} output {about[0]}` later"
    if about:
        return f"{text}: tasks {', '.join(about)} may still be running, see `{cli} tasks` later"
    return f"{text}: the command may have started" if maybe_started else text


def _refusal(channel: Channel) -> Exception | None:
    """The error a supervisor answered before closing on a request it would not read to
    its end (too large, malformed), if it did."""
    try:
        for message in channel.messages():
            if message.get("type") == "error":
                return error_from_wire(
                    str(message.get("code")), str(message.get("message")), message.get("taskId")
                )
    except (OSError, ValueError):
        return None
    return None
