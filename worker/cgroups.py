"""Kernel tracking of a task's processes: one cgroup per task (SPEC B3, issue 13).

A process cannot leave its cgroup by ``setsid``, a double fork or a scrubbed environment,
so a task's cgroup holds everything it started, and stopping it costs the same however
many processes the host runs. The job joins its cgroup itself, as its first act (a line
of its prelude, see :func:`join_line`); the monitor stays outside, so it lives to record
the status. Where no cgroup can be used, :mod:`worker.kill`'s process-table walk remains.

cgroup v2 is the tracker (``cgroup.kill`` stops every process at once, new forks
included; ``cgroup.events`` says when it is empty; ``cpu.stat`` gives CPU time). Memory
figures and limits come from a writable v1 ``memory`` hierarchy (v2's memory controller
is not read yet). Task cgroups are made under the supervisor's own
cgroup, so every limit the host put on the supervisor still holds for its tasks.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

TRACKING_ENV = "WAVE_TRACKING"
"""``cgroup`` (required), ``process`` (the process-table walk), unset: cgroup if usable."""


@dataclass(frozen=True)
class Usage:
    """What a task used, where the kernel counts it."""

    cpu_seconds: float | None = None
    peak_memory: int | None = None
    oom_killed: bool = False


def _mounts() -> dict[str, Path]:
    """Mount points of cgroup2 (key ``""``) and of v1 hierarchies (by controller)."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, info = left.split(), right.split()
        if len(fields) < 5 or len(info) < 3:
            continue
        if fields[3] != "/":  # a bind mount of a subtree: our own paths would not match
            continue
        if info[0] == "cgroup2":
            found.setdefault("", Path(fields[4]))
        elif info[0] == "cgroup":
            for option in info[2].split(","):
                if option in ("memory", "freezer", "pids", "cpuacct"):
                    found.setdefault(option, Path(fields[4]))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path in each hierarchy (``""``: v2)."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                found[name] = path
    return found


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _make_dir(path: str) -> None:
    """``mkdir``; one that exists is fine (a directory: cgroupfs holds nothing else)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path)


def _read(path: str) -> str | None:
    """A cgroup file's text (small), or None: plain ``os`` calls, as stopping a thousand
    tasks reads a few thousand of them."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 65536).decode()
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


