"""The journal: migrations from a checked-in old file, corruption, rebuild (SPEC D1, D5)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    journal_rows,
    kill_supervisor,
    start_bg,
    start_supervisor,
    supervisor_pids,
    task_alive,
    wait_until,
)

from wave_bash.api import Client
from wave_bash.supervisor.journal import SCHEMA_VERSION, Journal, TaskRow
from wave_bash.worker import read_exit_record

FIXTURE = Path(__file__).parent / "fixtures" / "journal-v1.db"


def test_v1_journal_is_migrated_in_place(state_dir: Path) -> None:
    shutil.copy(FIXTURE, state_dir / "journal.db")
    start_supervisor(state_dir, WAVE_RETENTION="1000d")  # keep the 2025 tasks from pruning
    alpha = Client(state_dir=state_dir, session="alpha")
    records = {t.id: t for t in alpha.tasks(all=True)}
    assert set(records) == {"old1task", "old2task", "old3task"}
    old2 = records["old2task"]
    assert (old2.status, old2.exit_code, old2.owner, old2.background_reason) == (
        "failed",
        2,
        "background",
        "explicit",
    )
    assert old2.started_at.year == 2025 and old2.end_reason is None
    assert (
        records["old1task"].description == "Old task 1" and records["old2task"].description is None
    )
    (notice,) = (
        alpha.notifications()
    )  # the pending v1 notice survives; the delivered one stays delivered
    assert notice.task_id == "old2task"
    assert Client(state_dir=state_dir, session="beta").notifications() == []
    assert alpha.bash("echo new").stdout == "new"  # the upgraded journal takes new tasks
    assert alpha.gc(older_than=7 * 86400) == ["old1task", "old2task", "old3task"]
    con = sqlite3.connect(state_dir / "journal.db")
    assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 11
    assert {"end_reason", "request_key"} <= {r[1] for r in con.execute("PRAGMA table_info(tasks)")}
    assert {"claim", "claim_until"} <= {r[1] for r in con.execute("PRAGMA table_info(notices)")}
    con.close()


def test_newer_journal_is_refused_not_damaged(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(RuntimeError, match="newer than this wave-bash"):
        Journal(path)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "emptied"])
def test_corrupt_journal_is_quarantined_and_rebuilt(
    client: Client, state_dir: Path, damage: str
) -> None:
    done = start_bg(client, "echo finished; exit 3")
    client.wait(done, timeout=10_000)
    running = start_bg(client, "sleep 300")
    kill_supervisor(state_dir)
    journal = state_dir / "journal.db"
    Journal(journal).checkpoint()  # everything in the main file, then damage it
    data = journal.read_bytes()
    damaged = b"this is not a database" * 100 if damage == "garbage" else data[: len(data) // 3]
    damaged = b"" if damage == "emptied" else damaged  # (SQLite takes it for a valid database)
    journal.write_bytes(damaged)
    records = {t.id: t for t in client.tasks(all=True)}  # a new supervisor starts
    (quarantined,) = state_dir.glob("journal.db.corrupt-*[0-9]")
    assert quarantined.read_bytes() == damaged  # kept as it was, never silently emptied
    assert "is corrupt" in (state_dir / "supervisor.log").read_text()
    assert (records[done].status, records[done].exit_code) == (
        "failed",
        3,
    )  # rebuilt from its files
    assert records[running].status == "running"  # re-adopted through its tag
    assert task_alive(running)
    assert client.task_stop(running).status == "killed"
    kill_supervisor(state_dir)  # (a stop's reason is rebuilt too: its exit record's mark)
    journal.write_bytes(damaged)
    records = {t.id: t for t in client.tasks(all=True)}
    assert (records[running].status, records[running].end_reason) == ("killed", "stopped")


def test_journals_damaged_in_the_same_second_are_all_kept(client: Client, state_dir: Path) -> None:
    """Each damaged journal moved aside is kept (D5): a second one in the same second
    took the first's name, and `rename` replaced it (a helper's trial)."""
    client.bash("true")
    journal = state_dir / "journal.db"
    for i in range(3):
        kill_supervisor(state_dir)
        journal.write_bytes(f"damaged {i} ".encode() * 100)
        client.tasks()  # a new supervisor starts
    kept = sorted(p.read_bytes()[:9] for p in state_dir.glob("journal.db.corrupt-*[0-9]"))
    assert kept == [b"damaged 0", b"damaged 1", b"damaged 2"]


def test_a_journal_damaged_while_its_supervisor_runs_is_rebuilt(
    client: Client, state_dir: Path
) -> None:
    """Pages of the journal overwritten while the supervisor ran: every call was answered
    "internal supervisor error: database disk image is malformed" until a restart (a
    review). The supervisor exits as it meets the damage; the call, cut, is sent again to
    the next, which quarantines the journal and rebuilds it from the task files."""
    ended = [start_bg(client, f"exit {i % 5}") for i in range(40)]
    for task_id in ended:
        client.wait(task_id, timeout=10_000)
    running = start_bg(client, "sleep 300")
    journal = state_dir / "journal.db"
    with sqlite3.connect(journal) as con:  # (all in the main file; readers drop their cache)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(journal, "r+b") as fh:
        fh.seek(4096)
        fh.write(os.urandom(journal.stat().st_size - 4096))
    records = {t.id: t for t in client.tasks(all=True)}
    assert {t: (records[t].status, records[t].exit_code) for t in ended} == {
        t: ("completed" if i % 5 == 0 else "failed", i % 5) for i, t in enumerate(ended)
    }
    assert records[running].status == "running" and task_alive(running)
    log = (state_dir / "supervisor.log").read_text()
    assert "the journal is damaged" in log and "is corrupt" in log
    assert list(state_dir.glob("journal.db.corrupt-*[0-9]"))
    assert client.task_stop(running).status == "killed"


def _removed(folder: Path) -> bool:
    """Whether ``rm -r folder`` went through (a standby's files made meanwhile, as the
    supervisor starts them after a reply, fail it: "Directory not empty", a CI run)."""
    try:
        shutil.rmtree(folder)
    except OSError:
        return False
    return True


def test_a_tasks_dir_removed_while_the_supervisor_runs_is_made_again(
    client: Client, state_dir: Path
) -> None:
    """`rm -r tasks/` under a running supervisor: every later command failed ("No such
    file or directory: …/tasks/X.log") until a restart (a review). The next command
    makes it again, private, and runs (no standby started before it is used)."""
    assert client.bash("echo before").stdout == "before"
    wait_until(lambda: _removed(state_dir / "tasks"))
    r = client.bash("echo after")
    assert (r.stdout, r.exit_code) == ("after", 0), r
    assert (state_dir / "tasks").stat().st_mode & 0o777 == 0o700
    assert Path(client.tasks()[-1].output_path).read_text() == "after\n"
    assert "tasks made again" in (state_dir / "supervisor.log").read_text()
    # Made again by hand before the next command: the standbys' files are gone all the
    # same (two commands failed, "No such file or directory": a second review).
    for _ in range(2):
        assert client.bash("echo warm").stdout == "warm"  # (standbys started for them)
    wait_until(lambda: _removed(state_dir / "tasks"))
    (state_dir / "tasks").mkdir(mode=0o700)
    for n in range(2):
        assert client.bash(f"echo again{n}").stdout == f"again{n}"


def test_a_tasks_dir_replaced_by_a_link_is_not_followed(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """`tasks/` swapped for a link under a running supervisor: the next commands' files
    were made in the link's target (a helper's trial; at start-up the link is refused,
    X1a). It is moved aside, and the tasks dir made again."""
    assert client.bash("echo before").stdout == "before"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    wait_until(lambda: _removed(state_dir / "tasks"))
    (state_dir / "tasks").symlink_to(elsewhere)
    r = client.bash("echo after")
    assert (r.stdout, r.exit_code) == ("after", 0), r
    tasks = state_dir / "tasks"
    assert tasks.is_dir() and not tasks.is_symlink() and tasks.stat().st_mode & 0o777 == 0o700
    assert Path(r.output_path or "").parent == tasks and Path(r.output_path or "").exists()
    assert not list(elsewhere.glob(f"{client.tasks()[-1].id}.*"))
    (moved,) = state_dir.glob("tasks.moved-*")
    assert moved.is_symlink()


def test_damage_quick_check_cannot_see_is_rebuilt_once(client: Client, state_dir: Path) -> None:
    """A stale index entry passes `quick_check` (it compares no index with its table):
    each supervisor met it at its first listing and exited, 29 times in 30 s, the journal
    never rebuilt (a second review). The one that meets it leaves a mark that has the
    next move the journal aside and rebuild it, whatever its check says."""
    ended = _ended_then_stopped(client, state_dir, [f"exit {i}" for i in range(3)])
    journal = state_dir / "journal.db"
    names = ("tasks_by_session", "tasks_by_status")
    with contextlib.closing(sqlite3.connect(journal)) as con:
        indexes = con.execute(
            "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master WHERE name IN (?, ?)",
            names,
        ).fetchall()
        con.execute("PRAGMA writable_schema = ON")
        con.execute("DELETE FROM sqlite_master WHERE name IN (?, ?)", names)
        con.commit()
    with contextlib.closing(sqlite3.connect(journal)) as con:
        con.execute("DELETE FROM tasks WHERE id = ?", (ended[0],))  # (its index entries stay)
        con.execute("PRAGMA writable_schema = ON")
        con.executemany("INSERT INTO sqlite_master VALUES (?, ?, ?, ?, ?)", indexes)
        con.commit()
    with contextlib.closing(sqlite3.connect(journal)) as con:
        assert con.execute("PRAGMA quick_check").fetchone() == ("ok",)
    assert sorted(t.id for t in client.tasks()) == sorted(ended)  # (rebuilt from its files)
    log = (state_dir / "supervisor.log").read_text()
    assert log.count("the journal is damaged") == 1 and log.count("is corrupt") == 1
    assert not (state_dir / "journal.db.damaged").exists()


def test_damage_found_while_running_is_told_from_a_full_disk(tmp_path: Path) -> None:
    """A journal damaged while its supervisor ran had every call answered "internal" until
    a restart (a review): the supervisor exits on such an error (the next start
    quarantines and rebuilds it, the calls cut are sent again), never on a full or
    read-only disk's, which leave the journal as it is."""
    from wave_bash.supervisor.recovery import journal_damaged

    path = tmp_path / "damaged.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [("x" * 500,)] * 200)
    con.commit()
    con.close()
    data = bytearray(path.read_bytes())
    data[4096:] = os.urandom(len(data) - 4096)
    path.write_bytes(bytes(data))
    with pytest.raises(sqlite3.DatabaseError) as damaged:
        sqlite3.connect(path).execute("SELECT count(*) FROM t WHERE x != ''").fetchall()
    assert journal_damaged(damaged.value)
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
    assert not journal_damaged(full) and not journal_damaged(OSError(28, "No space"))


