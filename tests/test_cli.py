"""The wave-bash CLI as a person runs it (SPEC I2)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, start_bg, start_supervisor, wait_until

from wave_bash.api import BashResult, Client, texts
from wave_bash.api.errors import InvalidInputError


def test_run_prints_output_and_exits_with_its_code(state_dir: Path) -> None:
    r = run_cli(state_dir, "run", "--", "echo hello; exit 3")
    assert (r.stdout, r.returncode) == ("hello\n", 3)
    r = run_cli(state_dir, "run", "--", "echo", "two", "words")
    assert (r.stdout, r.returncode) == ("two words\n", 0)


def test_run_json_is_one_object(state_dir: Path) -> None:
    r = run_cli(state_dir, "run", "--json", "--timeout", "900000", "--", "echo hi")
    data = json.loads(r.stdout)
    assert data["success"] is True and data["stdout"] == "hi" and data["exitCode"] == 0
    assert r.returncode == 0


def test_run_cwd(state_dir: Path, tmp_path: Path) -> None:
    r = run_cli(state_dir, "run", "--cwd", str(tmp_path), "--", "pwd")
    assert r.stdout.strip() == str(tmp_path.resolve())


def test_run_timeout_backgrounds(state_dir: Path) -> None:
    r = run_cli(state_dir, "run", "--timeout", "200", "--json", "--", "true; sleep 2")
    data = json.loads(r.stdout)
    assert data["assistantAutoBackgrounded"] is True and r.returncode == 124
    w = run_cli(state_dir, "wait", data["backgroundTaskId"], "--json")
    assert json.loads(w.stdout)["status"] == "completed"


def test_run_exits_124_while_its_command_still_runs(state_dir: Path) -> None:
    """A command moved to the background at its timeout has no exit code yet: `run`
    exits 124 (as timeout(1) and `wait`), so `run -- make test && deploy` does not
    deploy while the tests run (a review); started with --background it prints its ID
    alone on stdout (`ID=$(wave-bash run --background …)`, as `docker run -d`) and
    exits 0; a command the `sleep` rule stopped at its timeout (F3: a success for the
    model) exits with the signal's 143, not 0 (a trial: `sleep 1; make test` cut short
    let `&& deploy` go on). What it printed before its timeout is printed (a script saw
    none of it: a review)."""
    r = run_cli(state_dir, "run", "--timeout", "500", "--", "echo so far; sleep 30; exit 3")
    assert r.returncode == 124 and r.stdout == "so far\n" and "moved to the background" in r.stderr
    moved = r.stderr.split("with ID: ")[1].split(".")[0]
    started = run_cli(state_dir, "run", "--background", "--", "sleep 30")
    task_id = started.stdout.strip()
    assert started.returncode == 0 and started.stdout == f"{task_id}\n"
    assert f"ID: {task_id}" in started.stderr
    w = run_cli(state_dir, "wait", task_id, "--timeout", "50")
    assert w.returncode == 124 and "running" in w.stdout
    slept = run_cli(state_dir, "run", "--timeout", "200", "--", "sleep 30")
    assert slept.returncode == 143 and "terminated" in slept.stderr
    chained = run_cli(state_dir, "run", "--timeout", "300", "--", "sleep 0.1; echo built; sleep 30")
    assert (chained.returncode, chained.stdout) == (143, "built\n")
    assert run_cli(state_dir, "stop", moved, task_id).returncode == 0
    # One of several that had ended by itself says so ("X failed" read as a stop that
    # failed: a trial).
    ended = run_cli(state_dir, "run", "--background", "--", "exit 4").stdout.strip()
    run_cli(state_dir, "wait", ended)
    again = run_cli(state_dir, "run", "--background", "--", "sleep 30").stdout.strip()
    both = run_cli(state_dir, "stop", again, ended)
    assert both.stdout.splitlines() == [
        f"{again} killed",
        f"{ended} failed (exit code 4): it had already ended",
    ]


def test_run_and_output_print_the_whole_output(state_dir: Path) -> None:
    """The CLI is a command runner: past the 30,000 characters a model's result holds,
    `run` and `output ID` print all of the output (`run -- cat big.json | jq`), a line
    still being written included; `--json` keeps the result's excerpt (a review)."""
    expected = "".join(f"{i}\n" for i in range(1, 100_001))
    r = run_cli(state_dir, "run", "--", "seq 1 100000; exit 3")
    assert (r.returncode, r.stdout) == (3, expected) and r.stderr == ""
    data = json.loads(run_cli(state_dir, "run", "--json", "--", "seq 1 100000").stdout)
    assert data["truncated"] is True and "omitted" in data["stdout"]
    started = run_cli(state_dir, "run", "--background", "--", "seq 1 100000; printf part; sleep 60")
    task_id = started.stdout.strip()
    wait_until(lambda: run_cli(state_dir, "output", "--json", task_id).stdout.count("part") == 1)
    out = run_cli(state_dir, "output", task_id)
    assert out.returncode == 0 and out.stdout == expected + "part\n"
    assert run_cli(state_dir, "stop", task_id).returncode == 0


def test_the_whole_output_is_printed_as_the_log_has_it(state_dir: Path, tmp_path: Path) -> None:
    """`run`, `output` and `output --follow` read a long output in pieces and printed each
    as trimmed lines: blank lines at a piece's edges were lost, a line longer than a piece
    had a newline added every MiB (`run -- cat big.min.json | jq` failed), an escape
    sequence cut in two showed its halves as text, and a last line of 0.5 to 1 MiB was
    never printed (a trial). Every byte comes as the log has it, cleaned; a last line
    with no newline gets one, as before."""
    data = "\n\n" + "".join(f"line {i}\n\n" for i in range(60_000))  # (past a piece)
    data += "x" * 1_500_000 + "\n" + "\x1b]0;title\x07y" * 120_000 + "\n"  # (past a MiB)
    data += "\n" * 3 + "z" * 700_000  # (a last line with no newline, over half a MiB)
    source = tmp_path / "data"
    source.write_text(data)
    shown = data.replace("\x1b]0;title\x07", "") + "\n"
    ran = run_cli(state_dir, "run", "--", f"cat {source}")
    assert ran.returncode == 0 and ran.stdout == shown
    task_id = start_bg(Client(state_dir=state_dir), f"cat {source}")
    assert run_cli(state_dir, "wait", task_id).returncode == 0
    assert run_cli(state_dir, "output", task_id).stdout == shown
    assert run_cli(state_dir, "output", "--follow", task_id).stdout == shown
    # A running task's unfinished last line of 1.5 MB: cut at a MiB, its rest came as an
    # excerpt of 30,000 characters (a review); all of it, then a newline.
    unfinished = tmp_path / "unfinished"
    unfinished.write_text("a\n" * 3 + "z" * 1_500_000)
    running = start_bg(Client(state_dir=state_dir), f"cat {unfinished}; sleep 60")
    wait_until(lambda: Path(f"{state_dir}/tasks/{running}.log").stat().st_size >= 1_500_006)
    assert run_cli(state_dir, "output", running).stdout == unfinished.read_text() + "\n"
    assert run_cli(state_dir, "stop", running).returncode == 0


def test_a_short_output_is_printed_as_the_log_has_it_too(state_dir: Path) -> None:
    """One that fits the result's excerpt came trimmed of its blank edge lines, where
    `output` printed them (a trial): a person's `run` prints it exact; the model's result
    (`--json`) still leaves them out. Also after the call reattached to its task."""
    blank_edges = "printf '\\n\\na\\n\\nb\\n\\n\\n'"
    assert run_cli(state_dir, "run", "--", blank_edges).stdout == "\n\na\n\nb\n\n\n"
    assert run_cli(state_dir, "run", "--", "printf '\\n\\n'").stdout == "\n\n"
    assert run_cli(state_dir, "run", "--", "printf 'no newline'").stdout == "no newline\n"
    as_json = json.loads(run_cli(state_dir, "run", "--json", "--", blank_edges).stdout)
    assert as_json["stdout"] == "a\n\nb"
    task_id = Path(as_json["outputPath"]).stem
    again = {"session": "default", "task_id": task_id, "exact_output": True}
    reattached = Client(state_dir=state_dir).calls.call("attach", again)
    assert reattached["stdout"] == "\n\na\n\nb\n\n\n"


