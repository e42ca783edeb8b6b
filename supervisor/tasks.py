"""Task lifecycle in the supervisor: spawn, exit detection, ownership, stop (SPEC F3, B, D7).

Moving a task to the background changes one journal row and nothing about the process.
An end is seen as the monitor closes its record pipe once the status is written, or
through a pidfd on the monitor (no thread per child); the status comes from the
monitor's exit file, never from the supervisor's memory. A task someone waits for ends
sooner, as its job exits, where the kernel tells the job's status (``worker.jobexit``):
the monitor records the same one, durably, a moment later.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import signal
import stat
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import psutil

from wave_bash.api import guard, texts
from wave_bash.api.constants import STOP_GRACE_SECONDS, TERMINAL_SIZE
from wave_bash.api.errors import InvalidInputError, SandboxUnavailableError
from wave_bash.api.paths import ensure_private_dir, move_aside
from wave_bash.api.permissions import Decision
from wave_bash.api.protocol import RunParams, SandboxSpec
from wave_bash.api.states import BackgroundReason, EndReason, Owner, TaskStatus
from wave_bash.api.units import parse_duration
from wave_bash.worker import (
    CgroupTracker,
    ExitRecord,
    Monitor,
    MonitorExit,
    ProcessTable,
    Sandbox,
    SandboxError,
    Shell,
    TaskFiles,
    Usage,
    bwrap_argv,
    final_cwd,
    forked_by,
    interrupt_job,
    job_forked,
    jobexit,
    last_pid,
    mark_stopping,
    monitor_running,
    planted,
    prepare_spawner,
    read_exit_record,
    reap_monitor,
    refuse_impostors,
    removed_cwd,
    resolve_monitor_bash,
    resolve_shell,
    start_monitor,
    stop_trees,
    tagged_processes,
    tell_stopping,
    wrapped_command,
    write_task_record,
)
from wave_bash.worker import sandbox as sandboxes
from wave_bash.worker.sandbox import Sources
from wave_bash.worker.tail import changes, file_size

from . import processes
from .boundary import worker_errors
from .faults import crash_point
from .identity import boot_id, new_task_id, same_process, start_ticks
from .journal import JOURNAL_LOCKED, Journal, TaskRow, disk_problem
from .madefiles import MadeFiles
from .standby import STANDBY_DEPTH, MonitorKey, Standby
from .terminals import TerminalLink

log = logging.getLogger(__name__)

LEFTOVER_PATIENCE = 0.05
"""Seconds a result waits for the processes an ended command left to go themselves."""
JOB_LOOKS = (0.002, 0.02, 0.2)
"""Seconds after which a job not forked yet is looked for again (``watch_job``)."""
SLEEP_COMMAND = re.compile(r"^\s*sleep(\s|$)")
DEFAULT_UMASK = 0o022
"""A command's umask when the caller could not tell its own."""
REMOVAL_QUIET = 0.2
REMOVAL_PATIENCE = 2.0
"""Ended tasks' cgroups are removed together once no task ended for ``REMOVAL_QUIET``
seconds, or ``REMOVAL_PATIENCE`` after the first of them."""
STOP_MARKS = {
    EndReason.STOPPED: b"s", EndReason.TIMEOUT: b"t", EndReason.LOG_CAP: b"l",
    EndReason.SANDBOX_ESCAPE: b"g",
}  # fmt: skip
"""Why :meth:`TaskManager.stop` stops a task: journaled as the stop begins, and marked in
its exit record (``worker.mark_stopping``), which a full disk does not refuse."""
STOP_REASONS = frozenset(STOP_MARKS)


def stop_reason_marked(record: ExitRecord) -> EndReason | None:
    """The stop reason a stop marked in an exit record, if any."""
    return next((r for r, mark in STOP_MARKS.items() if mark == record.stop_mark), None)


STOP_RECORD_PATIENCE = 2.0
"""Seconds a stop waits, once the processes it walked are gone, for their monitors to
record the ends (and list what the commands left) before it stops what they left."""
AFTER_REPLIES = 0.005
"""Work no caller waits for (the journal's commit, the log of tasks' ends, what a task
ended in the foreground used, reaping a monitor that recorded its status before it
exited) is done once a reply has gone out, or this many seconds after it came when no
reply goes out (a task that ended with nobody waiting): a waiter's reply comes two
rounds of the event loop after its task's end, and would otherwise follow that work. A
crash in between loses no task's end (its exit record holds it, and the next supervisor
records it from there), but may deliver a notice or output again (SPEC D1)."""
HIDDEN_FROM_MONITORS = frozenset({"BASH_ENV", "BASH_FUNC_builtin%%", "BASH_XTRACEFD"})
"""What no monitor is started with (SPEC E2d): bash would source a ``BASH_ENV`` there,
ahead of its command, call each builtin of the monitor's through a function named
``builtin``, and (under the caller's xtrace) trace its first line to a ``BASH_XTRACEFD``:
one of the monitor's own pipes. The job gets ``BASH_XTRACEFD`` back."""
ENVIRONMENT_COMMAND_LIMIT = 124 * 1024
"""Bytes of a command that reaches its shell in one environment string (interactive,
sandboxed, zsh, with BASH_ENV: never in an argv, F1a): the kernel takes 128 KiB at most,
and its prelude and paths travel beside it."""
JOIN_PATIENCE = 1.0
"""Seconds a stop waits for a just-started task's job to be forked, and in its cgroup."""
SIGNAL_EXIT_CODES = range(129, 128 + 65)
"""Shell exit codes that mean "terminated by signal N" (128 + N)."""


SESSION_TEMPS = "sandbox-tmp"
"""Where the sandbox's per-session ``/tmp`` directories live in the state dir."""


def _workspace_asked(sandbox: SandboxSpec, cwd: str) -> str:
    """The workspace a sandbox request names, or its default for ``cwd`` (a raw client's:
    ours name it, fixed where the client was made)."""
    return sandbox.workspace or guard.workspace_for(sandbox.mode, cwd)


def session_temp_dir(state_dir: Path, session: str) -> Path:
    """A session's own ``/tmp`` in the sandbox (named by a hash of the session)."""
    return state_dir / SESSION_TEMPS / hashlib.sha256(session.encode()).hexdigest()[:16]


def is_sleep_command(command: str) -> bool:
    """The F3 exception: a command whose first word is ``sleep`` is terminated on timeout."""
    return SLEEP_COMMAND.match(command) is not None


def status_for(exit_code: int | None, stopped: bool) -> TaskStatus:
    """Task status from its recorded exit code (SPEC D7)."""
    if exit_code is None:
        return TaskStatus.LOST
    if stopped or exit_code in SIGNAL_EXIT_CODES:
        return TaskStatus.KILLED
    return TaskStatus.COMPLETED if exit_code == 0 else TaskStatus.FAILED


WAKE_LOOKS = 64
"""Live tasks whose monitors the housekeeping looks at each second, in turn (a look reads
``/proc``: 16 us here, 16 ms a second for 1000 tasks on the event loop if all were)."""


def _remove_socket(path: Path) -> None:
    """Remove ``path`` if it is a socket (the command could have put anything there)."""
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            path.unlink()


def write_meta(files: TaskFiles, row: TaskRow) -> None:
    """The task's own record of what was asked (no environment values), in its exit
    record (see :class:`worker.ExitRecord`)."""
    write_task_record(files.exit, json.dumps(vars(row)).encode())  # vars(): a flat dataclass


def find_monitors(task_ids: Collection[str]) -> dict[str, int]:
    """The monitors of tasks, found by their ``WAVE_TASK_ID`` tag in one process-table pass."""
    return ProcessTable.read(task_ids).monitors() if task_ids else {}


def read_exit_file(path: Path) -> int | None:
    """The status a monitor recorded, or ``None`` when there is none (monitor killed)."""
    return read_exit_record(path).status


@lru_cache(maxsize=64)
def _shells(wave_shell: str, shell: str, path: str) -> tuple[Shell, str | None]:
    env = {"WAVE_SHELL": wave_shell, "SHELL": shell, "PATH": path}
    resolved = resolve_shell(env)
    monitor_bash = resolve_monitor_bash(resolved, env)
    refuse_impostors(resolved, monitor_bash)
    return resolved, monitor_bash


@dataclass(eq=False)
class LiveTask:
    """A task the supervisor is watching; its journal row is the truth."""

    row: TaskRow
    files: TaskFiles
    ended: asyncio.Future[None]
    child: bool = False
    """Whether this supervisor spawned the monitor (and must reap it)."""
    stop_reason: EndReason | None = None
    """Why the supervisor stopped it, if it did."""
    backgrounded: asyncio.Event = field(default_factory=asyncio.Event)
    attached: int = 0
    """Foreground callers waiting on this task right now."""
    cwd_note: str | None = None
    """Said in its result: it ran elsewhere than asked, its directory being gone."""
    storage_note: str | None = None
    """Why the state dir could not record this task's end, said in its result."""
    final_cwd: str | None = None
    """Where the command ended, when not where it started (its exit record says; only a
    command started in the foreground captures it)."""
    tracked: bool = False
    """Its processes are in a cgroup of their own (else found by the process walk)."""
    watched: bool = False
    """Its monitor's exit is watched as it happens (not found over at adoption)."""
    job_pidfd: int = -1
    """A pidfd on its job, whose exit is watched too (:meth:`TaskManager.watch_job`)."""
    job_looks: int = 0
    """How often its job was looked for."""
    finish_tries: int = 0
    """How often its end waited for a descriptor to read its exit record with."""
    prompt_read: tuple[int, int] | None = None
    """The session's read offset before and after the prompt a foreground call returned
    at (given back if that result never reached its caller)."""
    leftovers: dict[int, int] = field(default_factory=dict)
    """Without a cgroup: the processes its command left behind (pid → start ticks), as
    its monitor, a child subreaper, listed them when the command ended."""
    monitor_gone: MonitorExit | None = None
    """How its monitor ended (reaped once), once the task ended: with no code when it
    was no child of ours, or had recorded the status and was still exiting."""
    caller_back_by: float | None = None
    """Until when (wall clock) its foreground caller, cut off by a supervisor's restart,
    may attach again: the notice of an end it has not seen waits for it until then."""
    interrupted: bool = False
    """Its own foreground caller is stopping it (Ctrl+C): losing that caller's connection
    does not move it to the background."""
    monitor_lost: bool = False
    """Its monitor is gone without a status while its processes still run: it ends
    (``lost``) when they do, or when TaskStop stops them."""
    lingered: bool = False
    """It ended with processes it started still running (seen: :meth:`_after_end`)."""
    stopping: int = 0
    """Stops under way for it (:meth:`TaskManager.stop` calls): its job may end at their
    first signal while they still stop what it started."""
    terminal: TerminalLink | None = None
    """An interactive task's terminal (SPEC P)."""
    sources: Sources | None = None
    """What its sandbox binds by descriptor, held until it ends."""
    sandbox: sandboxes.Sandbox | None = None
    """The sandbox its command runs in, for this supervisor's result (not journaled)."""
    sandbox_note: str | None = None
    """Said in its result: protected files its sandboxed command made were moved aside."""

    def connect_terminal(self) -> None:
        """An interactive task: reach its terminal host (in the background)."""
        if not self.row.interactive or self.ended.done():
            return
        if self.terminal is None or self.terminal.closed:  # first, or the link broke
            self.terminal = TerminalLink(self.id, self.files.tty)
            self.terminal.start(self.ended)

    @property
    def waiting_for_input(self) -> bool:
        return self.terminal is not None and self.terminal.waiting and not self.ended.done()

    @property
    def id(self) -> str:
        return self.row.id

    def __repr__(self) -> str:
        return f"<LiveTask {self.id} {self.row.owner} pid={self.row.pid}>"


