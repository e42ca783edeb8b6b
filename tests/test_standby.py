"""The standby monitor: the next command starts with a write to a waiting monitor (issue 6),
and the standby never changes what a command sees or leaves anything behind."""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psutil
import pytest
from conftest import (
    MONITOR,
    as_nobody,
    ask_supervisor,
    journal_rows,
    kill_supervisor,
    needs,
    needs_root,
    needs_tool,
    wait_until,
)

from wave_bash.api import Client
from wave_bash.supervisor.daemon import tracker_name
from wave_bash.worker import (
    ExitRecord,
    Monitor,
    MonitorExit,
    Shell,
    TaskFiles,
    monitor_instructions,
    read_exit_record,
    reap_monitor,
    start_monitor,
    tell_stopping,
)
from wave_bash.worker.cgroups import cgroup_parents
from wave_bash.worker.spawn import EXIT_PLACEHOLDER, EXIT_RECORD_LIMIT


def standbys(client: Client, state_dir: Path) -> list[psutil.Process]:
    """The supervisor's child monitors whose tasks are not journaled: the standbys."""
    sup = psutil.Process(client.status().pid or 0)
    journaled = {str(r["id"]) for r in journal_rows(state_dir)}
    found = []
    for child in sup.children():
        try:
            if child.environ().get("WAVE_TASK_ID") not in journaled and not gone(child):
                found.append(child)
        except psutil.Error:
            continue
    return found


def wait_for_standbys(client: Client, state_dir: Path, count: int) -> list[psutil.Process]:
    """The standbys, once ``count`` of them wait."""
    found = wait_until(lambda: len(s := standbys(client, state_dir)) == count and s)
    assert isinstance(found, list)
    return found


def _cgroup(proc: psutil.Process) -> str:
    return Path(f"/proc/{proc.pid}/cgroup").read_text()


def two_standbys(client: Client, state_dir: Path) -> list[psutil.Process]:
    """Two commands run, so that two standbys wait: them."""
    for _ in range(2):
        client.bash("true")
    return wait_for_standbys(client, state_dir, 2)


def standby_of(client: Client, state_dir: Path) -> psutil.Process:
    """The standby (the first, when two wait)."""
    found = wait_until(lambda: standbys(client, state_dir))
    assert isinstance(found, list)
    return found[0]


def gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_the_next_command_runs_in_the_standby(client: Client, state_dir: Path) -> None:
    client.bash("true")
    standby = standby_of(client, state_dir)
    reserved = standby.environ()["WAVE_TASK_ID"]
    assert (state_dir / "tasks" / f"{reserved}.log").read_bytes() == b""
    elsewhere = Client(state_dir=state_dir, cwd="/tmp")  # same environment, other directory
    r = elsewhere.bash(MONITOR + 'echo "$WAVE_TASK_ID $m"; pwd')
    assert r.stdout.splitlines() == [f"{reserved} {standby.pid}", "/tmp"]
    assert r.output_path == str(state_dir / "tasks" / f"{reserved}.log")
    assert standby_of(client, state_dir).pid != standby.pid  # a new one waits already


def test_two_standbys_wait_once_a_command_found_one(client: Client, state_dir: Path) -> None:
    """Standbys start once a reply has gone out: one after a command that found none, two
    after one that ran in a standby, so that a command sent at once finds one ready."""
    client.bash("true")  # no standby waited for the first command
    first = wait_until(lambda: standbys(client, state_dir))
    client.status()  # (served after the refill: the count is final)
    assert standbys(client, state_dir) == first and len(first) == 1
    r = client.bash(MONITOR + "echo $m")
    assert r.stdout == str(first[0].pid)
    both = wait_for_standbys(client, state_dir, 2)
    assert first[0] not in both
    ids = {p.environ()["WAVE_TASK_ID"] for p in both}
    assert len(ids) == 2 and not ids & {t.id for t in client.tasks(all=True)}


def test_a_parallel_call_finds_a_standby(client: Client, state_dir: Path, tmp_path: Path) -> None:
    """While one command runs in the foreground, a second caller's command starts in a
    standby, not in a monitor started for it."""
    two_standbys(client, state_dir)
    go = tmp_path / "go"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        running = pool.submit(client.bash, f"until [ -e {go} ]; do sleep 0.02; done")
        try:
            wait_until(lambda: any(t.status == "running" for t in client.tasks()))
            waiting = {str(p.pid) for p in standbys(client, state_dir)}
            assert Client(state_dir=state_dir).bash(MONITOR + "echo $m").stdout in waiting
        finally:
            go.touch()
        assert running.result(timeout=30).success


