"""A waited-for task ends as soon as its job exits, when the job wrote its command's status
(a joined monitor's bash job): its monitor's wake-up and exit come after. A status the job
cannot vouch for (a signal, ``exit`` in the command, an EXIT trap of its own) is left to
the monitor. Each test stops the monitor (SIGSTOP) to tell which of the two ended it."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
from conftest import BashInThread, needs, start_bg, wait_until

from wave_bash.api import Client


@pytest.fixture
def joined(client: Client) -> Client:
    """A client whose commands run in monitors whose jobs join their cgroups."""
    tracking = client.status().tracking or ""
    needs("cgroup" in tracking, "cgroup tracking", "run the tests as root on Linux")
    return client


def standbys_ready(client: Client) -> None:
    """Two commands run, then their standbys wait with their jobs forked (a command that
    comes before its monitor forked its job gets no hint). Called in the test itself:
    pytest's environment (PYTEST_CURRENT_TEST) differs in a fixture, and standbys are
    kept for the environment of the last command."""
    for _ in range(2):
        client.bash("true")
    supervisor = psutil.Process(client.status().pid or 0)

    def with_jobs() -> bool:
        monitors = supervisor.children()
        return len(monitors) == 2 and all(len(m.children()) == 1 for m in monitors)

    wait_until(with_jobs)


def monitor_of(client: Client, task_id: str) -> psutil.Process:
    (record,) = [t for t in client.tasks() if t.id == task_id]
    assert record.pid is not None
    return psutil.Process(record.pid)


def reaped(proc: psutil.Process) -> bool:
    try:
        proc.status()
    except psutil.NoSuchProcess:
        return True
    return False


def exited(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class Suspended:
    """A task's monitor, stopped until the ``with`` block ends (then continued)."""

    def __init__(self, client: Client, task_id: str) -> None:
        self.monitor = monitor_of(client, task_id)

    def __enter__(self) -> psutil.Process:
        self.monitor.suspend()
        return self.monitor

    def __exit__(self, *exc: object) -> None:
        self.monitor.resume()


class Gate:
    """A command prefix that says it runs, then waits to be let through."""

    def __init__(self, where: Path) -> None:
        self.ready, self.go = where / "ready", where / "go"
        self.prefix = f"touch {self.ready}; until [ -e {self.go} ]; do sleep 0.01; done; "

    def running(self) -> None:
        """Once the command runs (its monitor handed it over, and waits for it)."""
        wait_until(self.ready.exists)

    def open(self) -> None:
        self.go.touch()


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return Gate(tmp_path)


def test_a_foreground_command_ends_as_its_job_exits(
    joined: Client, gate: Gate, tmp_path: Path
) -> None:
    standbys_ready(joined)
    call = BashInThread(joined, f"{gate.prefix}cd {tmp_path}; echo done")
    task_id = call.task_id()
    gate.running()
    with Suspended(joined, task_id) as monitor:
        gate.open()
        r = call.result()
        assert (r.exit_code, r.stdout) == (0, "done")
        assert r.cwd == str(tmp_path)  # the directory was recorded before the status
        assert monitor.status() == psutil.STATUS_STOPPED  # the end came from the job
    wait_until(lambda: reaped(monitor))  # the monitor exits once continued, and is reaped