def test_wait_says_why_wave_bash_ended_a_task(state_dir: Path) -> None:
    """`killed (exit code 143)` alone read as a crash after the log cap, and `wait` takes
    the notice that said why as shown (a trial)."""
    start_supervisor(state_dir, WAVE_LOG_CAP="100K")
    capped = start_bg(Client(state_dir=state_dir), "yes")
    waited = run_cli(state_dir, "wait", capped)
    assert waited.returncode == 143
    assert waited.stdout == (
        f"{capped} killed (exit code 143). The command was stopped because its output "
        "reached the log size cap.\n"
    )
    stopped = start_bg(Client(state_dir=state_dir), "sleep 60")
    assert run_cli(state_dir, "stop", stopped).returncode == 0
    assert "stopped (`wave-bash stop`)" in run_cli(state_dir, "wait", stopped).stdout


def test_wait_says_what_a_task_left_running(state_dir: Path, tmp_path: Path) -> None:
    """`wait` said `completed (exit code 0)` alone of a task whose daemon ran on, and took
    the notice that said it as shown (a review): it says it, as `run` and `tasks` do."""
    pid_file = tmp_path / "daemon.pid"
    tid = start_bg(Client(state_dir=state_dir), f"sleep 60 & echo $! > {pid_file}; echo x")
    try:
        waited = run_cli(state_dir, "wait", tid)
        assert waited.stdout == (
            f"{tid} completed (exit code 0); 1 process it started is still running "
            f"(`wave-bash stop {tid}` stops them)\n"
        ), waited
    finally:
        run_cli(state_dir, "stop", tid)


def test_the_cli_names_its_own_commands_not_the_tools(state_dir: Path, tmp_path: Path) -> None:
    """`run` moved to the background said "you will be notified when it completes",
    which no CLI does, and `notifications` "TaskStop stops them" (a review): a person
    reads the CLI's commands."""
    moved = run_cli(state_dir, "run", "--timeout", "300", "--", "echo x; sleep 30")
    assert "`wave-bash wait` waits for its end" in moved.stderr, moved
    assert "notified" not in moved.stderr
    client = Client(state_dir=state_dir)
    client.task_stop(client.tasks()[-1].id)
    client.notifications()
    tid = start_bg(client, f"sleep 60 & echo $! > {tmp_path / 'pid'}")
    try:
        wait_until(lambda: client.pending_notices())
        said = run_cli(state_dir, "notifications").stdout
        assert "(`wave-bash stop` stops them)" in said and "Task" not in said, said
    finally:
        client.task_stop(tid)


@pytest.mark.parametrize("raw", [False, True], ids=["cleaned", "raw"])
def test_run_streams_its_output_into_a_pipe(state_dir: Path, tmp_path: Path, raw: bool) -> None:
    """Without a terminal, `run -- make | tee log` showed nothing until make ended (a
    trial; `--raw` too): a command that runs on has its lines printed as they come, the
    whole output exact all the same (the rest after its end, once)."""
    gate = tmp_path / "gate"
    cli = subprocess.Popen(
        [sys.executable, "-m", "wave_bash.api.cli", "run", *(["--raw"] if raw else []), "--",
         f"printf 'first\\n\\n'; while [ ! -e {gate} ]; do sleep 0.02; done; printf 'second'"],
        stdout=subprocess.PIPE, env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    try:
        assert cli.stdout is not None
        ready, _, _ = select.select([cli.stdout], [], [], 30)  # (before the command ends)
        assert ready and cli.stdout.readline() == b"first\n"
        gate.touch()
        rest = b"\nsecond" if raw else b"\nsecond\n"  # (raw: no newline added)
        assert cli.stdout.read() == rest and cli.wait(30) == 0
    finally:
        gate.touch()
        cli.kill()
        cli.wait()


def test_raw_prints_the_log_byte_for_byte(state_dir: Path, tmp_path: Path) -> None:
    """`run -- 'tar czf - x' > x.tgz` wrote a line saying binary output was not shown, and
    exited 0 (a trial): with `--raw`, `run` and `output` print the log's bytes as they are
    (binary, colours, a last line with no newline); cleaned is for reading."""
    data = os.urandom(3_000_000) + b"\x1b[31mred\x1b[0m\r\nno newline"
    (tmp_path / "data").write_bytes(data)
    env = {**os.environ, "WAVE_STATE_DIR": str(state_dir)}
    cli = [sys.executable, "-m", "wave_bash.api.cli"]
    ran = subprocess.run([*cli, "run", "--raw", "--", f"cat {tmp_path}/data"], env=env,
                         capture_output=True, timeout=60)  # fmt: skip
    assert (ran.returncode, ran.stdout == data) == (0, True)
    task_id = start_bg(Client(state_dir=state_dir), f"cat {tmp_path}/data; exit 3")
    followed = subprocess.run([*cli, "output", "--raw", "--follow", task_id], env=env,
                              capture_output=True, timeout=60)  # fmt: skip
    assert (followed.returncode, followed.stdout == data) == (3, True)
    assert followed.stderr == f"{task_id} failed (exit code 3)\n".encode()  # (as --follow)
    whole = subprocess.run([*cli, "output", "--raw", task_id], env=env, capture_output=True)
    assert (whole.returncode, whole.stdout == data) == (0, True)
    # Told to stop as it runs: what it printed so far, as bytes too (it came cleaned)
    colour = "printf '\\033[31mred\\033[0m\\n'; while :; do sleep 1; done"
    stopped = subprocess.Popen([*cli, "run", "--raw", "--", colour], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    wait_until(lambda: any(t.command == colour and Path(t.output_path).stat().st_size
                           for t in Client(state_dir=state_dir).tasks()))  # fmt: skip
    stopped.send_signal(signal.SIGTERM)
    out, _ = stopped.communicate(timeout=30)
    assert (stopped.returncode, out) == (143, b"\x1b[31mred\x1b[0m\n")
    (running,) = [t for t in Client(state_dir=state_dir).tasks() if t.status == "running"]
    Client(state_dir=state_dir).task_stop(running.id)
    both = run_cli(state_dir, "output", "--raw", "--json", task_id)
    assert both.returncode == 2 and "does not go with --json" in json.loads(both.stdout)["error"]
    # (a read that names no size is an attach's: of an interactive task only)
    with pytest.raises(InvalidInputError, match="is not interactive"):
        Client(state_dir=state_dir).calls.call("terminal", {"session": "s", "task_id": task_id})


def test_what_a_stream_left_is_an_excerpt_after_an_interrupt(
    state_dir: Path, tmp_path: Path
) -> None:
    """Interrupted (or moved on at its timeout) after a stream, the CLI printed the rest
    to the end of the log, however much, and followed a command that wrote faster for as
    long as it ran (a review): what the stream had not printed comes as an excerpt, its
    start and its end, as without a stream."""
    gate = tmp_path / "gate"
    flood = (
        f"echo first; while [ ! -e {gate} ]; do sleep 0.02; done;"
        " head -c 30000000 /dev/zero | tr '\\0' a | fold -w 100; echo last;"
        " while :; do sleep 1; done"
    )
    cli = subprocess.Popen(
        [sys.executable, "-m", "wave_bash.api.cli", "run", "--", flood],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert cli.stdout is not None and cli.stderr is not None
    printed = bytearray()
    try:
        ready, _, _ = select.select([cli.stdout], [], [], 30)
        assert ready and cli.stdout.readline() == b"first\n"  # (streamed)
        (task,) = Client(state_dir=state_dir).tasks()
        gate.touch()
        wait_until(lambda: Path(task.output_path).stat().st_size >= 30_300_000, timeout=30)
        cli.send_signal(signal.SIGINT)
        reader = threading.Thread(target=lambda: printed.extend(cli.stdout.read()))  # type: ignore[union-attr]
        reader.start()
        assert cli.wait(30) == -signal.SIGINT  # (by the signal: a script ends with it)
        reader.join(30)
    finally:
        cli.kill()
        cli.wait()
        Client(state_dir=state_dir).task_stop(task.id)
    # (what the stream printed before the interrupt, then an excerpt of the rest: not all)
    assert len(printed) < 30_300_000 and printed.endswith(b"last\n")
    assert b" omitted; full output: " in printed[-40_000:]
    assert b"output " + task.id.encode() in cli.stderr.read()  # (how to see all of it)


def _streaming_cli(state_dir: Path, command: str, *options: str) -> subprocess.Popen[bytes]:
    """`run` of ``command`` into a pipe, once its first line has been streamed."""
    cli = subprocess.Popen(
        [sys.executable, "-m", "wave_bash.api.cli", "run", *options, "--", command],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert cli.stdout is not None
    ready, _, _ = select.select([cli.stdout], [], [], 30)
    assert ready and cli.stdout.readline() == b"first\n"
    return cli


def test_signals_as_the_cli_streams_still_say_where_the_task_is(state_dir: Path) -> None:
    """A harness's `timeout` signals the CLI, then its group: the second signal cut the
    first one's leaving short (no line naming the task, a traceback); a reader gone, a
    SIGTERM made it exit 0 and say nothing; `| head -1` lost the line saying the
    command moved on (a trial)."""
    slow = "echo first; while :; do echo more; sleep 0.05; done"
    twice = _streaming_cli(state_dir, slow)
    twice.send_signal(signal.SIGTERM)
    twice.send_signal(signal.SIGTERM)
    _, err = twice.communicate(timeout=30)
    assert twice.returncode == 143 and b"keeps running in the background" in err, err
    assert b"Traceback" not in err
    deaf = f"trap '' PIPE; {slow}"  # (its reader gone, it would die of SIGPIPE otherwise)
    gone = _streaming_cli(state_dir, deaf)
    gone.stdout.close()  # type: ignore[union-attr]
    wait_until(lambda: len(Client(state_dir=state_dir).tasks()) == 2)
    gone.send_signal(signal.SIGTERM)
    _, err = gone.communicate(timeout=30)
    assert gone.returncode == 143 and b"keeps running in the background" in err, err
    headed = _streaming_cli(state_dir, deaf, "--timeout", "1500")
    headed.stdout.close()  # type: ignore[union-attr]
    _, err = headed.communicate(timeout=30)
    assert headed.returncode == 124 and b"moved to the background" in err, err
    # A reader that reads nothing more: the CLI waited for it, SIGTERM or not (a trial)
    flood = "echo first; seq 1 300000; while :; do sleep 1; done"
    stalled = _streaming_cli(state_dir, flood)
    (task,) = [t for t in Client(state_dir=state_dir).tasks() if t.command == flood]
    wait_until(lambda: Path(task.output_path).stat().st_size > 1_000_000)
    stalled.send_signal(signal.SIGTERM)
    assert stalled.wait(30) == 143  # (its stdout never read)
    assert b"keeps running in the background" in stalled.stderr.read()  # type: ignore[union-attr]
    stalled.stdout.close()  # type: ignore[union-attr]
    for task in Client(state_dir=state_dir).tasks():
        Client(state_dir=state_dir).task_stop(task.id)


def test_raw_into_a_closed_stdout_says_so(state_dir: Path) -> None:
    """`run --raw` with stdout closed was a traceback (a trial), as `run` is not."""
    env = {**os.environ, "WAVE_STATE_DIR": str(state_dir)}
    closed = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} -m wave_bash.api.cli run --raw -- 'echo x' >&-"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert closed.returncode == 2 and "Traceback" not in closed.stderr, closed.stderr
    assert "the command is task" in closed.stderr


def test_output_follow_says_why_wave_bash_ended_a_task(state_dir: Path) -> None:
    task_id = start_bg(Client(state_dir=state_dir), "sleep 60")
    assert run_cli(state_dir, "stop", task_id).returncode == 0
    followed = run_cli(state_dir, "output", "--follow", task_id)
    assert followed.returncode == 143 and "stopped (`wave-bash stop`)" in followed.stderr
    # (`wait ID | true` exited 0: its reader gone, its exit code all the same, a trial)
    failed = start_bg(Client(state_dir=state_dir), "exit 4")
    piped = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shlex.quote(sys.executable)} -m wave_bash.api.cli"
         f" wait {failed} | true"],
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)}, timeout=60,
    )  # fmt: skip
    assert piped.returncode == 4