def test_alternating_environments_start_one_standby_each(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = two_standbys(client, state_dir)
    monkeypatch.setenv("WAVE_TEST_MARK", "other")
    client.bash("true")  # another environment: both standbys go, one starts for it
    wait_until(lambda: all(gone(p) for p in old))
    (new,) = wait_for_standbys(client, state_dir, 1)
    client.status()  # a reply more: still one
    assert standbys(client, state_dir) == [new]
    assert new.environ()["WAVE_TEST_MARK"] == "other"


def test_killed_standbys_are_reaped_and_replaced_with_their_cgroups_gone(
    client: Client, state_dir: Path
) -> None:
    killed = two_standbys(client, state_dir)
    ids = [p.environ()["WAVE_TASK_ID"] for p in killed]
    for proc in killed:
        proc.kill()
    wait_until(lambda: all(gone(p) for p in killed))
    client.status()  # a reply: the dead are let go, two start again
    fresh = wait_for_standbys(client, state_dir, 2)
    assert not {p.pid for p in fresh} & {p.pid for p in killed}
    wait_until(lambda: not any(psutil.pid_exists(p.pid) for p in killed))  # reaped
    parents = cgroup_parents(tracker_name(state_dir))
    wait_until(lambda: not any((parent / i).exists() for parent in parents for i in ids))
    assert client.bash("echo fine").stdout == "fine"


def test_a_refused_run_in_another_environment_brings_no_standby_back(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request whose environment cannot be passed lets the last caller's standbys go (its
    monitor could not start): none with that caller's environment comes back, and the
    standby that cannot start leaves no cgroup behind, however many requests follow."""
    monkeypatch.setenv("WAVE_TEST_SECRET", "first caller")
    before = two_standbys(client, state_dir)
    body = {"command": "echo hi", "cwd": "/tmp", "env": {"PATH": os.environ["PATH"], "B=": "x"}}
    assert ask_supervisor(state_dir, "run", body)["type"] == "error"
    for _ in range(5):
        client.status()
    wait_until(lambda: all(gone(p) for p in before))
    assert standbys(client, state_dir) == []
    # No cgroup is left: the commands' go once they end, the standbys' once let go, and
    # none is made again (nor kept) for a standby that cannot start.
    parents = [p for p in cgroup_parents(tracker_name(state_dir)) if p.exists()]
    wait_until(lambda: not [c for p in parents for c in p.iterdir() if c.is_dir()], timeout=15)
    assert client.bash("echo $WAVE_TEST_SECRET").stdout == "first caller"


def test_an_environment_bash_cannot_run_in_does_not_start_standbys_over_and_over(
    state_dir: Path, tmp_path: Path
) -> None:
    """A standby that ends on its own (its bash cannot load a library of the caller's
    LD_LIBRARY_PATH) stops the refills: no process start after every reply."""
    broken = tmp_path / "lib"
    broken.mkdir()
    (broken / "libtinfo.so.6").write_bytes(b"")
    env = {**os.environ, "LD_LIBRARY_PATH": str(broken)}
    probe = subprocess.run(["bash", "-c", "true"], env=env, capture_output=True)
    needs(probe.returncode == 127, "a bash linked with libtinfo.so.6", "Debian's bash")
    assert Client(state_dir=state_dir).bash("echo fine").stdout == "fine"
    client = Client(state_dir=state_dir, env=env)
    client.bash("true")  # its monitor cannot run either; its standby ends at once

    def last_pid() -> int:
        return int(Path("/proc/sys/kernel/ns_last_pid").read_text())

    started = []
    for _ in range(3):  # (the least of three: the other test worker starts processes too,
        before = last_pid()  # and a CI run counted its 10)
        for _ in range(20):
            client.status()
        started.append(last_pid() - before)
    assert min(started) < 10, started  # (one standby per reply before)
    assert Client(state_dir=state_dir).bash("echo fine").stdout == "fine"


def test_a_different_environment_gets_a_monitor_of_its_own(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAVE_TEST_MARK", "one")
    client.bash("true")
    old = standby_of(client, state_dir)
    old_id = old.environ()["WAVE_TASK_ID"]
    monkeypatch.setenv("WAVE_TEST_MARK", "two")
    r = client.bash('echo "$WAVE_TEST_MARK $WAVE_TASK_ID"')
    mark, task_id = r.stdout.split()
    assert (mark, task_id != old_id) == ("two", True)
    wait_until(lambda: gone(old))  # the old standby was let go, and reaped
    assert not (state_dir / "tasks" / f"{old_id}.log").exists()
    assert old_id not in {str(row["id"]) for row in journal_rows(state_dir)}


def test_a_killed_standby_is_replaced_on_the_spot(client: Client, state_dir: Path) -> None:
    client.bash("true")
    standby = standby_of(client, state_dir)
    standby.kill()
    wait_until(lambda: gone(standby))
    r = client.bash("echo still runs; exit 3")
    assert (r.stdout, r.exit_code) == ("still runs", 3)


def test_a_killed_supervisor_leaves_no_standby_behind(client: Client, state_dir: Path) -> None:
    waiting = {p.environ()["WAVE_TASK_ID"]: p for p in two_standbys(client, state_dir)}
    kill_supervisor(state_dir)
    wait_until(lambda: all(gone(p) for p in waiting.values()))  # pipes closed: ran nothing
    for reserved in waiting:  # recorded no status, only that nothing ran
        record = read_exit_record(state_dir / "tasks" / f"{reserved}.exit")
        assert (record.status, record.never_started) == (None, True)
    assert client.bash("echo next").stdout == "next"  # a new supervisor...
    for reserved in waiting:  # ...removed their empty logs, placeholders and records
        for suffix in (".log", ".exit", ".json"):
            assert not (state_dir / "tasks" / f"{reserved}{suffix}").exists()


def test_a_journal_rebuilt_after_a_crash_holds_no_standby(client: Client, state_dir: Path) -> None:
    """A standby's exit record holds no task record, written as its command starts: a
    journal rebuilt from the records after a crash holds the tasks that ran, and no
    standby."""
    waiting = {p.environ()["WAVE_TASK_ID"] for p in two_standbys(client, state_dir)}
    for reserved in waiting:
        assert read_exit_record(state_dir / "tasks" / f"{reserved}.exit") == ExitRecord(None, None)
    kill_supervisor(state_dir)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{state_dir / 'journal.db'}{suffix}").unlink(missing_ok=True)
    records = client.tasks(all=True)
    assert [(t.command, t.status) for t in records] == [("true", "completed")] * 2
    assert "cannot rebuild" not in (state_dir / "supervisor.log").read_text()
    for reserved in waiting:  # and their files are gone
        assert list((state_dir / "tasks").glob(f"{reserved}.*")) == []


def test_a_stopping_supervisor_lets_its_standbys_go(client: Client, state_dir: Path) -> None:
    waiting = {p.environ()["WAVE_TASK_ID"]: p for p in two_standbys(client, state_dir)}
    kill_supervisor(state_dir, signal.SIGTERM)
    wait_until(lambda: all(gone(p) for p in waiting.values()))
    for reserved in waiting:
        assert list((state_dir / "tasks").glob(f"{reserved}.*")) == []


def test_a_command_longer_than_a_pipe_holds(client: Client) -> None:
    lines = [f"line {i} {'x' * 60}" for i in range(20_000)]  # about 1.4 MB of command
    r = client.bash("wc -l <<'EOF'\n" + "\n".join(lines) + "\nEOF")
    assert (r.stdout, r.exit_code) == ("20000", 0)


def started_monitor(
    tmp_path: Path, kind: str, env: dict[str, str] | None = None
) -> tuple[Monitor, TaskFiles]:
    """A monitor started directly, of one kind: ``bash``, ``joined`` (its job joins a
    plain file as its cgroup), ``subreaper`` or ``python``; with its task's files."""
    task_id = "s" + uuid.uuid4().hex[:8]
    files = TaskFiles.for_task(tmp_path, task_id)
    joins = [str(tmp_path / "cgroup.procs")] if kind == "joined" else []
    started = start_monitor(
        task_id, env if env is not None else dict(os.environ), Shell("/bin/bash", "bash"),
        None if kind == "python" else "/bin/bash", files, joins=joins,
        subreaper=kind == "subreaper",
    )  # fmt: skip
    return started, files


@pytest.mark.parametrize("monitor", ["bash", "joined", "python"])
@pytest.mark.parametrize("cut", [0, 1, 20, -12, -2])
def test_incomplete_instructions_run_nothing(tmp_path: Path, monitor: str, cut: int) -> None:
    """A supervisor that dies while handing over a command leaves a monitor that runs
    nothing and records no status, only that nothing ran (the task then reads as never
    started, never as completed); a joined monitor's job reads them itself, and one
    killed reading them leaves the placeholder (D3a). A caller's ``__wave_go=1``
    changes nothing."""
    marker = tmp_path / "ran"
    started, files = started_monitor(tmp_path, monitor, {**os.environ, "__wave_go": "1"})
    data = monitor_instructions(f"touch {marker}", str(tmp_path), None)
    os.write(started.pipe, data[:cut])
    os.close(started.pipe)
    reap_monitor(started.pid, block=True)
    record = read_exit_record(files.exit)
    assert not marker.exists() and record.status is None
    assert record.never_started == (monitor != "joined" or cut == 0)
    assert os.read(started.record_pipe, 1) == b""  # closed, with no status written
    os.close(started.record_pipe)


def unread(pipe: int) -> int:
    """Bytes written to a pipe and not read yet (asked through its write end)."""
    import fcntl
    import termios

    count = fcntl.ioctl(pipe, termios.FIONREAD, b"\0\0\0\0")
    return int.from_bytes(count, sys.byteorder)


def test_an_exit_record_grown_huge_gives_its_status_only(tmp_path: Path) -> None:
    """A sandboxed foreground command can write to its exit record (its final directory
    goes there): one grown past the limit is not read into memory, only its status."""
    path = tmp_path / "t.exit"
    path.write_bytes(b"3\n     \n" + b'{"id": "t"}\n/tmp\n')
    assert read_exit_record(path) == ExitRecord(3, "/tmp", b'{"id": "t"}')
    with open(path, "r+b") as fh:
        fh.truncate(EXIT_RECORD_LIMIT + 1)  # sparse: nothing written
    assert read_exit_record(path) == ExitRecord(3, None)


def test_a_joined_job_killed_as_it_reads_its_instructions_runs_nothing(tmp_path: Path) -> None:
    """Its job has read part of a long command (the rest is still coming) when it is
    killed (a TaskStop right after the start): nothing runs, neither the command nor
    any part of it (before, its monitor read the rest and ran it as shell code), and the
    status is the signal's, as for a `bash -c` killed before its command."""
    started, files = started_monitor(tmp_path, "joined")
    command = f"touch {tmp_path}/start; " + "#" * 8000 + f"\ntouch {tmp_path}/part; : '"
    data = monitor_instructions(command, str(tmp_path), None)
    os.write(started.pipe, data[:5000])
    wait_until(lambda: unread(started.pipe) == 0)
    (job,) = wait_until(lambda: psutil.Process(started.pid).children())
    job.kill()
    wait_until(lambda: not psutil.pid_exists(job.pid) or gone(job))
    with contextlib.suppress(OSError):
        os.write(started.pipe, data[5000:])
    os.close(started.pipe)
    ended = reap_monitor(started.pid, block=True)
    os.close(started.record_pipe)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["cgroup.procs", files.log.name, files.exit.name]
    )  # fmt: skip
    assert (ended, read_exit_record(files.exit).status) == (MonitorExit(137), 137)


