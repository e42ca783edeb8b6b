"""A client keeps its connection between calls (PR1, issue 15: connecting and accepting
took a quarter of a quick call), and never sends on one that went stale."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import journal_rows, kill_supervisor, raw_request, start_supervisor, wait_until

from wave_bash.api import Client, SupervisorUnavailableError
from wave_bash.api import calls as calls_module
from wave_bash.api import connection as connection_module


def kept_socket(client: Client) -> int:
    """The inode of the socket the client keeps for its next call."""
    kept = client.connector.kept._kept  # type: ignore[attr-defined]
    assert kept is not None, "no connection kept"
    return os.fstat(kept[0].sock.fileno()).st_ino


def answers(sock: socket.socket) -> list[dict[str, object]]:
    """The messages read until the final one (``result`` or ``error``)."""
    out, buf = [], b""
    while not out or out[-1]["type"] not in ("result", "error"):
        chunk = sock.recv(65536)
        assert chunk, f"closed after {out}"
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            out.append(json.loads(line))
    return out


def closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(10)
    return sock.recv(1) == b""


def test_calls_one_after_another_use_one_connection(client: Client) -> None:
    client.status()
    first = kept_socket(client)
    assert client.bash("echo hi").stdout == "hi"
    client.tasks()
    assert kept_socket(client) == first


def test_a_request_without_keep_is_the_only_one_on_its_connection(
    client: Client, state_dir: Path
) -> None:
    client.status()
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(state_dir / "supervisor.sock"))
        s.sendall(raw_request("status", {"session": "raw"}))
        (answer,) = answers(s)
        assert answer["type"] == "result" and "keep" not in answer
        assert closed_by_peer(s)
    with socket.socket(socket.AF_UNIX) as s:  # with it: answered, open for the next one
        s.connect(str(state_dir / "supervisor.sock"))
        for _ in range(3):
            s.sendall(raw_request("status", {"session": "raw", "keep": True}))
            (answer,) = answers(s)
            assert (answer["type"], answer["keep"]) == ("result", True)


def test_bytes_sent_while_a_request_is_answered_end_the_connection(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    client.status()
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(state_dir / "supervisor.sock"))
        run = {"session": "raw", "command": "sleep 1", "cwd": str(tmp_path), "env": {}}
        s.sendall(raw_request("run", {**run, "keep": True}))
        wait_until(lambda: journal_rows(state_dir))  # read, and being answered
        s.sendall(raw_request("status", {"session": "raw"}))  # not waiting for the answer
        *_, answer = answers(s)
        assert answer["type"] == "result" and "keep" not in answer
        assert closed_by_peer(s)


def test_a_kept_connection_to_a_killed_supervisor_is_never_sent_on(
    client: Client, state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sends: list[tuple[connection_module.SocketChannel, bytes]] = []
    send = connection_module.SocketChannel.send

    def counted(self: connection_module.SocketChannel, data: bytes) -> None:
        sends.append((self, data))
        send(self, data)

    monkeypatch.setattr(connection_module.SocketChannel, "send", counted)
    client.status()
    kept = client.connector.kept._kept  # type: ignore[attr-defined]
    assert kept is not None
    kill_supervisor(state_dir)
    # (Its end of file shows once the kernel has closed its descriptors, a moment after
    # its pid is gone: a request sent meanwhile is lost, and sent again like any other.)
    assert select.select([kept[0].sock], [], [], 10)[0]
    marker = tmp_path / "ran"
    r = client.bash(f"echo x >> {marker}")  # a new supervisor starts; the request goes once
    assert r.success and marker.read_text() == "x\n"
    # Never on the kept one. (A connection made to the dead supervisor's socket may still
    # be taken by the kernel, then cut: held a moment longer by a child of it between its
    # fork and exec, a standby monitor's start. That request is sent again: a CI run.)
    assert [channel for channel, _ in sends].count(kept[0]) == 1
    assert b'"op":"run"' in sends[-1][1]
    assert len([row for row in journal_rows(state_dir) if "ran" in str(row["command"])]) == 1


def test_a_forked_child_connects_on_its_own(client: Client) -> None:
    client.status()
    first = kept_socket(client)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            code = 0 if client.bash("echo child").stdout == "child" else 2
            code = code or int(kept_socket(client) == first) * 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert client.bash("echo parent").stdout == "parent"
    assert kept_socket(client) == first


def test_a_kept_connection_does_not_keep_the_supervisor_from_its_idle_exit(
    state_dir: Path,
) -> None:
    pid = start_supervisor(state_dir, WAVE_IDLE_EXIT="1s")
    client = Client(state_dir=state_dir, session="idle")
    assert client.status().pid == pid
    kept_socket(client)
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=15)
    assert client.status().pid != pid  # (the next call starts a supervisor again)


def test_a_closed_client_closes_its_kept_connection(client: Client, state_dir: Path) -> None:
    client.status()
    kept = client.connector.kept._kept  # type: ignore[attr-defined]
    assert kept is not None
    client.close()
    assert kept[0].sock.fileno() == -1


def test_a_client_in_a_with_block_is_closed_as_it_ends(state_dir: Path) -> None:
    """`with Client(...) as client:` (it was no context manager: a trial) closes it, its
    kept connection with it."""
    with Client(state_dir=state_dir) as client:
        assert client.bash("echo in").stdout == "in"
        kept = client.connector.kept._kept  # type: ignore[attr-defined]
        assert kept is not None
    assert kept[0].sock.fileno() == -1
    with pytest.raises(SupervisorUnavailableError, match="this client was closed"):
        client.status()


def test_a_kept_connection_is_not_used_after_a_pause(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.status()
    first = kept_socket(client)
    monkeypatch.setattr(connection_module, "KEEP_SECONDS", 0.0)  # (every pause is too long)
    client.status()
    monkeypatch.setattr(connection_module, "KEEP_SECONDS", 5.0)
    assert kept_socket(client) != first


def test_the_supervisor_stopping_ends_kept_connections(client: Client, state_dir: Path) -> None:
    client.status()
    kept = client.connector.kept._kept  # type: ignore[attr-defined]
    assert kept is not None
    kill_supervisor(state_dir, signal.SIGTERM)
    assert closed_by_peer(kept[0].sock)
    assert client.status().running


def test_kept_connections_do_not_fill_the_cap(state_dir: Path) -> None:
    """Clients that wait between calls hold no place under the cap (a review: two idle
    clients turned a third away as `busy`)."""
    start_supervisor(state_dir, WAVE_MAX_CONNECTIONS="2")
    idle = [Client(state_dir=state_dir, session=f"idle-{i}") for i in range(2)]
    for client in idle:
        client.status()
        kept_socket(client)
    assert Client(state_dir=state_dir).bash("echo third").stdout == "third"


def test_a_request_begun_on_a_kept_connection_has_the_request_time_limit(
    state_dir: Path,
) -> None:
    start_supervisor(state_dir, WAVE_REQUEST_TIMEOUT="1s")
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(state_dir / "supervisor.sock"))
        s.sendall(raw_request("status", {"session": "raw", "keep": True}))
        assert answers(s)[-1]["keep"] is True
        s.sendall(raw_request("status", {"session": "raw"})[:10])  # and no more
        s.settimeout(10)
        (answer,) = answers(s)
        assert answer["type"] == "error" and "no complete request within 1s" in str(answer)


PARENT = """
import os, sys, threading, time
from wave_bash.api import Client
client = Client(state_dir=sys.argv[1], session="forks")
client.status()