def test_bad_values_are_said_in_plain_words(state_dir: Path) -> None:
    """What a value must be, in words (no pydantic jargon: "String should have at least 1
    character", "Input should be greater than or equal to 1"; a review)."""
    empty = run_cli(state_dir, "--session", "", "run", "--", "true")
    assert (empty.returncode, empty.stderr) == (2, "wave-bash: session must not be empty\n")
    # (pydantic's words were said for a byte that is no UTF-8: a trial)
    for session, said in (
        ("s\udce9", "UTF-8 text (it has a byte that is no UTF-8)"),
        ("s\x01", "printable text (no control characters)"),
    ):
        bad = run_cli(state_dir, "--session", session, "tasks")
        assert (bad.returncode, bad.stderr) == (2, f"wave-bash: session must be {said}\n")
    small = run_cli(state_dir, "run", "-i", "--size", "0x5", "--", "cat")
    assert small.stderr == (  # (named as given: a trial was told of `terminal_size[0]`)
        "wave-bash: --size takes COLUMNSxROWS, each from 1 to 10000 (such as 120x40), not '0x5'\n"
    )
    long = run_cli(state_dir, "input", "--no-enter", "nosuchid", "x" * 70_000)
    assert long.stderr == "wave-bash: input must have at most 65536 characters, not 70000\n"
    tilde = run_cli(state_dir, "--state-dir", "~nosuchuser/x", "tasks")  # (a traceback, exit 1)
    assert (tilde.returncode, tilde.stderr) == (
        2,
        "wave-bash: the state dir ~nosuchuser/x: its ~ names no user here\n",
    ), tilde.stderr
    dashed = run_cli(state_dir, "input", "nosuchid", "-y")  # (read as an option: a trial)
    assert dashed.returncode == 2 and dashed.stderr.endswith(
        "unrecognized arguments: -y (text that begins with - goes after --: input ID -- -y)\n"
    ), dashed.stderr
    for argv in (["nosuchid"], ["nosuchid", "x", "--stdin"]):  # (one text: a trial)
        neither = run_cli(state_dir, "input", *argv)
        assert (neither.returncode, neither.stderr) == (
            2, "wave-bash: input types one text: name it (input ID TEXT) or pipe it in with --stdin\n"
        )  # fmt: skip


def test_version_and_a_sandbox_option_without_a_sandbox(state_dir: Path) -> None:
    """`--version` prints the installed version; `--allow-network` or `--workspace`
    without a sandbox is an error, not silently ignored (a review)."""
    version = run_cli(state_dir, "--version")
    assert version.returncode == 0 and version.stdout.startswith("wave-bash 0.")
    for argv in (["run", "--allow-network", "--", "true"], ["mcp", "--workspace", "/tmp"]):
        r = run_cli(state_dir, *argv)
        assert r.returncode == 2 and "give --sandbox MODE too" in r.stderr, argv


def test_wait_exits_as_the_task_did(state_dir: Path) -> None:
    """`wave-bash wait` is usable in scripts: the task's exit code, 124 while it still
    runs at --timeout; `supervisor stop` says how many tasks keep running."""
    failing = json.loads(run_cli(state_dir, "run", "--json", "--background", "--", "exit 5").stdout)
    w = run_cli(state_dir, "wait", failing["backgroundTaskId"])
    assert w.returncode == 5 and "failed" in w.stdout
    slow = json.loads(run_cli(state_dir, "run", "--json", "--background", "--", "sleep 30").stdout)
    w = run_cli(state_dir, "wait", slow["backgroundTaskId"], "--timeout", "100")
    assert w.returncode == 124 and "running" in w.stdout
    stop = run_cli(state_dir, "supervisor", "stop")
    assert stop.stdout.startswith("supervisor stopped; 1 task(s) keep running"), stop.stdout
    run_cli(state_dir, "stop", slow["backgroundTaskId"])
    # (and how many ended tasks left processes running: it said none of them, a trial)
    left = json.loads(run_cli(state_dir, "run", "--json", "--background", "--",
                              "(setsid sleep 30 &); echo started").stdout)  # fmt: skip
    assert run_cli(state_dir, "wait", left["backgroundTaskId"]).returncode == 0
    status = json.loads(run_cli(state_dir, "supervisor", "status", "--json").stdout)
    assert (status["runningTasks"], status["lingeringTasks"]) == (0, 1)
    stop = run_cli(state_dir, "supervisor", "stop")
    assert stop.stdout.startswith("supervisor stopped; 1 ended task(s) left processes running")
    assert run_cli(state_dir, "stop", left["backgroundTaskId"]).returncode == 0


