"""The foreground Bash path end to end through Client (SPEC F1–F3, SH1, E2, E3, R)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ask_supervisor, needs_tool, task_alive, wait_until

from wave_bash.api import MAX_OUTPUT_CHARS, Client, texts
from wave_bash.api.connection import caller_environment
from wave_bash.api.errors import InvalidInputError
from wave_bash.worker.monitor import direct_program


def test_echo_hello(client: Client) -> None:
    r = client.bash("echo hello")
    assert (r.success, r.stdout, r.exit_code, r.message) == (True, "hello", 0, "hello")
    assert Path(r.output_path or "").read_text() == "hello\n"


def test_bash_isms_work(client: Client) -> None:
    r = client.bash(
        "comm -23 <(printf 'a\\nb\\n') <(echo b); [[ 1 == 1 ]] && arr=(x y z); echo ${arr[2]}"
    )
    assert r.exit_code == 0, r.message
    assert r.stdout == "a\nz"


def test_not_a_login_or_interactive_shell(client: Client) -> None:
    r = client.bash("shopt -q login_shell && echo login || echo plain; echo flags=$-")
    assert r.stdout.splitlines()[0] == "plain"
    assert "i" not in r.stdout.splitlines()[1].removeprefix("flags=")


def test_stdin_is_empty_and_no_terminal(client: Client) -> None:
    r = client.bash("cat; read x; echo read=$?; tty || true")
    assert r.stdout.splitlines() == ["read=1", "not a tty"]


def test_command_sees_no_monitor_helpers(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("c", "callers-own")  # a caller's variable of any name gets through
    r = client.bash('echo "$#|${1-none}|${c-unset}|$0"; set | grep -c "^__wave" || true')
    assert r.stdout == "0|none|callers-own|bash\n0"


def test_own_process_group_and_session(client: Client) -> None:
    r = client.bash("ps -o pgid=,sid= -p $BASHPID")
    pgid, sid = (int(x) for x in r.stdout.split())
    assert pgid != os.getpgid(0) and sid != os.getsid(0)
    assert pgid != sid  # the job has its own group inside the monitor's session


def test_exit_codes_and_message(client: Client) -> None:
    r = client.bash("echo out; exit 3")
    assert (r.success, r.exit_code) == (False, 3)
    assert r.message == "out\nExit code 3"
    assert client.bash("false").message == "Exit code 1"
    assert client.bash("exec sh -c 'exit 7'").exit_code == 7


def test_stdout_and_stderr_interleave_in_order(client: Client) -> None:
    r = client.bash("echo a; echo b >&2; echo c; echo d >&2")
    assert r.stdout == "a\nb\nc\nd"
    assert r.stderr == ""


def test_separate_streams_on_request(client: Client) -> None:
    r = client.bash("echo a; echo b >&2", separate_stderr=True)
    assert (r.stdout, r.stderr) == ("a", "b")


def test_environment(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WAVE_TEST_MARK", "from-caller")
    monkeypatch.delenv("PAGER", raising=False)
    r = client.bash('echo "$WAVE_TEST_MARK $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $WAVE_TASK_ID"')
    mark, pager, git_pager, prompt, task_id = r.stdout.split()
    assert (mark, pager, git_pager, prompt) == ("from-caller", "cat", "cat", "0")
    assert task_id == Path(r.output_path or "").stem
    monkeypatch.setenv("PAGER", "less")
    assert client.bash("echo $PAGER").stdout == "less"  # the caller's own setting wins


def test_environment_changes_between_calls_are_seen(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's environment is decoded again only when it changed since the last
    call (each start saved 35–70 µs): a variable set, changed or removed since is seen,
    and a change to a copy handed out is not."""
    shown = 'echo "${WAVE_TEST_MARK-unset}"'
    monkeypatch.setenv("WAVE_TEST_MARK", "one")
    assert client.bash(shown).stdout == "one"
    monkeypatch.setenv("WAVE_TEST_MARK", "two")
    assert client.bash(shown).stdout == "two"
    monkeypatch.delenv("WAVE_TEST_MARK")
    assert client.bash(shown).stdout == "unset"
    caller_environment()["WAVE_TEST_MARK"] = "kept"
    assert client.bash(shown).stdout == "unset"


