"""Error classes shared by the client, the CLI and (through the protocol) the supervisor.

Each error has a stable ``code`` so it survives the trip over the socket, and carries the
task ID or path it is about so that ``str()`` is useful on its own.
"""

from __future__ import annotations


def error_text(exc: BaseException) -> str:
    """An exception of a caller's callback in words: its type, and its message if any."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class WaveError(Exception):
    """Base class of every wave-bash error; ``str()`` is the message to show."""

    code = "error"

    def __init__(self, message: str, *, task_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.task_id = task_id

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as made (a subclass's own arguments differ: a `TaskNotFoundError`
        through a process pool said "No task found with ID: No task found…", a trial)."""
        return _rebuilt, (type(self), self.message, self.task_id), self.__dict__


def _rebuilt(kind: type[WaveError], message: str, task_id: str | None) -> WaveError:
    """An error of ``kind`` as it was made, whatever its own ``__init__`` takes."""
    error = Exception.__new__(kind)
    WaveError.__init__(error, message, task_id=task_id)
    return error


class InvalidInputError(WaveError):
    """The request was malformed (bad timeout, empty command, ...); nothing was run."""

    code = "invalid_input"


class TaskNotFoundError(WaveError):
    """No task with the given ID exists (or it has expired)."""

    code = "task_not_found"

    def __init__(self, task_id: str, message: str | None = None) -> None:
        super().__init__(message or f"No task found with ID: {task_id}", task_id=task_id)


class TaskNotRunningError(WaveError):
    """The task exists but has already ended, so it cannot be stopped or backgrounded."""

    code = "task_not_running"


class ShellNotFoundError(WaveError):
    """Neither bash nor zsh (nor Git Bash on Windows) could be found."""

    code = "shell_not_found"


class SpawnError(WaveError):
    """The supervisor could not start the command (bad cwd, exhausted resources, ...)."""

    code = "spawn_failed"


class SandboxUnavailableError(WaveError):
    """A sandbox was asked for and cannot be set up here (no bubblewrap, no user
    namespaces): the command is never run unsandboxed instead (SPEC SB2)."""

    code = "sandbox_unavailable"


class StateDirError(WaveError):
    """The state directory cannot be created or used."""

    code = "state_dir"


class SupervisorUnavailableError(WaveError):
    """The supervisor could not be reached or started."""

    code = "supervisor_unavailable"


class SupervisorRefusedError(SupervisorUnavailableError):
    """The supervisor refused to start (its own error: a state dir it cannot use, a bad
    setting): trying again would not help."""


class SupervisorNotAnsweringError(SupervisorUnavailableError):
    """A supervisor runs (it holds its state dir's lock) but answers nothing: stopped
    (SIGSTOP) or frozen. None can be started beside it, and trying again would not help
    until it answers."""


class CallAbandonedError(SupervisorUnavailableError):
    """The call was abandoned by its own caller (its client closed, its scope abandoned,
    its host gone): no outage, so nothing to try again (it read as one: a review). A
    command it started runs on in the background (``task_id``)."""

    code = "call_abandoned"


class ForbiddenError(WaveError):
    """The peer is not allowed: another user, or a TCP client without the token."""

    code = "forbidden"


class BusyError(WaveError):
    """The supervisor is at a limit (connections, buffered requests); try again shortly."""

    code = "busy"


class OutOfDescriptorsError(BusyError):
    """This process has no descriptor left to reach the supervisor with: tried again for a
    few seconds only (it may never clear: a leak)."""


class StorageError(WaveError):
    """The state dir cannot be written (full, read-only): a new command is not started,
    since nothing may run that the journal cannot record."""

    code = "storage"


class InternalError(WaveError):
    """A bug in the supervisor; its log has the traceback."""

    code = "internal"


class ProtocolError(WaveError):
    """The peer spoke an incompatible or malformed protocol."""

    code = "protocol"


_BY_CODE: dict[str, type[WaveError]] = {
    cls.code: cls
    for cls in (
        WaveError,
        InvalidInputError,
        TaskNotRunningError,
        ShellNotFoundError,
        SpawnError,
        SandboxUnavailableError,
        StateDirError,
        SupervisorUnavailableError,
        CallAbandonedError,
        ForbiddenError,
        BusyError,
        StorageError,
        InternalError,
        ProtocolError,
    )
}


def error_from_wire(code: str, message: str, task_id: str | None = None) -> WaveError:
    """Rebuild the error class a supervisor reported, keeping its message verbatim."""
    if code == TaskNotFoundError.code and task_id is not None:
        return TaskNotFoundError(task_id, message)
    cls = _BY_CODE.get(code, WaveError)
    return cls(message, task_id=task_id)
