"""Shared fixtures: a private state dir per test, a client, bounded waits and a reaper.

Every process a test starts (supervisor, monitors, commands and their escaped children)
is killed at teardown, found through the journal and the ``WAVE_TASK_ID`` tag.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from wave_bash.api import BashResult, Client
from wave_bash.api.wire import PROTOCOL_VERSION, encode
from wave_bash.supervisor.daemon import tracker_name
from wave_bash.worker import tagged_processes
from wave_bash.worker.cgroups import cgroup_parents, remove_tree

REPO = Path(__file__).resolve().parent.parent


def wait_until(
    predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.02
) -> object:
    """Poll ``predicate`` until it is truthy or ``timeout`` seconds pass (monotonic)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


def gone(proc: psutil.Process | int) -> bool:
    """Whether a process (or pid) has exited (a zombie, or reaped: one reaped between two
    looks at it raised, a full run's failure)."""
    try:
        proc = psutil.Process(proc) if isinstance(proc, int) else proc
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def journal_rows(state_dir: Path) -> list[dict[str, object]]:
    db = state_dir / "journal.db"
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM tasks")]
    except sqlite3.Error:
        return []
    finally:
        con.close()


def supervisor_pids(state_dir: Path) -> list[int]:
    """Supervisor processes serving ``state_dir`` (found by their command line; not a
    child of one between its fork and exec, which has that command line for a moment: a
    CI run counted two supervisors)."""
    found = {}
    for proc in psutil.process_iter(["cmdline", "ppid"]):
        cmd = proc.info["cmdline"] or []
        if "wave_bash.supervisor" in cmd and str(state_dir) in cmd:
            found[proc.pid] = proc.info["ppid"]
    return [pid for pid, parent in found.items() if parent not in found]


def start_supervisor(state_dir: Path, **env: str) -> int:
    """A supervisor for ``state_dir`` started with extra environment (a fault, a boot id,
    a limit); returns its pid."""
    subprocess.run(
        [sys.executable, "-P", "-m", "wave_bash.supervisor", "--state-dir", str(state_dir), "--detach"],
        env={**os.environ, **env}, check=True, timeout=30,
    )  # fmt: skip
    (pid,) = wait_until(lambda: supervisor_pids(state_dir))  # type: ignore[misc]
    return int(pid)


MONITOR = "read -r _ _ _ m _ < /proc/$BASHPID/stat; "
"""A command's prelude that puts its monitor's pid in `$m` (its job's parent): a test's
command that stops or kills its own monitor. (`$$` was it, in the subshell of the monitor
a command runs in; a command that names `$$` now runs in a bash of its own, F1b.)"""


def kill_supervisor(state_dir: Path, sig: int = signal.SIGKILL) -> int:
    """Signal the running supervisor (SIGKILL by default); returns its pid once it is gone."""
    pids = wait_until(lambda: supervisor_pids(state_dir))
    for pid in pids:  # type: ignore[attr-defined]
        os.kill(pid, sig)
    wait_until(lambda: not set(pids) & set(supervisor_pids(state_dir)))  # type: ignore[call-overload]
    return int(pids[0])  # type: ignore[index]


REQUIRE_ALL = "WAVE_TEST_REQUIRE_ALL"
"""Set by ``.ci/run``: a test that needs something missing fails instead of skipping."""


def needs(present: bool, what: str, fix: str) -> None:
    """Skip the test unless ``present``, saying what is missing and how to get it (on a
    fresh machine the suite passes); with ``WAVE_TEST_REQUIRE_ALL=1`` (CI) it fails."""
    if present:
        return
    text = f"needs {what}: {fix}"
    if os.environ.get(REQUIRE_ALL) == "1":
        pytest.fail(f"{text} ({REQUIRE_ALL}=1: nothing may be skipped)")
    pytest.skip(text)


def needs_cgroups() -> None:
    """Skip (fail in CI) unless a cgroup v2 is mounted here for task tracking."""
    usable = (
        Path("/sys/fs/cgroup/unified/cgroup.procs").exists()
        or Path("/sys/fs/cgroup/cgroup.controllers").exists()
    )
    needs(usable, "a writable cgroup v2", "run as root where /sys/fs/cgroup is writable")


