"""Start one task: its log, its monitor, its process group and session (SPEC F1, E2)."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shlex
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import BadEnvironmentError
from .files import SHORT_OF_DESCRIPTORS, NotRegularFileError, TaskFiles, open_regular
from .monitor import STOPPING_SIGNAL, monitor_argv, monitor_instructions
from .shell import Shell, reported_version
from .spawner import LOW_FDS, MAX_FDS, Spawner, SpawnerError, exec_failure, usable

if sys.platform != "win32":
    import resource


def _no_editor() -> str:
    """An editor that fails at once with one line saying why: ``git commit`` without
    ``-m`` must not open vim on a log file and wait. The program beside this module, a
    path (a ``sh -c '…'`` line garbled ``$EDITOR f`` and ``"$EDITOR" f``: a trial); that
    line where an install left it not executable, or in a path a shell would split (the
    quotes it would need break ``"$EDITOR" f``, a review)."""
    program = str(Path(__file__).with_name("wave-bash-no-editor"))
    if os.access(program, os.X_OK) and shlex.quote(program) == program:
        return program
    return (
        "sh -c 'echo \"wave-bash: no editor can open here (no terminal): give the text on"
        " the command line instead, e.g. git commit -m MESSAGE\" >&2; exit 1' wave-bash-no-editor"
    )


NO_EDITOR = _no_editor()

NON_INTERACTIVE_DEFAULTS = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "EDITOR": NO_EDITOR,
    "VISUAL": NO_EDITOR,
    "GIT_EDITOR": NO_EDITOR,
    "GIT_SEQUENCE_EDITOR": NO_EDITOR,
}
"""Set for every command unless the caller's environment already sets them (SPEC E2)."""

LOG_MODE = 0o600
RECORDED_FD = 5
"""The monitor's descriptor for the write end of its record pipe (see
:attr:`Monitor.record_pipe`), closed in its job."""
EXIT_RECORD_FD = 7
"""The monitor's descriptor on its exit record, open from before it starts, closed in its
job: a monitor whose pipe closes with no instructions writes :data:`NEVER_STARTED` through
it (never creating the file again: a standby let go has its files removed meanwhile)."""
NEVER_STARTED = b"-"
"""An exit record's first line when its monitor got no command (the supervisor stopped
before handing it over): nothing ran."""
STARTED_FDS = (8, 9)
"""A monitor whose job joins cgroups: the write and read ends of a pipe on which its job
says it has read its instructions (see ``worker.monitor.BASH_JOINED_MONITOR_SCRIPT``)."""
PIPE_MIN_CAPACITY = 4096
"""Bytes an empty pipe takes without blocking anywhere (one page; POSIX PIPE_BUF on Linux)."""


def task_environment(caller_env: Mapping[str, str], task_id: str) -> dict[str, str]:
    """The command's environment: the caller's, ``WAVE_TASK_ID`` and non-interactive defaults."""
    env = {**NON_INTERACTIVE_DEFAULTS, **caller_env}
    env["WAVE_TASK_ID"] = task_id
    return env


def _new_process_group() -> dict[str, Any]:
    if sys.platform == "win32":
        return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    return {"start_new_session": True}


EXIT_PLACEHOLDER = b" " * 7 + b"\n"
"""The exit record's content until the monitor writes over it: room for any status, so
the record needs no new disk block when the command ends (a full disk loses no status
even if the supervisor dies too). Read back, it holds no number: no status yet."""
STOP_MARK_AT = 6
"""Where in the placeholder a stop leaves its mark (:func:`mark_stopping`), past the
longest status a monitor writes over its start (``255\n``)."""


@dataclass(frozen=True)
class ExitRecord:
    """What a task's exit record holds, in this order: the status its monitor wrote over
    the placeholder; the task's record, one JSON line the supervisor writes as its
    command starts (from which a lost journal is rebuilt); the directory a foreground
    command ended in (its EXIT trap appends ``pwd -P``). One file, created ahead with the
    monitor: nothing is created on a command's path."""

    status: int | None
    """None: no status (the monitor was killed, or has not written it yet)."""
    cwd: str | None
    """What ``pwd -P`` printed, without its newline (None: nothing captured)."""
    record: bytes | None = None
    """The task's record (None: a standby's, or a task's from before records moved here)."""
    never_started: bool = False
    """Its monitor got no command and said so (:data:`NEVER_STARTED`): nothing ran."""
    stop_mark: bytes | None = None
    """The mark a stop left before its first signal (:func:`mark_stopping`), if any."""
    unread: bool = False
    """It could not be read for want of a descriptor: it holds nothing yet, not nothing."""


