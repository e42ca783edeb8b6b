"""Loopback TCP with a token, the transport where Unix sockets do not exist (issue 7).

Forced here with ``WAVE_TRANSPORT=tcp``; everything above the transport is unchanged.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import json
import os
import resource
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import (
    kill_supervisor,
    raw_request,
    start_bg,
    supervisor_pids,
    task_alive,
    wait_until,
)

from wave_bash.api import Client
from wave_bash.api.errors import StateDirError, WaveError
from wave_bash.api.paths import StateLayout
from wave_bash.api.transport import TcpEndpoint, connect, handshake_proof, tcp_handshake
from wave_bash.api.wire import encode


@pytest.fixture
def tcp_client(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Client:
    monkeypatch.setenv("WAVE_TRANSPORT", "tcp")
    return Client(state_dir=state_dir, session="tcp")


def _ask(port: int, *lines: bytes) -> dict[str, object]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for line in lines:
            s.sendall(line)
        return json.loads(s.makefile("rb").readline())


def test_commands_work_over_tcp(tcp_client: Client, state_dir: Path) -> None:
    assert tcp_client.bash("echo over tcp").stdout == "over tcp"
    tid = start_bg(tcp_client, "sleep 300")
    assert tcp_client.task_stop(tid).status == "killed" and not task_alive(tid)
    assert not (state_dir / "supervisor.sock").exists()
    endpoint = state_dir / "supervisor.tcp"
    assert endpoint.stat().st_mode & 0o777 == 0o600
    data = json.loads(endpoint.read_text())
    assert isinstance(data["port"], int) and len(data["token"]) >= 32
    (pid,) = supervisor_pids(state_dir)
    listening = [
        c.laddr for c in psutil.Process(pid).net_connections("tcp") if c.status == "LISTEN"
    ]
    assert [addr.ip for addr in listening] == ["127.0.0.1"]  # loopback only


def _handshake(port: int, proof_of: str | None, *then: bytes) -> list[dict[str, object]]:
    """Say hello, answer the server's nonce with a proof from ``proof_of`` (a token, or
    None for a wrong proof), send ``then``; returns every line the server sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(encode({"hello": "n1"}))
        lines = s.makefile("rb")
        first = json.loads(lines.readline())
        proof = handshake_proof(proof_of, "client", first["nonce"]) if proof_of else "wrong"
        s.sendall(encode({"proof": proof}))
        for line in then:
            s.sendall(line)
        return [first, *(json.loads(line) for line in lines)]


def test_tcp_needs_the_token(tcp_client: Client, state_dir: Path) -> None:
    tcp_client.status()
    endpoint = json.loads((state_dir / "supervisor.tcp").read_text())
    port, token = endpoint["port"], endpoint["token"]
    first, refused = _handshake(port, None, raw_request("status", {}))
    assert first["proof"] == handshake_proof(token, "server", "n1")  # it proved itself
    assert refused["type"] == "error" and refused["code"] == "forbidden"
    answer = _handshake(port, token, raw_request("status", {}))[-1]
    assert answer["type"] == "result"
    for first_line in (encode({"token": token}), raw_request("status", {})):  # the old way
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(first_line)
            s.shutdown(socket.SHUT_WR)
            replies = [json.loads(line) for line in s.makefile("rb")]
        assert replies[-1]["code"] == "forbidden"


