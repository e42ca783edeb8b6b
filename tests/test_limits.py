"""Descriptor and memory limits: floods get clear answers, never a log flood (issue 11 §4)."""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from conftest import (
    ask_supervisor,
    kill_supervisor,
    raw_request,
    run_cli,
    start_bg,
    supervisor_pids,
    wait_until,
)

from wave_bash.api import BashResult, Client, SupervisorUnavailableError
from wave_bash.api.paths import StateLayout
from wave_bash.supervisor import logs
from wave_bash.supervisor.logs import RepeatFilter


def start_limited_supervisor(
    state_dir: Path, soft: int, hard: int, which: int = resource.RLIMIT_NOFILE, **env: str
) -> int:
    """A supervisor started under a descriptor limit (as ``ulimit -n`` would), or another
    limit (``which``)."""

    def limit() -> None:
        resource.setrlimit(which, (soft, hard))

    subprocess.run(
        [sys.executable, "-P", "-m", "wave_bash.supervisor", "--state-dir", str(state_dir), "--detach"],
        env={**os.environ, **env}, check=True, timeout=30, preexec_fn=limit,
    )  # fmt: skip
    (pid,) = wait_until(lambda: supervisor_pids(state_dir))  # type: ignore[misc]
    return int(pid)


def connect(state_dir: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(state_dir / "supervisor.sock"))  # blocking: waits while the backlog is full
    s.settimeout(10)
    return s


@contextlib.contextmanager
def held_connections(state_dir: Path, count: int) -> Iterator[list[socket.socket]]:
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            socks.append(connect(state_dir))
        yield socks
    finally:
        for s in socks:
            s.close()


def answer(s: socket.socket) -> bytes:
    data = b""
    with contextlib.suppress(OSError):
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


def test_connections_past_the_cap_are_answered_busy(state_dir: Path) -> None:
    """Under ``ulimit -n 256``: 400 idle connections. The excess is answered ``busy`` at
    once, the idle ones are dropped at the request timeout, and the log stays small."""
    start_limited_supervisor(state_dir, 256, 256, WAVE_REQUEST_TIMEOUT="2s")
    with held_connections(state_dir, 400) as socks:
        busy = [s for s in socks[100:] if b'"busy"' in answer(s)]
        assert len(busy) == 300
        dropped = [answer(s) for s in socks[:20]]  # idle past the request timeout
        assert all(b"no complete request" in a for a in dropped), dropped
    client = Client(state_dir=state_dir)
    assert client.bash("echo ok").stdout == "ok"
    assert (state_dir / "supervisor.log").stat().st_size < 50_000


def test_a_call_answered_busy_goes_again(state_dir: Path) -> None:
    """`busy` comes before the request is read: a client sends it again, with the back-off
    of a reconnect, until its patience ends (`wave-bash stop` exited 2 at once; a review)."""
    start_limited_supervisor(
        state_dir, 1024, 1024, WAVE_MAX_CONNECTIONS="8", WAVE_REQUEST_TIMEOUT="2s"
    )
    client = Client(state_dir=state_dir)
    task_id = start_bg(client, "sleep 300")
    with held_connections(state_dir, 8) as socks:  # the cap, idle until the request timeout
        with connect(state_dir) as ninth:
            assert b'"busy"' in answer(ninth)
        stopped = run_cli(state_dir, "stop", task_id)
        assert stopped.returncode == 0, stopped.stderr
        assert all(b"no complete request" in answer(s) for s in socks)
    assert client.bash("echo ok").stdout == "ok"


