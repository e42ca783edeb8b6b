"""A task someone waits for ends as its job exits, from the kernel's word (SPEC D2a); its
monitor records the same status a moment later (D2)."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
from pathlib import Path

import psutil
import pytest
from conftest import MONITOR, needs_cgroups, start_bg, supervisor_pids, wait_until

from wave_bash.api import Client
from wave_bash.worker import jobexit, monitor_running, read_exit_record, tagged_processes
from wave_bash.worker.cgroups import _mounts


def _cgroup_id(pid: int) -> int:
    """The id of the cgroup v2 ``pid`` is in (its directory's inode number)."""
    with open(f"/proc/{pid}/cgroup") as fh:
        (path,) = [line[3:].strip() for line in fh if line.startswith("0::")]
    return os.stat(_mounts()[""] / path.lstrip("/")).st_ino


@pytest.mark.parametrize("end", ["reaped", "zombie", "killed"])
def test_a_jobs_status_is_read_from_the_kernel(end: str) -> None:
    """The status of a job its parent has reaped (kept with the pidfd), of one its parent
    has not reaped yet (a zombie), and none for a job killed by a signal (its monitor may
    hand its instructions to another) or for a process that ended in another cgroup."""
    needs_cgroups()
    parent = subprocess.Popen(
        ["bash", "-c", "(IFS= read -r x; exit 7) <&0 & wait $!; IFS= read -r y"],
        stdin=subprocess.PIPE,
    )
    assert parent.stdin is not None
    found: tuple[int, int] | None = None
    try:
        found = wait_until(lambda: jobexit.open_job(parent.pid))  # type: ignore[assignment]
        assert found is not None
        job, pidfd = found
        group = _cgroup_id(job)
        if end == "zombie":
            parent.send_signal(signal.SIGSTOP)  # it cannot reap its child (once stopped:
            stopped = psutil.STATUS_STOPPED  # a signal arrives in its time, CI reaped first)
            wait_until(lambda: psutil.Process(parent.pid).status() == stopped)
        if end == "killed":
            os.kill(job, signal.SIGKILL)
        else:
            parent.stdin.write(b"\n")
            parent.stdin.flush()
        assert select.select([pidfd], [], [], 10)[0], "the job did not end"
        if end == "zombie":
            assert psutil.Process(job).status() == psutil.STATUS_ZOMBIE
        else:  # (reaped once its /proc entry is gone)
            wait_until(lambda: not os.path.exists(f"/proc/{job}"))
        expected = None if end == "killed" else 7
        assert jobexit.exited_status(pidfd, job, group) == expected
        assert jobexit.exited_status(pidfd, job, group + 1) is None  # not the task's job
    finally:
        if found is not None:
            os.close(found[1])
        parent.send_signal(signal.SIGCONT)
        parent.kill()
        parent.wait()


def _waiting_on_a_fifo(client: Client, state_dir: Path) -> tuple[Path, str, psutil.Process]:
    """A task whose command waits for a line on a FIFO (written to end it, `exit 7`), once
    its job runs: the FIFO, its ID and its monitor."""
    go = state_dir / "go"
    os.mkfifo(go)
    task_id = start_bg(client, f"IFS= read -r line < {go}; exit 7")
    (row,) = [t for t in client.tasks(all=True) if t.id == task_id]
    assert row.pid is not None
    monitor = psutil.Process(row.pid)
    wait_until(lambda: len(tagged_processes({task_id}).get(task_id, ())) >= 2)  # its job runs
    return go, task_id, monitor


def test_a_waited_task_ends_as_its_job_exits_while_its_monitor_is_paused(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its monitor stopped (SIGSTOP), a task still ends with its status as its command
    exits; the supervisor then continues the monitor, which records the same status."""
    needs_cgroups()
    monkeypatch.setenv("WAVE_TRACKING", "cgroup")
    go, task_id, monitor = _waiting_on_a_fifo(client, state_dir)
    waited: list[object] = []
    waiter = threading.Thread(target=lambda: waited.append(client.wait(task_id, timeout=20_000)))
    monitor.suspend()
    try:
        waiter.start()
        with open(go, "w") as fh:  # its command ends
            fh.write("now\n")
        waiter.join(15)
        assert waited, "the wait did not return"
        (task,) = waited
        assert (task.status, task.exit_code) == ("failed", 7)  # type: ignore[attr-defined]
        exit_file = state_dir / "tasks" / f"{task_id}.exit"
        wait_until(lambda: read_exit_record(exit_file).status is not None)  # continued
        assert read_exit_record(exit_file).status == 7
        wait_until(lambda: not psutil.pid_exists(monitor.pid))  # and reaped
    finally:
        with contextlib.suppress(psutil.Error):
            monitor.resume()
    (row,) = [t for t in client.tasks(all=True) if t.id == task_id]
    assert (row.status, row.exit_code) == ("failed", 7)


def test_a_command_that_stops_or_kills_its_monitor(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that stops its monitor (`kill -STOP $m`; `$m`, see MONITOR) and exits 3:
    the task ends with 3 and its monitor, continued, records it (it stayed stopped,
    holding two descriptors, with a task that could no longer be stopped). `kill -9 $m;
    …; exit 3`: the task is lost, waited for or not, as D2 says (it ended with 3 only when
    waited for)."""
    needs_cgroups()
    monkeypatch.setenv("WAVE_TRACKING", "cgroup")
    for _ in range(3):  # (a call that finds a standby, and one that starts its monitor)
        ids: list[str] = []
        result = client.bash(MONITOR + "kill -STOP $m; exit 3", timeout=20_000, on_start=ids.append)
        assert result.exit_code == 3, result
        (task_id,) = ids
        exit_file = state_dir / "tasks" / f"{task_id}.exit"
        wait_until(lambda exit_file=exit_file: read_exit_record(exit_file).status == 3)
        wait_until(lambda task_id=task_id: not tagged_processes({task_id}).get(task_id))
    ids = []
    # A job that left a process behind, or was killed: left to its monitor, continued.
    left = client.bash(MONITOR + "kill -STOP $m; sleep 30 & exit 3", timeout=20_000)
    assert left.exit_code == 3 and "still running" in (left.message or ""), left
    assert (
        client.bash(MONITOR + "kill -STOP $m; kill -KILL $BASHPID", timeout=20_000).exit_code == 137
    )
    killed = client.bash(
        MONITOR + "kill -9 $m; sleep 0.3; exit 3", timeout=20_000, on_start=ids.append
    )
    assert killed.exit_code is None, killed
    (row,) = [t for t in client.tasks(all=True) if t.id == ids[0]]
    assert (row.status, row.exit_code) == ("lost", None)
    started = start_bg(client, MONITOR + "kill -9 $m; sleep 0.3; exit 3")
    assert client.wait(started, timeout=20_000).status == "lost"


def test_a_monitor_counts_as_running_only_while_its_pid_is_its_own() -> None:
    """A job is looked for, and its status believed, only while its monitor is a child of
    ours that has not exited: a reaped monitor's pid may be another process's."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert monitor_running(child.pid)
        child.send_signal(signal.SIGSTOP)
        assert monitor_running(child.pid)  # (stopped still runs)
        child.kill()
        wait_until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE)
        assert not monitor_running(child.pid)  # exited, not reaped
    finally:
        child.kill()
        child.wait()
    assert not monitor_running(child.pid)  # reaped
    assert not monitor_running(os.getppid())  # no child of ours


def _pidfds(pid: int) -> int:
    found = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(FileNotFoundError):  # (closed since the listing)
            found += os.readlink(fd) == "anon_inode:[pidfd]"
    return found


def test_a_job_that_outlives_its_task_is_no_longer_watched(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task that ended without its job (its monitor killed, its job gone from its
    cgroup) lets go of the job's pidfd; it was held until the job exited."""
    needs_cgroups()
    monkeypatch.setenv("WAVE_TRACKING", "cgroup")
    client.bash("true")
    (supervisor,) = supervisor_pids(state_dir)
    before = _pidfds(supervisor)
    procs = _mounts()[""] / "cgroup.procs"
    result = client.bash(
        f"{MONITOR}kill -9 $m; echo $BASHPID > {procs}; exec sleep 60", timeout=20_000
    )
    assert result.exit_code is None, result  # lost
    wait_until(lambda: _pidfds(supervisor) <= before)


def test_a_monitor_its_command_stopped_is_woken_with_no_waiter_or_after_a_restart(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kill -STOP $m; exit 5` (MONITOR) in the background, nobody waiting, then a supervisor
    restart: the task stayed `running` for good (a review): only a waiter's job watch
    woke its monitor, and a re-adopted monitor has none."""
    needs_cgroups()
    monkeypatch.setenv("WAVE_TRACKING", "cgroup")
    quiet = start_bg(client, MONITOR + "kill -STOP $m; exit 4")
    wait_until(lambda: read_exit_record(state_dir / "tasks" / f"{quiet}.exit").status == 4)
    tid = start_bg(client, MONITOR + "sleep 1; kill -STOP $m; exit 5")
    for pid in supervisor_pids(state_dir):
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not supervisor_pids(state_dir))
    assert client.wait(tid, timeout=20_000).exit_code == 5


def test_a_stopped_monitor_whose_job_ended_is_woken_without_cgroups(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without cgroups a task whose monitor was stopped (by its command's `kill -STOP
    $m`, or by someone) stayed `running` for good once its command ended, a `wait` for
    it to its timeout (a failure review): the housekeeping now wakes a stopped monitor
    whose job has exited, as with cgroups, but not one whose job still runs."""
    monkeypatch.setenv("WAVE_TRACKING", "process")
    assert client.bash(MONITOR + "kill -STOP $m; exit 3", timeout=20_000).exit_code == 3
    go, task_id, monitor = _waiting_on_a_fifo(client, state_dir)
    monitor.suspend()
    try:
        wait_until(lambda: monitor.status() == psutil.STATUS_STOPPED)  # (the signal taken)
        with pytest.raises(AssertionError):  # (its job runs: left stopped, as it was)
            wait_until(lambda: monitor.status() != psutil.STATUS_STOPPED, timeout=2.5)
        with open(go, "w") as fh:  # its command ends
            fh.write("now\n")
        assert client.wait(task_id, timeout=20_000).exit_code == 7
    finally:
        with contextlib.suppress(psutil.Error):
            monitor.resume()
    tid = start_bg(client, MONITOR + "sleep 1; kill -STOP $m; exit 5")
    for pid in supervisor_pids(state_dir):
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not supervisor_pids(state_dir))
    assert client.wait(tid, timeout=20_000).exit_code == 5
