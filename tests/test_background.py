"""Background tasks that outlive the caller (SPEC B1–B7, F4, F5, S1, S2)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import (
    REPO,
    BashInThread,
    ask_supervisor,
    start_bg,
    task_alive,
    wait_until,
)

from wave_bash.api import Client, Progress, TaskNotFoundError, TaskNotRunningError, texts
from wave_bash.api.errors import InvalidInputError
from wave_bash.worker.monitor import JOB_WAIT


def test_explicit_background_returns_at_once_with_live_log(client: Client) -> None:
    started = time.monotonic()
    r = client.bash("echo one; sleep 3; echo two", run_in_background=True)
    assert time.monotonic() - started < 2.5  # (a supervisor started under another test
    # worker's load; one that waited for the command took 3 s)
    assert r.success and r.background_task_id and r.output_path
    assert not r.backgrounded_by_user and not r.assistant_auto_backgrounded and not r.ends_turn
    assert r.message == texts.background_started_text(r.background_task_id, r.output_path)
    assert r.message == (
        f"Command running in background with ID: {r.background_task_id}. "
        f"Output is being written to: {r.output_path}"
    )
    log = Path(r.output_path)
    assert log.is_absolute()
    wait_until(lambda: log.read_text() == "one\n")  # readable while it runs
    assert task_alive(r.background_task_id)
    client.wait(r.background_task_id, timeout=10_000)
    assert log.read_text() == "one\ntwo\n"
    assert 1 <= len(r.background_task_id) <= 12 and re.fullmatch(r"[a-z0-9]+", r.background_task_id)


def test_a_task_id_sent_with_blanks_or_capitals_is_the_task(client: Client) -> None:
    """`" bwlefvaw "` was no task, and the error showed no blank a model could see (a
    trial): IDs are `[a-z0-9]{8}`, taken without blanks, in lower case."""
    task_id = client.bash("echo hi", run_in_background=True).background_task_id or ""
    record = client.wait(f" {task_id.upper()}\n", timeout=10_000)
    assert (record.id, record.status) == (task_id, "completed")
    assert client.task_output(f"\t{task_id} ").output == "hi"
    with pytest.raises(InvalidInputError, match="task_id must not be empty"):
        client.task_output("  ")


def test_no_timeout_in_background(client: Client) -> None:
    r = client.bash("sleep 1.2; echo finished", run_in_background=True, timeout=100)
    assert r.background_task_id
    record = client.wait(r.background_task_id, timeout=10_000)
    assert (record.status, record.exit_code) == ("completed", 0)  # a sleep, yet not terminated


def test_task_stop_kills_the_whole_tree(client: Client) -> None:
    r = client.bash(
        "setsid sleep 300 & ( setsid bash -c 'sleep 301 & wait' & ); "
        "bash -c 'trap \"\" TERM; sleep 302' & sleep 303",
        run_in_background=True,
    )
    tid = r.background_task_id
    assert tid
    from wave_bash.worker import tagged_processes

    wait_until(lambda: len(tagged_processes({tid}).get(tid, ())) >= 6)
    record = client.task_stop(tid)
    assert record.status == "killed"
    assert not task_alive(tid)
    assert client.status().running  # the supervisor itself was not touched


def test_an_id_sent_among_other_text_is_named(client: Client) -> None:
    """Models sent a task's log path, `ID: x` or a backticked ID as its ID, and were told
    only that no such task existed: the one task ID in the text is named."""
    tid = start_bg(client, "sleep 30")
    sent = [f"ID: {tid.upper()}", f"/state/tasks/{tid}.log", f"`{tid}`"]
    for task_id in sent:
        for tool, more in (("TaskOutput", {}), ("TaskStop", {}), ("TaskInput", {"input": "y"})):
            with pytest.raises(TaskNotFoundError) as refused:
                client.call_tool(tool, {"task_id": task_id, **more})
            assert refused.value.message.endswith(f" (did you mean {tid}?)")
    with pytest.raises(TaskNotFoundError) as refused:
        client.task_stop_many([f"`{tid}`"])
    assert refused.value.message.endswith(f"nothing was stopped (did you mean {tid}?)")
    other = start_bg(client, "true")
    for task_id in ("zzzzzzzz", f"{tid} {other}", f"{tid}x"):  # (no task, two, or no ID alone)
        with pytest.raises(TaskNotFoundError) as refused:
            client.call_tool("TaskOutput", {"task_id": task_id})
        assert refused.value.message == f"No task found with ID: {task_id.lower()}"
    other_session = Client(state_dir=client.layout.root, session="another")
    with pytest.raises(TaskNotFoundError) as refused:  # (another session's task: not named)
        other_session.call_tool("TaskStop", {"task_id": f"`{tid}`"})
    assert refused.value.message == f"No task found with ID: `{tid}`"
    other_session.close()
    assert client.task_stop(tid).status == "killed"  # (nothing was stopped before)


def test_task_stop_errors(client: Client) -> None:
    with pytest.raises(TaskNotFoundError, match="No task found with ID: nosuch"):
        client.task_stop("nosuch")
    tid = start_bg(client, "true")
    client.wait(tid, timeout=5000)
    with pytest.raises(TaskNotRunningError, match="completed"):
        client.task_stop(tid)


def test_user_backgrounding_ends_the_turn(client: Client) -> None:
    call = BashInThread(client, "echo go; sleep 3; echo done")
    task_id = call.task_id()
    client.background(task_id)
    r = call.result(timeout=5)
    assert r.success and r.backgrounded_by_user and r.ends_turn
    assert not r.assistant_auto_backgrounded
    assert r.message == texts.user_backgrounded_text(task_id, r.output_path or "")
    assert task_alive(task_id)
    assert client.wait(task_id, timeout=10_000).background_reason == "user"


def test_caller_killed_leaves_task_running_as_caller_lost(state_dir: Path) -> None:
    session = "crashy-host"
    code = (
        "from api import Client; import sys;"
        f"Client(state_dir={str(state_dir)!r}, session={session!r})"
        ".bash('echo begin; sleep 1.5; echo end', on_start=lambda t: print(t, flush=True))"
    )
    host = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    assert host.stdout is not None
    task_id = host.stdout.readline().strip()
    host.send_signal(signal.SIGKILL)
    host.wait()
    client = Client(state_dir=state_dir, session=session)
    wait_until(
        lambda: any(
            t.id == task_id and t.background_reason == "caller_lost" for t in client.tasks()
        )
    )
    record = client.wait(task_id, timeout=10_000)
    assert (record.status, record.owner, record.background_reason) == (
        "completed",
        "background",
        "caller_lost",
    )
    notices = client.notifications()
    assert [n.task_id for n in notices] == [task_id]
    assert "completed with exit code 0" in notices[0].message


def test_notices_exactly_once_per_session(state_dir: Path) -> None:
    a = Client(state_dir=state_dir, session="agent-a")
    b = Client(state_dir=state_dir, session="agent-b")
    ok = start_bg(a, "echo fine", description="Print a fine word")
    bad = start_bg(a, "exit 2")
    for tid in (ok, bad):
        a.wait(tid, timeout=10_000)
    assert b.notifications() == []
    notices = Client(state_dir=state_dir, session="agent-a").notifications()  # a "restarted host"
    by_id = {n.task_id: n for n in notices}
    assert set(by_id) == {ok, bad}
    assert by_id[ok].message == (
        f'Background command "Print a fine word" (ID: {ok}) completed with exit code 0. '
        f"Output: {by_id[ok].output_path}"
    )
    assert by_id[bad].status == "failed" and "failed with exit code 2" in by_id[bad].message
    assert a.notifications() == []  # delivered once
    stopped = start_bg(a, "sleep 300")
    a.task_stop(stopped)
    (notice,) = a.notifications()
    assert notice.status == "killed" and "was stopped" in notice.message


def test_a_notice_names_its_command_in_printable_characters(client: Client) -> None:
    """A description of blanks alone labelled the notice `""`, and an escape sequence in a
    command went as it was into the notice, which `wave-bash notifications` prints to a
    terminal (a helper's trial): the command names it, its controls shown as `cat -v`
    shows them (as `wave-bash notifications` and `tasks` did already)."""
    task_id = start_bg(client, "true # \x1b[2J\x1b]0;title\x07", description="   ")
    client.wait(task_id, timeout=10_000)
    (notice,) = client.notifications()
    assert 'command "true # ^[[2J^[]0;title^G" (ID' in notice.message, notice.message
    assert not any(c < " " for c in notice.message.replace("\n", ""))


def test_foreground_results_leave_no_notice(client: Client) -> None:
    client.bash("echo hi")
    assert client.notifications() == []


def test_task_output_returns_only_new_output(client: Client) -> None:
    tid = start_bg(client, "echo a; sleep 1.5; echo b; sleep 0.5; echo c")
    first = client.task_output(tid, pattern="^a$", timeout=5000)
    assert first.output == "a" and first.status == "running"
    rest = client.task_output(tid, timeout=10_000)
    assert rest.output == "b\nc" and (rest.status, rest.exit_code) == ("completed", 0)
    again = client.task_output(tid, block=False)
    assert again.output == ""
    other = Client(state_dir=client.layout.root, session="someone-else").task_output(
        tid, block=False
    )
    assert other.output == "a\nb\nc"  # offsets are per agent session


def test_a_log_cut_in_place_is_read_again_from_its_start(client: Client, tmp_path: Path) -> None:
    """A log truncated while its task ran (`: > LOG`, logrotate's copytruncate, space
    freed on a full disk): what the task wrote next never showed, as the session's read
    offset lay past the log's end (a trial). Read again from its start, as `tail -f`
    does."""
    gate = tmp_path / "gate"
    line = "x" * 60
    tid = start_bg(client, f"for i in $(seq 100); do echo {line}; done; "
                           f"until [ -e {gate} ]; do sleep 0.02; done; echo after; exit 3")  # fmt: skip
    first = client.task_output(tid, pattern=f"^{line}$", timeout=5000)
    wait_until(lambda: client.task_output(tid, block=False).output == "" and
               Path(first.output_path).stat().st_size == 6100)  # fmt: skip
    os.truncate(first.output_path, 0)
    gate.touch()
    found = client.task_output(tid, pattern="^after$", timeout=10_000)  # (searched so too)
    assert (found.output, found.pattern_matched) == ("after", True)
    rest = client.task_output(tid, timeout=10_000)
    assert (rest.output, rest.exit_code) == ("", 3)


def test_a_read_of_a_running_task_ends_before_a_half_written_character(
    client: Client, tmp_path: Path
) -> None:
    """A read ended at the log's end, inside a UTF-8 character or an escape sequence the
    command was still writing: each half was cleaned apart (`A�` then `� B`, `C3` then
    `1mred`: a trial). What is unfinished comes with the next read."""
    gates = [tmp_path / "one", tmp_path / "two"]
    script = (
        f"printf 'A\\342\\202'; until [ -e {gates[0]} ]; do sleep 0.05; done; "
        f"printf '\\254 B\\nC\\033[3'; until [ -e {gates[1]} ]; do sleep 0.05; done; "
        "printf '1mred\\033[0m\\n'"
    )
    tid = start_bg(client, script)
    log = Path(client.task_output(tid, block=False, offset=0).output_path)
    for gate, size, expected in ((gates[0], 3, "A"), (gates[1], 11, "€ B\nC"), (None, 21, "red")):
        wait_until(lambda size=size: log.stat().st_size == size)  # type: ignore[misc]
        if expected == "red":
            client.wait(tid, timeout=10_000)
        assert client.task_output(tid, block=False).output == expected
        if gate is not None:
            gate.touch()


def test_settled_end_holds_back_an_unfinished_sequence_only(tmp_path: Path) -> None:
    """(An OSC's newline ends it: complete lines after one were held back, a review.)"""
    from wave_bash.worker.tail import settled_end

    log = tmp_path / "log"
    cases = [(b"x\x1b]0;t\nmore\n", 0), (b"A\xe2\x82", 2), (b"C\x1b[3", 3), (b"ok\x1b[0m", 0),
             (b"\xf0\x9f\x98\x80", 0), (b"x\x1b(", 2), (b"x\x1b]8;;http://a", 13),
             (b"x\x1bPq#0;2", 7), (b"x\x1b_Gf=100", 8)]  # fmt: skip
    for data, held in cases:
        log.write_bytes(data)
        assert settled_end(log, 0, len(data)) == len(data) - held, data


def test_what_a_quiet_task_left_half_written_is_read_all_the_same(client: Client) -> None:
    """A log that ends in a lone ESC or a byte of no character and is written no more
    holds nothing back for long (SETTLED_SECONDS): a read shows it as it is."""
    started = client.bash("printf 'A\\342\\202'; sleep 60", run_in_background=True)
    tid, log = started.background_task_id, Path(started.output_path or "")
    assert tid is not None
    try:
        wait_until(lambda: log.stat().st_size == 3)  # (read as it came, a CI run: nothing)
        assert client.task_output(tid, block=False, offset=0).output == "A"
        wait_until(
            lambda: client.task_output(tid, block=False, offset=0).output == "A\ufffd",
            timeout=20,
        )
    finally:
        client.task_stop(tid)


def test_task_output_pattern_wakes_early(client: Client) -> None:
    tid = start_bg(client, "sleep 0.3; echo 'server ready on :8080'; sleep 30")
    started = time.monotonic()
    out = client.task_output(tid, pattern=r"ready on :\d+", timeout=20_000)
    assert time.monotonic() - started < 5
    assert "ready on :8080" in out.output and out.status == "running"
    assert out.pattern_matched is True
    client.task_stop(tid)


def test_a_pattern_wait_says_whether_it_matched(client: Client) -> None:
    """A wait for "server ready" that timed out looked like one that matched (a trial):
    the answer says whether the pattern was found, in its text for a model too, also for a
    task that ended as the wait went on (in its last words too)."""
    tid = start_bg(client, "while :; do echo tick; sleep 0.1; done")
    try:
        missed = client.call_tool(
            "TaskOutput", {"task_id": tid, "pattern": "^ready$", "timeout": 500}
        )
        assert (missed["status"], missed["patternMatched"]) == ("running", False)
        assert "; the pattern was not found before the timeout" in texts.tool_result_text(
            "TaskOutput", missed
        )
        assert client.task_output(tid, pattern="^tick$", timeout=5000).pattern_matched is True
        assert client.task_output(tid, timeout=200).pattern_matched is None  # (no pattern)
    finally:
        client.task_stop(tid)
    ended = start_bg(client, "sleep 0.5; echo ready")
    assert client.task_output(ended, pattern="^ready$", timeout=20_000).pattern_matched is True
    quiet = start_bg(client, "sleep 0.5; echo done")
    out = client.task_output(quiet, pattern="^ready$", timeout=20_000)
    assert (out.status, out.pattern_matched) == ("completed", False)
    # The answer is what this read returned: a wait that timed out as the line came said
    # false beside it (6 of 24 times, a review); a prompt that ended the wait did too.
    for _ in range(6):
        late = start_bg(client, "sleep 0.45; echo ready; sleep 30")
        out = client.task_output(late, pattern="^ready$", timeout=500)
        assert out.pattern_matched == ("ready" in out.output), out
        client.task_stop(late)
    asked = client.bash("printf 'Password: '; read x", interactive=True, timeout=60_000)
    assert asked.background_task_id and asked.waiting_for_input
    out = client.task_output(asked.background_task_id, pattern="Password", timeout=3000, offset=0)
    assert out.pattern_matched is True
    client.task_stop(asked.background_task_id)


def test_task_output_timeout_and_non_blocking(client: Client) -> None:
    tid = start_bg(client, "sleep 30")
    started = time.monotonic()
    out = client.task_output(tid, timeout=400)
    assert 0.3 < time.monotonic() - started < 5 and out.status == "running"
    started = time.monotonic()
    client.task_output(tid, block=False)
    assert time.monotonic() - started < 1
    client.task_stop(tid)


def test_task_output_bad_input(client: Client) -> None:
    tid = start_bg(client, "true")
    with pytest.raises(InvalidInputError, match="not a valid regular expression"):
        client.task_output(tid, pattern="(unclosed")
    with pytest.raises(InvalidInputError, match="non-negative"):
        client.task_output(tid, timeout=-5)
    with pytest.raises(TaskNotFoundError):
        client.task_output("nosuch")


def test_task_output_with_polling_watcher(state_dir: Path) -> None:
    env = {**os.environ, "WATCHFILES_FORCE_POLLING": "1"}
    code = (
        "from api import Client;"
        f"c = Client(state_dir={str(state_dir)!r});"
        "t = c.bash('sleep 0.5; echo hit; sleep 30', run_in_background=True).background_task_id;"
        "o = c.task_output(t, pattern='hit', timeout=20000); print(o.output); c.task_stop(t)"
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "wave_bash.api.cli",
            "--state-dir",
            str(state_dir),
            "supervisor",
            "stop",
        ],
        env=env,
        cwd=REPO,
        check=True,
    )
    r = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert r.stdout.strip() == "hit", r.stderr


def test_progress_is_throttled_and_carries_the_tail(client: Client) -> None:
    updates: list[tuple[float, Progress]] = []
    r = client.bash(
        "for i in 1 2 3 4 5 6; do echo line $i; sleep 0.5; done",
        on_progress=lambda p: updates.append((time.monotonic(), p)),
    )
    assert r.stdout.endswith("line 6")
    assert 2 <= len(updates) <= 4  # 3 s of output, at most one update a second
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(updates)]
    assert all(g >= 0.9 for g in gaps), gaps
    last = updates[-1][1]
    assert last.short_result == "\n".join(last.result.splitlines()[-3:])
    assert last.result.startswith("line 1")
    assert last.output_bytes == len(last.result) + 1 and last.elapsed_ms > 0
    assert len({u.task_id for _, u in updates}) == 1


