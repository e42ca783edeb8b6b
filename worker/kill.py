"""Stop a task's whole process tree (SPEC B3, X3).

A snapshot taken before signalling finds the task's processes: the monitor's
descendants, and every process of ours whose environment carries the task's
``WAVE_TASK_ID`` (descendants that escaped with ``setsid`` or a double fork). The job's
process group gets SIGTERM, then every process left gets SIGKILL after a grace period.
Monitors and the supervisor are never signalled: the monitor must live to record the
exit status, and a process outside the task is never touched.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import psutil

TAG = "WAVE_TASK_ID"


def process_tag(pid: int) -> str | None:
    """The ``WAVE_TASK_ID`` in a process's environment (``None``: none, or not readable)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    key = TAG.encode() + b"="
    for item in data.split(b"\0"):
        if item.startswith(key):
            return item[len(key) :].decode(errors="replace")
    return None


if hasattr(os, "getuid"):
    _USER_ATTRS = ["uids"]
    _MY_UID = os.getuid()

    def _is_ours(info: dict[str, Any]) -> bool:
        return info["uids"] is not None and info["uids"].real == _MY_UID

    def _may_signal_others() -> bool:
        return os.geteuid() == 0

else:  # Windows: no uids; the same user name
    _USER_ATTRS = ["username"]
    _MY_NAME = psutil.Process().username()

    def _is_ours(info: dict[str, Any]) -> bool:
        return bool(info["username"] == _MY_NAME)

    def _may_signal_others() -> bool:
        return False


@dataclass
class ProcessTable:
    """One pass over this user's processes: parent links and ``WAVE_TASK_ID`` tags. Run
    as root, every user's parent links (a task's command that took another uid, `setpriv
    --reuid`, is in its monitor's tree all the same: it ran on after a stop, a review);
    tags are this user's alone."""

    children: dict[int, list[int]] = field(default_factory=dict)
    parents: dict[int, int] = field(default_factory=dict)
    tags: dict[int, str] = field(default_factory=dict)

    @classmethod
    def read(cls, want_tags: Collection[str]) -> ProcessTable:
        table = cls()
        on_proc = os.path.isdir("/proc/self")
        everyone = _may_signal_others()
        for proc in psutil.process_iter(["ppid", *_USER_ATTRS]):
            try:
                ours = _is_ours(proc.info)
                if not (ours or everyone):
                    continue
                table.children.setdefault(proc.info["ppid"], []).append(proc.pid)
                table.parents[proc.pid] = proc.info["ppid"]
                if want_tags and ours:
                    tag = process_tag(proc.pid) if on_proc else proc.environ().get(TAG)
                    if tag is not None and tag in want_tags:
                        table.tags[proc.pid] = tag
            except (psutil.Error, OSError):
                continue
        return table

    def descendants(self, pid: int, fence: Collection[int] = ()) -> set[int]:
        """``pid``'s descendants, never ``fence`` nor what is below it (the supervisor,
        the monitors: a supervisor a client in a task had started carried the task's
        tag, and a stop of that task took every process under it, other tasks' jobs too:
        a review)."""
        found: set[int] = set()
        todo = list(self.children.get(pid, ()))
        while todo:
            child = todo.pop()
            if child not in found and child not in fence:
                found.add(child)
                todo.extend(self.children.get(child, ()))
        return found

    def monitors(self) -> dict[str, int]:
        """For each tag, its monitor, from which the command and its children descend: a
        topmost process of the tag (whose parent has another tag or none) that leads its
        session and names the task's exit record in its argv, as every monitor does. Not
        a job whose monitor was killed, nor a daemon the command started (each is a
        topmost process then: a supervisor restarted took one for the monitor, and the
        task for a healthy one, its process spared by a stop; a review)."""
        found: dict[str, int] = {}
        for pid, tag in self.tags.items():
            if (
                self.tags.get(self.parents.get(pid, 0)) != tag
                and _leads_its_session(pid)
                and _names_exit_record(pid, tag)
            ):
                found[tag] = pid
        return found

    def tagged(self) -> dict[str, set[int]]:
        by_task: dict[str, set[int]] = {}
        for pid, tag in self.tags.items():
            by_task.setdefault(tag, set()).add(pid)
        return by_task