def fork():
    if os.fork() == 0:  # a child that lives on, as a multiprocessing worker would
        time.sleep(60)
        os._exit(0)

if sys.argv[3] == "between-calls":
    fork()
else:  # another thread forks while a call is in flight on the connection kept after it
    task = client.bash("sleep 1", run_in_background=True).background_task_id

    def fork_mid_call():
        deadline = time.monotonic() + 10
        while client.connector.kept._kept is not None and time.monotonic() < deadline:
            time.sleep(0.001)  # (until the wait below has taken the kept connection)
        fork()

    threading.Thread(target=fork_mid_call).start()
    client.wait(task, timeout=10_000)
client.bash("echo started > " + sys.argv[2] + "; sleep 30", timeout=60_000)
"""


@pytest.mark.parametrize("when", ["between-calls", "mid-call"])
def test_a_forked_child_does_not_hide_its_parents_death(
    state_dir: Path, tmp_path: Path, when: str
) -> None:
    """The parent's foreground command goes through the connection it kept; the child it
    forked before, between calls or while that connection was in use for a call, holds
    no copy of it, so the parent's death is its caller's (F5; a review found the copy of
    a connection in use kept)."""
    client = Client(state_dir=state_dir, session="forks")
    client.status()
    flag = tmp_path / "flag"
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(state_dir), str(flag), when])
    children: list[str] = []
    try:
        wait_until(lambda: flag.exists())
        children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
        parent.kill()
        parent.wait()
        (task,) = [t for t in client.tasks() if "sleep 30" in t.command]

        def owner() -> tuple[str, str | None]:
            (now,) = [t for t in client.tasks() if t.id == task.id]
            return now.owner, now.background_reason

        wait_until(lambda: owner()[0] == "background")
        assert owner() == ("background", "caller_lost")
        client.task_stop(task.id)
    finally:
        parent.kill()
        parent.wait()
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


def test_an_abandon_that_comes_after_its_call_cuts_no_later_call() -> None:
    """An abandon lists the call's use of a channel, then interrupts it: if the call
    ended meanwhile, the kept channel already carries the next call (a review)."""
    cut = []

    class Channel:
        def interrupt(self) -> None:
            cut.append(True)

    use = calls_module._Use(Channel())  # type: ignore[arg-type]
    use.end()
    use.interrupt()
    assert not cut
