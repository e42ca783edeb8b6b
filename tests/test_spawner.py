"""The spawner: monitors that are child subreapers, started without a fork of the supervisor
(``worker.spawner``)."""

from __future__ import annotations

import contextlib
import errno
import marshal
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import gone, start_bg, supervisor_pids, wait_until

from wave_bash.api import Client
from wave_bash.supervisor.standby import STANDBY_DEPTH
from wave_bash.worker import spawner as spawner_module
from wave_bash.worker.spawner import HEADER, NUMBER, Spawner, SpawnerError, exec_failure

pytestmark = pytest.mark.skipif(not spawner_module.usable(), reason="Linux with a known clone")

# What the started process reports: its parent, session, ignored signals and
# the parent of an orphan it leaves (a child subreaper adopts it).
REPORT = r"""
echo "ppid=$(awk '/^PPid/{print $2}' /proc/$$/status)"
echo "sid=$(ps -o sid= -p $$ | tr -d ' ')"
echo "pid=$$"
echo "ignored=$(awk '/^SigIgn/{print $2}' /proc/$$/status)"
(sleep 30 & echo "orphan=$!") > "$ORPHAN_FILE"
wait_for=$(cat "$ORPHAN_FILE"); wait_for=${wait_for#orphan=}
for _ in $(seq 200); do
  [[ $(awk '/^PPid/{print $2}' /proc/$wait_for/status) == $$ ]] && break; sleep 0.01
done
echo "orphan_ppid=$(awk '/^PPid/{print $2}' /proc/$wait_for/status)"
kill $wait_for
read -r line  # wait for the test
"""


@pytest.fixture
def spawner() -> Iterator[Spawner]:
    made = Spawner()
    yield made
    made.close()


def start(
    spawner: Spawner, tmp_path: Path, env: dict[str, str] | None = None
) -> tuple[int, int, Path]:
    """Start REPORT through ``spawner``; returns its pid, the write end of its stdin and
    its output file."""
    out = tmp_path / "out"
    stdin_read, stdin_write = os.pipe()
    extra_read, extra_write = os.pipe()
    with open(out, "wb") as log:
        pid = spawner.spawn(
            ["/bin/bash", "-c", REPORT],
            {"PATH": os.environ["PATH"], "ORPHAN_FILE": str(tmp_path / "orphan"), **(env or {})},
            [(stdin_read, 0), (log.fileno(), 1), (log.fileno(), 2), (extra_write, 7)],
        )
    for fd in (stdin_read, extra_read, extra_write):
        os.close(fd)
    return pid, stdin_write, out


def report(out: Path) -> dict[str, str]:
    wait_until(lambda: "orphan_ppid=" in out.read_text())
    return dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)


def test_a_spawned_process_is_our_child_a_session_leader_and_a_subreaper(
    spawner: Spawner, tmp_path: Path
) -> None:
    pid, stdin, out = start(spawner, tmp_path)
    try:
        said = report(out)
        assert said["ppid"] == str(os.getpid())  # CLONE_PARENT: ours, not the spawner's
        assert said["sid"] == said["pid"] == str(pid)
        assert said["orphan_ppid"] == str(pid)  # a child subreaper
        ignored = int(said["ignored"], 16)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # as posix_spawn's setsigdef
            assert not ignored & (1 << (sig - 1)), said["ignored"]
        fds = sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd"))  # (it waits at `read`)
        assert fds == [0, 1, 2, 7]  # nothing else
    finally:
        os.close(stdin)  # it reads end of file and exits
    _, status = os.waitpid(pid, 0)  # ours to reap
    assert os.waitstatus_to_exitcode(status) == 1  # (`read` at end of file)


def zombies() -> set[int]:
    return {p.pid for p in psutil.Process().children() if p.status() == psutil.STATUS_ZOMBIE}