EXIT_RECORD_LIMIT = 64 << 20
"""Bytes of an exit record read at most: its task's record holds the command (a request
is 8 MiB at most, as JSON up to six times that). Past it only the status is read."""


def read_exit_record(path: Path) -> ExitRecord:
    """The task's exit record; an unreadable one holds nothing."""
    try:
        with open_regular(path, buffering=0) as fh:
            size = os.fstat(fh.fileno()).st_size  # (read(LIMIT) would allocate LIMIT)
            data = fh.read(len(EXIT_PLACEHOLDER) if size > EXIT_RECORD_LIMIT else size + 1)
    except OSError as exc:
        return ExitRecord(None, None, unread=exc.errno in SHORT_OF_DESCRIPTORS)
    head, tail = data[: len(EXIT_PLACEHOLDER)], data[len(EXIT_PLACEHOLDER) :]
    first = head.split(b"\n", 1)[0]  # (a status is written whole with its newline, in one
    # write over the blank placeholder: digits before a blank are one read as it is written)
    status = int(first) if first.isdigit() else None
    first = first.strip()
    record = None
    if tail.startswith(b"{"):  # (a directory `pwd -P` prints starts with "/")
        record, _, tail = tail.partition(b"\n")
    cwd = os.fsdecode(tail).removesuffix("\n") if tail else None
    mark = head[STOP_MARK_AT : STOP_MARK_AT + 1]
    return ExitRecord(
        status, cwd, record, never_started=first == NEVER_STARTED,
        stop_mark=mark if mark.isalpha() else None,
    )  # fmt: skip


def mark_stopping(path: Path, mark: bytes) -> None:
    """Leave a one-letter mark in the exit record's placeholder: a stop's reason, written
    before its first signal where the monitor's status never reaches, into space the
    file has (a full disk that holds the journal's record of the stop takes it: a
    supervisor killed then left a stopped task "killed by signal 15"). Not written (no
    such file, a full disk all the same) is no error: the journal has it first."""
    with contextlib.suppress(OSError):
        fd = os.open(
            path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        )
        try:
            found = os.fstat(fd)
            if stat.S_ISREG(found.st_mode) and found.st_size >= len(EXIT_PLACEHOLDER):
                os.pwrite(fd, mark[:1], STOP_MARK_AT)
        finally:
            os.close(fd)


def write_task_record(path: Path, record: bytes) -> None:
    """Write the task's record (one JSON line) into its exit record, after the
    placeholder: before its command starts, so before anything is appended.

    Raises:
        OSError: the disk refuses it (the command must not start).
    """
    line = record + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    try:  # (a FIFO put in a standby's place would hold the supervisor: refused)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", str(path))
        os.lseek(fd, len(EXIT_PLACEHOLDER), os.SEEK_SET)
        if os.write(fd, line) != len(line):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    finally:
        os.close(fd)


_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
"""Opening a task's own file: created or emptied, never through a link."""


def _above(fd: int, ceiling: int) -> int:
    """``fd`` moved above ``ceiling``, the highest number a monitor's descriptors get (its
    pipes, a sandbox's sources): they are put in place one after another, and one that
    already has a later one's number would be overwritten before it is moved."""
    if fd > ceiling:
        return fd
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, ceiling + 1)
    os.close(fd)
    return moved


def _reserve_exit_record(path: Path) -> None:
    fd = os.open(path, _CREATE, LOG_MODE)
    try:
        if os.write(fd, EXIT_PLACEHOLDER) != len(EXIT_PLACEHOLDER):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    finally:
        os.close(fd)


def _open_log(path: Path) -> int:
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, LOG_MODE)


SPAWNER = Spawner() if usable() else None
"""Starts monitors that are child subreapers, instead of a fork of this process (see
``worker.spawner``)."""


def prepare_spawner() -> None:
    """Start the spawner ahead, where monitors will be child subreapers: the first command
    then finds it ready."""
    if SPAWNER is not None:
        SPAWNER.prepare()


_popen_monitors: dict[int, subprocess.Popen[bytes]] = {}
"""Monitors started without posix_spawn, kept so that they can be reaped (Windows)."""


