"""A full disk loses no exit code, hangs no call and gives clear errors (issue 11 §3, §5).

The state dir is a real 8 MB tmpfs (CI runs as root); it is filled by a command or by a
filler file, then space is given back.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from conftest import (
    as_nobody,
    journal_rows,
    kill_supervisor,
    needs_root,
    needs_tool,
    reap,
    run_cli,
    start_bg,
    task_alive,
    wait_until,
)
from test_mcp import run as run_mcp
from test_mcp import text as mcp_text

from wave_bash.api import Client, StorageError, SupervisorUnavailableError, texts
from wave_bash.api.errors import StateDirError, TaskNotFoundError
from wave_bash.worker import read_exit_record


@pytest.fixture
def small_state_dir() -> Iterator[Path]:
    """A state dir on its own 8 MB tmpfs, unmounted afterwards."""
    needs_root("mounting a tmpfs needs root (CI runs as root)")
    path = Path(tempfile.mkdtemp(prefix="wb-full-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", str(path)],
                   check=True)  # fmt: skip
    try:
        yield path
    finally:
        reap(path)
        subprocess.run(["umount", "-l", str(path)], check=False)
        shutil.rmtree(path, ignore_errors=True)


def fill(path: Path) -> Path:
    """Fill the file system of ``path`` to the last byte; returns the filler file."""
    filler = path / "filler"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    with contextlib.suppress(OSError), open(filler, "ab") as fh:  # the last partial block
        while True:
            fh.write(b"\0")
            fh.flush()
    return filler


def end_on_a_full_disk(client: Client, state_dir: Path, tmp_path: Path) -> tuple[str, Path]:
    """A background task that exits 6 just after the disk filled up; (its ID, the filler)."""
    flag = tmp_path / "go"
    tid = client.bash(
        f"while [ ! -e {flag} ]; do sleep 0.02; done; exit 6", run_in_background=True
    ).background_task_id
    assert tid
    filler = fill(state_dir)
    flag.touch()
    return tid, filler


def held_writes(client: Client) -> int:
    return client.status().held_writes


def test_foreground_command_that_fills_the_disk(small_state_dir: Path, tmp_path: Path) -> None:
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    assert client.bash("echo warm").stdout == "warm"
    started = time.monotonic()
    r = client.bash("head -c 50M /dev/zero", timeout=60_000)
    assert time.monotonic() - started < 20  # returns promptly, not after its timeout
    assert r.exit_code == 1 and not r.success  # head failed to write: its true status
    assert r.error and "No space left on device" in r.error and str(small_state_dir) in r.error
    assert "No space left on device" in r.message
    # While the disk is full every call gets a clear result, never an internal error.
    r2 = client.bash("echo hi")
    assert not r2.success and r2.error and "No space left on device" in r2.error, r2
    assert "not started" in r2.error and r2.error.endswith("free some space there")
    bg = client.bash("echo hi", run_in_background=True)
    assert not bg.success and bg.error and "No space left on device" in bg.error
    assert [t.status for t in client.tasks()] == ["completed", "failed"]
    assert client.status().running_tasks == 0
    # Space comes back: everything works again and the journal catches up.
    os.truncate(r.output_path, 0)
    assert client.bash("echo again").stdout == "again"
    wait_until(lambda: held_writes(client) == 0)
    rows = {row["command"]: row for row in journal_rows(small_state_dir)}
    assert (
        rows["head -c 50M /dev/zero"]["status"],
        rows["head -c 50M /dev/zero"]["exit_code"],
    ) == (
        "failed",
        1,
    )


def test_background_end_is_kept_while_the_disk_is_full(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """The journal refuses the end: the exit code is held in memory (seen by ``wait``),
    journaled once space returns, and announced exactly once then."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    tid, filler = end_on_a_full_disk(client, small_state_dir, tmp_path)
    record = client.wait(tid, timeout=20_000)
    assert (record.status, record.exit_code) == ("failed", 6)
    assert held_writes(client) > 0  # the journal did refuse it: the held path was taken
    assert client.status().storage_problem == "No space left on device"
    assert client.status().running_tasks == 0
    # A delivery cannot be recorded yet: it waits, and that is said (an empty list, and
    # the CLI said nothing with exit 0: reviews)
    with pytest.raises(StorageError, match="its notice waits until the state dir"):
        client.notifications()
    claim = client.claim_notices()
    assert (claim.notices, claim.waiting) == ([], 1)
    assert claim.storage_problem == "No space left on device"
    said = run_cli(small_state_dir, "notifications")
    assert (said.returncode, said.stdout) == (2, "")
    assert "a background task ended; its notice waits until the state dir" in said.stderr
    assert "No space left on device" in said.stderr
    as_json = run_cli(small_state_dir, "notifications", "--json")  # (one JSON value: `[]`
    assert json.loads(as_json.stdout)["success"] is False  # came first, a before-stop read)
    told = run_mcp(
        small_state_dir,
        lambda s: s.call_tool("Bash", {"command": "echo hi"}),
        *("--session", client.session),
    )
    assert "its notice waits until the state dir can be written again" in mcp_text(told)
    filler.unlink()
    wait_until(lambda: held_writes(client) == 0)
    notices = client.notifications()
    assert [(n.task_id, n.exit_code) for n in notices] == [(tid, 6)]
    # What the full disk did is said, as a foreground result says it (it was not: a review)
    assert notices[0].message.endswith(
        f"No space left on device in the state dir {small_state_dir}: output it wrote "
        "meanwhile may be lost, as its log could not grow; its end is kept, and recorded "
        "once there is space again"
    ), notices[0].message
    row = next(r for r in journal_rows(small_state_dir) if r["id"] == tid)
    assert (row["status"], row["exit_code"]) == ("failed", 6)
    db = sqlite3.connect(small_state_dir / "journal.db")
    try:
        (delivered,) = db.execute(
            "SELECT delivered_at FROM notices WHERE task_id = ?", (tid,)
        ).fetchone()
    finally:
        db.close()
    assert delivered is not None
    assert client.notifications() == []


