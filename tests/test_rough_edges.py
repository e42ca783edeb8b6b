"""Rough edges real hosts hit (issue 12 §5, §7, §8)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, start_bg
from mcp import ClientSession
from test_mcp import run, text

from wave_bash.api import Client, tool_definitions


def test_follow_cd_into_a_deleted_directory_recovers(state_dir: Path, tmp_path: Path) -> None:
    client = Client(state_dir=state_dir, cwd=tmp_path, follow_cd=True)
    gone = tmp_path / "a" / "b"
    gone.mkdir(parents=True)
    assert client.bash(f"cd {gone}").cwd == str(gone)
    shutil.rmtree(tmp_path / "a")
    r = client.bash("pwd")
    assert r.success and r.stdout == str(tmp_path)  # the nearest existing ancestor
    assert r.message.splitlines()[0] == (
        f"Note: the working directory {gone} no longer exists; this command ran in {tmp_path}."
    )
    assert client.cwd == str(tmp_path)
    assert client.bash("cd /; pwd").stdout == "/"  # and cd works again
    gone.mkdir(parents=True)
    client.bash(f"cd {gone}")
    shutil.rmtree(tmp_path / "a")
    bg = client.bash("pwd", run_in_background=True)
    assert bg.success and bg.background_task_id and "no longer exists" in bg.message
    # Without --follow-cd a missing directory is still an error: the caller named it.
    r = Client(state_dir=state_dir, cwd=gone).bash("pwd")
    assert not r.success and "does not exist" in (r.error or "")


def test_a_current_directory_deleted_under_the_caller_falls_back_to_its_ancestor(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's own directory (the default, not one it named) deleted under it: a
    command runs in the nearest existing ancestor and says so, as after a followed `cd`;
    in the directory again when it was made anew. Before, `os.getcwd()` raised: a
    traceback from the CLI, and every later call of an MCP server failed. Found by a
    reviewer."""
    gone = tmp_path / "a" / "b"
    gone.mkdir(parents=True)
    note = f"Note: the working directory {gone} no longer exists; this command ran in {tmp_path}."
    cli = [sys.executable, "-m", "wave_bash.api.cli", "run", "--", "pwd"]
    script = f'cd {gone} && rm -r {tmp_path / "a"} && exec "$@"'
    env = {**os.environ, "WAVE_STATE_DIR": str(state_dir)}
    done = subprocess.run(
        ["bash", "-c", script, "bash", *cli], capture_output=True, text=True, env=env, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"{tmp_path}\n",
        f"wave-bash: {note}\n",
    )
    gone.mkdir(parents=True)
    monkeypatch.chdir(gone)
    monkeypatch.setenv("PWD", str(gone))  # (what a shell sets; chdir does not)
    shutil.rmtree(tmp_path / "a")
    client = Client(state_dir=state_dir)  # as the MCP server's: no directory named
    r = client.bash("pwd")
    assert r.success and r.stdout == str(tmp_path) and r.message.splitlines()[0] == note
    gone.mkdir(parents=True)  # made anew at the same path: the command runs there
    r = client.bash("pwd")
    assert r.stdout == str(gone) and "no longer exists" not in r.message
    shutil.rmtree(tmp_path / "a")
    monkeypatch.delenv("PWD")
    r = client.bash("pwd")
    assert not r.success and "current directory no longer exists" in (r.error or "")


def test_follow_cd_is_in_the_tool_description(state_dir: Path) -> None:
    listed = run(state_dir, lambda s: s.list_tools(), "--session", "t", "--follow-cd")
    bash = next(t for t in listed.tools if t.name == "Bash")
    assert "`cd` carries over" in (bash.description or "")
    plain = next(t for t in tool_definitions("mcp") if t["name"] == "Bash")
    assert "`cd` do not carry over" in plain["description"]