def test_an_outage_is_said_once_and_a_call_on_a_task_names_it_as_it_gives_up(
    state_dir: Path,
) -> None:
    """Each call that met an outage said it tried again (a remote `run`'s streaming calls
    said it twice, the second with a shorter deadline), and a `wait` that gave up named
    no task (a trial): said once until a call gets through, and the task named."""
    start_limited_supervisor(
        state_dir, 1024, 1024, WAVE_MAX_CONNECTIONS="8", WAVE_REQUEST_TIMEOUT="4s"
    )
    client = Client(state_dir=state_dir)
    task_id = start_bg(client, "sleep 300")
    said: list[tuple[str, float]] = []
    fresh = Client(state_dir=state_dir)  # (no connection kept: each call meets the cap)
    fresh.calls.on_retrying = lambda why, left: said.append((why, left))
    with held_connections(state_dir, 8):  # (let go by the supervisor after 4 s)
        wait = {"session": fresh.session, "task_id": task_id, "timeout": 0}
        with pytest.raises(SupervisorUnavailableError, match=f"task {task_id} may still be"):
            fresh.calls.call("wait", wait, patience=0.5)
        both = {"session": fresh.session, "task_ids": [task_id, "other000"]}
        with pytest.raises(SupervisorUnavailableError, match=f"tasks {task_id}, other000 may"):
            fresh.calls.call("stop_many", both, patience=0.5)
        calls = [threading.Thread(target=fresh.status) for _ in range(2)]
        for call in calls:
            call.start()
        for call in calls:
            call.join(timeout=60)
    assert len(said) == 1 and said[0][1] > 0, said
    assert client.task_stop(task_id).status == "killed"


def test_a_command_that_meets_the_descriptor_limit_is_sent_again(state_dir: Path) -> None:
    """Under a low limit, a burst of connections left a command none to start with: it
    failed (`could not start the command: [Errno 24]`, and nothing in the log; a review).
    It is `busy`, nothing started: its client sends it again, and it runs once
    descriptors are free."""
    pid = start_limited_supervisor(
        state_dir, 64, 64, WAVE_MAX_CONNECTIONS="1000", WAVE_REQUEST_TIMEOUT="30s"
    )
    Client(state_dir=state_dir).status()  # (its standby and kept descriptors made)
    spare = 64 - len(os.listdir(f"/proc/{pid}/fd"))
    log = state_dir / "supervisor.log"
    results: list[str] = []
    with held_connections(state_dir, spare - 2) as socks:
        caller = threading.Thread(
            target=lambda: results.append(Client(state_dir=state_dir).bash("echo ok").stdout)
        )
        caller.start()
        wait_until(lambda: "could not start a command" in log.read_text(), timeout=30)
        for s in socks:
            s.close()
    caller.join(60)
    assert results == ["ok"]
    assert [t.command for t in Client(state_dir=state_dir).tasks(all=True)] == ["echo ok"]


@contextlib.contextmanager
def no_descriptor_left(pid: int) -> Iterator[Callable[[], None]]:
    """The supervisor ``pid`` with no descriptor to open (``prlimit --nofile=3``: those it
    holds stay open); the callable lifts the limit again (also on leaving)."""
    process = psutil.Process(pid)
    soft, hard = process.rlimit(psutil.RLIMIT_NOFILE)
    process.rlimit(psutil.RLIMIT_NOFILE, (3, hard))

    def lift() -> None:
        process.rlimit(psutil.RLIMIT_NOFILE, (soft, hard))

    try:
        yield lift
    finally:
        lift()