def test_gc_frees_a_full_state_dir(small_state_dir: Path, tmp_path: Path) -> None:
    """`gc`, the remedy for a full state dir, removed nothing there once a prune marked
    its rows before their files: the mark could not be written (a review). The files go
    all the same, and so do the rows once there is room."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    ended = [start_bg(client, "head -c 2M /dev/zero") for _ in range(2)]
    for task_id in ended:
        client.wait(task_id, timeout=20_000)
    client.notifications()  # (read: nothing keeps them)
    filler = fill(small_state_dir)
    try:
        removed = client.gc(older_than=0)
        assert sorted(removed) == sorted(ended)
        assert not [p for p in (small_state_dir / "tasks").iterdir() if p.name[:8] in ended]
        assert client.tasks(all=True) == []
    finally:
        filler.unlink()


def test_gc_frees_the_space_of_the_task_that_filled_the_disk(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """The task whose output filled the disk ended last, and its end could not be written:
    a prune left every task with a held write, so `gc` (the remedy for a full state dir)
    removed only the others, and failed on the journal's own write (a trial). It takes
    that task as its held row says, files first, then its row, its held writes with it."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    assert client.bash("echo ok").stdout == "ok"
    filled = client.bash("head -c 20M /dev/zero | tr '\\0' a; exit 4", timeout=60_000)
    assert filled.exit_code == 4 and "No space left on device" in (filled.error or "")
    assert held_writes(client) > 0  # (its end waits for the disk)
    log = Path(filled.output_path)
    everything = sorted(t.id for t in client.tasks(all=True))
    assert log.name.split(".")[0] in everything and len(everything) == 2
    assert sorted(client.gc(older_than=0, unread=True)) == everything
    assert not log.exists()
    assert client.status().storage_problem is None  # (it said "full" until another write
    # came: the disk had taken the deletion, a trial)
    wait_until(lambda: held_writes(client) == 0)
    assert client.tasks(all=True) == []
    assert client.bash("echo again").stdout == "again"