def test_a_joined_monitor_gets_its_pipes_whatever_descriptors_are_free(tmp_path: Path) -> None:
    """A fresh process (descriptors 3-9 free) starts a joined monitor: its pipes are
    moved to their numbers one after another, and none overwrites another (the started
    pipe once came as 8 and 9, and 8 was overwritten before it was moved: every such
    task was lost)."""
    script = (
        "import os, sys; from pathlib import Path\n"
        "from wave_bash.worker import Shell, TaskFiles, reap_monitor, read_exit_record,"
        " start_monitor\n"
        "d = Path(sys.argv[1]); files = TaskFiles.for_task(d, 'fresh')\n"
        "m = start_monitor('fresh', dict(os.environ), Shell('/bin/bash', 'bash'), '/bin/bash',"
        " files, joins=[str(d / 'cgroup.procs')])\n"
        "m.run('exit 5', str(d)); reap_monitor(m.pid, block=True)\n"
        "print(read_exit_record(files.exit).status)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "5", out


@pytest.mark.parametrize("monitor", ["bash", "joined", "subreaper", "python"])
def test_the_record_pipe_closes_once_the_status_is_written(tmp_path: Path, monitor: str) -> None:
    """A monitor's record pipe reads end of file once its exit record holds the status,
    whatever its command leaves running: neither the command nor what it starts holds
    the pipe (its fd 5) open."""
    started, files = started_monitor(tmp_path, monitor)
    left = f"{uuid.uuid4().int % 900_000 + 100_000}"
    try:
        started.run(
            "if { : >&5; } 2>/dev/null; then echo open; else echo closed; fi; "
            f"sleep {left} & exit 7",
            str(tmp_path),
        )
        assert select.select([started.record_pipe], [], [], 10)[0], "the pipe stayed open"
        assert os.read(started.record_pipe, 1) == b""
        assert read_exit_record(files.exit).status == 7
        assert files.log.read_text() == "closed\n"
    finally:
        os.close(started.record_pipe)
        with contextlib.suppress(AssertionError):  # (it may not have exec'd yet: then
            # missed, it ran on, and its lingering monitor held the reap below, a CI run)
            wait_until(lambda: _processes(["sleep", left]), timeout=10)
        for proc in _processes(["sleep", left]):
            proc.kill()
    reap_monitor(started.pid, block=True)  # (a subreaper lingers while the sleep runs)


def _processes(cmdline: list[str]) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == cmdline]