def test_a_read_without_a_descriptor_to_read_with_is_tried_again(state_dir: Path) -> None:
    """A log the supervisor had no descriptor to open read as one gone: empty, and the
    session's read offset went past what no one saw (a trial lost 15 tasks' output so).
    The read is `busy` (nothing read, nothing moved): its client sends it again."""
    client = Client(state_dir=state_dir)
    task_id = start_bg(client, "echo mark; exit 3")
    assert client.wait(task_id).exit_code == 3
    pid = client.status().pid
    assert pid is not None
    read = raw_request("output", {"task_id": task_id, "session": "default", "block": False})
    with connect(state_dir) as s:  # (accepted, and kept for a next request, before)
        s.sendall(raw_request("status", {"session": "default", "keep": True}))
        assert b'"result"' in answer(s)
        with no_descriptor_left(pid):
            s.sendall(read)
            assert b'"busy"' in answer(s)
    assert client.task_output(task_id, block=False).output == "mark"
    assert client.task_output(task_id, block=False).output == ""  # (read once, in turn)
    # A piece of a stream (`output --follow`) too: an empty one, of an ended task's
    # log, read as its end (a review).
    big = start_bg(client, "head -c 600000 /dev/zero | tr '\\0' x; echo")
    client.wait(big)
    piece = {"task_id": big, "session": "default", "block": False, "follow": True}
    with connect(state_dir) as s:
        s.sendall(raw_request("status", {"session": "default", "keep": True}))
        assert b'"result"' in answer(s)
        with no_descriptor_left(pid):
            s.sendall(raw_request("output", piece))
            assert b'"busy"' in answer(s)
    raw = {"task_id": big, "session": "default", "offset": 0, "size": 65536}
    with connect(state_dir) as s:  # (`output --raw`'s reads: none read as its end too)
        s.sendall(raw_request("status", {"session": "default", "keep": True}))
        assert b'"result"' in answer(s)
        with no_descriptor_left(pid):
            s.sendall(raw_request("terminal", raw))
            assert b'"busy"' in answer(s)
    again = ask_supervisor(state_dir, "output", piece)  # (its next piece: from the start)
    assert again["type"] == "result" and len(again["data"]["output"]) > 500_000  # type: ignore[index]


def test_the_supervisor_keeps_a_descriptor_back_to_read_with(state_dir: Path) -> None:
    """Its descriptors all taken by a burst of connections, the supervisor still reads a
    task's files: it gives up the one it held back (an exit record read as missing, a
    log as empty, at a low limit: a trial and a review), then holds one back again."""
    pid = start_limited_supervisor(
        state_dir, 64, 64, WAVE_MAX_CONNECTIONS="1000", WAVE_REQUEST_TIMEOUT="60s"
    )
    client = Client(state_dir=state_dir)
    task_id = start_bg(client, "echo mark; exit 3")
    assert client.wait(task_id).exit_code == 3
    read = raw_request("output", {"task_id": task_id, "session": "default", "block": False})
    with connect(state_dir) as s:
        s.sendall(raw_request("status", {"session": "default", "keep": True}))
        assert b'"result"' in answer(s)
        free = 64 - len(os.listdir(f"/proc/{pid}/fd"))
        with held_connections(state_dir, free + 4):  # (the last ones wait to be accepted)
            wait_until(lambda: len(os.listdir(f"/proc/{pid}/fd")) == 64)
            s.sendall(read)
            assert b'"output":"mark"' in answer(s)
    assert client.task_output(task_id, block=False).output == ""  # (its next file read)
    spare = wait_until(lambda: [f for f in os.listdir(f"/proc/{pid}/fd") if int(f) > 2
                                and os.readlink(f"/proc/{pid}/fd/{f}") == os.devnull])  # fmt: skip
    assert len(spare) == 1  # (held back again)