def test_an_exec_failure_is_raised_and_leaves_no_zombie(spawner: Spawner, tmp_path: Path) -> None:
    before = zombies()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        with pytest.raises(OSError) as raised:
            spawner.spawn([str(tmp_path / "no-such-shell")], {}, [(null, 0), (null, 1), (null, 2)])
        assert raised.value.errno == errno.ENOENT
        # Ahead (a standby's): asked later, on its own pipe; the child exits 127.
        pid, report = spawner.spawn_ahead(
            [str(tmp_path / "no-such-shell")], {}, [(null, 0), (null, 1), (null, 2)]
        )
        failure = exec_failure(report)
        assert failure is not None and failure.errno == errno.ENOENT
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 127
        pid, report = spawner.spawn_ahead(["/bin/true"], {}, [(null, 0), (null, 1), (null, 2)])
        assert exec_failure(report) is None
        os.waitpid(pid, 0)
        with pytest.raises(ValueError):  # as posix_spawn refuses it
            spawner.spawn(["/bin/true"], {"A=B": "1"}, [(null, 0)])
    finally:
        os.close(null)
    assert zombies() <= before


def test_a_dead_spawner_is_replaced(spawner: Spawner, tmp_path: Path) -> None:
    first, stdin, _ = start(spawner, tmp_path)
    os.close(stdin)
    os.waitpid(first, 0)
    dead = spawner.pid
    os.kill(dead, signal.SIGKILL)
    # A large environment too: more than a socket's buffer in one request.
    big = {f"BIG{i}": "x" * 100_000 for i in range(10)}
    pid, stdin, out = start(spawner, tmp_path, env=big)
    try:
        assert report(out)["ppid"] == str(os.getpid())
        assert spawner.pid not in (0, dead)
    finally:
        os.close(stdin)
        os.waitpid(pid, 0)