def test_a_gc_that_the_full_disk_cuts_short_names_what_it_kept(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """A plain `gc` keeps tasks whose notice no session has read, and a background task
    that filled the disk is one (its notice cannot be read while the disk is full): it
    said the disk was full, and no more (a trial). It says what it kept, and how."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    done = client.bash("true")
    task_id = Path(done.output_path).name.split(".")[0]
    filler = fill(small_state_dir)
    try:
        with pytest.raises(StorageError, match="`gc --unread` prunes them too"):
            client.gc(older_than=0)
        # Its files went, its row stays: it reads as being deleted, not as a log removed
        # outside wave-bash (a trial), and the next prune takes it
        assert client.tasks(all=True) == []
        with pytest.raises(TaskNotFoundError):
            client.task_output(task_id)
    finally:
        filler.unlink()
    assert client.gc(older_than=0) == [task_id]


def test_a_gc_on_a_full_disk_counts_the_unread_end_it_holds(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """A background task that ended on the full disk has its end and notice held in
    memory (DF2): a plain `gc` kept it unread and said `keptUnread: 0`, with no word of
    `--unread`, as the count read the journal's file alone (a trial)."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    task_id, filler = end_on_a_full_disk(client, small_state_dir, tmp_path)
    try:
        wait_until(lambda: client.wait(task_id, timeout=0).status == "failed")
        assert held_writes(client) > 0
        result = run_cli(small_state_dir, "gc", "--older-than", "0", "--json")
        assert (json.loads(result.stdout)["keptUnread"], result.returncode) == (1, 0)
        said = run_cli(small_state_dir, "gc", "--older-than", "0")
        assert "kept 1" in said.stdout + said.stderr and "--unread" in said.stdout + said.stderr
    finally:
        filler.unlink()


def test_a_read_that_shows_an_end_on_a_full_disk_says_so(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """DF4's line was in the background task's notice alone, and the TaskOutput (or
    TaskInput, `output`) that showed the end confirmed that notice: the line was never
    seen (a leftover). The read says it too."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    task_id, filler = end_on_a_full_disk(client, small_state_dir, tmp_path)
    try:
        wait_until(lambda: client.wait(task_id, timeout=0).status == "failed")
        read = client.call_tool("TaskOutput", {"task_id": task_id})
        line = "output it wrote meanwhile may be lost, as its log could not grow"
        assert (read["exitCode"], line in (read["error"] or "")) == (6, True), read
        assert texts.tool_result_text("TaskOutput", read).endswith(read["error"])
        said = run_cli(small_state_dir, "output", task_id)
        assert line in said.stderr, said
    finally:
        filler.unlink()


def test_read_only_tasks_dir(small_state_dir: Path, tmp_path: Path) -> None:
    """tasks/ cannot be written: no trap error in the output, a clear error for new
    commands, and a running task that ends meanwhile keeps its exit code (3)."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    flag = tmp_path / "go"
    tid = client.bash(
        f"while [ ! -e {flag} ]; do sleep 0.02; done; cd /; echo out; exit 3",
        run_in_background=True,
    ).background_task_id
    assert tid
    tasks = small_state_dir / "tasks"
    # The standby monitor started once that reply went out (its log open for writing): on
    # the new mount, it would keep it from turning read-only ("mount point is busy").
    wait_until(lambda: len(list(tasks.glob("*.log"))) >= 2)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tasks)], check=True)
    try:
        # The running task's files are hidden under the new mount, which is read-only.
        subprocess.run(["mount", "-o", "remount,ro", str(tasks)], check=True)
        flag.touch()
        record = client.wait(tid, timeout=20_000)
        assert (record.status, record.exit_code) == ("failed", 3)
        r = client.bash("echo hi")
        assert not r.success and r.error and "Read-only file system" in r.error, r
        assert r.error.endswith("make it writable again") and "space" not in r.error, r
    finally:
        subprocess.run(["umount", "-l", str(tasks)], check=False)
    r = client.bash("cd /; echo ok")
    assert r.success and r.stdout == "ok", r  # no "Permission denied" line from the trap