def test_a_prompt_without_a_descriptor_to_read_with_names_its_log(
    state_dir: Path, tmp_path: Path
) -> None:
    """A result that cannot be asked again (an interactive command's prompt) that the
    supervisor has no descriptor to read the output of: a line that says where its
    output is, not an empty output as if it printed nothing, and the session's next read
    starts before it (a trial)."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    client = Client(state_dir=state_dir)
    pid = client.status().pid
    assert pid is not None
    results: list[BashResult] = []
    command = f"echo mark; cat {gate} > /dev/null; read -p 'Name? ' x"
    caller = threading.Thread(target=lambda: results.append(client.bash(command, interactive=True)))
    caller.start()
    try:
        (task,) = wait_until(lambda: [t for t in client.tasks() if t.status == "running"])
        log = Path(task.output_path)
        wait_until(lambda: log.read_text().startswith("mark"))
        tty = bytes(log.with_suffix(".tty"))  # (linked: the host and the supervisor's end;
        # bytes: another program's socket path need not be UTF-8)
        wait_until(lambda: Path("/proc/net/unix").read_bytes().count(tty) >= 2)
        with no_descriptor_left(pid):
            os.close(os.open(gate, os.O_WRONLY))  # (the prompt comes)
            caller.join(30)
            assert not caller.is_alive()
    finally:
        with contextlib.suppress(OSError):
            os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))
        caller.join(30)
    (result,) = results
    assert result.waiting_for_input and result.stdout == ""
    assert result.error is not None and f"TaskOutput {task.id}" in result.error
    assert str(log) in result.message
    assert client.task_output(task.id, block=False).output.startswith("mark\nName?")
    client.task_stop(task.id)


def test_an_end_without_a_descriptor_to_read_it_with_waits_for_one(
    state_dir: Path, tmp_path: Path
) -> None:
    """A task's end read as no status for want of a descriptor was "lost" or "not
    recorded (a full disk)" (a review): it waits for one, and keeps its code."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    client = Client(state_dir=state_dir)
    pid = client.status().pid
    assert pid is not None
    task_id = start_bg(client, f"cat {gate} > /dev/null; echo done; exit 4")
    (task,) = [t for t in client.tasks() if t.id == task_id]
    assert task.pid is not None
    with no_descriptor_left(pid) as lift:
        os.close(os.open(gate, os.O_WRONLY))  # (the command ends)
        wait_until(lambda: psutil.Process(task.pid).status() == psutil.STATUS_ZOMBIE)
        assert client.tasks()[0].status == "running"  # (not ended as it cannot be read)
        lift()
        ended = client.wait(task_id, timeout=20_000)
    assert (ended.status, ended.exit_code, ended.end_reason) == ("failed", 4, None)
    (notice,) = client.notifications()
    assert "could not be written" not in notice.message, notice.message


def test_descriptor_exhaustion_does_not_flood_the_log(state_dir: Path) -> None:
    """The cap lifted above what the limit allows: accept() fails with EMFILE over and
    over; the log says so once per burst, and service resumes when descriptors free up."""
    start_limited_supervisor(
        state_dir, 128, 128, WAVE_MAX_CONNECTIONS="100000", WAVE_REQUEST_TIMEOUT="30s"
    )
    log = state_dir / "supervisor.log"
    with held_connections(state_dir, 200):
        wait_until(lambda: "out of system resource" in log.read_text())  # it hit EMFILE
        time.sleep(2)  # a window of retries (one a second) that must add no line
        text = log.read_text()
        assert text.count("out of system resource") == 1, text[-2000:]  # once, not per retry
    assert Client(state_dir=state_dir).bash("echo ok").stdout == "ok"
    assert (state_dir / "supervisor.log").stat().st_size < 50_000


def test_a_descriptor_limit_too_small_to_serve_is_named(state_dir: Path) -> None:
    """Under `ulimit -n 20` the supervisor failed as "cannot open journal.db: unable to
    open database file" (a failure review): it says what the limit is, and runs nothing."""

    def small_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (20, 20))

    done = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "run", "--",
         "echo ran"], capture_output=True, text=True, timeout=60, preexec_fn=small_limit,
    )  # fmt: skip
    assert done.returncode == 2 and "ran" not in done.stdout
    assert "the descriptor limit is 20 (`ulimit -n`)" in done.stderr, done.stderr


HOLD_ALL = """
import os
def hold_all():
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        return held
"""
"""What every script of :func:`script_under_limit` may call: it takes every descriptor
its process has left."""


def script_under_limit(
    script: str, state_dir: Path, limit: int
) -> subprocess.CompletedProcess[str]:
    """A Python ``script`` (given the state dir) run under ``ulimit -n LIMIT``; it must exit 0."""

    def small_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-c", HOLD_ALL + script, str(state_dir)],
        capture_output=True, text=True, timeout=120, preexec_fn=small_limit,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