def _ended_then_stopped(client: Client, state_dir: Path, commands: list[str]) -> list[str]:
    """Background tasks of ``commands``, each ended, then the supervisor stopped (gone)."""
    ids = [start_bg(client, command) for command in commands]
    for task_id in ids:
        client.wait(task_id, timeout=10_000)
    client.shutdown()
    wait_until(lambda: not supervisor_pids(state_dir))
    return ids


def test_tasks_a_lost_wal_held_are_taken_back_from_their_files(
    client: Client, state_dir: Path
) -> None:
    """A journal whose WAL was lost passes `quick_check`: every task since its last
    checkpoint was forgotten, a running one out of any TaskStop's reach (a trial). The
    tasks whose files it has no row for are taken in at start, re-adopted or ended, and
    a background end's notice comes (what was delivered of it went with the rows)."""
    seen = start_bg(client, "exit 4")
    client.wait(seen, timeout=10_000)
    assert [n.task_id for n in client.notifications()] == [seen]
    kill_supervisor(state_dir)
    journal = state_dir / "journal.db"
    with contextlib.closing(sqlite3.connect(journal)) as db:  # (what was delivered of it
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # is in the main file)
    ended = start_bg(client, "echo b; exit 5")
    client.wait(ended, timeout=10_000)
    shown = client.bash("echo shown")  # (a foreground result its caller got: no notice,
    assert shown.stdout == "shown"  # as each foreground one since the checkpoint was, a
    running = start_bg(client, "sleep 300")  # review)
    kill_supervisor(state_dir)
    for lost in ("-wal", "-shm"):
        Path(f"{journal}{lost}").unlink()
    assert {r["id"] for r in journal_rows(state_dir)} == {seen}  # (what the WAL held)
    records = {t.id: t for t in client.tasks(all=True)}  # a new supervisor starts
    assert set(records) - {t.id for t in records.values() if t.command == "echo shown"} == {
        seen, ended, running,
    }  # fmt: skip
    assert (records[ended].status, records[ended].exit_code) == ("failed", 5)
    assert client.task_output(ended, block=False).output == "b"
    assert records[running].status == "running" and task_alive(running)
    assert [n.task_id for n in client.notifications()] == [ended]
    assert client.task_stop(running).status == "killed"
    assert "no row for 3 task(s)" in (state_dir / "supervisor.log").read_text()