class CgroupTracker:
    """One cgroup per task, under ``<own cgroup>/wave-bash-<name>/``."""

    def __init__(self, base: Path, memory_base: Path | None) -> None:
        self.base = base
        self.memory_base = memory_base
        """The v1 memory hierarchy's parent of task cgroups (None: none usable)."""
        self._base = str(base)  # (paths as text: a stop of 1000 tasks builds 16,000)
        self._memory_base = str(memory_base) if memory_base else None
        self._made: dict[str, list[str]] = {}
        """Task cgroups made by this tracker and not removed: their join files."""

    @classmethod
    def probe(cls, name: str) -> CgroupTracker | None:
        """A tracker when cgroup v2 with ``cgroup.kill`` is writable here, else None."""
        mounts, own = _mounts(), _own_paths()
        if "" not in mounts or "" not in own:
            return None
        base = mounts[""] / own[""].lstrip("/") / f"wave-bash-{name}"
        try:
            base.mkdir(mode=0o755, exist_ok=True)
            probe = base / ".probe"
            probe.mkdir(exist_ok=True)
            usable = os.access(probe / "cgroup.kill", os.W_OK) and os.access(
                probe / "cgroup.procs", os.W_OK
            )
            probe.rmdir()
        except OSError:
            return None
        if not usable:
            return None
        memory_base = None
        if "memory" in mounts and "memory" in own:
            candidate = mounts["memory"] / own["memory"].lstrip("/") / f"wave-bash-{name}"
            with contextlib.suppress(OSError):
                candidate.mkdir(mode=0o755, exist_ok=True)
                if os.access(candidate / "cgroup.procs", os.W_OK):
                    memory_base = candidate
        return cls(base, memory_base)

    @property
    def mode(self) -> str:
        memory = ", memory from cgroup v1" if self.memory_base else ""
        return f"cgroup v2 ({self.base}{memory})"

    def _dir(self, task_id: str) -> str:
        return f"{self._base}/{task_id}"

    def _memory_dir(self, task_id: str) -> str | None:
        return f"{self._memory_base}/{task_id}" if self._memory_base else None

    def create(self, task_id: str, memory_limit: int | None = None) -> list[str]:
        """Make the task's cgroups; returns the ``cgroup.procs`` files its job joins.

        Raises:
            OSError: the cgroup cannot be made (the caller then tracks by processes).
        """
        made = self._made.get(task_id)
        if made is not None:  # made ahead (for a standby monitor)
            return made
        group = self._dir(task_id)
        _make_dir(group)
        joins = [f"{group}/cgroup.procs"]
        memory = self._memory_dir(task_id)
        if memory is not None:
            try:
                _make_dir(memory)
                if memory_limit is not None:
                    _write(f"{memory}/memory.limit_in_bytes", str(memory_limit))
                joins.append(f"{memory}/cgroup.procs")
            except OSError:
                with contextlib.suppress(OSError):
                    os.rmdir(memory)
        self._made[task_id] = joins
        return joins

    def exists(self, task_id: str) -> bool:
        """Whether the task has a cgroup (made by this supervisor or an earlier one)."""
        return os.path.isdir(self._dir(task_id))

    def cgroup_id(self, task_id: str) -> int | None:
        """The task's cgroup v2 id (its directory's inode number), None when it has none."""
        try:
            return os.stat(self._dir(task_id)).st_ino
        except OSError:
            return None

    def pids(self, task_id: str) -> list[int]:
        """The task's processes now (its job and everything it started)."""
        text = _read(f"{self._dir(task_id)}/cgroup.procs")
        return [int(p) for p in text.split()] if text else []

    def populated(self, task_id: str) -> bool:
        text = _read(f"{self._dir(task_id)}/cgroup.events") or ""
        return "populated 1" in text

    def terminate(self, task_id: str, pids: list[int] | None = None) -> list[int]:
        """SIGTERM every process of the task (a chance to clean up before the kill), or
        those of ``pids``, then SIGCONT: a stopped (paused) one gets it now. Returns the
        pids signalled. A process group whose leader is among them is signalled whole
        (the job's: a child its members fork as the signal comes gets it too, the kernel
        restarting a fork a group signal overtakes; one by one, a loop's `sleep 100 &`
        forked meanwhile got none), the others one by one."""
        pids = self.pids(task_id) if pids is None else pids
        pgids = {pid: _pgid(pid) for pid in pids}  # (None: gone meanwhile)
        groups = {pid for pid, pgid in pgids.items() if pgid == pid}
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGTERM)
                os.killpg(group, signal.SIGCONT)
        for pid, pgid in pgids.items():
            if pgid is not None and pgid not in groups:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
                    os.kill(pid, signal.SIGCONT)
        return pids

    def kill(self, task_id: str) -> None:
        """SIGKILL every process of the task at once, forks racing it included."""
        with contextlib.suppress(OSError):
            _write(f"{self._dir(task_id)}/cgroup.kill", "1")

    def usage(self, task_id: str, oom: bool = False) -> Usage:
        """What the task used; with ``oom``, also whether the kernel's OOM killer killed
        one of its processes (one more file to read, on a task's end)."""
        cpu = None
        for line in (_read(f"{self._dir(task_id)}/cpu.stat") or "").splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                cpu = int(value) / 1e6
        peak, oom_killed = None, False
        memory = self._memory_dir(task_id)
        if memory is not None:
            text = _read(f"{memory}/memory.max_usage_in_bytes")
            peak = int(text) if text and text.strip().isdigit() else None
            control = (_read(f"{memory}/memory.oom_control") or "") if oom else ""
            for line in control.splitlines():
                key, _, value = line.partition(" ")
                oom_killed = oom_killed or (key == "oom_kill" and value.strip() not in ("", "0"))
        return Usage(cpu, peak, oom_killed)

    def remove(self, task_id: str, wait: float = 0.0) -> bool:
        """Remove the task's cgroups once they are empty (waiting up to ``wait`` seconds
        for that); returns whether they are gone."""
        deadline = time.monotonic() + wait
        while self.populated(task_id) and time.monotonic() < deadline:
            time.sleep(0.005)
        self._made.pop(task_id, None)
        gone = True
        memory = self._memory_dir(task_id)
        if memory is not None:
            # Its log's pages are charged to it: removed with them, it would linger in the
            # kernel as a dying cgroup, one per task (18,561 here after ~20,000 tasks,
            # slowing every cgroup operation of the host). Reclaimed first, it goes.
            with contextlib.suppress(OSError):
                _write(f"{memory}/memory.force_empty", "0")
        for group in (self._dir(task_id), memory):
            if group is None:
                continue
            try:
                os.rmdir(group)
            except FileNotFoundError:
                pass
            except OSError:
                gone = False
        return gone

    def task_ids(self) -> list[str]:
        """Task IDs that have a cgroup here (of an earlier supervisor, too)."""
        with contextlib.suppress(OSError):
            return [p.name for p in self.base.iterdir() if p.is_dir() and p.name != ".probe"]
        return []

    def tidy(self, keep: set[str], *, parents: bool = False) -> None:
        """Remove the empty cgroups of tasks not in ``keep`` (ended while no supervisor
        watched), and with ``parents`` the parents too when nothing is left (the
        supervisor stops)."""
        for task_id in self.task_ids():
            if task_id not in keep and not self.populated(task_id):
                self.remove(task_id)
        if parents and not keep:
            for parent in (self.base, self.memory_base):
                if parent is not None:
                    with contextlib.suppress(OSError):
                        parent.rmdir()