@dataclass(frozen=True)
class MonitorExit:
    """How a monitor this process started has ended."""

    code: int | None
    """Its exit status, which is its command's (a monitor exits with it): the supervisor
    keeps it when the exit record could not be written (a full disk). ``None`` when it
    was killed by a signal or is no child of this process."""


def reap_monitor(pid: int, block: bool = False) -> MonitorExit | None:
    """Collect a monitor this process started (without blocking unless ``block``).

    Returns ``None`` while it runs; a monitor that is no child of this process counts as
    ended, with no status.
    """
    proc = _popen_monitors.get(pid)
    if proc is not None:
        code = proc.wait() if block else proc.poll()
        if code is None:
            return None
        del _popen_monitors[pid]
        return MonitorExit(code if code >= 0 else None)
    try:
        reaped, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return MonitorExit(None)
    if reaped == 0:
        return None
    return MonitorExit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else None)


def tell_stopping(pid: int, resume: bool = True) -> None:
    """Tell a monitor this process started, and has not reaped, that its task is being
    stopped (or interrupted), before its job is signalled: a job killed before it took
    its command then has it run by no other (see ``worker.monitor.STOPPING_SIGNAL``; any
    other monitor ignores it). With ``resume``, SIGCONT too: a command's `kill -STOP $$`
    stops its monitor (F1b), which must live on to record the end of a stop."""
    number = getattr(signal, f"SIG{STOPPING_SIGNAL}", None)
    if number is not None:
        with contextlib.suppress(OSError):  # (exited: an unreaped child, never another's pid)
            os.kill(pid, number)
            if resume:
                os.kill(pid, signal.SIGCONT)


def monitor_running(pid: int) -> bool:
    """Whether a monitor this process started still runs (stopped counts): not exited,
    not reaped, so its pid is still its own."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False


def wait_monitor_exited(pid: int) -> None:
    """Block until a monitor this process started has exited, leaving it to be reaped
    (with its status) by :func:`reap_monitor`."""
    proc = _popen_monitors.get(pid)
    if proc is not None:
        proc.wait()  # Popen keeps the status for reap_monitor
        return
    with contextlib.suppress(ChildProcessError):
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)


@dataclass
class Monitor:
    """A started monitor, waiting on its stdin (a pipe) for the command it is to run."""

    pid: int
    task_id: str
    files: TaskFiles
    pipe: int
    """The write end of the monitor's stdin (close-on-exec: no other process holds it)."""
    joined: tuple[str, ...] = ()
    """The cgroups (``cgroup.procs`` files) its job joined on its own, ahead of its command."""
    primed: int = 0
    """Bytes written to its pipe already (its first line), maybe still unread."""
    record_pipe: int = -1
    """The read end of a pipe whose only writer is the monitor (its fd 5): it reads end of
    file as soon as the monitor has written its exit record, or is gone. A status is
    seen there a process exit sooner than by waiting for the monitor's (0.2-0.6 ms here).
    -1 on Windows."""
    exec_report: int = -1
    """Where a monitor started ahead by the spawner tells whether it exec'd bash (see
    :meth:`exec_failure`); -1 once known, or for any other."""

    def exec_failure(self) -> OSError | None:
        """Why the monitor could not exec bash, for one started ahead (``None``: it did);
        asked once, when it is about to be used (by then it has long exec'd)."""
        if self.exec_report < 0:
            return None
        report, self.exec_report = self.exec_report, -1
        return exec_failure(report)

    def instructions(
        self,
        command: str,
        cwd: str,
        umask: int | None = None,
        open_files: int | None = None,
        cgroups: Sequence[str] = (),
        *,
        capture_cwd: bool = True,
        bash_env: str | None = None,
        xtrace_fd: str | None = None,
        verbose: bool = False,
    ) -> bytes:
        """What :meth:`send` hands this monitor to run ``command`` in ``cwd`` (with that
        umask and soft descriptor limit, if given, in those cgroups; its final directory
        appended to its exit record with ``capture_cwd``; the caller's ``BASH_ENV``, which
        the job sources, see :func:`worker.monitor.monitor_instructions`).

        Raises:
            ValueError: text that cannot be encoded (a lone surrogate).
        """
        windows = sys.platform == "win32"
        return monitor_instructions(
            command, cwd, str(self.files.exit) if capture_cwd else None, umask, windows,
            open_files=open_files, cgroups=cgroups, bash_env=bash_env, xtrace_fd=xtrace_fd,
            verbose=verbose,
        )  # fmt: skip

    def send(self, instructions: bytes) -> None:
        """Hand the monitor its instructions; the command starts once the pipe is closed.

        Raises:
            BrokenPipeError: the monitor is gone (nothing ran). (A joined monitor's job
                reads them too: with the monitor gone it runs nothing, and the task
                ends lost.)
        """
        _write_and_close(self.pipe, instructions, PIPE_MIN_CAPACITY - self.primed)

    def run(self, command: str, cwd: str, umask: int | None = None) -> None:
        """:meth:`send` the :meth:`instructions` for ``command``."""
        self.send(self.instructions(command, cwd, umask))

    def cancel(self) -> None:
        """Close the pipe without instructions: the monitor exits at once, records nothing,
        and the files of its never-run task are removed. The caller still reaps it."""
        for fd in (self.pipe, self.record_pipe, self.exec_report):
            with contextlib.suppress(OSError):
                if fd >= 0:
                    os.close(fd)
        self.exec_report = -1
        self.files.remove_unused()