def test_a_task_ending_under_a_read_only_state_dir_keeps_its_status(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """The state dir mounted read-only over itself while no supervisor ran, as tasks
    ended: each was `lost` (its monitor opened its exit record by its path). The monitor
    writes the status through the descriptor it holds from its start."""
    client = Client(state_dir=small_state_dir)
    gate = tmp_path / "go"
    tid = start_bg(client, f"until [ -e {gate} ]; do sleep 0.02; done; exit 21")
    kill_supervisor(small_state_dir)
    here = str(small_state_dir)
    subprocess.run(["mount", "--bind", here, here], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", here], check=True)
        gate.touch()
        wait_until(lambda: not task_alive(tid), timeout=20)
    finally:
        subprocess.run(["umount", here], check=True)  # (the read-only one, over it)
    assert client.wait(tid, timeout=20_000).exit_code == 21


def test_a_read_only_state_dir_with_no_supervisor_is_said_plainly(small_state_dir: Path) -> None:
    """A state dir remounted read-only while no supervisor ran: every call failed with
    `[Errno 30] Read-only file system: '…/.write-probe-x8f'` (a trial)."""
    subprocess.run(["mount", "-o", "remount,ro", str(small_state_dir)], check=True)
    try:
        with pytest.raises(StateDirError) as refused:
            Client(state_dir=small_state_dir).tasks()
        assert refused.value.message == (
            f"state dir {small_state_dir} is on a read-only file system: make it writable, "
            "or use another (--state-dir, WAVE_STATE_DIR)"
        )
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_state_dir)], check=True)


