"""A task someone waits for ends as its job exits, from the kernel's word (SPEC D2a); its
monitor records the same status a moment later (D2)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
from pathlib import Path

import psutil
import pytest
from conftest import needs_cgroups, start_bg, wait_until

from wave_bash.api import Client
from wave_bash.worker import jobexit, read_exit_record, tagged_processes
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
            parent.send_signal(signal.SIGSTOP)  # it cannot reap its child
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


def test_a_waited_task_ends_as_its_job_exits_while_its_monitor_is_paused(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its monitor stopped (SIGSTOP), a task still ends with its status as its command
    exits; the monitor, continued, records the same status."""
    needs_cgroups()
    monkeypatch.setenv("WAVE_TRACKING", "cgroup")
    go = state_dir / "go"
    os.mkfifo(go)
    task_id = start_bg(client, f"IFS= read -r line < {go}; exit 7")
    (row,) = [t for t in client.tasks(all=True) if t.id == task_id]
    assert row.pid is not None
    monitor = psutil.Process(row.pid)
    wait_until(lambda: len(tagged_processes({task_id}).get(task_id, ())) >= 2)  # its job runs
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
        assert monitor.status() == psutil.STATUS_STOPPED  # nothing came from it
    finally:
        monitor.resume()
    exit_file = state_dir / "tasks" / f"{task_id}.exit"
    wait_until(lambda: read_exit_record(exit_file).status is not None)
    assert read_exit_record(exit_file).status == 7
    wait_until(lambda: not psutil.pid_exists(monitor.pid))  # reaped
    (row,) = [t for t in client.tasks(all=True) if t.id == task_id]
    assert (row.status, row.exit_code) == ("failed", 7)