def test_bad_timeouts_exit_2(state_dir: Path) -> None:
    for bad in ("abc", "-5", "nan", "inf", "5d", "1e3", "s", "٣"):
        r = run_cli(state_dir, "run", "--timeout", bad, "--", "echo hi")
        assert r.returncode == 2, bad
        assert "timeout must be a non-negative number of milliseconds" in r.stderr
        assert bad != "-5" or r.stderr.endswith("got -5\n"), r.stderr  # (as given: -5.0, a trial)
        assert "600000" not in r.stderr and r.stdout == ""
        j = run_cli(state_dir, "run", "--json", "--timeout", bad, "--", "echo hi")
        assert j.returncode == 2 and json.loads(j.stdout)["success"] is False


def test_arguments_refused_are_one_json_value_with_json(state_dir: Path) -> None:
    """With `--json`, a script parses stdout: the parser's own refusals printed only
    usage on stderr; and the usage of a parser built for one verb named only it (`{run}
    ...`: a trial). An abbreviated `--jso`, which argparse takes, counts too (a trial)."""
    refused = (("wait", "--json"), ("run", "--json", "--timeout"), ("tasks", "--json", "-x"))
    for argv in (*refused, ("tasks", "--jso", "-x"), ("run", "--j", "--timeout")):
        r = run_cli(state_dir, *argv)
        said = json.loads(r.stdout)
        assert (r.returncode, said["success"], r.stderr) == (2, False, ""), argv
        assert ("exitCode" in said) == (argv[0] == "run")  # (run's: a whole result)
    assert json.loads(run_cli(state_dir, "wait", "--json").stdout)["error"] == (
        "wave-bash wait: the following arguments are required: id"
    )
    plain = run_cli(state_dir, "run")
    assert plain.returncode == 2 and plain.stdout == ""
    assert "{run,schema,tasks,output,wait,stop,bg,interrupt,input,attach," in plain.stderr
    for verb, unknown in (("run", "-x"), ("tasks", "--bogus"), ("mcp", "--bogus")):
        r = run_cli(state_dir, verb, unknown)  # (said with the whole CLI's usage: a trial)
        assert r.stderr.startswith(f"usage: wave-bash {verb} [-h]"), r.stderr
        assert r.stderr.endswith(f"wave-bash {verb}: error: unrecognized arguments: {unknown}\n")
    assert "run needs a command" in plain.stderr


def test_a_verbs_option_before_the_verb_is_said_to_go_after_it(state_dir: Path) -> None:
    """`wave-bash --json tasks` said only "unrecognized arguments: --json" (a trial)."""
    r = run_cli(state_dir, "--json", "tasks")
    assert (r.returncode, json.loads(r.stdout)["error"]) == (2, "wave-bash tasks: unrecognized "
        "arguments: --json (--json is an option of tasks: it goes after the verb, `wave-bash "
        "tasks --json …`)")  # fmt: skip
    r = run_cli(state_dir, "--all", "tasks")
    assert r.stderr.endswith("(--all is an option of tasks: it goes after the verb, "
                             "`wave-bash tasks --all …`)\n")  # fmt: skip
    r = run_cli(state_dir, "--timeout", "5000", "run", "--", "true")  # (5000 read as the verb)
    assert r.returncode == 2 and "invalid choice: '5000'" in r.stderr
    assert r.stderr.endswith("(--timeout is an option of run: it goes after the verb, "
                             "`wave-bash run --timeout …`)\n")  # fmt: skip
    r = run_cli(state_dir, "--bogus", "tasks")  # (no option of it: nothing more to say)
    assert r.stderr.endswith("wave-bash tasks: error: unrecognized arguments: --bogus\n")


def test_empty_command_exit_2(state_dir: Path) -> None:
    r = run_cli(state_dir, "run", "--", "  ")
    assert r.returncode == 2 and "command must not be empty" in r.stderr


def test_an_empty_session_name_is_an_error_not_the_default(state_dir: Path) -> None:
    """`--session "$NAME"` with NAME unset joined the `default` session (its notices, its
    tasks); an empty WAVE_SESSION is unset, as environment variables go."""
    for args in (["--session", "", "run", "true"], ["run", "--session", "", "true"]):
        r = run_cli(state_dir, *args)
        assert r.returncode == 2 and "session must not be empty" in r.stderr
    r = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "run", "--json", "true"], capture_output=True,
        text=True, timeout=60, env={**os.environ, "WAVE_STATE_DIR": str(state_dir), "WAVE_SESSION": ""},
    )  # fmt: skip
    assert r.returncode == 0 and json.loads(r.stdout)["exitCode"] == 0
    mcp = run_cli(state_dir, "mcp", "--session", "")
    assert mcp.returncode == 2 and "session name must be 1 to 200" in mcp.stderr


def test_unwritable_state_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    r = run_cli(blocker / "state", "run", "--", "echo hi")
    assert r.returncode == 2 and "state dir" in r.stderr and r.stdout == ""
    if os.getuid() == 0:
        return  # root can write anywhere: the read-only case cannot be shown as root
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    r = run_cli(ro / "state", "run", "--", "echo hi")
    assert r.returncode == 2 and "state dir" in r.stderr


def test_schema(state_dir: Path) -> None:
    for fmt in ("anthropic", "openai", "mcp"):
        r = run_cli(state_dir, "schema", "--format", fmt)
        assert r.returncode == 0 and len(json.loads(r.stdout)) == 4


def test_supervisor_start_status_stop(state_dir: Path) -> None:
    r = run_cli(state_dir, "supervisor", "status", "--json")
    assert json.loads(r.stdout)["running"] is False and r.returncode == 3  # as systemctl
    r = run_cli(state_dir, "supervisor", "start", "--json")
    started = json.loads(r.stdout)
    assert started["running"] is True and started["pid"] > 0
    assert (state_dir.stat().st_mode & 0o777) == 0o700
    assert (Path(started["socketPath"]).stat().st_mode & 0o777) == 0o600
    r = run_cli(state_dir, "supervisor", "status", "--json")
    assert json.loads(r.stdout)["pid"] == started["pid"] and r.returncode == 0
    plain = run_cli(state_dir, "supervisor", "status").stdout  # what the README promises
    assert "\ntracking: " in plain and "\nsandbox: " in plain
    r = run_cli(state_dir, "supervisor", "stop", "--json")
    assert json.loads(r.stdout)["stopped"] is True
    r = run_cli(state_dir, "supervisor", "status")
    assert r.stdout.startswith("no supervisor is running") and r.returncode == 3


def test_a_timeout_takes_a_unit(state_dir: Path, tmp_path: Path) -> None:
    """A bare number is milliseconds, as the tools' ``timeout``; ``--timeout 5`` meant
    five seconds to a user of ``timeout(1)`` and moved an ``echo`` to the background (a
    trial): ``30s``, ``10m`` say which (``ms`` too)."""
    from wave_bash.api.units import parse_timeout_ms

    said = {text: parse_timeout_ms(text) for text in ("250", "250ms", "1.5s", "2m", "1h", "5 S")}
    assert said == {"250": 250, "250ms": 250, "1.5s": 1500, "2m": 120_000, "1h": 3_600_000,
                    "5 S": 5000}  # fmt: skip
    gate = tmp_path / "gate"
    loop = f"echo started; while [ ! -e {gate} ]; do sleep 0.05; done"
    moved = run_cli(state_dir, "run", "--json", "--timeout", "0.3s", "--", loop)
    result = json.loads(moved.stdout)
    assert (moved.returncode, result["assistantAutoBackgrounded"]) == (124, True), moved.stderr
    assert "(0.3s)" in result["message"]
    gate.touch()
    waited = run_cli(state_dir, "wait", "--timeout", "1m", result["backgroundTaskId"])
    assert waited.returncode == 0, waited.stderr
    quick = run_cli(state_dir, "run", "--timeout", "10s", "--", "echo hi")
    assert (quick.returncode, quick.stdout) == (0, "hi\n"), quick.stderr