def test_a_variable_name_that_is_no_utf8_reaches_the_command_as_it_is(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name's undecodable bytes came as U+FFFD (pydantic's JSON mode rewrites a key's
    surrogates; its values it keeps), so two such names could become one (a trial)."""
    for name in (b"WAVE_NAME_\xe9", b"WAVE_NAME_\xe8"):
        monkeypatch.setitem(os.environb, name, b"v" + name[-1:])
    shown = "import os; print(sorted(i for i in os.environb.items() if b'_NAME_' in i[0]))"
    assert client.bash(f'python3 -c "{shown}"').stdout == (
        "[(b'WAVE_NAME_\\xe8', b'v\\xe8'), (b'WAVE_NAME_\\xe9', b'v\\xe9')]"
    )


def test_the_environment_is_read_whole_while_other_threads_change_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read name by name, a variable another thread removed meanwhile raised `KeyError`
    from a call (33 calls in 200, a trial); read as its names changed, the copy kept for
    the next calls could hold the old values under the new names. Each read is one copy,
    and the last one is the environment as it is."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # (threads switch often: the race shows at once)
    names = [f"WAVE_TEST_RACE{n}" for n in range(5)]
    for name in names:
        monkeypatch.setenv(name, "0")
    stop, failures = threading.Event(), []

    def change() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            os.environ[names[n % 5]] = str(n)
            os.environ.pop(names[(n + 2) % 5], None)

    def read() -> None:
        try:
            for _ in range(1000):
                caller_environment()
        except Exception as exc:  # (any: the test says which)
            failures.append(exc)

    changer = threading.Thread(target=change)
    readers = [threading.Thread(target=read) for _ in range(4)]
    try:
        changer.start()
        for thread in readers:
            thread.start()
        for thread in readers:
            thread.join(60)
    finally:
        stop.set()
        changer.join(10)
        sys.setswitchinterval(interval)
    assert failures == []
    env = caller_environment()
    assert {n: env.get(n) for n in names} == {n: os.environ.get(n) for n in names}


def test_timeout_moves_to_background_and_keeps_running(client: Client) -> None:
    r = client.bash("echo start; sleep 1.5; echo end", timeout=300)
    assert r.success and r.assistant_auto_backgrounded and not r.backgrounded_by_user
    assert not r.ends_turn
    tid = r.background_task_id
    assert tid and r.output_path
    assert r.message == texts.auto_backgrounded_text(tid, r.output_path, 300)
    assert r.message == (
        f"Command exceeded the timeout (0.3s) and was moved to the background with ID: {tid}. "
        "It is still running — you will be notified when it completes. "
        f"Output is being written to: {r.output_path}"
    )
    assert "timed out" not in r.message
    assert task_alive(tid)
    record = client.wait(tid, timeout=10_000)
    assert (record.status, record.exit_code, record.owner, record.background_reason) == (
        "completed",
        0,
        "background",
        "timeout",
    )
    assert Path(r.output_path).read_text() == "start\nend\n"


def test_sleep_is_terminated_on_timeout(client: Client) -> None:
    r = client.bash("sleep 30", timeout=300)
    assert r.success and r.interrupted
    assert not r.background_task_id and not r.assistant_auto_backgrounded
    assert r.message == "Command exceeded the timeout (0.3s) and was terminated."
    assert "timed out" not in r.message
    task_id = Path(r.output_path or "").stem
    assert not task_alive(task_id)
    (record,) = [t for t in client.tasks() if t.id == task_id]
    assert record.status == "killed"


def test_a_stop_under_way_as_a_sleep_times_out_is_the_results_end(client: Client) -> None:
    """A TaskStop that came first keeps its reason (B3): the result said the timeout
    terminated it, while its record said TaskStop (a trial)."""
    import concurrent.futures

    command = "sleep 0.1; trap '' TERM; echo armed; while :; do sleep 0.05; done"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        running = pool.submit(client.bash, command, timeout=2500)
        wait_until(lambda: any(t.command == command for t in client.tasks()))
        (task,) = [t for t in client.tasks() if t.command == command]
        wait_until(lambda: "armed" in Path(task.output_path).read_text())
        stopper = Client(state_dir=client.layout.root, session=client.session)
        stopped = pool.submit(stopper.task_stop, task.id)  # (its TERM ignored: 3 s)
        result, record = running.result(timeout=60), stopped.result(timeout=60)
    assert record.end_reason == "stopped"
    assert "stopped (TaskStop)" in result.message, result.message
    assert "exceeded the timeout" not in result.message


def test_timeout_above_advertised_ceiling_runs_as_given(client: Client) -> None:
    r = client.bash("echo ok", timeout=900_000)
    assert r.success and r.stdout == "ok"
    r = client.bash("echo zero", timeout=0)  # 0 is a valid timeout: executed as given
    assert r.success


@pytest.mark.parametrize("huge", [1e13, 1e20, 1e300])
def test_a_huge_timeout_is_waited_as_given(client: Client, huge: float) -> None:
    """A finite timeout of any size is valid (T4): the call waits for the command's end,
    where a socket timeout that long overflowed (an error after the command had run)."""
    r = client.bash("sleep 0.2; echo ok", timeout=huge)
    assert r.success and r.stdout == "ok"
    task = client.bash("sleep 0.2", run_in_background=True).background_task_id or ""
    assert client.task_output(task, timeout=huge).status == "completed"


@pytest.mark.parametrize("bad", ["5000", True, False, float("nan"), float("inf"), -1, [], {}])
def test_bad_timeouts_are_rejected_without_running(client: Client, bad: object) -> None:
    r = client.bash("echo should-not-run", timeout=bad)  # type: ignore[arg-type]
    assert not r.success and r.error
    assert "timeout must be a non-negative number of milliseconds" in r.error
    assert "600000" not in r.error and "600" not in r.error.replace("600000", "")
    assert client.tasks(all=True) == []


@pytest.mark.parametrize(
    ("command", "words"), [("", "empty"), ("   \n", "empty"), ("echo a\x00b", "NUL")]
)
def test_bad_commands_are_rejected(client: Client, command: str, words: str) -> None:
    r = client.bash(command)
    assert not r.success and words in (r.error or "")
    assert client.tasks(all=True) == []


def test_cwd_change_is_reported_and_temp_file_removed(
    client: Client, workdir: Path, state_dir: Path
) -> None:
    seen: list[str] = []
    c = Client(state_dir=state_dir, cwd=workdir, on_cwd_change=seen.append)
    before = sorted(os.listdir(workdir))
    r = c.bash("pwd; cd /usr/share")
    assert r.stdout == str(workdir.resolve())
    assert r.cwd == "/usr/share" and seen == ["/usr/share"]
    assert c.bash("pwd").stdout == str(workdir.resolve())  # follow_cd is off by default
    assert sorted(os.listdir(workdir)) == before
    assert not list((state_dir / "tasks").glob("*.cwd"))
    assert c.bash("true").cwd is None  # unchanged → no cwd field


GONE = "cd {gone} && rmdir {gone} && "
"""A command that removes the directory it ends in: the capture's `pwd -P` fails."""