def _write_and_close(fd: int, data: bytes, room: int = PIPE_MIN_CAPACITY) -> None:
    """Write ``data`` to a pipe and close it, without making the caller wait for a reader.

    The first ``room`` bytes fit (a page of an empty pipe), so that write returns at once,
    or fails when the reader is gone. A longer rest (commands beyond a page) is finished
    by a thread while the monitor reads; if the monitor dies meanwhile it records nothing
    and its exit watcher reports the task as lost.
    """
    head, rest = data[:room], data[room:]
    try:
        os.write(fd, head)
    except BaseException:
        os.close(fd)
        raise
    if not rest:
        os.close(fd)
        return

    def finish() -> None:
        view = memoryview(rest)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            pass
        finally:
            os.close(fd)

    threading.Thread(target=finish, name="monitor-instructions", daemon=True).start()


MONITOR_PROCESS_LIMIT = 256
"""The soft process limit a bash monitor may start under (its first line restores the real one)."""


def _may_lower(bash: str, env: Mapping[str, str]) -> bool:
    """Whether a monitor may start under the low process limit: bash 4.4 or newer (which
    sizes the table by it, and takes ``CHILD_MAX`` back), and nothing of the caller's
    running before the monitor's first line could restore it: no ``BASH_ENV`` (sourced
    first), no xtrace (a ``PS4`` may fork at each line), no ``CHILD_MAX`` of its own.
    (Its monitor runs already: a version not known now only loses the gain.)"""
    if env.get("BASH_ENV") or "CHILD_MAX" in env:
        return False
    if "xtrace" in env.get("SHELLOPTS", "").split(":"):
        return False
    try:
        return reported_version(bash, "bash") >= (4, 4)
    except OSError:
        return False


ARG_STRING_MAX = 32 * 4096
"""The most bytes Linux starts a program with in one variable (``MAX_ARG_STRLEN``)."""


def _too_big(env: Mapping[str, str]) -> str:
    """Why no program could be started with ``env`` (``E2BIG``), naming its largest
    variable: "Argument list too long: '/bin/bash'" named neither (a trial)."""
    sizes = {
        name: len(os.fsencode(name)) + len(os.fsencode(value)) + 1 for name, value in env.items()
    }
    largest = max(sizes, key=sizes.__getitem__, default="")
    if sizes.get(largest, 0) >= ARG_STRING_MAX:
        return (
            f"the variable {largest} is {sizes[largest]} bytes, and the system starts no program "
            f"with one of over {ARG_STRING_MAX} (128 KiB): unset it, or pass it in a file"
        )
    return (
        f"the environment is {sum(sizes.values())} bytes, more than the system starts a "
        f"program with (its largest variable: {largest}): unset what the command does not need"
    )


