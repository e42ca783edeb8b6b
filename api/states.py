"""A task's state as closed sets of values (SPEC I4): its status, who owns it, why it went
to the background and why it ended.

Everything that branches on one of these matches every member (``match`` with
``assert_never``), so a new member fails the type check until each place handles it.
They are ``str`` enums: the journal stores and the JSON contract carries their values.
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never


class TaskStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    """The command exited with status 0."""
    FAILED = "failed"
    """The command exited with another status."""
    KILLED = "killed"
    """Stopped (TaskStop, a limit, a ``sleep`` past its timeout) or killed by a signal."""
    LOST = "lost"
    """Its exit status cannot be known (the host restarted, its monitor was killed)."""

    @property
    def ended(self) -> bool:
        match self:
            case TaskStatus.RUNNING:
                return False
            case TaskStatus.COMPLETED | TaskStatus.FAILED | TaskStatus.KILLED | TaskStatus.LOST:
                return True
            case _:
                assert_never(self)


class Owner(StrEnum):
    FOREGROUND = "foreground"
    """A caller waits for it (a Bash call, a CLI ``run``)."""
    BACKGROUND = "background"
    """Nobody waits: its end becomes a notice of its session."""


class BackgroundReason(StrEnum):
    EXPLICIT = "explicit"
    """Started with ``run_in_background``."""
    TIMEOUT = "timeout"
    """Moved when its foreground timeout passed (SPEC F3)."""
    USER = "user"
    """Moved by a person (Ctrl+B, ``wave-bash bg``)."""
    CALLER_LOST = "caller_lost"
    """Its caller went away while it ran."""
    INPUT = "waiting_for_input"
    """An interactive command waited for input: the Bash call returned (SPEC P2)."""


class EndReason(StrEnum):
    """Why a task ended, where its exit code does not say."""

    STOPPED = "stopped"
    """TaskStop (or stop-all)."""
    TIMEOUT = "timeout"
    """A ``sleep`` past its timeout, terminated (SPEC F3)."""
    LOG_CAP = "log_cap"
    """Its output reached the log size cap."""
    MEMORY_LIMIT = "memory_limit"
    """It reached ``WAVE_TASK_MEMORY_LIMIT``."""
    MONITOR_LOST = "monitor_lost"
    """Its monitor was killed; its status is unknown."""
    NOT_STARTED = "not_started"
    """Its supervisor stopped before handing its command over: nothing ran (D3a)."""
    HOST_RESTART = "host_restart"
    """The host restarted under it."""
    SANDBOX_ESCAPE = "sandbox_escape"
    """Sandboxed, a file git outside the sandbox would run was made in its workspace as it ran
    (SB1): stopped at once, with every sandboxed task there (which made it is not known)."""


__all__ = ["BackgroundReason", "EndReason", "Owner", "TaskStatus"]