@pytest.mark.parametrize(
    ("setup", "errexit"),
    [
        (GONE, True),  # the caller's errexit (SHELLOPTS) held in the capture: status 1
        ("trap 'echo ERR-TRAP; exit 9' ERR; " + GONE, False),  # the command's ERR trap ran
        ("ulimit -f 0; cd {gone} && ", False),  # the capture's write was killed: SIGXFSZ
    ],
)
@pytest.mark.parametrize("last", ["true", "(exit 3)"])
def test_a_failed_cwd_capture_never_changes_the_result(
    state_dir: Path, tmp_path: Path, setup: str, errexit: bool, last: str
) -> None:
    """The capture of the final directory fails (the command removed it, or a file-size
    limit refuses the write): the result stays what `bash -c` gives."""
    env = {**os.environ, "SHELLOPTS": "errexit"} if errexit else dict(os.environ)
    gone = tmp_path / "gone"
    command = setup.format(gone=gone) + last
    gone.mkdir()
    expected = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True)
    gone.mkdir(exist_ok=True)
    r = Client(state_dir=state_dir, env=env).bash(command)
    assert (r.exit_code, r.stdout) == (expected.returncode, expected.stdout.rstrip("\n"))


def test_follow_cd(state_dir: Path, workdir: Path) -> None:
    c = Client(state_dir=state_dir, cwd=workdir, follow_cd=True)
    c.bash("cd /usr")
    assert c.bash("pwd").stdout == "/usr"