def test_no_progress_without_new_output(client: Client) -> None:
    updates: list[Progress] = []
    client.bash("echo once; sleep 2.5", on_progress=updates.append)
    assert len(updates) == 1 and updates[0].short_result == "once"


@pytest.mark.parametrize("callback", ["on_progress", "on_start"])
def test_an_error_in_a_callback_names_the_task_left_running(client: Client, callback: str) -> None:
    """A framework's `on_progress` that raised left its command running in the
    background, the exception saying nothing of it (a trial): the error comes with a
    note that names the task, whose end is then a notice."""

    def fail(_: object) -> None:
        raise ZeroDivisionError("the framework's own bug")

    with pytest.raises(ZeroDivisionError) as raised:
        client.bash("echo x; sleep 1; echo done", **{callback: fail})  # type: ignore[arg-type]
    (task,) = client.tasks()
    assert raised.value.__notes__ == [f"wave-bash: task {task.id} keeps running in the background"]
    client.wait(task.id, timeout=10_000)
    assert [n.task_id for n in wait_until(client.notifications)] == [task.id]


def test_tasks_listing(client: Client, state_dir: Path) -> None:
    tid = client.bash(
        "sleep 30", run_in_background=True, description="Wait a while"
    ).background_task_id
    (record,) = client.tasks()
    assert (record.id, record.status, record.owner, record.background_reason) == (
        tid,
        "running",
        "background",
        "explicit",
    )
    assert record.description == "Wait a while" and record.pid and record.session == client.session
    other = Client(state_dir=state_dir, session="other")
    assert other.tasks() == [] and len(other.tasks(all=True)) == 1
    from conftest import run_cli

    table = run_cli(state_dir, "--session", client.session, "tasks").stdout
    assert tid in table and "bg:explicit" in table and "sleep 30" in table
    # A command's control characters are shown, not sent to the terminal (a reviewer
    # found its colour codes acting on the table).
    tinted = start_bg(client, "sleep 30 # \x1b[31mred\rback")
    table = run_cli(state_dir, "--session", client.session, "tasks").stdout
    assert "sleep 30 # ^[[31mred^Mback" in table and "\x1b" not in table and "\r" not in table
    client.task_stop(tinted)
    data = json.loads(run_cli(state_dir, "--session", client.session, "tasks", "--json").stdout)
    assert set(data[0]) >= {
        "id",
        "command",
        "description",
        "status",
        "owner",
        "backgroundReason",
        "exitCode",
        "pid",
        "startedAt",
        "endedAt",
        "outputPath",
        "session",
        "cwd",
    }
    stop = run_cli(state_dir, "stop", tid or "", "--json")
    assert json.loads(stop.stdout)["status"] == "killed"
    missing = run_cli(state_dir, "stop", "nosuch")
    assert missing.returncode == 2 and "No task found with ID: nosuch" in missing.stderr