def _refuse_unreachable(cwd: str) -> None:
    """Refuse a working directory that is there but cannot be reached: one on a path this
    user may not search (it read as one that no longer exists: the command ran in an
    ancestor, or failed with 127 and bash's `cd: …: Permission denied`, a trial), and
    one whose path is longer than the system takes (over 4096 bytes, reached a ``cd`` at
    a time).

    Raises:
        InvalidInputError: that is so.
    """
    try:
        if not stat.S_ISDIR(os.stat(cwd).st_mode) or os.access(cwd, os.X_OK):
            return
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise InvalidInputError(
                f"working directory is not accessible: {cwd} ({exc.strerror}: a directory"
                " on its path is not searchable by this user); run it from one that is"
            ) from None
        if exc.errno == errno.ENAMETOOLONG:
            shown = cwd if len(cwd) <= 120 else f"{cwd[:60]}…{cwd[-60:]}"
            raise InvalidInputError(
                f"the working directory's path is too long for this system ({len(cwd)} "
                f"characters): {shown}; run it from a shorter path (a symlink to it)"
            ) from None


FINISH_RETRY_S, FINISH_TRIES = 0.1, 300
"""A task's end waits for a descriptor to read its exit record with: tried again so
often, so many times (a supervisor at its limit for longer leaks them: then it is read
as it can be)."""

PROMPT_RECHECK_S = 5.0
"""How often a task waited for to ask for input has its terminal link looked at again
(one that broke is made again, and the wait with it)."""