def test_cwd_capture_survives_exit_and_deleted_directory(client: Client, workdir: Path) -> None:
    gone = workdir / "gone"
    gone.mkdir()
    c = Client(state_dir=client.layout.root, cwd=workdir)
    r = c.bash(f"cd {gone} && rmdir {gone} && echo bye")
    assert (r.success, r.stdout, r.cwd) == (True, "bye", str(workdir))
    # (said: a follow-cd caller's next command ran where it had been, and nothing said
    # why, a trial)
    assert r.message.splitlines()[0] == (
        f"Note: the command ended in {gone}, which no longer exists; the working directory "
        f"stays {workdir}."
    )
    r = c.bash("cd /tmp; exit 4")
    assert (r.exit_code, r.cwd) == (4, "/tmp")
    gone.mkdir()  # (where it started is gone too: it "stayed" there, a review)
    r = Client(state_dir=client.layout.root, cwd=gone).bash(f"rmdir {gone} && echo bye")
    assert r.message.splitlines()[0] == (
        f"Note: the directory the command ran in, {gone}, no longer exists (the nearest "
        f"directory above that exists: {workdir})."
    )
    gone.mkdir()  # (a lone command is exec'd: its trap never runs, nothing is captured,
    r = Client(state_dir=client.layout.root, cwd=gone).bash(f"rmdir {gone}")  # a review)
    assert r.message == (
        f"Note: the directory the command ran in, {gone}, no longer exists (the nearest "
        f"directory above that exists: {workdir})."
    )


def test_missing_cwd_is_a_clear_error(state_dir: Path) -> None:
    r = Client(state_dir=state_dir, cwd="/nonexistent/dir").bash("echo hi")
    assert not r.success and "working directory does not exist: /nonexistent/dir" in (r.error or "")
    a_file = state_dir / "journal.db"  # there, but no directory
    r = Client(state_dir=state_dir, cwd=a_file).bash("echo hi")
    assert not r.success and f"working directory is not a directory: {a_file}" in (r.error or "")
    answer = ask_supervisor(state_dir, "run", {"session": "s", "command": "pwd", "cwd": "."})
    assert answer["message"] == "working directory must be an absolute path: ."