def argvs_holding(text: str) -> list[int]:
    """Processes whose argv holds ``text`` (what `ps` shows every user)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def needs_tool(command: str, package: str) -> str:
    """The path of ``command``, or skip (fail in CI) naming the package that provides it."""
    path = shutil.which(command)
    needs(
        path is not None,
        f"`{command}`",
        f"install the {package} package (apt-get install {package})",
    )
    assert path is not None
    return path


def needs_root(why: str) -> None:
    needs(hasattr(os, "getuid") and os.getuid() == 0, "root", why)


def raw_request(op: str, params: dict[str, object]) -> bytes:
    """A request line as any client could send it: no validation on this side."""
    return encode({"v": PROTOCOL_VERSION, "op": op, **params})


def ask_supervisor(state_dir: Path, op: str, params: dict[str, object]) -> dict[str, object]:
    """One request straight over the socket, past any client-side validation; returns the
    final answer (``result`` or ``error``)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(state_dir / "supervisor.sock"))
        s.sendall(raw_request(op, params))
        for line in s.makefile("rb"):
            message = json.loads(line)
            if message["type"] in ("result", "error"):
                return dict(message)
    raise AssertionError(f"no answer to {op}")


def as_nobody(action: Callable[[], bytes]) -> bytes:
    """What ``action`` returns when run as uid/gid 65534 in a forked child (its exception
    as ``b"E" + repr``); root only. The child makes system calls and runs code already
    imported (it may not be able to read the Python installation as that user)."""
    done_r, done_w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(done_w, action())
        except BaseException as exc:
            os.write(done_w, b"E" + repr(exc).encode())
        finally:
            os._exit(0)
    os.close(done_w)
    try:
        return os.read(done_r, 65536)
    finally:
        os.close(done_r)
        os.waitpid(child, 0)


def reap(state_dir: Path) -> None:
    """Kill everything that belongs to ``state_dir``: its supervisors, and every process
    tagged with one of its tasks (monitors carry the tag too)."""
    task_ids = {str(r["id"]) for r in journal_rows(state_dir)}
    pids = set(supervisor_pids(state_dir))
    for group in tagged_processes(task_ids).values():
        pids |= group
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    for parent in cgroup_parents(tracker_name(state_dir)):  # every task process, any escape
        for group in parent.glob("*/cgroup.kill"):
            with contextlib.suppress(OSError):
                group.write_text("1")
        wait_until(
            lambda parent=parent: (
                not any(  # type: ignore[misc]
                    (g.parent / "cgroup.events").read_text().count("populated 1")
                    for g in parent.glob("*/cgroup.kill")
                )
            ),
            timeout=5,
        )
        remove_tree(parent)


@pytest.fixture
def state_dir() -> Iterator[Path]:
    """A short private state dir (short so the socket path fits), reaped afterwards."""
    path = Path(tempfile.mkdtemp(prefix="wb-", dir="/tmp"))
    try:
        yield path
    finally:
        reap(path)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def client(state_dir: Path) -> Client:
    return Client(state_dir=state_dir, session=f"test-{uuid.uuid4().hex[:6]}")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    return d


def run_cli(
    state_dir: Path, *args: str, timeout: float = 60, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the ``wave-bash`` CLI in its own process (``python -m wave_bash.api.cli``), as a
    person would (in ``cwd``, else here)."""
    return subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
        cwd=cwd,
    )


def start_bg(client: Client, command: str, **kw: object) -> str:
    """Start ``command`` in the background and return its task ID."""
    task_id = client.bash(command, run_in_background=True, **kw).background_task_id  # type: ignore[arg-type]
    assert task_id, "the background start returned no task ID"
    return task_id


class BashInThread:
    """A foreground ``Client.bash`` call running in a thread, to act on while it waits."""

    def __init__(self, client: Client, command: str, **kw: Any) -> None:
        self._started: list[str] = []
        self._results: list[BashResult] = []
        self._thread = threading.Thread(
            target=lambda: self._results.append(
                client.bash(command, on_start=self._started.append, **kw)
            )
        )
        self._thread.start()

    def task_id(self, timeout: float = 10) -> str:
        """The task's ID, once the supervisor announced it."""
        wait_until(lambda: self._started, timeout)
        return self._started[0]

    def result(self, timeout: float = 30) -> BashResult:
        """The call's result (fails if it has not returned within ``timeout``)."""
        self._thread.join(timeout)
        assert self._results, f"the call did not return within {timeout}s"
        return self._results[0]


def task_alive(task_id: str) -> bool:
    return bool(tagged_processes({task_id}).get(task_id))