class TaskManager:
    """Owns every live task of one state dir."""

    def __init__(
        self,
        journal: Journal,
        tasks_dir: Path,
        stop_grace: float = STOP_GRACE_SECONDS,
        command_open_files: int | None = None,
        tracker: CgroupTracker | None = None,
        memory_limit: int | None = None,
        bwrap: str = "bwrap",
        hidden_dirs: Collection[str] = (),
    ):
        """``command_open_files``: the descriptor limit commands get back when the
        supervisor raised its own. ``tracker``: one cgroup per task (None: the process
        walk). ``memory_limit``: bytes a task may use, where cgroups enforce it."""
        self.journal = journal
        self.tasks_dir = tasks_dir
        self.stop_grace = stop_grace
        self.command_open_files = command_open_files
        self.tracker = tracker
        self.memory_limit = memory_limit
        self.bwrap = bwrap
        """The bubblewrap of sandboxed commands (``WAVE_BWRAP``)."""
        self._sandbox_filter: str | None = None
        """The sandbox's system-call filter file, once a sandboxed command was asked for."""
        self._workspaces: dict[tuple[str, str], str] = {}
        """Where each session's sandbox workspace led when first used (see
        :meth:`_pinned_workspace`)."""
        self.hidden_dirs = list(hidden_dirs)
        """Directories a sandboxed command must not see besides the state dir (the
        socket's, when it lives elsewhere)."""
        self.lingering: dict[str, LiveTask] = {}
        """Ended tasks whose processes still run (started by them, left behind)."""
        self.live: dict[str, LiveTask] = {}
        self.answering: collections.Counter[str] = collections.Counter()
        """Tasks whose callers' answers are being made (counted per caller): none is
        pruned meanwhile (its log is read for the answer; see :meth:`answering_for`)."""
        self.unrecorded: set[str] = set()
        """Live tasks whose pid is not journaled yet."""
        self.subreaper = tracker is None and sys.platform == "linux"
        """Without cgroups, monitors are child subreapers: what a command leaves behind in
        a new session, without its tag, stays in its monitor's tree (found, stopped)."""
        if self.subreaper:
            prepare_spawner()  # (its start-up beside ours, not in the first command's)
        self.standby = Standby(tasks_dir, self._release, self.subreaper)
        self.cgroup_ops = ThreadPoolExecutor(1, thread_name_prefix="cgroups")
        """Where ended tasks' cgroups are removed, off the event loop: a cgroup ``rmdir``
        can wait for a kernel grace period (up to ~10 ms on an idle host). (Cgroups are
        made with the standby, whose job joins them ahead of its command.)"""
        self._removals: dict[str, float] = {}
        self._wake_cursor = 0
        """Where the next look for stopped monitors starts (see :data:`WAKE_LOOKS`)."""
        """Ended tasks whose cgroups wait to be removed (ID → when queued)."""
        self._removals_since = 0.0
        self._ends_to_log: list[str] = []
        """Ends not logged yet (see :meth:`_log_end`)."""
        self._deferred: list[Callable[[], object]] = []
        """Work done once a reply has gone out (see :meth:`after_replies`)."""
        self._deferred_due = False
        self._usage_pending: dict[str, LiveTask] = {}
        """Ended tasks whose usage is read after the reply (see :meth:`_record_end`)."""
        self._standby_key: MonitorKey | None = None
        """What the last command started was started with: the next standbys' (none
        while a command starts, and after a standby failed)."""
        self._standby_used = False
        """Whether the last command found a standby started for it."""
        self._resumed_stops: set[asyncio.Task[None]] = set()
        """Stops an earlier supervisor began, finished here (see :meth:`adopt`), and
        those of sandboxes where a pointer git reads was made (:meth:`_judge_made`)."""
        self.made_files = MadeFiles(self._judge_made)
        """The git dirs of sandboxed tasks whose pointers were missing, watched while they
        run (``madefiles``)."""
        self._prompt_watches: dict[str, asyncio.Task[None]] = {}
        """Interactive tasks whose callers went away, until they wait for input or a
        caller is back (see :meth:`announce_prompt`)."""
        self._pipe_watches: dict[str, asyncio.Task[None]] = {}

    # --- starting ----------------------------------------------------------------------

    @contextlib.contextmanager
    def answering_for(self, task_id: str) -> Iterator[None]:
        """While a caller's answer about the task is made (a result, a read that waits
        for its end): no prune takes it (`gc --older-than 0` beside a run removed the log
        of a command that had just ended, and a TaskOutput that waited lost its task:
        reviews)."""
        self.answering[task_id] += 1
        try:
            yield
        finally:
            self.answering[task_id] -= 1
            if self.answering[task_id] <= 0:
                del self.answering[task_id]

    def _new_id(self) -> str:
        while True:
            task_id = new_task_id()
            if (
                task_id not in self.live
                and not self.standby.reserved(task_id)
                and not self.journal.exists(task_id)
            ):
                return task_id

    def start(
        self,
        p: RunParams,
        permission: Decision | None = None,
        announce: Callable[[TaskRow], None] | None = None,
    ) -> LiveTask:
        """Validate, record and spawn one command (``permission``: how it was allowed,
        recorded with it).

        ``announce`` is called once the task is in the journal, before its monitor gets the
        command: a caller told the ID can attach to the task again whatever happens next.

        Raises:
            InvalidInputError: bad cwd, command or environment; ShellNotFoundError: no
            bash/zsh; StorageError: the state dir refuses writes; SpawnError.
        """
        with worker_errors(self.tasks_dir.parent):
            self._tasks_dir_there()
            return self._start(p, permission, announce)

    def _tasks_dir_there(self) -> None:
        """Make the tasks dir again where someone removed it (every later command failed
        until a restart, "No such file or directory": a review), letting the standbys go:
        their files went with it (a command would write to files no one can read; one
        made again by hand: :meth:`Standby.take` finds their files gone). One replaced by
        a link (or a file) is moved aside, never followed (X1a: a command's files were
        made in the link's target, a trial)."""
        try:
            if stat.S_ISDIR(os.lstat(self.tasks_dir).st_mode):
                return
            aside = move_aside(self.tasks_dir)
            log.warning("%s was no directory: moved to %s", self.tasks_dir, aside)
        except OSError:  # (gone; or what cannot be looked at, said as the dir is made)
            pass
        log.warning("%s made again; the standby monitors let go", self.tasks_dir)
        self.standby.discard()
        ensure_private_dir(self.tasks_dir)

    def _start(
        self,
        p: RunParams,
        permission: Decision | None,
        announce: Callable[[TaskRow], None] | None,
    ) -> LiveTask:
        cwd_note = None
        if p.terminal_size is not None and not p.interactive:
            raise InvalidInputError("terminal_size is only for interactive commands")
        if p.interactive and sys.platform == "win32":
            raise InvalidInputError("interactive commands need a pseudo-terminal (POSIX hosts)")
        if p.interactive and INPUT_QUIET_ENV in p.env:  # the terminal host reads seconds
            quiet = _quiet_seconds(p.env[INPUT_QUIET_ENV])
            p = p.model_copy(update={"env": {**p.env, INPUT_QUIET_ENV: quiet}})
        if os.path.isabs(p.cwd) and not self._in_sandbox_temp(p):  # (the sandbox's own)
            _refuse_unreachable(p.cwd)  # (not "no longer exists", run elsewhere: a trial)
        if not os.path.isabs(p.cwd) or not (os.path.isdir(p.cwd) or self._in_sandbox_temp(p)):
            if not (p.cwd_fallback and os.path.isabs(p.cwd)):
                if not os.path.isabs(p.cwd):
                    raise InvalidInputError(f"working directory must be an absolute path: {p.cwd}")
                if os.path.exists(p.cwd):
                    raise InvalidInputError(f"working directory is not a directory: {p.cwd}")
                raise InvalidInputError(f"working directory does not exist: {p.cwd}")
            existing = guard.nearest_existing_dir(p.cwd)
            cwd_note = (
                f"Note: the working directory {p.cwd} no longer exists; "
                f"this command ran in {existing}."
            )
            p = p.model_copy(update={"cwd": existing})
        sandbox = self._sandbox(p)
        shell, monitor_bash = _shells(
            p.env.get("WAVE_SHELL", ""), p.env.get("SHELL", ""), p.env.get("PATH", "")
        )
        if sandbox is not None:  # (it runs outside the sandbox: see SYSTEM_DIRS)
            monitor_bash = planted.system_program("bash")
        # The command reaches its shell in an environment string: the terminal host's or
        # the sandbox's, or the monitor's for zsh (and then wrapped, quoted).
        through_monitor = shell.kind == "zsh"
        # No monitor runs with the caller's BASH_ENV, which bash would source there, ahead
        # of its command: a standby's in another directory, maybe calls earlier, with the
        # instructions on its stdin, for a wrapped command outside the sandbox (a
        # sandboxed command that can write that file would have its code run unsandboxed
        # at the next call). A bash command that has one is wrapped: its own bash starts
        # as `bash -c` would, sourcing it. Nor with a function named `builtin`, which the
        # monitor calls every builtin through (SPEC E2d).
        bash_env = p.env.get("BASH_ENV")
        monitor_env = {k: v for k, v in p.env.items() if k not in HIDDEN_FROM_MONITORS}
        options = p.env.get("SHELLOPTS", "").split(":")
        if "verbose" in options:  # a bash monitor would print its whole script to the log
            monitor_env["SHELLOPTS"] = ":".join(o for o in options if o != "verbose")
        loader: dict[str, str] = {}  # (a sandbox's: set inside it only)
        if sandbox is not None:
            loader = {k: v for k, v in p.env.items() if k in sandboxes.LOADER_VARIABLES}
            monitor_env = {k: v for k, v in monitor_env.items() if k not in loader}
        wrapped = (
            p.interactive
            or sandbox is not None
            or (shell.kind == "bash" and bool(bash_env or _names_its_pid(p.command)))
        )
        if wrapped or through_monitor:
            _check_environment_string(p.command)
        key = MonitorKey(monitor_env, shell, monitor_bash, p.separate_stderr)
        # A sandbox's sources are its monitor's from its start (no standby has them).
        sources = self._open_sources(sandbox, p.session, loader) if sandbox else None
        try:
            standby = None if sources else self.standby.take(key)
            # No standby comes back before this command has started (another caller's
            # were let go; this environment may not even start one).
            self._standby_key = None
            monitor = standby or self._start_monitor(key, sources.numbered() if sources else ())
        except BaseException:
            if sources is not None:
                sources.close()
            raise
        found = standby is not None
        task_id, files = monitor.task_id, monitor.files
        now = time.time()
        background = p.run_in_background
        row = TaskRow(
            id=task_id, command=p.command, description=p.description, session=p.session,
            cwd=p.cwd, shell=shell.path, status=TaskStatus.RUNNING,
            owner=Owner.BACKGROUND if background else Owner.FOREGROUND,
            background_reason=BackgroundReason.EXPLICIT if background else None,
            owner_changed_at=now if background else None, exit_code=None, pid=None,
            pid_start=None, boot_id=boot_id(), started_at=now, ended_at=None,
            output_path=str(files.log), err_path=str(files.err_log) if files.err_log else None,
            timeout_ms=None if background else p.timeout, request_key=p.request_key,
            interactive=p.interactive,
            permission=json.dumps(permission.to_json())
            if permission is not None and permission.source != "none"
            else None,
            sandbox=sandbox.mode if sandbox is not None else None,
            sandbox_scope=json.dumps({"workspace": sandbox.workspace, "network": sandbox.network})
            if sandbox is not None else None,
        )  # fmt: skip
        # The monitor exists but waits for its command. Journal, then tell the caller, then
        # hand the command over: a supervisor that dies before the hand-over leaves a monitor
        # that runs nothing (the task reads as lost, never runs twice); one that dies after
        # it leaves a running task that the next one re-adopts (by its WAVE_TASK_ID tag if
        # the pid's start time was not journaled yet).
        inserted = False
        joins = list(monitor.joined) or self._make_cgroup(task_id)
        try:
            umask = DEFAULT_UMASK if p.umask is None else p.umask  # ours is 077
            command, capture_cwd = p.command, not p.run_in_background
            if wrapped:
                # The job becomes the terminal host and/or the sandbox; its shell then
                # captures the directory it ends in.
                cwd_file = None
                if capture_cwd:  # a sandbox can write that file: never the exit record
                    cwd_file = files.make_cwd() if sandbox else str(files.exit)
                terminal = (str(files.tty), p.terminal_size or TERMINAL_SIZE)
                bwrap: list[str] = []
                if sandbox and sources:
                    bwrap = self._bwrap(sandbox, p.cwd, cwd_file, p.session, sources)
                    judged: list[object] = [*sources.absent, *map(list, sources.links)]
                    if sources.nested_known is not None:  # (links: pairs; git dirs: this)
                        judged.append({"nested": sorted(map(list, sources.nested_known))})
                    row.sandbox_absent = json.dumps(judged) if judged else None
                    sources.close()  # (its monitor holds them now)
                command = wrapped_command(
                    command, shell.path, cwd_file,
                    terminal=terminal if p.interactive else None,
                    sandbox=bwrap, sandbox_filter=self._sandbox_filter if sandbox else None,
                    bash_env=bash_env, windows=sys.platform == "win32",
                )  # fmt: skip
                capture_cwd, bash_env = False, None  # (its shell has it)
                if through_monitor:
                    _check_environment_string(command)
            instructions = monitor.instructions(  # a job that joined on its own: nothing to join
                command, "/" if sandbox else p.cwd, umask, self.command_open_files,
                () if monitor.joined else joins, capture_cwd=capture_cwd, bash_env=bash_env,
                xtrace_fd=p.env.get("BASH_XTRACEFD"),
                verbose="verbose" in options and not wrapped and shell.kind == "bash"
                and monitor_bash is not None,
            )  # fmt: skip
            write_meta(files, row)  # first: a full disk fails here, before the journal
            self.journal.insert_task(row)
            inserted = True
            if announce is not None:
                announce(row)
            crash_point("after_insert")
            monitor.send(instructions)
        except BaseException:
            # Nothing ran: no journal row, no monitor left waiting, no files (all or nothing).
            if inserted:
                self.journal.delete_task(task_id)
            self._release(monitor)
            if sources is not None:
                sources.close()
            raise
        crash_point("after_spawn")
        # The start time is read later, in flush_identities: /proc/<pid>/stat of a process
        # that is still exec'ing blocks for about a millisecond, and our unreaped child
        # keeps its pid meanwhile. A short command needs no identity at all; a supervisor
        # that dies before the flush leaves a row that recovery completes by the task tag.
        row.pid = monitor.pid
        self.unrecorded.add(task_id)
        task = LiveTask(row, files, asyncio.get_running_loop().create_future(), child=True)
        task.cwd_note = cwd_note
        task.sources = sources
        task.sandbox = sandbox
        task.tracked = bool(joins)
        self.live[task_id] = task
        if sources is not None and sources.absent:
            self.made_files.watch(task_id, planted.watch_targets(sources.absent), judge=False)
        self._watch(task, monitor.record_pipe)
        task.connect_terminal()
        # (A sandboxed command takes no standby: none is kept waiting for the next one.)
        self._standby_key, self._standby_used = (None if sources else key), found
        return task

    def refill_standby(self) -> None:
        """Start monitors for the next commands (standbys), for the environment of the
        last command started: as many as are kept when that command found one waiting,
        else one (callers whose environments alternate would have each discard them).
        Called once a reply has gone out, so that neither that reply nor the end of a
        command just handed over waits for these process starts. (Started in a thread
        of their own instead, a command sent right after a reply often found none ready
        and got a monitor of its own: no faster, and a command's job was then replaced
        if killed before it took the command: session 23.) A standby that cannot start,
        or that ended on its own, stops the refills until the next command starts (no
        process or descriptor left, a bash that cannot run here)."""
        key = self._standby_key
        if key is None:
            return
        if self.standby.drop_dead():
            self._standby_key = None
            return
        wanted = STANDBY_DEPTH if self._standby_used else 1
        for _ in range(wanted - self.standby.count(key)):
            task_id = self._new_id()
            try:
                self.standby.start(key, task_id, self._make_cgroup(task_id))
            except (OSError, ValueError) as exc:  # (only speed is lost)
                log.debug("no standby monitor: %s", exc)
            except Exception:
                log.exception("no standby monitor")
            else:
                continue
            if self.tracker is not None:
                self.cgroup_ops.submit(self.tracker.remove, task_id)
            self._standby_key = None
            return

    def _sandbox(self, p: RunParams) -> Sandbox | None:
        """The sandbox the request asks for, checked usable here (SPEC SB2).

        Raises:
            SandboxUnavailableError: no bubblewrap, no user namespaces (never unsandboxed).
        """
        if p.sandbox is None:
            return None
        try:
            sandboxes.probe(sandboxes.locate(self.bwrap))
            self._sandbox_filter = sandboxes.filter_file(str(self.tasks_dir.parent))
        except SandboxError as exc:
            raise SandboxUnavailableError(str(exc)) from None
        writable = p.sandbox.mode == "workspace-write"
        workspace = _workspace_asked(p.sandbox, p.cwd)
        if not os.path.isabs(workspace) or not os.path.isdir(workspace):
            raise InvalidInputError(f"the sandbox workspace is not a directory: {workspace}")
        if writable and os.path.realpath(workspace) == "/":
            raise InvalidInputError("the sandbox's writable workspace cannot be /")
        return Sandbox(
            p.sandbox.mode, self._pinned_workspace(p.session, workspace), p.sandbox.network
        )

    def _pinned_workspace(self, session: str, workspace: str) -> str:
        """The directory ``workspace`` leads to (no link on its path), the one it led to
        for this session's first sandboxed command: a sandboxed command whose workspace
        holds this one's parent could replace a directory on its path with a link (to
        ``/root/.ssh``), and the next command had that as its writable workspace (a
        review). A supervisor that restarts pins it again.

        Raises:
            SandboxUnavailableError: it leads elsewhere now.
        """
        real = os.path.realpath(workspace)  # (a directory made again there is the same:
        first = self._workspaces.setdefault((session, workspace), real)  # a clone anew)
        if first != real:
            raise SandboxUnavailableError(
                f"the sandbox workspace {workspace} now leads to {real}, not to {first} as "
                "when this session's first sandboxed command ran: a link on its path was "
                "changed (by a command?); check it, then use another session"
            )
        return real

    def sandbox_view(self, p: RunParams) -> Callable[[str], str] | None:
        """Where a path of ``p``'s sandboxed command is on this machine, for its links:
        its own ``/tmp`` is its session's directory here, not this machine's (a Write rule
        checked there followed none of the links commands made in theirs: a review wrote
        past one through ``/tmp/link``); the workspace, bound where it is, and the rest
        of the read-only root are where they are. None when it is not sandboxed."""
        if p.sandbox is None:
            return None
        temp = str(session_temp_dir(self.tasks_dir.parent, p.session))
        workspace = os.path.realpath(_workspace_asked(p.sandbox, p.cwd))

        def view(path: str) -> str:
            if planted.inside(path, "/tmp") and not planted.inside(path, workspace):
                return temp + path[len("/tmp") :]
            return path

        return view

    def _in_sandbox_temp(self, p: RunParams) -> bool:
        """Whether a sandboxed command's directory is one in its session's own ``/tmp``
        (with follow-cd, where the last command ended: ``cd /tmp/build``)."""
        temp = session_temp_dir(self.tasks_dir.parent, p.session)
        return p.sandbox is not None and sandboxes.in_own_temp(p.cwd, str(temp))

    def _directory_test(self, row: TaskRow) -> Callable[[str], bool]:
        """Whether a directory a task's command ended in exists: in a sandbox's own
        ``/tmp`` too, for a sandboxed one (follow-cd goes there: ``cd /tmp/build``)."""
        if not row.sandbox:
            return os.path.isdir
        temp = str(session_temp_dir(self.tasks_dir.parent, row.session))
        return lambda path: os.path.isdir(path) or sandboxes.in_own_temp(path, temp)

    def _open_sources(self, sandbox: Sandbox, session: str, inside: dict[str, str]) -> Sources:
        """What bubblewrap binds of one command's by descriptor, opened before its
        monitor starts, which gets them. Its ``/tmp`` is its session's own directory
        (``sandbox-tmp/<hash of the session>`` in the state dir): files a command leaves
        there are there for the session's next command, and nothing else is (no other
        program's sockets). ``inside``: variables set inside only."""
        temp, hidden = self._sandbox_places(session)
        temp.mkdir(mode=0o700, parents=True, exist_ok=True)
        sandboxes.prepare_temp(str(temp), sandbox.workspace, hidden)
        try:
            if sandbox.mode == "workspace-write":
                sandboxes.prepare_hooks(sandbox.workspace)
            sources = sandboxes.open_sources(sandbox, hidden, str(temp))
        except SandboxError as exc:
            raise SandboxUnavailableError(str(exc)) from None
        try:
            sources.set_environment(inside)
        except BaseException:
            sources.close()
            raise
        return sources

    def _bwrap(
        self,
        sandbox: Sandbox,
        cwd: str,
        cwd_file: str | None,
        session: str,
        sources: Sources,
    ) -> list[str]:
        """The bubblewrap argv of one command (``sources``: see :meth:`_open_sources`)."""
        temp, hidden = self._sandbox_places(session)
        writable = [cwd_file] if cwd_file else []
        bwrap = sandboxes.locate(self.bwrap)  # (absolute: probed so)
        return bwrap_argv(
            bwrap, sandbox, cwd, hidden, writable, temp_dir=str(temp), sources=sources,
        )  # fmt: skip

    def _sandbox_places(self, session: str) -> tuple[Path, list[str]]:
        """The session's sandbox ``/tmp`` and the directories a sandbox hides."""
        state_dir = self.tasks_dir.parent
        return session_temp_dir(state_dir, session), [str(state_dir), *self.hidden_dirs]

    @property
    def sandbox_status(self) -> str:
        """Whether a sandbox can be set up here, for ``supervisor status``."""
        try:
            version = sandboxes.probe(sandboxes.locate(self.bwrap))
            return f"available ({version}); off unless a caller asks"
        except SandboxError as exc:
            return f"unavailable: {exc}"

    def _release(self, monitor: Monitor, reaped: bool = False) -> None:
        """Let a monitor go that will run no command, with its cgroups (``reaped``: it
        ended meanwhile, and is reaped already)."""
        if reaped:
            monitor.cancel()
        else:
            processes.release(monitor)
        if self.tracker is not None:  # once its job, which may have joined them, is gone
            self.cgroup_ops.submit(self.tracker.remove, monitor.task_id, 1.0)

    def _make_cgroup(self, task_id: str) -> list[str]:
        """The task's cgroups (their ``cgroup.procs`` files); none without a tracker or
        when they cannot be made (the task is then found by the process walk)."""
        if self.tracker is None:
            return []
        try:
            return self.tracker.create(task_id, self.memory_limit)
        except OSError as exc:
            log.warning("task %s gets no cgroup: %s", task_id, exc)
            return []

    @property
    def tracking(self) -> str:
        """How a task's processes are found, for ``supervisor status``."""
        if self.tracker is None:
            reaper = ", monitors as child subreapers" if self.subreaper else ""
            return f"process table (process group, parentage, WAVE_TASK_ID tag{reaper})"
        return self.tracker.mode

    def _start_monitor(self, key: MonitorKey, inherited: Sequence[tuple[int, int]] = ()) -> Monitor:
        task_id = self._new_id()
        files = TaskFiles.for_task(self.tasks_dir, task_id, key.separate_stderr)
        joins = self._make_cgroup(task_id)
        try:
            return start_monitor(
                task_id, key.env, key.shell, key.monitor_bash, files, joins=joins,
                subreaper=self.subreaper, inherited=inherited,
            )  # fmt: skip
        except BaseException:
            if self.tracker is not None:
                self.tracker.remove(task_id)
            raise

    def adopt(
        self,
        row: TaskRow,
        monitor: int | None = None,
        attach_grace: float = 10.0,
    ) -> LiveTask | None:
        """Watch a running task recorded by an earlier supervisor (SPEC D3).

        Returns the live task, or ``None`` when it ended meanwhile (then it is finished
        here from its exit record, or ``lost`` after a host restart) or the pid now belongs
        to another process. A foreground task whose caller does not attach again within
        ``attach_grace`` seconds moves to the background (``caller_lost``), and one that
        ended meanwhile is reported through a notice, so no result goes unseen. ``monitor``
        is the task's monitor found by its tag, for a row whose identity was not journaled.
        """
        loop = asyncio.get_running_loop()
        task = LiveTask(row, TaskFiles.for_task(self.tasks_dir, row.id), loop.create_future())
        if row.owner is Owner.FOREGROUND:
            task.caller_back_by = time.time() + attach_grace
        task.tracked = (  # a cgroup does not outlive a reboot (nor a simulated one)
            self.tracker is not None and row.boot_id == boot_id() and self.tracker.exists(row.id)
        )
        if row.pid_start is None and monitor is not None and row.boot_id == boot_id():
            # The supervisor died before journaling its identity: found by the task tag.
            row.pid, row.pid_start = monitor, start_ticks(monitor)
            self.unrecorded.add(row.id)
        # A running row with an end reason: an earlier supervisor was stopping it (the
        # reason is journaled before any signal) and died. The stop is finished here, and
        # the task ends as stopped, not as whatever its command made of the SIGTERM.
        task.stop_reason = row.end_reason if row.end_reason in STOP_REASONS else None
        if task.stop_reason is None:  # (its journal write held by a full disk, then lost)
            task.stop_reason = stop_reason_marked(read_exit_record(task.files.exit))
            row.end_reason = task.stop_reason or row.end_reason
        alive = row.pid is not None and same_process(row.pid, row.pid_start, row.boot_id, row.id)
        if alive and (record := self._recorded_while_it_lingers(task)) is not None:
            self._finish(task, record=record)  # (its monitor lingers: see _lingering_monitor)
            return None
        if alive:
            self.live[row.id] = task
            self._watch(task)
            if (sources := _started_sources(row)) is not None:  # (made meanwhile: judged)
                self.made_files.watch(row.id, planted.watch_targets(sources.absent), judge=True)
            task.connect_terminal()  # the same terminal, held by the task's own host
            if row.owner is Owner.FOREGROUND:
                loop.call_later(attach_grace, self._caller_gone, task)
            elif row.background_reason is not BackgroundReason.INPUT:  # (its prompt, as
                self.announce_prompt(task)  # move_to_background's: may have come meanwhile)
            if task.stop_reason is not None:
                stopping = loop.create_task(self.stop([task], task.stop_reason))
                self._resumed_stops.add(stopping)
                stopping.add_done_callback(self._resumed_stops.discard)
            return task
        if row.owner is Owner.FOREGROUND:
            self._set_owner(task, Owner.BACKGROUND, BackgroundReason.CALLER_LOST)
        restarted = row.boot_id != boot_id()
        self._finish(task, host_restarted=restarted, ended_at=_ended_at(task, restarted))
        return task if not task.ended.done() else None  # its monitor died, not its processes

    def flush_identities(self) -> None:
        """Journal the pid and start time of tasks started since the last flush."""
        rows = [self.live[i].row for i in self.unrecorded if i in self.live]
        self.unrecorded.clear()
        for row in rows:
            if row.pid is not None:
                row.pid_start = start_ticks(row.pid)  # still our unreaped child: same pid
        if rows:
            self.journal.record_identities(rows)

    def current(self, row: TaskRow) -> TaskRow:
        """The freshest version of a journal row: the in-memory one while the task runs."""
        task = self.live.get(row.id)
        return task.row if task is not None else row

    def ended_task(self, row: TaskRow) -> LiveTask:
        """A task object for a row that is no longer watched (its files, no process)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return LiveTask(row, TaskFiles.for_task(self.tasks_dir, row.id), done)

    def _caller_gone(self, task: LiveTask) -> None:
        if task.attached == 0 and not task.interrupted:  # (its caller is stopping it)
            self.move_to_background(task, BackgroundReason.CALLER_LOST)

    # --- exit detection ----------------------------------------------------------------

    def _watch(self, task: LiveTask, record_pipe: int = -1) -> None:
        """Finish the task once its monitor has recorded the status: as its record pipe
        closes (``record_pipe``, see :attr:`worker.Monitor.record_pipe`), a process exit
        sooner than the monitor's own, or else at that exit (a monitor this supervisor
        did not start, one that closed it without a status: killed, a full disk)."""
        assert task.row.pid is not None
        pid, task.watched = task.row.pid, True
        if record_pipe < 0:
            processes.on_exit(pid, task.child, lambda: self._finish(task))
            return
        loop = asyncio.get_running_loop()

        def closed() -> None:
            loop.remove_reader(record_pipe)
            os.close(record_pipe)
            if task.ended.done():  # (as its job exited: watch_job)
                return
            record = read_exit_record(task.files.exit)
            if record.status is None:
                processes.on_exit(pid, task.child, lambda: self._finish(task))
            else:
                self._finish(task, record=record)

        loop.add_reader(record_pipe, closed)

    def watch_job(self, task: LiveTask) -> None:
        """Someone waits for this task: end it as its job exits, where the kernel tells
        how (``worker.jobexit``), not a moment later as its monitor has recorded that.

        Only a task in a cgroup: the job is told from the monitor's other children by
        the cgroup it ended in, and its end leaves nothing for the monitor to add (a
        subreaper monitor lists leftovers after it). A job that exits, not killed, had
        taken its instructions, complete (they were sent); one killed may not have, and
        is left to its monitor (``worker.jobexit``). So is a job whose monitor is gone
        (killed: the task is lost, D2), or no child of ours (its pid may be another's).
        A job not forked yet is looked for again, a few times (``JOB_LOOKS``).
        """
        if task.job_looks == 0:  # (else found, or being looked for)
            self._look_for_job(task)

    def _look_for_job(self, task: LiveTask) -> None:
        task.job_looks += 1
        monitor = task.row.pid or 0
        if not (task.tracked and task.child) or task.ended.done() or task.monitor_lost:
            return
        group = self.tracker.cgroup_id(task.id) if self.tracker is not None else None
        if group is None or task.monitor_gone is not None or not monitor_running(monitor):
            return
        found = jobexit.open_job(monitor)
        loop = asyncio.get_running_loop()
        if found is None:
            if task.job_looks <= len(JOB_LOOKS):
                loop.call_later(JOB_LOOKS[task.job_looks - 1], self._look_for_job, task)
            return
        job, task.job_pidfd = found

        def exited() -> None:
            status = jobexit.exited_status(task.job_pidfd, job, group)
            self._unwatch_job(task)
            running = monitor_running(monitor)
            if running:  # its job is gone: let it record (F1c: `kill -STOP $$` stopped it)
                with contextlib.suppress(OSError):
                    os.kill(monitor, signal.SIGCONT)
            # Left to the monitor: a task ended meanwhile; processes still in its cgroup,
            # which may be ending too (a sandbox's init exits after bubblewrap has passed
            # its status on); a monitor gone, which records nothing (the task is lost).
            if status is None or task.ended.done() or self.has_processes(task) or not running:
                return
            record = read_exit_record(task.files.exit)  # (its directory, when captured)
            self._finish(task, record=ExitRecord(status, record.cwd, record.record))

        loop.add_reader(task.job_pidfd, exited)

    @staticmethod
    def _unwatch_job(task: LiveTask) -> None:
        if task.job_pidfd >= 0:
            asyncio.get_running_loop().remove_reader(task.job_pidfd)
            os.close(task.job_pidfd)
            task.job_pidfd = -1

    def _finish(
        self,
        task: LiveTask,
        host_restarted: bool = False,
        record: ExitRecord | None = None,
        ended_at: float | None = None,
    ) -> None:
        """Its monitor has recorded the status (``record``, as read), or exited: record
        how the task ended (``ended_at``: when, for one that ended before this supervisor
        came up; else now). A monitor killed without a status while the task's processes
        still run ends nothing yet: the task stays (``monitor_lost``) until they are
        gone or stopped."""
        if task.ended.done():
            return
        if record is not None and record.unread:
            record = None  # (read again: see below)
        found = None if record is not None or host_restarted else read_exit_record(task.files.exit)
        if found is not None and found.unread and task.finish_tries < FINISH_TRIES:  # (no
            # descriptor: its end, read as no status, was "lost" or "not recorded": a review)
            task.finish_tries += 1
            asyncio.get_running_loop().call_later(
                FINISH_RETRY_S, self._finish, task, False, None, ended_at or time.time()
            )
            return
        sources = task.sources or _started_sources(task.row)
        if sources is not None:  # (bubblewrap has long mounted them)
            sources.close()
            moved = sources.move_made(task.id, ended_at or time.time(), task.row.started_at)
            if moved or sources.unjudged:  # (after what was moved as it ran, if anything)
                said = texts.moved_aside_text(moved, task.id, sources.unjudged)
                task.sandbox_note = " ".join(n for n in (task.sandbox_note, said) if n)
                log.warning("task %s: %s", task.id, said)
        if task.monitor_gone is None:
            pid = task.row.pid or 0
            gone = None if not task.child or record else reap_monitor(pid)
            if task.child and gone is None:  # it wrote the status and is exiting now
                self._after_replies(lambda: processes.reap_soon(pid))
                if self.subreaper and task.row.pid_start is None:  # (unreaped: its own; it
                    task.row.pid_start = start_ticks(pid)  # lingers with leftovers)
            task.monitor_gone = gone or MonitorExit(None)
        if (
            not host_restarted
            and task.monitor_gone.code is None
            and (record or found or read_exit_record(task.files.exit)).status is None
            and self.has_processes(task)
        ):
            if not task.monitor_lost:
                task.monitor_lost = True
                self.live.setdefault(task.id, task)
                log.warning("task %s: monitor gone, its processes still run", task.id)
            return
        try:
            self._record_end(task, host_restarted, record or found, ended_at)
        finally:  # whatever happens, the task has ended for everyone waiting on it
            self.live.pop(task.id, None)
            task.ended.set_result(None)
            self._unwatch_job(task)  # (a job that left its cgroup may live on)
            # (Its terminal link is not closed here: the host, the task's job, has ended,
            # and its last replies — an input that ended the command — come before its
            # end of file, which closes the link.)
            if task.row.interactive:
                _remove_socket(task.files.tty)  # a host that was killed left it
            if task.tracked:  # (its cgroup read at once for a result built meanwhile: a
                # `wait` that came in just then said no process was left; a review)
                self.lingering[task.id] = task
                asyncio.get_running_loop().call_soon(self._after_end, task)
            elif self._left_behind(task):
                self.lingering[task.id] = task
                task.lingered = True
                log.info("task %s ended; %d process(es) it started still run", task.id,
                         len(task.leftovers))  # fmt: skip
            else:
                self.made_files.forget(task.id)

    def has_processes(self, task: LiveTask) -> bool:
        """Whether any process of the task runs (its cgroup, else its tag)."""
        if task.tracked and self.tracker is not None:
            return self.tracker.populated(task.id)
        return bool(tagged_processes({task.id}).get(task.id))

    async def left_running(self, task: LiveTask) -> int:
        """How many processes an ended task's command left running, as its result is
        given (before the task is seen to linger). Those still there wait up to
        ``LEFTOVER_PATIENCE`` to go: a sandbox's init exits just after bubblewrap has
        passed its command's status on (a result said one was left running)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LEFTOVER_PATIENCE
        stopped_by = loop.time() + self.stop_grace + 2  # (what a stop under way stops is
        # its: counted as it left them, a trial; not after the others of a stop of many)
        while (left := self._left_running(task)) and (
            (task.tracked and loop.time() < deadline)
            or (task.stopping and loop.time() < stopped_by)
        ):
            await asyncio.sleep(0.002)
        return left

    def _left_running(self, task: LiveTask) -> int:
        if task.tracked and self.tracker is not None:
            if not self.tracker.populated(task.id):
                return 0
            return sum(not processes.exiting(pid) for pid in self.tracker.pids(task.id))
        return len(self._left_behind(task))  # (those a stop killed meanwhile are gone)

    def usage_now(self, row: TaskRow) -> Usage:
        """What a task used: counted live while it runs (or lingers, or its end's usage
        is not recorded yet), else as recorded."""
        task = (
            self.live.get(row.id) or self.lingering.get(row.id) or self._usage_pending.get(row.id)
        )
        if task is not None and task.tracked and self.tracker is not None:
            return self.tracker.usage(row.id)
        return Usage(row.cpu_seconds, row.peak_memory)

    def leftover_count(self, task_id: str) -> int:
        """Processes an ended task left running (0 when none, or unknown)."""
        task = self.lingering.get(task_id)
        if task is None:
            return 0
        return self._left_running(task)

    def _left_behind(self, task: LiveTask) -> list[int]:
        """Without a cgroup: the children of its monitor, which lingers while it has any
        (``worker.monitor``), or, once that is gone (killed), those of the processes it
        listed that still run."""
        if monitor := self._lingering_monitor(task):
            task.leftovers = processes.children_running(monitor)
            return list(task.leftovers)
        alive = [pid for pid, ticks in task.leftovers.items() if processes.runs(pid, ticks)]
        task.leftovers = {pid: task.leftovers[pid] for pid in alive}
        return alive

    def _after_end(self, task: LiveTask) -> None:
        """An ended task's cgroup goes when empty (what it used recorded first); with
        processes left it lingers, its protected files still watched (``madefiles``)."""
        try:
            self._linger_or_go(task)
        finally:
            if task.id not in self.lingering:
                self.made_files.forget(task.id)

    def _linger_or_go(self, task: LiveTask) -> None:
        if not task.tracked or self.tracker is None:
            if not self._left_behind(task):
                if (monitor := self._lingering_monitor(task)) and processes.stopped(monitor):
                    with contextlib.suppress(OSError):  # (a leftover stopped it: it would
                        os.kill(monitor, signal.SIGCONT)  # wait, unseen, for good; a trial)
                self.lingering.pop(task.id, None)
                if task.lingered or task.row.leftovers is not None:
                    self._judge_sandbox_again(task)
                if task.row.leftovers is not None:  # (all gone: no supervisor looks again)
                    task.row.leftovers = None
                    self.journal.save_row(task.row)
            else:
                task.lingered = True
            return
        if task.id in self._removals:  # looked at already: empty, its removal queued
            self.lingering.pop(task.id, None)
            return
        if not self.tracker.exists(task.id):  # removed already (stop and end both looked)
            self.lingering.pop(task.id, None)
            return
        if self.tracker.populated(task.id):
            self.lingering[task.id] = task
            task.lingered = True
            log.info("task %s ended; %d process(es) it started still run", task.id,
                     len(self.tracker.pids(task.id)))  # fmt: skip
        else:
            self.lingering.pop(task.id, None)
            if task.lingered:
                self._judge_sandbox_again(task)
            self._remove_later(task.id)

    def _judge_made(self, task_ids: list[str]) -> None:
        """A pointer git reads was made or written where these sandboxed tasks found it
        missing (``madefiles``): each is judged as its end will judge it
        (``Sources.move_made``), and where that moved anything aside (git outside would
        have read it meanwhile), every sandboxed task running or lingering in that
        workspace is stopped with all it started: which made it cannot be told (the one
        judged first was stopped, and the maker ran on: a review), and the maker may
        make it again (a loop did)."""
        tasks = []
        for task_id in task_ids:
            task = self.live.get(task_id) or self.lingering.get(task_id)
            if task is None:
                self.made_files.forget(task_id)
            elif (sources := task.sources or _started_sources(task.row)) is not None:
                tasks.append((task, sources))
        made: dict[str, list[str]] = {}
        for task, sources in tasks:
            moved = sources.move_made(task.id, time.time(), task.row.started_at)
            if moved and (workspace := _workspace_of(task)) is not None:  # (its ID in the
                said = texts.moved_aside_text(moved, task.id)  # names they were moved to)
                made[workspace] = [*made.get(workspace, []), said]
        everyone = {**self.live, **self.lingering}.values()
        stopped = [task for task in everyone if _workspace_of(task) in made]
        for task in stopped:  # (each told what was moved, by whichever judgement)
            said = " ".join(made[_workspace_of(task) or ""])
            task.sandbox_note = " ".join(n for n in (task.sandbox_note, said) if n)
            log.warning("task %s stopped: %s", task.id, said)
        if stopped:
            stopping = asyncio.get_running_loop().create_task(
                self.stop(stopped, EndReason.SANDBOX_ESCAPE)
            )
            self._resumed_stops.add(stopping)
            stopping.add_done_callback(self._resumed_stops.discard)

    def _judge_sandbox_again(self, task: LiveTask) -> None:
        """A sandboxed task's last process is gone: what was judged as its command ended
        (``worker.Sources.move_made``) is judged again, up to now: a process it left
        running in the sandbox wrote a repository's config later (a review)."""
        sources = _started_sources(task.row)
        if sources is None:
            return
        moved = sources.move_made(task.id, time.time(), task.row.started_at)
        if moved or sources.unjudged:
            log.warning("task %s, its last process gone: %s", task.id,
                        texts.moved_aside_text(moved, task.id, sources.unjudged))  # fmt: skip

    def _after_replies(self, work: Callable[[], object] | None = None) -> None:
        """Do ``work`` once a reply has gone out (see :data:`AFTER_REPLIES`)."""
        if not self._deferred_due:
            self._deferred_due = True
            asyncio.get_running_loop().call_later(AFTER_REPLIES, self.after_replies)
        if work is not None:
            self._deferred.append(work)

    def after_replies(self) -> None:
        """The work that waited for a reply to go out (also as the supervisor stops, before
        the journal's last commit): ends' usage, reaping, one log record of the ends."""
        self._deferred_due = False
        work, self._deferred = self._deferred, []
        for item in work:
            try:
                item()
            except Exception:  # one failure must not keep the others undone
                log.exception("deferred work failed")
        if self._ends_to_log:
            lines, self._ends_to_log = self._ends_to_log, []
            log.info("ended: %s", "; ".join(lines))

    def _log_end(self, line: str) -> None:
        """Log a task's end with the others of its burst, once a reply has gone out: one
        log record costs about as much as the rest of an end."""
        self._after_replies()
        self._ends_to_log.append(line)

    def _record_usage(self, task: LiveTask) -> None:
        """Journal what an ended task used (see :meth:`_record_end`)."""
        self._usage_pending.pop(task.id, None)
        if self.tracker is not None:
            usage = self.tracker.usage(task.id)
            task.row.cpu_seconds, task.row.peak_memory = usage.cpu_seconds, usage.peak_memory
            self.journal.save_row(task.row)

    def _remove_later(self, task_id: str) -> None:
        """Queue an ended task's empty cgroups for removal, done in one batch once ends
        stop arriving (0.2 s without one, 2 s at most): removing a cgroup costs the
        kernel more than anything else in a task's end, and a stop of many tasks answers
        sooner when that work comes after it."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        if not self._removals:
            self._removals_since = now
            loop.call_later(REMOVAL_QUIET, self._flush_removals)
        self._removals[task_id] = now

    def _flush_removals(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        latest = max(self._removals.values(), default=now)
        if now - latest < REMOVAL_QUIET and now - self._removals_since < REMOVAL_PATIENCE:
            loop.call_later(REMOVAL_QUIET, self._flush_removals)
            return
        for task in list(self._usage_pending.values()):  # read before their cgroups go
            self._record_usage(task)
        batch, self._removals = list(self._removals), {}
        tracker = self.tracker
        if tracker is None:
            return

        def remove() -> list[str]:
            return [task_id for task_id in batch if not tracker.remove(task_id)]

        def removed(done: Future[list[str]]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: shutdown tidies
                loop.call_soon_threadsafe(self._kept, done.result())

        with contextlib.suppress(RuntimeError):  # stopping (its last timers): tidy does it
            self.cgroup_ops.submit(remove).add_done_callback(removed)

    def _kept(self, task_ids: list[str]) -> None:
        """Cgroups that could not be removed: one that holds processes again (something
        joined it after its task ended) makes its task linger, visible and stoppable."""
        if self.tracker is None:
            return
        for task_id in task_ids:
            row = self.journal.get(task_id)
            if row is None or not row.status.ended or not self.tracker.populated(task_id):
                continue
            task = self.ended_task(row)
            task.tracked = True
            self.lingering[task_id] = task
            task.lingered = True
            log.warning("task %s: processes joined its cgroup after it ended", task_id)

    def adopt_leftovers(self) -> None:
        """At start: ended tasks whose cgroups still hold processes (an earlier supervisor
        watched them linger) linger here too, visible and stoppable; without cgroups,
        those whose journaled leftovers still run (each the process it was, by its start
        ticks: a pid reused since is another's)."""
        for ended in self.journal.with_leftovers():
            task = self.ended_task(ended)
            task.leftovers = _parse_leftovers(ended.leftovers)
            if ended.status is TaskStatus.RUNNING or ended.id in self.live:
                continue
            if ended.boot_id == boot_id() and self._left_behind(task):
                self.lingering[ended.id] = task
                task.lingered = True
            else:
                self._after_end(task)  # (gone: the column is cleared)
        if self.tracker is None:
            return
        for task_id in self.tracker.task_ids():
            row = self.journal.get(task_id)
            if (
                row is None
                or row.status is TaskStatus.RUNNING
                or row.boot_id != boot_id()  # no cgroup outlives a reboot (nor a simulated one)
                or task_id in self.live
                or not self.tracker.populated(task_id)
            ):
                continue
            task = self.ended_task(row)
            task.tracked = True
            self.lingering[task_id] = task
            task.lingered = True

    def check_leftovers(self) -> None:
        """Housekeeping: finish tasks whose lost monitor's processes are gone, wake the
        stopped monitors of ended jobs, and drop the cgroups of lingering tasks once
        empty."""
        for task in [t for t in self.live.values() if t.monitor_lost]:
            self._finish(task)
        live = list(self.live.values())
        start = self._wake_cursor % len(live) if live else 0
        for task in (live[start:] + live[:start])[:WAKE_LOOKS]:
            self._wake_if_its_job_ended(task)
        self._wake_cursor = start + WAKE_LOOKS
        for task in list(self.lingering.values()):
            self._after_end(task)

    def _recorded_while_it_lingers(self, task: LiveTask) -> ExitRecord | None:
        """The status of a re-adopted task, written by its monitor, which may linger
        after it (a child subreaper, while what the command left runs): read from its
        exit record, as no record pipe tells this supervisor (None: none written)."""
        if not self.subreaper or task.tracked or task.child:
            return None
        record = read_exit_record(task.files.exit)
        return record if record.status is not None else None

    def _wake_if_its_job_ended(self, task: LiveTask) -> None:
        """A command stopped its monitor (``kill -STOP $$``) and ended: its monitor is
        woken to record the status. A waiter's job watch does so at once (F1c); with no
        waiter, or a monitor re-adopted after a restart, nothing else would, and the task
        stayed running for good (a review). Its job has ended when its cgroup is empty, or
        without cgroups when the stopped monitor has no child left running (a failure
        review: such a task stayed running for good, a `wait` for it to its timeout)."""
        row = task.row
        if not row.pid or task.ended.done() or task.monitor_gone is not None:
            return
        if (record := self._recorded_while_it_lingers(task)) is not None:
            self._finish(task, record=record)
            return
        if not processes.stopped(row.pid):
            return
        if task.tracked and self.tracker is not None:
            ended = not self.tracker.populated(task.id)
        else:
            ended = processes.no_child_running(row.pid)
        if ended and (task.child or same_process(row.pid, row.pid_start, row.boot_id, task.id)):
            with contextlib.suppress(OSError):
                os.kill(row.pid, signal.SIGCONT)

    def _record_end(
        self,
        task: LiveTask,
        host_restarted: bool,
        record: ExitRecord | None = None,
        ended_at: float | None = None,
    ) -> None:
        crash_point("before_finish")
        ended = task.monitor_gone
        if host_restarted:
            record = ExitRecord(None, None)
        elif record is None:
            record = read_exit_record(task.files.exit)
        code = record.status
        if self.subreaper and not task.tracked and not host_restarted:  # (also where it
            # ended while no supervisor ran: the list is read as it is found)
            monitors = {t.row.pid for t in self.live.values() if t.row.pid}
            task.leftovers = processes.listed_leftovers(
                task.files.left, task.id, task.row.started_at, monitors, task.row.pid
            )
            task.row.leftovers = leftovers_text(task.leftovers)  # (for the next supervisor)
        never_started = code is None and record.never_started
        unrecorded_exit = False
        if code is None and not never_started and ended is not None and ended.code is not None:
            code, unrecorded_exit = ended.code, True  # no exit record (a full disk): our
            # child's own exit status
        row = task.row
        # (A sandboxed task started before `.cwd` existed has it in its exit record.)
        captured = (task.files.final_dir() if row.sandbox else None) or record.cwd
        exists = self._directory_test(row)
        task.final_cwd = final_cwd(captured, row.cwd, isdir=exists)
        if captured is None and not exists(row.cwd):  # (`rm -rf .`: a lone command is
            captured = row.cwd  # exec'd, its trap never runs, nothing is captured; a review)
        if (removed := removed_cwd(captured, isdir=exists)) is not None:  # (said nothing,
            # and a follow-cd caller's next command ran where it had been: a trial)
            nearest = None if exists(row.cwd) else guard.nearest_existing_dir(row.cwd)
            said = [task.cwd_note, texts.removed_cwd_text(removed, row.cwd, nearest)]
            task.cwd_note = "\n".join(note for note in said if note)
        limited = self.memory_limit is not None
        usage = None
        if task.tracked and self.tracker is not None:
            if task.attached and not limited:  # its caller's result has none: read later
                self._usage_pending[row.id] = task
                self._after_replies(lambda: self._record_usage(task))
            else:
                usage = self.tracker.usage(row.id, oom=limited)
        if usage is not None:  # what it used, recorded with its end (one journal write)
            row.cpu_seconds, row.peak_memory = usage.cpu_seconds, usage.peak_memory
        oom = usage is not None and usage.oom_killed
        row.status = status_for(code, task.stop_reason is not None)
        # (One found ended as this supervisor came up ended then, not now: a review.)
        row.exit_code, row.ended_at = code, ended_at or time.time()
        if host_restarted:
            row.end_reason = EndReason.HOST_RESTART
        elif never_started:
            row.end_reason = EndReason.NOT_STARTED
        elif code is None and task.monitor_lost and task.stop_reason is not None:
            # (its monitor killed, its command stopped by a stop: "killed", its status
            # unknown; it read "lost: … it had already ended", a review)
            row.status, row.end_reason = TaskStatus.KILLED, task.stop_reason
        elif code is None:
            row.end_reason = EndReason.MONITOR_LOST
        elif oom and task.stop_reason is None:
            row.status, row.end_reason = TaskStatus.KILLED, EndReason.MEMORY_LIMIT
        else:
            row.end_reason = task.stop_reason
        if (
            row.owner is Owner.FOREGROUND
            and task.attached == 0
            and not task.child
            and not task.interrupted  # stopped by its own caller (Ctrl+C): no notice
        ):
            # Re-adopted after a restart, ended before its caller came back: a notice.
            row.owner, row.background_reason = Owner.BACKGROUND, BackgroundReason.CALLER_LOST
            row.owner_changed_at = time.time()
        notice_session = row.session if row.owner is Owner.BACKGROUND else None
        # A lost caller's that may still attach: kept from the session's readers till then
        # (another reader took it, and the caller got the result too: a chaos trial).
        lost = row.background_reason is BackgroundReason.CALLER_LOST
        hold = task.caller_back_by if lost and (task.caller_back_by or 0) > time.time() else None
        self.unrecorded.discard(row.id)
        self.journal.finish_task(row, notice_session, hold, row.interactive)  # (held if the
        # disk refuses it; an interactive one's prompt may have had a notice)
        # (none of the disk's where the tasks folder was removed, `rm -rf STATE/tasks`:
        # "… recorded once there is space again" was said, a trial; its logs are gone,
        # which a read says, B6d)
        on_disk = self.tasks_dir.is_dir()
        problem = self.journal.problem or (
            (  # statvfs: a syscall, no disk access
                disk_problem(self.tasks_dir, new_files=False)
                or ("the exit record could not be written" if unrecorded_exit else None)
            )
            if on_disk
            else None
        )
        if problem:
            task.storage_note = (
                f"{problem} in the state dir {self.tasks_dir.parent}: output it wrote "
                "meanwhile may be lost, as its log could not grow; its end is kept, and "
                "recorded once there is space again"  # (it said the output would be written
                # then, which no one can: a trial)
                if problem != JOURNAL_LOCKED
                else f"{problem} in the state dir {self.tasks_dir.parent}: its end is kept, "
                "and recorded once the journal takes writes again"
            )
            if notice_session is not None:  # its notice says so (it said nothing, where a
                row.storage_note = task.storage_note  # foreground result did: a review)
                self.journal.save_row(row)
        self._log_end(f"{row.id} {row.status} (exit {code})")

    # --- ownership and stopping --------------------------------------------------------

    def _set_owner(self, task: LiveTask, owner: Owner, reason: BackgroundReason | None) -> None:
        now = time.time()
        task.row.owner, task.row.background_reason, task.row.owner_changed_at = owner, reason, now
        self.journal.save_row(task.row)

    def move_to_foreground(self, task: LiveTask) -> None:
        """A lost caller came back (``attach``): the task is its foreground command again."""
        task.backgrounded.clear()
        task.caller_back_by = None  # (back: a later end is news at once, if it goes again)
        self._set_owner(task, Owner.FOREGROUND, None)
        if (watch := self._prompt_watches.pop(task.id, None)) is not None:
            watch.cancel()  # (its prompt reaches it: no notice)

    def move_to_background(self, task: LiveTask, reason: BackgroundReason) -> bool:
        """Foreground → background in the journal only; the process is not touched.

        Returns False when the task had already ended or was already in the background.
        """
        if task.ended.done() or task.row.owner is Owner.BACKGROUND:
            return False
        self._set_owner(task, Owner.BACKGROUND, reason)
        task.backgrounded.set()
        if reason is not BackgroundReason.INPUT:  # (its prompt: its caller has it)
            self.announce_prompt(task)
        return True

    def announce_prompt(self, task: LiveTask, again: bool = False) -> None:
        """An interactive task whose caller went away (or never got the prompt it
        returned at), or that went on in the background (its timeout, Ctrl+B, started
        there): the prompt it waits at becomes a notice of its session, the result that
        never reached its caller (ND5). Else no one knew its ID, and it waited for
        ever (a cancelled call's REPL, a host killed: a trial; an installer that asked
        after its timeout, its model told it would hear of its end: a review)."""
        if not task.row.interactive or task.ended.done() or task.id in self._prompt_watches:
            return
        watch = asyncio.get_running_loop().create_task(self._prompt_notice(task, again))

        def done(_: object) -> None:
            if self._prompt_watches.get(task.id) is watch:  # (not a later one's)
                del self._prompt_watches[task.id]

        self._prompt_watches[task.id] = watch
        watch.add_done_callback(done)

    async def _prompt_notice(self, task: LiveTask, again: bool) -> None:
        while not task.ended.done():
            task.connect_terminal()  # (again, if its link broke)
            if task.terminal is None:
                return
            waiting = asyncio.ensure_future(task.terminal.waiting_for_input())
            try:
                await asyncio.wait(
                    [task.ended, waiting], timeout=PROMPT_RECHECK_S,
                    return_when=asyncio.FIRST_COMPLETED,
                )  # fmt: skip
            finally:
                waiting.cancel()
            if task.waiting_for_input and task.row.owner is Owner.BACKGROUND:
                self.journal.post_prompt_notice(task.row, again)
                return

    def prompt_settled(self, task: LiveTask) -> None:
        """A result showed the prompt the task waits at (TaskOutput, TaskInput), or an
        answer was typed: no notice of it, neither one to come nor one not delivered yet
        (stale once answered). A running task's one notice is its prompt's."""
        watch = self._prompt_watches.pop(task.id, None)
        if watch is not None:
            watch.cancel()
        if not task.ended.done():
            self.journal.mark_delivered(task.row.session, [task.id])

    async def stop(self, tasks: Iterable[LiveTask], reason: EndReason = EndReason.STOPPED) -> None:
        """Stop tasks with every process they started and wait until their ends are
        recorded; an ended task that left processes running (lingering) has those stopped,
        as has, without cgroups, what a stopped command left as it ended."""
        tasks = [t for t in tasks if not t.ended.done() or t.id in self.lingering]
        if not tasks:
            return
        for task in tasks:
            task.stopping += 1
        try:
            await self._stop(tasks, reason)
        finally:
            for task in tasks:
                task.stopping -= 1

    async def _stop(self, tasks: list[LiveTask], reason: EndReason) -> None:
        """:meth:`stop`'s work, once its tasks know a stop is under way."""
        intents = []
        for task in tasks:
            if not task.ended.done():
                # The first stop's reason stays (a TaskStop during the timeout's grace
                # period made a task cut at its timeout "stopped", and the reverse; a review)
                task.stop_reason = task.stop_reason or reason
                if task.row.end_reason is None:  # journaled before any signal: see adopt
                    task.row.end_reason = reason
                    intents.append(task.row)
                    mark_stopping(task.files.exit, STOP_MARKS[reason])
        if intents:
            self.journal.record_end_reasons(intents)
            self.journal.write_deferred()  # (a full disk holds it: the stop goes on)
        walked = [t for t in tasks if not t.tracked]
        if walked:
            for task in walked:
                self._tell_stopping(task)
            await self._jobs_started(walked, lambda t: not t.row.pid or job_forked(t.row.pid))
            stopping = [t for t in walked if t.row.pid and not t.ended.done()]
            await self._walk_and_stop(stopping, [t for t in walked if t.ended.done()])
            await self._stop_what_they_left(stopping)
            for task in walked:
                if task.ended.done():
                    self._after_end(task)
        tracked = [t for t in tasks if t.tracked]
        if tracked:
            await self._stop_cgroups(tracked)
        for task in tasks:
            if task.monitor_lost:  # its processes are gone now
                await self._record_of_unwatched_monitor(task)
                self._finish(task)
        running = [t.ended for t in tasks if not t.ended.done()]
        if running:
            await asyncio.wait(running, timeout=self.stop_grace + 2)

    async def _stop_what_they_left(self, stopped: list[LiveTask]) -> None:
        """Stop what these tasks' commands started as they were stopped (a TERM trap's
        ``setsid env -i daemon &``): its monitor adopted it as the job ended, listed it
        as it recorded the status, and exited: reparented to init, it is in no tree the
        stop walked. The list is read as each end is recorded; those processes are
        stopped as any lingering task's are, by pid and start time."""
        recording = [t.ended for t in stopped if not t.ended.done() and not t.monitor_lost]
        if recording:
            await asyncio.wait(recording, timeout=STOP_RECORD_PATIENCE)
        await self._walk_and_stop([], [t for t in stopped if t.ended.done()])

    async def _walk_and_stop(self, running: list[LiveTask], ended: list[LiveTask]) -> None:
        """Stop, by the process table (``worker.stop_trees``), the trees of ``running``
        tasks' monitors and what ``ended`` tasks left behind (by pid and start time)."""
        lingering = {t.id: (t, m) for t in ended if (m := self._lingering_monitor(t))}
        pairs = [(t.id, t.row.pid or 0) for t in running] + [
            (task_id, monitor) for task_id, (_, monitor) in lingering.items()
        ]
        left = [(t.id, pid) for t in ended if t.id not in lingering for pid in self._left_behind(t)]
        if not pairs and not left:
            return
        protected = {t.row.pid for t in self.live.values() if t.row.pid}
        protected |= {m for t in self.lingering.values() if (m := self._lingering_monitor(t))}
        ticks = {pid: t.leftovers[pid] for t in ended for pid in t.leftovers}
        # Each monitor is held (stopped) through the stop: a child subreaper, it adopts
        # what its command's processes fork as they exit, until every one is gone. Let
        # go as its job died of the SIGTERM, it exited, and what a process that trapped
        # it forked next, in a new session with no tag, hopped on under init: a trial.
        held = [(task, monitor) for task in running if (monitor := self._monitor(task))]
        held += lingering.values()
        for _, monitor in held:
            with contextlib.suppress(OSError):
                os.kill(monitor, signal.SIGSTOP)
        try:
            await asyncio.to_thread(
                stop_trees, pairs, protected=protected, grace=self.stop_grace, roots=left,
                root_runs=lambda pid: processes.runs(pid, ticks[pid]),
            )  # fmt: skip
        finally:
            for task, monitor in held:  # (a re-adopted one's pid checked again: a command
                # may have killed it, its pid reused)
                if monitor in (self._monitor(task), self._lingering_monitor(task)):
                    with contextlib.suppress(OSError):
                        os.kill(monitor, signal.SIGCONT)

    def _lingering_monitor(self, task: LiveTask) -> int:
        """An ended task's monitor that still runs, a child subreaper lingering while
        what its command left runs, holding in its tree what they fork as they exit
        (``worker.monitor``); 0: none (cgroups track the task, or it has exited)."""
        row = task.row
        if not self.subreaper or task.tracked or not row.pid or not task.ended.done():
            return 0
        return row.pid if same_process(row.pid, row.pid_start, row.boot_id, task.id) else 0

    @staticmethod
    def _monitor(task: LiveTask) -> int:
        """A running task's monitor that may be signalled (0: none): ours and not reaped,
        or one re-adopted that is still the same process."""
        row = task.row
        if not row.pid or task.monitor_gone is not None or task.ended.done():
            return 0
        if task.child or same_process(row.pid, row.pid_start, row.boot_id, task.id):
            return row.pid
        return 0

    async def interrupt(self, task: LiveTask, sig: int = signal.SIGINT) -> bool:
        """Ctrl+C for a running task's command (``worker.interrupt_job``), through its
        monitor as this supervisor knows it (ours, or re-adopted and still the same
        process), once a task just started has forked its job, as for a stop; False:
        nothing to interrupt."""
        await self._jobs_started([task], lambda t: not t.row.pid or job_forked(t.row.pid))
        monitor = self._monitor(task)
        if not monitor:
            return False
        # (a job forked ahead that dies of it before it took its command: none runs it
        # after, as a terminal's Ctrl+C drops a command not started; its monitor ran it
        # in another job, and the interrupt was lost, a review)
        tell_stopping(monitor, resume=False)
        return interrupt_job(monitor, sig)

    def pipe_at_next_write(self, task: LiveTask) -> None:
        """SIGPIPE to a task's job once its command writes again: its CLI's reader has gone
        (`run -- yes | head -1` ran on to its log's cap, a trial), as a pipe's writer gets
        it as it next writes (not before: silent work goes on to its end, or its next
        line)."""
        if task.ended.done() or task.id in self._pipe_watches:
            return
        written = file_size(task.row.output_path)
        watch = asyncio.get_running_loop().create_task(self._pipe_when_written(task, written))
        self._pipe_watches[task.id] = watch
        watch.add_done_callback(lambda _: self._pipe_watches.pop(task.id, None))

    async def _pipe_when_written(self, task: LiveTask, written: int) -> None:
        stop = asyncio.Event()
        task.ended.add_done_callback(lambda _: stop.set())
        async for _ in changes(task.row.output_path, stop):
            if file_size(task.row.output_path) > written:
                await self.interrupt(task, signal.SIGPIPE)
                return

    def _tell_stopping(self, task: LiveTask) -> None:
        """Tell a running task's monitor of its stop (see :func:`worker.tell_stopping`);
        a command's `kill -STOP $$` may have stopped it (F1c: it records nothing until
        continued)."""
        if monitor := self._monitor(task):
            tell_stopping(monitor)

    async def _record_of_unwatched_monitor(self, task: LiveTask, timeout: float = 2.0) -> None:
        """A monitor this supervisor could not watch (its pid was not its own any more)
        may still live, outside the stopped processes: its status comes as it exits."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (
            read_exit_file(task.files.exit) is None
            and await asyncio.to_thread(lambda: bool(tagged_processes({task.id}).get(task.id)))
            and loop.time() < deadline
        ):
            await asyncio.sleep(0.02)

    async def _jobs_started(
        self, tasks: list[LiveTask], started: Callable[[LiveTask], bool]
    ) -> None:
        """Wait until the jobs of those of these tasks that just started can be signalled
        (``started``), or the tasks end. A monitor started for this very command may still
        be forking its job (it reads the command first: a walk of its tree would miss the
        job, which then ran its command after the stop, a CI flake), or the job may still
        be moving into its cgroup (on an idle host the move waits for a kernel grace
        period: a SIGTERM sent to the empty cgroup would miss it)."""
        fresh = [t for t in tasks if time.time() - t.row.started_at < JOIN_PATIENCE]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + JOIN_PATIENCE
        delay = 0.001
        while loop.time() < deadline and any(
            not t.ended.done() and not t.monitor_lost and not started(t) for t in fresh
        ):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.01)

    def _terminate_missed(self, task: LiveTask, signalled: set[int], marks: dict[str, int]) -> None:
        """Once every process a stop signalled is gone, SIGTERM those in the task's cgroup
        that were forked before the SIGTERM went (their pids given out no later than the
        last one then, ``marks``): forked as it came, it missed them (a loop's `sleep
        100 &` got only the SIGKILL after the grace period, a trial). What a trap started
        after it (a detached cleanup, its shell gone) has its grace period (a review)."""
        assert self.tracker is not None
        found = self.tracker.pids(task.id)
        mark = marks.get(task.id)
        if not found or mark is None or not signalled.isdisjoint(found):
            return
        missed = [pid for pid in found if forked_by(pid, mark)]
        if missed:
            if (now := last_pid()) is not None:
                marks[task.id] = now
            signalled.update(self.tracker.terminate(task.id, missed))

    async def _stop_cgroups(self, tasks: list[LiveTask]) -> None:
        """SIGTERM every process in the tasks' cgroups; SIGKILL (``cgroup.kill``, which
        no fork outruns) what is left after the grace period. Costs the same whatever
        else runs on the host: nothing but the tasks' own cgroups is read."""
        assert self.tracker is not None
        tracker = self.tracker
        loop = asyncio.get_running_loop()
        await self._jobs_started(tasks, lambda t: tracker.populated(t.id))
        signalled: dict[str, set[int]] = {}
        marks: dict[str, int] = {}  # (the last pid given out as each task's SIGTERM went)
        for task in tasks:
            self._tell_stopping(task)  # (its job may not have taken its command yet)
            pids = tracker.pids(task.id)
            if (mark := last_pid()) is not None:  # (before the signal: a trap's forks
                marks[task.id] = mark  # come after it, on another CPU meanwhile)
            signalled[task.id] = set(tracker.terminate(task.id, pids))
        deadline = loop.time() + self.stop_grace
        monitored = [t.ended for t in tasks if not t.ended.done() and not t.monitor_lost]
        if monitored:  # the jobs' ends arrive as events (their monitors exit)
            await asyncio.wait(monitored, timeout=self.stop_grace)
        delay = 0.001

        def still_populated() -> list[LiveTask]:  # (an ended task found empty is queued)
            return [t for t in tasks if t.id not in self._removals and tracker.populated(t.id)]

        while (left := still_populated()) and loop.time() < deadline:
            for task in left:
                self._terminate_missed(task, signalled[task.id], marks)
            await asyncio.sleep(delay)  # what the jobs left behind, after SIGTERM
            delay = min(delay * 2, 0.02)
        for task in left:
            tracker.kill(task.id)
        deadline = loop.time() + 2
        while (left := [t for t in left if tracker.populated(t.id)]) and loop.time() < deadline:
            await asyncio.sleep(0.005)
        for task in tasks:
            if task.ended.done():
                self._after_end(task)


INPUT_QUIET_ENV = "WAVE_INPUT_QUIET_S"
"""Quiet seconds before a blocked read counts as waiting for input (SPEC CF19)."""


def _ended_at(task: LiveTask, host_restarted: bool) -> float:
    """When a task found ended as this supervisor came up ended, at the latest: as its
    monitor recorded its status (the exit record's time), or as the host went down;
    now where no record says it (its monitor was killed)."""
    if host_restarted:
        return float(psutil.boot_time())
    record = read_exit_record(task.files.exit)
    if record.status is None and not record.never_started:
        return time.time()
    try:
        return os.stat(task.files.exit).st_mtime
    except OSError:
        return time.time()


def _workspace_of(task: LiveTask) -> str | None:
    """The sandbox workspace of a task (from what its start found missing)."""
    sources = task.sources or _started_sources(task.row)
    found = [p[:-2] for p in (sources.absent if sources else []) if p.endswith("/*")]
    return found[0] if found else None


def _started_sources(row: TaskRow) -> Sources | None:
    """What a sandboxed task that an earlier supervisor started found missing, and the
    user's links on the way to start-up files (journaled with it, a link as a pair):
    those it made or replaced are moved aside all the same as it ends."""
    if not row.sandbox_absent:
        return None
    try:
        judged = json.loads(row.sandbox_absent)
    except ValueError:
        return None
    absent = [p for p in judged if isinstance(p, str) and os.path.isabs(p)]
    links = [
        (p[0], p[1])
        for p in judged
        if isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p)
        and os.path.isabs(p[0])
    ]  # fmt: skip
    known = next((p["nested"] for p in judged if isinstance(p, dict) and "nested" in p), None)
    nested = None
    if isinstance(known, list):
        pairs = [p for p in known if isinstance(p, list) and len(p) == 2]
        nested = {(p[0], p[1]) for p in pairs if all(isinstance(x, int) for x in p)}
    return Sources(absent=absent, links=links, nested_known=nested)


def leftovers_text(leftovers: dict[int, int]) -> str | None:
    return json.dumps({str(pid): ticks for pid, ticks in leftovers.items()}) if leftovers else None


def _parse_leftovers(text: str | None) -> dict[int, int]:
    """A journaled leftovers list (bad entries dropped: the journal is ours, but a
    leftovers list must never keep a supervisor from starting)."""
    try:
        found = json.loads(text or "{}")
        return {
            int(pid): ticks
            for pid, ticks in found.items()
            if pid.isdigit() and isinstance(ticks, int) and int(pid) > 1
        }
    except (ValueError, AttributeError):
        return {}


def _quiet_seconds(text: str) -> str:
    """``WAVE_INPUT_QUIET_S`` as plain seconds (a duration: ``1``, ``0.5``, ``2s``).

    Raises:
        InvalidInputError: not a duration, naming the variable.
    """
    try:
        return repr(parse_duration(text))
    except InvalidInputError as exc:
        raise InvalidInputError(f"{INPUT_QUIET_ENV}: {exc}") from None


def _names_its_pid(command: str) -> bool:
    """Whether a bash command names its shell's pid (``$$``) or its parent's (``PPID``),
    and fits the environment string a shell of its own gets it in: run in a subshell of
    its monitor, its ``$$`` was the monitor's, so `kill $$; echo after` went on to print,
    and `kill -9 $$` lost the status (two trials), and its ``$PPID`` the supervisor's
    (`kill $PPID` stopped it: a trial); its own bash makes them the command's and its
    monitor's, as under `bash -c` they are the command's and its caller's. (Others run
    in the subshell: a process start fewer.)"""
    if "$$" not in command and "${$" not in command and "PPID" not in command:  # (`${$}`,
        return False  # `${$%x}`: a review)
    return len(command.encode("utf-8", "surrogateescape")) <= ENVIRONMENT_COMMAND_LIMIT


def _check_environment_string(command: str) -> None:
    """Refuse a command too long for the environment string it reaches its shell in (as
    given, or wrapped for a terminal or sandbox and quoted).

    Raises:
        InvalidInputError: over :data:`ENVIRONMENT_COMMAND_LIMIT`, saying what to do.
    """
    size = len(command.encode("utf-8", "surrogateescape"))
    if size > ENVIRONMENT_COMMAND_LIMIT:
        raise InvalidInputError(
            f"an interactive, sandboxed or zsh command (or one run with BASH_ENV) can be at most "
            f"{ENVIRONMENT_COMMAND_LIMIT // 1024} KiB (it reaches its shell in one environment "
            f"string, which the kernel limits to 128 KiB); this one needs {-(-size // 1024)} "
            "KiB there: write it to a script file and run that"
        )