def test_a_relative_cwd_is_this_process_s(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Client(cwd=".")` was refused as a directory that does not exist (a trial): it
    is where the caller is, as subprocess reads it (the supervisor's own cwd differs)."""
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    assert Client(state_dir=state_dir, cwd=".").bash("pwd -P").stdout == str(tmp_path.resolve())
    assert Client(state_dir=state_dir, cwd="sub").bash("pwd -P").stdout.endswith("/sub")


def test_zsh_via_wave_shell(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    zsh = needs_tool("zsh", "zsh")
    monkeypatch.setenv("WAVE_SHELL", zsh)
    r = client.bash('echo "zsh=${ZSH_VERSION:+yes} $#"; cd /usr; exit 5')
    assert (r.stdout, r.exit_code, r.cwd) == ("zsh=yes 0", 5, "/usr")


def test_a_misspelt_wave_shell_is_said_and_nothing_runs(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """WAVE_SHELL=zhs ran the command with bash, without a word (a trial)."""
    monkeypatch.setenv("WAVE_SHELL", "zhs")
    r = client.bash(f"touch {tmp_path}/ran")
    assert (r.success, r.exit_code) == (False, None)
    assert "WAVE_SHELL is set to zhs, which is not an executable bash or zsh" in str(r.error)
    assert not (tmp_path / "ran").exists()


def test_shell_from_dollar_shell_zsh(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAVE_SHELL", raising=False)
    monkeypatch.setenv("SHELL", needs_tool("zsh", "zsh"))
    assert client.bash("echo ${ZSH_VERSION:+zsh}").stdout == "zsh"


def test_falls_back_to_bin_bash_never_sh(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # No bash on PATH and $SHELL=/bin/sh: /bin/bash is the last resort, /bin/sh never is.
    # (The "none found" error itself is covered with injected lookups in test_shell_resolution.)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("SHELL", "/bin/sh")
    monkeypatch.delenv("WAVE_SHELL", raising=False)
    r = client.bash("echo ${BASH_VERSION:+bash}")
    assert r.stdout == "bash"


def test_output_is_cleaned(client: Client) -> None:
    r = client.bash(
        r"printf '\033[31mred\033[0m\n10%%\r50%%\r100%%\n\033]0;title\007ok\n\377\376end\n'"
    )
    assert r.stdout == "red\n100%\nok\n\ufffd\ufffdend"


def test_long_output_keeps_head_and_tail(client: Client) -> None:
    r = client.bash("echo FIRST; seq 1 50000; echo LAST")  # ~290 KB
    assert r.truncated and r.success
    assert len(r.stdout) <= MAX_OUTPUT_CHARS
    assert r.stdout.startswith("FIRST\n1\n2\n")
    assert r.stdout.endswith("49999\n50000\nLAST")
    assert f"full output: {r.output_path}" in r.stdout
    assert "characters omitted" in r.stdout
    assert Path(r.output_path or "").read_text().count("\n") == 50002


def test_result_json_uses_contract_names(client: Client) -> None:
    data = client.bash("echo hi").to_json_dict()
    for key in (
        "success",
        "stdout",
        "stderr",
        "exitCode",
        "interrupted",
        "backgroundTaskId",
        "backgroundedByUser",
        "assistantAutoBackgrounded",
        "outputPath",
        "truncated",
        "cwd",
        "durationMs",
        "message",
        "error",
    ):
        assert key in data


def test_single_supervisor_serves_many_calls(client: Client, state_dir: Path) -> None:
    from conftest import supervisor_pids

    for _ in range(5):
        assert client.bash("true").success
    wait_until(lambda: len(supervisor_pids(state_dir)) == 1)
    assert client.status().pid == supervisor_pids(state_dir)[0]


def test_command_gets_the_callers_umask(client: Client, workdir: Path) -> None:
    old = os.umask(0o022)
    try:
        client.status()  # the supervisor starts with umask 022 ...
        os.umask(0o027)  # ... and the caller's changes later
        c = Client(state_dir=client.layout.root, cwd=workdir)
        assert c.bash("umask; touch made; stat -c %a made").stdout == "0027\n640"
    finally:
        os.umask(old)


def test_default_signal_dispositions(client: Client) -> None:
    r = client.bash('yes | head -n 1; echo "yes exited ${PIPESTATUS[0]}"')
    assert r.stdout == "y\nyes exited 141"  # killed by SIGPIPE: not ignored as in Python


@pytest.mark.parametrize("session", ["two\nlines", "a\ud800", "x" * 201])
def test_bad_session_names_are_rejected(state_dir: Path, session: str) -> None:
    with pytest.raises(InvalidInputError, match="session"):
        Client(state_dir=state_dir, session=session)
    Client(state_dir=state_dir).status()
    answer = ask_supervisor(state_dir, "tasks", {"session": session})  # and at its door
    assert answer["type"] == "error" and "session" in answer["message"], answer


@pytest.mark.parametrize(
    ("command", "given"),
    [
        ("ls /nonexistent-dir", {}),
        ("no-such-program-x arg", {}),  # (bash's own message, not exec's)
        ("cd /tmp", {}),  # builtins stay builtins
        ("echo plain words: a=b c,d @e %f +g", {}),
        ("sleep 0", {}),
        ("noshebang-x one", {}),  # a script without `#!` still runs (as bash runs it)
        ("sleep-fn 0", {}),  # an exported function of the caller, not a program
        # found by a review: the caller's environment must not change what runs
        ("cd /tmp && pwd", {"__wave_x": "ls"}),
        ("sleep 0; echo two", {"__wave_x": "sleep"}),
        ("cd /tmp", {"BASH_CMDS": "x"}),  # (a string, not bash's table)
        ("sleep-fn 0", {"BASH_CMDS": "x"}),
        ("dollar0-x", {"PATH": "bin:/usr/bin:/bin"}),  # `$0` as the relative PATH has it
    ],
)
@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_a_plain_program_runs_as_under_bash_c(
    state_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    given: dict[str, str],
    tracking: str,
) -> None:
    """A command that is one program and plain words is exec'd by its job (a process
    fewer): what it prints and its status are what `bash -c` gives."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "noshebang-x").write_text('echo "no shebang: $0 $1"\n')
    (bin_dir / "sleep-fn").write_text("#!/bin/sh\necho the program, not the function\n")
    (bin_dir / "dollar0-x").write_text('#!/bin/sh\necho "I am $0"\n')
    for script in bin_dir.iterdir():
        script.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "BASH_FUNC_sleep-fn%%": '() { echo "the function $1"; }',
        **given,
    }
    expected = subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=30
    )
    r = Client(state_dir=state_dir, env=env, cwd=tmp_path).bash(command)
    theirs = (expected.stdout + expected.stderr).rstrip("\n")
    assert (r.exit_code, r.stdout) == (expected.returncode, theirs)


def test_an_execd_program_has_the_environment_a_shell_gives_it(client: Client) -> None:
    """The same variables as a program its shell forks, `_` (its path) included; `time`
    stays the keyword (not /usr/bin/time)."""

    def variables(command: str) -> list[str]:
        lines = client.bash(command).stdout.splitlines()
        return sorted(line for line in lines if not line.startswith("WAVE_TASK_ID="))

    assert variables("env") == variables("env; :")
    assert "_=" + shutil.which("env", path=client.bash("echo $PATH").stdout) in variables("env")
    timed = client.bash("time sleep 0")
    assert [line.split("\t")[0] for line in timed.stdout.splitlines()] == ["real", "user", "sys"]


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_a_plain_program_is_its_tasks_job(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """`sleep 600` runs as its monitor's only child, no shell between (as `bash -c`
    execs it); a stop ends it as any task."""
    import psutil

    monkeypatch.setenv("WAVE_TRACKING", tracking)
    for env, tree in (
        (None, ["sleep"]),
        ({**os.environ, "SHELLOPTS": "errexit"}, ["bash", "sleep"]),
    ):
        # (with one of the caller's options, its shell runs it as before)
        client = Client(state_dir=state_dir, env=env)
        task_id = client.bash("sleep 600", run_in_background=True).background_task_id or ""
        record = next(r for r in client.tasks() if r.id == task_id)
        monitor = psutil.Process(record.pid or 0)
        sleeps = wait_until(
            lambda m=monitor: [c for c in m.children(recursive=True) if c.name() == "sleep"]
        )
        assert [c.name() for c in monitor.children(recursive=True)] == tree
        assert sleeps[0].cmdline() == ["sleep", "600"]
        assert client.task_stop(task_id).status == "killed"


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("sleep 600", "sleep"),
        ("  pytest -x tests/unit --maxfail=1 ", "pytest"),
        ("make CC=gcc -j4", "make"),
        ("npm run test:unit", "npm"),
        ("time sleep 1", None),  # a keyword
        ("FOO=1 make", None),  # an assignment
        ("./build.sh", None),  # a path: its errors read differently under `exec`
        ("echo $HOME", None),
        ("ls *.py", None),
        ("echo ~", None),
        ("git commit -m 'a b'", None),
        ("make && make test", None),
        ("make > log", None),
        ("echo {a,b}", None),
        ("sleep 1\nsleep 2", None),
        ("make # comment", None),
    ],
)
def test_which_commands_are_one_plain_program(command: str, program: str | None) -> None:
    assert direct_program(command) == program


def test_setsid_program_leaves_it_running_as_under_a_group_leading_bash_c(
    client: Client,
) -> None:
    """The exec'd program leads the task's process group, as a `bash -c` that leads its
    own does: `setsid` forks, returns, and the result says what it left running."""
    t = time.monotonic()
    r = client.bash("setsid sleep 30")
    assert (r.exit_code, time.monotonic() - t < 20) == (0, True)
    assert "1 process it started is still running" in r.message
    assert r.leftover_processes == 1  # (counted for a program too)
    task_id = client.tasks()[-1].id
    assert client.task_stop(task_id).stopped_processes == 1


def test_a_child_killed_before_it_execs_leaves_no_directory_note(client: Client) -> None:
    """bash runs its EXIT trap in a forked child that a signal kills before it execs: the
    job's directory capture wrote its lines too, read as a garbled directory, "ended in
    /x\\n/x, which no longer exists" (a trial, 4 runs of 5)."""
    r = client.bash("for i in $(seq 20); do sleep 30 & kill $!; done; wait; echo done")
    assert r.stdout.endswith("done") and "no longer exists" not in r.message, r.message
    assert "ended in" not in r.message


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_a_command_gets_the_callers_oldpwd(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """The monitor's `cd` into the command's directory set OLDPWD to `/` (and exported
    it): `cd -` went to `/` with status 0, where under `bash -c` it goes back to the
    caller's OLDPWD, or fails when the caller has none (a trial)."""
    monkeypatch.setenv("WAVE_TRACKING", tracking)
    monkeypatch.setenv("OLDPWD", "/usr")
    r = Client(state_dir=state_dir).bash("echo $OLDPWD; cd - >/dev/null; pwd")
    assert r.stdout == "/usr\n/usr"
    monkeypatch.delenv("OLDPWD")
    r = Client(state_dir=state_dir).bash(
        "echo ${OLDPWD-unset}; env | grep -c ^OLDPWD=; declare -p OLDPWD; cd -"
    )  # (exported with no value, as bash -c has it)
    assert (r.exit_code, r.stdout.split("\n")[:3]) == (1, ["unset", "0", "declare -x OLDPWD"]), r
