"""The Windows-only branches, taken on this OS through their injected switches (issue 7):
monitors without posix_spawn, tree stops without process groups, a daemon started without
fork, stop signals without loop signal handlers."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from pathlib import Path

from conftest import needs_tool, supervisor_pids, wait_until

from wave_bash.api import Client
from wave_bash.api.launch import start_supervisor
from wave_bash.api.paths import StateLayout
from wave_bash.supervisor.daemon import _on_stop_signals
from wave_bash.worker import (
    Shell,
    TaskFiles,
    read_exit_record,
    reap_monitor,
    start_monitor,
    stop_trees,
    tagged_processes,
)


def test_monitor_without_posix_spawn(tmp_path: Path) -> None:
    task_id = "p" + uuid.uuid4().hex[:8]
    files = TaskFiles.for_task(tmp_path, task_id)
    monitor = start_monitor(task_id, dict(os.environ), Shell("/bin/bash", "bash"), "/bin/bash",
                            files, use_posix_spawn=False)  # fmt: skip
    monitor.run("echo hi; ps -o pgid= -p $BASHPID; exit 4", str(tmp_path))
    pid = monitor.pid
    reap_monitor(pid, block=True)
    lines = files.log.read_text().split()
    assert lines[0] == "hi" and int(lines[1]) not in (os.getpgid(0), pid)  # its own group
    assert read_exit_record(files.exit).status == 4


def test_tree_stop_without_process_groups(tmp_path: Path) -> None:
    task_id = "q" + uuid.uuid4().hex[:8]
    files = TaskFiles.for_task(tmp_path, task_id)
    command = "setsid sleep 301 & ( setsid bash -c 'sleep 302 & wait' & ); sleep 300"
    monitor = start_monitor(task_id, dict(os.environ), Shell("/bin/bash", "bash"), "/bin/bash",
                            files)  # fmt: skip
    monitor.run(command, str(tmp_path))
    pid = monitor.pid
    try:
        wait_until(lambda: len(tagged_processes({task_id}).get(task_id, ())) >= 5)
        stop_trees([(task_id, pid)], protected={pid}, grace=1, use_groups=False)
        wait_until(lambda: tagged_processes({task_id}).get(task_id, set()) <= {pid})
        reap_monitor(pid, block=True)
        assert read_exit_record(files.exit).status in (143, 137)
    finally:
        for p in tagged_processes({task_id}).get(task_id, set()):
            os.kill(p, signal.SIGKILL)


def test_supervisor_started_without_fork(state_dir: Path) -> None:
    start_supervisor(StateLayout(state_dir), "unix", can_fork=False)  # returns at once
    assert Client(state_dir=state_dir).bash("echo detached").stdout == "detached"
    wait_until(lambda: len(supervisor_pids(state_dir)) == 1)  # a racing starter gave way


def test_stop_signals_without_loop_handlers() -> None:
    class NoSignalLoop:
        def __init__(self) -> None:
            self.calls: list[object] = []

        def add_signal_handler(self, *args: object) -> None:
            raise NotImplementedError  # as Windows' Proactor loop does

        def call_soon_threadsafe(self, callback: object) -> None:
            self.calls.append(callback)

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        loop, stop = NoSignalLoop(), asyncio.Event()
        _on_stop_signals(loop, stop)  # type: ignore[arg-type]
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler)
        handler(signal.SIGTERM, None)
        assert loop.calls == [stop.set]  # the handler only queues; the loop does the work
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def test_python_monitor_where_only_zsh_exists(tmp_path: Path) -> None:
    zsh = needs_tool("zsh", "zsh")
    task_id = "z" + uuid.uuid4().hex[:8]
    files = TaskFiles.for_task(tmp_path, task_id)
    monitor = start_monitor(task_id, dict(os.environ), Shell(zsh, "zsh"), None, files)
    monitor.run("echo $ZSH_VERSION; ps -o pgid= -p $$; exit 3", str(tmp_path))  # Python monitor
    pid = monitor.pid
    reap_monitor(pid, block=True)
    version, pgid = files.log.read_text().split()
    assert version and int(pgid) not in (os.getpgid(0), pid)
    assert read_exit_record(files.exit).status == 3