def test_null_means_not_given_and_task_stop_requires_task_id(state_dir: Path) -> None:
    client = Client(state_dir=state_dir)
    tid = start_bg(client, "echo out")
    client.wait(tid, timeout=10_000)
    out = client.call_tool("TaskOutput", {"task_id": tid, "block": None, "timeout": None})
    assert out["output"] == "out"
    stop = next(t for t in tool_definitions("openai") if t["function"]["name"] == "TaskStop")
    params = stop["function"]["parameters"]
    assert params["required"] == ["task_id"] and set(params["properties"]) == {"task_id"}
    sleeper = start_bg(client, "sleep 60")
    assert client.call_tool("TaskStop", {"shell_id": sleeper})["status"] == "killed"

    async def scenario(s: ClientSession) -> str:
        return text(await s.call_tool("TaskOutput", {"task_id": tid, "block": None}))

    assert "Status: completed" in run(state_dir, scenario, "--session", "t")


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_error_lines_count_from_one(state_dir: Path, shell: str) -> None:
    client = Client(state_dir=state_dir, env={**os.environ, "WAVE_SHELL": shell})
    missing = client.bash("sudo_not_here_xyz").stdout
    second = client.bash("true\nsudo_not_here_xyz").stdout
    if shell == "bash":
        assert missing == "bash: line 1: sudo_not_here_xyz: command not found"
        assert second == "bash: line 2: sudo_not_here_xyz: command not found"
        syntax = client.bash("echo (").stdout
        assert "line 1: syntax error" in syntax and "__wave" not in syntax
        assert syntax.splitlines()[-1] == "bash: eval: line 1: `echo ('"  # its line alone
        for dashed in ("-n", "--version", "-- echo hi"):  # a command, not eval's options
            r = client.bash(dashed)
            assert r.exit_code == 127 and r.stdout.endswith(": command not found"), dashed
    else:
        # (zsh gets the command in its environment, never its argv, and evals it)
        assert missing == "(eval):1: command not found: sudo_not_here_xyz"
        assert second == "(eval):2: command not found: sudo_not_here_xyz"
        r = client.bash("echo one; )")  # a syntax error fails, as under zsh -c
        assert (r.exit_code, r.stdout) == (1, "(eval):1: parse error near `)'")
        nested = client.bash("zsh() { command zsh -f \"$@\"; }; zsh -c 'echo in $0'; print $0")
        assert nested.stdout.splitlines() == ["in zsh", "zsh"]


_NO_EDITOR_LINE = (
    "wave-bash: no editor can open here (no terminal): give the text on the command line "
    "instead, e.g. git commit -m MESSAGE; or run the command on a terminal (interactive; "
    "wave-bash run -i)"
)