def test_a_duration_takes_no_size_unit() -> None:
    """``gc --older-than 7db`` was seven days (a size's ``iB`` was let after any unit);
    a size keeps it (``1GiB``, ``1GB``)."""
    from wave_bash.api.units import parse_duration, parse_size

    assert (parse_duration("7d"), parse_duration("2w"), parse_duration("90")) == (
        604_800,
        1_209_600,
        90,
    )
    for bad in ("7db", "7dib", "1hB", "٣d"):
        with pytest.raises(InvalidInputError, match="a duration must be"):
            parse_duration(bad)
    assert parse_size("1GiB") == parse_size("1GB") == parse_size("1G") == 1 << 30


QUICK_RUNS = [
    ["run", "--", "echo", "hi"],
    ["run", "echo hi"],
    ["run", "--background", "--timeout", "5000", "--", "sleep", "1"],
    ["run", "--timeout=5000", "--json", "--cwd", "/tmp", "--description", "d", "ls", "-la"],
    ["--state-dir", "/tmp/x", "--session=s", "--ssh-option", "-i k", "--ssh-option=-v",
     "--remote", "ssh://h", "--remote-command", "wb", "run", "ls", "--background", "--", "x"],
    ["run", "ls", "--json"],  # after the command, options are the command's
    ["run", "--timeout", "-5", "ls"], ["run", "--cwd", "-", "ls"], ["run", "--description", "-a b", "ls"],
    # global options after the verb, as git and pueue take them; there they win
    ["run", "--session", "s", "--state-dir=/tmp/x", "--json", "--", "ls"],
    ["--session", "a", "run", "--session", "b", "--remote-command", "wb", "--remote=ssh://h", "ls"],
]  # fmt: skip
NOT_QUICK = [
    ["run"], ["run", "--"], ["run", "--help"], ["--help"], ["tasks"], ["run", "--back", "ls"],
    ["run", "--timeout"], ["--state-dir"], ["--bogus", "run", "ls"], ["run", "--json=1", "ls"],
    ["run", "--description", "--background", "--", "ls"], ["--session", "--remote", "run", "ls"],
    ["run", "--timeout", "-5.", "ls"], ["run", "--ssh-option", "-v", "ls"],
]  # fmt: skip


@pytest.mark.parametrize("argv", QUICK_RUNS, ids=" ".join)
def test_quick_run_parses_as_argparse_does(argv: list[str]) -> None:
    from wave_bash.api.cli import build_parser, quick_run_args

    quick = quick_run_args(argv)
    assert quick is not None
    full = build_parser().parse_args(argv)
    if full.command[:1] == ["--"]:
        full.command = full.command[1:]
    assert vars(quick) == vars(full)


@pytest.mark.parametrize("argv", NOT_QUICK, ids=" ".join)
def test_anything_else_goes_to_argparse(argv: list[str]) -> None:
    from wave_bash.api.cli import quick_run_args

    assert quick_run_args(argv) is None


def test_an_unsplittable_ssh_option_is_a_clear_error(state_dir: Path) -> None:
    r = run_cli(state_dir, "--remote", "ssh://nowhere", "--ssh-option", "'-i", "tasks")
    assert r.returncode == 2 and "--ssh-option" in r.stderr and "Traceback" not in r.stderr
    # A value with spaces, unquoted: ssh took `%h` for the host, and ran its options as
    # the remote command (a trial); a value missing took wave-bash's next `-o` for it.
    for option, said in (("-o ProxyCommand=nc %h %p", "'%h' is no option"),
                         ("-i", "'-i' needs a value")):  # fmt: skip
        r = run_cli(state_dir, "--remote", "ssh://nowhere", f"--ssh-option={option}", "tasks")
        assert (r.returncode, r.stdout) == (2, "") and f"ssh option {said}" in r.stderr


def test_global_options_after_the_verb(state_dir: Path, tmp_path: Path) -> None:
    """`wave-bash tasks --session S` works as `wave-bash --session S tasks` (git, pueue);
    after the verb an option wins over the same option before it."""
    other = tmp_path / "other-state"
    r = run_cli(state_dir, "run", "--session", "s1", "--state-dir", str(other), "--", "echo hi")
    assert r.returncode == 0, r.stderr
    r = run_cli(state_dir, "tasks", "--json", "--session", "s1", "--state-dir", str(other))
    assert r.returncode == 0, r.stderr
    assert [t["command"] for t in json.loads(r.stdout)] == ["echo hi"]
    r = run_cli(state_dir, "--session", "s1", "tasks", "--json", "--session", "s2",
                "--state-dir", str(other))  # fmt: skip
    assert r.returncode == 0 and json.loads(r.stdout) == []
    r = run_cli(state_dir, "tasks", "--json", "--session", "s1")  # WAVE_STATE_DIR: not there
    assert r.returncode == 0 and json.loads(r.stdout) == []
    r = run_cli(state_dir, "supervisor", "stop", "--state-dir", str(other))
    assert r.returncode == 0, r.stderr


def test_every_verb_takes_the_global_options_after_it() -> None:
    from wave_bash.api.cli import _VERBS, build_parser, parse

    rest = {"output": ["x"], "wait": ["x"], "stop": ["x"], "bg": ["x"], "interrupt": ["x"], "input": ["x", "y"],
            "attach": ["x"], "supervisor": ["status"], "run": ["--", "ls"]}  # fmt: skip
    for verb in _VERBS:
        session = [] if verb == "mcp" else ["--session", "after"]
        argv = ["--session", "before", verb, *session, "--state-dir", "/d", "--remote", "r",
                "--remote-command", "c", "--ssh-option=-v", *rest.get(verb, [])]  # fmt: skip
        args = parse(["--ssh-option=-i k", *argv])  # an --ssh-option after adds to those before
        given = (args.state_dir, args.remote, args.remote_command, args.ssh_option)
        assert given == ("/d", "r", "c", ["-i k", "-v"]), verb
        assert args.session == ("before" if verb == "mcp" else "after"), verb
    assert build_parser().parse_args(["--ssh-option=-q", "tasks"]).ssh_option == ["-q"]
    mcp = build_parser("mcp").parse_args(["mcp", "--session", "agent"])
    assert mcp.mcp_session == "agent" and mcp.session != "agent"


def test_run_says_on_stderr_what_its_result_says_beside_the_output(state_dir: Path) -> None:
    """A note of the result (here: a process the command left running, with the ID that
    stops it) reaches a person on stderr; the exit code stays the process's own."""
    r = run_cli(state_dir, "run", "--", "sleep 60 & echo started; exit 4")
    assert (r.returncode, r.stdout) == (4, "started\n")
    assert "1 process it started is still running" in r.stderr and "Exit code" not in r.stderr
    task_id = r.stderr.split("(task ")[1].split(")")[0]
    assert f"Stop it with `wave-bash stop {task_id}`" in r.stderr  # a person's words
    assert run_cli(state_dir, "stop", task_id).returncode == 0
    # `--json`, for a program: counted (it was in the message alone: session 46's note)
    r = run_cli(state_dir, "run", "--json", "--", "sleep 60 & echo started")
    result = json.loads(r.stdout)
    assert (r.returncode, result["leftoverProcesses"]) == (0, 1)
    assert run_cli(state_dir, "stop", Path(result["outputPath"]).stem).returncode == 0


def test_output_follow_streams_whole_lines_and_all_of_them(state_dir: Path, tmp_path: Path) -> None:
    """`output --follow` is a `tail -f` of the cleaned output: a line written in two
    pieces stays one line, a progress line shows its last state, and nothing of a long
    output is cut; with --json it prints exactly one JSON value."""
    import subprocess

    go = tmp_path / "go"
    command = (
        f'printf "Compiling..."; while [ ! -e {go} ]; do sleep 0.02; done; echo " done"; '
        'printf "\\r33%%\\r66%%\\r99%%\\n"; seq 1 20000; '
        f"{sys.executable} -c 'print(chr(0x5b57) * 20000)'"  # one line of 60 KB
    )
    started = json.loads(run_cli(state_dir, "run", "--background", "--json", "--", command).stdout)
    task_id, log = started["backgroundTaskId"], Path(started["outputPath"])
    follow = subprocess.Popen(
        [sys.executable, "-m", "wave_bash.api.cli", "output", "--follow", task_id],
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)}, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_until(lambda: log.read_bytes() == b"Compiling...")
    go.touch()
    out, _ = follow.communicate(timeout=60)
    lines = out.splitlines()
    assert lines[:3] == ["Compiling... done", "99%", "1"] and len(lines) == 20003
    assert lines[-2:] == ["20000", "\u5b57" * 20000] and "omitted" not in out
    r = run_cli(state_dir, "output", "--follow", "--json", task_id)
    assert json.loads(r.stdout)["status"] == "completed"