def test_stop_many_is_all_or_nothing(client: Client) -> None:
    ids = [start_bg(client, "sleep 300") for _ in range(3)]
    with pytest.raises(TaskNotFoundError) as raised:
        client.task_stop_many([*ids, "nosuch", "gone"])
    # Said, every unknown ID with it: a caller must not take the others for stopped.
    assert raised.value.message == "No task found with ID: nosuch, gone; nothing was stopped"
    assert raised.value.task_id == "nosuch"
    assert all(task_alive(t) for t in ids)  # nothing was stopped
    records = client.task_stop_many(ids)
    assert [r.status for r in records] == ["killed"] * 3
    assert not any(task_alive(t) for t in ids)


def test_bash_output_keeps_the_lines_its_filter_matches(client: Client) -> None:
    """The older BashOutput's `filter` was dropped, and it blocked where Claude Code's
    never did (a trial): it returns at once with the lines the filter matches (RE2), the
    others read all the same; a bad filter reads nothing."""
    tid = start_bg(client, "echo ok; echo ERR 1; echo fine; echo ERR 2; sleep 30")
    wait_until(lambda: "ERR 2" in client.task_output(tid, block=False, offset=0).output)
    with pytest.raises(InvalidInputError, match="filter is not a valid regular expression"):
        client.call_tool("BashOutput", {"bash_id": tid, "filter": "(x"})
    read = client.call_tool("BashOutput", {"bash_id": tid, "filter": "^ERR"})
    assert (read["status"], read["output"]) == ("running", "ERR 1\nERR 2")
    assert client.call_tool("BashOutput", {"bash_id": tid})["output"] == ""  # (read)
    client.task_stop(tid)
    # Of all it read, not of an excerpt (a line in the excerpt's omitted middle was lost,
    # silently: a review).
    many = start_bg(client, "seq 1 20000 | sed 's/^/line /'; echo ERROR at end; sleep 30")
    wait_until(lambda: "ERROR" in client.task_output(many, block=False, offset=0).output)
    read = client.call_tool("BashOutput", {"bash_id": many, "filter": "ERROR|line 10000$"})
    assert (read["output"], read["truncated"]) == ("line 10000\nERROR at end", False)
    client.task_stop(many)
    # TaskOutput takes it as well (it was dropped there, and every line came back: a review)
    again = start_bg(client, "echo ok; echo ERR 3; echo fine; exit 4")
    read = client.call_tool("TaskOutput", {"task_id": again, "filter": "^ERR"})
    assert (read["status"], read["exitCode"], read["output"]) == ("failed", 4, "ERR 3")


