"""Interactive tasks on real pseudo-terminals (issue 16, SPEC P): prompts detected from the
kernel, TaskInput, Ctrl+C/Ctrl+D, a supervisor killed under a session, a person attached
through tmux."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import (
    kill_supervisor,
    needs_root,
    needs_tool,
    run_cli,
    start_bg,
    task_alive,
    wait_until,
)

from wave_bash.api import Client, InvalidInputError, TaskNotFoundError, TaskNotRunningError, texts
from wave_bash.api.constants import MAX_INPUT_CHARS
from wave_bash.worker.monitor import PTY_HOST
from wave_bash.worker.ptyhost import ATTACH_LEASE

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

LONG = 60_000
"""A foreground timeout that never passes in these tests: what returns is the prompt."""


def test_read_prompt_answered_with_task_input(client: Client) -> None:
    t = time.monotonic()
    r = client.bash("read -p 'Name? ' name; echo \"hello $name\"", timeout=LONG, interactive=True)
    detected = time.monotonic() - t
    assert r.success and r.waiting_for_input and r.background_task_id
    assert detected < 2.5, f"the prompt took {detected:.1f}s to be detected"
    assert r.stdout == "Name? " and r.exit_code is None
    assert f"ID: {r.background_task_id}" in r.message and "TaskInput" in r.message
    record = next(t for t in client.tasks() if t.id == r.background_task_id)
    assert record.status == "running" and record.owner == "background"
    assert record.background_reason == "waiting_for_input" and record.interactive
    assert record.waiting_for_input

    out = client.task_input(r.background_task_id, "Alice\n")
    assert out.status == "completed" and out.exit_code == 0
    assert out.output == "Alice\nhello Alice"  # the terminal echoes what was typed
    assert not out.waiting_for_input
    assert client.notifications() == []  # the answer said how it ended: no notice again


def test_python_repl_for_several_rounds_then_ctrl_d(client: Client) -> None:
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    assert r.waiting_for_input and r.stdout == ">>> "
    task_id = r.background_task_id
    assert task_id
    first = client.task_input(task_id, "x = 6\n")
    assert first.waiting_for_input and first.status == "running"
    assert first.output == "x = 6\n>>> "
    second = client.task_input(task_id, "print(x * 7)\n")
    assert second.output == "print(x * 7)\n42\n>>> " and second.waiting_for_input
    third = client.task_input(task_id, "for i in range(2):\n    print(i)\n\n")
    assert third.output.endswith("0\n1\n>>> ")
    done = client.task_input(task_id, "\x04")
    assert done.status == "completed" and done.exit_code == 0 and not done.waiting_for_input
    assert not task_alive(task_id)


def test_ctrl_c_to_a_running_command(client: Client) -> None:
    r = client.bash(
        "trap 'echo got SIGINT; exit 5' INT; echo busy; while :; do sleep 0.1; done",
        timeout=1000,
        interactive=True,
    )
    task_id = r.background_task_id
    assert task_id and r.assistant_auto_backgrounded and not r.waiting_for_input
    out = client.task_input(task_id, "\x03")
    assert out.status == "failed" and out.exit_code == 5
    assert "got SIGINT" in out.output

    plain = client.bash("while :; do sleep 0.1; done", timeout=500, interactive=True)
    assert plain.background_task_id
    killed = client.task_input(plain.background_task_id, "\x03")
    assert killed.status == "killed" and killed.exit_code == 130


def test_an_interrupt_types_ctrl_c_into_its_terminal(client: Client) -> None:
    """An interactive task's Ctrl+C (B3b) is the key, typed: its terminal signals what runs
    in front there, as it would for a person (the command leads a session of its own, so
    no signal to a process group of ours would reach it), and a REPL then asks again."""
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    busy = client.task_input(task_id, "import time; time.sleep(60)\n", timeout=300)
    assert busy.status == "running" and not busy.waiting_for_input
    assert client.interrupt(task_id).status == "running"
    wait_until(lambda: client.task_output(task_id, block=False).waiting_for_input, timeout=15)
    assert "KeyboardInterrupt" in Path(r.output_path or "").read_text()
    client.task_stop(task_id)


def test_it_is_a_terminal_of_the_given_size(client: Client) -> None:
    command = 'echo "$TERM"; stty size; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo tty'
    assert client.bash(command, interactive=True).stdout == "dumb\n24 80\ntty"
    sized = client.bash(command, interactive=True, terminal_size=(132, 43))
    assert sized.stdout == "dumb\n43 132\ntty"
    plain = client.bash("[ -t 0 ] || echo no terminal; stty size 2>/dev/null || echo none")
    assert plain.stdout == "no terminal\nnone"  # the default is unchanged: stdin /dev/null


def test_a_question_for_the_cursor_is_answered_as_a_terminal_does(client: Client) -> None:
    """A program asking where the cursor is (ESC[6n: crossterm's, prompt_toolkit's) waited
    for good, "waiting for input" with nothing shown (a trial); tmux answers it."""
    ask = 'read -t 5 -rs -d R pos; echo "got ${pos#*[}"'
    r = client.bash(f"printf '\\033[6n'; {ask}", timeout=LONG, interactive=True)
    assert (r.exit_code, r.stdout) == (0, "got 1;1"), r
    r = client.bash(f"echo hello; printf 'ab\\033[6n'; {ask}", timeout=LONG, interactive=True)
    assert (r.exit_code, r.stdout.split("\n")[-1]) == (0, "abgot 2;3"), r


def test_output_is_cleaned_like_any_output(client: Client) -> None:
    r = client.bash(
        r"printf 'a\nb\033[31mred\033[0m\n'; printf 'progress 10%%\rprogress 100%%\n'",
        interactive=True,
    )
    assert r.success and r.stdout == "a\nbred\nprogress 100%" and not r.waiting_for_input


def test_no_prompt_without_a_read_of_the_terminal(client: Client) -> None:
    """A prompt-like text is not enough (the kernel says who reads what): a command that
    prints ``Name? `` and then sleeps, or reads a pipe, runs to its end."""
    r = client.bash("printf 'Name? '; sleep 1.6 | cat; echo done", timeout=LONG, interactive=True)
    assert r.success and r.exit_code == 0 and not r.waiting_for_input
    assert r.background_task_id is None and r.stdout == "Name? done"


def test_prompt_of_a_command_in_a_pipeline_and_a_subshell(client: Client) -> None:
    r = client.bash(
        "(read -p 'Continue? [y/N] ' a; echo \"answer=$a\") | tr a-z A-Z",
        timeout=LONG,
        interactive=True,
    )
    assert r.waiting_for_input and r.background_task_id
    out = client.task_input(r.background_task_id, "y\n")
    assert out.status == "completed" and "ANSWER=Y" in out.output


def test_prompt_of_a_process_whose_parent_has_gone(client: Client, tmp_path: Path) -> None:
    """A prompt of a process its parent left behind (`( cmd & )`, a daemonising tool) was
    never seen, as it was no descendant of the command any more: the call ran its whole
    timeout (a trial). The terminal host adopts such processes (a child subreaper)."""
    fifo = tmp_path / "fifo"
    r = client.bash(
        f"mkfifo {fifo}; ( ( read -p 'name? ' x </dev/tty; echo \"got $x\"; echo > {fifo} ) & );"
        f" read _ < {fifo}",
        timeout=LONG,
        interactive=True,
    )
    assert r.waiting_for_input and r.stdout == "name? " and r.background_task_id
    done = client.task_input(r.background_task_id, "bob\n")
    assert done.status == "completed" and done.output.endswith("got bob")


def test_what_a_busy_command_leaves_behind_is_reaped(client: Client) -> None:
    """The terminal host adopts what the command's processes leave (a subreaper): it reaped
    them only once the terminal was quiet for a second, and a command that kept printing
    piled up zombies, one per `( x & )` (a review)."""
    r = client.bash(
        "for i in $(seq 100); do ( sleep 0.001 & ); echo x$i; sleep 0.01; done; sleep 0.5;"
        " echo zombies=$(ps --ppid $PPID -o stat= | grep -c Z)",
        timeout=LONG,
        interactive=True,
    )
    zombies = int(r.stdout.rsplit("zombies=", 1)[1])
    assert r.exit_code == 0 and zombies <= 5, r.stdout[-200:]


def test_task_input_errors(client: Client) -> None:
    plain = start_bg(client, "sleep 30")
    with pytest.raises(InvalidInputError, match=f"Task {plain} is not interactive"):
        client.task_input(plain, "y\n")
    ended = client.bash("echo hi", interactive=True)
    assert ended.success and ended.stdout == "hi"
    finished = client.tasks()[-1].id
    with pytest.raises(TaskNotRunningError, match="not running"):
        client.task_input(finished, "y\n")
    with pytest.raises(TaskNotFoundError):
        client.task_input("nosuchid", "y\n")
    bad = client.bash("echo hi", terminal_size=(100, 30))
    assert not bad.success and "only for interactive" in (bad.error or "")
    too_small = client.bash("echo hi", interactive=True, terminal_size=(0, 30))
    assert not too_small.success and too_small.error == "terminal_size[0] must be at least 1, not 0"
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    assert r.background_task_id
    with pytest.raises(InvalidInputError, match=r"input .*it has a lone surrogate"):
        client.task_input(r.background_task_id, "\ud800")
    with pytest.raises(
        InvalidInputError, match=rf"input must have at most {MAX_INPUT_CHARS} characters, not"
    ):
        client.task_input(r.background_task_id, "x" * (MAX_INPUT_CHARS + 1))
    client.task_stop(r.background_task_id)


def test_input_that_is_no_utf8_is_typed_as_its_bytes(client: Client, state_dir: Path) -> None:
    """`wave-bash input ID $'caf\\xe9'` (Latin-1) was refused with pydantic's words; the
    byte reaches the command, carried as its surrogate escape, as paths are."""
    read = "head -c 4 | od -An -tx1"  # (bash's read, in a UTF-8 locale, takes the newline
    # after 0xe9 for the rest of a character)
    r = client.bash(read, timeout=LONG, interactive=True)
    assert r.waiting_for_input and r.background_task_id
    client.task_input(r.background_task_id, "caf\udce9\n")
    assert client.wait(r.background_task_id, timeout=10_000).status == "completed"
    assert "63 61 66 e9" in client.task_output(r.background_task_id, offset=0).output
    r = client.bash(read, timeout=LONG, interactive=True)
    assert r.waiting_for_input and r.background_task_id
    typed = run_cli(state_dir, "--session", client.session, "input", r.background_task_id,
                    "caf\udce9\n")  # (argv: the byte 0xe9)  # fmt: skip
    assert typed.returncode == 0, typed.stderr
    assert client.wait(r.background_task_id, timeout=10_000).status == "completed"
    assert "63 61 66 e9" in client.task_output(r.background_task_id, offset=0).output


def test_task_stop_ends_the_whole_session(client: Client, state_dir: Path) -> None:
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    socket_file = state_dir / "tasks" / f"{task_id}.tty"
    assert stat.S_ISSOCK(socket_file.lstat().st_mode)
    assert stat.S_IMODE(socket_file.lstat().st_mode) & 0o077 == 0
    assert client.task_stop(task_id).status == "killed"
    assert not task_alive(task_id) and not socket_file.exists()


def test_task_input_after_the_supervisor_was_killed(client: Client, state_dir: Path) -> None:
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    assert client.task_input(task_id, "x = 41\n").waiting_for_input
    kill_supervisor(state_dir)
    again = Client(state_dir=state_dir, session=client.session)  # a new supervisor adopts
    wait_until(lambda: next(t for t in again.tasks() if t.id == task_id).waiting_for_input)
    out = again.task_input(task_id, "print(x + 1)\n")
    # (What the killed supervisor last sent may come again: its read mark can die with it.)
    assert out.output.endswith("print(x + 1)\n42\n>>> ") and out.waiting_for_input
    assert again.task_input(task_id, "\x04").status == "completed"


def test_cli_run_input_and_terminal_requests(state_dir: Path) -> None:
    # Exit codes as `wait`'s: 124 while it runs (waits for input too: `run -i … && deploy`
    # went on, a review), then the task's own.
    started = run_cli(state_dir, "run", "-i", "--", "read -p 'Name? ' n; echo \"hi $n\"; exit 3")
    assert started.returncode == 124 and started.stdout == "Name? \n"
    task_id = json.loads(run_cli(state_dir, "tasks", "--json").stdout)[-1]["id"]
    assert f"wave-bash input {task_id} TEXT" in started.stderr
    answered = run_cli(state_dir, "input", task_id, "Bob")
    assert answered.returncode == 3 and answered.stdout == "Bob\nhi Bob\n"
    # A session given is in the hint (its read offsets: without it, the hint's `input`
    # showed again what was shown, a trial).
    mine = run_cli(state_dir, "--session", "s9", "run", "-i", "--", "read n; echo $n")
    assert "--session s9 input " in mine.stderr
    mine_id = json.loads(run_cli(state_dir, "--session", "s9", "tasks", "--json").stdout)[-1]["id"]
    assert run_cli(state_dir, "--session", "s9", "input", mine_id, "x").returncode == 0
    # Ctrl+C into an interactive task: a shell reads it as a key and goes on (the hint
    # said `wait`, which then waited for good, a trial).
    run_cli(state_dir, "run", "-i", "--", "bash --norc -i")
    shell = json.loads(run_cli(state_dir, "tasks", "--json").stdout)[-1]["id"]
    said = run_cli(state_dir, "interrupt", shell)
    assert said.stdout.startswith(f"{shell}: Ctrl+C typed into its terminal; its command decides")
    assert f"input {shell} TEXT" in said.stdout and f"wait {shell}" not in said.stdout
    run_cli(state_dir, "stop", shell)
    assert "failed (exit code 3)" in answered.stderr
    # Its timeout passing while the command works: said, not silence (a reviewer found it).
    run_cli(state_dir, "run", "-i", "--", "read n; sleep 30")
    busy = json.loads(run_cli(state_dir, "tasks", "--json").stdout)[-1]["id"]
    working = run_cli(state_dir, "input", "--timeout", "500", busy, "go")
    assert working.returncode == 124 and working.stderr == (
        f"[{busy} still running, not waiting for input: wave-bash output {busy}]\n"
    )
    assert run_cli(state_dir, "stop", busy).returncode == 0
    refused = run_cli(state_dir, "run", "--size", "12", "-i", "--", "true")
    assert refused.returncode == 2 and "COLUMNSxROWS" in refused.stderr


def test_cli_input_types_a_secret_from_stdin(state_dir: Path) -> None:
    """A secret given as `input ID TEXT` is in `ps` and the shell's history (a trial):
    `--stdin` types what is piped in, its last newline left out, Enter after it."""
    asked = run_cli(
        state_dir, "run", "-i", "--", "read -rs -p 'pw: ' pw; echo; echo \"${#pw}:$pw\""
    )
    assert asked.returncode == 124 and asked.stdout == "pw: \n"
    task_id = json.loads(run_cli(state_dir, "tasks", "--json").stdout)[-1]["id"]
    typed = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "input", task_id, "--stdin"],
        input="hunter 2\n", capture_output=True, text=True, timeout=60,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert (typed.returncode, typed.stdout) == (0, "8:hunter 2\n"), typed.stderr
    run_cli(state_dir, "run", "-i", "--", 'read -r a; read -r b; echo "${#a}:$a:$b"')
    task_id = json.loads(run_cli(state_dir, "tasks", "--json").stdout)[-1]["id"]
    for given, said in (("", "nothing came on stdin"), ("x\r\n", "")):  # (an Enter alone, a
        typed = subprocess.run(  # CRLF's CR typed too, each answered a prompt: a review)
            [sys.executable, "-m", "wave_bash.api.cli", "input", task_id, "--stdin"],
            input=given, capture_output=True, text=True, timeout=60,
            env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
        )  # fmt: skip
        assert said in typed.stderr and typed.returncode == (2 if said else 124), typed.stderr
    assert run_cli(state_dir, "input", task_id, "y").stdout.endswith("1:x:y\n")


def test_terminal_request_types_resizes_and_reads_raw_bytes(client: Client) -> None:
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    view = client.terminal(task_id, resize=(100, 30))
    assert view.status == "running"
    import base64

    assert base64.b64decode(view.data).startswith(b">>> ")  # (readline may redraw: \r)
    typed = client.terminal(
        task_id, "import os; print(os.get_terminal_size(0))\r", offset=view.offset, wait=2000
    )
    wait_until(lambda: b"columns=100, lines=30" in client_raw(client, task_id, view.offset))
    assert typed.offset >= view.offset
    client.task_stop(task_id)


def client_raw(client: Client, task_id: str, offset: int) -> bytes:
    import base64

    return base64.b64decode(client.terminal(task_id, offset=offset).data)


@pytest.fixture
def tmux() -> Iterator[list[str]]:
    """A private tmux server (its own socket), killed afterwards."""
    needs_tool("tmux", "tmux")
    base = ["tmux", "-L", f"wb-{uuid.uuid4().hex[:8]}"]
    first = base[2]
    try:
        yield base
    finally:
        for name in (first, base[2]):
            subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)


def test_a_person_attaches_in_tmux_types_and_detaches(
    client: Client, state_dir: Path, tmux: list[str]
) -> None:
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    attach = shlex.join([sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir),
                         "attach", task_id])  # fmt: skip
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "100", "-y", "30", f"{attach}; echo EXIT=$?; sleep 60"],
        check=True,
    )

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout

    wait_until(lambda: f"attached to {task_id}" in screen())
    subprocess.run([*tmux, "send-keys", "print(6 * 7)", "Enter"], check=True)
    wait_until(lambda: "\n42\n" in screen())
    subprocess.run([*tmux, "send-keys", "C-]"], check=True)
    wait_until(lambda: "EXIT=0" in screen())
    assert f"detached from {task_id}" in screen()
    # The task runs on, and the agent sees what the person did.
    out = client.task_input(task_id, "print('back')\n")
    assert out.status == "running" and "42" in out.output and out.output.endswith("back\n>>> ")
    # Attached again after a supervisor restart: the task's end is shown, then it exits.
    kill_supervisor(state_dir)
    subprocess.run([*tmux, "kill-server"], capture_output=True)
    tmux[2] += "-again"  # a new server (the old one may still be going away)
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "100", "-y", "30", f"{attach}; echo EXIT=$?; sleep 60"],
        check=True,
    )
    wait_until(lambda: f"attached to {task_id}" in screen())
    subprocess.run([*tmux, "send-keys", "C-d"], check=True)
    wait_until(lambda: "EXIT=0" in screen())
    assert f"task {task_id} ended: completed, exit code 0" in screen()


def test_terminal_socket_serves_only_its_user() -> None:
    """Peer credentials on the host's side: another user who reaches the socket (here
    made reachable on purpose) is disconnected before anything is said or typed."""
    needs_root("connecting as another uid needs root")
    needs_tool("setpriv", "util-linux")
    reachable = Path(tempfile.mkdtemp(prefix="wb-tty-", dir="/tmp"))
    reachable.chmod(0o755)
    path = reachable / "t.tty"
    host = subprocess.Popen(
        [sys.executable, "-I", "-S", str(PTY_HOST), str(path), "80", "24", "--", "sleep", "30"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: path.exists())
        assert stat.S_IMODE(path.lstat().st_mode) & 0o077 == 0
        os.chmod(path, 0o777)
        probe = (
            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(5); "
            f"s.connect({str(path)!r}); sys.stdout.write(repr(s.recv(100)))"
        )
        other = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             sys.executable, "-c", probe],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
        assert other.stdout == "b''", other.stderr  # closed at once: no hello
        with socket.socket(socket.AF_UNIX) as own:
            own.settimeout(5)
            own.connect(str(path))
            assert json.loads(own.recv(100)) == {"waiting": False}
    finally:
        host.kill()
        host.wait()
        shutil.rmtree(reachable, ignore_errors=True)


def test_the_same_input_sent_again_is_typed_once(client: Client, state_dir: Path) -> None:
    """A TaskInput resent after its supervisor died (the client resends what got no
    answer) carries the same key: the terminal host types it once."""
    from conftest import ask_supervisor

    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    params = {"session": client.session, "task_id": task_id, "input": "print('ON' + 'CE')\n",
              "request_key": "resent-1"}  # fmt: skip
    for _ in range(2):
        assert ask_supervisor(state_dir, "input", params)["type"] == "result"
    log = (state_dir / "tasks" / f"{task_id}.log").read_text()
    assert log.count("ONCE") == 1
    client.task_stop(task_id)


def test_the_task_input_tool_sent_again_is_typed_once(client: Client, state_dir: Path) -> None:
    """The TaskInput tool (what the MCP server calls) carries a key of its own too: sent
    again after its supervisor was killed mid-call, its line is typed once (it had none,
    and a second read got the line again)."""
    import concurrent.futures

    r = client.bash(
        'read x; echo "first=[$x]"; read -t 4 y; echo "second=[$y]"; sleep 30',
        timeout=LONG, interactive=True,
    )  # fmt: skip
    task_id = r.background_task_id
    assert task_id and r.output_path
    log = Path(r.output_path)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        typed = pool.submit(
            client.call_tool, "TaskInput", {"task_id": task_id, "input": "yes\n", "timeout": LONG}
        )
        wait_until(lambda: "first=[yes]" in log.read_text(errors="replace"))
        kill_supervisor(state_dir)  # the call gets no answer: it is sent again
        typed.result(timeout=60)
    wait_until(lambda: "second=[" in log.read_text(errors="replace"), timeout=20)
    assert "second=[]" in log.read_text(errors="replace")
    client.task_stop(task_id)


def test_input_to_a_stopped_terminal_host_says_it_was_not_taken(client: Client) -> None:
    """A terminal host that takes nothing (stopped) gets the input in its socket: the
    answer says it was not taken and may be typed later, never "waits for input" from
    before (a model then typed it again, and both were typed once the host went on)."""
    import psutil

    r = client.bash('read x; echo "got=[$x]"; sleep 30', timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input and r.output_path
    monitor = psutil.Process(client.tasks()[-1].pid or 0)
    (host,) = [p for p in monitor.children(recursive=True) if str(PTY_HOST) in p.cmdline()]
    host.suspend()
    try:
        with pytest.raises(InvalidInputError, match=r"has not taken the input.*may still be typed"):
            client.task_input(task_id, "once\n", timeout=0)
        assert not client.task_output(task_id, block=False).waiting_for_input
    finally:
        host.resume()
    log = Path(r.output_path)
    wait_until(lambda: "got=[once]" in log.read_text(errors="replace"))
    client.task_stop(task_id)


def test_replies_stay_in_step(client: Client) -> None:
    """An empty input, and one the command does not read in time, neither fail nor put
    later answers out of step."""
    r = client.bash("stty -icanon -echo; echo ready; sleep 3; cat", timeout=500, interactive=True)
    task_id = r.background_task_id
    assert task_id
    t = time.monotonic()
    first = client.task_input(task_id, "", timeout=1000)
    assert first.status == "running" and time.monotonic() - t < 3
    big = "x" * 20_000
    slow = client.task_input(task_id, big, timeout=1000)  # more than the terminal holds
    assert slow.status == "running"
    view = client.terminal(task_id, resize=(90, 20))
    assert view.status == "running"
    wait_until(lambda: client.task_output(task_id, block=False, offset=0).output.count("x")
               == 20_000, timeout=20)  # fmt: skip
    client.task_stop(task_id)


def test_no_false_prompt_for_programs_waiting_on_other_descriptors(client: Client) -> None:
    """A server in poll/select on its socket, an asyncio sleep in epoll: quiet, stdin
    a terminal, yet not reading it."""
    server = client.bash("python3 -m http.server 0 --bind 127.0.0.1", timeout=2500,
                         interactive=True)  # fmt: skip
    assert server.assistant_auto_backgrounded and not server.waiting_for_input
    assert server.background_task_id
    client.task_stop(server.background_task_id)
    quiet = client.bash(
        "python3 -c 'import asyncio; asyncio.run(asyncio.sleep(2.2)); print(\"slept\")'",
        timeout=LONG,
        interactive=True,
    )
    assert quiet.stdout == "slept" and not quiet.waiting_for_input


@pytest.mark.parametrize(
    "program",
    [
        "import select,sys; p=select.poll(); p.register(0, select.POLLIN); "
        "print('go?', flush=True); p.poll(); print('got', sys.stdin.readline().strip())",
        "import select,sys; e=select.epoll(); e.register(0, select.EPOLLIN); "
        "print('go?', flush=True); e.poll(); print('got', sys.stdin.readline().strip())",
        "import subprocess,time; subprocess.Popen(['true']); time.sleep(0.3); "
        "print('got', input('go?\\n'))",  # a zombie child in the group
    ],
    ids=["poll", "epoll", "zombie-beside"],
)
def test_prompts_behind_poll_epoll_and_a_zombie(client: Client, program: str) -> None:
    r = client.bash(f"python3 -c {shlex.quote(program)}", timeout=LONG, interactive=True)
    assert r.waiting_for_input and r.stdout == "go?" and r.background_task_id
    done = client.task_input(r.background_task_id, "yes\n")
    assert done.status == "completed" and done.output.endswith("got yes")


def test_password_prompt_on_dev_tty(client: Client) -> None:
    """getpass (like ssh, git and sudo) reads /dev/tty with echo off: detected, and the
    answer is not echoed into the output."""
    r = client.bash(
        'python3 -c \'import getpass; print("len", len(getpass.getpass("Password: ")))\'',
        timeout=LONG,
        interactive=True,
    )
    assert r.waiting_for_input and r.stdout == "Password: " and r.background_task_id
    done = client.task_input(r.background_task_id, "s3cret!\n")
    assert done.status == "completed" and "s3cret" not in done.output
    assert done.output.strip() == "len 7"


def test_a_command_that_lets_go_of_its_terminal_and_opens_it_again(client: Client) -> None:
    """A build that sends its output to a file, then asks on /dev/tty: with nothing
    holding the terminal in between, the host stopped copying it, and the prompt (and a
    REPL's every answer) came only with the end (a review)."""
    r = client.bash(
        "exec </dev/null >/dev/null 2>&1; sleep 0.5; exec </dev/tty >/dev/tty 2>&1; "
        'python3 -c \'import getpass; print("len", len(getpass.getpass("Password: ")))\'',
        timeout=LONG,
        interactive=True,
    )
    assert r.waiting_for_input and r.stdout == "Password: " and r.background_task_id
    done = client.task_input(r.background_task_id, "s3cret!\n")
    assert done.status == "completed" and done.output.strip() == "len 7"


def test_input_to_a_stalled_terminal_host_is_refused_whole(client: Client, state_dir: Path) -> None:
    """A host that reads nothing (stopped) while a long input is sent: the send gave up
    half-way, the next input was joined to that half and both were lost, with no error
    (a review). Now the first says nothing was typed; the next ones are typed."""
    import psutil

    r = client.bash("python3 -q", interactive=True, timeout=LONG)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    tty = str(state_dir / "tasks" / f"{task_id}.tty")
    host = next(p for p in psutil.process_iter(["cmdline"]) if tty in (p.info["cmdline"] or []))
    host.suspend()
    try:
        with pytest.raises(InvalidInputError, match=r"takes no input.*nothing was typed"):
            client.task_input(task_id, "#" + "é" * 60000 + "\n", timeout=8000)
    finally:
        host.resume()
    client.task_input(task_id, "x = 6 * 7\n")
    assert client.task_input(task_id, "print('X', x)\n").output.splitlines()[-2:] == [
        "X 42",
        ">>> ",
    ]


def test_a_line_longer_than_the_terminal_takes_is_refused(client: Client) -> None:
    r = client.bash("read x; echo ${#x}", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    with pytest.raises(
        InvalidInputError, match="lines of at most 4095 bytes; this input has one of 5000"
    ):
        client.task_input(task_id, "a" * 5000 + "\n")
    with pytest.raises(InvalidInputError, match="this input has one of 5000"):
        client.task_input(task_id, "a" * 5000 + "\n", timeout=0)  # (its refusal was lost)
    assert client.task_input(task_id, "a" * 4000 + "\n").output.endswith("4000")
    # Counted with what is already typed on the line: two inputs of 4000 made a line
    # the terminal cut to 4095 bytes, silently (found by a review).
    r = client.bash("read x; echo ${#x}", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    client.task_input(task_id, "a" * 4000, timeout=0)
    with pytest.raises(InvalidInputError, match="this input has one of 4200 with what is typed"):
        client.task_input(task_id, "b" * 200 + "\n")
    assert client.task_input(task_id, "b" * 95 + "\n").output.endswith("4095")
    repl = client.bash("python3 -q", timeout=LONG, interactive=True)  # raw mode: no limit
    assert repl.background_task_id
    out = client.task_input(repl.background_task_id, f"print(len('{'b' * 6000}'))\n")
    assert out.output.endswith("6000\n>>> ")
    client.task_stop(repl.background_task_id)


def test_a_line_is_counted_as_the_terminal_edits_it(client: Client) -> None:
    """Backspace and Ctrl+W take text back, so the line they shorten fits (each byte was
    counted as making it longer: a trial); under `stty -isig` Ctrl+C is a plain character,
    no line end, so a line it would make too long is refused, not cut by the kernel."""
    r = client.bash("read x; echo ${#x}", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    client.task_input(task_id, "a" * 4000, timeout=0)
    client.task_input(task_id, "\x7f" * 100 + " word\x17", timeout=0)  # (3900, and a blank)
    assert client.task_input(task_id, "b" * 194 + "\n").output.endswith("4095")
    r = client.bash("stty -isig; read x; echo ${#x}", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    client.task_input(task_id, "a" * 4000 + "\x03", timeout=0)
    with pytest.raises(InvalidInputError, match="this input has one of 4101 with what is typed"):
        client.task_input(task_id, "b" * 100 + "\n")
    assert client.task_input(task_id, "b" * 94 + "\n").output.endswith("4095")


@pytest.mark.parametrize(
    "typed",
    [b"a" * 10 + " é".encode() + b"\x17", "x abc é\x17".encode(), "abc ééé\x17".encode(),
     "é\x7f".encode(), b"ab cd  \x17", b"foo_bar-baz\x17", "a—b\x17".encode(),
     b"abc\x16\x7fd", "日本\x7f".encode(), b"a+b\x17", b"a\xd7b\x17", b"ab\x15cd",
     b"ab\x03cd", b"a\rb", b"\xa9\xa9\x7f", b"ab\x13\x11c", b"ab\x12c"],
)  # fmt: skip
def test_a_line_is_edited_as_the_kernel_edits_it(typed: bytes) -> None:
    """What the terminal host counts of a line is what this kernel's line discipline
    keeps of it, on a real pseudo-terminal set as the host sets its own (`iutf8`): Ctrl+W
    after `é` and Backspace after a character of two bytes were counted otherwise (a
    review; `termios` has no `IUTF8` before Python 3.13)."""
    import pty
    import select
    import termios

    sys.path.insert(0, str(PTY_HOST.parent))
    try:
        import ptyhost
    finally:
        sys.path.remove(str(PTY_HOST.parent))
    master, slave = pty.openpty()
    try:
        attrs = termios.tcgetattr(slave)
        attrs[0] |= ptyhost.IUTF8  # (echo on, as the host's: Ctrl+R reprints the line)
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
        modelled = bytearray()
        ptyhost.typed_line(modelled, typed, termios.tcgetattr(master))
        os.write(master, typed + b"\n")
        lines = 1 + typed.count(b"\r") + typed.count(b"\n")  # (Enter ends one: `a\rb`)
        read, deadline = b"", time.monotonic() + 10
        while read.count(b"\n") < lines and time.monotonic() < deadline:
            if select.select([slave], [], [], 0.1)[0]:
                read += os.read(slave, 4096)
    finally:
        os.close(master)
        os.close(slave)
    assert read.rsplit(b"\n", 2)[-2] == bytes(modelled)  # (the line it ends)


def test_stop_keeps_the_commands_last_words_and_status(client: Client) -> None:
    r = client.bash("trap 'echo cleaning up; exit 1' TERM; echo started; "
                    "while :; do sleep 0.1; done", run_in_background=True, interactive=True)  # fmt: skip
    task_id = r.background_task_id
    assert task_id
    wait_until(lambda: "started" in client.task_output(task_id, block=False, offset=0).output)
    record = client.task_stop(task_id)
    assert record.status == "killed" and record.exit_code == 1  # the command's own status
    assert client.task_output(task_id, block=False, offset=0).output.endswith("cleaning up")


def test_ctrl_z_stops_a_job_of_a_shell_with_job_control(client: Client) -> None:
    """Ctrl+Z stops a job a shell with job control runs, as in tmux: `bash -i` gets its
    job back (it was a character there: a new user's trial); to a command on its own it
    stays a character (`top` or `nano` would stop themselves on it, and no shell there
    would continue them)."""
    r = client.bash("PS1='$ ' bash --norc -i", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    client.task_input(task_id, "sleep 60\n", timeout=500)
    stopped = client.task_input(task_id, "\x1a")
    assert "Stopped" in stopped.output and stopped.waiting_for_input, stopped.output
    assert "[1]" in client.task_input(task_id, "kill %1; jobs\n").output
    assert client.task_input(task_id, "exit\n").status == "completed"
    r = client.bash("cat -v", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    typed = client.task_input(task_id, "a\x1ab\n")
    assert typed.status == "running" and typed.waiting_for_input, typed
    assert typed.output.endswith("a^Zb")
    assert client.task_input(task_id, "\x04").status == "completed"


def test_an_erase_takes_back_a_character_not_a_byte(client: Client) -> None:
    """The terminal reads UTF-8 (IUTF8): `é` then an erase left one byte of it in the
    line (a new user's trial; tmux takes back the character)."""
    r = client.bash("read -r n; printf '%s' \"$n\" | od -An -tx1", timeout=LONG, interactive=True)
    task_id = r.background_task_id
    assert task_id
    done = client.task_input(task_id, "caf\u00e9\x7f\x7fa \u65e5\u672c\x7f\u8a9e\n")
    assert done.status == "completed"
    assert done.output.split("\n")[-1].split() == [f"{b:02x}" for b in "caa \u65e5\u8a9e".encode()]


def test_typing_while_the_task_ends_says_it_ended(client: Client) -> None:
    """Six inputs at once to a command that ends after the first: the one it read gets
    the end (its reply is not lost as the host exits), the others "not running"."""
    import concurrent.futures

    quick = Client(state_dir=client.layout.root, session=client.session,
                   env={**os.environ, "WAVE_INPUT_QUIET_S": "0.3"})  # fmt: skip
    for _ in range(8):  # a race: several rounds
        r = quick.bash('read x; echo "got $x"', timeout=LONG, interactive=True)
        task_id = r.background_task_id
        assert task_id

        def type_one(_: int, task_id: str = task_id) -> str:
            try:
                return quick.task_input(task_id, "y\n").status
            except TaskNotRunningError:
                return "not running"

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(type_one, range(6)))
        assert set(answers) <= {"completed", "not running"} and "completed" in answers


def test_a_command_that_replaces_its_socket(client: Client, state_dir: Path) -> None:
    """The command can replace tasks/<id>.tty (it is its own task's file): with a
    directory, the task still ends cleanly and nothing of it is removed."""
    r = client.bash(
        "s=$(tr '\\0' '\\n' < /proc/$PPID/cmdline | sed -n 5p); rm -f \"$s\"; mkdir \"$s\"; "
        "echo replaced",
        interactive=True,
    )
    assert r.success and r.stdout == "replaced"
    task_id = client.tasks()[-1].id
    assert (state_dir / "tasks" / f"{task_id}.tty").is_dir()
    assert "Traceback" not in (state_dir / "supervisor.log").read_text()


def test_task_input_whose_timeout_passes_mid_command_says_so(client: Client) -> None:
    """The answer started a long step: the TaskInput text says no prompt came before
    the timeout, and that TaskOutput waits for the next one (it did not always know the
    command was not waiting: a timeout under the quiet period cannot see a prompt)."""
    r = client.bash("read -p 'go? ' x; sleep 30; echo done", interactive=True, timeout=LONG)
    task_id = r.background_task_id or ""
    data = client.call_tool("TaskInput", {"task_id": task_id, "input": "y\n", "timeout": 300})
    text = texts.tool_result_text("TaskInput", data)
    assert "Status: running; no prompt before the timeout (TaskOutput waits" in text, text
    client.task_stop(task_id)


def test_an_input_that_ends_the_command_gets_its_end(client: Client) -> None:
    """A paste longer than the terminal holds, whose first line ends the command: the
    rest is never typed, and the answer is the end (it said "not running" though part of
    the input was typed and read)."""
    r = client.bash("read -p 'one line? ' l; echo got ${#l}", timeout=LONG, interactive=True)
    task_id = r.background_task_id or ""
    assert r.waiting_for_input
    out = client.task_input(task_id, "a\n" + ("b" * 100 + "\n") * 300)
    assert (out.status, out.exit_code) == ("completed", 0)
    assert "got 1" in out.output  # (amid the echo of what the terminal took)
    assert client.notifications() == []  # the answer said how it ended


@pytest.mark.parametrize("how", ["timeout", "background"])
def test_a_prompt_that_came_in_the_background_is_announced(client: Client, how: str) -> None:
    """An installer that asked after its timeout, its model told it would hear of its
    end, waited for ever unknown; so did a REPL started in the background (a review).
    Its prompt becomes a notice (not one of a lost caller), once; a result that shows
    the prompt first takes it away (after an answer, it said the task waited: stale)."""
    command = (
        "echo installing; sleep 1; read -p 'Overwrite? ' a; read -p 'Sure? ' b; echo done-$a-$b"
    )
    if how == "timeout":
        r = client.bash(command, timeout=300, interactive=True)
        assert r.background_task_id and not r.waiting_for_input, r
    else:
        r = client.bash(command, interactive=True, run_in_background=True)
    task_id = r.background_task_id or ""
    (notice,) = wait_until(client.pending_notices, timeout=20)  # type: ignore[misc]
    assert notice.task_id == task_id and notice.status == "running"
    assert (
        notice.message.startswith("Interactive command") and "waiting for input." in notice.message
    )
    assert "went away" not in notice.message
    assert client.notifications()[0].task_id == task_id  # (delivered)
    out = client.task_input(task_id, "y\n", timeout=20_000)
    assert out.waiting_for_input and out.output.endswith("Sure? ")
    done = client.task_input(task_id, "y\n", timeout=20_000)
    assert done.status == "completed" and "done-y-y" in done.output
    assert client.pending_notices() == []  # (its end: shown by the answer)


def test_a_prompt_in_the_background_is_announced_by_the_next_supervisor(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """The prompt's watch lived in the supervisor that moved the task on: one killed
    before the prompt came left it untold (the before-stop read); the next one, taking
    the task in, watches again."""
    gate = tmp_path / "gate"
    command = f"until [ -e {gate} ]; do sleep 0.02; done; read -p 'Go? ' a"
    task_id = client.bash(command, interactive=True, run_in_background=True).background_task_id
    kill_supervisor(state_dir)
    gate.touch()
    assert [t.id for t in client.tasks()] == [task_id]  # (a new supervisor takes it in)
    (notice,) = wait_until(client.pending_notices, timeout=20)  # type: ignore[misc]
    assert notice.task_id == task_id and "waiting for input." in notice.message
    client.task_stop(task_id)


def test_a_prompt_settled_takes_its_notice_away(client: Client) -> None:
    """A blocking TaskOutput that returned at the prompt of a task that went on in the
    background: its notice, posted or to come, goes (it came after the answer)."""
    r = client.bash(
        "echo on; sleep 1; read -p 'Go? ' a; echo got-$a", timeout=300, interactive=True
    )
    task_id = r.background_task_id or ""
    out = client.task_output(task_id, timeout=20_000)
    assert out.waiting_for_input and out.output.endswith("Go? ")
    assert client.pending_notices() == []
    assert client.task_input(task_id, "x\n", timeout=20_000).status == "completed"
    assert client.pending_notices() == []


def test_a_prompt_notice_goes_only_as_its_session_reads_or_answers_it(
    client: Client, state_dir: Path
) -> None:
    """Another session's read, or a read from an offset, took it away, though its session
    never saw the prompt (a review); a person's answer through the terminal (`attach`)
    left it, stale, until the end. A TaskInput that returned before the next prompt
    (its timeout) had that prompt told to no one (a review)."""
    command = "read -p 'A? ' a; echo got-$a; sleep 1; read -p 'B? ' b; echo got-$b; sleep 30"
    task_id = client.bash(command, interactive=True, run_in_background=True).background_task_id
    assert task_id is not None
    wait_until(lambda: client.pending_notices(), timeout=20)
    other = Client(state_dir=state_dir, session="other")
    assert other.task_output(task_id, block=False).waiting_for_input
    client.task_output(task_id, block=False, offset=0)
    assert [n.task_id for n in client.pending_notices()] == [task_id]
    assert client.task_input(task_id, "x\n", timeout=200).status == "running"
    assert client.pending_notices() == []  # (A's: answered)
    (notice,) = wait_until(client.pending_notices, timeout=20)  # type: ignore[misc]
    assert "waiting for input" in notice.message  # (B's)
    client.terminal(task_id, input="y\n")  # (a person's answer takes it)
    assert client.pending_notices() == []
    client.task_stop(task_id)


def test_a_blocking_task_output_returns_at_the_next_prompt(client: Client) -> None:
    """TaskInput's text sends the model to TaskOutput while the command works on: that
    wait ends as the command waits for input again (it ran to its 30 s timeout), and
    at once when it waits already."""
    r = client.bash("read -p 'A? ' a; sleep 1; read -p 'B? ' b", timeout=LONG, interactive=True)
    task_id = r.background_task_id or ""
    assert r.waiting_for_input
    assert client.task_input(task_id, "x\n", timeout=300).status == "running"
    t = time.monotonic()
    out = client.task_output(task_id, timeout=20_000)
    said = f"{out.status} {out.output!r} after {time.monotonic() - t:.2f} s"  # (two full
    assert out.waiting_for_input and out.output.endswith("B? "), said  # runs under load
    assert time.monotonic() - t < 10  # returned early, not waiting: cause not known yet)
    t = time.monotonic()
    again = client.task_output(task_id, timeout=20_000)
    assert again.waiting_for_input and time.monotonic() - t < 5
    client.task_stop(task_id)


class _Person:
    """``wave-bash attach`` on a pseudo-terminal this test types into and reads."""

    def __init__(
        self, state_dir: Path, task_id: str, size: tuple[int, int] | None = None, **env: str
    ) -> None:
        import fcntl
        import pty
        import termios

        self.master, slave = pty.openpty()
        if size is not None:  # (columns, rows)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("4H", size[1], size[0], 0, 0))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "attach",
             task_id], stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
            env={**os.environ, **env},
        )  # fmt: skip
        os.close(slave)
        self.screen = b""
        self.task_id = task_id

    def attached(self) -> None:
        """Wait until the attach says it has taken over the task's terminal."""
        wait_until(lambda: f"attached to {self.task_id}".encode() in self.read())

    def read(self) -> bytes:
        import select

        while self.master >= 0 and select.select([self.master], [], [], 0.05)[0]:
            try:
                self.screen += os.read(self.master, 65536)
            except OSError:  # the attach ended and its terminal closed
                break
        return self.screen

    def type(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            self.read()  # (a full terminal blocks the writer)
            view = view[os.write(self.master, view[:1024]) :]

    def paste(self, data: bytes) -> None:
        """Type ``data`` at once, as a terminal pastes (written by a thread, read here)."""
        import threading

        writer = threading.Thread(target=os.write, args=(self.master, data))  # (all of it:
        writer.start()  # a blocking write to a terminal returns once it is written)
        while writer.is_alive():
            self.read()
        writer.join()

    def __enter__(self) -> _Person:
        return self

    def __exit__(self, *exc: object) -> None:
        """Reaped whatever happened (a failed assertion left it running)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> int:
        """Its exit code, once it has ended; what it printed stays in ``screen``."""
        deadline = time.monotonic() + 30
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.read()  # (its last words must not fill the terminal)
        code = self.proc.wait(timeout=1)
        self.read()
        os.close(self.master)
        self.master = -1
        return code


def test_attach_types_any_paste_and_goes_on_after_a_refusal(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """A paste whose characters straddle a read's end, a byte that is no UTF-8 and a
    line longer than the terminal takes: each ended the attach (and lost the rest)."""
    pasted = tmp_path / "pasted"
    r = client.bash(f"cat > {pasted}", timeout=LONG, interactive=True)
    task_id = r.background_task_id or ""
    with _Person(state_dir, task_id) as person:
        person.attached()
        line = "a" + "é" * 30
        person.type(f"{line}\r".encode() * 200)  # 12.6 KB: reads of 4096 bytes split "é"
        wait_until(lambda: pasted.exists() and pasted.read_text().count("\n") == 200)
        person.type(b"ab")
        person.paste(b"x" * 5000 + b"y" * 900 + b"\r")  # refused: said, the attach goes on
        wait_until(lambda: b"[not typed:" in person.read())
        person.type(b"\x15caf\xe9\r\x04")  # Latin-1: U+FFFD; then Ctrl+D ends cat
        assert person.close() == 0
        assert b"ended: completed, exit code 0" in person.read()
    *lines, last = pasted.read_text().splitlines()
    assert lines == [line] * 200
    # Nothing of the paste was typed: its first read refused, the rest dropped with it
    # (its end alone was typed after `ab`, a line that was not pasted; a trial).
    assert last == "caf\ufffd"


def _full_screen(client: Client, tmp_path: Path, start: str, lines: int) -> str:
    """An interactive task that prints ``start`` (escape sequences, as Python text) and
    ``lines`` filler lines, says REDRAWN at each SIGWINCH and waits for a line; its ID
    once all the filler is in its log."""
    program = tmp_path / "full.py"
    program.write_text(
        "import signal, sys\n"
        "signal.signal(signal.SIGWINCH, lambda *_: print('REDRAWN', flush=True))\n"
        f"print('{start}' + 'filler line\\n' * {lines}, flush=True)\n"
        "sys.stdin.readline()\n"
    )
    r = client.bash(f"{sys.executable} {program}", timeout=LONG, interactive=True)
    task_id = r.background_task_id or ""
    wait_until(lambda: client_raw(client, task_id, 0).count(b"filler") == lines)
    return task_id


def test_attach_to_a_full_screen_program_enters_its_screen_and_has_it_drawn(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """Attached at the size it had, vim's screen came back as the last 4 KiB of what it
    drew, wrong rows and no alternate screen, which detaching then left messy (a trial).
    The attach enters the alternate screen the program is on, has it drawn again (a
    resize there and back), and leaves it as the person detaches."""
    task_id = _full_screen(client, tmp_path, "\\x1b[?1049h", 600)
    with _Person(state_dir, task_id, size=(80, 24)) as person:  # (the task's own size)
        person.attached()
        wait_until(lambda: b"REDRAWN" in person.read())
        assert b"\x1b[?1049h" in person.read().split(b"filler")[0]  # (before the replay)
        person.type(b"\x1d")
        assert person.close() == 0
    assert person.read().rindex(b"\x1b[?1049l") > person.read().rindex(b"REDRAWN")
    client.task_stop(task_id)


def test_attach_at_another_size_lets_the_whole_screen_scroll(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """vim drew shifted when attached at a size other than the task's (a trial): the
    replay set its scrolling margins for the old size in the person's terminal, which a
    resize resets in a real one, and held what vim drew for the new size in them. The
    replay is what came before the resize; then the whole screen scrolls; then comes what
    the program draws for its new size."""
    task_id = _full_screen(client, tmp_path, "\\x1b[?1049h\\x1b[1;24r", 30)
    with _Person(state_dir, task_id, size=(100, 30)) as person:
        wait_until(lambda: b"REDRAWN" in person.read())
        replay = person.read().split(b"REDRAWN", 1)[0]
        assert replay.count(b"filler") == 30
        assert b"\x1b7\x1b[r\x1b8" in replay.rsplit(b"filler", 1)[1]
        person.type(b"\x1d")
        assert person.close() == 0
    client.task_stop(task_id)


def test_attach_never_sets_the_persons_clipboard(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """OSC 52 sets the clipboard of the person's terminal (one they then paste into their
    shell): taken out, before and while they are attached, split between reads too."""
    go = tmp_path / "go"
    r = client.bash(
        "printf 'x\\033]052;c;WkVSTw==\\007y\\033]5\\0012;c;TlVM\\007z\\n'; "  # (read as 52)
        "printf 's\\033]52;c;broken\\033[0mt\\n'; "  # (a stray one: ended by the next ESC)
        "printf 'e\\033\\000]52;c;RVNDMA==\\007f\\n'; "  # (a control after ESC: a review)
        "printf 'g\\033]1337;Copy=:SVRFUk0=\\007h\\033]5522;type=write\\007i\\n'; "  # (iTerm2's,
        # kitty's: a review)
        "printf 'P\\033]2;T\\033]52;c;aGk=\\007Q\\033\\033]52;c;aGk=\\007R\\n'; "  # (a trial)
        f"printf 'a\\033]52;c;ZWNobyBldmls\\007b\\302\\23552;c;QzE=\\302\\234\\n'; "  # (C1 OSC: a trial)
        f"until [ -e {go} ]; do sleep 0.02; done; "
        "printf 'c\\033]52;c;ZWNo'; sleep 0.3; printf 'byBldmls\\007d\\n'; read -r x",
        timeout=500, interactive=True,  # (in the background at once: it waits on a file)
    )  # fmt: skip
    task_id = r.background_task_id or ""
    with _Person(state_dir, task_id) as person:
        wait_until(lambda: b"a\x1b\\b" in person.read())
        assert b"x\x1b\\y\x1b\\z" in person.read() and b"s\x1b\\\x1b[0mt" in person.read()
        go.touch()
        wait_until(lambda: b"c\x1b\\d" in person.read())
        person.type(b"\x1d")
        assert person.close() == 0
    assert b"52;" not in person.read() and b"ZWNo" not in person.read()
    assert b"WkVS" not in person.read() and b"TlVM" not in person.read()
    assert b"QzE=" not in person.read() and b"\xc2\x9d" not in person.read()
    assert b"RVNDMA" not in person.read() and b"SVRFUk0" not in person.read()
    assert b"5522" not in person.read()
    # (the title ended, the ESC before one cancelled: nothing joined to what follows)
    assert b"P\x1b]2;T\x1b\\Q\x1b\x1b\\R" in person.read()
    client.task_stop(task_id)


def test_attach_takes_the_size_of_the_terminal_not_of_columns(
    client: Client, state_dir: Path
) -> None:
    """The person's terminal's own size is the task's, whatever ``COLUMNS`` and ``LINES``
    say (``COLUMNS=20000`` made attach fail: over what a terminal may have)."""
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id or ""
    with _Person(state_dir, task_id, size=(100, 30), COLUMNS="20000", LINES="7") as person:
        person.attached()
        person.type(b"import os; print(tuple(os.get_terminal_size()))\r")
        wait_until(lambda: b"(100, 30)" in person.read())
        person.type(b"\x1d")
        assert person.close() == 0
    client.task_stop(task_id)


def _repl_showing_its_size(client: Client) -> tuple[str, Callable[[], str]]:
    """A Python REPL's task, and what tells the size its terminal has now."""
    task_id = client.bash("python3 -q", timeout=LONG, interactive=True).background_task_id or ""
    size = "import os; print(tuple(os.get_terminal_size()))\n"
    return task_id, lambda: client.task_input(task_id, size).output.splitlines()[-2]


def test_a_second_attach_leaving_gives_the_first_its_size_back(
    client: Client, state_dir: Path
) -> None:
    """Two attaches, the second larger: as it left, the task kept its size, and the first
    one's program drew for a screen it did not have (a new user's trial; tmux goes back
    to the size of the client that stays). Unless another set a size since."""
    task_id, shown = _repl_showing_its_size(client)

    with _Person(state_dir, task_id, size=(80, 24)) as first:
        first.attached()
        with _Person(state_dir, task_id, size=(150, 50)) as second:
            second.attached()
            assert shown() == "(150, 50)"
            second.type(b"\x1d")
            assert second.close() == 0
        assert shown() == "(80, 24)"
        with _Person(state_dir, task_id, size=(150, 50)) as third:
            third.attached()
            client.terminal(task_id, resize=(100, 30))  # (a later size: theirs, not the third's)
            third.type(b"\x1d")
            assert third.close() == 0
        assert shown() == "(100, 30)"
        first.type(b"\x1d")
        assert first.close() == 0
    # Two of the same size, the first leaving first: the second keeps its size (the first
    # gave back what it had found: sizes compared, not who set them; a review).
    with _Person(state_dir, task_id, size=(90, 20)) as first:
        first.attached()
        with _Person(state_dir, task_id, size=(90, 20)) as second:
            second.attached()
            first.type(b"\x1d")
            assert first.close() == 0
            assert shown() == "(90, 20)"
            second.type(b"\x1d")
            assert second.close() == 0
    client.task_stop(task_id)


def test_an_attach_killed_outright_counts_as_gone_once_not_heard_from(
    client: Client, state_dir: Path
) -> None:
    """An attach killed outright (SIGKILL, a dropped ssh) never says it leaves: the task
    kept its size for good, and its terminal host, taking it for attached, answered no
    program's question of the cursor's place again (a prompt_toolkit program hung: helper
    216). Not heard from for ``ATTACH_LEASE`` s, it counts as gone; an attach that lives on,
    waiting for output all that time, keeps its size; one stopped that long sets its size
    again once it goes on (it stayed forgotten: helper 218)."""
    task_id, shown = _repl_showing_its_size(client)
    with _Person(state_dir, task_id, size=(90, 20)) as stays:
        stays.attached()
        with _Person(state_dir, task_id, size=(100, 30)) as killed:
            killed.attached()
            assert shown() == "(100, 30)"
            killed.proc.kill()
            killed.proc.wait()
        assert shown() == "(100, 30)"  # (for now)
        wait_until(lambda: shown() == "(90, 20)", timeout=ATTACH_LEASE + 10, interval=0.5)
        stays.proc.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: shown() == "(80, 24)", timeout=ATTACH_LEASE + 10, interval=0.5)
        finally:
            stays.proc.send_signal(signal.SIGCONT)
        wait_until(lambda: shown() == "(90, 20)", timeout=20, interval=0.5)
        stays.read()
        stays.type(b"\x1d")
        assert stays.close() == 0
    assert shown() == "(80, 24)"
    client.task_stop(task_id)


@pytest.mark.parametrize("first_leaves_first", [True, False], ids=["first-first", "second-first"])
def test_overlapping_attaches_leave_the_size_of_who_stays(
    client: Client, first_leaves_first: bool
) -> None:
    """Two attaches at once, each leaving: the size is that of the one still attached,
    and once none is, the task's own; in either order it kept the size of a person
    already gone (100x30 with nobody attached: a trial)."""
    task_id, shown = _repl_showing_its_size(client)

    first, second = "a" * 32, "b" * 32  # (attach tokens; each leaves with what it found)
    client.terminal(task_id, resize=(100, 30), sizer=first)
    client.terminal(task_id, resize=(60, 15), sizer=second)
    assert shown() == "(60, 15)"
    leaving = [(first, (80, 24)), (second, (100, 30))]
    if not first_leaves_first:
        leaving.reverse()
    (gone, found), (stays, _) = leaving
    client.terminal(task_id, resize=found, sizer=gone, only_if_last=True)
    assert shown() == ("(60, 15)" if stays == second else "(100, 30)")
    client.terminal(task_id, resize=leaving[1][1], sizer=stays, only_if_last=True)
    assert shown() == "(80, 24)"
    client.task_stop(task_id)


def test_detach_in_the_same_read_as_keys_and_the_modes_the_task_left_on(
    client: Client, state_dir: Path
) -> None:
    """Ctrl+] read together with the keys before it detached only at a second press, and
    the person's terminal stayed on the task's alternate screen with mouse reports on
    (a review). The keys go first, then it detaches and turns those modes off."""
    r = client.bash("python3 -q", timeout=LONG, interactive=True)
    task_id = r.background_task_id or ""
    client.task_input(
        task_id, "print('\\x1b[?1049h\\x1b[1;5r\\x1b[?7l\\x1b[4h\\x1b[?1000h', end='')\n"
    )
    with _Person(state_dir, task_id) as person:
        person.attached()
        person.type(b"x = 6 * 7\r\x1d")  # one read
        assert person.close() == 0
    screen = person.read()
    after = screen.rsplit(b"\x1b[?1000h", 1)[-1]
    assert b"\x1b[?1049l" in after and b"\x1b[?1000l" in after
    assert b"\x1b7\x1b[r\x1b8" in after and b"\x1b[?7h" in after and b"\x1b[4l" in after
    # (keys as plain bytes again, kitty's flags and modifyOtherKeys: a trial)
    assert b"\x1b[<99u" in after and b"\x1b[>4m" in after and b"\x1b[?2026l" in after
    assert after.index(b"\x1b[?1049l") < after.index(b"detached from")
    assert client.task_input(task_id, "print(x)\n").output.splitlines()[-2:] == ["42", ">>> "]


def test_attach_to_an_ended_task_shows_its_end(client: Client, state_dir: Path) -> None:
    r = client.bash("echo last words", interactive=True)
    task_id = client.tasks()[-1].id
    assert r.stdout == "last words"
    person = _Person(state_dir, task_id)
    assert person.close() == 0
    screen = person.read()
    assert b"last words" in screen and b"ended: completed, exit code 0" in screen
    assert b"Cannot type" not in screen and b"which has ended" in screen
    assert b"keeps running" not in screen  # (a review: the banner said it did)


@pytest.mark.parametrize("quiet", ["2s", "abc", "nan", "-5"])
def test_the_quiet_period_is_a_duration(state_dir: Path, quiet: str) -> None:
    """`WAVE_INPUT_QUIET_S` takes durations as every setting does (`2s`); anything else
    refuses the command naming the variable (the terminal host printed a traceback as
    the command's output)."""
    client = Client(state_dir=state_dir, env={**os.environ, "WAVE_INPUT_QUIET_S": quiet})
    if quiet == "2s":
        r = client.bash("read -p 'Q? ' x", timeout=LONG, interactive=True)
        assert r.waiting_for_input and r.stdout == "Q? "
        client.task_stop(r.background_task_id or "")
        return
    r = client.bash("read -p 'Q? ' x", timeout=LONG, interactive=True)
    assert not r.success and "WAVE_INPUT_QUIET_S: a duration must be" in (r.error or "")
    assert client.tasks() == []  # nothing ran


def test_attach_sends_keys_while_it_waits_for_output(client: Client) -> None:
    """A key goes at once, in a call of its own beside the one waiting for output: it
    waited for that call to end before (up to 100 ms a key, and an idle attach asked ten
    times a second). Observed on real calls, attach running on a real terminal pair."""
    import pty
    import threading

    from wave_bash.api.attach import WATCH_MS, attach

    r = client.bash("cat", timeout=0, interactive=True)
    task_id = r.background_task_id or ""
    calls: list[dict[str, object]] = []  # each call's parameters, and how it went

    def call(**params: object) -> dict[str, object]:
        beside = any(c["wait"] and not c["done"] for c in calls)
        entry = {"wait": 0, **params, "done": False, "beside_a_wait": beside}
        calls.append(entry)
        answer = client.calls.call("terminal", {"session": client.session, **params})
        entry["done"] = True
        return dict(answer)

    master, slave = pty.openpty()
    ended: list[int] = []
    person = threading.Thread(target=lambda: ended.append(attach(call, task_id, slave, slave)))
    person.start()
    screen = b""

    def seen(text: bytes) -> bool:
        nonlocal screen
        while select_readable(master):
            screen += os.read(master, 4096)
        return text in screen

    try:
        wait_until(lambda: any(c["wait"] == WATCH_MS and not c["done"] for c in calls))
        os.write(master, b"hello\r")
        wait_until(lambda: seen(b"hello"))
        typed = [c for c in calls if c.get("input")]
        assert [c["input"] for c in typed] == ["hello\r"], calls
        assert typed[0]["beside_a_wait"] and typed[0]["wait"] == 0, calls
        # No polling meanwhile: at most a wait that brought the prompt, the one under way
        # as it was typed (it brings the echo back) and the next, begun at once (a full
        # run saw all three).
        assert [c["wait"] for c in calls].count(WATCH_MS) <= 3, calls
        os.write(master, b"\x1d")
        person.join(timeout=30)
        assert ended == [0] and seen(b"detached from")
    finally:
        if person.is_alive():
            os.write(master, b"\x1d")
            person.join(timeout=30)
        os.close(master)
        os.close(slave)
        client.task_stop(task_id)


def select_readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0.05)[0])


def test_attach_replays_no_terminal_question_and_keeps_an_unknown_size(
    client: Client, state_dir: Path
) -> None:
    """A question the task asked its terminal before the person came (`ESC[6n`) was
    replayed on attaching: their terminal answered it into the next read, a password (a
    review). It is left out of the replay; one asked while they are attached goes through.
    A terminal that says 0×0 leaves the task's size alone (it was made 1×1)."""
    r = client.bash(
        "printf 'before\\033[6n\\033]11;?\\007\\033Z\\033[?u\\033[x\\302\\2336n<\\n'; read -r x; "
        "printf 'live\\033[6n>\\n'; "
        "stty size; read -r y",
        timeout=LONG, interactive=True,
    )  # fmt: skip
    task_id = r.background_task_id or ""
    assert "\x1b[6n" in client_raw(client, task_id, 0).decode()  # (its log keeps it)
    with _Person(state_dir, task_id) as person:  # (a terminal with no size set: 0×0)
        person.attached()
        wait_until(lambda: b"before<" in person.read())
        person.type(b"1\r")
        wait_until(lambda: b"live\x1b[6n>" in person.read())
        wait_until(lambda: re.search(rb"\r\n(\d+) (\d+)\r\n", person.read()) is not None)
        rows, columns = re.search(rb"\r\n(\d+) (\d+)\r\n", person.read()).groups()  # type: ignore[union-attr]
        assert (int(columns), int(rows)) not in ((1, 1), (0, 0)), person.read()
        person.type(b"\x1d")
        assert person.close() == 0
    replayed = person.read().split(b"live")[0]  # (DECID, kitty's flags, DECREQTPARM, C1 CSI:
    assert b"before<" in replayed  # a trial)
    for asked in (b"\x1b[6n", b"\x1bZ", b"\x1b[?u", b"\x1b[x", b"\xc2\x9b"):
        assert asked not in replayed, asked
    client.task_stop(task_id)


@pytest.mark.parametrize(
    "question",
    [b"\x1b[6n", b"\x1b[?6n", b"\x1b[c", b"\x1b[>c", b"\x1b[?1049$p", b"\x1b[>q", b"\x1b[18t",
     b"\x1b[?u", b"\x1bZ", b"\x1b[x", b"\x1b[1;1;1;1;1;1*y", b"\x1b[1$w", b"\x1b[?4m", b"\x05",
     b"\x1b]11;?\x07", b"\x1bP+q544e\x1b\\", b"\x1b_Gi=31,s=1,v=1,a=q;AAAA\x1b\\",
     b"\xc2\x9b6n", b"\xc2\x9d11;?\xc2\x9c", b"\x1b\x00[6n"],
)  # fmt: skip
def test_the_replay_leaves_out_each_terminal_question(question: bytes) -> None:
    """What a terminal answers as typed input (into a password prompt: a trial), in any
    spelling its terminal takes; what only draws stays."""
    from wave_bash.api.attach import TERMINAL_QUERIES

    assert TERMINAL_QUERIES.sub(b"", b"a" + question + b"b") == b"ab"
    drawn = b"a\x1b[31m\x1b[?25h\x1b[2J\x1b[1;5r\xc2\xa9\x1b[?1049h\x1b]0;title\x07b"
    assert TERMINAL_QUERIES.sub(b"", drawn) == drawn


def test_attach_replays_from_the_start_of_an_escape_sequence(
    client: Client, state_dir: Path
) -> None:
    """The replay's last 4 KiB began inside a colour's sequence, its end shown as text
    (`31mBBB`; a trial): it begins at the sequence's ESC."""
    r = client.bash(
        "printf 'A%.0s' $(seq 100); printf '\\033[31m'; printf 'B%.0s' $(seq 4093); read -r x",
        timeout=LONG, interactive=True,
    )  # fmt: skip
    task_id = r.background_task_id or ""
    assert len(client_raw(client, task_id, 0)) == 100 + 5 + 4093  # (cut 2 bytes into it)
    with _Person(state_dir, task_id) as person:
        person.attached()
        wait_until(lambda: b"B" * 4093 in person.read())
        person.type(b"\x1d")
        assert person.close() == 0
    assert b"\x1b[31m" + b"B" * 4093 in person.read() and b"\n31m" not in person.read()
    client.task_stop(task_id)


def test_a_prompt_after_binary_output_is_shown(client: Client) -> None:
    """A question asked after binary output was hidden with it: the model saw only
    `[binary output, … not shown]` and that the command waits (a review)."""
    r = client.bash(
        "head -c 300 /bin/ls; echo; read -p 'Overwrite config? [y/N] ' a; echo \"got $a\"",
        timeout=LONG, interactive=True,
    )  # fmt: skip
    assert r.waiting_for_input and r.stdout.startswith("[binary output, "), r
    assert r.stdout.endswith("\nOverwrite config? [y/N] "), r
    assert client.task_input(r.background_task_id or "", "n\n").output.endswith("got n")


def test_git_opens_its_editor_on_the_terminal(state_dir: Path, tmp_path: Path) -> None:
    """`git commit` without `-m` on a terminal opens vi, which TaskInput drives: it failed
    at once saying there was no terminal (the failing editor of E2a), then, with none set,
    git refused a dumb terminal without EDITOR (a trial, a review)."""
    needs_tool("vi", "vim-tiny")
    env = {k: v for k, v in os.environ.items() if "EDITOR" not in k and k != "VISUAL"}
    env |= {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
            "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}  # fmt: skip
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=30)
    client = Client(state_dir=state_dir, cwd=tmp_path, env=env)
    opened = client.bash("git commit --allow-empty", interactive=True, timeout=20_000)
    assert opened.waiting_for_input and opened.background_task_id, opened.message
    done = client.task_input(opened.background_task_id, "iFrom vi\x1b:wq\n", timeout=20_000)
    assert (done.status, done.exit_code) == ("completed", 0), done.output
    assert client.bash("git log --format=%s").stdout == "From vi"


RAW_READER = (
    "import os, sys, tty; tty.setraw(0); sys.stdout.write('key? '); sys.stdout.flush(); "
    "data = os.read(0, 100); tty.setcbreak(0); print(repr(data))"
)
"""A program that reads keys (the terminal in raw mode), as crossterm's and bubbletea's do."""


def test_enter_is_typed_as_the_enter_key_sends_it(client: Client) -> None:
    """`\\n` presses Enter. A program that reads keys (raw mode) read a LF, which
    crossterm and bubbletea take for Ctrl+J (a trial): it gets a CR, as a keyboard sends
    it (`\\r\\n` one). A terminal in line mode gets a LF: a CR there was no line end
    under `-icrnl` (a review)."""
    r = client.bash(f"python3 -c {shlex.quote(RAW_READER)}", interactive=True, timeout=LONG)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    assert "b'ok\\r'" in client.task_input(task_id, "ok\r\n").output
    r = client.bash('stty -icrnl; read -r x; echo "[$x]"', interactive=True, timeout=LONG)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    answer = client.task_input(task_id, "hello\n")
    assert "[hello]" in answer.output and answer.exit_code == 0


def test_a_crlf_is_one_enter_in_line_mode_too(client: Client) -> None:
    """A CRLF (text pasted with Windows line ends) is one line end where the terminal
    reads lines: under `icrnl` its CR was a line end of its own, and the LF a second one
    answered the next prompt, unseen, with its default (a trial: `Delete all [Y/n]?`)."""
    command = "read -p 'Continue? ' a; read -p 'Delete all [Y/n]? ' b; echo \"[$a] [$b]\""
    r = client.bash(command, interactive=True, timeout=LONG)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    answer = client.task_input(task_id, "y\r\n")
    assert answer.waiting_for_input and answer.output.endswith("Delete all [Y/n]? "), answer
    answer = client.task_input(task_id, "n\r\n")
    assert "[y] [n]" in answer.output and answer.exit_code == 0


def test_the_echo_of_a_long_paste_is_whole(client: Client) -> None:
    """A 64 KB paste is written no faster than the terminal's echo is read: written at
    once, the kernel dropped blocks of its echo past the 4 KiB it keeps (1 paste in 5;
    the log and the reply showed lines run together, the program got them whole: a
    review). Busy CPUs beside it, as a review's machine had."""
    r = client.bash("cat > /dev/null", interactive=True, timeout=LONG)
    task_id = r.background_task_id
    assert task_id and r.waiting_for_input
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for paste in range(6):
            lines = [f"{paste}:{i:04d} " + "x" * 90 for i in range(600)]
            client.task_input(task_id, "\n".join(lines) + "\n", timeout=30_000)
        log = Path(client.task_output(task_id, block=False).output_path).read_bytes()
    finally:
        for burner in busy:
            burner.kill()
            burner.wait()
        client.task_stop(task_id)
    echoed = re.findall(rb"^(\d):(\d{4}) x{90}\r?$", log, re.MULTILINE)
    assert len(echoed) == 6 * 600, f"{6 * 600 - len(echoed)} lines' echo lost"