def test_a_connection_closed_before_the_handshake_is_no_supervisor_not_impersonation(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listener that closes before it answers the hello (a supervisor letting go one of
    many waiting, or any program on a dead supervisor's port) proved nothing either way:
    not another user's impersonation (a review), but as if none listened, so a supervisor
    is started (a second one exits at once, the state dir being taken) and the call goes
    on; a stale port's listener held the client for two minutes otherwise (a review)."""
    for hello_read in (True, False):  # let go after the hello came, or before
        ours, theirs = socket.socketpair()
        with ours, theirs:
            if hello_read:
                ours.sendall(b"early\n")  # (stands in for the hello, read before the close)
                theirs.recv(1024)
            theirs.close()
            with pytest.raises(OSError):
                tcp_handshake(ours, "token", "127.0.0.1:1")
    monkeypatch.setenv("WAVE_TRANSPORT", "tcp")
    client = Client(state_dir=state_dir, session="tcp")
    old = client.status().pid
    port = json.loads((state_dir / "supervisor.tcp").read_text())["port"]
    kill_supervisor(state_dir)
    client.connector.drop_kept()  # (its half-closed end would hold the port)
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def bound() -> bool:  # (once the killed supervisor's sockets are gone)
        try:
            squatter.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True

    wait_until(bound, timeout=15)
    squatter.listen(8)
    stop = threading.Event()

    def answer_like_http() -> None:
        squatter.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn, _ = squatter.accept()
                with conn:
                    conn.settimeout(2)
                    conn.recv(1024)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    listener = threading.Thread(target=answer_like_http)
    listener.start()
    try:
        assert client.bash("echo hi").stdout == "hi"
        assert client.status().pid not in (None, old)
    finally:
        stop.set()
        listener.join(10)
        squatter.close()


@pytest.mark.parametrize(
    "answer", [b'{"proof":"made-up","nonce":"x"}\n', b'{"type":"error","code":"busy"}\n']
)
def test_a_squatter_on_a_dead_supervisors_port_learns_nothing(
    tcp_client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch, answer: bytes
) -> None:
    """The supervisor died and left supervisor.tcp; another user listens on its port. The
    client must refuse it before sending the token, the request or the environment, then
    start a supervisor as if none listened (refused for good, every call failed until the
    user deleted the file; answering `busy`, it kept every call waiting: reviews)."""
    if os.getuid() != 0:
        pytest.skip("acting as another uid needs root (CI runs as root)")
    tcp_client.status()
    port = json.loads((state_dir / "supervisor.tcp").read_text())["port"]
    kill_supervisor(state_dir)
    ready_r, ready_w = os.pipe()
    got_r, got_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the squatter: system calls only
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            srv = socket.socket()
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            deadline = time.monotonic() + 10
            while True:  # (the dead supervisor's connections, or another test's, may hold
                try:  # the port a moment: "Address already in use", a CI run)
                    srv.bind(("127.0.0.1", port))
                    break
                except OSError as exc:
                    if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            srv.listen(4)
            os.write(ready_w, b"1")
            first = True
            while True:  # (every connection answered so, until it is killed)
                conn, _ = srv.accept()
                conn.settimeout(5)
                got = b""
                conn.sendall(answer)
                with contextlib.suppress(OSError):
                    while chunk := conn.recv(65536):
                        got += chunk
                conn.close()
                if first:  # (what the client sent it)
                    os.write(got_w, got or b"-")
                    first = False
        except BaseException as exc:
            os.write(ready_w, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(got_w)
    try:
        assert os.read(ready_r, 200) == b"1"
        monkeypatch.setenv("MY_SECRET", "hunter2")
        squatted = json.loads((state_dir / "supervisor.tcp").read_text())["token"]
        assert Client(state_dir=state_dir, session="tcp").bash("echo hi").stdout == "hi"
        got = os.read(got_r, 65536)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(ready_r)
        os.close(got_r)
    assert b"hunter2" not in got and squatted.encode() not in got and b"echo hi" not in got
    assert json.loads(got)["hello"]  # a nonce, nothing else
    assert json.loads((state_dir / "supervisor.tcp").read_text())["port"] != port


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user may write in (as /tmp), reachable by them."""
    path = Path(tempfile.mkdtemp(prefix="wb-shared-", dir="/tmp"))
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_endpoint_is_published_through_no_link(tmp_path: Path) -> None:
    """The endpoint's temporary file had a name anyone could guess (its pid), opened by
    name and following a link: another user who had put a directory of theirs in the
    state dir's place got the token in a file of theirs (a review). It has a random
    name, made new in the directory checked as private, through its descriptor."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    target = tmp_path / "leak"
    target.write_text("")
    (state / f".supervisor.tcp.{os.getpid()}").symlink_to(target)
    TcpEndpoint(4242, "secret-token").write(state / "supervisor.tcp")
    assert target.read_text() == ""
    assert json.loads((state / "supervisor.tcp").read_text())["token"] == "secret-token"
    state.chmod(0o755)  # (no longer private: nothing published there)
    with pytest.raises(StateDirError, match="not 0700"):
        TcpEndpoint(4242, "secret-token").write(state / "supervisor.tcp")


def test_a_state_dir_renamed_into_place_gives_no_endpoint(shared_dir: Path) -> None:
    """The state dir was checked by name and its endpoint read by name: another user who
    renamed a directory of theirs in and out of a missing state dir's place had root's
    first calls connect to its listener, command and environment sent (a review won in 9
    tries). The endpoint is read through a descriptor of the checked directory."""
    if os.getuid() != 0:
        pytest.skip("acting as another uid needs root (CI runs as root)")
    parent = shared_dir
    token = "attacker-token"
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    won: list[bytes] = []

    def impostor() -> None:  # knows its own token, so it passes the handshake
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError, ValueError):
                conn.settimeout(5)
                nonce = json.loads(conn.makefile("rb").readline())["hello"]
                answer = {"proof": handshake_proof(token, "server", nonce), "nonce": "n"}
                conn.sendall(encode(answer))
                if conn.recv(4096):
                    won.append(b"proof")

    threading.Thread(target=impostor, daemon=True).start()
    prep, state = parent / "prep", parent / "state"
    prep.mkdir()
    (prep / "supervisor.tcp").write_text(json.dumps({"port": port, "token": token}))
    os.chown(prep / "supervisor.tcp", 65534, 65534)
    os.chown(prep, 65534, 65534)
    stop_r, stop_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the attacker: renames its directory in and out of place
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.set_blocking(stop_r, False)
            while True:
                with contextlib.suppress(OSError):
                    os.rename(prep, state)
                    os.rename(state, prep)
                with contextlib.suppress(BlockingIOError):
                    if os.read(stop_r, 1):
                        break
        finally:
            os._exit(0)
    os.close(stop_r)
    layout = StateLayout(state)
    outcomes: collections.Counter[str] = collections.Counter()
    deadline = time.monotonic() + 20
    try:  # until the attacker's directory was met in place often enough
        while outcomes["StateDirError"] < 50 and time.monotonic() < deadline:
            try:
                connect(layout, "tcp").close()
                outcomes["connected"] += 1
            except (OSError, WaveError) as exc:
                outcomes[type(exc).__name__] += 1
    finally:
        os.write(stop_w, b"x")
        os.waitpid(pid, 0)
        os.close(stop_w)
        listener.close()
    assert outcomes["connected"] == 0 and not won, outcomes
    assert outcomes["StateDirError"] == 50, outcomes  # (met in place, and refused)


def test_graceful_stop_removes_the_endpoint(tcp_client: Client, state_dir: Path) -> None:
    tcp_client.status()
    assert tcp_client.shutdown()

    wait_until(lambda: not (state_dir / "supervisor.tcp").exists())
    assert tcp_client.bash("echo again").stdout == "again"  # a new one starts on demand


def test_an_oversized_handshake_is_refused_without_touching_the_budget(
    tcp_client: Client, state_dir: Path
) -> None:
    """Hello lines are at most 1 KiB and are not counted in the shared request budget:
    eight peers sending megabytes before proving anything lock no one out."""
    tcp_client.status()
    port = json.loads((state_dir / "supervisor.tcp").read_text())["port"]
    floods = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
    try:
        for s in floods:
            with contextlib.suppress(OSError):
                s.sendall(b"x" * (8 << 20))
        assert tcp_client.bash("echo still served").stdout == "still served"
        refused = [json.loads(s.makefile("rb").readline()) for s in floods]
        assert all(r["code"] == "forbidden" for r in refused), refused
    finally:
        for s in floods:
            s.close()


def test_peers_without_the_token_do_not_fill_the_connection_cap(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's idle connections to a TCP supervisor counted towards its cap: its
    own clients were answered `busy`, which they took for impersonation (a review). Only
    peers that showed the token count now, and one that shows none is let go at once."""
    monkeypatch.setenv("WAVE_TRANSPORT", "tcp")
    monkeypatch.setenv("WAVE_MAX_CONNECTIONS", "8")
    client = Client(state_dir=state_dir, session="tcp")
    client.status()
    port = json.loads((state_dir / "supervisor.tcp").read_text())["port"]
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
    try:
        assert client.bash("echo ok").stdout == "ok"
        idle[0].settimeout(10)
        assert json.loads(idle[0].makefile("rb").readline())["code"] == "protocol"  # let go
    finally:
        for s in idle:
            s.close()


def test_peers_without_the_token_do_not_use_up_the_descriptors(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Connections that never show the token held a descriptor each for seconds, with no
    cap: under a limit of 256, commands failed to start with "Too many open files" (a
    review). Those not let in are 64 at most now, the oldest let go for each new one, so
    the supervisor's own clients keep getting in and their commands start. (A burst the
    event loop accepts before it runs any of them may still meet the limit: the loop
    then waits a second before it accepts again.)"""
    monkeypatch.setenv("WAVE_TRANSPORT", "tcp")
    client = Client(state_dir=state_dir, session="tcp")
    pid = client.status().pid
    assert pid
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (256, 256))
    port = json.loads((state_dir / "supervisor.tcp").read_text())["port"]
    stop = threading.Event()

    def flood() -> None:  # 300 open at all times: each one let go is opened again
        held: list[socket.socket] = []
        while not stop.is_set():
            for s in [s for s in held if _closed_by_peer(s)]:
                held.remove(s)
                s.close()
            while len(held) < 300 and not stop.is_set():
                with contextlib.suppress(OSError):
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=1))
            stop.wait(0.01)
        for s in held:
            s.close()

    before = len(os.listdir(f"/proc/{pid}/fd"))
    flooder = threading.Thread(target=flood)
    flooder.start()
    try:  # (the flood holds most of the 64 it may: its own count beside the supervisor's,
        # which was 20 or fewer under CI's load, where `> 84` was never met)
        wait_until(lambda: len(os.listdir(f"/proc/{pid}/fd")) > before + 48, timeout=15)
        for i in range(5):
            assert client.bash(f"echo {i}").stdout == str(i)
            tid = start_bg(client, "sleep 300")
            assert client.task_stop(tid).status == "killed"
    finally:
        stop.set()
        flooder.join(30)
    log_text = (state_dir / "supervisor.log").read_text()
    # (A burst, as above, may meet the limit once: its command is answered busy and sent
    # again, as D3a says; a CI run met it once. Uncapped, every start met it.)
    refused = [x for x in log_text.splitlines() if "could not start" in x]
    assert len(refused) <= 2, refused


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_an_endpoint_file_replaced_by_a_fifo_is_published_again(
    tcp_client: Client, state_dir: Path
) -> None:
    """A FIFO in place of `supervisor.tcp` held every client reading it (and a starting
    supervisor); the running one publishes its endpoint again, as it listens again on a
    removed Unix socket."""
    pid = tcp_client.status().pid
    endpoint = state_dir / "supervisor.tcp"
    endpoint.unlink()
    os.mkfifo(endpoint)
    assert tcp_client.status().pid == pid