def test_tool_calls_with_older_names(client: Client) -> None:
    started = client.call_tool("Bash", {"command": "sleep 300", "run_in_background": True})
    tid = started["backgroundTaskId"]
    assert client.call_tool("TaskOutput", {"shell_id": tid, "block": False})["status"] == "running"
    began = time.monotonic()  # (BashOutput never blocked: Claude Code's did not, a trial)
    assert client.call_tool("BashOutput", {"bash_id": tid})["status"] == "running"
    # (null is "not given", T5: it blocked, a trial)
    assert client.call_tool("BashOutput", {"bash_id": tid, "block": None})["status"] == "running"
    assert time.monotonic() - began < 5
    assert client.call_tool("KillBash", {"shell_id": tid})["status"] == "killed"
    assert not task_alive(tid)
    other = start_bg(client, "sleep 300")  # (Claude Code's names before TaskStop: a trial)
    assert client.call_tool("KillShell", {"shell_id": other})["status"] == "killed"
    with pytest.raises(InvalidInputError, match="the tools are Bash, TaskOutput, TaskStop"):
        client.call_tool("ShellOutput", {"task_id": other})
    with pytest.raises(TaskNotFoundError, match="No task found with ID: gone"):
        client.call_tool("TaskStop", {"task_id": "gone"})
    with pytest.raises(InvalidInputError, match="timeout must be a non-negative number"):
        client.call_tool("Bash", {"command": "echo x", "timeout": "5000"})
    with pytest.raises(InvalidInputError, match="unknown tool"):
        client.call_tool("Nope", {"task_id": "x"})
    other = start_bg(client, "sleep 300")
    stopped = ask_supervisor(client.layout.root, "stop", {"shell_id": other})  # protocol alias
    assert stopped["data"]["status"] == "killed" and not task_alive(other)