def _prime(pid: int, pipe: int, bash: str, env: Mapping[str, str]) -> int:
    """Maybe lower a just-started bash monitor's soft process limit, then write its first
    line: the real limit, which it restores before it forks anything (empty: nothing to
    restore); returns the bytes written.

    bash sizes its table of finished background jobs by the soft process limit it reads at
    start-up (from 4.4 on: 32768 entries, 512 KiB, for any usual limit) and fills it when
    its first background job ends: the monitor's job. That is 128 page faults and ~0.3 ms
    in every task's end, on the path from a command's exit to its recorded status, and
    most of the cost of stopping many tasks at once. Under 256 the table is 8 KiB. The
    lowering races bash's start-up (``posix_spawn`` returns once the child has exec'd;
    bash reads the limit after the dynamic loader), and losing the race only loses the
    gain: the restore comes after the line, which comes after the lowering, so the
    monitor and its command always get the real limit (a monitor under the low one could
    not fork for a user with more processes).
    """
    line = b"\n"
    if sys.platform != "win32" and hasattr(resource, "prlimit") and _may_lower(bash, env):
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        if soft == resource.RLIM_INFINITY or soft > MONITOR_PROCESS_LIMIT:
            try:
                resource.prlimit(pid, resource.RLIMIT_NPROC, (MONITOR_PROCESS_LIMIT, hard))
                line = b"unlimited\n" if soft == resource.RLIM_INFINITY else b"%d\n" % soft
            except OSError:  # gone already, or not ours to change: nothing to restore
                pass
    try:
        return os.write(pipe, line)
    except OSError:  # the monitor is gone: sending its command will say so
        return 0


PR_SET_CHILD_SUBREAPER = 36


