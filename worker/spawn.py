"""Start one task: its log, its monitor, its process group and session (SPEC F1, E2)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .monitor import PAYLOAD_VAR, build_payload, monitor_argv
from .shell import Shell
from .windows import windows_to_posix_path

NON_INTERACTIVE_DEFAULTS = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
"""Set for every command unless the caller's environment already sets them (SPEC E2)."""

LOG_MODE = 0o600


def task_environment(caller_env: Mapping[str, str], task_id: str) -> dict[str, str]:
    """The command's environment: the caller's, ``WAVE_TASK_ID`` and non-interactive defaults."""
    env = {**NON_INTERACTIVE_DEFAULTS, **caller_env}
    env.pop(PAYLOAD_VAR, None)
    env["WAVE_TASK_ID"] = task_id
    return env


@dataclass(frozen=True)
class TaskFiles:
    """The files of one task inside ``tasks/``."""

    log: Path
    exit: Path
    cwd: Path
    meta: Path
    err_log: Path | None = None

    @classmethod
    def for_task(cls, tasks_dir: Path, task_id: str, separate_stderr: bool = False) -> TaskFiles:
        return cls(
            log=tasks_dir / f"{task_id}.log",
            exit=tasks_dir / f"{task_id}.exit",
            cwd=tasks_dir / f"{task_id}.cwd",
            meta=tasks_dir / f"{task_id}.json",
            err_log=tasks_dir / f"{task_id}.err.log" if separate_stderr else None,
        )


@dataclass(frozen=True)
class SpawnRequest:
    """Everything needed to start one task."""

    task_id: str
    command: str
    cwd: str
    env: Mapping[str, str]
    shell: Shell
    monitor_bash: str | None
    files: TaskFiles
    umask: int | None = None
    """The caller's umask for the command (``None``: the supervisor's)."""


def _new_process_group() -> dict[str, Any]:
    if sys.platform == "win32":
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    return {"start_new_session": True}


def _open_log(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, LOG_MODE)


_popen_monitors: dict[int, subprocess.Popen[bytes]] = {}
"""Monitors started without posix_spawn, kept so that they can be reaped (Windows)."""


def reap_monitor(pid: int, block: bool = False) -> None:
    """Collect a monitor this process started (without blocking unless ``block``)."""
    proc = _popen_monitors.get(pid)
    if proc is not None:
        if (proc.wait() if block else proc.poll()) is not None:
            del _popen_monitors[pid]
        return
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0 if block else os.WNOHANG)


def spawn_task(req: SpawnRequest, *, use_posix_spawn: bool = hasattr(os, "posix_spawn")) -> int:
    """Create the task's log and start its monitor; returns the monitor's pid.

    The log exists (empty) before the command starts, so ``outputPath`` is readable at once.
    ``posix_spawn`` (vfork-like) instead of a fork of the whole supervisor: cheaper, and
    nothing else leaks since every descriptor the supervisor opens is close-on-exec.

    Where ``posix_spawn`` does not exist (Windows) the monitor is started with
    ``subprocess`` in a new process group instead; ``use_posix_spawn`` lets tests take
    that path on any OS.

    Raises:
        OSError: the shell cannot be executed, out of resources.
    """
    env = task_environment(req.env, req.task_id)
    windows = sys.platform == "win32"
    cwd = windows_to_posix_path(req.cwd) if windows else req.cwd  # read by Git Bash's cd
    argv = monitor_argv(req.monitor_bash, req.shell.path, req.shell.kind, str(req.files.exit), cwd)
    env[PAYLOAD_VAR] = build_payload(req.command, str(req.files.cwd), req.umask, windows)
    log_fd = _open_log(req.files.log)
    err_fd = _open_log(req.files.err_log) if req.files.err_log else log_fd
    try:
        if not use_posix_spawn:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=err_fd, env=env,
                close_fds=True, **_new_process_group(),
            )  # fmt: skip
            _popen_monitors[proc.pid] = proc
            return proc.pid
        return os.posix_spawn(
            argv[0],
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, err_fd, 2),
            ],
            setsid=True,
            # Python ignores these; a command must get the defaults (`yes | head` ends by
            # SIGPIPE, a file-size limit kills by SIGXFSZ), as subprocess restores them.
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    finally:
        os.close(log_fd)
        if err_fd != log_fd:
            os.close(err_fd)