CALLER_OUT_OF_DESCRIPTORS = """
import os, sys, threading, time
from wave_bash.api import Client, SupervisorUnavailableError, calls
from wave_bash.api.errors import BusyError
from wave_bash.api.launch import connect_or_start
client = Client(state_dir=sys.argv[1])
assert client.bash("true").exit_code == 0  # started, with room to spare
held = hold_all()
try:
    connect_or_start(client.layout, "unix", True)
except BusyError as exc:
    print("busy:", exc)
began = time.monotonic()
calls.DESCRIPTOR_PATIENCE = 1.0  # (5 s: the burst below needs it, this one does not)
try:  # one that never clears: not tried for the command's whole timeout
    Client(state_dir=sys.argv[1]).bash("true", timeout=600_000)
except SupervisorUnavailableError as exc:
    print("gave up:", "no file descriptor left" in str(exc), time.monotonic() - began < 60)
calls.DESCRIPTOR_PATIENCE = 5.0
calls.BACKOFF_MAX = 0.2  # (1 s: the burst took 8 s, most of it asleep)
for fd in held:
    os.close(fd)
codes = {}
def call(n):
    codes[n] = Client(state_dir=sys.argv[1]).bash(f"exit {n}").exit_code
threads = [threading.Thread(target=call, args=(n,)) for n in range(30)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("codes:", sorted(codes.items()) == [(n, n) for n in range(30)])
"""


def test_a_caller_out_of_descriptors_is_busy_and_tries_again(state_dir: Path) -> None:
    """A caller at its own descriptor limit (30 threads under `ulimit -n 32`) got a raw
    `OSError` 24, or a `StateDirError` naming the start lock (reviews): busy, so the call
    goes again as other threads close theirs, and said as such when it cannot."""

    done = script_under_limit(CALLER_OUT_OF_DESCRIPTORS, state_dir, 32)
    assert "busy: this process has no file descriptor left to reach the supervisor" in done.stdout
    assert "close some, or raise the limit (`ulimit -n`)" in done.stdout
    assert "codes: True" in done.stdout
    assert "gave up: True True" in done.stdout


STARTER_OUT_OF_DESCRIPTORS = """
import os, sys
from wave_bash.api import Client
from wave_bash.api.errors import BusyError
from wave_bash.api.launch import connect_or_start
client = Client(state_dir=sys.argv[1])
for free in range(6):  # no supervisor yet: this process starts one, short of descriptors
    held = hold_all()
    for fd in held[:free]:
        os.close(fd)
    try:
        connect_or_start(client.layout, "unix", True).close()
        said = "started"
    except BusyError as exc:
        said = "busy" if "no file descriptor left" in str(exc) else repr(exc)
    except Exception as exc:
        said = repr(exc)
    for fd in held[free:]:
        os.close(fd)
    print(free, said)
print("then:", client.bash("echo ran").stdout)
"""


def test_a_starter_out_of_descriptors_is_busy(state_dir: Path) -> None:
    """A caller that starts the supervisor with no descriptor to spare got a raw `OSError`
    24 (importing the start lock's module, making a pipe) or a `StateDirError` that was
    not tried again (its probe file), and a note that its command may have started (a
    helper's trial): busy, as when it connects."""

    done = script_under_limit(STARTER_OUT_OF_DESCRIPTORS, state_dir, 64)
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines()[:-1])
    assert set(said.values()) <= {"busy", "started"}, said
    assert said["0"] == "busy" and done.stdout.endswith("then: ran\n")


def test_a_file_size_limit_is_named_where_it_stops_the_journal(state_dir: Path) -> None:
    """A supervisor started under a hard `ulimit -f` (which it cannot raise) said "disk
    I/O error …; check that disk" as its journal met the limit, with the disk far from
    full (a helper's trial): the limit is named."""
    start_limited_supervisor(state_dir, 300 * 1024, 300 * 1024, resource.RLIMIT_FSIZE)
    client = Client(state_dir=state_dir, autostart=False)
    for n in range(200):
        result = client.bash(f"echo {n}")
        if not result.success:
            break
    assert not result.success and "the command was not started" in result.message
    assert "no file past 307200 bytes, its hard `ulimit -f`" in result.message, result.message