def test_a_background_task_someone_waits_for_ends_as_its_job_exits(
    joined: Client, gate: Gate
) -> None:
    standbys_ready(joined)
    task_id = start_bg(joined, f"{gate.prefix}echo done; false")
    gate.running()
    with Suspended(joined, task_id) as monitor:
        gate.open()
        record = joined.wait(task_id, timeout=10_000)
        assert (record.status, record.exit_code) == ("failed", 1)
        assert monitor.status() == psutil.STATUS_STOPPED
    wait_until(lambda: reaped(monitor))
    assert joined.wait(task_id).exit_code == 1  # the monitor recorded the same


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        ("exit 4", 4),  # the job exits in the command: it vouches for nothing
        ("trap 'exit 5' EXIT; true", 5),  # its own EXIT trap replaced the job's
        ("kill -TERM $BASHPID", 143),  # bash runs an EXIT trap as a signal kills it, $? 0
        # its own EXIT trap runs the job's after a step of its own: that step's status
        ('prev=$(trap -p EXIT); eval "set -- $prev"; trap "true; $3" EXIT; false', 1),
    ],
)
def test_a_status_the_job_cannot_vouch_for_is_left_to_the_monitor(
    joined: Client, gate: Gate, ending: str, code: int
) -> None:
    standbys_ready(joined)
    task_id = start_bg(joined, f"{gate.prefix}{ending}")
    gate.running()
    with Suspended(joined, task_id) as monitor:
        gate.open()
        wait_until(lambda: all(exited(c) for c in monitor.children()))  # the job exited
        record = joined.wait(task_id, timeout=300)
        assert (record.status, record.exit_code) == ("running", None)
    record = joined.wait(task_id, timeout=10_000)
    assert record.exit_code == code
    wait_until(lambda: reaped(monitor))


def test_the_callers_errexit_does_not_hold_in_the_exit_trap(
    state_dir: Path, tmp_path: Path
) -> None:
    """The directory capture fails when the command removed its directory: under the
    caller's errexit that once made the job exit 1 instead of the command's status."""
    client = Client(state_dir=state_dir, env={**os.environ, "SHELLOPTS": "errexit"})
    gone = tmp_path / "gone"
    gone.mkdir()
    r = client.bash(f"cd {gone} && rmdir {gone} && (exit 3)")
    assert r.exit_code == 3


def test_a_signal_after_the_command_returned_leaves_the_status_to_the_monitor(
    joined: Client,
) -> None:
    """A signal that kills the job in its last steps, after the command returned: the
    EXIT trap then has the status of the step it interrupted, never written."""
    standbys_ready(joined)
    kill_in_tail = "trap '[[ $BASH_COMMAND == *\"set +x\"* ]] && kill -TERM $BASHPID' DEBUG"
    task_id = start_bg(joined, f"kill -STOP $$; {kill_in_tail}; (exit 3)")  # $$: the monitor
    monitor = monitor_of(joined, task_id)
    wait_until(lambda: monitor.status() == psutil.STATUS_STOPPED)
    wait_until(lambda: all(exited(c) for c in monitor.children()))
    assert joined.wait(task_id, timeout=300).status == "running"
    monitor.resume()
    assert joined.wait(task_id, timeout=10_000).exit_code == 143


def test_a_flag_in_the_callers_environment_vouches_for_nothing(state_dir: Path, gate: Gate) -> None:
    client = Client(state_dir=state_dir, env={**os.environ, "__wave_ok": "1"})
    needs("cgroup" in (client.status().tracking or ""), "cgroup tracking", "run as root")
    standbys_ready(client)
    task_id = start_bg(client, f"{gate.prefix}kill -TERM $BASHPID")
    gate.running()
    with Suspended(client, task_id) as monitor:
        gate.open()
        wait_until(lambda: all(exited(c) for c in monitor.children()))
        assert client.wait(task_id, timeout=300).status == "running"
    assert client.wait(task_id, timeout=10_000).exit_code == 143


@pytest.mark.parametrize("background", [False, True])
def test_a_file_size_limit_does_not_kill_the_exit_trap(joined: Client, background: bool) -> None:
    """``ulimit -f 0``: the trap's writes fail (EFBIG) instead of killing the shell."""
    if background:
        task_id = start_bg(joined, "ulimit -f 0; true")
        assert joined.wait(task_id, timeout=10_000).exit_code == 0
    else:
        assert joined.bash("ulimit -f 0; true").exit_code == 0


def test_waiting_with_a_timeout_holds_no_descriptor_afterwards(joined: Client) -> None:
    standbys_ready(joined)
    supervisor = psutil.Process(joined.status().pid or 0)
    ids = [start_bg(joined, "sleep 100") for _ in range(10)]
    before = supervisor.num_fds()
    for task_id in ids:
        assert joined.wait(task_id, timeout=1).status == "running"
    assert supervisor.num_fds() <= before + 2  # (a standby being replaced meanwhile)
    joined.task_stop_many(ids)