def test_tasks_table_names_sessions_with_all_and_marks_a_cut_command(state_dir: Path) -> None:
    """`tasks --all` has a SESSION column; a command longer than the column ends in `…`
    (it was cut without a mark: a review)."""
    long = "echo " + "x" * 80
    assert run_cli(state_dir, "--session", "other", "run", "--", long).returncode == 0
    assert run_cli(state_dir, "run", "--", "true").returncode == 0
    running = run_cli(state_dir, "tasks", "--all", "--running")  # (none: both ended)
    assert (running.returncode, running.stdout) == (0, "no running tasks\n")
    table = run_cli(state_dir, "tasks", "--all").stdout.splitlines()
    assert table[0].split() == ["ID", "STATUS", "OWNER", "AGE", "SESSION", "COMMAND"]
    (row,) = [line for line in table if "echo x" in line]
    assert row.split()[4] == "other" and row.endswith("x…") and len(row.split(None, 5)[-1]) == 60
    own = run_cli(state_dir, "tasks").stdout.splitlines()
    assert own[0].split() == ["ID", "STATUS", "OWNER", "AGE", "COMMAND"] and len(own) == 2
    task_id = start_bg(Client(state_dir=state_dir), "sleep 60")
    running = json.loads(run_cli(state_dir, "tasks", "--all", "--running", "--json").stdout)
    assert [record["id"] for record in running] == [task_id]
    assert run_cli(state_dir, "stop", task_id).returncode == 0
    # An ended one whose processes run on is listed: something of it still runs (`tasks`
    # said `completed(0)+1 running`, `tasks --running` nothing: a trial)
    left = Client(state_dir=state_dir).bash("sleep 60 & echo x")
    left_id = Path(left.output_path).name.split(".")[0]
    listed = json.loads(run_cli(state_dir, "tasks", "--running", "--json").stdout)
    assert [(r["id"], r["status"], r["leftoverProcesses"]) for r in listed] == [
        (left_id, "completed", 1)
    ]
    assert run_cli(state_dir, "stop", left_id).returncode == 0


def test_tasks_table_marks_the_line_breaks_of_a_command(state_dir: Path) -> None:
    """A command of several lines is one row, its line breaks marked: shown joined with
    spaces, `echo a⏎rm -f x` read as one `echo` (a leftover of session 46)."""
    assert run_cli(state_dir, "run", "--", "echo a\ntrue\n").returncode == 0
    (row,) = run_cli(state_dir, "tasks").stdout.splitlines()[1:]
    assert row.endswith("  echo a ⏎ true ⏎ ")


def test_tasks_table_says_a_task_waits_for_input(state_dir: Path) -> None:
    """A task sent to the background for another reason than its prompt (`run -i
    --background`) that waits for input says so in the table, not only with `--json`."""
    client = Client(state_dir=state_dir)
    task_id = client.bash("read -p 'name? ' x", interactive=True, run_in_background=True)
    assert task_id.background_task_id
    wait_until(lambda: client.task_output(task_id.background_task_id or "", block=False)
               .waiting_for_input)  # fmt: skip
    (row,) = [line for line in run_cli(state_dir, "tasks").stdout.splitlines()[1:]]
    assert "running (waiting for input)" in row and "bg:explicit" in row, row
    client.task_stop(task_id.background_task_id)
    # One that went to the background at its prompt says whether it waits now (the note was
    # left out for it, so a busy REPL's row read as one at its prompt: a trial).
    repl = client.bash("read -p 'a? ' a; sleep 60", interactive=True, timeout=30_000)
    assert repl.background_task_id and repl.waiting_for_input
    row = _task_row(state_dir, repl.background_task_id)
    assert "running (waiting for input)" in row and "bg:waiting_for_input" in row, row
    client.task_input(repl.background_task_id, "x\n", timeout=100)  # now busy in its sleep
    row = _task_row(state_dir, repl.background_task_id)
    assert "waiting for input)" not in row and "bg:waiting_for_input" in row, row
    client.task_stop(repl.background_task_id)


def _task_row(state_dir: Path, task_id: str) -> str:
    (row,) = [line for line in run_cli(state_dir, "tasks").stdout.splitlines() if task_id in line]
    return row


def test_ends_the_cli_printed_are_not_said_again_as_notices(state_dir: Path) -> None:
    """`notifications` listed the ends of tasks `wait`, `stop` and `output --follow` had
    just printed (a trial), where an MCP result showing an end counts as its notice. Each
    counts now; a task whose end nothing printed keeps its notice."""
    client = Client(state_dir=state_dir)
    waited, stopped, followed, unseen = (
        start_bg(client, command) for command in ("exit 3", "sleep 60", "echo hi", "exit 5")
    )
    assert run_cli(state_dir, "wait", waited).returncode == 3
    assert run_cli(state_dir, "stop", stopped).returncode == 0
    assert run_cli(state_dir, "output", "--follow", followed).stdout == "hi\n"
    client.wait(unseen, timeout=10_000)
    listed = json.loads(run_cli(state_dir, "notifications", "--json").stdout)
    assert [n["taskId"] for n in listed] == [unseen]


def test_a_task_a_prune_is_deleting_is_not_found(state_dir: Path) -> None:
    """A prune removes a task's files, then its row, marked first: a read between the two
    said its log "was removed outside wave-bash" (a trial, under `gc --unread`). The
    task is gone once its row is marked: not found, not listed."""
    import sqlite3

    from wave_bash.api.errors import TaskNotFoundError

    client = Client(state_dir=state_dir)
    task_id = start_bg(client, "echo hi")
    client.wait(task_id, timeout=10_000)
    with sqlite3.connect(state_dir / "journal.db") as db:  # (as the prune leaves it)
        db.execute("UPDATE tasks SET pruning = 1 WHERE id = ?", (task_id,))
    (state_dir / "tasks" / f"{task_id}.log").unlink()
    for read in (
        lambda: client.task_output(task_id, block=False),
        lambda: client.task_output(task_id, block=False, offset=0),
        lambda: client.terminal(task_id, offset=0),
        lambda: client.wait(task_id, timeout=0),
    ):
        with pytest.raises(TaskNotFoundError):
            read()
    assert task_id not in [t.id for t in client.tasks()]
    r = run_cli(state_dir, "output", task_id)
    assert (r.returncode, r.stderr) == (2, f"wave-bash: No task found with ID: {task_id}\n")


def test_output_of_a_task_whose_log_was_removed_says_so(state_dir: Path) -> None:
    """B6d: `output` of a task whose log someone deleted printed nothing and exited 0, and
    TaskOutput said "(no new output)" (a review): the log is said to be gone. (`--raw` too:
    it exited 0, a trial.)"""
    client = Client(state_dir=state_dir)
    task_id = start_bg(client, "echo hi")
    client.wait(task_id, timeout=10_000)
    log = state_dir / "tasks" / f"{task_id}.log"
    log.unlink()
    for args in (
        ("output", task_id),
        ("output", "--follow", task_id),
        ("output", "--raw", task_id),
        ("output", "--raw", "--follow", task_id),
    ):
        r = run_cli(state_dir, *args)
        assert (r.returncode, r.stdout) == (1, "")
        assert f"its log {log} is gone" in r.stderr
    data = json.loads(run_cli(state_dir, "output", "--json", task_id).stdout)
    assert data["logGone"] is True and data["output"] == ""
    assert f"its log {log} is gone" in texts.tool_result_text("TaskOutput", data)
    kept = start_bg(client, "echo there")
    client.wait(kept, timeout=10_000)
    assert json.loads(run_cli(state_dir, "output", "--json", kept).stdout)["logGone"] is False