def test_a_supervisor_without_cgroups_starts_its_monitors_through_the_spawner(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Process-table tracking makes every bash monitor a child subreaper. It was a fork of
    the whole supervisor (2-3 ms, the event loop held); now the spawner's, still the
    supervisor's child."""
    monkeypatch.setenv("WAVE_TRACKING", "process")  # the auto-started supervisor's
    client = Client(state_dir=state_dir)
    assert "process" in (client.status().tracking or "")
    (supervisor,) = supervisor_pids(state_dir)
    (spawner,) = [  # started with the supervisor, ready for its first command
        p for p in psutil.Process(supervisor).children() if "spawner.py" in " ".join(p.cmdline())
    ]
    tid = start_bg(client, "sleep 60")
    (record,) = [t for t in client.tasks() if t.id == tid]
    monitor = psutil.Process(record.pid or 0)
    assert monitor.ppid() == supervisor and spawner.is_running()
    assert client.task_stop(tid).status == "killed"


def test_a_stopped_spawner_is_replaced_in_time_and_nothing_starts_twice(tmp_path: Path) -> None:
    spawner = Spawner(patience=2.0)  # (the new spawner's start-up counts: a CI run took 0.5 s)
    try:
        first, stdin, _ = start(spawner, tmp_path)
        os.close(stdin)
        os.waitpid(first, 0)
        stopped = spawner.pid
        before = {p.pid for p in psutil.Process().children()}
        os.kill(stopped, signal.SIGSTOP)
        pid, stdin, out = start(spawner, tmp_path)  # (it waits 2 s, then a new spawner)
        try:
            assert report(out)["ppid"] == str(os.getpid())
            assert spawner.pid not in (0, stopped) and not psutil.pid_exists(stopped)
            now = {p.pid for p in psutil.Process().children()}
            assert now - before == {pid, spawner.pid}  # one started, and no other child left
        finally:
            os.close(stdin)
            os.waitpid(pid, 0)
    finally:
        spawner.close()


def test_a_stopped_spawner_dies_with_its_supervisor(tmp_path: Path) -> None:
    """A spawner stopped as its supervisor dies cannot see its channel close: it stayed,
    stopped, an orphan for good, unknown to the next supervisor (helper 223). It dies with
    the process that started it."""
    starter = subprocess.Popen(
        [sys.executable, "-c", "from wave_bash.worker.spawner import Spawner; s = Spawner(); "
         "s.prepare(); print(s.pid, flush=True); input()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    spawned = None
    try:
        assert starter.stdout is not None
        spawned = psutil.Process(int(starter.stdout.readline()))
        wait_until(lambda: "0" not in os.listdir(f"/proc/{spawned.pid}/fd"))  # (serving)
        spawned.suspend()
        starter.kill()
        starter.wait()
        wait_until(lambda: gone(spawned))
    finally:
        starter.kill()
        starter.wait()
        if spawned is not None:
            with contextlib.suppress(psutil.Error):
                spawned.kill()


def test_a_child_whose_spawner_dies_before_the_go_never_execs(
    spawner: Spawner, tmp_path: Path
) -> None:
    """The supervisor learns the child's pid from the child, before it execs: a spawner
    killed mid-request leaves no monitor the supervisor does not know (it would be
    started again, by the next spawner)."""
    first, stdin, _ = start(spawner, tmp_path)
    os.close(stdin)
    os.waitpid(first, 0)
    channel = spawner._channel
    assert channel is not None
    ran = tmp_path / "ran"
    request = marshal.dumps(([b"/bin/sh", b"-c", f"echo > {ran}".encode()], [], []))
    go_read, go_write = os.pipe()
    report_read, report_write = os.pipe()
    socket.send_fds(channel, [HEADER.pack(len(request))], [go_read, report_write])
    channel.sendall(request)
    os.close(go_read)
    os.close(report_write)
    (pid,) = NUMBER.unpack(os.read(report_read, NUMBER.size))
    os.kill(spawner.pid, signal.SIGKILL)  # before the go
    os.close(go_write)
    _, status = os.waitpid(pid, 0)  # ours (CLONE_PARENT)
    assert os.waitstatus_to_exitcode(status) == 127
    assert os.read(report_read, 100) == b"" and not ran.exists()
    os.close(report_read)


def test_a_spawner_that_cannot_clone_falls_back_to_a_fork(tmp_path: Path) -> None:
    """A 32-bit userland on a 64-bit kernel would pick the wrong syscall: ENOSYS here."""
    spawner = Spawner(clone_number=100_000)
    null = os.open(os.devnull, os.O_RDWR)
    try:
        with pytest.raises(SpawnerError):
            spawner.spawn(["/bin/true"], {}, [(null, 0), (null, 1), (null, 2)])
        assert spawner.pid == 0
        with pytest.raises(SpawnerError, match="cannot work here"):  # not tried again
            spawner.spawn(["/bin/true"], {}, [(null, 0), (null, 1), (null, 2)])
    finally:
        os.close(null)
        spawner.close()


def test_an_interrupted_request_is_not_answered_to_the_next(
    spawner: Spawner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, stdin, _ = start(spawner, tmp_path)
    os.close(stdin)
    os.waitpid(first, 0)
    sent = socket.send_fds

    def interrupted(*args: object, **kwargs: object) -> int:
        sent(*args, **kwargs)  # type: ignore[arg-type]
        raise KeyboardInterrupt  # mid-request: its payload never follows

    monkeypatch.setattr(socket, "send_fds", interrupted)
    with pytest.raises(KeyboardInterrupt):
        start(spawner, tmp_path)
    monkeypatch.setattr(socket, "send_fds", sent)
    pid, stdin, out = start(spawner, tmp_path)  # a new spawner: the old one was mid-request
    try:
        assert report(out)["ppid"] == str(os.getpid())
    finally:
        os.close(stdin)
        os.waitpid(pid, 0)


def test_a_standby_whose_bash_went_meanwhile_gives_way_to_a_clear_error(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A standby is not waited for until it has exec'd bash: taken for a command, it
    says first whether it could. One that could not is let go, and the command's own
    monitor says why (it ran on the standby, then failed as a lost record)."""
    import shutil

    bash = tmp_path / "bin" / "bash"
    bash.parent.mkdir()
    shutil.copy("/bin/bash", bash)
    monkeypatch.setenv("WAVE_TRACKING", "process")
    client = Client(state_dir=state_dir, env={**os.environ, "SHELL": str(bash)})
    for _ in range(2):  # standbys for this environment, started ahead
        assert client.bash("echo hi").stdout == "hi"
    bash.chmod(0o644)  # (a shell reinstalled, removed: they cannot exec it now)
    said = []
    for _ in range(STANDBY_DEPTH + 1):
        try:
            said.append(client.bash("echo hi").message)
        except Exception as exc:
            said.append(str(exc))
    # A standby that had exec'd bash before the chmod runs its command (a host that ran
    # the refill before the test's chmod, as a CI run did, gave "hi" twice): each other
    # call says why, the last one at least, never as a lost record.
    assert "Permission denied" in said[-1], said
    assert all(text == "hi" or "Permission denied" in text for text in said), said
    assert not any("exit record" in text for text in said), said