def test_task_output_pattern_has_line_semantics(client: Client) -> None:
    # Both lines arrive in one write: ^...$ still matches the first line on its own.
    tid = start_bg(client, "printf 'alpha\\nbeta\\n'; sleep 30")
    started = time.monotonic()
    out = client.task_output(tid, pattern="^alpha$", timeout=20_000)
    assert time.monotonic() - started < 10  # woke on the match, not on the timeout
    assert out.status == "running" and out.output == "alpha\nbeta"
    client.task_stop(tid)


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_a_stopped_command_is_paused_not_ended(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """A command stopped by a signal (SIGSTOP, as a user pausing it) is paused: its task
    runs on and ends with the command's own status once it is continued (its monitor
    once recorded 147 at the stop and, exiting, killed the command with SIGHUP)."""
    import psutil

    monkeypatch.setenv("WAVE_TRACKING", tracking)
    client = Client(state_dir=state_dir)
    pid_file = tmp_path / "pid"
    task_id = start_bg(
        client, f"echo $BASHPID > {pid_file}; kill -STOP $BASHPID; echo resumed; exit 3"
    )
    job = psutil.Process(
        int(wait_until(lambda: pid_file.exists() and pid_file.read_text().strip()))
    )
    wait_until(lambda: job.status() == psutil.STATUS_STOPPED)
    assert client.wait(task_id, timeout=300).status == "running"  # paused, for 300 ms
    job.resume()
    record = client.wait(task_id, timeout=10_000)
    assert (record.status, record.exit_code) == ("failed", 3)
    assert client.task_output(task_id).output.strip() == "resumed"


@pytest.mark.parametrize("tracking", ["cgroup", "process"])
def test_a_stop_ends_a_paused_command_with_its_sigterm(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tracking: str
) -> None:
    """TaskStop of a stopped (paused) command: SIGCONT follows SIGTERM, so the command
    gets the SIGTERM now (143), not only the SIGKILL after the grace period (137)."""
    import psutil

    monkeypatch.setenv("WAVE_TRACKING", tracking)
    client = Client(state_dir=state_dir)
    pid_file = tmp_path / "pid"
    task_id = start_bg(client, f"echo $BASHPID > {pid_file}; kill -STOP $BASHPID; echo resumed")
    job = psutil.Process(
        int(wait_until(lambda: pid_file.exists() and pid_file.read_text().strip()))
    )
    wait_until(lambda: job.status() == psutil.STATUS_STOPPED)
    record = client.task_stop(task_id)
    assert (record.status, record.exit_code) == ("killed", 143)
    assert "resumed" not in client.task_output(task_id).output


@pytest.mark.parametrize(
    ("job", "signals", "expected"),
    [
        ("kill -STOP $BASHPID; exit 7", [signal.SIGCONT], 7),
        ("kill -STOP $BASHPID; exit 7", [signal.SIGTERM, signal.SIGCONT], 143),
        ("exit 147", [], 147),  # a status over 128 that is no stop: nothing to wait for
    ],
)
def test_a_job_stopped_before_the_monitor_turned_job_control_off_is_waited_for(
    job: str, signals: list[signal.Signals], expected: int
) -> None:
    """The monitor forks its job with job control on: a job that stopped before it was
    turned off is seen stopped, and `wait` returns at once (147). Under load the job's
    first `kill -STOP $BASHPID` wins that race (a full run of the tests): the task was
    recorded killed at once and its job, orphaned by the monitor's exit, got SIGHUP. The
    race is made certain here: the monitor's wait must last until the job ends."""
    script = (  # (fd 5: the monitor's record pipe, which it sleeps on)
        f"set -m; ( {job} ) & while [[ -e /proc/$! && $(< /proc/$!/stat) != *') '[TZ]' '* ]];"
        f" do :; done; set +m; echo $!; {JOB_WAIT}; echo $__wave_status"
    )
    read_end, write_end = os.pipe()
    harness = subprocess.Popen(
        ["bash", "-c", f"exec 5>&{write_end} {write_end}>&-; {script}"],
        stdout=subprocess.PIPE, text=True, pass_fds=(write_end,),
    )  # fmt: skip
    os.close(write_end)
    try:
        assert harness.stdout is not None
        pid = int(harness.stdout.readline())

        if signals:  # (sleeping on its record pipe; the old code had ended)
            wait_until(lambda: harness.poll() is not None or napping(harness.pid, read_end))
        for sig in signals:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        assert int(harness.stdout.read()) == expected
    finally:
        harness.kill()
        harness.wait()
        os.close(read_end)


def napping(pid: int, read_end: int) -> bool:
    """Whether bash ``pid`` sleeps on its record pipe (fd 5, the pipe of ``read_end``)."""
    pipe = os.readlink(f"/proc/self/fd/{read_end}")
    with contextlib.suppress(OSError):
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}") == pipe
            for fd in os.listdir(f"/proc/{pid}/fd")
            if fd != "5"
        )
    return False