@pytest.mark.parametrize("monitor", ["bash", "joined", "python"])
def test_complete_instructions_run(tmp_path: Path, monitor: str) -> None:
    started, files = started_monitor(tmp_path, monitor)
    started.run("pwd; exit 5", str(tmp_path))
    reap_monitor(started.pid, block=True)
    assert files.log.read_text().strip() == str(tmp_path)
    assert read_exit_record(files.exit) == ExitRecord(5, str(tmp_path))  # its cwd, too


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"command": "echo \ud800"}, "lone surrogate"),
        ({"env": {"PATH": os.environ["PATH"], "BAD=NAME": "x"}}, "cannot pass this environment"),
        ({"env": {"PATH": os.environ["PATH"], "X": "\ud800"}}, "cannot pass this environment"),
    ],
)
def test_unrunnable_input_is_refused_and_leaves_nothing(
    client: Client, state_dir: Path, params: dict[str, object], words: str
) -> None:
    client.bash("true")
    standby = standby_of(client, state_dir)
    environment = standby.environ()
    reserved = environment.pop("WAVE_TASK_ID")
    body = {"command": "echo hi", "cwd": "/tmp", "env": dict(os.environ), **params}
    answer = ask_supervisor(state_dir, "run", body)
    assert answer["type"] == "error" and words in str(answer["message"]), answer
    (first,) = [str(row["id"]) for row in journal_rows(state_dir)]  # nothing recorded
    sup = psutil.Process(client.status().pid or 0)
    # No monitor is left waiting for a command that never comes: only standbys for the
    # caller's environment.
    client.status()  # (served after the refill)
    # The standby is kept (refused before a monitor was taken) or let go, its log removed
    # before the refusal was sent; let go, it ends at once, and no other starts.
    if not (state_dir / "tasks" / f"{reserved}.log").exists():
        wait_until(lambda: gone(standby))

    def only_standbys() -> tuple[list[psutil.Process]] | None:  # (started off the loop)
        waiting = standbys(client, state_dir)
        live = {c.pid for c in sup.children() if not gone(c)}
        return (waiting,) if live == {p.pid for p in waiting} else None

    found = wait_until(only_standbys)
    assert isinstance(found, tuple)
    (waiting,) = found
    kept = set()
    for p in waiting:
        other = p.environ()
        kept.add(other.pop("WAVE_TASK_ID"))
        assert other == environment
    assert reserved in kept or gone(standby)
    assert {p.stem for p in (state_dir / "tasks").glob("*.log")} == {first} | kept
    assert client.bash("echo fine").stdout == "fine"


def test_a_directory_name_that_is_not_utf8(client: Client, tmp_path: Path) -> None:
    odd = tmp_path / os.fsdecode(b"caf\xe9")  # a Latin-1 name: undecodable bytes
    odd.mkdir()
    r = Client(state_dir=client.layout.root, cwd=str(odd)).bash('basename "$PWD" | od -An -tx1')
    assert (r.exit_code, r.stdout.split()) == (0, ["63", "61", "66", "e9", "0a"])
    (task,) = [t for t in client.tasks(all=True) if t.output_path == r.output_path]
    assert os.fsencode(task.cwd) == bytes(odd)  # (kept as it was, not an escape)


def test_a_state_dir_whose_path_is_not_utf8(tmp_path: Path) -> None:
    """Its logs are read, ended and running: the journal kept their paths as escapes,
    which led nowhere (the output of an ended task read as removed), and the watcher of
    a running one's log could not take the path (an internal error; a review)."""
    client = Client(state_dir=tmp_path / os.fsdecode(b"caf\xe9") / "state")
    try:
        ended = client.bash("echo hi", run_in_background=True).background_task_id
        assert ended is not None and client.task_output(ended).output == "hi"
        running = client.bash("sleep 0.5; echo there", run_in_background=True)
        running = running.background_task_id
        assert running is not None
        result = client.task_output(running)
        assert (result.status, result.output) == ("completed", "there")
        (task,) = [t for t in client.tasks() if t.id == ended]
        assert os.path.exists(task.output_path)
    finally:
        client.shutdown()


def test_a_standby_whose_job_was_killed_still_runs_the_command(
    client: Client, state_dir: Path
) -> None:
    """The job forked ahead (it joins the task's cgroups before its command comes) is
    killed while it waits: the next command still runs, once, in its task's cgroup."""
    client.bash("true")
    if "cgroup" not in (client.status().tracking or ""):
        pytest.skip("the job is forked ahead only where it joins cgroups")
    standby = standby_of(client, state_dir)
    (job,) = wait_until(standby.children)
    job.kill()
    wait_until(lambda: gone(job))
    r = client.bash("echo ran; grep -c '^0::.*wave-bash' /proc/self/cgroup; yes | head -1")
    assert (r.exit_code, r.stdout.split()) == (0, ["ran", "1", "y"])