def test_a_log_removed_or_replaced_while_its_command_runs_is_said(
    state_dir: Path, tmp_path: Path
) -> None:
    """B6d: a foreground result whose log was removed as its command ran said nothing at
    all (success, no output, no error), and a log replaced by a link read as an empty
    output, the link's target's size as its offset (a review). A prune beside it never
    takes a task whose result is being made (it removed the log of a command that had
    just ended, and its result showed nothing: a review)."""
    client = Client(state_dir=state_dir)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    results: list[BashResult] = []
    caller = threading.Thread(
        target=lambda: results.append(client.bash(f"echo early; cat {gate}; echo late"))
    )
    caller.start()
    try:
        (task,) = wait_until(lambda: [t for t in client.tasks() if t.status == "running"])
        log = Path(task.output_path)
        wait_until(lambda: log.read_text() == "early\n")
        log.unlink()
    finally:
        os.close(os.open(gate, os.O_WRONLY))
        caller.join(30)
    (result,) = results
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.error is not None and f"Its log {log} is gone" in result.error
    assert f"Its log {log} is gone" in result.message
    secret = tmp_path / "secret"
    secret.write_text("not the task's\n")
    replaced = start_bg(client, "echo hi")
    client.wait(replaced, timeout=10_000)
    log = state_dir / "tasks" / f"{replaced}.log"
    log.unlink()
    log.symlink_to(secret)
    data = json.loads(run_cli(state_dir, "output", "--json", replaced).stdout)
    assert (data["logGone"], data["output"]) == (True, "")
    with pruning_beside(state_dir):
        shown = [client.bash("echo hello").stdout for _ in range(200)]
    assert shown == ["hello"] * 200


@contextlib.contextmanager
def pruning_beside(state_dir: Path) -> Iterator[None]:
    """`gc --older-than 0 --unread` in a loop, in a thread, while the block runs."""
    pruning = threading.Event()

    def prune() -> None:
        with Client(state_dir=state_dir) as own:
            while not pruning.is_set():
                own.gc(older_than=0, unread=True)

    pruner = threading.Thread(target=prune)
    pruner.start()
    try:
        yield
    finally:
        pruning.set()
        pruner.join(30)


def test_a_read_that_waits_for_an_end_keeps_its_task_from_a_prune(state_dir: Path) -> None:
    """A TaskOutput that waited for a task's end, then read its log, lost the task to a
    `gc --older-than 0` beside it (7 of 8 trials: "not found"; a review)."""
    client = Client(state_dir=state_dir)
    outputs = []
    with pruning_beside(state_dir):
        for _ in range(4):
            task_id = start_bg(client, "sleep 0.3; echo hello-output")
            read = client.task_output(task_id, block=True, timeout=5000, pattern="zzz-never")
            outputs.append(read.output)
    assert outputs == ["hello-output"] * 4


def test_careless_values_an_agent_sends_are_said(state_dir: Path, tmp_path: Path) -> None:
    """`--state-dir "$DIR"` with DIR unset went to the default state dir, `--cwd ''` ran
    here, and `run --json` of a bad directory printed `{success, error}` alone, where a
    script read `exitCode` (a trial)."""
    empty = run_cli(state_dir, "--state-dir", "", "run", "--", "echo ran")
    assert (empty.returncode, empty.stdout) == (2, "")
    assert "the state dir given is empty" in empty.stderr
    here = run_cli(state_dir, "run", "--cwd", "", "--", "echo ran")
    assert (here.returncode, here.stdout) == (2, "") and "--cwd is empty" in here.stderr
    for words in (("run", "--", "echo ran"), ("tasks",), ("mcp",)):  # (HOST unset: ran here)
        local = run_cli(state_dir, "--remote", "", *words)
        assert (local.returncode, local.stdout) == (2, "") and "--remote is empty" in local.stderr
    read, write = os.pipe()  # (its reader gone: `run --json ... | true` was a traceback)
    os.close(read)
    try:
        gone = subprocess.run(
            [sys.executable, "-m", "wave_bash.api.cli", "run", "--json", "--cwd",
             str(tmp_path / "gone"), "--", "pwd"],
            stdout=write, stderr=subprocess.PIPE, text=True, timeout=60,
            env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
        )  # fmt: skip
    finally:
        os.close(write)
    assert (gone.returncode, gone.stderr) == (2, "")
    bad = run_cli(state_dir, "run", "--json", "--cwd", str(tmp_path / "gone"), "--", "pwd")
    result = json.loads(bad.stdout)
    assert bad.returncode == 2 and result["exitCode"] is None and result["success"] is False
    assert "working directory does not exist" in result["error"] and "stdout" in result


def test_output_follow_says_how_the_task_ended(state_dir: Path) -> None:
    """`output --follow` printed no end and exited 0, yet took the end's notice as shown:
    a failure went unseen (a trial). It says the end on stderr and exits as `wait`."""
    client = Client(state_dir=state_dir)
    task_id = start_bg(client, "echo line; sleep 0.3; exit 7")
    followed = run_cli(state_dir, "output", "--follow", task_id)
    assert (followed.returncode, followed.stdout) == (7, "line\n")
    assert followed.stderr == f"{task_id} failed (exit code 7)\n"
    assert run_cli(state_dir, "output", "--follow", "--json", task_id).returncode == 7
    assert client.notifications() == []


def test_output_follow_into_a_reader_that_leaves_exits_as_wait(state_dir: Path) -> None:
    """`output --follow ID | head -2` exited 0 while the task ran on (a trial): as `wait`,
    124 while it runs, its exit code once it ended."""
    task_id = start_bg(Client(state_dir=state_dir), "while :; do echo line; sleep 0.05; done")
    cli = [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir)]
    follow = subprocess.Popen([*cli, "output", "--follow", task_id], stdout=subprocess.PIPE)
    assert follow.stdout is not None
    assert follow.stdout.readline() == b"line\n"
    follow.stdout.close()  # (the reader goes away)
    assert follow.wait(timeout=30) == 124
    assert run_cli(state_dir, "stop", task_id).returncode == 0
    # Of a task gone quiet too: it is seen as the reader goes, not at the next write
    # (`output --follow ID | grep -m1 ready` waited for a line that never came: a trial)
    quiet = start_bg(Client(state_dir=state_dir), "echo ready; sleep 300")
    for raw in ([], ["--raw"]):
        follow = subprocess.Popen([*cli, "output", "--follow", *raw, quiet], stdout=subprocess.PIPE)
        try:
            assert follow.stdout is not None
            assert follow.stdout.readline() == b"ready\n"
            follow.stdout.close()
            assert follow.wait(timeout=10) == 124, raw
        finally:
            follow.kill()
            follow.wait()
    assert run_cli(state_dir, "stop", quiet).returncode == 0