def test_end_survives_a_killed_supervisor_while_the_disk_is_full(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """The exit record's space is reserved when the task starts, so the monitor writes it
    on a full disk too: a supervisor killed with its journal writes still held is
    replaced by one that reads the true exit code back (held writes die with it)."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    tid, filler = end_on_a_full_disk(client, small_state_dir, tmp_path)
    assert client.wait(tid, timeout=20_000).exit_code == 6
    assert held_writes(client) > 0
    assert read_exit_record(small_state_dir / "tasks" / f"{tid}.exit").status == 6
    kill_supervisor(small_state_dir)
    filler.unlink()
    (record,) = [t for t in client.tasks() if t.id == tid]  # a new supervisor recovered it
    assert (record.status, record.exit_code) == ("failed", 6)
    assert [(n.task_id, n.exit_code) for n in client.notifications()] == [(tid, 6)]
    assert client.notifications() == []


def test_a_supervisor_stopped_with_held_writes_says_so(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """`supervisor stop` with writes held stopped without a word of them (a review): it
    says how many and what the next supervisor recovers (DF5)."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    tid, filler = end_on_a_full_disk(client, small_state_dir, tmp_path)
    assert client.wait(tid, timeout=20_000).exit_code == 6
    held = held_writes(client)
    assert held > 0
    stopped = run_cli(small_state_dir, "supervisor", "stop")
    assert (stopped.returncode, stopped.stdout) == (0, "supervisor stopped\n")
    assert f"held {held} journal write(s) the state dir refused (No space left" in stopped.stderr
    assert "reads every task's end back from its exit record" in stopped.stderr
    filler.unlink()
    (record,) = [t for t in client.tasks() if t.id == tid]
    assert (record.status, record.exit_code) == ("failed", 6)
    calm = run_cli(small_state_dir, "supervisor", "stop")  # nothing held: nothing said
    assert (calm.stdout, calm.stderr) == ("supervisor stopped\n", "")


def test_a_stop_survives_a_killed_supervisor_while_the_disk_is_full(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """The journal's record of a stop, made before its first signal, was held by a full
    disk and died with a supervisor killed then: the task ended "killed by signal 15", no
    longer stopped (a review). The stop marks the task's exit record too, in space it
    has, and the next supervisor reads the reason there."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    tid = start_bg(client, "sleep 300")
    filler = fill(small_state_dir)
    assert client.task_stop(tid).status == "killed"
    assert held_writes(client) > 0
    kill_supervisor(small_state_dir)
    filler.unlink()
    (record,) = [t for t in client.tasks() if t.id == tid]  # a new supervisor recovered it
    assert (record.status, record.end_reason, record.exit_code) == ("killed", "stopped", 143)
    (notice,) = client.notifications()
    assert "was stopped" in notice.message, notice.message


def test_a_held_write_that_can_no_longer_be_made_blocks_nothing(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """A read offset held while the disk is full, for a task pruned once space returns:
    that write is dropped, every other write goes on (it used to block the journal)."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    tid = client.bash("echo done", run_in_background=True).background_task_id
    assert tid
    client.wait(tid, timeout=10_000)
    filler = fill(small_state_dir)
    assert client.status().storage_problem == "No space left on device"  # (no write failed
    assert client.task_output(tid).output == "done"  # yet) its read offset is held
    assert held_writes(client) > 0
    filler.unlink()
    client.gc(older_than=0)  # prunes the task the held offset belongs to
    wait_until(lambda: held_writes(client) == 0)
    bg = client.bash("exit 7", run_in_background=True).background_task_id
    assert bg and client.wait(bg, timeout=10_000).exit_code == 7
    wait_until(lambda: client.notifications())
    row = next(r for r in journal_rows(small_state_dir) if r["id"] == bg)
    assert (row["status"], row["exit_code"]) == ("failed", 7)
    assert client.status().storage_problem is None


def test_the_cli_keeps_the_result_of_a_command_that_filled_the_disk(
    small_state_dir: Path,
) -> None:
    """`wave-bash run` prints what the command printed and exits with its own status,
    the state dir's trouble on stderr (it printed only the trouble and exited 2)."""
    command = "echo before; head -c 20M /dev/zero | tr '\\0' b; echo; echo after; exit 3"
    r = run_cli(small_state_dir, "run", "--", command)
    assert r.returncode == 3, r.stderr
    assert r.stdout.startswith("before\nbbbb")  # "after" found no room in the log
    assert "No space left on device" in r.stderr and "Exit code" not in r.stderr


def test_a_full_disk_starts_no_standby_and_leaves_no_file(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """A command refused on a full disk (its record cannot be written) took a standby: none
    is started again while the disk is full, none leaves a file, and once there is room
    again the next commands run and find standbys again."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    for _ in range(2):
        client.bash("true")
    sup = psutil.Process(client.status().pid or 0)
    wait_until(lambda: len(sup.children()) == 2)  # two standbys wait
    before = {p.pid for p in sup.children()}
    tasks = small_state_dir / "tasks"
    files = {p.name for p in tasks.iterdir()}
    filler = fill(small_state_dir)
    r = client.bash("echo hi")
    assert not r.success and r.error and "No space left" in r.error, r
    for _ in range(3):
        client.status()
    wait_until(lambda: {p.pid for p in sup.children()} < before)  # the one it took let go
    assert {p.pid for p in sup.children()} < before  # and none new
    assert {p.name for p in tasks.iterdir()} <= files  # nothing half made
    filler.unlink()
    assert client.bash("echo hi").stdout == "hi"
    assert client.bash("echo again").stdout == "again"
    wait_until(lambda: len(sup.children()) == 2)


def test_a_supervisor_started_on_a_full_disk_keeps_the_journal(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """A supervisor that cannot open its journal for want of space says so and keeps it:
    it took the disk's error for damage, moved the journal aside and rebuilt an empty
    one on the full disk, which later passed its check: every task and unread notice
    was gone (found by a review)."""
    client = Client(state_dir=small_state_dir, cwd=tmp_path)
    tid = client.bash("exit 42", run_in_background=True).background_task_id
    assert tid and client.wait(tid, timeout=10_000).exit_code == 42
    kill_supervisor(small_state_dir, signal.SIGTERM)
    filler = fill(small_state_dir)
    try:
        for _ in range(2):  # each start refused, saying why
            with pytest.raises(SupervisorUnavailableError, match="No space left on device"):
                client.tasks()
            assert not list(small_state_dir.glob("journal.db.corrupt-*"))
    finally:
        filler.unlink()
    (record,) = client.tasks()
    assert (record.id, record.exit_code) == (tid, 42)
    assert [n.task_id for n in client.notifications()] == [tid]


def test_a_first_start_on_a_full_disk_says_why(small_state_dir: Path, tmp_path: Path) -> None:
    """It said "see supervisor.log", an empty log on that disk, and left a new journal
    moved aside as corrupt at every try."""
    filler = fill(small_state_dir)
    try:
        for _ in range(2):
            with pytest.raises(SupervisorUnavailableError, match="No space left on device"):
                Client(state_dir=small_state_dir, cwd=tmp_path).bash("true")
        assert not [p.name for p in small_state_dir.iterdir() if p.name.startswith("journal")]
    finally:
        filler.unlink()
    assert Client(state_dir=small_state_dir, cwd=tmp_path).bash("echo hi").stdout == "hi"


def test_a_state_dir_out_of_inodes_gets_a_replacement_supervisor(tmp_path: Path) -> None:
    """DF5 with no inode left (not bytes): the client's probe of the state dir found it
    unwritable and no supervisor replaced a killed one (a review); a full dir is still
    writable, its journal and exit records exist, the stale socket's inode is reused."""
    needs_root("mounting a tmpfs needs root (CI runs as root)")
    mount = Path(tempfile.mkdtemp(prefix="wb-inodes-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,nr_inodes=40,mode=0700", "tmpfs",
                    str(mount)], check=True)  # fmt: skip
    state = mount / "sd"
    try:
        client = Client(state_dir=state, cwd=tmp_path)
        flag = tmp_path / "go"
        started = []
        for i in range(25):  # until the inodes run out: then refused (DF3)
            r = client.bash(f"until [ -e {flag} ]; do sleep 0.02; done; exit {i % 5}",
                            run_in_background=True)  # fmt: skip
            if r.background_task_id is None:  # (said so: `df` shows bytes free; a review)
                assert "No space left on device (no free inodes)" in (r.error or ""), r.error
                assert "`df -i`" in (r.error or "")
                break
            started.append((r.background_task_id, i % 5))
        assert 5 <= len(started) < 25
        kill_supervisor(state)
        flag.touch()
        for task_id, code in started:  # a new supervisor re-adopted each: its true code
            assert client.wait(task_id, timeout=20_000).exit_code == code
    finally:
        reap(state)
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


@contextlib.contextmanager
def mounted(kind: str, *options: str) -> Iterator[Path]:
    """A file system of its own (``kind``: tmpfs, or ext4 on a loop-mounted image)."""
    needs_root("mounting a file system needs root (CI runs as root)")
    mount = Path(tempfile.mkdtemp(prefix="wb-mount-", dir="/tmp"))
    image = mount.with_suffix(".img")
    try:
        if kind == "tmpfs":
            subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs",
                            str(mount)], check=True)  # fmt: skip
        else:
            with open(image, "wb") as fh:
                fh.truncate(16 << 20)
            subprocess.run(["mkfs.ext4", "-q", "-F", *options, str(image)], check=True)
            if subprocess.run(["mount", "-o", "loop", str(image), str(mount)]).returncode:
                pytest.skip("no loop device to mount an ext4 image on")
        mount.chmod(0o700)
        yield mount
    finally:
        reap(mount / "sd")
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)
        image.unlink(missing_ok=True)