def test_a_stop_as_the_task_starts_runs_its_command_nowhere(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """The task is stopped before its job (forked ahead, here held stopped) took its
    command: the job dies of the stop, and no other job runs the command (its monitor
    once ran it in a new job, after the stop's kill, as for a job killed by chance)."""
    if "cgroup" not in (client.status().tracking or ""):
        pytest.skip("the job is forked ahead only where it joins cgroups")
    monitors = two_standbys(client, state_dir)
    jobs = [wait_until(s.children)[0] for s in monitors]
    for monitor, job in zip(monitors, jobs, strict=True):  # (held once it joined its
        wait_until(lambda m=monitor, j=job: _cgroup(j) != _cgroup(m))  # cgroup: a stop
        job.suspend()  # kills what is there; one held before it joined, under load, ran on)
    marker = tmp_path / "ran"
    try:
        task_id = client.bash(f"touch {marker}", run_in_background=True).background_task_id
        stopped = client.task_stop(task_id or "")
    finally:
        for job in jobs:
            with contextlib.suppress(psutil.Error):
                job.resume()
    assert (stopped.status, stopped.exit_code) == ("killed", 143)  # the stop's SIGTERM
    assert not marker.exists()


@pytest.mark.parametrize("stopping", [False, True])
def test_a_joined_job_killed_before_its_command_is_replaced_unless_stopping(
    tmp_path: Path, stopping: bool
) -> None:
    """The monitor's side: told of a stop first, it runs nothing once its job is killed
    before it took the command, and records the kill; else a new job runs it."""
    marker = tmp_path / "ran"
    started, files = started_monitor(tmp_path, "joined")
    (job,) = wait_until(psutil.Process(started.pid).children)
    if stopping:
        tell_stopping(started.pid)
    job.kill()
    wait_until(lambda: gone(job))
    with contextlib.suppress(BrokenPipeError):  # (stopping: its monitor may have gone)
        started.send(monitor_instructions(f"touch {marker}", str(tmp_path), None))
    reap_monitor(started.pid, block=True)
    os.close(started.record_pipe)
    assert marker.exists() is not stopping
    assert read_exit_record(files.exit).status == (137 if stopping else 0)


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_the_callers_errexit_holds_for_the_command_not_the_monitor(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """SHELLOPTS=errexit:nounset in the caller's environment: the command runs under
    them (as with bash -c), and its status is recorded (the monitor once exited at its
    own `wait` under errexit, leaving no exit record)."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    env = {**os.environ, "SHELLOPTS": "errexit:nounset"}
    client = Client(state_dir=state_dir, env=env)
    r = client.bash("false; echo after")
    assert (r.exit_code, r.stdout, r.error) == (1, "", None)
    r = client.bash("echo $nope_unset; echo after")
    assert (r.exit_code, r.error) == (1, None) and "unbound variable" in r.stdout
    assert client.bash("exit 7").exit_code == 7


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_the_callers_verbose_holds_for_the_command_only(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """SHELLOPTS=verbose: the command runs under it (a bash it starts echoes its input),
    and no monitor echoes its own script into the log (each once did, whole)."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    client = Client(state_dir=state_dir, env={**os.environ, "SHELLOPTS": "verbose"})
    command = "echo hi; [[ -o verbose ]] && echo on; bash -c 'echo child'"
    for _ in range(2):  # a monitor started for it, then a standby
        task_id = client.bash(command, run_in_background=True).background_task_id or ""
        assert client.wait(task_id, timeout=10_000).exit_code == 0
        output = client.task_output(task_id).output
        assert output.splitlines() == ["hi", "on", "echo child", "child"], output
    assert client.bash("echo fg").stdout.startswith("fg\n")


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_the_callers_xtrace_and_allexport_hold_for_the_command_only(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """SHELLOPTS=xtrace: the command is traced, never the monitor's script nor the cwd
    capture; SHELLOPTS=allexport: the command's assignments are exported, none of the
    monitor's."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    traced = Client(state_dir=state_dir, follow_cd=True, env={**os.environ, "SHELLOPTS": "xtrace"})
    lines = traced.bash("echo hi").stdout.splitlines()
    assert len(lines) == 2 and re.fullmatch(r"\++ echo hi", lines[0]) and lines[1] == "hi", lines
    exporting = Client(state_dir=state_dir, env={**os.environ, "SHELLOPTS": "allexport"})
    r = exporting.bash("X=1; env | grep -c '^X='; env | grep -c '__wave'")
    assert r.stdout.splitlines() == ["1", "0"], r.stdout


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
@pytest.mark.parametrize("fd", ["5", "8"])
def test_the_callers_bash_xtracefd_never_reaches_a_monitor(
    state_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str, fd: str
) -> None:
    """SHELLOPTS=xtrace with BASH_XTRACEFD naming one of a monitor's own pipes (its
    record pipe, 5; its job's word, 8): the monitor's first line was traced into it, and
    the task's status was lost or its end came late. The command gets it back (as under
    `bash -c`, that descriptor is not open there: bash says so and traces to stderr)."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    env = {**os.environ, "SHELLOPTS": "xtrace", "BASH_XTRACEFD": fd}
    client = Client(state_dir=state_dir, env=env, cwd=workdir)
    command = "echo hi; printenv BASH_XTRACEFD; exit 3"
    for _ in range(2):  # (the second in a standby)
        r = client.bash(command)
        lines = r.stdout.splitlines()
        assert (r.exit_code, lines[-4], lines[-2]) == (3, "hi", fd), r
        assert f"BASH_XTRACEFD: {fd}: invalid value" in lines[0] and "__wave" not in r.stdout


@pytest.mark.skipif(not hasattr(__import__("resource"), "prlimit"), reason="Linux only")
@pytest.mark.parametrize("joined", [False, True], ids=["plain", "joined"])
def test_a_bash_monitor_and_its_command_keep_the_real_process_limit(
    tmp_path: Path, joined: bool
) -> None:
    """The supervisor lowers a new bash monitor's soft process limit (bash then sizes its
    table of finished jobs small); the monitor restores it from its first line before it
    forks, so neither it nor its command is left with the low one."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    task_id = "s" + uuid.uuid4().hex[:8]
    files = TaskFiles.for_task(tmp_path, task_id)
    joins = [str(tmp_path / "cgroup.procs")] if joined else []  # a plain file takes the "0"
    started = start_monitor(
        task_id, dict(os.environ), Shell("/bin/bash", "bash"), "/bin/bash", files, joins=joins
    )
    assert started.primed > 0
    started.run(f"ulimit -Su; grep '^Max processes' /proc/{started.pid}/limits", "/")
    reap_monitor(started.pid, block=True)
    expected = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    lines = files.log.read_text().splitlines()
    assert lines[0] == expected and lines[1].split()[2] == expected, lines
    assert read_exit_record(files.exit).status == 0


@pytest.mark.skipif(not hasattr(__import__("resource"), "prlimit"), reason="Linux only")
@pytest.mark.parametrize("bash_env", [False, True], ids=["plain", "BASH_ENV"])
def test_a_user_with_many_processes_still_gets_commands_run(bash_env: bool) -> None:
    """Run as a user who has more processes than the monitor's lowered limit: the monitor
    forks its job only after restoring the real limit, so the command runs. A caller's
    BASH_ENV, which bash sources before the monitor's first line, may fork: then the
    limit is not lowered at all."""
    needs_root("acting as another uid needs root (CI runs as root)")
    work = Path(tempfile.mkdtemp(prefix="wb-nobody-", dir="/tmp"))  # reachable by nobody
    work.chmod(0o777)

    def run_one() -> bytes:  # as nobody: 300 processes, then a monitor running one command
        sleepers = [os.posix_spawn("/bin/sleep", ["sleep", "30"], {}) for _ in range(300)]
        try:
            files = TaskFiles.for_task(work, "nobodytask")
            env = {"PATH": "/usr/bin:/bin"}
            if bash_env:
                (work / "env.sh").write_text("FROM_ENV=$(echo sourced)\n")
                env["BASH_ENV"] = str(work / "env.sh")
            started = start_monitor(
                "nobodytask", env, Shell("/bin/bash", "bash"),
                "/bin/bash", files, joins=[str(work / "cgroup.procs")],
            )  # fmt: skip
            started.run("echo ran as $(id -u) ${FROM_ENV-}", "/")
            reap_monitor(started.pid, block=True)
            return files.log.read_bytes() or b"-"
        finally:
            for pid in sleepers:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)

    try:
        got = as_nobody(run_one)
    finally:
        shutil.rmtree(work)
    assert got == (b"ran as 65534 sourced\n" if bash_env else b"ran as 65534\n"), got


def test_a_command_keeps_the_status_of_each_of_many_background_jobs(client: Client) -> None:
    """The job is a fork of a monitor whose bash sized its job table by the lowered limit:
    the command still remembers as many finished jobs as a bash under the real limit."""
    r = client.bash("(exit 7) & first=$!; for i in $(seq 800); do true & done; wait $first")
    assert r.exit_code == 7, (r.stdout, r.stderr)


def test_the_command_sees_its_own_shell_variables(state_dir: Path) -> None:
    """Under the caller's allexport, nothing the job sets for the command is exported;
    BASH_EXECUTION_STRING is the command (as under bash -c), not the monitor's script; a
    CHILD_MAX of the caller's own is left as it is."""
    env = {**os.environ, "SHELLOPTS": "allexport"}
    client = Client(state_dir=state_dir, env=env)
    command = 'env | grep -c "^CHILD_MAX=\\|^BASH_EXECUTION_STRING=\\|^__wave"; echo "$BASH_EXECUTION_STRING"'
    r = client.bash(command)
    assert r.stdout.splitlines() == ["0", command], r.stdout
    own = Client(state_dir=state_dir, env={**os.environ, "CHILD_MAX": "100"})
    assert own.bash("echo $CHILD_MAX").stdout == "100"


# --- the caller's environment reaches the command, never the monitor (SPEC E2d) -------


def bash_c(command: str, env: dict[str, str], cwd: Path) -> tuple[str, int]:
    """What ``bash -c`` does with the same environment and directory (stdin empty, as a
    task's): its output (stderr merged, blank lines around it off) and exit status."""
    done = subprocess.run(
        ["bash", "-c", command], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=30, check=False,
    )  # fmt: skip
    return done.stdout.strip("\n"), done.returncode


BUILTINS_THE_MONITOR_USES = (
    "cd", "wait", "printf", "read", "exec", "set", "unset", "eval", "trap", "umask",
    "ulimit", "pwd", "kill", "export", "echo", "declare", "command", "break", "source",
    "continue",
)  # fmt: skip


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_the_callers_functions_named_like_builtins_reach_the_command_only(
    state_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """Exported functions named like the builtins the monitor and the job's own steps use
    (a `cd` that lists the directory, a pass-through `exec`): the command sees each, as
    under `bash -c`, exported ones exported again; the monitor calls the builtins. Before,
    a `cd` function's output came before every command, and an `exec`, `set` or `wait`
    function lost the command or its status."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    env = {**os.environ}
    for name in BUILTINS_THE_MONITOR_USES:  # each says its name, then does its work
        env[f"BASH_FUNC_{name}%%"] = f"() {{ builtin printf 'fn-{name} '; builtin {name} \"$@\"; }}"
    client = Client(state_dir=state_dir, env=env, cwd=workdir, follow_cd=True)
    command = "echo out; cd /tmp; pwd; bash -c 'type -t exec wait'; exit 3"
    r = client.bash(command)
    assert (r.stdout, r.exit_code) == bash_c(command, env, workdir), r
    assert r.stdout.startswith("fn-echo out\nfn-cd fn-pwd /tmp\n"), r.stdout
    assert client.bash("exit 0").error is None
    assert client.cwd == "/tmp"  # the cwd capture called the real `pwd`
    task_id = client.bash("sleep 0.2; echo done", run_in_background=True).background_task_id
    assert task_id is not None
    assert client.wait(task_id, timeout=10_000).exit_code == 0
    waiting = standbys(client, state_dir)  # let go as the supervisor stops: each exits
    kill_supervisor(state_dir, signal.SIGTERM)
    wait_until(lambda: all(not psutil.pid_exists(p.pid) or gone(p) for p in waiting))


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_the_callers_bash_env_is_sourced_as_bash_c_does(
    state_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """BASH_ENV is sourced once per command, by the command's own shell: in its
    directory, as the file is now, after the umask it starts with, with nothing to read
    on stdin. Before, the (standby) monitor sourced it: in the supervisor's directory, as
    the file was a call earlier, once more per standby, and a `read` in it ate the
    monitor's instructions (the command never ran, yet "succeeded")."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    count = workdir / "sourced"
    bash_env = workdir / "env.sh"
    bash_env.write_text(
        f'echo "sourced in $PWD"; read -r line && echo "read $line"; umask 077\n'
        f"echo x >> {count}; from_env() {{ echo version 1; }}\n"
    )
    env = {**os.environ, "BASH_ENV": str(bash_env)}
    client = Client(state_dir=state_dir, env=env, cwd=workdir)
    command = 'from_env; umask; echo "$BASH_ENV"; exit 4'
    r = client.bash(command)
    assert (r.stdout, r.exit_code) == bash_c(command, env, workdir), r
    assert r.stdout.startswith(f"sourced in {workdir}\nversion 1\n0077"), r.stdout
    bash_env.write_text(bash_env.read_text().replace("version 1", "version 2"))
    assert client.bash("from_env").stdout.endswith("version 2")
    assert count.read_text() == "x\n" * 3  # our two commands and the one bash -c
    relative = Client(state_dir=state_dir, env={**os.environ, "BASH_ENV": "env.sh"}, cwd=workdir)
    assert relative.bash("from_env").stdout.endswith("version 2")  # the directory's file


BASH_ENV_STARTUPS = {  # name: (the file, the caller's other variables, the command)
    "errexit off while sourced": ("echo $-; false\necho still\n", {"SHELLOPTS": "errexit"}, "echo cmd"),
    "nounset ends the file only": ("echo $nope; echo still\n", {"SHELLOPTS": "nounset"}, "echo cmd"),
    "not read in POSIX mode": ("echo sourced\n", {"SHELLOPTS": "posix"}, "echo cmd"),
    "its return is not the command's $?": ("return 3\n", {}, "echo $?"),
    "a syntax error": ("if then\n", {"SHELLOPTS": "errexit"}, "echo cmd"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BASH_ENV_STARTUPS))
def test_bash_env_is_read_by_bash_itself(state_dir: Path, workdir: Path, case: str) -> None:
    """The command's own bash reads BASH_ENV, with bash's own start-up rules (errexit off
    while it is read, its value expanded, a directory or a newline in its name): the
    output and status are those of `bash -c`. Sourcing it from the job's script got each
    of these wrong (found by review)."""
    content, extra, command = BASH_ENV_STARTUPS[case]
    (workdir / "env.sh").write_text(content)
    env = {**os.environ, "BASH_ENV": str(workdir / "env.sh"), **extra}
    r = Client(state_dir=state_dir, env=env, cwd=workdir).bash(command)
    assert (r.stdout, r.exit_code) == bash_c(command, env, workdir), r
    odd = workdir / "a\nb"  # its own line numbers stay the command's
    odd.mkdir()
    (odd / "e.sh").write_text("echo odd\n")
    (workdir / "dir").mkdir()
    for value in (f"{odd}/e.sh", "$PWD/env.sh", str(workdir / "dir")):
        env = {**os.environ, "BASH_ENV": value}
        command = "echo $0 $SHLVL; nosuch_command"  # its own name and one shell level
        r = Client(state_dir=state_dir, env=env, cwd=workdir).bash(command)
        assert (r.stdout, r.exit_code) == bash_c(command, env, workdir), r


def test_the_callers_exec_function_in_posix_mode_and_builtin_function(
    state_dir: Path, workdir: Path
) -> None:
    """In POSIX mode a caller's `exec` function is left where it is (the special builtin
    comes first; defining it again failed, and the command never ran). A function named
    `builtin`, which every `\\builtin` of the monitor would call, is not passed on: the
    commands run as they would without it."""
    env = {**os.environ, "SHELLOPTS": "posix", "BASH_FUNC_exec%%": "() { echo fn; }"}
    command = "type -t exec; exit 3"
    r = Client(state_dir=state_dir, env=env, cwd=workdir).bash(command)
    assert (r.stdout, r.exit_code) == bash_c(command, env, workdir) == ("function", 3), r
    for body in ("() { :; }", '() { command builtin "$@"; }'):
        env = {**os.environ, "BASH_FUNC_builtin%%": body}
        client = Client(state_dir=state_dir, env=env, cwd=workdir, follow_cd=True)
        r = client.bash("echo hi; cd /tmp; type -t builtin; exit 4")
        assert (r.stdout, r.exit_code, r.error) == ("hi\nbuiltin", 4, None), r
        assert client.cwd == "/tmp"


def test_a_zsh_command_keeps_bash_env_for_the_bash_it_starts(
    state_dir: Path, workdir: Path
) -> None:
    """zsh never reads BASH_ENV: a zsh command's monitor no longer sources it either (its
    output came before every zsh command); a bash the command starts does."""
    zsh = needs_tool("zsh", "zsh")
    bash_env = workdir / "env.sh"
    bash_env.write_text("echo sourced\n")
    env = {**os.environ, "BASH_ENV": str(bash_env), "WAVE_SHELL": zsh}
    client = Client(state_dir=state_dir, env=env, cwd=workdir)
    r = client.bash('echo "zsh $BASH_ENV"; bash -c "echo in bash"')
    assert r.stdout == f"zsh {bash_env}\nsourced\nin bash", r.stdout


def test_errtrace_under_nocasematch_is_not_errexit(state_dir: Path) -> None:
    """The monitor reads the caller's options by name: `$-` holds E (errtrace), which a
    caller's nocasematch made match `*e*`, running its commands under errexit."""
    env = {**os.environ, "SHELLOPTS": "errtrace", "BASHOPTS": "nocasematch"}
    r = Client(state_dir=state_dir, env=env).bash("false; echo after; exit 5")
    assert (r.stdout, r.exit_code) == ("after", 5), r


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_a_command_signalling_its_own_shell_ends_as_under_bash_c(
    state_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """SPEC F1b. `kill $$`: a command naming `$$` runs in a bash of its own, which ends
    by it or runs its trap, as under `bash -c` (in a subshell of its monitor, `$$` was
    the monitor's: the command ran on a moment, and `kill -ABRT $$` lost its status).
    One whose text does not show it (`eval` of a computed `$$`) still reaches the
    monitor, which passes the signal on: that path is below."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    client = Client(state_dir=state_dir, env=dict(os.environ), cwd=workdir)
    for command in (
        "echo a; kill $$; sleep 2; echo b",
        "echo a; kill -QUIT $$; sleep 0.1; echo b",  # bash ignores it (and sleeps)
        "trap 'echo int; exit 6' INT; kill -INT $$; sleep 2; echo b",  # to the group
        "trap 'echo trapped; exit 5' TERM; kill $$; sleep 2; echo b",
        "trap 'echo got USR1' USR1; kill -USR1 $$; sleep 0.1; echo after",
        "echo a; kill -ABRT $$; sleep 2; echo b",  # (the monitor died of it: a trial)
        "echo a; kill -XCPU $$; sleep 2; echo b",
        "trap 'echo sys; exit 4' SYS; kill -SYS $$; sleep 2; echo b",
        # (a `$$` the text does not show: the monitor's, which passes the signal on)
        "d='$'; echo a; eval \"kill ${d}${d}\"; sleep 2; echo b",
        "echo a; kill ${$%x}; sleep 2; echo b",  # (`${$…}` names it too: a review)
        "d='$'; echo a; eval \"kill -ABRT ${d}${d}\"; sleep 2; echo b",
        "d='$'; trap 'echo t; exit 5' TERM; eval \"kill ${d}${d}\"; sleep 2; echo b",
    ):
        r = client.bash(command)
        output, status = bash_c(command, dict(os.environ), workdir)
        assert (r.stdout, r.exit_code) == (output, 128 - status if status < 0 else status), r
        assert r.error is None, r
    task_id = client.bash("sleep 0.1; kill $$; sleep 5", run_in_background=True).background_task_id
    assert client.wait(task_id or "", timeout=10_000).exit_code == 143
    # A command ignoring it and ending at once: its own status, or (bash 5.2 lost it in
    # that moment) none, never the signal's. The forwarding traps are not the command's.
    statuses = {client.bash('trap "" TERM; kill $$; exit 5').exit_code for _ in range(15)}
    assert statuses <= {5, None}, statuses
    assert client.bash("trap -p | grep -c __wave_sig").stdout == "0"


def test_a_command_naming_its_pid_is_its_own_shell(client: Client, workdir: Path) -> None:
    """`kill $$; echo after` printed `after` and exited 0, and `kill -9 $$` lost the
    status, where `$$` was the monitor's (two trials): as under `bash -c`, `$$` is the
    command's own shell, which the signal ends at once."""
    for command in ("echo a; kill $$; echo b", "kill -9 $$; echo b", "echo ${$%x} >/dev/null; kill $$; echo b",
                    "[ $$ = $BASHPID ] && echo same"):  # fmt: skip
        r = client.bash(command)
        output, status = bash_c(command, dict(os.environ), workdir)
        assert (r.stdout, r.exit_code) == (output, 128 - status if status < 0 else status), r


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_a_background_command_sees_none_of_its_monitors_traps(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """`trap -p` in a background command (no cwd capture trap of its own) shows nothing:
    a trap its monitor had set (signal forwarding, the stop's SIGURG) would come back
    with `eval "$(trap -p)"`."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    client = Client(state_dir=state_dir)
    for _ in range(2):  # a monitor started for it, then a standby
        task_id = client.bash("trap -p", run_in_background=True).background_task_id or ""
        assert client.wait(task_id, timeout=10_000).exit_code == 0
        assert client.task_output(task_id).output == ""


def test_a_status_read_as_it_is_written_is_no_status(tmp_path: Path) -> None:
    """A monitor writes its status, newline included, in one write over the blank
    placeholder; read as it lingers (a re-adopted task's record is read, not waited
    for), a status half written ("1" of "130", the rest still blank) is none yet."""
    record = tmp_path / "t.exit"
    record.write_bytes(b"1" + EXIT_PLACEHOLDER[1:])
    assert read_exit_record(record).status is None
    record.write_bytes(b"130\n" + EXIT_PLACEHOLDER[4:])
    assert read_exit_record(record).status == 130


def test_a_commands_parent_is_its_monitor_not_the_supervisor(client: Client) -> None:
    """`$PPID` in a command that ran in its monitor's subshell was the supervisor's pid:
    `kill $PPID` stopped the supervisor (a trial). A command naming it has a shell of its
    own, whose parent is its monitor, as under `bash -c` the caller is."""
    supervisor = client.status().pid
    r = client.bash("ps -o args= -p $PPID")
    assert r.exit_code == 0 and str(supervisor) != r.stdout
    assert "wave_bash.supervisor" not in r.stdout and "__wave" in r.stdout, r.stdout
    assert client.bash("echo $PPID").stdout != str(supervisor)


def test_a_monitor_in_an_ssh_session_runs_no_bashrc(state_dir: Path, tmp_path: Path) -> None:
    """A bash with `SSH_CLIENT` in its environment below shell level 2 sources
    `~/.bashrc`, as one sshd started would: every monitor of a supervisor in an ssh
    session did, and its output (pyenv's rehash errors) came in each task's log (a CI
    run of the remote tests)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("echo SOURCED\n")
    env = {**os.environ, "SSH_CLIENT": "127.0.0.1 50000 22", "SHLVL": "0", "HOME": str(home)}
    client = Client(state_dir=state_dir, env=env)
    assert client.bash("echo hi").stdout == "hi"
    task_id = client.bash("echo bg", run_in_background=True).background_task_id or ""
    assert client.wait(task_id, timeout=10_000).status == "completed"
    assert client.task_output(task_id).output == "bg"