def test_an_editor_fails_at_once_with_one_line(state_dir: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if "EDITOR" not in k and k != "VISUAL"}
    env |= {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@b", "HOME": str(tmp_path)}  # fmt: skip
    client = Client(state_dir=state_dir, cwd=tmp_path, env=env)
    started = time.monotonic()
    r = client.bash("git init -q . && touch f && git add f && git commit -q")
    assert time.monotonic() - started < 10 and r.exit_code != 0
    assert "no editor can open here" in r.stdout and "~" not in r.stdout.splitlines()
    own = client.bash("echo $EDITOR", run_in_background=False)
    assert "wave-bash-no-editor" in own.stdout
    # A program, not a `sh -c '…'` line: scripts call it in every way (a trial's `$EDITOR
    # f` said "Unterminated quoted string", `"$EDITOR" f` "command not found")
    for call in ("$EDITOR f", '"$EDITOR" f', '"$VISUAL" f', 'sh -c "$GIT_EDITOR f"'):
        r = client.bash(call)
        assert (r.exit_code, r.stdout.splitlines()[0]) == (1, _NO_EDITOR_LINE), call
    # The way round it for what git gave it (`git rebase -i` was told of `commit -m`)
    client.bash("touch g && git add g && git commit -qm one && touch h && git add h && "
                "git commit -qm 'fixup! one'")  # fmt: skip
    rebase = client.bash("git rebase -i --root")
    assert rebase.exit_code != 0 and "GIT_SEQUENCE_EDITOR" in rebase.stdout, rebase.stdout
    squashed = client.bash("GIT_SEQUENCE_EDITOR=true git rebase -q -i --autosquash --root")
    assert client.bash("git log --format=%s").stdout == "one", squashed.stdout
    mine = Client(state_dir=state_dir, env={**env, "EDITOR": "nano"}).bash("echo $EDITOR")
    assert mine.stdout == "nano"  # the caller's own choice stands
    # On a terminal an editor reads keys (TaskInput, attach): git's own (`git rebase -i`
    # failed saying there was no terminal, and `EDITOR=vi` lost to the
    # GIT_SEQUENCE_EDITOR set: a trial); the caller's own stands there too
    shown = (
        'echo "${EDITOR-unset} ${VISUAL-unset} ${GIT_EDITOR-unset} ${GIT_SEQUENCE_EDITOR-unset}"'
    )
    assert client.bash(shown, interactive=True).stdout == "vi unset unset unset"
    mine = Client(state_dir=state_dir, env={**env, "EDITOR": "nano"})
    assert mine.bash(shown, interactive=True).stdout == "nano unset unset unset"


def test_binary_output_is_one_line(state_dir: Path) -> None:
    client = Client(state_dir=state_dir)
    r = client.bash("head -c 4096 /dev/urandom | tr '\\n' '\\0'")  # (no line: no text around)
    assert r.stdout == f"[binary output, 4096 bytes: not shown; full output: {r.output_path}]"
    listing = client.bash('for i in $(seq 1 20); do printf "file_$i.txt\\0"; done').stdout
    assert listing.startswith("file_1.txtfile_2.txt")  # `find -print0`: text with NULs


def test_notice_of_a_huge_command_is_short(state_dir: Path) -> None:
    client = Client(state_dir=state_dir)
    heredoc = "cat > /dev/null <<'EOF'\n" + "x" * 100_000 + "\nEOF"
    tid = start_bg(client, heredoc)
    client.wait(tid, timeout=10_000)
    (notice,) = client.notifications()
    assert len(notice.message) < 400 and len(notice.command) <= 200
    assert "cat > /dev/null <<'EOF' …" in notice.message


def test_cli_exits_quietly_when_its_reader_goes_away() -> None:
    r = subprocess.run(
        f"{sys.executable} -m wave_bash.api.cli schema | head -1", shell=True, capture_output=True,
        text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert r.stdout == "[\n" and r.stderr == ""


def test_run_whose_reader_goes_away_exits_as_its_command(state_dir: Path) -> None:
    """`run -- CMD | head -1` exited 0 quietly, whatever CMD's status (a review): a
    pipefail script took a failed command for a success. Quietly, with its status (its
    lines in one write: one after its reader went would get SIGPIPE, as in a pipe)."""
    run = f"{sys.executable} -m wave_bash.api.cli run -- 'printf \"%s\\n\" 1 2 3; exit 3' | head -1"
    r = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {run}"], capture_output=True, text=True,
        timeout=60, env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (3, "1\n", "")


def test_a_run_whose_reader_went_away_gets_sigpipe_as_it_next_writes(
    state_dir: Path, tmp_path: Path
) -> None:
    """`run -- yes | head -1` ran on until its log reached its cap (a gigabyte), and a
    command writing a line a second until its timeout (a trial): the command writes to
    its log, not the pipe, and never got the SIGPIPE a pipe's writer gets. It gets it
    now as it next writes after its reader went away; silent work before goes on."""
    env = {**os.environ, "WAVE_STATE_DIR": str(state_dir)}
    cli = f"{sys.executable} -m wave_bash.api.cli run --"
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {cli} yes | head -1"],
                       capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (141, "y\n", "")
    client = Client(state_dir=state_dir)
    (task,) = client.tasks()
    assert (task.status, task.exit_code) == ("killed", 141)
    before, after = tmp_path / "before", tmp_path / "after"
    work = f"'sleep 1; touch {before}; echo line; sleep 30; touch {after}'"
    r = subprocess.run(["bash", "-c", f"set -o pipefail; {cli} {work} | true"],
                       capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
    assert r.returncode == 141 and before.exists() and not after.exists()
    assert [t.status for t in client.tasks()] == ["killed", "killed"]


def test_input_whose_reader_goes_away_exits_as_its_task(state_dir: Path) -> None:
    """`input ID x | head -c 20` exited 0 whatever the task's status, its reader gone (a
    new user's trial); as `run`: quietly, with the task's exit code."""
    client = Client(state_dir=state_dir)
    task_id = client.bash(
        "read -n1 x; seq 1 20000; exit 5", timeout=60_000, interactive=True
    ).background_task_id
    assert task_id
    typed = f"{sys.executable} -m wave_bash.api.cli input -n {task_id} a | true"  # (gone first)
    r = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {typed}"], capture_output=True, text=True,
        timeout=60, env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert (r.returncode, r.stderr) == (5, "")


def test_size_without_interactive_names_the_cli_options(state_dir: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "run", "--size", "80x24", "--", "true"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "WAVE_STATE_DIR": str(state_dir)},
    )  # fmt: skip
    assert (r.returncode, r.stderr) == (
        2,
        "wave-bash: --size is only for interactive commands (run -i)\n",
    )


def test_bad_arguments_to_the_python_client_are_wave_errors(client: Client) -> None:
    """A caller catching WaveError (as call_tool documents) never meets pydantic's error."""
    from wave_bash.api import InvalidInputError

    calls = [
        lambda: client.task_output("abc", block="x"),  # type: ignore[arg-type]
        lambda: client.task_output(123),  # type: ignore[arg-type]
        lambda: client.task_stop(None),  # type: ignore[arg-type]
        lambda: client.gc(older_than="bogus"),  # type: ignore[arg-type]
        lambda: client.claim_notices(lease=0),
        lambda: client.release_notices(""),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert "pydantic" not in str(caught.value) and "validation error" not in str(caught.value)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [({"env": "A=b"}, "env must be a mapping"), ({"cwd": 5}, "cwd must be a path"),
     ({"state_dir": 5}, "state_dir must be a path"), ({"workspace": 5}, "workspace must be"),
     ({"follow_cd": "yes"}, "follow_cd must be True or False"),
     ({"transport": "carrier-pigeon"}, 'transport must be "unix" or "tcp"')],
)  # fmt: skip
def test_client_arguments_of_the_wrong_kind_are_said(
    state_dir: Path, arguments: dict[str, object], said: str
) -> None:
    """`env="A=b"` raised ValueError from dict(), `cwd=5` a TypeError, `transport="TCP"`
    was taken for Unix sockets and `follow_cd="yes"` named an internal field (a trial)."""
    from wave_bash.api import Client, InvalidInputError

    with pytest.raises(InvalidInputError, match=said):
        Client(**{"state_dir": state_dir, **arguments})  # type: ignore[arg-type]
    assert Client(state_dir=state_dir, transport="TCP").transport == "tcp"
    assert Client(state_dir=state_dir, transport="").transport in ("unix", "tcp")  # (default)


@pytest.mark.parametrize("name", ["", "x" * 201, "a\nb", "  "])
def test_a_bad_session_name_is_refused_when_the_client_is_made(state_dir: Path, name: str) -> None:
    """An empty name quietly became the default session (shared with every other
    default caller), found by a review."""
    from wave_bash.api import Client, InvalidInputError

    with pytest.raises(InvalidInputError, match="session name must be 1 to 200"):
        Client(state_dir=state_dir, session=name)


def test_a_working_directory_too_long_for_the_system_is_refused(
    state_dir: Path, tmp_path: Path
) -> None:
    """A working directory of over 4096 bytes (made a `cd` at a time; bash works there)
    read as one that no longer exists: the command ran in an ancestor 20 levels up, where
    `rm -rf build` is not what was meant (a trial). It is refused, and says why."""
    name = "d" * 200
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(22):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    deep = str(tmp_path) + f"/{name}" * 22
    for follow_cd in (False, True):  # (given, or the caller's own: a fallback to an ancestor)
        result = Client(state_dir=state_dir, cwd=deep, follow_cd=follow_cd).bash("pwd")
        assert not result.success and result.error is not None
        assert "path is too long for this system" in result.error and not result.stdout


def test_a_variable_too_large_to_start_a_program_with_is_named(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's variable of 1 MB made every call fail with "Argument list too long:
    '/bin/bash'", which named neither the variable nor the limit (a trial)."""
    client = Client(state_dir=state_dir)
    assert client.bash("echo started").success  # (the supervisor, started without it)
    monkeypatch.setenv("WB_HUGE_VALUE", "x" * 200_000)
    result = client.bash("echo ran")
    assert not result.success and result.error is not None and "ran" not in result.stdout
    assert "the variable WB_HUGE_VALUE is 200014 bytes" in result.error, result.error
    assert "128 KiB" in result.error


def test_what_the_first_starter_set_for_itself_reaches_no_command(state_dir: Path) -> None:
    """The client that starts the supervisor passed on its lowered soft limits and its
    ignored signals to every later command of every client: `ulimit -f 200` cut logs at
    200 KB (then the journal said "disk I/O error"), `trap '' QUIT` made SIGQUIT unable
    to stop a command (a trial)."""
    import resource
    import signal

    def starter() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (200 * 1024, resource.RLIM_INFINITY))
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)

    started = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir),
         "supervisor", "start"],
        capture_output=True, text=True, timeout=60, preexec_fn=starter,
    )  # fmt: skip
    assert started.returncode == 0, started
    r = Client(state_dir=state_dir).bash(
        "ulimit -f; head -c 300000 /dev/zero | wc -c; sh -c 'kill -QUIT $$; echo lived'; "
        "sh -c 'kill -USR1 $$; echo lived'; echo end"
    )
    assert r.stdout.split("\n")[:2] == ["unlimited", "300000"], r
    assert "Quit" in r.stdout and "User defined signal 1" in r.stdout
    assert "lived" not in r.stdout.split("\n")