def remove_tree(parent: Path) -> None:
    """Remove a parent of task cgroups and every empty one in it (test clean-up)."""
    with contextlib.suppress(OSError):
        for child in parent.iterdir():
            if child.is_dir():
                with contextlib.suppress(OSError):
                    child.rmdir()
        parent.rmdir()


TREE_NAME = re.compile(r"wave-bash-[0-9a-f]{12}")
"""A supervisor's tree of task cgroups (``supervisor.daemon.tracker_name``)."""


def leave_task_cgroups() -> list[str]:
    """Move this process out of a task's cgroup, where a client in a task started it, to
    the cgroup that holds that task's supervisor (each hierarchy used); returns what it
    did, to be logged (where it went, or why it stays). Task cgroups are ``…/wave-bash-<name>/<task>``, made below their supervisor's
    own cgroup: a supervisor left in one, and its own tasks below it, went with that
    task's ``cgroup.kill`` (a trial)."""
    outcomes: list[str] = []
    mounts, own = _mounts(), _own_paths()
    for key in ("", "memory"):
        if key not in mounts or key not in own:
            continue
        parts = own[key].strip("/").split("/")
        if len(parts) < 2 or not TREE_NAME.fullmatch(parts[-2]):  # (not `wave-bash-dev.scope`)
            continue
        target = mounts[key].joinpath(*parts[:-2])
        try:
            _write(str(target / "cgroup.procs"), "0")
            outcomes.append(f"moved to {target}")
        except OSError as exc:  # (EBUSY, EACCES: that task's stop will take it)
            outcomes.append(f"could not move to {target}: {exc.strerror}")
    return outcomes


def cgroup_parents(name: str) -> list[Path]:
    """Where the task cgroups named ``name`` live, in every hierarchy used."""
    mounts, own = _mounts(), _own_paths()
    return [
        mounts[key] / own[key].lstrip("/") / f"wave-bash-{name}"
        for key in ("", "memory")
        if key in mounts and key in own
    ]


def join_line(procs_files: list[str]) -> str:
    """The prelude statement by which a job moves itself into its cgroups (``0`` is the
    writing process); silent, so a refused move costs the task nothing but tracking."""
    writes = "; ".join(f"\\builtin echo 0 >| {_quote(f)}" for f in procs_files)
    return f"{{ {writes}; }} 2>/dev/null"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def choose_tracker(name: str, wanted: str = "") -> CgroupTracker | None:
    """The tracker ``wanted`` (``WAVE_TRACKING``: ``cgroup``, ``process``), or where it is
    empty the best one usable here.

    Raises:
        RuntimeError: ``cgroup`` was required and none is usable.
    """
    if wanted == "process" or not hasattr(os, "getuid"):
        return None
    tracker = CgroupTracker.probe(name)
    if tracker is None and wanted == "cgroup":
        raise RuntimeError(
            f"{TRACKING_ENV}=cgroup but no writable cgroup v2 with cgroup.kill is available"
        )
    return tracker
