"""Stopping a task's whole tree (SPEC B3, X3), on real processes, plus the escalation clock."""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator

import psutil
import pytest
from conftest import wait_until

from wave_bash.worker import ProcessTable, stop_trees, tagged_processes
from wave_bash.worker.monitor import BASH_MONITOR_SCRIPT, monitor_instructions


@pytest.fixture
def spawn_task() -> Iterator:  # type: ignore[type-arg]
    """Start real monitors running payloads; kill whatever is left afterwards."""
    started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(payload: str) -> tuple[str, subprocess.Popen[bytes]]:
        task_id = "k" + uuid.uuid4().hex[:8]
        env = {**os.environ, "WAVE_TASK_ID": task_id}
        proc = subprocess.Popen(
            ["bash", "-c", BASH_MONITOR_SCRIPT, "bash", f"/tmp/{task_id}.exit", ""],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(b"\n" + monitor_instructions(payload, "/", None))  # limit line
        proc.stdin.close()
        started.append((task_id, proc))
        return task_id, proc

    yield start
    for task_id, proc in started:
        for pid in tagged_processes({task_id}).get(task_id, set()):
            with __import__("contextlib").suppress(psutil.Error):
                psutil.Process(pid).kill()
        proc.kill()
        proc.wait()
        if os.path.exists(f"/tmp/{task_id}.exit"):
            os.unlink(f"/tmp/{task_id}.exit")


def _count(task_id: str) -> int:
    return len(tagged_processes({task_id}).get(task_id, set()))


def test_whole_tree_including_escaped_children(spawn_task) -> None:  # type: ignore[no-untyped-def]
    payload = (
        "setsid sleep 300 & "  # new session: leaves the group
        "( setsid bash -c 'sleep 301 & wait' & ) ; "  # double fork + setsid: reparented away
        "bash -c 'trap \"\" TERM; sleep 302' & "  # ignores SIGTERM: needs the SIGKILL
        "sleep 303"
    )
    task_id, monitor = spawn_task(payload)
    wait_until(lambda: _count(task_id) >= 6)
    trees = stop_trees([(task_id, monitor.pid)], protected={monitor.pid}, grace=0.5)
    assert trees and trees[0].pids
    wait_until(lambda: _count(task_id) == 0, timeout=5)
    assert monitor.wait(timeout=5) in (143, 137)  # the monitor lived to record the status
    with open(f"/tmp/{task_id}.exit") as fh:
        assert int(fh.read()) in (143, 137)


def test_never_signals_protected_or_other_tasks(spawn_task) -> None:  # type: ignore[no-untyped-def]
    mine, mine_mon = spawn_task("sleep 300")
    other, other_mon = spawn_task("sleep 300")
    wait_until(lambda: _count(mine) >= 2 and _count(other) >= 2)
    stop_trees([(mine, mine_mon.pid)], protected={mine_mon.pid, other_mon.pid}, grace=1)
    wait_until(lambda: _count(mine) == 0)
    assert _count(other) >= 2 and other_mon.poll() is None
    assert psutil.pid_exists(os.getpid())


def test_no_stop_walks_through_a_protected_process(spawn_task) -> None:  # type: ignore[no-untyped-def]
    """A protected process (the supervisor) that carries the task's tag is no root of the
    task's processes: what it started is not the task's (a supervisor a client in the
    task had started took every process it ran into that task's stop, none of them
    tagged: a review)."""
    task_id, monitor = spawn_task("sleep 300")
    wait_until(lambda: _count(task_id) >= 2)
    tagged = subprocess.Popen(
        ["bash", "-c", "env -u WAVE_TASK_ID sleep 304 & echo $!; wait"],
        stdout=subprocess.PIPE, text=True,
        env={**os.environ, "WAVE_TASK_ID": task_id}, start_new_session=True,
    )  # fmt: skip
    try:
        assert tagged.stdout is not None
        below = int(tagged.stdout.readline())
        # (untagged once `env` has run: the fork that runs it is the task's until then,
        # and a stop at once took it; a CI run)
        wait_until(lambda: "WAVE_TASK_ID" not in psutil.Process(below).environ())
        stop_trees([(task_id, monitor.pid)], protected={monitor.pid, tagged.pid}, grace=1.0)
        assert psutil.pid_exists(below) and psutil.Process(below).status() != "zombie"
        assert tagged.poll() is None
    finally:
        os.killpg(tagged.pid, signal.SIGKILL)
        tagged.wait()


def test_a_monitor_pid_that_is_anothers_leads_nowhere(spawn_task) -> None:  # type: ignore[no-untyped-def]
    """A task whose monitor is gone (killed: `monitor_lost`) keeps its pid in the journal;
    once another process has it, a stop killed that stranger's children and process group
    (a review reused the pid). Only the task's tagged processes are stopped now."""
    task_id, monitor = spawn_task("sleep 300")
    wait_until(lambda: _count(task_id) >= 2)
    stranger = subprocess.Popen(["bash", "-c", "sleep 310 & sleep 311 & wait"],
                                start_new_session=True)  # fmt: skip
    try:
        wait_until(lambda: len(psutil.Process(stranger.pid).children()) == 2)
        children = psutil.Process(stranger.pid).children()
        stop_trees([(task_id, stranger.pid)], protected={stranger.pid, monitor.pid}, grace=1)
        wait_until(lambda: _count(task_id) <= 1)  # (the monitor itself, recording)
        assert stranger.poll() is None and all(c.is_running() for c in children)
    finally:
        os.killpg(stranger.pid, signal.SIGKILL)
        stranger.wait()


def test_the_monitor_found_by_its_tag_is_the_monitor(spawn_task) -> None:  # type: ignore[no-untyped-def]
    """A restarted supervisor finds a task's monitor by its tag: the topmost tagged
    process. A daemon the command started (`setsid`, reparented away) is topmost too,
    and so is the job once its monitor was killed: neither is taken for it (a review)."""
    task_id, monitor = spawn_task("(setsid sleep 300 &); sleep 301")
    wait_until(lambda: _count(task_id) >= 3)
    assert ProcessTable.read({task_id}).monitors() == {task_id: monitor.pid}
    monitor.kill()
    monitor.wait()
    assert ProcessTable.read({task_id}).monitors() == {}


def test_escalation_uses_the_injected_clock(spawn_task) -> None:  # type: ignore[no-untyped-def]
    task_id, monitor = spawn_task("trap '' TERM; sleep 300")
    wait_until(lambda: _count(task_id) >= 2)
    now = [0.0]
    sleeps: list[float] = []

    def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += 1.0  # each poll "takes" a second of fake time

    stop_trees([(task_id, monitor.pid)], protected={monitor.pid}, grace=3.0,
               clock=lambda: now[0], sleep=fake_sleep)  # fmt: skip
    wait_until(lambda: _count(task_id) == 0, timeout=5)
    assert now[0] >= 3.0  # waited out the grace before SIGKILL
    assert monitor.wait(timeout=5) == 128 + signal.SIGKILL


def test_tagged_processes_ignores_unrelated() -> None:
    assert tagged_processes({"no-such-task"}) == {}
    assert tagged_processes(set()) == {}


def test_pids_given_out_before_a_mark_across_the_wrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a stop missed is told from what a trap forked after it by pid order (B3), which
    wraps at `pid_max` (32768 here, gone round in minutes by a test run)."""
    from wave_bash.worker import kill

    monkeypatch.setattr(kill, "_pid_max", lambda: 32768)
    assert kill.forked_by(100, 200) and kill.forked_by(200, 200) and not kill.forked_by(300, 200)
    assert kill.forked_by(32765, 300)  # (given out, then the pids wrapped, then the mark)
    assert not kill.forked_by(301, 32760)  # (the mark, then the wrap, then the fork)


def test_a_stop_holds_each_process_only_once_seen_stopped() -> None:
    """A SIGSTOP sent is taken only as the process next runs: under load, one in the
    middle of a `fork` stopped after the looks had ended, its child not looked at, and the
    child hopped on after TaskStop said it was done (a CI run). A look counts as quiet
    only when every process it found is seen stopped: here one continued meanwhile (as
    one slow to take its stop is not stopped yet) is stopped again."""
    from wave_bash.worker.kill import TaskTree, _frozen

    victim = subprocess.Popen(["sleep", "300"])
    looks: list[int] = []

    def look(living: bool) -> list[TaskTree]:
        looks.append(1)
        if len(looks) == 3:  # (stopped by the first look: continued)
            wait_until(lambda: psutil.Process(victim.pid).status() == psutil.STATUS_STOPPED)
            victim.send_signal(signal.SIGCONT)
            wait_until(lambda: psutil.Process(victim.pid).status() != psutil.STATUS_STOPPED)
        return [TaskTree("t", 0, None, {victim.pid})]

    try:
        _frozen(look, True, lambda seconds: None)
        assert psutil.Process(victim.pid).status() == psutil.STATUS_STOPPED
    finally:
        victim.kill()
        victim.wait()


def test_a_process_that_never_stops_holds_a_stop_a_moment_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process a tracer kept from stopping (or one held in the kernel) kept a stop
    looking 200 times, each look a pass over the process table (a review): it is taken
    as it is once it has had its moment to stop (:data:`HOLD_PATIENCE`)."""
    from wave_bash.worker import kill
    from wave_bash.worker.kill import TaskTree, _frozen

    victim = subprocess.Popen(["sleep", "300"])
    monkeypatch.setattr(kill, "_held", lambda pid: False)  # (as a traced one: never seen so)
    now = [0.0]
    looks: list[float] = []

    def look(living: bool) -> list[TaskTree]:
        looks.append(now[0])
        return [TaskTree("t", 0, None, {victim.pid})]

    def sleep(seconds: float) -> None:
        now[0] += 0.05

    try:
        _frozen(look, True, sleep, clock=lambda: now[0])
        assert len(looks) < 20  # (0.5 s of looks 0.05 s apart; not FREEZE_LOOKS, 200)
    finally:
        victim.kill()
        victim.wait()