def _names_exit_record(pid: int, task_id: str) -> bool:
    try:
        argv = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    return any(os.path.basename(arg) == f"{task_id}.exit" for arg in argv)


def _leads_its_session(pid: int) -> bool:
    if not hasattr(os, "getsid"):  # (Windows: no sessions)
        return True
    try:
        return os.getsid(pid) == pid
    except OSError:
        return False


def job_forked(monitor_pid: int) -> bool:
    """Whether a monitor has forked its job, or is gone. A stop walks the monitor's tree:
    a job forked a moment later is in no tree it walked, and would run its command after
    the stop (the monitor of a long command reads it first: ~15 ms for 1 MB). The job is
    the child that leads a process group of its own: not the monitor's own `$(…)` nor
    the `cat` an old bash reads its instructions with (a review)."""
    children = _children(monitor_pid)
    if children is None:
        return True
    if not hasattr(os, "getpgid"):  # (Windows: no process groups to tell them apart)
        return bool(children)
    return any(_leads_its_group(child) for child in children)


def interrupt_job(monitor_pid: int, sig: int = signal.SIGINT) -> bool:
    """Ctrl+C for a task (SPEC B3b): SIGINT to its job's process group, as a terminal
    sends it to its foreground job, so the command decides (pytest prints its summary, a
    bash waiting for a command that SIGINT does not end goes on). Sent to the group, not
    through the monitor, whose forwarding interrupts its own wait for the job (bash 5.2
    may lose the status then: F1b), and a Python monitor forwards nothing. False: no job
    to interrupt (not forked yet, or ended; Windows has no process groups). ``sig``: another
    signal to the group (SIGPIPE: its reader gone)."""
    if not hasattr(os, "killpg"):
        return False
    for child in _children(monitor_pid) or []:
        if _leads_its_group(child):  # (the job: see job_forked; a child of the monitor's,
            with contextlib.suppress(ProcessLookupError):  # unreaped, so its pid and
                os.killpg(child, sig)  # group are its own)
                return True
    return False


def _children(monitor_pid: int) -> list[int] | None:
    """A process's children, or None: it is gone."""
    try:
        with open(f"/proc/{monitor_pid}/task/{monitor_pid}/children", "rb") as fh:
            return [int(pid) for pid in fh.read().split()]
    except (OSError, ValueError):  # exited, or no such list here (macOS): psutil says which
        try:
            return [child.pid for child in psutil.Process(monitor_pid).children()]
        except psutil.Error:
            return None


def last_pid() -> int | None:
    """The last pid this pid namespace gave out (``ns_last_pid``), None where it cannot be
    read: see :func:`forked_by`."""
    try:
        with open("/proc/sys/kernel/ns_last_pid", "rb") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return None


@functools.cache
def _pid_max() -> int:
    try:
        with open("/proc/sys/kernel/pid_max", "rb") as fh:
            return int(fh.read())
    except (OSError, ValueError):
        return 1 << 22


def forked_by(pid: int, mark: int) -> bool:
    """Whether ``pid`` was given out no later than ``mark`` (:func:`last_pid` read then):
    pids are given out in turn and wrap around at ``pid_max`` (32768 here: a test run
    goes round in minutes), so "before" is the half of the circle behind the mark."""
    return (mark - pid) % _pid_max() < _pid_max() // 2


def _leads_its_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:  # (gone meanwhile)
        return False


def tagged_processes(task_ids: Collection[str]) -> dict[str, set[int]]:
    """Processes of this user tagged with one of ``task_ids``, in one pass over the table."""
    if not task_ids:
        return {}
    return ProcessTable.read(task_ids).tagged()


