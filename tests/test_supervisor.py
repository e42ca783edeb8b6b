"""The supervisor's own promises: one per state dir, private, bounded, tidy (SPEC D6, X1, issue 5)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from conftest import (
    kill_supervisor,
    needs_cgroups,
    needs_tool,
    raw_request,
    reap,
    run_cli,
    start_bg,
    start_supervisor,
    supervisor_pids,
    task_alive,
    wait_until,
)

from wave_bash.api import BashResult, Client
from wave_bash.supervisor.standby import STANDBY_DEPTH


def test_fifty_concurrent_starters_one_supervisor(state_dir: Path) -> None:
    results: list[BashResult] = []
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            results.append(Client(state_dir=state_dir).bash(f"echo {i}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(int(r.stdout) for r in results) == list(range(50))
    # Starters that lost the race exit on their own; exactly one supervisor stays.
    wait_until(lambda: len(supervisor_pids(state_dir)) == 1)
    assert (state_dir / "supervisor.lock").exists()  # lock files are never deleted


def test_tasks_inherit_no_supervisor_descriptor(client: Client, state_dir: Path) -> None:
    r = client.bash("for fd in /proc/$BASHPID/fd/*; do readlink $fd; done")
    targets = set(r.stdout.splitlines())
    assert targets <= {"/dev/null", r.output_path}, targets  # no lock, journal, socket or log


def test_private_files(client: Client, state_dir: Path) -> None:
    r = client.bash("echo x", run_in_background=True)
    client.wait(r.background_task_id or "", timeout=10_000)
    assert state_dir.stat().st_mode & 0o777 == 0o700
    assert (state_dir / "tasks").stat().st_mode & 0o777 == 0o700
    assert (state_dir / "supervisor.sock").stat().st_mode & 0o777 == 0o600
    names = {p.name for p in state_dir.iterdir()}
    assert {"journal.db", "journal.db-wal", "journal.db-shm", "supervisor.lock"} <= names
    for path in state_dir.rglob("*"):  # every file 0600, every dir 0700 (issue 11 §5)
        expected = 0o700 if path.is_dir() else 0o600
        assert path.stat().st_mode & 0o777 == expected, (path, oct(path.stat().st_mode))


def _ask_as(uid: int, sock_path: Path, refused: bool) -> dict[str, object]:
    """Connect as another user (root impersonates it in a forked child) and return the answer.

    The child only makes system calls: as the other user it may not be able to read the
    Python installation (e.g. under /root), so it must not import anything.
    """
    line = raw_request("status", {})
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop to ``uid`` and talk to the supervisor
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(str(sock_path))
                if refused:  # it hears so before it sends: its late request must still go
                    poll = select.poll()  # through, so wait for a hang-up that must not come
                    poll.register(s, select.POLLHUP)
                    poll.poll(1000)
                s.sendall(line)
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
                os.write(write_fd, answer)
        except BaseException as exc:
            os.write(write_fd, b'{"type": "child-error", "error": "%s"}' % repr(exc).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        answer = fh.read()
    os.waitpid(pid, 0)
    return json.loads(answer)


def test_other_uid_is_refused(client: Client, state_dir: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("only root can connect as another uid (CI runs as root)")
    client.status()
    sock = state_dir / "supervisor.sock"
    state_dir.chmod(0o755)  # let the other user reach the socket at all,
    sock.chmod(0o666)  # so that only the peer-credential check stands in the way
    answer = _ask_as(65534, sock, refused=True)
    assert answer["type"] == "error" and answer["code"] == "forbidden", answer
    # the same request from the owner works
    assert _ask_as(0, sock, refused=False)["type"] == "result"


def test_sigterm_stops_the_supervisor_but_not_its_tasks(client: Client, state_dir: Path) -> None:
    tid = start_bg(client, "sleep 1; echo done")
    kill_supervisor(state_dir, signal.SIGTERM)
    assert not (state_dir / "supervisor.sock").exists()  # a clean exit removes its socket
    assert task_alive(tid)
    assert "stopping; 1 task(s) keep running" in (state_dir / "supervisor.log").read_text()
    assert client.wait(tid, timeout=10_000).status == "completed"


def test_a_clean_stop_logs_no_error(state_dir: Path) -> None:
    """Stopping cancels the connection handlers (the stop's own too): Python 3.11 logged
    each one as "Exception in callback" with a traceback (a trial)."""
    from wave_bash.api.paths import StateLayout
    from wave_bash.api.transport import supervisor_runs

    assert run_cli(state_dir, "run", "--", "echo", "hi").returncode == 0
    (pid,) = supervisor_pids(state_dir)
    assert run_cli(state_dir, "supervisor", "stop").returncode == 0
    # Done as it returns: the state dir free for the next supervisor, and nothing of it
    # open there (a trial's `umount` found it busy, as it had answered, then stopped)
    assert not supervisor_runs(StateLayout(state_dir))
    with contextlib.suppress(psutil.NoSuchProcess):
        assert not [f for f in psutil.Process(pid).open_files() if str(state_dir) in f.path]
    wait_until(lambda: not supervisor_pids(state_dir))
    log_text = (state_dir / "supervisor.log").read_text()
    assert " ERROR " not in log_text and "Traceback" not in log_text, log_text


def test_ends_that_come_in_as_the_supervisor_stops_are_kept(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """Tasks that end as their supervisor stops: an end that came in while ``asyncio.run``
    cancelled what was left met a journal closed already, and its row and notice were
    dropped with an error (one stop in three, 60 tasks: a trial). The journal closes
    once the loop has ended."""
    gate = tmp_path / "gate"
    gate.touch()
    with open(gate) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        ids = [start_bg(client, f"flock -s {gate} true") for _ in range(40)]
    assert client.shutdown()  # (the lock let go: the 40 end together, as it stops)
    wait_until(lambda: not supervisor_pids(state_dir))
    log_text = (state_dir / "supervisor.log").read_text()
    assert " ERROR " not in log_text and "Traceback" not in log_text, log_text
    assert {client.wait(i, timeout=10_000).status for i in ids} == {"completed"}


def test_log_cap_stops_an_endless_writer(client: Client, state_dir: Path) -> None:
    start_supervisor(state_dir, WAVE_LOG_CAP="200K")
    tid = start_bg(client, "while :; do echo 'endless output line'; done", description="Endless")
    task = client.wait(tid, timeout=30_000)
    assert (task.status, task.end_reason) == ("killed", "log_cap")
    size = Path(task.output_path).stat().st_size
    assert 200 * 1024 < size < 200 * 1024 + 64 * 1024 * 1024  # stopped within about a second
    (notice,) = client.notifications()
    assert "was stopped because its output reached the log size cap" in notice.message
    kill_supervisor(state_dir)  # `0`: no cap, as `WAVE_IDLE_EXIT=0` is no idle exit (it
    start_supervisor(state_dir, WAVE_LOG_CAP="0")  # stopped any command that printed)
    printer = start_bg(client, "echo first; sleep 2.5; echo last")
    assert client.wait(printer, timeout=30_000).status == "completed"


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_log_cap_stops_what_an_ended_task_left_writing(
    client: Client, state_dir: Path, tracking: str
) -> None:
    """The cap looked at running tasks only: a command that ended leaving `yes &` grew its
    log past it, for ever (a trial)."""
    if tracking == "cgroup":
        needs_cgroups()
    start_supervisor(state_dir, WAVE_LOG_CAP="200K", WAVE_TRACKING=tracking)
    tid = start_bg(client, "(while :; do echo 'endless output line'; done) & echo started")
    assert client.wait(tid, timeout=30_000).status == "completed"
    wait_until(lambda: [t.leftover_processes for t in client.tasks() if t.id == tid] == [0],
               timeout=30)  # fmt: skip
    (task,) = [t for t in client.tasks() if t.id == tid]
    assert Path(task.output_path).stat().st_size < 200 * 1024 + 64 * 1024 * 1024


def test_gc_prunes_finished_tasks_only(client: Client, state_dir: Path) -> None:
    done = start_bg(client, "echo old")
    client.wait(done, timeout=10_000)
    running = start_bg(client, "sleep 300")
    assert client.gc(older_than=3600) == []  # too young
    assert [n.task_id for n in client.notifications()] == [done]  # read: it may go now
    assert client.gc(older_than=0) == [done]
    assert [t.id for t in client.tasks(all=True)] == [running]
    assert not list((state_dir / "tasks").glob(f"{done}.*"))
    assert (state_dir / "journal.db-wal").stat().st_size == 0  # checkpointed


def test_a_directory_named_as_a_task_file_does_not_stop_the_prune(
    client: Client, state_dir: Path
) -> None:
    """`tasks/<id>.junk/` made every prune fail (`Is a directory`) after some of the
    files had gone, the rows kept (a review): it is left alone, the rest is pruned."""
    first, second = start_bg(client, "echo a"), start_bg(client, "echo b")
    for tid in (first, second):
        client.wait(tid, timeout=10_000)
    client.notifications()
    junk = state_dir / "tasks" / f"{first}.junk"
    junk.mkdir()
    assert sorted(client.gc(older_than=0)) == sorted([first, second])
    assert client.tasks(all=True) == [] and junk.is_dir()
    assert [p.name for p in (state_dir / "tasks").iterdir() if p.name.startswith(first)] == [
        junk.name
    ]


def test_gc_keeps_a_task_whose_notice_no_session_has_read(state_dir: Path) -> None:
    """A person's `gc` from one session once took another session's unread notices with
    their tasks: that agent never learnt they ended. Such a task stays until its notice
    is read, or until the retention ends (the automatic prune)."""
    agent = Client(state_dir=state_dir, session="agent")
    tid = start_bg(agent, "exit 4")
    agent.wait(tid, timeout=10_000)
    r = run_cli(state_dir, "--session", "me", "gc", "--older-than", "0s")
    assert (
        r.stdout.splitlines()
        == [
            "removed 0 finished task(s)",
            "kept 1 whose completion notice no session has read yet "
            "(`wave-bash --session me gc --older-than 0s --unread` removes them too)",  # (with its age: a
        ]
    )  # hint pasted without it removed none of them, a trial)
    (notice,) = agent.notifications()
    assert (notice.task_id, notice.exit_code) == (tid, 4)
    assert agent.gc(older_than=0) == [tid]
    unread = start_bg(agent, "true")  # a person who means it: --unread
    agent.wait(unread, timeout=10_000)
    r = run_cli(state_dir, "gc", "--older-than", "0s", "--unread")
    assert r.stdout.splitlines() == ["removed 1 finished task(s)"] and agent.tasks() == []


def test_idle_exit(client: Client, state_dir: Path) -> None:
    tid = start_bg(client, "sleep 2.5")
    kill_supervisor(state_dir, signal.SIGTERM)
    pid = start_supervisor(state_dir, WAVE_IDLE_EXIT="1s")  # re-adopts the running task
    while record_status(client, tid) == "running":  # never idle while a task runs
        assert pid in supervisor_pids(state_dir)
        client.wait(tid, timeout=500)
    wait_until(lambda: not supervisor_pids(state_dir), timeout=10)
    assert "idle for 1s with no task running: exiting" in (state_dir / "supervisor.log").read_text()


def record_status(client: Client, task_id: str) -> str:
    (task,) = [t for t in client.tasks(all=True) if t.id == task_id]
    return task.status


def test_file_size_limit_while_writing(client: Client) -> None:
    r = client.bash("ulimit -f 64; seq 1 1000000")  # the log hits RLIMIT_FSIZE: SIGXFSZ
    assert r.exit_code == 128 + signal.SIGXFSZ and not r.success
    assert r.stdout.startswith("1\n2\n3")
    assert client.bash("echo still fine").stdout == "still fine"


@pytest.mark.timeout(300)
def test_soak_no_descriptor_or_zombie_growth(client: Client, state_dir: Path) -> None:
    for _ in range(20):
        client.bash("true")
    sup = psutil.Process(client.status().pid or 0)
    fds_before = sup.num_fds()
    for i in range(1000):
        assert client.bash(f"echo {i}").stdout == str(i)
    wait_until(lambda: not [c for c in sup.children() if _zombie(c)])
    wait_until(lambda: sup.num_fds() <= fds_before + 2)  # (a standby may be starting)

    # Only the monitors waiting for the next commands, in the end: a last command's may
    # still be exiting for a moment (its environment gone then, a CI run; or still there,
    # its task ended as its job exited, D2a: another), as standbys are started again.
    def only_standbys() -> bool:
        try:
            children = sup.children()
            ids = {child.environ()["WAVE_TASK_ID"] for child in children}
        except psutil.NoSuchProcess:
            return False
        return len(children) == STANDBY_DEPTH and not ids & {t.id for t in client.tasks(all=True)}

    wait_until(only_standbys)


def test_finished_tasks_past_retention_are_pruned_automatically(
    client: Client, state_dir: Path
) -> None:
    tid = start_bg(client, "echo old")
    client.wait(tid, timeout=10_000)
    kill_supervisor(state_dir)
    start_supervisor(state_dir, WAVE_RETENTION="0s")  # prunes at start (beside the first
    wait_until(lambda: client.tasks(all=True) == [])  # requests), then hourly
    assert not list((state_dir / "tasks").glob(f"{tid}.*"))


def test_background_tasks_leave_no_cwd_file(client: Client, state_dir: Path) -> None:
    ids = [start_bg(client, f"cd /tmp; exit {i % 3}") for i in range(20)]
    for task_id in ids:
        client.wait(task_id, timeout=10_000)
    assert list((state_dir / "tasks").glob("*.cwd")) == []


def _zombie(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:  # reaped since it was listed
        return False


def test_a_sandbox_tmp_thousands_of_levels_deep_is_removed(tmp_path: Path) -> None:
    """A sandboxed command's /tmp can be any shape: 3000 nested directories (rmtree's
    recursion limit once made retention crash the supervisor at every start)."""
    from wave_bash.supervisor.retention import _remove_tree

    root = tmp_path / "tree"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for level in range(3000):
            os.mkdir("d", dir_fd=fd)
            if level % 1000 == 0:
                os.symlink(outside, "link", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    _remove_tree(str(root))
    assert not root.exists() and outside.is_dir()


def test_a_directory_is_opened_up_never_through_a_link(tmp_path: Path) -> None:
    """A directory of a sandbox's /tmp made unreadable is opened up (mode 0700) by name
    in its parent; a link swapped in after the look had its target changed, as root (a
    review): the directory is opened as a path, no link followed, and changed so."""
    from wave_bash.supervisor.retention import _open_up

    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    outside.chmod(0o755)
    (tmp_path / "locked").mkdir(mode=0)
    (tmp_path / "swapped").symlink_to(outside)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _open_up("locked", fd)
        with pytest.raises(OSError):
            _open_up("swapped", fd)
    finally:
        os.close(fd)
    assert (tmp_path / "locked").stat().st_mode & 0o777 == 0o700
    assert outside.stat().st_mode & 0o777 == 0o755


def test_what_a_prune_removes_goes_while_the_supervisor_answers(
    client: Client, state_dir: Path
) -> None:
    """The files a prune leaves (here a session's sandbox /tmp of 60,000 entries) are
    removed beside the requests: a command's result comes while that goes on (the
    removal once held the supervisor's loop to its last file)."""
    client.bash("true")
    temps = state_dir / "sandbox-tmp"
    tree = temps / "0123456789abcdef"  # a session's, with no task in the journal
    tree.mkdir(parents=True)
    (tree / "f").write_text("x")
    fd = os.open(tree, os.O_RDONLY)
    try:
        for i in range(60_000):  # links: made fast, removed as slowly as files
            os.link("f", f"l{i}", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)

    def entries() -> int:
        return sum(len(os.listdir(d)) for d in temps.iterdir() if d.is_dir())

    pruner = Client(state_dir=state_dir, session="pruner")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        gc = pool.submit(pruner.gc, 0.0)
        wait_until(lambda: entries() < 60_000, timeout=30)  # the removal has begun
        assert client.bash("echo hi").stdout.strip() == "hi"
        assert entries() > 0  # and goes on
        gc.result(timeout=60)
    assert list(temps.iterdir()) == []


def test_a_sandbox_tmp_set_aside_by_a_stopped_supervisor_goes_at_the_next_prune(
    client: Client, state_dir: Path
) -> None:
    """A supervisor that stopped while it removed a sandbox /tmp (set aside first, under
    a name no session has) leaves it to the next prune."""
    aside = state_dir / "sandbox-tmp" / ".removing-0123456789abcdef-00000000"
    (aside / "d").mkdir(parents=True)
    (aside / "d" / "f").write_text("x")
    client.gc(older_than=3600)
    assert not aside.exists()


def test_no_command_gets_a_descriptor_the_supervisor_inherited(state_dir: Path) -> None:
    """A supervisor started with an inheritable descriptor of its starter's (here the
    write end of a pipe): it closes it, so no monitor or command gets it (each was
    handed it) and the starter reading the pipe to its end is not held up."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    pipe = f"pipe:[{os.fstat(read_end).st_ino}]"
    supervisor = subprocess.Popen(
        [sys.executable, "-P", "-m", "wave_bash.supervisor", "--state-dir", str(state_dir)],
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_end)
    try:
        # Serving: its socket bound (else the client would start a supervisor of its own).
        wait_until(lambda: any(d.startswith("socket:") for d in _descriptors(supervisor.pid)))
        r = Client(state_dir=state_dir).bash("ls -l /proc/self/fd/")
        assert Client(state_dir=state_dir).status().pid == supervisor.pid
        assert r.exit_code == 0 and pipe not in r.stdout
        for monitor in psutil.Process(supervisor.pid).children(recursive=True):
            assert pipe not in _descriptors(monitor.pid)
        assert pipe not in _descriptors(supervisor.pid)
        assert os.read(read_end, 1) == b""  # no writer left: end of file at once
    finally:
        supervisor.terminate()
        supervisor.wait(timeout=30)
        os.close(read_end)


def _descriptors(pid: int) -> list[str]:
    """What a process's descriptors are (``pipe:[N]``, paths)."""
    found = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            found.append(os.readlink(f"/proc/{pid}/fd/{name}"))
    return found


def test_two_prunes_at_once_each_return_with_the_files_gone(
    client: Client, state_dir: Path
) -> None:
    """Two `gc` calls at once: prunes go one at a time, and neither returns before what
    it removes is gone (both once took the same set-aside /tmp, and the one that found
    it gone first returned with it still there)."""
    aside = state_dir / "sandbox-tmp" / ".removing-0123456789abcdef-00000000"
    aside.mkdir(parents=True)
    (aside / "f").write_text("x")
    fd = os.open(aside, os.O_RDONLY)
    try:
        for i in range(30_000):
            os.link("f", f"l{i}", src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(lambda: (client.gc(older_than=0), aside.exists())) for _ in range(2)]
        assert [call.result(timeout=60)[1] for call in calls] == [False, False]


def test_one_state_dir_spelled_two_ways_has_one_supervisor(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`../state` from a subdirectory once started a second supervisor, with cgroups of
    its own name: a task's processes in the first's cgroups escaped its TaskStop."""
    (state_dir / "sub").mkdir()
    (state_dir / "link").symlink_to(state_dir / "sub")
    first = Client(state_dir=state_dir / "state")
    try:
        tracking = first.status().tracking
        monkeypatch.chdir(state_dir / "sub")
        for spelling in ("../state", f"{state_dir}/sub/../state", f"{state_dir}/link/../state"):
            kill_supervisor(state_dir / "state")  # the next one is started by this spelling
            assert Client(state_dir=spelling).status().tracking == tracking, spelling
            assert len(supervisor_pids(state_dir / "state")) == 1
    finally:
        reap(state_dir / "state")


def test_a_removed_socket_is_listened_on_again(client: Client, state_dir: Path) -> None:
    """With its socket removed, a supervisor that runs tasks (so never idle) kept the
    state dir: every call said no supervisor started, and none could (a review)."""
    tid = start_bg(client, "sleep 60")
    pid = client.status().pid
    (state_dir / "supervisor.sock").unlink()
    assert Client(state_dir=state_dir).status().pid == pid  # (a new connection)
    (state_dir / "supervisor.sock").unlink()
    (state_dir / "supervisor.sock").write_text("")  # replaced by something else
    assert Client(state_dir=state_dir).status().pid == pid
    assert client.task_stop(tid).status == "killed"


def test_a_socket_replaced_by_a_directory_or_a_link_is_listened_on_again(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """A directory put in the socket's place kept every call waiting 16 s for "did not
    start" (the supervisor could not remove it); a link to another state dir's socket had
    calls served by that one's supervisor (a trial). The directory is moved aside, what it
    holds kept; the link is never followed."""
    pid = client.status().pid
    path = state_dir / "supervisor.sock"
    path.unlink()
    path.mkdir()
    (path / "notes").write_text("kept")
    assert Client(state_dir=state_dir).status().pid == pid
    assert [p.read_text() for p in state_dir.glob("supervisor.sock.moved-*/notes")] == ["kept"]
    other = Client(state_dir=tmp_path / "other")
    try:
        other_pid = other.status().pid
        path.unlink()
        path.symlink_to(tmp_path / "other" / "supervisor.sock")
        assert Client(state_dir=state_dir).status().pid == pid
        assert path.is_socket() and not path.is_symlink()
        kill_supervisor(state_dir)  # (at start-up too: the link's answer kept every start
        path.unlink(missing_ok=True)  # here from serving, "another process already
        path.symlink_to(tmp_path / "other" / "supervisor.sock")  # serves", a review)
        assert Client(state_dir=state_dir).status().pid not in (pid, other_pid)
        assert path.is_socket() and not path.is_symlink()
    finally:
        reap(tmp_path / "other")
    assert other_pid != pid


def test_a_supervisor_whose_state_dir_was_removed_leaves_it_to_the_next(
    client: Client, state_dir: Path
) -> None:
    """`rm -rf` of the state dir under a supervisor with a running task: the next call
    started another, and the two took the socket from each other every two seconds, so
    that `wait` and `tasks` said "no task" and "running" by turns (a trial). The old one
    stops (its task keeps running, as at `supervisor stop`); the new one serves alone."""
    old_pid = client.status().pid
    task_id = start_bg(client, "sleep 60")
    monitor = next(t.pid for t in client.tasks() if t.id == task_id)
    assert monitor
    try:
        shutil.rmtree(state_dir)
        fresh = Client(state_dir=state_dir)
        new_pid = fresh.status().pid
        assert new_pid != old_pid
        wait_until(lambda: supervisor_pids(state_dir) == [new_pid], timeout=15)
        assert (state_dir / "supervisor.sock").exists()  # (not taken away as it left)
        assert fresh.bash("echo alone").stdout == "alone"
        assert fresh.status().pid == new_pid
    finally:
        with contextlib.suppress(OSError):
            os.killpg(monitor, signal.SIGKILL)


def test_a_state_dir_not_reachable_for_a_moment_is_not_taken_for_removed(
    tmp_path: Path,
) -> None:
    """A parent not searchable for a moment (`chmod 000` by its owner, an I/O error) made
    `lstat` fail, and the supervisor took its state dir for removed and stopped (a trial,
    as a user without root's capabilities): only a path gone, or another directory at it,
    is."""
    needs_tool("setpriv", "util-linux")
    parent = tmp_path / "parent"
    (parent / "state").mkdir(parents=True)
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from wave_bash.supervisor.daemon import _same_dir\n"
        "state, parent = Path(sys.argv[1]), sys.argv[2]\n"
        "fd = os.open(state, os.O_RDONLY | os.O_DIRECTORY)\n"
        "os.chmod(parent, 0)\n"
        "try:\n"
        "    print(_same_dir(state, fd))\n"
        "finally:\n"
        "    os.chmod(parent, 0o700)\n"
        "os.rmdir(state)\n"
        "print(_same_dir(state, fd))\n"
    )
    caps = "-dac_override,-dac_read_search"  # (root's, which ignore the mode)
    done = subprocess.run(
        ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", sys.executable, "-c",
         script, str(parent / "state"), str(parent)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.stdout.split() == ["True", "False"], done


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("WAVE_IDLE_EXIT", "5x", "WAVE_IDLE_EXIT: a duration must be"),
        ("WAVE_LOG_CAP", "abc", "WAVE_LOG_CAP: a size must be"),
        ("WAVE_REQUEST_TIMEOUT", "0", "WAVE_REQUEST_TIMEOUT: it must be at least 1, got '0'"),
        ("WAVE_REQUEST_TIMEOUT", "0.0001", "WAVE_REQUEST_TIMEOUT: it must be at least 1"),
        ("WAVE_TASK_MEMORY_LIMIT", "0", "WAVE_TASK_MEMORY_LIMIT: it must be at least 1"),
        ("WAVE_TRACKING", "proces", "WAVE_TRACKING: it must be one of cgroup, process"),
        ("WAVE_LOG_LEVEL", "bogus", "WAVE_LOG_LEVEL: it must be one of DEBUG, INFO"),
        ("WAVE_MAX_CONNECTIONS", "-3", "WAVE_MAX_CONNECTIONS: it must be at least 1"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_variable(
    state_dir: Path, name: str, value: str, said: str
) -> None:
    """A supervisor given a bad setting does not start, and says which (a duration's error
    named no variable; `WAVE_REQUEST_TIMEOUT=0` made one that dropped every request, its
    own `supervisor stop` included; a misspelt `WAVE_TRACKING` gave cgroups silently: a
    trial). Nothing runs."""
    result = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "run", "--",
         "echo ran"],
        env={**os.environ, name: value}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (2, ""), result
    assert said in result.stderr
    assert not supervisor_pids(state_dir)


def test_logging_level_names_are_settings() -> None:
    """`WAVE_LOG_LEVEL=warn` worked as logging reads it (its aliases too: a review)."""
    from wave_bash.supervisor.settings import Settings

    for given, level in (("warn", "WARN"), ("Fatal", "FATAL"), ("debug", "DEBUG")):
        assert Settings.from_env({"WAVE_LOG_LEVEL": given}).log_level == level
