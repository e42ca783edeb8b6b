"""Reaching the local supervisor, and starting it when none runs (exactly one per state dir).

The client starts the daemon as a process (``python -P -m wave_bash.supervisor --state-dir DIR
--detach``); ``api`` never imports ``supervisor``. Many starters may race (threads,
processes, a burst of CLI calls on a fresh machine): they take the state dir's start
lock in turn, so the first starts the one daemon and the others find it serving. (The
daemon's own lock still lets only one serve, should a starter bypass this.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import sys
import time

from .constants import START_CUT_EXIT
from .errors import (
    OutOfDescriptorsError,
    StateDirError,
    SupervisorRefusedError,
    SupervisorUnavailableError,
)
from .paths import StateLayout, check_socket_dir, ensure_private_dir
from .transport import TRANSPORT_ENV, connect

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms
    from typing import Any

START_TIMEOUT = 15.0
"""Longest wait for a supervisor to come up."""
LOCK_SLICE = 0.1
"""How long each attempt at the start lock waits before looking for a serving supervisor."""


def connect_or_start(layout: StateLayout, transport: str, autostart: bool) -> socket.socket:
    """A connection to the state dir's supervisor, started first if needed and allowed.

    Raises:
        SupervisorUnavailableError: none runs (and ``autostart`` is off), or it did not start.
        StateDirError: the state dir cannot be created or used.
    """
    try:
        return connect(layout, transport)
    except OSError as exc:  # missing, stale, or a state dir that is not usable (checked below)
        _check_descriptors(exc)
        if not autostart:
            raise SupervisorUnavailableError(
                f"no supervisor is running for {layout.root}"
            ) from None
    try:
        sock = _start_unless_started(layout, transport)
    except OSError as exc:  # (no descriptor for a module, a pipe, a probe: a helper's
        _check_descriptors(exc)  # trial got a raw OSError 24 and a StateDirError)
        raise
    if sock is not None:
        return sock
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            return connect(layout, transport)
        except OSError as exc:  # (not bound yet; a TCP handshake cut short: a new endpoint soon)
            _check_descriptors(exc)
            if time.monotonic() > deadline:
                raise SupervisorUnavailableError(
                    f"the supervisor for {layout.root} did not start (see {layout.log})"
                ) from None
            time.sleep(0.01)  # another starter holds the lock and is binding


def _start_unless_started(layout: StateLayout, transport: str) -> socket.socket | None:
    """Start the supervisor under the state dir's start lock, unless one comes up while
    waiting for the lock (then a connection to it). The lock is taken in short slices,
    so a starter that stalls holding it (a process stopped with Ctrl+Z) delays nobody
    once the supervisor serves.

    Raises:
        StateDirError: the lock file cannot be used (a link, a directory).
        SupervisorUnavailableError: the lock stayed taken, and none serves, too long.
    """
    from filelock import FileLock, Timeout  # only to start a supervisor

    ensure_private_dir(layout.root)
    path = layout.root / "start.lock"
    lock = FileLock(str(path), timeout=LOCK_SLICE, mode=0o600)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            lock.acquire()
            break
        except Timeout:
            try:
                return connect(layout, transport)  # the starter before us started it
            except OSError as exc:
                _check_descriptors(exc)
            if time.monotonic() > deadline:
                raise SupervisorUnavailableError(
                    f"another client has been starting the supervisor for {layout.root} for "
                    f"{START_TIMEOUT:g}s (see {layout.log})"
                ) from None
        except OSError as exc:
            _check_descriptors(exc)
            raise StateDirError(f"cannot use the start lock {path}: {exc}") from None
    try:
        with contextlib.suppress(OSError):
            return connect(layout, transport)  # started while we waited for the lock
        start_supervisor(layout, transport)
        return None
    finally:
        lock.release()


def _check_descriptors(exc: OSError) -> None:
    """This process has no descriptor left to connect with (threads in a burst under a
    low ``ulimit -n``): busy, so the call is tried again as others close theirs (a raw
    ``OSError`` 24 or a start lock "that cannot be used": reviews).

    Raises:
        OutOfDescriptorsError: ``exc`` is ``EMFILE`` or ``ENFILE``.
    """
    if exc.errno not in (errno.EMFILE, errno.ENFILE):
        return
    whose = "this process has" if exc.errno == errno.EMFILE else "the system has"
    raise OutOfDescriptorsError(
        f"{whose} no file descriptor left to reach the supervisor with ("
        f"{os.strerror(exc.errno)}): close some, or raise the limit (`ulimit -n`)"
    ) from None


TASK_TAG = "WAVE_TASK_ID"
"""The variable that tags a task's processes (``worker.kill.TAG``): never a supervisor's."""


def start_supervisor(
    layout: StateLayout, transport: str, *, can_fork: bool = hasattr(os, "fork")
) -> None:
    """Start a supervisor and wait until it serves (or another one won the race).

    Where there is no ``fork`` (Windows) the daemon is started detached and this returns at
    once; the caller's connect loop then waits for it. ``can_fork`` lets tests take that
    path on any OS.
    """
    import subprocess

    ensure_private_dir(layout.root)
    check_socket_dir(layout, make=True)  # the fallback dir, if used: said here, clearly
    argv = [sys.executable, "-P", "-m", "wave_bash.supervisor", "--state-dir", str(layout.root)]
    env = {**os.environ, TRANSPORT_ENV: transport}
    env.pop(TASK_TAG, None)  # (started by a client in a task, it carried that task's tag:
    # the task's stop took what it started, by the process table; a review)
    if not can_fork:
        subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            cwd=os.path.abspath(os.sep), env=env, **_detached(),
        )  # fmt: skip
        return
    argv.append("--detach")
    try:
        proc = subprocess.run(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            cwd="/", timeout=START_TIMEOUT, check=False, env=env,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise SupervisorUnavailableError(
            f"the supervisor for {layout.root} did not start within {START_TIMEOUT:g}s"
        ) from None
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        last = detail[-1] if detail else f"exit {proc.returncode}"
        # Killed while starting (a signal, its starter's or its own) may pass; an error of
        # its own will not.
        passing = proc.returncode < 0 or proc.returncode == START_CUT_EXIT
        cls = SupervisorUnavailableError if passing else SupervisorRefusedError
        raise cls(f"the supervisor could not start: {last}")


def _detached() -> dict[str, Any]:
    import subprocess

    if sys.platform == "win32":
        flags = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0
        )
        return {"creationflags": flags}
    return {"start_new_session": True}