def test_a_task_whose_row_a_prune_deleted_stays_deleted(client: Client, state_dir: Path) -> None:
    """A prune whose unlink of a task's files failed leaves them without a row: each start
    took the task in again, its notice delivered again (a review). A task that started
    before the journal's last checkpoint had its row there: one missing was deleted."""
    done = start_bg(client, "exit 2")
    client.wait(done, timeout=10_000)
    assert [n.task_id for n in client.notifications()] == [done]
    kill_supervisor(state_dir)
    journal = Journal(state_dir / "journal.db")
    assert journal.delete_tasks([done]) == [done]  # (its files stay: the unlink failed)
    journal.checkpoint()  # (as a prune does)
    journal.close()
    assert (state_dir / "tasks" / f"{done}.exit").exists()
    assert client.tasks(all=True) == [] and client.notifications() == []
    assert "no row for" not in (state_dir / "supervisor.log").read_text()


def test_a_rebuilt_journal_announces_the_ends_that_came_after_its_damage(
    client: Client, state_dir: Path, tmp_path: Path
) -> None:
    """A task that ended while no supervisor ran, after its journal was damaged, was
    rebuilt with its exit code and never announced (a trial). One that ended after the
    damaged journal's last write gets its notice; one that ended before may have been
    delivered, and gets none (as before)."""
    before = start_bg(client, "exit 1")
    client.wait(before, timeout=10_000)
    gate = tmp_path / "gate"
    after = start_bg(client, f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 7")
    # One moved to the background at its timeout: its record says foreground, as it
    # started; its caller was told a notice would come (none did: a trial).
    moved = client.bash(f"while [ ! -e {gate} ]; do sleep 0.05; done; exit 4", timeout=200)
    assert moved.background_task_id
    kill_supervisor(state_dir)
    journal = state_dir / "journal.db"
    journal.write_bytes(b"this is not a database" * 100)
    gate.touch()
    records = [state_dir / "tasks" / f"{t}.exit" for t in (after, moved.background_task_id)]
    wait_until(lambda: all(read_exit_record(path).status for path in records))
    # One ended within the clock tick of the journal's last write: the same time (a CI
    # run; no notice came).
    written = journal.stat().st_mtime_ns
    os.utime(records[0], ns=(written, written))
    records = {t.id: t for t in client.tasks(all=True)}  # rebuilt
    assert (records[after].status, records[after].exit_code) == ("failed", 7)
    assert {n.task_id for n in client.notifications()} == {after, moved.background_task_id}
    assert client.notifications() == []


def test_deleted_journal_is_rebuilt(client: Client, state_dir: Path) -> None:
    (tid,) = _ended_then_stopped(client, state_dir, ["echo hi"])
    for suffix in ("", "-wal", "-shm"):
        Path(f"{state_dir / 'journal.db'}{suffix}").unlink(missing_ok=True)
    (task,) = client.tasks(all=True)
    assert (task.id, task.status, task.command) == (tid, "completed", "echo hi")


def test_a_journal_is_rebuilt_from_records_of_either_layout(
    client: Client, state_dir: Path
) -> None:
    """A task's record is in its exit record (no file of its own); a task of an earlier
    version has it in a ``.json``. Both are rebuilt, each under its own ID and files,
    whatever its record says (a sandboxed command can write its exit record)."""
    ids = _ended_then_stopped(client, state_dir, [f"echo {i}; exit {i}" for i in range(3)])
    tasks = state_dir / "tasks"
    assert not list(tasks.glob("*.json"))  # one file besides the log
    old, forged = (tasks / f"{tid}.exit" for tid in ids[1:])
    status, record = old.read_bytes()[:8], read_exit_record(old).record or b""
    old.write_bytes(status)  # an earlier version's layout: the record in a file of its own
    (tasks / f"{ids[1]}.json").write_bytes(record)
    fields = json.loads(read_exit_record(forged).record or b"")
    fields.update(id=ids[0], output_path="/etc/passwd", command="forged")
    forged.write_bytes(forged.read_bytes()[:8] + json.dumps(fields).encode() + b"\n")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{state_dir / 'journal.db'}{suffix}").unlink(missing_ok=True)
    records = {t.id: t for t in client.tasks(all=True)}
    assert sorted(records) == sorted(ids)
    for code, tid in enumerate(ids):
        assert (records[tid].exit_code, records[tid].output_path) == (
            code,
            str(tasks / f"{tid}.log"),
        )
    assert records[ids[1]].command == "echo 1; exit 1"
    assert records[ids[2]].command == "forged"  # its own row only
    assert "cannot rebuild" not in (state_dir / "supervisor.log").read_text()


def test_leftover_wal_after_kill_keeps_every_row(client: Client, state_dir: Path) -> None:
    ids = [start_bg(client, f"echo {i}") for i in range(5)]
    for tid in ids:
        client.wait(tid, timeout=10_000)
    kill_supervisor(state_dir)
    assert (state_dir / "journal.db-wal").exists()
    records = {t.id: t.status for t in client.tasks(all=True)}
    assert records == dict.fromkeys(ids, "completed")
    assert not list(state_dir.glob("journal.db.corrupt-*"))


def test_an_end_nobody_waits_for_is_committed_and_logged(client: Client, state_dir: Path) -> None:
    """A task's end is committed and logged once a reply has gone out; when none goes out
    (nobody waits for it, no request comes), a timer does it."""
    tid = start_bg(client, "exit 3")

    def committed() -> bool:
        return [r["status"] for r in journal_rows(state_dir) if r["id"] == tid] == ["failed"]

    wait_until(committed)
    wait_until(lambda: f"{tid} failed (exit 3)" in (state_dir / "supervisor.log").read_text())


def test_journal_holds_no_environment_values(
    client: Client, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAVE_TEST_SECRET", "s3cr3t-v4lue-0123")
    assert client.bash("echo ${#WAVE_TEST_SECRET}").stdout == "17"  # the command did get it
    client.bash("true", run_in_background=True)
    kill_supervisor(state_dir)
    for path in [*state_dir.glob("journal.db*"), *(state_dir / "tasks").glob("*.json")]:
        assert b"s3cr3t-v4lue-0123" not in path.read_bytes(), path


def test_a_held_write_that_fails_otherwise_is_dropped_not_kept(tmp_path: Path) -> None:
    """A held write that fails for another reason than the disk (its task was pruned) is
    dropped and logged; the held writes beside it still reach the journal."""
    journal = Journal(tmp_path / "journal.db")
    try:
        row = _running_row()
        journal.insert_task(row)

        def doomed(db: sqlite3.Connection) -> None:  # an offset for a task that is gone
            db.execute("INSERT INTO read_offsets VALUES ('gone', 's', 5)")

        journal._held[("offset", "gone", "s")] = doomed  # as if the disk had refused it
        row.status, row.exit_code = "failed", 7
        journal.save_row(row)  # the next write replays what was held first
        assert journal.held == 0
        assert journal.get("t1").exit_code == 7  # type: ignore[union-attr]
        assert journal.read_offset("gone", "s") == 0
    finally:
        journal.close()


def _running_row() -> TaskRow:
    """A running task's row, ``t1`` of session ``s``."""
    return TaskRow(
        id="t1", command="true", description=None, session="s", cwd="/", shell=None,
        status="running", owner="background", background_reason="explicit",
        owner_changed_at=None, exit_code=None, pid=None, pid_start=None, boot_id=None,
        started_at=1.0, ended_at=None, output_path="/x.log", err_path=None, timeout_ms=None,
    )  # fmt: skip


def test_a_read_whose_reply_never_left_gives_back_nothing(tmp_path: Path) -> None:
    """Two readers of one session read the same output (one's caller gone as it waited
    for its turn, it read without it); the other's reply left and recorded the read; the
    first's could not be sent, and giving its read back moved the offset back: that
    output was shown twice (a review). A read gives back only what it recorded."""
    from types import SimpleNamespace

    from wave_bash.supervisor.handlers.output import _recorded_read

    journal = Journal(tmp_path / "journal.db")
    try:
        row = _running_row()
        journal.insert_task(row)
        ctx: Any = SimpleNamespace(journal=journal)
        left, _ = _recorded_read(ctx, "t1", "s", 0, 12)
        _, never_left = _recorded_read(ctx, "t1", "s", 0, 12)
        left()
        assert not never_left() and journal.read_offset("t1", "s") == 12
        record, give_back = _recorded_read(ctx, "t1", "s", 12, 20)
        record()  # (its reply left; then its relay said it never reached the host)
        assert give_back() and journal.read_offset("t1", "s") == 12
    finally:
        journal.close()


def test_an_end_takes_the_place_of_its_prompts_notice_whatever_the_clocks(
    tmp_path: Path,
) -> None:
    """An interactive task's prompt notice, delivered, then its end: the end's notice is
    pending again, even where the end's time reads before the prompt's (an exit file's
    coarse clock, a clock stepped back: the end was lost, a review); a foreground end
    (its caller back) takes the prompt's away."""
    journal = Journal(tmp_path / "journal.db")
    try:
        for task_id in ("t1", "t2"):
            journal.insert_task(TaskRow(
                id=task_id, command="python3", description=None, session="s", cwd="/",
                shell=None, status="running", owner="background",
                background_reason="caller_lost", owner_changed_at=None, exit_code=None,
                pid=None, pid_start=None, boot_id=None, started_at=1.0, ended_at=None,
                output_path="/x.log", err_path=None, timeout_ms=None, interactive=True,
            ))  # fmt: skip
        ended = {}
        for task_id in ("t1", "t2"):
            row = journal.get(task_id)
            assert row is not None
            journal.post_prompt_notice(row)
            ended[task_id] = row
        assert [r.id for r in journal.pending_notices("s")] == ["t1", "t2"]
        assert journal.mark_delivered("s", ["t1"]) == 1
        first = ended["t1"]
        first.status, first.exit_code, first.ended_at = "completed", 0, 2.0  # (before)
        journal.finish_task(first, "s", prompted=True)
        second = ended["t2"]
        second.owner, second.status, second.exit_code, second.ended_at = (
            "foreground", "completed", 0, 3.0,
        )  # fmt: skip
        journal.finish_task(second, None, prompted=True)
        journal.flush()
        assert [r.id for r in journal.pending_notices("s")] == ["t1"]
    finally:
        journal.close()


def test_a_held_write_replaced_goes_after_those_made_since(tmp_path: Path) -> None:
    """Writes held (a full disk, or deferred after replies) are applied in the order
    they were last made: an end's notice that replaced a prompt's kept that one's place,
    before the prompt's delivery made since, which then marked the end delivered (a
    review)."""
    journal = Journal(tmp_path / "journal.db")
    try:
        journal.defer_writes(lambda flush: None)  # (held until flushed)
        row = TaskRow(
            id="t1", command="python3", description=None, session="s", cwd="/", shell=None,
            status="running", owner="background", background_reason="caller_lost",
            owner_changed_at=None, exit_code=None, pid=None, pid_start=None, boot_id=None,
            started_at=1.0, ended_at=None, output_path="/x.log", err_path=None,
            timeout_ms=None, interactive=True,
        )  # fmt: skip
        journal.insert_task(row)
        journal.post_prompt_notice(row)
        assert journal.mark_delivered("s", ["t1"]) == 1  # (a caller back got the prompt)
        row.status, row.exit_code, row.ended_at = "completed", 0, 5.0
        journal.finish_task(row, "s", prompted=True)
        journal.flush()
        assert [r.id for r in journal.pending_notices("s")] == ["t1"]
    finally:
        journal.close()
