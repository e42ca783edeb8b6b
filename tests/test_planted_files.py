"""A command that puts something else where its task's files are (a FIFO, a directory)
holds no reader of them: the supervisor answers everyone, and starts again (a review
froze it for every caller with one `mkfifo`, and kept every later supervisor from
starting)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from conftest import start_bg

from wave_bash.api import Client
from wave_bash.worker import open_regular
from wave_bash.worker.planted import _git_config, _gitdir

pytestmark = pytest.mark.timeout(120)


def test_open_regular_refuses_what_is_no_regular_file_without_waiting(tmp_path: Path) -> None:
    fifo, folder, link, plain = (tmp_path / n for n in ("fifo", "dir", "link", "plain"))
    os.mkfifo(fifo)
    folder.mkdir()
    plain.write_bytes(b"x")
    link.symlink_to(plain)
    for path in (fifo, folder, link):
        with pytest.raises(OSError):
            open_regular(path).close()
    with open_regular(link, follow=True) as fh:
        assert fh.read() == b"x"
    os.mkfifo(tmp_path / ".git")  # the sandbox reads a workspace's git files: no waiting
    assert _gitdir(str(tmp_path / ".git")) is None
    assert _git_config(str(tmp_path / ".git")) == {}


def test_a_log_replaced_by_a_fifo_holds_no_reader(client: Client, state_dir: Path) -> None:
    log = f"{state_dir}/tasks/$WAVE_TASK_ID.log"
    r = client.bash(f"echo hi; rm {log}; mkfifo {log}")
    assert r.success and r.stdout == ""
    tid = start_bg(client, f"rm {log}; mkfifo {log}; sleep 60")
    assert client.task_output(tid, block=False).output == ""
    assert client.task_output(tid, timeout=500).output == ""  # (a log gone: looked at, no watch)
    assert any(t.id == tid for t in client.tasks())
    client.task_stop(tid)
    folder = client.bash(f"rm {log}; mkdir {log}")  # (was an internal error)
    assert folder.success and folder.stdout == ""
    tid = start_bg(client, f"rm {log}; mkdir {log}; sleep 60")
    assert client.task_output(tid, timeout=500, pattern="x").output == ""  # (a pattern too)
    client.task_stop(tid)


def test_an_exit_record_replaced_by_a_fifo_holds_no_reader(client: Client, state_dir: Path) -> None:
    exit_record = f"{state_dir}/tasks/$WAVE_TASK_ID.exit"
    tid = start_bg(client, f"rm {exit_record}; mkfifo {exit_record}; exit 4")
    assert client.wait(tid, timeout=20_000).exit_code == 4
    assert client.bash("echo still").stdout == "still"


def test_a_planted_fifo_keeps_no_supervisor_from_starting(state_dir: Path) -> None:
    client = Client(state_dir=state_dir)
    client.bash("true")
    tasks = state_dir / "tasks"
    (tasks / "zzzzzzzz.log").write_bytes(b"")
    os.mkfifo(tasks / "zzzzzzzz.exit")
    os.mkfifo(tasks / "yyyyyyyy.json")  # (an earlier version's record file)
    client.shutdown()
    assert client.bash("echo next").stdout == "next"  # re-reading its tasks at start
    client.shutdown()
    for journal in state_dir.glob("journal*"):  # rebuilt from the task files
        journal.unlink()
    assert client.bash("echo again").stdout == "again"


def test_a_terminal_log_replaced_by_a_fifo_holds_no_reader(tmp_path: Path) -> None:
    """What an attached person reads of an interactive task comes from its log."""
    from wave_bash.supervisor.handlers.terminal import _read_at

    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    done = threading.Event()
    result: list[bytes] = []
    reader = threading.Thread(
        target=lambda: (result.append(_read_at(str(fifo), 0, 10)), done.set())
    )
    reader.daemon = True
    reader.start()
    assert done.wait(5), "the read waited on a FIFO"
    assert result == [b""]
    shutil.rmtree(tmp_path, ignore_errors=True)