@dataclass
class TaskTree:
    """The processes of one task at one moment, and the monitor that must be spared."""

    task_id: str
    monitor_pid: int
    job_pgid: int | None = None
    pids: set[int] = field(default_factory=set)


def snapshot(
    tasks: Iterable[tuple[str, int]],
    protected: Collection[int],
    roots: Iterable[tuple[str, int]] = (),
    root_runs: Callable[[int], bool] = lambda pid: True,
) -> list[TaskTree]:
    """Find the processes of each ``(task_id, monitor_pid)`` (its monitor's tree while
    that pid carries the task's tag, and every process that does), never listing ``protected``;
    ``roots``: ``(task_id, pid)`` of processes an ended task left behind, each listed with
    its descendants, while ``root_runs`` says it is still the process listed (not a
    reused pid)."""
    protected = set(protected)
    trees = [TaskTree(task_id, monitor_pid) for task_id, monitor_pid in tasks]
    table = ProcessTable.read({t.task_id for t in trees} | {task_id for task_id, _ in roots})
    tagged = table.tagged()
    for task_id, root in roots:
        if not root_runs(root):
            continue
        tree = TaskTree(task_id, 0, pids={root} | table.descendants(root, protected))
        tree.pids -= protected
        trees.append(tree)
    for tree in trees:
        if not tree.monitor_pid:
            continue
        pids = set(tagged.get(tree.task_id, ()))
        # (with what they started: in a new session with no tag, a TERM trap's daemon,
        # whose parent died at the SIGKILL, ran on under init, a trial)
        pids |= {d for pid in pids - protected for d in table.descendants(pid, protected)}
        # Its tree and job group only while the monitor is the task's (tagged): a monitor
        # gone, its pid another's, led a review's stop to kill that stranger's children
        # and process group.
        if table.tags.get(tree.monitor_pid) == tree.task_id:
            pids |= table.descendants(tree.monitor_pid, protected)
            direct = table.children.get(tree.monitor_pid)
            if direct and hasattr(os, "getpgid"):
                with contextlib.suppress(OSError):
                    tree.job_pgid = os.getpgid(direct[0])
        pids.discard(tree.monitor_pid)
        tree.pids = pids - protected
        if tree.job_pgid in protected:
            tree.job_pgid = None
    return trees


def _signal(tree: TaskTree, hard: bool, use_groups: bool) -> None:
    """SIGTERM (``hard``: SIGKILL) the job's group and every process of the snapshot;
    SIGCONT after SIGTERM, so that a stopped (paused) process gets it now, not only
    SIGKILL after the grace period (as systemd and bash's ``kill`` do).

    Without process groups (Windows) psutil's terminate/kill reach each process of the
    tree walk instead (TerminateProcess there)."""
    if use_groups and tree.job_pgid and tree.job_pgid > 1:
        with contextlib.suppress(OSError):
            os.killpg(tree.job_pgid, signal.SIGKILL if hard else signal.SIGTERM)
            if not hard:
                os.killpg(tree.job_pgid, signal.SIGCONT)
    for pid in tree.pids:
        with contextlib.suppress(psutil.Error):  # gone meanwhile: nothing to signal
            proc = psutil.Process(pid)
            proc.kill() if hard else proc.terminate()
            if not hard and use_groups:  # (Windows has no SIGCONT)
                proc.send_signal(signal.SIGCONT)


def _forked_before(tree: TaskTree, mark: int | None) -> TaskTree:
    """What of a tree was forked before the last pid given out was ``mark`` (its group
    left out: a trap's cleanup is in it): what the signal missed as it was forked, not
    what a trap that ran on it started later (it has the grace period: a review), or
    all of it where ``mark`` is unknown."""
    if mark is None:
        return tree
    return TaskTree(
        tree.task_id, tree.monitor_pid, None, {p for p in tree.pids if forked_by(p, mark)}
    )