def test_status_names_a_state_dir_with_no_inode_left(tmp_path: Path) -> None:
    """Space left but no inode: no task can start (its log is a new file), and status
    says so before any start failed (it reported no problem)."""
    with mounted("tmpfs", "size=8m", "nr_inodes=64") as mount:
        client = Client(state_dir=mount / "sd", cwd=tmp_path)
        assert client.bash("echo warm").stdout == "warm"
        assert client.status().storage_problem is None
        fillers = mount / "fillers"
        fillers.mkdir()
        with contextlib.suppress(OSError):
            for i in range(64):
                (fillers / str(i)).touch()
        assert client.status().storage_problem == "No space left on device (no free inodes)"
        shown = run_cli(mount / "sd", "supervisor", "status").stdout  # (said only with held
        assert (
            "state dir: No space left on device (no free inodes) (no new command starts)" in shown
        )  # writes)
        shutil.rmtree(fillers)
        assert client.status().storage_problem is None


def test_the_space_kept_back_for_root_is_not_a_full_disk(tmp_path: Path) -> None:
    """ext4 keeps blocks back for root, who runs the supervisor here: where others can
    write nothing more, its writes still succeed, so nothing is reported full."""
    with mounted("ext4", "-m", "50") as mount:
        client = Client(state_dir=mount / "sd", cwd=tmp_path)
        assert client.bash("echo warm").stdout == "warm"
        others = mount / "others"
        others.mkdir(mode=0o777)
        others.chmod(0o777)
        mount.chmod(0o711)
        subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        "sh", "-c", f"cat /dev/zero > {others}/fill"], check=False,
                       stderr=subprocess.DEVNULL)  # fmt: skip
        st = os.statvfs(mount)
        assert st.f_bavail * st.f_frsize < 64 * 1024 < st.f_bfree * st.f_frsize
        assert client.status().storage_problem is None
        result = client.bash("echo still; exit 3")
        assert (result.stdout, result.exit_code, result.error) == ("still", 3, None)
        # root in a user namespace, as another user outside (a rootless container): its
        # writes fail there, and it is told so (a review)
        contained = as_nobody(lambda: _as_namespace_root(lambda: _problem(mount)))
        if contained.startswith(b"no user namespace"):
            pytest.skip(contained.decode())
        assert contained == b"No space left on device"