def test_half_a_request_is_dropped(state_dir: Path) -> None:
    start_limited_supervisor(state_dir, 1024, 1024, WAVE_REQUEST_TIMEOUT="1s")
    with connect(state_dir) as s:
        s.sendall(raw_request("status", {})[:10])  # half a line, then silence
        started = time.monotonic()
        got = answer(s)
        assert b"no complete request within 1s" in got, got
        assert time.monotonic() - started < 5
        assert s.recv(10) == b""  # closed


def test_an_oversized_request_is_cut(state_dir: Path) -> None:
    """One request line past the limit is answered at once, without waiting for its end.
    (Among many floods, which of cut, busy or dropped each gets depends on the load.)"""
    start_limited_supervisor(state_dir, 1024, 1024, WAVE_REQUEST_TIMEOUT="30s")
    with connect(state_dir) as s:
        with contextlib.suppress(OSError):  # the supervisor may close while we send
            for _ in range(9):
                s.sendall(b"x" * (1 << 20))
        assert b"request too large" in answer(s)


def test_huge_requests_do_not_grow_memory(state_dir: Path) -> None:
    """Connections sending tens of megabytes without a newline: each is cut at the
    request limit, and all of them together are bounded (old: RSS 393 MB for 3 × 60 MB)."""
    pid = start_limited_supervisor(state_dir, 4096, 4096, WAVE_REQUEST_TIMEOUT="2s")
    proc = psutil.Process(pid)
    base = proc.memory_info().rss
    peak = [base]
    answers: list[bytes] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.01)

    def flood(size: int, chunk: int = 1 << 20) -> None:
        with connect(state_dir) as s:
            with contextlib.suppress(OSError):
                for _ in range(size // chunk):
                    s.sendall(b"x" * chunk)
            answers.append(answer(s))

    sampler = threading.Thread(target=sample)
    sampler.start()
    big = [threading.Thread(target=flood, args=(60 << 20,)) for _ in range(3)]
    many = [threading.Thread(target=flood, args=(7 << 20, 7 << 20)) for _ in range(20)]
    try:
        for t in big + many:
            t.start()
        for t in big + many:
            t.join(60)
    finally:
        stop.set()
        sampler.join()
    assert len(answers) == 23
    outcomes = (b"request too large", b'"busy"', b"no complete request")  # cut, refused, dropped
    assert [a[:100] for a in answers if not any(o in a for o in outcomes)] == []
    assert peak[0] - base < 100 << 20, (base, peak)  # 20 × 7 MiB alone would be 140 MiB
    assert Client(state_dir=state_dir).bash("echo ok").stdout == "ok"


def test_two_thousand_background_tasks(state_dir: Path) -> None:
    """The supervisor raises its soft descriptor limit to the hard one (each live task
    holds one); commands get the soft limit it was started with."""
    start_limited_supervisor(state_dir, 1024, 20_000)
    client = Client(state_dir=state_dir)
    ids = []
    for _ in range(2000):
        r = client.bash("sleep 300", run_in_background=True)
        assert r.background_task_id, r.error
        ids.append(r.background_task_id)
    assert client.status().running_tasks == 2000
    assert client.bash("ulimit -Sn").stdout == "1024"
    records = client.task_stop_many(ids)
    assert {r.status for r in records} == {"killed"}


def test_repeated_messages_are_folded_into_one_line_per_burst() -> None:
    now = [0.0]
    fold = RepeatFilter(burst=60, clock=lambda: now[0])

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("x", logging.ERROR, __file__, 1, msg, None, None)

    assert fold.filter(record("accept failed"))
    assert not any(fold.filter(record("accept failed")) for _ in range(1000))
    assert fold.filter(record("something else"))
    now[0] = 61
    again = record("accept failed")
    assert fold.filter(again) and "repeated 1000 more time(s)" in again.getMessage()


def test_different_messages_are_not_folded() -> None:
    fold = RepeatFilter(burst=60, clock=lambda: 0.0)

    def record(task: str) -> logging.LogRecord:
        return logging.LogRecord("x", logging.INFO, __file__, 1, "task %s ended", (task,), None)

    assert all(fold.filter(record(t)) for t in ("a", "b", "c"))  # three tasks, three lines
    assert not fold.filter(record("a"))


def test_waiting_requests_do_not_keep_their_bytes(state_dir: Path) -> None:
    """A request with a huge unused field that then waits (TaskOutput on a running task)
    keeps only its parsed parameters: 30 × 4 MiB waiting used to hold 8 MB each."""
    pid = start_limited_supervisor(state_dir, 4096, 4096)
    client = Client(state_dir=state_dir)
    tid = client.bash("sleep 60", run_in_background=True).background_task_id
    proc = psutil.Process(pid)
    base, fds = proc.memory_info().rss, proc.num_fds()
    padding = "x" * (4 << 20)
    socks = []
    try:
        for _ in range(30):
            s = connect(state_dir)
            s.sendall(
                raw_request("output", {"task_id": tid, "timeout": 20_000, "padding": padding})
            )
            socks.append(s)
        # Each waits on its log with a watcher of its own: a connection and a watcher each.
        wait_until(lambda: proc.num_fds() >= fds + 60)
        assert proc.memory_info().rss - base < 60 << 20, (base, proc.memory_info().rss)
    finally:
        for s in socks:
            s.close()
        client.task_stop(tid or "")


def test_supervisor_log_is_rotated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "LOG_MAX_BYTES", 4000)
    root = logging.getLogger()
    before = list(root.handlers)
    logs.setup_logging(StateLayout(tmp_path))
    (handler,) = [h for h in root.handlers if h not in before]
    try:
        log = logging.getLogger("supervisor.test")
        for i in range(500):  # distinct lines: none folded
            log.warning("line %d of a flood %s", i, "x" * 40)
    finally:
        root.removeHandler(handler)
        handler.close()
    sizes = {p.name: p.stat().st_size for p in tmp_path.glob("supervisor.log*")}
    assert set(sizes) == {"supervisor.log", "supervisor.log.1", "supervisor.log.2"}
    assert all(size <= 4000 for size in sizes.values())


