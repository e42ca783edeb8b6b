"""A remote dev box through a real sshd on 127.0.0.1 (issue 8).

The test starts Debian's sshd with a throwaway host key and an authorized key; the
"remote" wave-bash is this same installation with its own state dir.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import (
    BashInThread,
    gone,
    kill_supervisor,
    needs,
    needs_root,
    needs_tool,
    reap,
    start_bg,
    task_alive,
    wait_until,
)

from wave_bash.api import (
    Client,
    InvalidInputError,
    SupervisorUnavailableError,
    calls,
    connection,
    wire,
)
from wave_bash.api.paths import StateLayout
from wave_bash.api.transport import CONTROL_DIR_ROOM, Remote, control_path

SSHD = "/usr/sbin/sshd"

pytestmark = pytest.mark.xdist_group("ssh")
"""One test worker runs these, one after the other: each logs in over ssh, and two logins
at once ran the host's login scripts at once (pyenv's `rehash` in root's `.bashrc`
refused the second: "cannot rehash: …/shims isn't writable", said on the ssh stream, and
a call failed: a CI run)."""


def _free_port(host: str = "127.0.0.1") -> int:
    """A port free on ``host`` now, or 0 where ``host`` cannot be bound (no IPv6)."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, 0))
            return int(s.getsockname()[1])
    except OSError:
        return 0


def _start_sshd(config: Path, host: str = "127.0.0.1") -> tuple[subprocess.Popen[bytes], int]:
    """The test's sshd with ``config``, listening on a free port of ``host``. A port is
    only free when chosen: another test worker may bind it first, and a connection to it
    then reaches that worker's listener. So the port counts only once this sshd itself
    listens on it; one it could not bind (it then exits) is followed by another."""
    for _ in range(5):
        port = _free_port(host)
        needs(port != 0, f"a loopback address {host}", "enable it on the loopback interface")
        text = re.sub(r"^Port \d+$", f"Port {port}", config.read_text(), flags=re.M)
        config.write_text(text)
        server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL)
        up = functools.partial(_up_or_gone, server, port)
        wait_until(up, timeout=10)
        if server.poll() is None:
            return server, port
    raise AssertionError(f"sshd found no free port on {host} in five tries")


