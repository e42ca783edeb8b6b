"""The CLI in a real terminal (tmux): live view and Ctrl+B (SPEC F4, I2)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from conftest import needs_tool, run_cli, start_bg, task_alive, wait_until

from wave_bash.api import Client


@pytest.fixture
def tmux() -> Iterator[list[str]]:
    needs_tool("tmux", "tmux")
    base = ["tmux", "-L", f"wb-{uuid.uuid4().hex[:8]}"]
    subprocess.run(
        [*base, "new-session", "-d", "-s", "t", "-x", "160", "-y", "40", "bash --norc"], check=True
    )
    try:
        yield base
    finally:
        subprocess.run([*base, "kill-server"], check=False)


def cli_line(state_dir: Path) -> str:
    """The ``wave-bash`` command line a person types in the tmux pane."""
    return f"{shlex.quote(sys.executable)} -m wave_bash.api.cli --state-dir {shlex.quote(str(state_dir))}"


def pane(tmux: list[str]) -> str:
    return subprocess.run(
        [*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True
    ).stdout


def test_ctrl_b_backgrounds_the_running_command(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "stdout.txt"
    cli = cli_line(state_dir)
    line = f"{cli} run -- 'echo started; sleep 20; echo done' > {out}; echo rc=$? >> {out}"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: "Ctrl+B to background" in pane(tmux), timeout=15)
    assert "started" in pane(tmux)  # the live view shows the last lines
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-b"], check=True)
    wait_until(lambda: out.exists() and "rc=" in out.read_text(), timeout=15)
    # Its output so far, as the live view it was shown in is erased (a trial found it lost);
    # 124, as at its timeout: it still runs, so `&& deploy` must not go on (a trial).
    assert out.read_text().split("\n")[:2] == ["started", "rc=124"]
    screen = pane(tmux)
    assert "Command was manually backgrounded by user with ID:" in screen
    (task,) = Client(state_dir=state_dir).tasks(all=True)
    assert (task.status, task.background_reason) == ("running", "user")
    assert task_alive(task.id)
    assert "Ctrl+B to background" not in screen.split("manually backgrounded")[-1]  # view erased


def test_a_run_the_shell_puts_in_the_background_runs_there(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """`wave-bash run … &` at a terminal was stopped by SIGTTOU as it set the terminal's
    mode, before its command had started; Ctrl+Z then `bg` stopped it again (a review).
    In the background it leaves the terminal alone and goes on; `fg` gives it its keys
    back (Ctrl+B), and Ctrl+Z gives the shell its mode back."""
    out, flag = tmp_path / "out.txt", tmp_path / "flag"
    command = f"echo begun; while [ ! -e {flag} ]; do sleep 0.05; done; echo ended"
    line = f"{cli_line(state_dir)} run -- {shlex.quote(command)} > {out} &"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: out.exists() and "begun" in out.read_text(), timeout=15)
    flag.touch()
    subprocess.run([*tmux, "send-keys", "-t", "t", f"wait %1; echo rc=$? >> {out}", "Enter"])
    wait_until(lambda: "rc=" in out.read_text(), timeout=15)
    assert out.read_text() == "begun\nended\nrc=0\n"
    flag.unlink()
    line = f"{cli_line(state_dir)} run -- {shlex.quote(command)} > {out}"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: "Ctrl+B to background" in pane(tmux), timeout=15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-z"], check=True)
    wait_until(lambda: "Stopped" in pane(tmux), timeout=15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "stty -a > " + str(tmp_path / "stty"), "Enter"])
    wait_until(lambda: (tmp_path / "stty").exists() and "icanon" in (tmp_path / "stty").read_text())
    assert "-icanon" not in (tmp_path / "stty").read_text()  # (the shell's mode, given back)
    subprocess.run([*tmux, "send-keys", "-t", "t", "clear; bg", "Enter"], check=True)
    wait_until(lambda: "+ Running" in pane(tmux) or "&" in pane(tmux), timeout=15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "fg", "Enter"], check=True)
    wait_until(lambda: "Ctrl+B to background" in pane(tmux), timeout=15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-b"], check=True)
    wait_until(lambda: "manually backgrounded" in pane(tmux), timeout=15)
    assert "Stopped" not in pane(tmux)
    flag.touch()
    tasks = Client(state_dir=state_dir).tasks(all=True)
    wait_until(lambda: [t.status for t in Client(state_dir=state_dir).tasks()][-1] == "completed")
    assert [t.background_reason for t in tasks][-1] == "user"


def test_in_a_terminal_a_pipe_gets_the_output_as_it_is_written(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """`run -- make | tee log` at a terminal: the pipe got all of the output at the end,
    and none once Ctrl+C had stopped `tee` too, while the README says a pipe gets it as it
    is written (a trial). It streams there; no live view is drawn beside a pipe, whose
    reader may print on the same terminal, and the keys still work."""
    out, flag = tmp_path / "out.txt", tmp_path / "flag"
    command = f"echo first; while [ ! -e {flag} ]; do sleep 0.05; done; echo second"
    line = f"{cli_line(state_dir)} run -- {shlex.quote(command)} | cat > {out}; echo rc=$? >> {out}"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    try:
        wait_until(lambda: out.exists() and "first" in out.read_text(), timeout=15)
    finally:
        flag.touch()
    wait_until(lambda: "rc=" in out.read_text(), timeout=15)
    assert out.read_text() == "first\nsecond\nrc=0\n"
    assert "Ctrl+B to background" not in pane(tmux)
    line = f"{cli_line(state_dir)} run -- 'echo begun; sleep 30' | cat > {out}"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: out.exists() and "begun" in out.read_text(), timeout=15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-c"], check=True)  # (cat goes too)
    wait_until(lambda: "killed" in [t.status for t in Client(state_dir=state_dir).tasks()])
    assert out.read_text() == "begun\n"
    # With -i the output comes at the prompt, not streamed: the live view shows it
    # meanwhile, beside a pipe too (it showed nothing until then, a review)
    subprocess.run([*tmux, "send-keys", "-t", "t", "clear", "Enter"], check=True)
    line = f"{cli_line(state_dir)} run -i -- 'echo stepping; sleep 30' | cat"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: "stepping" in pane(tmux) and "Ctrl+B to background" in pane(tmux), 15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-c"], check=True)
    wait_until(lambda: [t.status for t in Client(state_dir=state_dir).tasks()].count("killed") == 2)


def _cli_process(state_dir: Path, verb: str) -> psutil.Process:
    """The ``wave-bash VERB`` the tmux pane runs."""
    found: list[psutil.Process] = []

    def running() -> bool:
        found[:] = [
            p for p in psutil.process_iter(["cmdline"])
            if "wave_bash.api.cli" in (p.info["cmdline"] or [])
            and str(state_dir) in p.info["cmdline"] and verb in p.info["cmdline"]
        ]  # fmt: skip
        return len(found) == 1

    wait_until(running, timeout=15)
    return found[0]


@pytest.mark.parametrize(("verb", "sig"), [("run", signal.SIGTERM), ("attach", signal.SIGHUP)])
def test_a_terminated_cli_gives_the_terminal_back(
    tmux: list[str], state_dir: Path, tmp_path: Path, verb: str, sig: signal.Signals
) -> None:
    """`attach` or a watched `run` ended by SIGTERM or SIGHUP (`timeout 60 wave-bash
    attach ID`) left the terminal raw or in cbreak mode, nothing typed echoed (a trial):
    it leaves through its `finally` blocks, exits 128 + the signal, and a `run` says its
    command goes on."""
    out = tmp_path / "out.txt"
    cli = cli_line(state_dir)
    client = Client(state_dir=state_dir)
    if verb == "run":
        line = f"{cli} run -- 'echo started; sleep 60'"  # (its live view: on stderr)
        shown = "Ctrl+B to background"
    else:
        task_id = client.bash("cat", timeout=0, interactive=True).background_task_id
        line = f"{cli} attach {task_id}"
        shown = "Ctrl+] detaches"
    # In a shell without job control: an interactive bash gives the terminal its modes
    # back after a job a signal killed (a script, `timeout`, an IDE's runner do not).
    line = shlex.quote(f"{line}; echo rc=$? > {out}; stty -a >> {out}")
    subprocess.run([*tmux, "send-keys", "-t", "t", f"bash -c {line}", "Enter"], check=True)
    wait_until(lambda: shown in pane(tmux), timeout=15)
    _cli_process(state_dir, verb).send_signal(sig)
    wait_until(lambda: out.exists() and "speed" in out.read_text(), timeout=15)
    said = out.read_text()
    assert said.startswith(f"rc={128 + sig}\n"), said
    for mode in ("icanon", "echo", "isig", "opost"):
        assert f" -{mode} " not in said.replace("\n", " "), said
    (task,) = client.tasks(all=True)
    assert task.status == "running" and task_alive(task.id)
    if verb == "run":
        assert f"terminated; task {task.id} keeps running in the background" in pane(tmux)
    client.task_stop(task.id)


def test_output_follow_wait_and_notifications_cli(state_dir: Path) -> None:
    r = run_cli(
        state_dir,
        "run",
        "--background",
        "--json",
        "--",
        "for i in 1 2 3; do echo n$i; sleep 0.3; done; exit 3",
    )
    tid = json.loads(r.stdout)["backgroundTaskId"]
    follow = run_cli(state_dir, "output", tid, "--follow")
    assert follow.stdout.split() == ["n1", "n2", "n3"]
    assert run_cli(state_dir, "output", tid).stdout.split() == ["n1", "n2", "n3"]
    waited = json.loads(run_cli(state_dir, "wait", tid, "--json").stdout)
    assert (waited["status"], waited["exitCode"]) == ("failed", 3)
    # (Its end printed, its notice is not said again; one whose end nothing printed is.)
    unseen = start_bg(Client(state_dir=state_dir), "exit 4")
    Client(state_dir=state_dir).wait(unseen, timeout=10_000)
    notes = json.loads(run_cli(state_dir, "notifications", "--json").stdout)
    assert [n["taskId"] for n in notes] == [unseen] and notes[0]["status"] == "failed"
    assert set(notes[0]) >= {
        "taskId",
        "status",
        "exitCode",
        "command",
        "description",
        "outputPath",
        "endedAt",
        "message",
    }
    assert json.loads(run_cli(state_dir, "notifications", "--json").stdout) == []


@pytest.mark.parametrize("where", [">&-", ">/dev/full"])
def test_notifications_that_cannot_be_printed_stay_unread(state_dir: Path, where: str) -> None:
    """Its stdout closed or on a full disk, `notifications` died with a traceback (a
    review): it says why, exits 2, and confirms nothing (the next reader gets the notice
    at once)."""
    client = Client(state_dir=state_dir, session="s")
    tid = start_bg(client, "exit 3")
    client.wait(tid, timeout=10_000)
    r = subprocess.run(
        ["bash", "-c", f'exec "$0" -m wave_bash.api.cli --session s notifications {where}',
         sys.executable],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    reason = (
        "cannot print: standard output is closed" if "&" in where else "No space left on device"
    )
    assert r.stderr == f"wave-bash: {reason}\n"
    with contextlib.closing(
        sqlite3.connect(f"file:{state_dir}/journal.db?mode=ro", uri=True)
    ) as db:
        (delivered,) = db.execute("SELECT delivered_at FROM notices WHERE task_id = ?", (tid,))
    assert delivered == (None,)
    # given back at once, not held by its claim until the lease ends (a minute; a review)
    assert [n.task_id for n in client.notifications()] == [tid]


def test_a_run_that_cannot_print_names_its_task(state_dir: Path) -> None:
    """`run` with its stdout closed exits 2 as it cannot print, but its command ran:
    the message names the task, where a script lost its ID (a review)."""
    r = subprocess.run(
        ["bash", "-c", 'exec "$0" -m wave_bash.api.cli run --background -- "exit 4" >&-',
         sys.executable],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert r.returncode == 2
    (task,) = Client(state_dir=state_dir).tasks(all=True)
    assert r.stderr == (
        "wave-bash: cannot print: standard output is closed; the command is task "
        f"{task.id} (`wave-bash output {task.id}`)\n"
    )


def test_notifications_cli_shows_control_characters(client: Client, state_dir: Path) -> None:
    """A notice quotes its command: printed raw, the command's colour codes and carriage
    returns acted on the terminal (as they did in `tasks`)."""
    tid = start_bg(client, "true # \x1b[31mred\x1b[0m")
    client.wait(tid)
    shown = run_cli(state_dir, "--session", client.session, "notifications").stdout
    assert tid in shown and "true # ^[[31mred^[[0m" in shown and "\x1b" not in shown


@pytest.mark.parametrize("columns", [0, 30])
def test_the_live_view_cuts_every_line_short_of_the_width(
    columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its status line was not cut: on a narrow terminal it wrapped, and each redraw,
    which erases by lines, left a row behind; a terminal that reports no size (0, a bare
    pty) lost every line's last character. Found by a reviewer."""
    import fcntl
    import pty
    import struct
    import termios

    from wave_bash.api.display import LiveView

    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    with os.fdopen(sub, "w") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        view = LiveView()
        wide = "😀" * 70 + "\n" + "日本語" * 30 + "\n" + "x\t" * 20  # (a trial's: two columns
        view.show(  # each, a tab up to eight; a row each was left behind)
            {"shortResult": f"tick 1\n{'x' * 100}\n{wide}", "elapsedMs": 3000, "taskId": "t1"}
        )
        lines = os.read(main, 65536).decode().split("\r\n")[:-1]
    os.close(main)
    width = columns or 80
    assert lines[0] == "tick 1" and lines[1] == "x" * (width - 1) and len(lines) == view.lines == 6
    assert lines[2] == "😀" * ((width - 1) // 2) and lines[3] == ("日本語" * 30)[: (width - 1) // 2]
    assert lines[4] == (("x" + " " * 7) * 20)[: width - 1]
    assert lines[5] == "… running 3s (t1, Ctrl+B to background)"[: width - 1]


def test_bg_cli(state_dir: Path) -> None:
    c = Client(state_dir=state_dir)
    tid = start_bg(c, "sleep 30")
    r = run_cli(state_dir, "bg", tid)  # (it said "moved" before: a reviewer found it)
    assert r.returncode == 0 and r.stdout.startswith(f"{tid} is already in the background;")
    missing = run_cli(state_dir, "bg", "nosuch")
    assert missing.returncode == 2 and "No task found with ID: nosuch" in missing.stderr


def status_to(out: Path | None) -> str:
    """A line's start that writes its exit status (``rc=N``) to ``out`` (None: the
    terminal) as the shell prompts again: after a Ctrl+C that ended the CLI by the
    signal, as it ends any program, the shell drops the rest of the line."""
    where = f" >> {out}" if out else ""
    return f"PROMPT_COMMAND='echo rc=$?{where}; unset PROMPT_COMMAND'; "


def _ctrl_c_after_the_start(
    tmux: list[str], state_dir: Path, tmp_path: Path, command: str
) -> Callable[[], str]:
    """``wave-bash run -- COMMAND`` in the terminal, given a Ctrl+C once its live view
    shows; returns what reads the exit status the shell wrote (``rc=N``) once it did."""
    out = tmp_path / "rc.txt"
    line = f"{status_to(out)}{cli_line(state_dir)} run -- {shlex.quote(command)}"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: "Ctrl+B to background" in pane(tmux), timeout=15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-c"], check=True)

    def status() -> str:
        wait_until(lambda: out.exists() and "rc=" in out.read_text(), timeout=15)
        return out.read_text().strip()

    return status


def test_the_first_ctrl_c_in_a_terminal_is_the_commands(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """Ctrl+C at a terminal reaches the command as a terminal gives it (SIGINT to its
    process group): pytest prints its summary, and `run` exits as the command does (it
    stopped the task, and the summary was lost: a review). No notice: it ended as the
    person's foreground command."""
    command = "trap 'echo summary; exit 3' INT; echo started; sleep 30"
    status = _ctrl_c_after_the_start(tmux, state_dir, tmp_path, command)
    assert status() == "rc=3"
    lines = pane(tmux).splitlines()
    assert lines[lines.index("started") + 1] == "summary" and "^C: stopped" not in pane(tmux)
    client = Client(state_dir=state_dir)
    (task,) = client.tasks(all=True)
    assert (task.status, task.exit_code, task.end_reason) == ("failed", 3, None)
    assert (task.owner, task.background_reason) == ("foreground", None)
    assert client.notifications() == []


def test_a_second_ctrl_c_in_a_terminal_stops_the_command(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """A command that carries on after Ctrl+C is stopped by the next one, which says so
    (the status line said the first was sent)."""
    command = "trap 'echo got-$((6 * 7))' INT; echo started; while :; do sleep 0.1; done"
    status = _ctrl_c_after_the_start(tmux, state_dir, tmp_path, command)
    wait_until(lambda: "got-42" in pane(tmux) and "press it again to stop" in pane(tmux), 15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-c"], check=True)
    assert status() == "rc=130"
    client = Client(state_dir=state_dir)
    (task,) = client.tasks(all=True)
    # Its output so far, then the stop: the live view that showed it is erased (a trial
    # found the output gone from the screen).
    lines = pane(tmux).splitlines()
    stopped = lines.index(f"^C: stopped task {task.id} (killed)")
    assert task.status == "killed" and lines[stopped - 2 : stopped] == ["started", "got-42"]
    # It ended as the person's foreground command: no notice tells any agent of the
    # session about a "background command" (it was recorded as one whose caller was lost).
    assert (task.owner, task.background_reason) == ("foreground", None)
    assert client.notifications() == []


def test_the_status_line_of_a_silent_command_says_a_ctrl_c_was_sent(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """It said so only once the command printed again: a silent one kept its old status
    line (a review)."""
    status = _ctrl_c_after_the_start(
        tmux, state_dir, tmp_path, "trap '' INT; echo started; sleep 30"
    )
    wait_until(lambda: "press it again to stop" in pane(tmux), timeout=15)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-c"], check=True)
    assert status() == "rc=130" and "^C: stopped task" in pane(tmux)


def test_ctrl_c_prints_a_runaway_commands_output_cut_short(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """After Ctrl+C the output so far is its excerpt, start and end, never all of it: a
    runaway command is why one presses it, and printing its every line took seconds (a
    review)."""
    out = tmp_path / "stdout.txt"
    cli = cli_line(state_dir)
    line = f"{status_to(out)}{cli} run -- 'seq 1 2000000; sleep 30' > {out}"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: "2000000" in pane(tmux) and "Ctrl+B to background" in pane(tmux), timeout=30)
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-c"], check=True)
    wait_until(lambda: out.exists() and "rc=" in out.read_text(), timeout=15)
    printed = out.read_text()
    assert printed.startswith("1\n2\n") and printed.endswith("2000000\nrc=130\n")
    assert len(printed) < 40_000
    (task,) = Client(state_dir=state_dir).tasks(all=True)
    # (the state dir it was given, in the hint: a pasted one went to the default state dir)
    hint = f"`wave-bash --state-dir {state_dir} output {task.id}` prints all of it"
    assert hint in pane(tmux).replace("\n", ""), pane(tmux)


def test_an_interrupted_cli_without_a_terminal_leaves_the_command_running(
    state_dir: Path,
) -> None:
    """SIGINT to `wave-bash run` from a script or an agent's harness: the command keeps
    running in the background (a caller that went away), stderr names it, and its output
    so far is printed (it was not, as the README says: a trial). (The installed command:
    its entry point hands Ctrl+C back to the CLI.)"""
    installed = Path(sys.executable).with_name("wave-bash")
    proc = subprocess.Popen(
        [installed, "--state-dir", str(state_dir), "run", "--", "echo so-far; sleep 30"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    client = Client(state_dir=state_dir)
    wait_until(
        lambda: any("so-far" in Path(t.output_path).read_text() for t in client.tasks(all=True)),
        timeout=15,
    )
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    (task,) = client.tasks(all=True)
    assert proc.returncode == -signal.SIGINT and task.status == "running", (proc.returncode, err)
    assert out == "so-far\n"
    stop = f"(wave-bash --state-dir {state_dir} stop {task.id}"
    assert f"task {task.id} keeps running in the background {stop}" in err
    client.task_stop(task.id)


@pytest.mark.parametrize("verb", ["run", "wait"])
def test_ctrl_c_ends_the_script_that_called_the_cli(
    state_dir: Path, tmp_path: Path, verb: str
) -> None:
    """A shell running a script ends it at a Ctrl+C only when its foreground program died
    of the SIGINT: the CLI exited 130, and the script went on to its next line, and the
    next command (a trial). It dies of the signal now, as `sleep` does."""
    installed = shlex.quote(str(Path(sys.executable).with_name("wave-bash")))
    log = tmp_path / "log"
    cli = f"{installed} --state-dir {shlex.quote(str(state_dir))}"
    step = (
        f'{cli} run -- "echo step $i; sleep 30"'
        if verb == "run"
        else f'{cli} wait "$({cli} run --background -- "echo step $i; sleep 30")"'
    )
    script = f"for i in 1 2; do {step}; echo after $i >> {log}; done; echo done >> {log}"
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    client = Client(state_dir=state_dir)
    try:
        wait_until(lambda: any("step" in Path(t.output_path).read_text()
                               for t in client.tasks(all=True)), timeout=15)  # fmt: skip
        wait_until(lambda: _cli_waits(proc.pid, verb), timeout=15)  # (loaded, and waiting)
        os.killpg(proc.pid, signal.SIGINT)  # (as a terminal sends Ctrl+C: to the group)
        assert proc.wait(timeout=30) == -signal.SIGINT
        assert not log.exists()
        assert [t.status for t in client.tasks(all=True)] == ["running"]  # (it runs on)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for task in client.tasks(all=True):
            client.task_stop(task.id)


def _cli_waits(pid: int, verb: str) -> bool:
    """Whether a child of ``pid`` is ``wave-bash VERB`` connected to its supervisor."""
    for child in psutil.Process(pid).children():
        with contextlib.suppress(psutil.Error):  # (a `$(…)` just ended, a zombie: a CI run)
            if verb in child.cmdline()[3:] and child.net_connections("unix"):
                return True
    return False


def test_ctrl_c_while_the_cli_loads_ends_it_without_a_traceback() -> None:
    """A Ctrl+C in the CLI's first ~20 ms, while Python loads its modules, printed a
    traceback (a trial): until the CLI takes Ctrl+C over, it ends the command quietly, by
    the signal, as it ends any program. (Where SIGINT is ignored, it stays ignored.)"""
    loading = "import os, signal; from wave_bash.api import command; os.kill(os.getpid(), signal.SIGINT); import time; time.sleep(30)"
    proc = subprocess.run([sys.executable, "-c", loading], capture_output=True, timeout=30)
    assert (proc.returncode, proc.stderr) == (-signal.SIGINT, b"")
    ignored = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); from wave_bash.api import command; assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN"
    assert subprocess.run([sys.executable, "-c", ignored], timeout=30).returncode == 0


def _asked_at_the_prompt(
    tmux: list[str], state_dir: Path, tmp_path: Path, rule: str, command: str
) -> Path:
    """``command`` run in the terminal under an ask ``rule``, up to its approval prompt;
    the file its exit status goes to (``rc=N``)."""
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"ask": [rule]}))
    out = tmp_path / "rc.txt"
    cli = cli_line(state_dir)
    line = f"{status_to(out)}{cli} run --rules {shlex.quote(str(rules))} -- '{command}'"
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: "Run it? [y/N]" in pane(tmux), timeout=15)
    return out


def test_ctrl_c_after_approving_at_the_prompt_reaches_the_command(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """The command a person approved at the prompt gets Ctrl+C too."""
    out = _asked_at_the_prompt(tmux, state_dir, tmp_path, "Bash(echo *)", "echo go; sleep 30")
    subprocess.run([*tmux, "send-keys", "-t", "t", "y", "Enter"], check=True)
    client = Client(state_dir=state_dir)
    wait_until(
        lambda: any("go" in Path(t.output_path).read_text() for t in client.tasks(all=True)), 15
    )
    subprocess.run([*tmux, "send-keys", "-t", "t", "C-c"], check=True)
    wait_until(lambda: out.exists() and "rc=" in out.read_text(), timeout=15)
    (task,) = client.tasks(all=True)
    assert out.read_text().strip() == "rc=130" and task.status == "killed"
    assert (task.exit_code, task.end_reason) == (130, None)  # (sleep died of it)


def test_a_command_declined_at_the_prompt_says_so_once(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """The prompt says why the command needs approval, then asks; a No is said as a
    decline, exit 2 (it printed the model's text, "Nothing was run. A person can allow
    it when asked", before asking, and the same refusal again after a No: a trial)."""
    out = _asked_at_the_prompt(tmux, state_dir, tmp_path, "Bash(echo *)", "echo hi")
    subprocess.run([*tmux, "send-keys", "-t", "t", "n", "Enter"], check=True)
    wait_until(lambda: out.exists() and "rc=" in out.read_text(), timeout=15)
    shown = pane(tmux)
    assert out.read_text().strip() == "rc=2" and "declined: nothing was run" in shown
    assert "This command needs approval: " in shown and "Nothing was run" not in shown
    assert not Client(state_dir=state_dir).tasks(all=True)


def test_the_prompt_shows_the_control_characters_of_a_command(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """The approval prompt quotes the command's words: printed raw, its ``ESC[2K`` and
    carriage return rewrote the line to name another command, and a Yes ran the hidden
    one (helper 215). They are shown, as ``cat -v`` shows them."""
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"ask": ["Bash(echo *)"]}))
    command = tmp_path / "command"
    command.write_text("echo 'hidden\x1b[2K\rgit status'")
    out = tmp_path / "rc.txt"
    line = (f"{cli_line(state_dir)} run --rules {shlex.quote(str(rules))} -- "
            f'"$(cat {shlex.quote(str(command))})"; echo rc=$? > {out}')  # fmt: skip
    subprocess.run([*tmux, "send-keys", "-t", "t", line, "Enter"], check=True)
    wait_until(lambda: "Run it? [y/N]" in pane(tmux), timeout=15)
    assert "needs approval: `echo hidden^[[2K^Mgit status`" in pane(tmux), pane(tmux)
    subprocess.run([*tmux, "send-keys", "-t", "t", "n", "Enter"], check=True)
    wait_until(lambda: out.exists() and "rc=" in out.read_text(), timeout=15)


def test_keys_typed_while_it_runs_are_not_lost(
    tmux: list[str], state_dir: Path, tmp_path: Path
) -> None:
    """The key watcher read what a person typed while a command ran and dropped it (a
    review): typed ahead for the shell, it goes back to the terminal's input as the run
    ends; under `run -i` it goes to the command's own terminal. (Each command waits for
    a file the test makes once the keys are typed: sleeps made this the suite's slowest.)"""
    cli = cli_line(state_dir)
    send = [*tmux, "send-keys", "-t", "t"]
    watcher = Client(state_dir=state_dir, session="watcher")
    gates = iter(tmp_path / f"go{n}" for n in range(9))

    def gated() -> tuple[Path, str]:  # a file to make, and a line that waits for it
        gate = next(gates)
        return gate, f"until [ -e {gate} ]; do sleep 0.05; done"

    def running() -> bool:  # (a silent command shows no live view to wait for)
        return any(task.status == "running" for task in watcher.tasks(all=True))

    gate, wait = gated()
    subprocess.run([*send, f"{cli} run -- '{wait}'", "Enter"], check=True)
    wait_until(running, timeout=15)
    subprocess.run([*send, "echo ahead-$((6 * 7))", "Enter"], check=True)
    gate.touch()
    wait_until(lambda: "\nahead-42" in pane(tmux), timeout=15)  # the shell ran it after
    # Typed before the CLI started (it flushed the terminal's input as it took it: a trial).
    subprocess.run([*send, "clear", "Enter"], check=True)
    wait_until(lambda: "ahead-42" not in pane(tmux), timeout=15)
    (before, wait_before), (gate, wait) = gated(), gated()
    subprocess.run([*send, f"{wait_before}; {cli} run -- '{wait}'", "Enter"], check=True)
    subprocess.run([*send, "echo early-$((6 * 7))", "Enter"], check=True)
    before.touch()
    wait_until(running, timeout=15)
    gate.touch()
    wait_until(lambda: "\nearly-42" in pane(tmux), timeout=20)
    subprocess.run([*send, "clear", "Enter"], check=True)
    wait_until(lambda: "ahead-42" not in pane(tmux), timeout=15)
    gate, wait = gated()
    line = f"{cli} run -i -- '{wait}; read -r n; echo \"hi $n\"'; echo rc=$?"
    subprocess.run([*send, line, "Enter"], check=True)
    wait_until(running, timeout=15)
    subprocess.run([*send, "bob", "Enter"], check=True)
    gate.touch()
    wait_until(lambda: "\nrc=" in pane(tmux), timeout=15)
    screen = pane(tmux)
    assert "\nhi bob" in screen and "\nrc=0" in screen, screen
    assert "command not found" not in screen, screen
    # A password typed ahead is typed once the command asks for it, with its echo off:
    # sent at once, the terminal echoed it into the task's log (a review).
    subprocess.run([*send, "clear", "Enter"], check=True)
    gate, wait = gated()
    line = f"{cli} run -i -- '{wait}; read -rs -p pw: p; echo; echo got ${{#p}}'; echo rc=$?"
    subprocess.run([*send, line, "Enter"], check=True)
    wait_until(running, timeout=15)
    subprocess.run([*send, "hunter2", "Enter"], check=True)
    gate.touch()
    wait_until(lambda: "\nrc=" in pane(tmux), timeout=15)
    assert "got 7" in pane(tmux) and "hunter2" not in pane(tmux).split("\n", 1)[1]
    (last,) = [t for t in watcher.tasks(all=True) if "read -rs" in t.command]
    assert "hunter2" not in Path(last.output_path).read_text()
    # Keys typed before Ctrl+C are dropped, as a terminal drops type-ahead on SIGINT.
    subprocess.run([*send, "clear", "Enter"], check=True)
    subprocess.run([*send, f"{status_to(None)}{cli} run -- 'sleep 30'", "Enter"], check=True)
    wait_until(running, timeout=15)
    subprocess.run([*send, "echo dropped-$((6 * 7))"], check=True)
    subprocess.run([*send, "C-c"], check=True)
    wait_until(lambda: "\nrc=130" in pane(tmux), timeout=15)
    subprocess.run([*send, "echo next-$((6 * 7))", "Enter"], check=True)
    wait_until(lambda: "\nnext-42" in pane(tmux), timeout=15)
    assert "dropped-42" not in pane(tmux)
