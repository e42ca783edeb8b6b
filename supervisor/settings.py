"""Supervisor limits, from its options or (for an auto-started supervisor) the environment."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from wave_bash.api.errors import InvalidInputError
from wave_bash.api.units import parse_duration, parse_size

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """Supervisor limits; each has an environment variable so an auto-started supervisor
    (which inherits the client's environment) can be configured too."""

    log_cap: int = 1 << 30
    """``WAVE_LOG_CAP``: a task whose log grows past this many bytes is stopped (0: never)."""
    retention: float = 7 * 86400
    """``WAVE_RETENTION``: finished tasks older than this are pruned (rows and files)."""
    idle_exit: float = 1800
    """``WAVE_IDLE_EXIT``: exit after this long with no task running and no client (0: never)."""
    attach_grace: float = 10
    """``WAVE_ATTACH_GRACE``: after a restart, how long a foreground task waits for its
    caller to attach again before it becomes background (``caller_lost``)."""

    request_timeout: float = 10
    """``WAVE_REQUEST_TIMEOUT``: a connection whose request line is not complete by then
    is dropped (a stalled or hostile peer holds no descriptor for long)."""
    max_connections: int | None = None
    """``WAVE_MAX_CONNECTIONS``: connections served at once; more are answered ``busy``
    (default: a quarter of the descriptor limit, at most 1024)."""

    task_memory_limit: int | None = None
    """``WAVE_TASK_MEMORY_LIMIT`` (e.g. ``2G``): bytes one task may use, where a memory
    cgroup enforces it; a task that passes it is killed (end reason ``memory_limit``)."""

    bwrap: str = "bwrap"
    """``WAVE_BWRAP``: the bubblewrap that sandboxes commands (a path, or a name looked up
    in the system's directories, never ``PATH``: ``worker.sandbox.locate``)."""

    tracking: str = ""
    """``WAVE_TRACKING``: ``cgroup`` or ``process`` forces that tracking (TR1); empty: the
    best one usable here."""
    log_level: str = "INFO"
    """``WAVE_LOG_LEVEL``: how much ``supervisor.log`` says (``DEBUG`` … ``CRITICAL``)."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        """The settings the environment gives; a bad value is refused, naming its variable
        (``a duration must be …`` alone left the user guessing which, and
        ``WAVE_REQUEST_TIMEOUT=0`` made a supervisor that dropped every request, its own
        ``supervisor stop`` included: a trial)."""
        env = dict(os.environ if env is None else env)
        defaults = cls()
        return cls(
            log_cap=_setting(env, "WAVE_LOG_CAP", parse_size, defaults.log_cap),
            retention=_setting(env, "WAVE_RETENTION", parse_duration, defaults.retention),
            idle_exit=_setting(env, "WAVE_IDLE_EXIT", parse_duration, defaults.idle_exit),
            attach_grace=_setting(env, "WAVE_ATTACH_GRACE", parse_duration, defaults.attach_grace),
            request_timeout=_setting(env, "WAVE_REQUEST_TIMEOUT", _at_least(1, parse_duration), defaults.request_timeout),
            max_connections=_setting(env, "WAVE_MAX_CONNECTIONS", _at_least(1, _whole), None),
            task_memory_limit=_setting(env, "WAVE_TASK_MEMORY_LIMIT", _at_least(1, parse_size), None),
            bwrap=env.get("WAVE_BWRAP") or defaults.bwrap,
            tracking=_setting(env, "WAVE_TRACKING", _one_of("cgroup", "process"), ""),
            log_level=_setting(env, "WAVE_LOG_LEVEL", _one_of(*_LOG_LEVELS), defaults.log_level),
        )  # fmt: skip


_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "WARN", "FATAL", "NOTSET")
"""``logging``'s level names (its aliases too: `WARN` worked, a review)."""


def _setting(env: dict[str, str], name: str, parse: Callable[[str], T], default: T) -> T:
    """The value of the variable ``name`` (unset or empty: ``default``)."""
    if not env.get(name):
        return default
    try:
        return parse(env[name])
    except InvalidInputError as exc:
        raise InvalidInputError(f"{name}: {exc.message}") from None


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidInputError(f"a whole number is wanted, got {text!r}") from None


def _at_least(least: float, parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse``, refusing a value under ``least`` (`WAVE_REQUEST_TIMEOUT=0.0001` dropped
    every request as `0` did, a review)."""

    def checked(text: str) -> T:
        value = parse(text)
        if value < least:  # type: ignore[operator]
            raise InvalidInputError(f"it must be at least {least:g}, got {text!r}")
        return value

    return checked


def _one_of(*choices: str) -> Callable[[str], str]:
    def choice(text: str) -> str:
        if text.upper() in (c.upper() for c in choices):
            return next(c for c in choices if c.upper() == text.upper())
        raise InvalidInputError(f"it must be one of {', '.join(choices)}, got {text!r}")

    return choice