def test_a_state_dir_its_user_may_not_write_says_so(tmp_path: Path) -> None:
    """A `tasks/` made read-only to the supervisor's user: the refusal names the state dir
    and what to do, not a standby's log behind "wave-bash: wave-bash could not start the
    command" (a review). Root without the capabilities that pass over file modes."""
    needs_root("root drops the capabilities that let it write anywhere")
    needs_tool("setpriv", "util-linux")
    state = tmp_path / "state"
    limited = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    cli = [*limited, sys.executable, "-m", "wave_bash.api.cli"]
    env = {**os.environ, "WAVE_STATE_DIR": str(state)}

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cli, *words], capture_output=True, text=True, env=env, timeout=60)

    try:
        assert run("run", "--", "echo warm").stdout == "warm\n"
        (state / "tasks").chmod(0o555)
        refused = [run("run", "--", "echo no") for _ in range(3)]  # (standbys made before)
        assert refused[-1].returncode == 2, refused[-1]
        said = refused[-1].stderr
        assert f"Permission denied in the state dir {state}: the command was not started" in said
        assert "ls -ld" in said and "wave-bash: wave-bash" not in said
    finally:
        (state / "tasks").chmod(0o700)
        run("supervisor", "stop")


def _problem(path: Path) -> bytes:
    from wave_bash.supervisor import journal

    with contextlib.suppress(AttributeError):
        journal._real_root.cache_clear()  # (this process's user changed)
    return str(journal.disk_problem(path)).encode()


def _as_namespace_root(action: Callable[[], bytes]) -> bytes:
    """``action`` as root of a new user namespace (mapped to this user outside)."""
    import ctypes

    uid, gid = os.getuid(), os.getgid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(4, 1)  # PR_SET_DUMPABLE: its /proc/self is its own again after setuid
    if libc.unshare(0x10000000):  # CLONE_NEWUSER
        return f"no user namespace: {os.strerror(ctypes.get_errno())}".encode()
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    return action()


def test_an_end_an_mcp_result_shows_on_a_full_disk_is_no_notice_later(
    small_state_dir: Path, tmp_path: Path
) -> None:
    """A TaskOutput result showing an end confirms its notice, which the result's claim
    holds; on a full disk no claim is recorded, and the end came again as a notice once
    there was space (a trial). The end it shows is confirmed by itself."""
    import anyio
    import mcp.types as types

    from wave_bash.api.mcp_compat import ToolRequest
    from wave_bash.api.mcp_server import WaveMcp

    client = Client(state_dir=small_state_dir, cwd=tmp_path, session="full")
    task_id, filler = end_on_a_full_disk(client, small_state_dir, tmp_path)
    handlers = WaveMcp(client)

    async def nothing(*args: object) -> None:
        return None

    async def read() -> types.CallToolResult:
        request = ToolRequest(id=4, report_progress=nothing, ask_user=nothing)
        params = types.CallToolRequestParams(name="TaskOutput", arguments={"task_id": task_id})
        result = await handlers.call_tool(request, params)
        await handlers.written(4)
        return result

    try:
        wait_until(lambda: client.wait(task_id, timeout=0).status == "failed")
        shown = anyio.run(read)
        assert "exit code 6" in str(shown.content[0])
        assert handlers.end_acks.drain(10)
    finally:
        filler.unlink()
    reader = Client(state_dir=small_state_dir, session="full")
    wait_until(lambda: held_writes(reader) == 0)
    assert reader.notifications() == []
    client.close()