def test_output_follow_shows_a_prompt_and_says_the_task_waits(state_dir: Path) -> None:
    """`output --follow` of an interactive task at its prompt printed whole lines only:
    `Proceed? [y/N] ` never came, nothing said the task waited, and it waited on (a
    trial; `tail -f` shows it). It shows the prompt, says how to answer, and goes on."""
    import select

    client = Client(state_dir=state_dir)
    started = client.bash(
        "echo ready; read -p 'Proceed? [y/N] ' a; read -s -p 'Password: ' b;"
        " read -s -p ' Again: ' c; echo; echo \"got $a\"",
        interactive=True, run_in_background=True,
    )  # fmt: skip
    task_id = started.background_task_id or ""
    follow = subprocess.Popen(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "output",
         "--follow", task_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    said = {follow.stdout: b"", follow.stderr: b""}

    def read_some() -> None:
        for pipe in select.select(list(said), [], [], 0.1)[0]:
            said[pipe] += os.read(pipe.fileno(), 4096)

    try:
        wait_until(lambda: read_some() or b"waits for input" in said[follow.stderr], timeout=20)
        assert said[follow.stdout].endswith(b"ready\nProceed? [y/N] "), said
        assert f"[{task_id} waits for input: ".encode() in said[follow.stderr]
        client.task_input(task_id, "y\n")
        # (a prompt after an answer with no echo came after the piece's 30 s: a review)
        wait_until(lambda: read_some() or said[follow.stdout].endswith(b"Password: "), 10)
        client.task_input(task_id, "secret\n")
        wait_until(lambda: read_some() or said[follow.stdout].endswith(b" Again: "), 10)
        client.task_input(task_id, "secret\n")
        out, _ = follow.communicate(timeout=30)
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    assert (said[follow.stdout] + out).endswith(b"got y\n") and follow.returncode == 0


def _unread_bytes(stream: Any) -> int:
    """Bytes waiting in a pipe, not read (FIONREAD)."""
    import fcntl
    import struct
    import termios

    got = fcntl.ioctl(stream.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return int(struct.unpack("i", got)[0])


@pytest.mark.parametrize("how", ["bg", "SIGTERM", "SIGHUP"])
def test_a_run_moved_on_or_terminated_prints_its_output_so_far(state_dir: Path, how: str) -> None:
    """A harness that ends `run` on its own timeout (SIGTERM), or `bg ID` from another
    shell, left the waiting `run` printing nothing on stdout, where its timeout, Ctrl+B
    and a SIGINT print the output so far (trials): both do; the command goes on."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "run", "--",
         "echo so far; sleep 60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        client = Client(state_dir=state_dir)
        (task,) = wait_until(lambda: client.tasks())
        wait_until(lambda: "so far" in client.task_output(task.id, block=False).output)
        # (and the CLI knows its task: it streamed the line; signalled before it had read
        # the task's ID, under a CI run's load, it had nothing to print, as documented)
        assert proc.stdout is not None
        wait_until(lambda: _unread_bytes(proc.stdout) > 0)
        if how == "bg":
            assert run_cli(state_dir, "bg", task.id).returncode == 0
        else:
            proc.send_signal(getattr(signal, how))
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert (proc.returncode, out) == ({"bg": 124, "SIGTERM": 143, "SIGHUP": 129}[how], "so far\n")
    said = {"bg": "manually backgrounded", "SIGTERM": "terminated", "SIGHUP": "hung up"}[how]
    if how != "bg":  # (a SIGHUP said "terminated" too: a trial)
        said += f"; task {task.id} keeps running"
    assert said in err, err
    assert client.task_stop(task.id).status == "killed"


def test_attach_to_an_unknown_task_says_so_first(state_dir: Path) -> None:
    """Without a terminal, `attach nosuch` said it needs one (a trial): the unknown ID is
    what to name first."""
    r = run_cli(state_dir, "attach", "nosuch")
    assert r.returncode == 2 and "No task found with ID: nosuch" in r.stderr, r.stderr
    task_id = start_bg(Client(state_dir=state_dir), "exit 0")
    assert "needs a terminal" in run_cli(state_dir, "attach", task_id).stderr


def test_a_cli_started_with_its_stderr_closed_or_an_ascii_stdout_runs(state_dir: Path) -> None:
    """Started with stderr closed (`2>&-`), `run` died on its `isatty` and ran nothing,
    and `mcp` printed its first line into the JSON-RPC stream; output an ASCII stdout
    cannot hold was a traceback with nothing printed (a trial)."""
    cli = [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir)]

    def closed_stderr() -> None:
        os.close(2)

    def started(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *args], capture_output=True, text=True, timeout=60, **kw)

    ran = subprocess.run([*cli, "run", "--", "echo out"], stdout=subprocess.PIPE, text=True,
                         timeout=60, preexec_fn=closed_stderr)  # fmt: skip
    assert (ran.returncode, ran.stdout) == (0, "out\n")
    missing = subprocess.run([*cli, "output", "zzzzzzzz"], stdout=subprocess.PIPE, text=True,
                             timeout=60, preexec_fn=closed_stderr)  # fmt: skip
    assert (missing.returncode, missing.stdout) == (2, "")
    ascii_env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    accented = started("run", "--", "printf 'h\\303\\251llo\\n'", env=ascii_env)
    assert (accented.returncode, accented.stdout) == (0, "h?llo\n")
    hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}  # fmt: skip
    with subprocess.Popen([*cli, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          preexec_fn=closed_stderr) as server:  # fmt: skip
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(hello).encode() + b"\n")
        server.stdin.flush()
        first = json.loads(server.stdout.readline())
        server.stdin.close()
        server.wait(30)
    assert first["id"] == 0 and "result" in first


def test_commands_get_no_character_type_python_set_for_itself(state_dir: Path) -> None:
    """Under a C locale Python sets LC_CTYPE=C.UTF-8 in its own environment (PEP 538):
    commands ran with a UTF-8 character type their caller had not (`wc -m`, `tr`, grep's
    classes; a trial). They get the caller's: none, or the one it gave."""
    cli = [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir)]
    base = {"PATH": os.environ["PATH"], "LANG": "C"}
    shown = "env | grep -E '^(LC_|LANG=)' | sort; printf '\\303\\251' | wc -m"
    for given, expected in (({}, "LANG=C\n2\n"), ({"LC_CTYPE": "C"}, "LANG=C\nLC_CTYPE=C\n2\n"),
                            ({"LC_ALL": "C.UTF-8"}, "LANG=C\nLC_ALL=C.UTF-8\n1\n")):  # fmt: skip
        r = subprocess.run([*cli, "run", "--", shown], capture_output=True, text=True,
                           timeout=60, env={**base, **given})  # fmt: skip
        assert (r.returncode, r.stdout) == (0, expected), (given, r)
    # One set since Python started, where it coerced nothing, is the caller's own.
    script = ("import os; from wave_bash.api.connection import caller_environment as e; "
              "os.environ['LC_CTYPE'] = 'C.UTF-8'; print(e().get('LC_CTYPE'))")  # fmt: skip
    for start in ({"LANG": "C.UTF-8"}, {"LC_ALL": "C"}):
        kept = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=60, env={"PATH": os.environ["PATH"], **start})  # fmt: skip
        assert kept.stdout == "C.UTF-8\n", (start, kept)


def test_run_loads_only_what_its_quick_path_needs(state_dir: Path) -> None:
    """`wave-bash run` is an agent's durable runner, started from its shell for every
    command: its start-up is a benchmark's row (≤ 1.5× a bare Python). typing alone cost
    it 4 ms when it came back through the output printer; pydantic and asyncio cost more."""
    probe = (
        "import sys\n"
        "from wave_bash.api.cli import main\n"
        "main(['run', '--', 'true'])\n"
        "heavy = ('typing', 'pydantic', 'asyncio', 'mcp', 'base64', 'subprocess')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    assert run_cli(state_dir, "run", "--", "true").returncode == 0  # (its supervisor started)
    r = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )
    assert r.stdout.splitlines()[-1:] == ["[]"], (r.stdout, r.stderr)


def test_a_command_starts_where_the_callers_shell_says_it_is(
    state_dir: Path, tmp_path: Path
) -> None:
    """In a directory reached through a link, `pwd` said the link's target and `cd ..`
    went to the target's parent, where `bash -c` keeps the caller's path (a trial): the
    caller's `$PWD` is taken where it names the working directory, as bash takes it."""
    real = tmp_path / "real" / "proj"
    real.mkdir(parents=True)
    link = tmp_path / "proj"
    link.symlink_to(real)
    line = [sys.executable, "-m", "wave_bash.api.cli", "run", "--", "pwd; cd ..; pwd"]
    env = {**os.environ, "WAVE_STATE_DIR": str(state_dir)}
    for pwd, said in ((link, [link, tmp_path]), (tmp_path, [real, real.parent])):
        done = subprocess.run(line, cwd=link, env={**env, "PWD": str(pwd)},
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.stdout.split() == [str(p) for p in said], (pwd, done)  # (a stale one: not)


def test_wait_takes_several_tasks(state_dir: Path) -> None:
    """`wait a b` was refused (a trial), where bash's and pueue's `wait` take several:
    each is waited for within the one timeout; the exit says the first that did not
    succeed, so `wait $A $B && deploy` deploys only after both did."""
    client = Client(state_dir=state_dir)
    failed, done = start_bg(client, "exit 3"), start_bg(client, "true")
    slow = start_bg(client, "sleep 30")
    try:
        both = run_cli(state_dir, "wait", done, failed, done)  # (each once)
        assert (both.returncode, both.stdout.splitlines()) == (
            3, [f"{done} completed (exit code 0)", f"{failed} failed (exit code 3)"],
        )  # fmt: skip
        assert run_cli(state_dir, "wait", done, done).returncode == 0
        timed = run_cli(state_dir, "wait", done, slow, "--timeout", "300")
        assert (timed.returncode, timed.stdout.splitlines()[-1]) == (124, f"{slow} running")
        unknown = run_cli(state_dir, "wait", slow, "nosuch")  # (said before any wait)
        assert (unknown.returncode, unknown.stdout) == (2, "")
        listed = json.loads(run_cli(state_dir, "wait", done, failed, "--json").stdout)
        assert [r["id"] for r in listed] == [done, failed]
    finally:
        client.task_stop(slow)