def test_a_replacement_supervisor_with_fewer_descriptors_readopts_every_task(
    state_dir: Path, tmp_path: Path
) -> None:
    """60 live tasks, their supervisor killed, the next started under `ulimit -n 48`: it
    starts, re-adopts them all (pidfds up to three quarters of the limit, the rest
    watched by one polling thread) and records every true exit code (a review: it could
    not start, its descriptors spent on pidfds and on a /proc-polling thread per task)."""
    client = Client(state_dir=state_dir)
    go = tmp_path / "go"
    ids = [
        start_bg(client, f"until [ -e {go} ]; do sleep 0.05; done; exit {i % 7}") for i in range(60)
    ]
    kill_supervisor(state_dir)
    subprocess.run(
        ["bash", "-c", 'ulimit -n 48 && exec "$0" -m wave_bash.supervisor --state-dir "$1" --detach',
         sys.executable, str(state_dir)], check=True, timeout=60,
    )  # fmt: skip
    assert {t.id for t in client.tasks() if t.status == "running"} == set(ids)
    go.touch()
    codes = wait_until(
        lambda: (
            (ts := {t.id: t.exit_code for t in client.tasks()})
            and all(ts[i] is not None for i in ids)
            and ts
        ),
        timeout=60,
    )
    assert [codes[i] for i in ids] == [i % 7 for i in range(60)]  # type: ignore[index]