@functools.cache
def _prctl() -> Callable[..., int]:
    """libc's ``prctl``, resolved once, before any fork: the child only calls it."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def _prepare_child(moves: Sequence[tuple[int, int]], subreaper: bool) -> Callable[[], None]:
    """What a forked monitor runs before ``exec``: it gets its pipes at their numbers
    (``moves``: descriptor, number); with ``subreaper`` it becomes a child subreaper (the
    bit survives ``exec``), so what its command leaves behind when a middle process exits
    (``(setsid env -i daemon &)``) is reparented to the monitor, not to init, and stays
    in its process tree."""
    prctl = _prctl() if subreaper else None

    def prepare() -> None:
        if prctl is not None:
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        for fd, number in moves:
            os.dup2(fd, number)  # inheritable, unlike the original

    return prepare


def _launch(
    argv: list[str],
    child_env: dict[str, str],
    stdio: tuple[int, int, int],
    moves: Sequence[tuple[int, int]],
    forked: bool,
    use_posix_spawn: bool,
    ahead: bool = False,
) -> tuple[int, int]:
    """Start the monitor process (see :func:`start_monitor`); returns its pid and, for one
    started ``ahead`` by the spawner, the pipe that tells its exec (else -1)."""
    read_fd, log_fd, err_fd = stdio
    # The spawner takes MAX_FDS descriptors a request (stdio, its two pipes and the
    # moves), put at numbers below its own LOW_FDS: a sandbox's many sources do not fit.
    spawnable = 3 + 2 + len(moves) <= MAX_FDS and all(n < LOW_FDS for _, n in moves)
    if forked and SPAWNER is not None and spawnable:
        fds = [(read_fd, 0), (log_fd, 1), (err_fd, 2), *moves]
        with contextlib.suppress(SpawnerError):  # (then a fork of this process, as below)
            if ahead:
                return SPAWNER.spawn_ahead(argv, child_env, fds)
            return SPAWNER.spawn(argv, child_env, fds), -1
    if use_posix_spawn and not forked:
        pid = os.posix_spawn(
            argv[0],
            argv,
            child_env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, read_fd, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, err_fd, 2),
                *((os.POSIX_SPAWN_DUP2, fd, number) for fd, number in moves),
            ],
            setsid=True,
            # Python ignores these; a command must get the defaults (`yes | head` ends
            # by SIGPIPE, a file-size limit kills by SIGXFSZ), as subprocess restores.
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
        return pid, -1
    if forked or moves:  # posix_spawn runs nothing before exec
        # (Nothing else inherited without close_fds: our descriptors are close-on-exec;
        # with it, the pipes would be closed after the preexec function moved them.)
        proc = subprocess.Popen(
            argv, stdin=read_fd, stdout=log_fd, stderr=err_fd, env=child_env,
            close_fds=False, start_new_session=True,
            preexec_fn=_prepare_child(moves, subreaper=forked),
        )  # fmt: skip
    else:
        proc = subprocess.Popen(
            argv, stdin=read_fd, stdout=log_fd, stderr=err_fd, env=child_env,
            close_fds=True, **_new_process_group(),
        )  # fmt: skip
    _popen_monitors[proc.pid] = proc
    return proc.pid, -1


def start_monitor(
    task_id: str,
    env: Mapping[str, str],
    shell: Shell,
    monitor_bash: str | None,
    files: TaskFiles,
    *,
    joins: Sequence[str] = (),
    subreaper: bool = False,
    use_posix_spawn: bool = hasattr(os, "posix_spawn"),
    ahead: bool = False,
    inherited: Sequence[tuple[int, int]] = (),
) -> Monitor:
    """Create the task's files and start its monitor, which then waits for :meth:`Monitor.run`.

    The log exists (empty) before the command starts, so ``outputPath`` is readable at once.
    The exit record holds the task's record too, written as the command starts: creating
    a file costs a supervisor here 0.07-0.35 ms (writing an existing one a tenth of it),
    and a standby creates its two files off the command's path.
    ``posix_spawn`` (vfork-like) instead of a fork of the whole supervisor: cheaper, and
    nothing else leaks since every descriptor the supervisor opens is close-on-exec.

    Where ``posix_spawn`` does not exist (Windows) the monitor is started with
    ``subprocess`` in a new process group instead; ``use_posix_spawn`` lets tests take
    that path on any OS. ``inherited``: descriptors of ours the monitor and its job get
    (ours, the number there: a sandbox's sources, ``worker.sandbox.Sources``). With ``subreaper`` (Linux, where no cgroup tracks the task) a
    bash monitor becomes a child subreaper before ``exec`` (bash reaps the orphans it
    adopts; the Python monitor would leave them zombies, so it is not one): started by
    the small spawner (``worker.spawner``), or else forked from this process. ``ahead``
    (a standby): the spawner's child is not waited for until it has exec'd bash; whether
    it could is asked when it is taken (:meth:`Monitor.exec_failure`).

    Raises:
        OSError: the shell cannot be executed, out of resources.
        BadEnvironmentError: ``env`` cannot be given to a process.
    """
    argv = monitor_argv(
        monitor_bash, shell.path, shell.kind, str(files.exit), joins,
        str(files.left) if subreaper else None,
    )  # fmt: skip
    child_env = task_environment(env, task_id)
    forked = subreaper and monitor_bash is not None
    log_fd = err_fd = read_fd = write_fd = record_read = -1
    moves: list[tuple[int, int]] = []
    """The monitor's descriptors beyond its stdio (pipes, its exit record): (ours, its
    number there)."""
    try:
        # The log first: a supervisor killed from here on leaves an empty log, by which
        # the next one finds and removes all of these (``supervisor.standby``).
        log_fd = _open_log(files.log)
        err_fd = _open_log(files.err_log) if files.err_log else log_fd
        _reserve_exit_record(files.exit)  # the task's record is written in it as it starts
        read_fd, write_fd = os.pipe()  # close-on-exec; the child gets read_fd as stdin
        if sys.platform != "win32":
            record_read, record_write = os.pipe()
            moves.append((record_write, RECORDED_FD))
            exit_flags = os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
            moves.append((os.open(files.exit, exit_flags), EXIT_RECORD_FD))
        if joins and monitor_bash is not None:
            started_read, started_write = os.pipe()
            moves += [(started_write, STARTED_FDS[0]), (started_read, STARTED_FDS[1])]
        for fd, number in inherited:  # (one at a time: on a failure each is listed)
            moves.append((os.dup(fd), number))
        ceiling = max((number for _, number in moves), default=0)
        for i, (fd, number) in enumerate(moves):  # (on a failure each is still listed)
            moves[i] = (_above(fd, ceiling), number)
    except BaseException:
        for fd in {log_fd, err_fd, read_fd, write_fd, record_read, *(m[0] for m in moves)} - {-1}:
            os.close(fd)
        files.remove_unused()
        raise
    try:
        stdio = (read_fd, log_fd, err_fd)
        pid, exec_report = _launch(argv, child_env, stdio, moves, forked, use_posix_spawn, ahead)
    except BaseException as exc:
        os.close(write_fd)
        if record_read >= 0:
            os.close(record_read)
        files.remove_unused()  # the logs just created: nothing will ever write them
        if isinstance(exc, ValueError):  # a name with "=" or NUL, a lone surrogate
            raise BadEnvironmentError(str(exc)) from None
        if isinstance(exc, OSError) and exc.errno == errno.E2BIG:
            raise BadEnvironmentError(_too_big(child_env)) from None
        raise
    finally:
        os.close(read_fd)
        for fd, _ in moves:
            os.close(fd)
        os.close(log_fd)
        if err_fd != log_fd:
            os.close(err_fd)
    primed = _prime(pid, write_fd, monitor_bash, child_env) if monitor_bash else 0
    joined = tuple(joins) if monitor_bash else ()
    return Monitor(pid, task_id, files, write_fd, joined, primed, record_read, exec_report)