def _alive(pids: Iterable[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.Error:
            pass
    return alive


def stop_trees(
    tasks: Iterable[tuple[str, int]],
    *,
    protected: Collection[int] = (),
    grace: float = 3.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    use_groups: bool = hasattr(os, "killpg"),
    roots: Iterable[tuple[str, int]] = (),
    root_runs: Callable[[int], bool] = lambda pid: True,
) -> list[TaskTree]:
    """SIGTERM every task's processes, then SIGKILL what is left after ``grace`` seconds.

    Zombies count as gone (a slow init may leave them for a while). When the signalled
    processes are gone a fresh snapshot catches children forked as the signal came
    (not what a trap started after it).

    Args:
        tasks: ``(task_id, monitor_pid)`` pairs to stop together (one process-table scan).
        protected: pids never signalled (the supervisor, every task's monitor).
        grace: seconds between SIGTERM and SIGKILL.
        clock, sleep: injectable for tests of the escalation.
        use_groups: signal the job's process group too (POSIX); off, the tree walk and
            the tags alone find every process (Windows, and tests of that path).
        roots: ``(task_id, pid)`` of processes ended tasks left behind: stopped with
            their descendants, each while ``root_runs(pid)`` (its identity still holds).

    Returns:
        The first snapshots, as signalled.
    """
    protected = {os.getpid(), *protected}
    tasks, roots = list(tasks), list(roots)
    first = trees = _living(snapshot(tasks, protected, roots, root_runs))
    found_at = _now()
    groups = {t.task_id: JobGroup(t.job_pgid, found_at) for t in first if t.job_pgid and use_groups}

    def again(living: bool = True) -> list[TaskTree]:
        """The processes now (``living``: those not dead since the look): the job's
        group as it was first found too, when its monitor no longer vouches for it (a
        job that died of the SIGTERM ends its monitor: what its group forked after the
        first snapshot, without the tag, ran on; a trial)."""
        trees = snapshot(tasks, protected, roots, root_runs)
        table: ProcessTable | None = None  # (one pass for every task's group, not one each)
        for tree in trees:
            group = groups.get(tree.task_id)
            if tree.job_pgid is None and group is not None and group.still_the_jobs():
                tree.job_pgid = group.pgid
                members = group.members()  # (and what they started, in a new session)
                table = table or ProcessTable.read(())
                started = {d for pid in members for d in table.descendants(pid, protected)}
                tree.pids |= (members | started) - protected
        return _living(trees) if living else trees

    mark = last_pid()  # (before the signal: what a trap forks after it comes later)
    for tree in trees:
        _signal(tree, False, use_groups)
    deadline = clock() + grace
    while clock() < deadline:
        if not any(_alive(t.pids) for t in trees):
            trees = again()
            if not trees:
                break  # (maybe: see _frozen)
            missed = [_forked_before(tree, mark) for tree in trees]
            mark = last_pid() if mark is not None else None
            for tree in missed:  # forked after the first snapshot, before the signal
                _signal(tree, False, use_groups)
        sleep(0.02)
    trees = _frozen(again, use_groups, sleep, clock)
    for _ in range(5):
        if not trees:
            break
        for tree in trees:
            _signal(tree, True, use_groups)
        sleep(0.02)
        trees = again()
    return first


FREEZE_LOOKS = 200
"""Looks at most before the SIGKILL, each stopping what it found (a few ms each)."""
HOLD_PATIENCE = 0.5
"""Seconds a process sent SIGSTOP is waited for to be seen stopped: one that is not by
then (held in the kernel, traced: a review's tracer kept a stop looking 200 times) is
taken as it is, and killed."""
_HELD = frozenset({psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP, psutil.STATUS_ZOMBIE,
                   psutil.STATUS_DEAD})  # fmt: skip


def _frozen(
    look: Callable[[bool], list[TaskTree]],
    use_groups: bool,
    sleep: Callable[[float], None],
    clock: Callable[[], float] = time.monotonic,
) -> list[TaskTree]:
    """The processes left, each stopped (SIGSTOP) where it is: stopped, none forks any
    more. What a look finds is stopped, and looked for again, until two looks in a row
    find nothing else, every process found seen stopped (or dead): a process that
    forked as its stop came left its child to its parent, or to the monitor, a child
    subreaper held alive through the stop, where the next look finds it. (A stop ended
    as a look's processes had all died, and the child the last one forked into a new
    session with no tag as it died, never looked at, hopped on under init: a trial. A
    signal sent is not yet taken: under load a process stopped only after the looks,
    its fork done, and the child ran on: a CI run.) A process that does not stop (held
    in the kernel, traced) is taken as it is after :data:`HOLD_PATIENCE`. Without process
    groups (Windows) there is no SIGSTOP: the processes as found."""
    stop = getattr(signal, "SIGSTOP", None)
    if stop is None or not use_groups:
        return look(True)
    seen: set[int] = set()
    sent: dict[int, float] = {}
    quiet = 0
    for _ in range(FREEZE_LOOKS):
        trees = look(False)
        found = {pid for tree in trees for pid in tree.pids}
        now = clock()
        loose = {p for p in found if now - sent.get(p, now) < HOLD_PATIENCE and not _held(p)}
        loose |= found - seen
        if found <= seen and not loose:
            quiet += 1
            if quiet == 2:
                break
            sleep(0.005)  # (a child being forked as its parent's stop came: attached now)
            continue
        quiet = 0
        for tree in trees:
            if tree.job_pgid and tree.job_pgid > 1 and tree.pids - seen:
                with contextlib.suppress(OSError):
                    os.killpg(tree.job_pgid, stop)
        for pid in loose:  # (new, or not stopped yet: sent again, or continued meanwhile)
            sent.setdefault(pid, now)
            with contextlib.suppress(OSError):  # (gone meanwhile)
                os.kill(pid, stop)
        if found <= seen:
            sleep(0.001)  # (sent: taken as each process next runs)
        seen |= found
    return _living(trees)


def _held(pid: int) -> bool:
    """Whether a process is stopped where it is (or gone): it forks nothing more."""
    try:
        return psutil.Process(pid).status() in _HELD
    except psutil.Error:
        return True


@dataclass(frozen=True)
class JobGroup:
    """A job's process group as a stop first found it (``found_at``, see :func:`_now`):
    its number stays the job's while any member lives (the kernel reuses no id a group
    holds); only a process started since with the leader's pid (the number reused once
    the group was empty) is not its leader. (No start time is read per task up front:
    32 µs each, 31 ms for a stop of 970 tasks.)"""

    pgid: int
    found_at: float

    def still_the_jobs(self) -> bool:
        started = _started(self.pgid)
        return started is None or started < self.found_at - START_TIME_GRAIN

    def members(self) -> set[int]:
        """Its live members (a pass over the process table; none found where that
        cannot be read, out of descriptors: the stop goes on with what it has)."""
        found = set()
        with contextlib.suppress(OSError):
            for pid in psutil.pids():
                with contextlib.suppress(OSError):
                    if os.getpgid(pid) == self.pgid:
                        found.add(pid)
        return found


START_TIME_GRAIN = 0.02
"""Seconds a start time may read early (the kernel counts it in 10 ms ticks): a leader
that started this close before the stop is taken for a later process, and its group is
not looked up again (as before)."""


def _now() -> float:
    """Now as start times read (psutil's: the boot time plus clock ticks since boot), by
    the time since boot where there is one: no wall-clock jump moves it."""
    if hasattr(time, "CLOCK_BOOTTIME"):
        with contextlib.suppress(OSError):
            return float(psutil.boot_time()) + time.clock_gettime(time.CLOCK_BOOTTIME)
    return time.time()


def _started(pid: int) -> float | None:
    """A process's start time (``None``: no such process, or not readable now)."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


def _living(trees: list[TaskTree]) -> list[TaskTree]:
    """Trees with their dead and zombie processes removed; empty trees dropped."""
    for tree in trees:
        tree.pids = _alive(tree.pids)
    return [t for t in trees if t.pids]