def _up_or_gone(server: subprocess.Popen[bytes], port: int) -> bool:
    """Whether ``server`` has ended or listens on ``port`` itself."""
    if server.poll() is not None:
        return True
    with contextlib.suppress(psutil.Error):
        return any(
            c.status == psutil.CONN_LISTEN and c.laddr and c.laddr[1] == port
            for c in psutil.Process(server.pid).net_connections("tcp")
        )
    return False


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[dict[str, object]]:
    needs(Path(SSHD).exists(), SSHD, "install the openssh-server package")
    needs_tool("ssh", "openssh-client")
    needs_root("the test sshd logs in as the current user with root's setup (CI runs as root)")
    keys = tmp_path / "ssh"
    keys.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True
        )
    (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
    config = keys / "sshd_config"
    config.write_text(
        f"Port 0\nListenAddress 127.0.0.1\nHostKey {keys / 'host'}\n"
        f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPidFile {keys / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "PermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    server, port = _start_sshd(config)
    remote_state = Path(f"/tmp/wb-remote-{port}")
    local_state = Path(tempfile.mkdtemp(prefix="wb-local-"))  # (short: its ssh dir holds
    # the shared connection's socket, which a test worker's tmp_path is too long for)
    try:
        yield {
            "url": f"ssh://{os.environ.get('USER', 'root')}@127.0.0.1:{port}",
            "options": ["-i", str(keys / "client"), "-o", "StrictHostKeyChecking=no",
                        "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"],
            "command": f"{shlex.quote(sys.executable)} -m wave_bash.api.cli --state-dir {remote_state}",
            "state": remote_state,
            "local": local_state,
            "server": server,
            "config": config,
        }  # fmt: skip
    finally:
        _end_shared_connections(port, server)
        server.terminate()
        server.wait(timeout=10)
        reap(remote_state)
        shutil.rmtree(remote_state, ignore_errors=True)
        reap(local_state)
        shutil.rmtree(local_state, ignore_errors=True)


def _shared_connections(port: int) -> list[psutil.Process]:
    """The ssh processes that keep a connection to ``port`` open for calls to share
    (their ``ControlMaster``, named ``ssh: PATH [mux]``)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            master = "[mux]" in " ".join(proc.info["cmdline"] or ())
            if proc.info["name"] == "ssh" and master and _connected_to(proc, port):
                found.append(proc)
    return found


def _connected_to(proc: psutil.Process, port: int) -> bool:
    return any(c.raddr and c.raddr[1] == port for c in proc.net_connections("tcp"))


def _end_shared_connections(port: int, server: subprocess.Popen[bytes]) -> None:
    """End every session of the test's sshd, the shared connections' too (they outlive
    their calls by ``ControlPersist``), and those connections' ssh processes."""
    with contextlib.suppress(psutil.Error):
        for proc in psutil.Process(server.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                proc.kill()
    for proc in _shared_connections(port):
        with contextlib.suppress(psutil.Error):
            proc.kill()
    wait_until(lambda: not _shared_connections(port), timeout=10)


def remote_client(sshd: dict[str, object], remote_command: str | None = None) -> Client:
    return Client(
        remote=str(sshd["url"]), ssh_options=list(sshd["options"]),  # type: ignore[call-overload]
        remote_command=remote_command or str(sshd["command"]), session="remote",
        state_dir=sshd["local"],  # type: ignore[arg-type]
    )  # fmt: skip


def _sessions(server: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The sshd processes that serve a connection (one each: the listener's children)."""
    return [p for p in psutil.Process(server.pid).children() if _named(p, "sshd")]


def test_calls_share_one_ssh_connection(sshd: dict[str, object]) -> None:
    """Each call is a new ssh, over the connection the first one made (ControlMaster):
    a login (key exchange, authentication) cost every call ~0.2 s here, several round
    trips over a network; the connection stays for the next calls, in a private dir."""
    client = remote_client(sshd)
    server = sshd["server"]
    assert isinstance(server, subprocess.Popen)
    for _ in range(3):
        assert client.bash("echo hi").stdout == "hi"
    assert len(_sessions(server)) == 1  # (each call's own login ended with its call)
    port = int(str(sshd["url"]).rsplit(":", 1)[1])
    (master,) = _shared_connections(port)
    control = Path(master.cmdline()[0].split(" ")[1])
    assert control.parent == Path(str(sshd["local"])) / "ssh"
    assert oct(control.parent.stat().st_mode & 0o777) == "0o700"
    assert client.bash("echo again").stdout == "again"
    assert _shared_connections(port) == [master]
    options = [*sshd["options"], "-o", "ControlMaster=no"]  # type: ignore[misc]
    assert Client(
        remote=str(sshd["url"]), ssh_options=options, remote_command=str(sshd["command"]),
        state_dir=sshd["local"],  # type: ignore[arg-type]
    ).bash("echo own").stdout == "own"  # fmt: skip
    assert _shared_connections(port) == [master]  # (the caller's options come first)


def test_foreground_runs_remotely_with_the_remote_environment(
    sshd: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAVE_LOCAL_ONLY", "local-value")
    client = remote_client(sshd)
    r = client.bash('echo "$HOME ${WAVE_LOCAL_ONLY:-absent} $WAVE_TASK_ID"; pwd')
    home, local_only, task_id = r.stdout.splitlines()[0].split()
    assert r.success and (home, local_only) == (os.path.expanduser("~"), "absent")
    assert r.stdout.splitlines()[1] == home  # starts in the remote home
    assert r.output_path and r.output_path.startswith(str(sshd["state"]))  # a remote path
    assert Path(r.output_path).stem == task_id


def test_background_stop_and_notices_remotely(sshd: dict[str, object]) -> None:
    client = remote_client(sshd)
    done = start_bg(client, "echo hi; exit 3")
    running = start_bg(client, "sleep 300")
    assert client.wait(done, timeout=10_000).status == "failed"
    assert client.task_stop(running).status == "killed" and not task_alive(running)
    notices = {n.task_id: n.status for n in client.notifications()}
    assert notices == {done: "failed", running: "killed"}
    assert client.task_output(done, block=False).output == "hi"
    assert remote_client(sshd).notifications() == []  # reattached by session: delivered once
    assert {t.id for t in client.tasks()} == {done, running}


def test_killed_ssh_connection_during_a_foreground_call(sshd: dict[str, object]) -> None:
    client = remote_client(sshd)
    call = BashInThread(client, "echo a; sleep 2; echo b")
    call.task_id()
    ssh = [p for p in psutil.Process().children() if p.name() == "ssh"]
    assert ssh
    for proc in ssh:
        proc.send_signal(signal.SIGKILL)  # the SSH connection drops mid-call
    r = call.result()
    assert (r.success, r.stdout, r.exit_code) == (True, "a\nb", 0)  # reconnected, kept waiting


def test_a_caller_killed_mid_call_is_a_lost_caller_remotely(
    sshd: dict[str, object], tmp_path: Path
) -> None:
    """The local CLI killed during a foreground `run`: its ssh's end closes, and the
    remote bridge hung up on the supervisor, which moved the command to the background
    (`caller_lost`) and delivered its end as a notice; it went on answering nobody, and
    the end was never told (a review)."""
    started = tmp_path / "started"
    base = [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(sshd["local"]), "--remote", str(sshd["url"]),
            "--remote-command", str(sshd["command"]), "--session", "remote",
            "--ssh-option", shlex.join(list(sshd["options"]))]  # type: ignore[arg-type]  # fmt: skip
    cli = subprocess.Popen(
        [*base, "run", "--", f"touch {started}; sleep 3; echo done; exit 4"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(started.exists, timeout=30)
    finally:
        cli.kill()
        cli.wait()
    client = remote_client(sshd)
    task = client.tasks()[-1]
    wait_until(lambda: client.tasks()[-1].background_reason == "caller_lost", timeout=10)
    assert client.wait(task.id, timeout=10_000).exit_code == 4
    assert [(n.task_id, n.status) for n in client.notifications()] == [(task.id, "failed")]


def _waiting(client: Client, task_id: str, timeout: int) -> tuple[threading.Thread, list[object]]:
    """``client.wait`` in a thread, started; its answer (or error) goes to the list."""
    answers: list[object] = []

    def wait() -> None:
        try:
            answers.append(client.wait(task_id, timeout=timeout))
        except Exception as exc:  # (the test says what it expected)
            answers.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    return waiter, answers


def _exit_code(answers: list[object]) -> object:
    """The one answer's exit code (or the error that came instead)."""
    assert len(answers) == 1
    return getattr(answers[0], "exit_code", answers[0])


def test_a_cut_connection_during_wait_is_tried_again(sshd: dict[str, object]) -> None:
    """The ssh of a `wait` killed mid-call: the call failed with `could not reach …
    exit -9` where a supervisor restart is waited out (a review); a connection that was
    made and then cut is tried again, as any call is (CR1)."""
    client = remote_client(sshd)
    task_id = start_bg(client, "sleep 2; echo end; exit 5")
    waiter, answers = _waiting(client, task_id, 30_000)

    def ssh() -> list[psutil.Process]:
        return [p for p in psutil.Process().children() if p.name() == "ssh"]

    wait_until(lambda: bool(ssh()), timeout=10)
    for proc in ssh():
        proc.send_signal(signal.SIGKILL)
    waiter.join(timeout=60)
    assert _exit_code(answers) == 5


def _bridges(pid: int, relaying: bool = False) -> list[psutil.Process]:
    """The bridges running under the sshd ``pid`` (``relaying``: connected to their
    supervisor, which they do after they say they started)."""
    found = []
    for proc in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "bridge" in proc.cmdline() and (not relaying or proc.net_connections(kind="unix")):
                found.append(proc)
    return found


def _named(proc: psutil.Process, name: str) -> bool:
    with contextlib.suppress(psutil.Error):
        return proc.name() == name
    return False


class _RefusingListener:
    """A listener on ``port`` that closes each connection at once, counting them: an ssh
    server that is down, where a test can see that a client tried."""

    def __init__(self, port: int) -> None:
        self.count = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                conn.close()
                self.count += 1

    def stop(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(timeout=10)


def test_a_connection_the_server_cuts_is_tried_again(sshd: dict[str, object]) -> None:
    """The server's end of a `wait`'s connection closes (its session's sshd killed, as a
    restart of sshd does), with ssh told to log nothing: the call is sent again."""
    options = [*sshd["options"], "-o", "LogLevel=QUIET"]  # type: ignore[misc]
    client = Client(
        remote=str(sshd["url"]), ssh_options=options, remote_command=str(sshd["command"]),
        session="remote", state_dir=sshd["local"],  # type: ignore[arg-type]
    )  # fmt: skip
    server = sshd["server"]
    assert isinstance(server, subprocess.Popen)
    task_id = start_bg(client, "sleep 2; exit 5")
    wait_until(lambda: not _bridges(server.pid), timeout=20)  # (the start's, gone)
    waiter, answers = _waiting(client, task_id, 30_000)
    wait_until(lambda: _bridges(server.pid), timeout=20)
    (bridge,) = _bridges(server.pid)
    for proc in bridge.parents():  # its session's sshd processes, not the listener
        if proc.pid != server.pid and _named(proc, "sshd"):
            proc.kill()
    waiter.join(timeout=60)
    assert _exit_code(answers) == 5


def test_a_wait_outlasts_an_sshd_that_is_down_for_a_while(sshd: dict[str, object]) -> None:
    """The ssh server restarted during a `wait`: the reconnect found no server and the
    call gave up at once (a trial), where a foreground `run` kept trying. A connection
    that was made once is tried again for the call's patience (CR1), as for any call."""
    client = remote_client(sshd)
    task_id = start_bg(client, "sleep 3; exit 5")
    waiter, answers = _waiting(client, task_id, 30_000)
    server = sshd["server"]
    assert isinstance(server, subprocess.Popen)
    wait_until(lambda: _bridges(server.pid), timeout=20)  # (the wait's, connected)
    down = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    down = [p for p in down if _named(p, "sshd")]  # (not the bridge: it sees its end close)
    for proc in down:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    server.wait()
    psutil.wait_procs(down, timeout=10)
    port = int(str(sshd["url"]).rsplit(":", 1)[1])
    refused = _RefusingListener(port)  # until the client has found no server there
    wait_until(lambda: refused.count > 0 or not waiter.is_alive(), timeout=20)
    refused.stop()
    again = subprocess.Popen([SSHD, "-D", "-e", "-f", str(sshd["config"])],
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        waiter.join(timeout=60)
        assert _exit_code(answers) == 5
    finally:
        again.terminate()
        again.wait(timeout=10)


def test_the_cli_says_it_keeps_trying_while_sshd_is_down(sshd: dict[str, object]) -> None:
    """A remote `run` whose sshd went down waited 96 s without a word (a trial): past a
    moment of trying again, the CLI says so on stderr, once, and goes on."""
    client = remote_client(sshd)
    task_id = start_bg(client, "sleep 4; exit 5")
    base = [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(sshd["local"]),
            "--remote", str(sshd["url"]), "--remote-command", str(sshd["command"]),
            "--ssh-option", shlex.join(list(sshd["options"]))]  # type: ignore[arg-type]  # fmt: skip
    server = sshd["server"]
    assert isinstance(server, subprocess.Popen)
    waiting = subprocess.Popen([*base, "wait", task_id, "--timeout", "60000"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_until(lambda: _bridges(server.pid), timeout=20)  # (the wait's, connected)
        down = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
        for proc in [p for p in down if _named(p, "sshd")]:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        server.wait()
        port = int(str(sshd["url"]).rsplit(":", 1)[1])
        refused = _RefusingListener(port)
        began = time.monotonic()
        wait_until(lambda: time.monotonic() - began > 4, timeout=10)  # (down for a while)
        refused.stop()
        again = subprocess.Popen([SSHD, "-D", "-e", "-f", str(sshd["config"])],
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            out, err = waiting.communicate(timeout=60)
        finally:
            again.terminate()
            again.wait(timeout=10)
    finally:
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 5, (out, err)
    assert err.count("trying again for up to") == 1, err


def test_a_bridge_that_fails_after_it_started_is_not_tried_again(
    sshd: dict[str, object], tmp_path: Path
) -> None:
    """The bridge's `started` line must not make its own failure (its exit status, not
    ssh's 255) a cut connection, tried again for 30 s (a review): it fails at once."""
    runs = tmp_path / "runs"
    script = tmp_path / "bridge.py"
    script.write_text(
        f"import sys\nopen({str(runs)!r}, 'a').write('x')\n"
        "print('wave-bash bridge: started', file=sys.stderr, flush=True)\n1 / 0\n"
    )
    bridge = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    client = remote_client(sshd, remote_command=bridge)
    with pytest.raises(SupervisorUnavailableError, match="ZeroDivisionError"):
        client.tasks()
    assert runs.read_text() == "x"  # one try


def test_a_remote_shell_that_greets_on_stdout(sshd: dict[str, object]) -> None:
    """A `.bashrc` that prints on the remote: every call failed (`malformed protocol
    message`) though its command ran (a review); its lines before the answer are skipped."""
    for greeting in ("echo Welcome to devbox", "printf 'Welcome {user}'"):  # (no newline)
        client = remote_client(sshd, remote_command=f"{greeting}; {sshd['command']}")
        r = client.bash("echo hi")
        assert (r.success, r.stdout) == (True, "hi")
        assert [t.command for t in client.tasks()][-1] == "echo hi"


def test_the_bridge_ends_cleanly(sshd: dict[str, object]) -> None:
    """Its stdin watcher, a thread still reading as Python exits, aborted every bridge
    (SIGABRT, exit 134: a review)."""
    command = shlex.split(str(sshd["command"]))
    request = b'{"v":1,"op":"tasks","session":"r1"}\n'
    proc = subprocess.Popen([*command, "bridge"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request)
    proc.stdin.flush()
    answer = proc.stdout.readline()  # (its stdin stays open until then, as ssh's does)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b'"type"' in answer, err


def test_a_bridge_whose_caller_closed_at_once_says_nothing_ran(
    state_dir: Path, tmp_path: Path
) -> None:
    """A request piped in, stdin then closed: the bridge said nothing and exited 0 (a
    review). It says so, and exits 2; a caller gone before the request is sent has it
    never sent (sent, the bridge's hang-up raced the supervisor's look for it)."""
    ran = tmp_path / "ran"
    request = json.dumps({"v": 1, "op": "run", "command": f"echo x >> {ran}", "cwd": "/tmp",
                          "run_in_background": True, "session": "b"}).encode() + b"\n"  # fmt: skip
    Client(state_dir=state_dir).status()  # (a supervisor ready)
    done = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "bridge"],
        input=request, capture_output=True, timeout=60,
    )  # fmt: skip
    (line,) = done.stdout.splitlines()
    answer = json.loads(line)
    assert done.returncode == 2 and answer["type"] == "error", done
    assert "closed before the supervisor answered (nothing was sent)" in answer["message"]
    assert not ran.exists()  # (sent, then hung up on, a loaded supervisor ran it: a CI run)


def test_cli_remote_and_output_follow(sshd: dict[str, object]) -> None:
    base = [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(sshd["local"]), "--remote", str(sshd["url"]),
            "--remote-command", str(sshd["command"]),
            "--ssh-option", shlex.join(list(sshd["options"]))]  # type: ignore[arg-type]  # fmt: skip
    r = subprocess.run([*base, "run", "--background", "--json", "--", "for i in 1 2; do echo n$i; sleep 0.3; done"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    tid = json.loads(r.stdout)["backgroundTaskId"]
    home = os.path.expanduser("~")  # (the remote's: the same machine here)
    for given in (".", "~", "~/"):  # a relative --cwd is read in the remote home
        there = subprocess.run([*base, "run", "--cwd", given, "--", "pwd"],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
        assert there.stdout.strip() == home, (given, there.stdout, there.stderr)
    follow = subprocess.run(
        [*base, "output", tid, "--follow"], capture_output=True, text=True, timeout=60
    )
    assert follow.stdout.split() == ["n1", "n2"]
    # Hints name the remote: a trial pasted `wave-bash input ID TEXT` and got "No task
    # found" from this machine.
    asks = subprocess.run([*base, "run", "-i", "--", "read -r -p 'name? ' n; echo hi $n"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert asks.returncode == 124, asks.stderr
    where = f"--state-dir {sshd['local']} --remote {sshd['url']} "  # (as it was given)
    assert f"`wave-bash {where}" in asks.stderr, asks.stderr
    # ... and the options that reach it (without them: a wrong key, no wave-bash there)
    options = shlex.quote("--ssh-option=" + shlex.join(list(sshd["options"])))  # type: ignore[arg-type]
    remote_command = shlex.quote(str(sshd["command"]))
    assert f"{options} --remote-command {remote_command} input " in asks.stderr, asks.stderr
    task_id = asks.stderr.split(" waits for input")[0].lstrip("[")
    answered = subprocess.run([*base, "input", task_id, "bob"], capture_output=True, text=True,
                              timeout=60)  # fmt: skip
    assert "hi bob" in answered.stdout, answered


def test_ssh_options_from_the_environment(sshd: dict[str, object]) -> None:
    """`WAVE_REMOTE` alone was not enough where ssh needed an option: every call took
    `--ssh-option` (a trial). `WAVE_SSH_OPTIONS` gives them, split as a shell would."""
    env = {
        **os.environ, "WAVE_STATE_DIR": str(sshd["local"]), "WAVE_REMOTE": str(sshd["url"]),
        "WAVE_REMOTE_COMMAND": str(sshd["command"]),
        "WAVE_SSH_OPTIONS": shlex.join(list(sshd["options"])),  # type: ignore[call-overload]
    }  # fmt: skip
    cli = [sys.executable, "-m", "wave_bash.api.cli"]
    ran = subprocess.run([*cli, "run", "--", "echo there"], capture_output=True, text=True,
                         timeout=60, env=env)  # fmt: skip
    assert (ran.returncode, ran.stdout) == (0, "there\n"), ran.stderr
    # The remote's output file is named as such where the message names it, and only
    # there (not after a `sleep` stopped at its timeout: a trial)
    cut = subprocess.run([*cli, "run", "--timeout", "300", "--", "sleep 30"],
                         capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert cut.returncode == 143 and "output file is on" not in cut.stderr, cut.stderr
    moved = subprocess.run([*cli, "run", "--timeout", "300", "--", "true; sleep 30"],
                           capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert moved.returncode == 124 and f"output file is on {sshd['url']}" in moved.stderr
    task_id = moved.stderr.split("ID: ")[1].split(".")[0]
    assert subprocess.run([*cli, "stop", task_id], env=env, timeout=60).returncode == 0
    env["WAVE_SSH_OPTIONS"] = "-o 'unclosed"
    bad = subprocess.run([*cli, "tasks"], capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "WAVE_SSH_OPTIONS: No closing quotation" in bad.stderr
    env["WAVE_SSH_OPTIONS"] = "evil.example"  # (the variable named, not the flag: a review)
    bad = subprocess.run([*cli, "tasks"], capture_output=True, text=True, timeout=60, env=env)
    assert bad.returncode == 2 and "WAVE_SSH_OPTIONS: ssh option 'evil.example'" in bad.stderr


def test_clear_errors_for_missing_remote_wave_bash(sshd: dict[str, object]) -> None:
    client = remote_client(sshd, remote_command="/nonexistent/wave-bash")
    with pytest.raises(SupervisorUnavailableError, match="is wave-bash installed on the remote"):
        client.bash("echo hi")
    options = list(sshd["options"])  # type: ignore[call-overload]
    bad_port = Client(remote="ssh://127.0.0.1:1", ssh_options=options, state_dir=sshd["local"])  # type: ignore[arg-type]
    with pytest.raises(
        SupervisorUnavailableError, match=r"could not reach wave-bash on ssh://127\.0\.0\.1:1"
    ):
        bad_port.bash("echo hi")
    # A socket a killed master left: the new master says why it cannot connect, which
    # fails at once as any first connection does (not tried again as a cut one).
    layout = StateLayout(Path(str(sshd["local"])))
    stale = control_path(layout, Remote.parse("ssh://127.0.0.1:1"), options)
    assert stale is not None
    with socket.socket(socket.AF_UNIX) as left:
        left.bind(stale)
    began = time.monotonic()
    with pytest.raises(SupervisorUnavailableError, match="Connection refused"):
        bad_port.bash("echo hi")
    assert time.monotonic() - began < 10
    # A remote command that ends at once, 0, and is no wave-bash: tried for 2 minutes (a
    # trial); no bridge said it started (RM3), so the call fails at once
    began = time.monotonic()
    with pytest.raises(SupervisorUnavailableError, match="without starting wave-bash's bridge"):
        remote_client(sshd, remote_command="echo").bash("echo hi")
    assert time.monotonic() - began < 10
    # One that fails without a word said only "exit 1" (helper 220); a host ssh knows no
    # key for says how to accept it, and ssh's notice of a key it added is no reason.
    with pytest.raises(SupervisorUnavailableError, match=r"exit 1: the remote command ended"):
        remote_client(sshd, remote_command="false").bash("echo hi")
    key, known = options[1], Path(str(sshd["local"])) / "known_hosts"

    def client_with(*more: str, command: str | None = None) -> Client:
        return Client(remote=str(sshd["url"]), ssh_options=["-i", key, *more],
                      remote_command=command, state_dir=sshd["local"])  # type: ignore[arg-type]  # fmt: skip

    unknown = client_with("-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes")
    with pytest.raises(SupervisorUnavailableError, match="connect once with ssh to accept"):
        unknown.bash("echo hi")
    port = str(sshd["url"]).rsplit(":", 1)[1]
    other = Path(str(sshd["config"])).parent / "client.pub"  # (a key that is not the host's)
    known.write_text(f"[127.0.0.1]:{port} {other.read_text()}")
    with pytest.raises(SupervisorUnavailableError, match="is not the one ssh knew"):
        unknown.bash("echo hi")
    added = client_with("-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                        command="false")  # fmt: skip
    with pytest.raises(SupervisorUnavailableError, match="exit 1: the remote") as failed:
        added.bash("echo hi")
    assert "Permanently added" not in str(failed.value), failed.value


def test_a_remote_supervisor_killed_mid_call_is_waited_out(
    sshd: dict[str, object], tmp_path: Path
) -> None:
    """The remote supervisor killed during a foreground call: its bridge answered the
    call with "the caller's end closed before the supervisor answered", and the call
    failed (a trial). The connection ends, as a local socket's does, and the call waits
    for its task again (CR1)."""
    gate = tmp_path / "gate"
    call = BashInThread(
        remote_client(sshd), f"echo a; while [ ! -e {gate} ]; do sleep 0.02; done; echo b"
    )
    call.task_id()
    kill_supervisor(Path(str(sshd["state"])))
    gate.touch()
    r = call.result()
    assert (r.success, r.stdout, r.exit_code) == (True, "a\nb", 0)


def test_a_stopped_shared_connection_is_left_for_a_new_one(sshd: dict[str, object]) -> None:
    """A shared connection's master stopped (SIGSTOP): each call waited on it to its
    answer deadline and gave up, every later one too (a review). A master that does not
    greet a new call within seconds is left: the call makes a new connection."""
    client = remote_client(sshd)
    assert client.bash("echo one").stdout == "one"
    port = int(str(sshd["url"]).rsplit(":", 1)[1])
    (master,) = _shared_connections(port)
    master.suspend()
    try:
        began = time.monotonic()
        assert client.bash("echo two").stdout == "two"
        assert time.monotonic() - began < 15
        assert [m for m in _shared_connections(port) if m.pid != master.pid]  # (a new one)
    finally:
        master.resume()


def test_a_call_whose_shared_connection_freezes_is_sent_again(
    sshd: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its master stopped during a call: ssh, killed past the answer's deadline, could not
    be reaped (the master held the pipe it handed over), and the call hung for good (a
    trial: 10 minutes). The waiting call checks the master every 10 s (2 s here): a
    silent one is killed (continued, it would take the new one's socket with it), and
    the call is sent again over a new connection."""
    monkeypatch.setattr(connection, "MASTER_CHECK_SECONDS", 2.0)
    client = remote_client(sshd)
    assert client.bash("echo one").stdout == "one"
    port = int(str(sshd["url"]).rsplit(":", 1)[1])
    (master,) = _shared_connections(port)
    call = BashInThread(client, "sleep 2; echo two", timeout=30_000)
    call.task_id()
    master.suspend()
    try:
        began = time.monotonic()
        r = call.result(timeout=60)
        assert (r.stdout, r.exit_code) == ("two", 0), r
        assert time.monotonic() - began < 17  # (a check every 2 s: 3 s to answer)
        wait_until(lambda: gone(master))
        (new,) = _shared_connections(port)
        assert new.pid != master.pid and client.bash("echo three").stdout == "three"
    finally:
        with contextlib.suppress(psutil.Error):
            master.resume()


def test_where_the_shared_connections_socket_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the state dir's private ``ssh`` dir; else, where that path is too long for a
    socket with ssh's suffix or is no private dir of ours, in the private fallback dir;
    else none (a login per call). A name of its own per remote and options; `%` escaped
    (ssh expands its tokens there)."""
    runtime = Path(tempfile.mkdtemp(prefix="wb-run-"))  # (short: base's would not fit)
    base = Path(tempfile.mkdtemp(prefix="wb-cp-"))  # (short, as a state dir's usually is:
    # a test worker's base, `…/popen-gw0/test_where_the_shared_co0`, is too long)
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        remote = Remote.parse("ssh://me@box:2222")
        state = base / "st%ate"
        path = control_path(StateLayout(state), remote, ["-i", "key"])
        assert path is not None and path.startswith(str(base / "st%%ate" / "ssh") + "/")
        assert oct((state / "ssh").stat().st_mode & 0o777) == "0o700"
        assert not list((state / "ssh").iterdir())  # (the probe's socket is gone)
        assert control_path(StateLayout(state), remote, ["-i", "other"]) != path
        assert control_path(StateLayout(state), Remote.parse("ssh://me@box"), ["-i", "key"]) != path
        fallback = f"{runtime}/wave-bash/ssh/"
        deep = base / ("d" * (CONTROL_DIR_ROOM - len(str(base)) - 4))  # (+ /ssh: long)
        assert (control_path(StateLayout(deep), remote, []) or "").startswith(fallback)
        for odd in ("a b", "it's", 'say "x"', "back\\slash"):  # (ssh would split or unquote
            spaced = base / odd / "state"  # it: macOS's `Application Support`, a review)
            assert (control_path(StateLayout(spaced), remote, []) or "").startswith(fallback)
        linked = base / "linked"
        linked.mkdir(mode=0o700)
        (linked / "ssh").symlink_to(base)  # (a link is never followed: X1)
        assert (control_path(StateLayout(linked), remote, []) or "").startswith(fallback)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(base / ("r" * 80)))
        assert control_path(StateLayout(deep), remote, []) is None
    finally:
        shutil.rmtree(runtime)
        shutil.rmtree(base)


def test_remote_url_is_checked() -> None:
    with pytest.raises(InvalidInputError, match="ssh://"):
        Client(remote="http://example")
    with pytest.raises(InvalidInputError, match="remote is empty"):  # (it ran here: a review)
        Client(remote="")
    for port in ("0", "65536", "99999"):  # (`:0` was port 22, said without it: a trial)
        with pytest.raises(InvalidInputError, match="must be 1 to 65535"):
            Client(remote=f"ssh://devbox:{port}")
    for port in ("２２", "2\u0662", "22 "):  # (full-width digits reached port 22: a trial)
        with pytest.raises(InvalidInputError, match="ssh://"):
            Client(remote=f"ssh://devbox:{port}x")
        if port.isdigit():
            with pytest.raises(InvalidInputError, match="ssh://"):
                Client(remote=f"ssh://devbox:{port}")


def test_a_connection_that_never_got_through_fails_at_once(tmp_path: Path) -> None:
    """A port that is no sshd (it accepts and closes) and a ProxyCommand that fails (a
    bastion down): ssh's `kex_exchange_identification: Connection closed by remote host`
    was read as a connection made, then cut, and the call tried again for two minutes,
    `run` then saying the command may have started (a trial). It fails at once (RM3)."""
    with socket.socket() as closer:
        closer.bind(("127.0.0.1", 0))
        closer.listen(8)
        port = closer.getsockname()[1]

        def close_each() -> None:  # (every other one reset after reading: a review's)
            with contextlib.suppress(OSError):
                for count in itertools.count():
                    conn, _ = closer.accept()
                    if count % 2:
                        conn.recv(64)
                        conn.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                    conn.close()

        threading.Thread(target=close_each, daemon=True).start()
        options = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                   "-o", "BatchMode=yes"]  # fmt: skip
        for url, extra in (
            (f"ssh://127.0.0.1:{port}", []),
            (f"ssh://127.0.0.1:{port}", []),  # (the reset one)
            ("ssh://box", ["-o", "ProxyCommand=false"]),
        ):
            client = Client(
                remote=url, ssh_options=[*options, *extra], state_dir=tmp_path / "local"
            )
            began = time.monotonic()
            with pytest.raises(SupervisorUnavailableError, match="exchange_identification") as err:
                client.bash("echo ran")
            assert "may have started" not in str(err.value)
            assert time.monotonic() - began < 10


def test_a_remote_that_never_answers_is_given_up_after_a_check(
    sshd: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remote whose wave-bash never answers (a login script that waits, a supervisor
    stopped) held `tasks` for over 100 s, then said "ssh ended by signal 9", which was
    wave-bash's own kill (a trial): a silence, a check that gets no answer either, and
    the call is sent again as over a cut link (the silence may be the network's, RM3),
    then gives up at the end of its patience, saying so, and where the log is."""
    monkeypatch.setattr(wire, "SILENCE_CHECK_SECONDS", 0.5)
    monkeypatch.setattr(calls, "STATUS_LIMIT", 1.0)
    patience = 6.0  # (RECONNECT_PATIENCE, 30 s, took the suite's longest half minute)
    monkeypatch.setitem(Client._call.__kwdefaults__, "patience", patience)
    client = remote_client(sshd, remote_command="cat >/dev/null #")  # (ends with its ssh)
    began = time.monotonic()
    with pytest.raises(SupervisorUnavailableError) as err:
        client.tasks()
    assert time.monotonic() - began < patience + 20
    said = str(err.value)
    assert "no answer to a check" in said and "or its link, down" in said, said
    assert "signal" not in said and "stopped" not in said.split("(", 1)[0], said
    assert f"supervisor.log in the state dir on {Remote.parse(str(sshd['url']))}" in said


def test_an_ipv6_address_in_brackets_is_a_remote(sshd: dict[str, object]) -> None:
    """`ssh://root@[::1]:2222`, as ssh's own URLs write an IPv6 address, was refused (a
    trial); it reaches the box (ssh takes the address bare)."""
    config = Path(str(sshd["config"]))
    text = config.read_text().replace("ListenAddress 127.0.0.1", "ListenAddress ::1")
    six = config.with_name("sshd6_config")
    six.write_text(text.replace("sshd.pid", "sshd6.pid"))
    server, port = _start_sshd(six, "::1")
    try:
        url = str(sshd["url"]).replace("127.0.0.1", "[::1]").rsplit(":", 1)[0] + f":{port}"
        client = Client(
            remote=url, ssh_options=list(sshd["options"]),  # type: ignore[call-overload]
            remote_command=str(sshd["command"]), state_dir=sshd["local"],
        )  # fmt: skip
        assert client.bash("echo six").stdout == "six"
        assert str(Remote.parse(url)) == url and Remote.parse(url).host == "::1"
        assert Remote.parse("ssh://[fe80::1%25eth0]").host == "fe80::1%eth0"
    finally:
        _end_shared_connections(port, server)
        server.terminate()
        server.wait(timeout=10)
    for bad in ("ssh://[box]", "ssh://[::1", "ssh://::1"):
        with pytest.raises(InvalidInputError, match="ssh://"):
            Remote.parse(bad)


def test_clear_error_without_ssh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no ssh to be found
    with pytest.raises(SupervisorUnavailableError, match="ssh is not installed"):
        Client(remote="ssh://devbox", state_dir=tmp_path / "local").bash("echo hi")


def test_mcp_server_drives_the_remote(sshd: dict[str, object], tmp_path: Path) -> None:
    import asyncio

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from test_mcp import structured, text

    args = ["-m", "wave_bash.api.cli", "--state-dir", str(tmp_path / "local"), "--remote", str(sshd["url"]),
            "--remote-command", str(sshd["command"]), "--ssh-option", shlex.join(list(sshd["options"])),  # type: ignore[arg-type]
            "mcp", "--session", "remote-mcp"]  # fmt: skip

    async def scenario() -> tuple[str, str, str]:
        params = StdioServerParameters(command=sys.executable, args=args)
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            result = await session.call_tool("Bash", {"command": "echo from-remote"})
            started = await session.call_tool(
                "Bash", {"command": "echo late", "run_in_background": True}
            )
            return str(structured(result)["outputPath"]), text(result), text(started)

    output_path, done, started = asyncio.run(asyncio.wait_for(scenario(), timeout=60))
    assert output_path.startswith(str(sshd["state"]))  # the task lives in the remote state dir
    assert not (tmp_path / "local" / "journal.db").exists()  # nothing ran locally
    # A path a model is given is said to be the remote's (it read it with its own file
    # reader: a trial); a result that names none says nothing of it.
    said = f"(These paths are on the remote dev box {sshd['url']}, not on this machine"
    assert said in started and said not in done


def test_interactive_task_remotely_answered_and_attached_in_tmux(
    sshd: dict[str, object],
) -> None:
    """Issue 16 over ssh: TaskInput through the bridge, and ``attach --remote`` (a
    terminal that ssh carries, the attach itself running on the remote)."""
    tmux = [needs_tool("tmux", "tmux"), "-L", f"wb-remote-{os.getpid()}"]
    client = remote_client(sshd)
    asked = client.bash("read -p 'Name? ' n; echo \"hi $n\"; python3 -q", timeout=60_000,
                        interactive=True)  # fmt: skip
    task_id = asked.background_task_id
    assert asked.waiting_for_input and task_id and asked.stdout == "Name? "
    assert client.task_input(task_id, "Eve\n").output == "Eve\nhi Eve\n>>> "
    attach = shlex.join([
        sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(sshd["local"]), "--remote", str(sshd["url"]),
        "--ssh-option", shlex.join(list(sshd["options"])),  # type: ignore[arg-type]
        "--remote-command", str(sshd["command"]), "attach", task_id,
    ])  # fmt: skip

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout

    try:
        subprocess.run(
            [
                *tmux,
                "new-session",
                "-d",
                "-x",
                "100",
                "-y",
                "30",
                f"{attach}; echo EXIT=$?; sleep 60",
            ],
            check=True,
        )
        wait_until(lambda: f"attached to {task_id}" in screen(), timeout=20)
        subprocess.run([*tmux, "send-keys", "print(6 * 7)", "Enter"], check=True)
        wait_until(lambda: "\n42\n" in screen())
        subprocess.run([*tmux, "send-keys", "C-]"], check=True)
        wait_until(lambda: "EXIT=0" in screen())
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    out = client.task_input(task_id, "\x04")
    assert out.status == "completed" and "42" in out.output


def test_an_attach_whose_connection_ends_says_so(sshd: dict[str, object]) -> None:
    """`attach --remote` whose connection went exited 255 without a word (ssh's own
    hidden by LogLevel=ERROR: a trial): it says so, and how to take the task over again,
    with the options that reach it."""
    tmux = [needs_tool("tmux", "tmux"), "-L", f"wb-remote-{os.getpid()}"]
    client = remote_client(sshd)
    task_id = client.bash("cat", timeout=0, interactive=True).background_task_id or ""
    options = shlex.join(list(sshd["options"]))  # type: ignore[arg-type]
    attach = shlex.join([
        sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(sshd["local"]), "--remote",
        str(sshd["url"]), "--ssh-option", options, "--remote-command", str(sshd["command"]),
        "attach", task_id,
    ])  # fmt: skip

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-J"], capture_output=True,
                              text=True).stdout  # fmt: skip

    port = int(str(sshd["url"]).rsplit(":", 1)[1])
    try:
        subprocess.run([*tmux, "new-session", "-d", "-x", "250", "-y", "30",
                        f"{attach}; echo EXIT=$?; sleep 60"], check=True)  # fmt: skip
        wait_until(lambda: f"attached to {task_id}" in screen(), timeout=20)
        for master in _shared_connections(port):  # the connection goes
            master.kill()
        wait_until(lambda: "EXIT=255" in screen(), timeout=20)
        said = screen()
        assert f"ssh to {sshd['url']} failed, or its connection ended" in said, said
        assert f"--ssh-option={options}" in said.replace("\n", "") and f"attach {task_id}" in said
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    (task,) = [t for t in client.tasks() if t.id == task_id]
    assert task.status == "running"
    client.task_stop(task_id)


def test_permission_rules_and_sandbox_hold_over_ssh(sshd: dict[str, object]) -> None:
    """Issue 17: the remote bridge is a door too; the remote supervisor checks the rules
    the local client sends, and sandboxes the command on the remote machine."""
    client = Client(
        remote=str(sshd["url"]), ssh_options=list(sshd["options"]),  # type: ignore[call-overload]
        remote_command=str(sshd["command"]), session="remote", state_dir=sshd["local"],  # type: ignore[arg-type]
        rules={"allow": ["Bash(echo *)"], "deny": ["Bash(rm *)"]}, sandbox="read-only",
    )  # fmt: skip
    denied = client.bash("echo a; rm -rf /tmp/nothing-here")
    assert not denied.success and denied.permission is not None
    assert denied.permission.rule == "Bash(rm *)"
    sandboxed = client.bash("echo hi > ~/.wave-remote-probe; echo rc=$?")
    assert sandboxed.stdout.endswith("rc=1") and not os.path.exists(
        os.path.expanduser("~/.wave-remote-probe")
    )
    assert client.tasks()[-1].sandbox == "read-only"


def test_a_frozen_connection_is_given_up_and_the_call_sent_again(
    sshd: dict[str, object],
) -> None:
    """Its sshd stopped mid-call (a network cut looks the same): no reset ever comes, and
    the call hung until TCP gave up (a review). ssh's keepalives end it (here after ~2 s;
    30-40 s by default), and the call is sent again (RM3)."""
    client = Client(
        remote=str(sshd["url"]), remote_command=str(sshd["command"]), session="remote",
        state_dir=sshd["local"],  # type: ignore[arg-type]
        ssh_options=["-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=2",
                     *sshd["options"]],  # type: ignore[misc]
    )  # fmt: skip
    call = BashInThread(client, "echo a; sleep 6; echo b")
    call.task_id(timeout=30)
    server = psutil.Process(sshd["server"].pid)  # type: ignore[attr-defined]
    sessions = server.children(recursive=False)
    assert sessions
    for proc in sessions:
        proc.send_signal(signal.SIGSTOP)
    try:
        r = call.result(timeout=60)
        assert (r.success, r.stdout, r.exit_code) == (True, "a\nb", 0)
    finally:
        for proc in sessions:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGCONT)


def test_a_frozen_connection_during_a_wait_is_sent_again(sshd: dict[str, object]) -> None:
    """The same for a `wait`: ssh's keepalives end it with exit 255 and not a word at
    `LogLevel=ERROR`, read as a connection never made, and the call failed at once. The
    bridge says on its stderr that it started, so the call knows it had connected."""
    client = Client(
        remote=str(sshd["url"]), remote_command=str(sshd["command"]), session="remote",
        state_dir=sshd["local"],  # type: ignore[arg-type]
        ssh_options=["-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=2",
                     *sshd["options"]],  # type: ignore[misc]
    )  # fmt: skip
    task_id = start_bg(client, "sleep 6; exit 5")
    waiter, answers = _waiting(client, task_id, 60_000)
    server = sshd["server"]
    assert isinstance(server, subprocess.Popen)
    wait_until(lambda: _bridges(server.pid, relaying=True), timeout=20)  # (said it started)
    (bridge,) = _bridges(server.pid)
    sessions = [p for p in bridge.parents() if p.pid != server.pid and _named(p, "sshd")]
    for proc in sessions:
        proc.send_signal(signal.SIGSTOP)
    try:
        waiter.join(timeout=60)
        assert _exit_code(answers) == 5
    finally:
        for proc in sessions:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGCONT)


def test_ssh_keeps_the_connection_alive_unless_told_otherwise() -> None:
    from wave_bash.api.transport import Remote

    argv = Remote.parse("ssh://me@box").ssh_argv(["-o", "ServerAliveInterval=1"], "wave-bash")
    given = [a for a in argv if a.startswith("ServerAliveInterval=")]
    assert given == ["ServerAliveInterval=1", "ServerAliveInterval=10"]  # (the first holds)
    assert "ServerAliveCountMax=3" in Remote.parse("ssh://box").ssh_argv([], "wave-bash")