def test_a_default_state_dir_that_cannot_be_looked_at_is_not_hidden(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`HOME=/root` for another user: the default state dir's `is_dir` raised EACCES and
    no supervisor started (a trial). One that cannot be looked at is no one's to hide
    (ENAMETOOLONG here: root reads through any mode)."""
    from wave_bash.api.paths import StateLayout
    from wave_bash.supervisor import daemon

    monkeypatch.setattr(daemon, "default_state_dir", lambda: Path("/tmp") / ("x" * 300))
    assert daemon.sandbox_hidden_dirs(StateLayout(state_dir)) == []


def test_a_working_directory_this_user_cannot_search_is_refused_as_such(
    state_dir: Path, tmp_path: Path
) -> None:
    """A directory that is there but not searchable read as one that no longer exists:
    `--cwd` said "does not exist", follow-cd ran the command in an ancestor with that
    note, or it failed with 127 and bash's `cd: …: Permission denied` (a trial, as
    nobody). Root without the capabilities that pass every mode meets the same modes."""
    from conftest import needs, needs_root

    needs_root("acting as a user that modes stop (root without CAP_DAC_*)")
    needs(shutil.which("setpriv") is not None, "setpriv", "apt-get install util-linux")
    locked, unsearchable = tmp_path / "locked", tmp_path / "unsearchable"
    (locked / "inner").mkdir(parents=True)
    unsearchable.mkdir()
    locked.chmod(0o000)
    unsearchable.chmod(0o600)
    caps = "-dac_override,-dac_read_search"
    as_user = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", sys.executable,
               "-m", "wave_bash.api.cli", "--state-dir", str(state_dir)]  # fmt: skip
    try:
        for where in (locked / "inner", unsearchable):
            r = subprocess.run([*as_user, "run", "--cwd", str(where), "--", "echo ran"],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
            assert (r.returncode, r.stdout) == (2, ""), r
            assert f"working directory is not accessible: {where} (Permission denied" in r.stderr
        assert Client(state_dir=state_dir, cwd=tmp_path).bash("echo ran").stdout == "ran"
    finally:
        locked.chmod(0o755)
        subprocess.run([*as_user, "supervisor", "stop"], capture_output=True, timeout=60)
