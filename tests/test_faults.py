"""Fault injection: the supervisor, a monitor or a task killed at any moment (SPEC D2–D4).

Crashes at exact steps use the supervisor's ``WAVE_FAULT`` seam (a real SIGKILL of the
supervisor at that point); a host restart uses the ``WAVE_BOOT_ID`` seam.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import (
    BashInThread,
    ask_supervisor,
    journal_rows,
    kill_supervisor,
    raw_request,
    run_cli,
    start_bg,
    start_supervisor,
    supervisor_pids,
    task_alive,
    wait_until,
)

from wave_bash.api import Client, SupervisorUnavailableError, calls, cli, texts, wire
from wave_bash.api import client as client_module
from wave_bash.api import transport as transports
from wave_bash.api.errors import SupervisorNotAnsweringError
from wave_bash.supervisor.identity import start_ticks
from wave_bash.worker import tagged_processes


def record(client: Client, task_id: str):  # type: ignore[no-untyped-def]
    (found,) = [t for t in client.tasks(all=True) if t.id == task_id]
    return found


def test_foreground_call_survives_supervisor_kill(client: Client, state_dir: Path) -> None:
    call = BashInThread(client, "echo a; sleep 2; echo b")
    task_id = call.task_id()
    # Running, not only announced (a kill before the hand-over leaves a task that ran
    # nothing, lost by design: D3a).
    log = state_dir / "tasks" / f"{task_id}.log"
    wait_until(lambda: log.read_text() == "a\n")
    old = kill_supervisor(state_dir)
    r = call.result()
    assert (r.success, r.stdout, r.exit_code) == (True, "a\nb", 0)
    assert supervisor_pids(state_dir) and old not in supervisor_pids(state_dir)
    assert record(client, task_id).owner == "foreground"


def test_sleep_stopped_at_its_timeout_after_a_restart_is_no_notice(
    client: Client, state_dir: Path
) -> None:
    """Its caller has the answer (terminated): a re-adopted `sleep` stopped at the timeout
    was also announced as a background command that was stopped (a review)."""
    call = BashInThread(client, "sleep 10", timeout=3000)
    task_id = call.task_id()
    wait_until(lambda: task_alive(task_id))
    kill_supervisor(state_dir)
    assert call.result().message == "Command exceeded the timeout (3s) and was terminated."
    assert client.notifications() == []


@pytest.mark.parametrize(
    ("point", "command", "stdout", "code"),
    [
        ("after_spawn", "echo a; sleep 1; echo b", "a\nb", 0),  # journaled, pid not yet recorded
        ("before_finish", "echo done; exit 5", "done", 5),  # exit seen, not yet recorded
        ("before_reply", "echo x; exit 4", "x", 4),  # recorded, answer not yet sent
    ],
)
def test_crash_points_in_a_foreground_call(
    client: Client, state_dir: Path, point: str, command: str, stdout: str, code: int
) -> None:
    start_supervisor(state_dir, WAVE_FAULT=point)
    r = client.bash(command)  # reconnects to a new, healthy supervisor and attaches again
    assert (r.stdout, r.exit_code) == (stdout, code)
    (task,) = client.tasks(all=True)
    assert (task.status, task.exit_code) == ("completed" if code == 0 else "failed", code)
    assert client.notifications() == []  # the caller got the result itself: no notice as well


def test_crash_after_the_reply_before_its_commit(client: Client, state_dir: Path) -> None:
    """D1: the journal's writes follow the reply; a supervisor killed in between loses no
    task's end (the next one reads it from the exit record). It may post a notice for the
    result already given, never another status."""
    start_supervisor(state_dir, WAVE_FAULT="after_reply")
    r = client.bash("echo x; exit 4")  # answered, then the supervisor dies
    assert (r.stdout, r.exit_code) == ("x", 4)
    wait_until(lambda: not supervisor_pids(state_dir))
    (task,) = client.tasks(all=True)  # a new supervisor
    assert (task.status, task.exit_code) == ("failed", 4)
    assert all(n.task_id == task.id and "exit code 4" in n.message for n in client.notifications())


def test_crash_between_journal_and_spawn(client: Client, state_dir: Path) -> None:
    """Killed after the task ID was told, before the command was handed over: the task
    ends `lost`, end reason `not_started`, and says nothing ran (its monitor, whose pipe
    closed empty, wrote so): an agent may run it again (a review: it read "exit status
    was lost", as if it had run)."""
    start_supervisor(state_dir, WAVE_FAULT="after_insert")
    r = client.bash("echo never")
    assert not r.success and r.message == texts.NOT_STARTED_TEXT
    (task,) = client.tasks(all=True)
    assert (task.status, task.end_reason) == ("lost", "not_started")  # it did not run
    waited = run_cli(state_dir, "wait", task.id)  # (said "X lost" alone: a review)
    assert waited.stdout == f"{task.id} lost (never started: nothing ran; run it again)\n"
    log = Path(task.output_path)
    assert not log.exists() or log.read_text() == ""
    kill_supervisor(state_dir)
    start_supervisor(state_dir, WAVE_FAULT="after_insert")
    started = client.bash("echo never", run_in_background=True)
    # Resent to the next supervisor, it said "running in background" (a review): it says
    # that nothing ran, as the foreground call's does, and no notice says it again.
    assert not started.success and started.message == texts.NOT_STARTED_TEXT
    assert client.notifications() == []
    for background in ([], ["--background"]):  # (exit 1 read as the command's failure: a
        kill_supervisor(state_dir)  # helper's trial) one that did not run exits 2
        start_supervisor(state_dir, WAVE_FAULT="after_insert")
        cli = run_cli(state_dir, "run", *background, "--", "echo never")
        assert (cli.returncode, cli.stdout) == (2, ""), cli
        assert "never started" in cli.stderr


def test_background_task_ends_while_supervisor_is_dead(client: Client, state_dir: Path) -> None:
    tid = start_bg(client, "sleep 1; echo bye; exit 3")
    monitor = record(client, tid).pid
    kill_supervisor(state_dir)
    wait_until(
        lambda: not psutil.pid_exists(monitor) or psutil.Process(monitor).status() == "zombie"
    )
    exit_file = state_dir / "tasks" / f"{tid}.exit"
    wait_until(lambda: time.time() - exit_file.stat().st_mtime > 2)  # (found ended later)
    task = record(client, tid)  # starts a new supervisor, which reads the exit record
    assert (task.status, task.exit_code) == ("failed", 3)
    # It ended as its monitor recorded, not as it was found (a review: the recovery time).
    assert task.ended_at is not None
    assert abs(task.ended_at.timestamp() - exit_file.stat().st_mtime) < 1
    (notice,) = client.notifications()
    assert notice.task_id == tid and "failed with exit code 3" in notice.message


def test_readopted_task_can_be_stopped(client: Client, state_dir: Path) -> None:
    tid = start_bg(client, "setsid sleep 301 & sleep 300")
    wait_until(lambda: len(tagged_processes({tid}).get(tid, ())) >= 3)
    kill_supervisor(state_dir)
    assert task_alive(tid)  # the task outlived its supervisor
    assert record(client, tid).status == "running"  # re-adopted
    assert client.task_stop(tid).status == "killed"
    assert not task_alive(tid)


def test_supervisor_restarted_gracefully_keeps_tasks(client: Client, state_dir: Path) -> None:
    tid = start_bg(client, "sleep 1; echo ok")
    assert client.shutdown()
    wait_until(lambda: not supervisor_pids(state_dir))
    assert task_alive(tid)
    assert client.wait(tid, timeout=10_000).status == "completed"


def _name(pid: int) -> str | None:
    try:
        return psutil.Process(pid).name()
    except psutil.Error:
        return None


def test_task_killed_by_a_signal(client: Client) -> None:
    tid = start_bg(client, "sleep 300")
    monitor = record(client, tid).pid

    def sleeping() -> bool:  # its command runs (a job killed before it took its command,
        # when no standby was ready, is replaced by its monitor: the command runs then)
        return any(_name(pid) == "sleep" for pid in tagged_processes({tid}).get(tid, ()))

    wait_until(sleeping)
    for pid in tagged_processes({tid})[tid] - {monitor}:
        os.kill(pid, signal.SIGKILL)
    task = client.wait(tid, timeout=10_000)
    assert (task.status, task.exit_code) == ("killed", 137)


def test_monitor_killed_gives_lost(client: Client, state_dir: Path) -> None:
    started = state_dir / "started"
    tid = start_bg(client, f"touch {started}; sleep 300")
    wait_until(started.exists)
    os.kill(record(client, tid).pid, signal.SIGKILL)
    wait_until(lambda: record(client, tid).monitor_lost)  # its command still runs (issue 13)
    task = client.task_stop(tid)  # (killed by the stop, its status unknown: never
    assert (task.status, task.exit_code, task.end_reason) == (
        "killed",
        None,
        "stopped",
    )  # "completed")


def test_a_lost_monitor_stays_lost_after_a_supervisor_restart(
    client: Client, state_dir: Path
) -> None:
    """Its monitor killed, its job running: the next supervisor took the job (the topmost
    tagged process now) for the monitor and showed a healthy task (a review). A monitor
    leads its session; the job does not."""
    started = state_dir / "started"
    tid = start_bg(client, f"touch {started}; sleep 300")
    wait_until(started.exists)
    os.kill(record(client, tid).pid, signal.SIGKILL)
    wait_until(lambda: record(client, tid).monitor_lost)
    kill_supervisor(state_dir)
    task = record(client, tid)  # a new supervisor
    assert (task.status, task.monitor_lost) == ("running", True)
    assert client.task_stop(tid).status == "killed"


def test_host_restart_marks_unfinished_tasks_lost(client: Client, state_dir: Path) -> None:
    start_supervisor(state_dir, WAVE_BOOT_ID="boot-before")
    tid = start_bg(client, "echo once; sleep 300", description="Long job")
    wait_until(lambda: Path(record(client, tid).output_path).read_text() == "once\n")
    kill_supervisor(state_dir)
    start_supervisor(state_dir, WAVE_BOOT_ID="boot-after")
    task = record(client, tid)
    assert task.status == "lost" and task.exit_code is None
    (notice,) = client.notifications()
    assert notice.message.startswith(
        f'Background command "Long job" (ID: {tid}) was lost when the host restarted.'
    )
    assert Path(task.output_path).read_text() == "once\n"  # log kept, nothing re-run


def test_pid_reuse_is_neither_adopted_nor_signalled(client: Client, state_dir: Path) -> None:
    tid = start_bg(client, "sleep 300")
    kill_supervisor(state_dir)
    stranger = subprocess.Popen(["sleep", "300"])  # an unrelated live process, maybe same tick
    try:
        con = sqlite3.connect(state_dir / "journal.db")
        with con:  # the journal now points at the stranger (as after pid reuse), even its
            # start time: identity still fails on the missing task tag
            con.execute(
                "UPDATE tasks SET pid = ?, pid_start = ? WHERE id = ?",
                (stranger.pid, start_ticks(stranger.pid), tid),
            )
        con.close()
        task = record(client, tid)
        # The pid is not adopted (no task tag), but the task's own processes still run:
        # it is not lost while they do (issue 13), and TaskStop stops them, not the stranger.
        assert (task.status, task.monitor_lost) == ("running", True)
        assert client.task_stop(tid).status == "killed"  # its monitor still recorded it
        assert stranger.poll() is None  # never signalled
        assert not task_alive(tid)
    finally:
        stranger.kill()
        stranger.wait()


def test_a_supervisor_killed_as_it_started_is_a_start_to_try_again(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed before it served (the OOM killer, a signal), a supervisor's starter said it
    "failed to start" as for an error of its own: the call failed at once, where the next
    start would pass (a trial, 2 of 200 random kills). It is a start to try again (CR1)."""
    from wave_bash.api.errors import SupervisorRefusedError, SupervisorUnavailableError
    from wave_bash.api.launch import start_supervisor
    from wave_bash.api.paths import StateLayout

    monkeypatch.setenv("WAVE_FAULT", "before_serving")
    with pytest.raises(SupervisorUnavailableError, match="ended as it started") as cut:
        start_supervisor(StateLayout(state_dir), "unix")
    assert not isinstance(cut.value, SupervisorRefusedError)
    monkeypatch.setenv("WAVE_FAULT", "")
    assert Client(state_dir=state_dir).bash("echo served").stdout == "served"
    # One that ends as it starts for a reason of its own says so, and is no start to try
    # again (its lock a directory: a call was tried for 30 s, a review)
    Client(state_dir=state_dir).shutdown()
    (state_dir / "supervisor.lock").unlink()
    (state_dir / "supervisor.lock").mkdir()
    with pytest.raises(SupervisorRefusedError, match="cannot take its lock"):
        start_supervisor(StateLayout(state_dir), "unix")


def test_crash_while_starting_a_background_task(client: Client, state_dir: Path) -> None:
    start_supervisor(state_dir, WAVE_FAULT="after_spawn")
    r = client.bash("sleep 0.5; echo bg", run_in_background=True)  # reattaches: B4c
    assert r.success and r.background_task_id
    assert r.message.startswith(f"Command running in background with ID: {r.background_task_id}.")
    task = client.wait(r.background_task_id, timeout=10_000)
    assert (task.status, task.exit_code, task.background_reason) == ("completed", 0, "explicit")


def test_crash_while_recording_a_background_exit(client: Client, state_dir: Path) -> None:
    start_supervisor(state_dir, WAVE_FAULT="before_finish")
    tid = start_bg(client, "sleep 0.3; exit 6")
    wait_until(lambda: not supervisor_pids(state_dir))  # it died recording the exit
    task = record(client, tid)  # a new supervisor reads the monitor's exit record
    assert (task.status, task.exit_code) == ("failed", 6)
    (notice,) = client.notifications()
    assert notice.task_id == tid and "failed with exit code 6" in notice.message


def test_foreground_task_whose_caller_never_returns(state_dir: Path) -> None:
    host = subprocess.Popen(
        [sys.executable, "-c",
         f"from api import Client; Client(state_dir={str(state_dir)!r}, session='gone')"
         ".bash('echo begun; sleep 1.5; echo late', on_start=lambda t: print(t, flush=True))"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert host.stdout is not None
    task_id = host.stdout.readline().strip()
    log = state_dir / "tasks" / f"{task_id}.log"
    wait_until(lambda: "begun" in log.read_text())  # the command runs
    host.send_signal(signal.SIGSTOP)  # the host hangs: its connection stays open...
    kill_supervisor(state_dir)  # ...when the supervisor dies
    start_supervisor(state_dir, WAVE_ATTACH_GRACE="0.5s")
    client = Client(state_dir=state_dir, session="gone")
    try:
        wait_until(lambda: record(client, task_id).background_reason == "caller_lost")
        task = client.wait(task_id, timeout=10_000)
        assert (task.status, task.owner) == ("completed", "background")
        (notice,) = client.notifications()  # its result is not lost: it waits as a notice
        assert notice.task_id == task_id and "completed with exit code 0" in notice.message
    finally:
        host.kill()
        host.wait()


def test_a_prune_cut_short_leaves_rows_to_prune_again_never_files_no_row_names(
    client: Client, state_dir: Path
) -> None:
    """A supervisor killed as a prune goes (after the files, before the rows): the rows
    stay, and the next prune takes them (it once deleted the rows first, and files whose
    removal was cut short stayed for good), at the next start, whatever the retention:
    rows marked as being pruned (they stayed listed with their logs gone, read as
    removed outside wave-bash, until a `gc` by hand: a chaos trial)."""
    task_id = start_bg(client, "echo old")
    client.wait(task_id, timeout=10_000)
    kill_supervisor(state_dir)
    env = {**os.environ, "WAVE_FAULT": "pruned_files", "WAVE_RETENTION": "0s"}
    supervisor = [sys.executable, "-P", "-m", "wave_bash.supervisor", "--state-dir", str(state_dir)]
    subprocess.run([*supervisor, "--detach"], env=env, check=True, timeout=30)
    wait_until(lambda: not supervisor_pids(state_dir))  # killed by the fault, pruning at start
    assert not list((state_dir / "tasks").glob(f"{task_id}.*"))  # the files went first
    assert task_id in {row["id"] for row in journal_rows(state_dir)}  # the row stays
    start_supervisor(state_dir)  # (the retention of 7 days: the cut prune is finished)
    wait_until(lambda: task_id not in {row["id"] for row in journal_rows(state_dir)})
    assert client.tasks(all=True) == []


def test_a_frozen_supervisor_holds_no_call_past_its_timeout(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A stopped (or frozen) supervisor keeps the connection open and silent: a call with
    a 3 s timeout waited forever (a review). Continued, it ran the command its caller had
    given up on (a failure review): one that caller may send again. It runs nothing whose
    caller hung up before it started."""
    monkeypatch.setattr(calls, "ANSWER_SLACK", 2.0)
    monkeypatch.setattr(client_module, "FOREGROUND_PATIENCE", 4.0)  # (10 s: tried again)
    pid = client.status().pid or 0
    ran = tmp_path / "ran"
    os.kill(pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        with pytest.raises(SupervisorUnavailableError, match="not answered in time"):
            client.bash(f"echo x >> {ran}", timeout=1000)
        assert time.monotonic() - began < 30
    finally:
        os.kill(pid, signal.SIGCONT)
    assert client.bash(f"echo y >> {ran}").success  # (after the one given up on)
    assert ran.read_text() == "y\n"
    assert [t.command for t in client.tasks(all=True)] == [f"echo y >> {ran}"]


def test_keys_stops_and_interrupts_given_up_on_do_nothing(client: Client, state_dir: Path) -> None:
    """Keys typed, a stop and an interrupt sent to a frozen supervisor were given up on
    ("gave up reaching the supervisor"), then, once it was continued, the keys were typed
    (a caller that sent them again typed them twice), the task stopped and interrupted
    (a helper's trial). As for a `run`, what a caller hung up on before it was read is
    not done."""
    asked = client.bash("read -p 'Name? ' x; echo \"got [$x]\"", interactive=True)
    typed_to = asked.background_task_id or ""
    assert asked.waiting_for_input and typed_to
    stopped = start_bg(client, "sleep 60")
    interrupted = start_bg(client, "trap 'echo got INT; exit 3' INT; echo ready; sleep 60")
    wait_until(lambda: "ready" in client.task_output(interrupted, block=False).output)
    pid = client.status().pid or 0
    os.kill(pid, signal.SIGSTOP)
    try:
        for op, params in (
            ("input", {"task_id": typed_to, "input": "bob\n"}),
            ("stop", {"task_id": stopped}),
            ("stop_many", {"task_ids": [stopped]}),
            ("interrupt", {"task_id": interrupted}),
            ("background", {"task_id": typed_to}),
        ):
            with socket.socket(socket.AF_UNIX) as caller:  # (sent, then given up on)
                caller.connect(str(state_dir / "supervisor.sock"))
                caller.sendall(raw_request(op, {"session": "default", **params}))
    finally:
        os.kill(pid, signal.SIGCONT)
    assert client.task_output(typed_to, block=False).waiting_for_input  # (still asks)
    records = {t.id: t for t in client.tasks()}
    assert records[stopped].status == records[interrupted].status == "running"
    assert "got INT" not in client.task_output(interrupted, block=False).output
    assert "got [" not in Path(client.task_stop(typed_to).output_path).read_text()
    log = (state_dir / "supervisor.log").read_text()
    assert log.count("caller hung up before it was read: not done") == 5
    client.task_stop_many([stopped, interrupted])


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_a_call_to_a_silent_supervisor_gives_up_after_a_check(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    """`tasks` of a SIGSTOPped supervisor (or of a remote that never answers) waited two
    minutes, a `wait` with no timeout for ever (a trial): after a silence a call asks for
    the supervisor's `status` on another connection, and gives up when that gets no
    answer either. A long wait on a supervisor that answers goes on. Over TCP, where no
    handshake comes while a supervisor holds the lock, the call gives up at once too (it
    started another beside it and said, after 40 s, that it "did not start")."""
    monkeypatch.setattr(wire, "SILENCE_CHECK_SECONDS", 0.5)
    monkeypatch.setattr(calls, "STATUS_LIMIT", 1.0)
    monkeypatch.setattr(transports, "HANDSHAKE_TIMEOUT", 1.0)
    client = Client(state_dir=state_dir, transport=transport)
    assert client.wait(start_bg(client, "sleep 2; exit 3")).exit_code == 3  # (checked)
    running = start_bg(client, "sleep 60")
    pid = client.status().pid or 0
    os.kill(pid, signal.SIGSTOP)
    try:
        for call in (client.tasks, lambda: client.wait(running)):
            began = time.monotonic()
            with pytest.raises(SupervisorNotAnsweringError, match="not answered in time") as err:
                call()
            assert time.monotonic() - began < 10
        assert f"task {running} may still be running" in str(err.value)  # (the `wait`'s:
        # it named no task, a trial)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert [t.id for t in client.tasks() if t.status == "running"] == [running]
    client.task_stop(running)


def test_a_call_given_up_says_how_to_reach_its_task(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call given up with its command started names the task, and the CLI that reaches
    it: with the state dir, the remote, its ssh options and remote command (the hint
    named none of them, and pasted asked the default state dir: a trial)."""
    monkeypatch.setattr(wire, "SILENCE_CHECK_SECONDS", 0.5)
    monkeypatch.setattr(calls, "STATUS_LIMIT", 1.0)
    client = Client(state_dir=state_dir)
    pid = client.status().pid or 0
    started: list[str] = []

    def freeze(task_id: str) -> None:
        started.append(task_id)
        os.kill(pid, signal.SIGSTOP)

    try:
        with pytest.raises(SupervisorNotAnsweringError) as err:
            client.bash("sleep 30", on_start=freeze)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert f"`wave-bash --state-dir {state_dir} output {started[0]}`" in str(err.value)
    client.task_stop(started[0])
    options = ["-o", "ProxyCommand=nc %h %p", "-i", "my key"]
    remote = Client(state_dir=state_dir, remote="ssh://me@box:2222", ssh_options=options,
                    remote_command="~/bin/wave-bash")  # fmt: skip
    words = shlex.split(remote.calls.cli_hint)  # (as a shell reads it, then the CLI)
    args = cli.parse([*words[1:], "tasks"])
    assert (args.state_dir, args.remote, args.remote_command) == (
        str(state_dir), "ssh://me@box:2222", "~/bin/wave-bash",
    )  # fmt: skip
    assert cli._ssh_options(args.ssh_option) == options


def test_a_call_abandoned_during_its_check_ends_at_once(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check a silent call makes is ended with the call: a caller that went away
    during one waited for it (up to its 10 s) first (a review)."""
    monkeypatch.setattr(wire, "SILENCE_CHECK_SECONDS", 0.5)
    monkeypatch.setattr(calls, "STATUS_LIMIT", 60.0)
    running = start_bg(client, "sleep 60")
    pid = client.status().pid or 0
    failed: list[BaseException] = []
    checking, answers = threading.Event(), calls.Caller._answers

    def check(caller: calls.Caller, *args: Any) -> bool:
        checking.set()
        return answers(caller, *args)

    monkeypatch.setattr(calls.Caller, "_answers", check)

    def wait() -> None:
        try:
            client.wait(running)
        except SupervisorUnavailableError as exc:
            failed.append(exc)

    waiter = threading.Thread(target=wait)
    os.kill(pid, signal.SIGSTOP)
    try:
        waiter.start()
        wait_until(checking.is_set, timeout=10)  # (past the silence: the check is under way)
        began = time.monotonic()
        client.close()
        waiter.join(timeout=30)
        assert not waiter.is_alive() and time.monotonic() - began < 5
        assert failed and "abandoned" in str(failed[0])
    finally:
        os.kill(pid, signal.SIGCONT)
    Client(state_dir=client.layout.root, session=client.session).task_stop(running)


def test_a_stop_of_a_frozen_supervisor_gives_up_and_says_why(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`supervisor stop` of a supervisor stopped by SIGSTOP waited for good (a review):
    it gives up past its patience, saying what may be wrong; continued, the supervisor
    reads the stop and stops."""
    monkeypatch.setattr(calls, "SHUTDOWN_PATIENCE", 2.0)
    pid = client.status().pid or 0
    os.kill(pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        with pytest.raises(SupervisorUnavailableError, match="SIGSTOP"):
            client.shutdown()
        assert time.monotonic() - began < 30
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie")


def test_status_of_a_frozen_supervisor_says_it_does_not_answer(
    client: Client, state_dir: Path
) -> None:
    """`supervisor status` of a SIGSTOPped supervisor waited 2 minutes, then said none was
    running (exit 3; a review): within seconds it says one does not answer (exit 4, LSB's
    "unknown")."""
    pid = client.status().pid or 0
    os.kill(pid, signal.SIGSTOP)
    hurried = (  # the CLI with its limits cut (they took 20 s of the suite); equal, as they are
        "import sys, time; from wave_bash.api import calls, wire; calls.STATUS_LIMIT = 2.0; "
        "wire.SILENCE_CHECK_SECONDS = 2.0; from wave_bash.api.cli import main; "
        "began = time.monotonic(); code = main(sys.argv[1:]); "
        "print(time.monotonic() - began, file=sys.stderr); sys.exit(code)"
    )
    try:
        r = subprocess.run(
            [sys.executable, "-c", hurried, "supervisor", "status"], capture_output=True,
            text=True, timeout=60, env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
        )  # fmt: skip
        # Within its own limit: a silence check as well took both (20 s, CONTRACT says 10).
        assert (r.returncode, float(r.stderr.split()[-1]) < 3.5) == (4, True), r
        assert "does not answer" in r.stdout and "stopped or frozen" in r.stdout
    finally:
        os.kill(pid, signal.SIGCONT)
    assert run_cli(state_dir, "supervisor", "status").returncode == 0


def test_a_wait_sent_again_after_a_restart_waits_only_what_is_left(
    client: Client, state_dir: Path
) -> None:
    """`wait --timeout 4000` with the supervisor killed at 2 s returned after 6.5 s: the
    resent request waited its whole timeout again (a review)."""
    tid = start_bg(client, "sleep 60")
    done: list[float] = []
    began = time.monotonic()
    waiter = threading.Thread(target=lambda: (client.wait(tid, timeout=8000), done.append(1)))
    waiter.start()
    wait_until(lambda: time.monotonic() - began > 4)  # (4 s into its wait)
    kill_supervisor(state_dir)
    waiter.join(30)
    assert done and time.monotonic() - began < 11  # (its whole timeout again: 12 s or more)


@pytest.mark.parametrize("after_term", ["exit 3", "while :; do sleep 0.1; done"])
def test_a_stop_cut_short_by_a_supervisor_kill_is_finished_by_the_next(
    client: Client, state_dir: Path, after_term: str
) -> None:
    """The stop's intent is journaled before its first signal: a supervisor killed as
    its stop's SIGTERM arrives (the command kills it) leaves a task that ends as stopped,
    not `failed 3` (a review), and one that outlived the SIGTERM is stopped by the next
    supervisor, as the caller asked, even if no one asks again."""
    client.bash("true")
    (sup,) = supervisor_pids(state_dir)
    tid = start_bg(client, f"trap 'kill -9 {sup}; {after_term}' TERM; while :; do sleep 0.1; done")
    wait_until(lambda: len(tagged_processes({tid}).get(tid, ())) >= 3)  # (its trap is set)
    with contextlib.suppress(AssertionError, OSError):  # one request, never sent again
        ask_supervisor(state_dir, "stop", {"task_id": tid})
    wait_until(lambda: sup not in supervisor_pids(state_dir))
    ended = wait_until(lambda: (r := record(client, tid)).status != "running" and r, timeout=30)
    assert (ended.status, ended.end_reason) == ("killed", "stopped"), ended
    assert ended.exit_code == (3 if after_term == "exit 3" else 137)
    assert not task_alive(tid)


def test_another_processs_lock_on_the_journal_holds_writes_till_it_goes(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """A write lock on `journal.db` held by another process (the user's own `sqlite3` in
    a transaction) dropped a task's end for good: it stayed `running`, `wait` answered
    at once, no notice came, and each write held the event loop 5 s (a trial). It is a
    storage problem now: writes are held, and made once the lock goes."""
    gate = tmp_path / "gate"
    task_id = client.bash(f"until [ -e {gate} ]; do sleep 0.02; done; exit 3",
                          run_in_background=True).background_task_id  # fmt: skip
    assert task_id
    locker = sqlite3.connect(state_dir / "journal.db", isolation_level=None)
    try:
        locker.execute("BEGIN IMMEDIATE")
        gate.touch()
        assert client.wait(task_id, timeout=15_000).exit_code == 3
        refused = client.bash("echo never")
        assert not refused.success and refused.error == (
            "Its journal is locked by another process (database is locked) in the state dir "
            f"{state_dir}: the command was not started (nothing runs that wave-bash cannot "
            "record); end the other process's transaction on journal.db (a `sqlite3` left "
            "open?)"
        )
    finally:
        locker.rollback()
        locker.close()
    wait_until(lambda: [n.task_id for n in client.notifications()] == [task_id])
    kill_supervisor(state_dir)  # (what the journal holds: its end was written)
    (row,) = [r for r in journal_rows(state_dir) if r["id"] == task_id]
    assert (row["status"], row["exit_code"]) == ("failed", 3)


def test_a_prune_put_off_by_a_locked_journal_is_no_failure(client: Client, state_dir: Path) -> None:
    """The prune at a supervisor's start met another process's lock on the journal and
    logged a traceback, "prune failed" (a review): it is put off, as on a full disk."""
    client.status()
    kill_supervisor(state_dir)
    locker = sqlite3.connect(state_dir / "journal.db", isolation_level=None)
    try:
        locker.execute("BEGIN IMMEDIATE")
        client.status()  # (a new supervisor, whose prune runs as it starts)
        log = state_dir / "supervisor.log"
        wait_until(lambda: "prune put off: Its journal is locked" in log.read_text())
        assert "prune failed" not in log.read_text()
    finally:
        locker.rollback()
        locker.close()


def _removed(folder: Path) -> bool:
    """Whether ``folder`` was removed, whole (False: something was made in it meanwhile)."""
    try:
        shutil.rmtree(folder)
    except OSError:
        return False
    return True


def test_an_end_after_the_tasks_folder_was_removed_is_no_full_disk(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """`rm -rf STATE/tasks` as tasks ran: each end said "No such file or directory in
    the state dir …: output … may be lost, as its log could not grow; … recorded once
    there is space again" (a trial). Space was never the problem: its log is gone, as a
    read says (B6d)."""
    gate = tmp_path / "gate"
    task_id = client.bash(f"until [ -e {gate} ]; do sleep 0.02; done; exit 3",
                          run_in_background=True).background_task_id  # fmt: skip
    assert task_id
    wait_until(lambda: _removed(state_dir / "tasks"))  # (a file made as it removed them:
    gate.touch()  # ENOTEMPTY, a CI run; a standby monitor's)
    assert client.wait(task_id, timeout=15_000).exit_code == 3
    read = client.task_output(task_id, block=False)
    assert read.error is None and read.log_gone, read
