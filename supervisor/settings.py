"""Supervisor limits, from its options or (for an auto-started supervisor) the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from wave_bash.api.errors import InvalidInputError
from wave_bash.api.units import parse_duration, parse_size


@dataclass(frozen=True)
class Settings:
    """Supervisor limits; each has an environment variable so an auto-started supervisor
    (which inherits the client's environment) can be configured too."""

    log_cap: int = 1 << 30
    """``WAVE_LOG_CAP``: a task whose log grows past this many bytes is stopped."""
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
    """``WAVE_BWRAP``: the bubblewrap that sandboxes commands (a path, or a name on PATH)."""

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        defaults = cls()
        return cls(
            log_cap=parse_size(env["WAVE_LOG_CAP"]) if env.get("WAVE_LOG_CAP") else defaults.log_cap,
            retention=parse_duration(env["WAVE_RETENTION"]) if env.get("WAVE_RETENTION") else defaults.retention,
            idle_exit=parse_duration(env["WAVE_IDLE_EXIT"]) if env.get("WAVE_IDLE_EXIT") else defaults.idle_exit,
            attach_grace=parse_duration(env["WAVE_ATTACH_GRACE"]) if env.get("WAVE_ATTACH_GRACE") else defaults.attach_grace,
            request_timeout=parse_duration(env["WAVE_REQUEST_TIMEOUT"]) if env.get("WAVE_REQUEST_TIMEOUT") else defaults.request_timeout,
            max_connections=_positive_int(env, "WAVE_MAX_CONNECTIONS"),
            task_memory_limit=parse_size(env["WAVE_TASK_MEMORY_LIMIT"]) if env.get("WAVE_TASK_MEMORY_LIMIT") else None,
            bwrap=env.get("WAVE_BWRAP") or defaults.bwrap,
        )  # fmt: skip


def _positive_int(env: dict[str, str], name: str) -> int | None:
    if not env.get(name):
        return None
    try:
        value = int(env[name])
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidInputError(f"{name} must be a positive whole number, not {env[name]!r}")
    return value
