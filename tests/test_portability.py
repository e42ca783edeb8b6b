"""The Windows-only branches, taken on this OS through their injected switches (issue 7):
monitors without posix_spawn, tree stops without process groups, a daemon started without
fork, stop signals without loop signal handlers."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import uuid
from pathlib import Path

import psutil
import pytest
from conftest import argvs_holding, needs_tool, supervisor_pids, wait_until

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


@pytest.mark.parametrize("monitor", ["bash", "python"])
def test_descriptors_given_to_a_monitor_reach_its_job(tmp_path: Path, monitor: str) -> None:
    """A sandbox's sources are the monitor's from its start (``inherited``), numbered as
    bubblewrap takes them, and its job's: the Python monitor, which closes every other
    descriptor for its job, passes them on too."""
    shell = Shell(needs_tool("zsh", "zsh"), "zsh") if monitor == "python" else Shell(
        "/bin/bash", "bash")  # fmt: skip
    source = tmp_path / "source"
    source.write_text("given\n")
    task_id = "z" + uuid.uuid4().hex[:8]
    files = TaskFiles.for_task(tmp_path, task_id)
    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    try:
        started = start_monitor(task_id, dict(os.environ), shell, None if monitor == "python"
                                else "/bin/bash", files, inherited=[(fd, 10), (fd, 12)])  # fmt: skip
    finally:
        os.close(fd)
    started.run("cat <&10; cat /dev/fd/12; cat <&11", str(tmp_path))
    reap_monitor(started.pid, block=True)
    assert files.log.read_text().startswith("given\ngiven\n"), files.log.read_text()
    assert "11" in files.log.read_text()  # (nothing else is passed: 11 is closed)


def test_a_monitor_that_cannot_start_leaks_no_descriptor(tmp_path: Path) -> None:
    """At the descriptor limit a monitor's start fails part way, maybe among the copies
    of a sandbox's sources it is given: each copy made is closed all the same (a review
    found one to five left open per failed start)."""
    import resource

    sources = [os.open(tmp_path, os.O_RDONLY | os.O_CLOEXEC) for _ in range(6)]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    gc.collect()  # (earlier tests' clients close the connections they kept when collected:
    gc.disable()  # not while this counts descriptors)
    before = set(os.listdir("/proc/self/fd"))
    free = min(set(range(4096)) - {int(fd) for fd in before})  # (new ones go from here)
    try:
        for limit in range(free + 1, free + 24):
            files = TaskFiles.for_task(tmp_path, "z" + uuid.uuid4().hex[:8])
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            try:
                started = start_monitor(files.log.stem, dict(os.environ), Shell("/bin/bash", "bash"),
                                        "/bin/bash", files,
                                        inherited=[(fd, 10 + i) for i, fd in enumerate(sources)])  # fmt: skip
            except OSError:
                started = None
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            if started is not None:
                started.cancel()
                reap_monitor(started.pid, block=True)
            assert set(os.listdir("/proc/self/fd")) == before, limit
    finally:
        gc.enable()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        for fd in sources:
            os.close(fd)


@pytest.mark.parametrize("monitor", ["cgroup", "process", "python"])
def test_a_zsh_commands_text_is_in_no_argv(
    state_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, monitor: str
) -> None:
    """F1a under zsh, whichever monitor runs it: the text (a token, say) reaches zsh in its
    environment, unset before it runs, never in an argv that `ps` shows every user."""
    zsh = needs_tool("zsh", "zsh")
    secret = "TOKEN-" + os.urandom(6).hex()
    seen = tmp_path / "seen"
    command = f"echo {secret} > {seen}; env | grep -c __wave >> {seen}; sleep 30; echo done"

    def done() -> bool:
        return seen.exists() and len(seen.read_text().split()) == 2

    if monitor == "python":  # a host where only zsh exists
        files = TaskFiles.for_task(tmp_path, "z" + uuid.uuid4().hex[:8])
        started = start_monitor(files.log.stem, dict(os.environ), Shell(zsh, "zsh"), None, files)
        started.run(command, str(tmp_path))
        wait_until(done)
        assert argvs_holding(secret) == []
        (job,) = psutil.Process(started.pid).children()
        os.killpg(job.pid, signal.SIGKILL)
        reap_monitor(started.pid, block=True)
    else:
        monkeypatch.setenv("WAVE_TRACKING", monitor)
        client = Client(state_dir=state_dir, env={**os.environ, "WAVE_SHELL": zsh})
        task_id = client.bash(command, run_in_background=True).background_task_id or ""
        wait_until(done)
        assert argvs_holding(secret) == []
        client.task_stop(task_id)
    assert seen.read_text().split() == [secret, "0"]


def test_a_zsh_command_too_long_for_the_kernel_is_a_clear_error(state_dir: Path) -> None:
    """A zsh command reaches zsh in one environment string (128 KiB at most): a longer one
    is refused, saying what to do, and nothing runs (in an argv it failed as obscurely)."""
    client = Client(state_dir=state_dir, env={**os.environ, "WAVE_SHELL": needs_tool("zsh", "zsh")})
    refused = client.bash("true # " + "x" * 140_000)
    assert not refused.success and "can be at most 124 KiB" in (refused.error or "")
    assert "write it to a script file" in (refused.error or "") and client.tasks() == []
    assert client.bash("true # " + "x" * 100_000).success
    # On a terminal it travels wrapped and quoted: 36 KB of quotes take 130 KiB there
    # (it failed with "Argument list too long", exit 126).
    quoted = client.bash("true " + "'a'" * 12_000, interactive=True)
    assert not quoted.success and "needs 130 KiB there" in (quoted.error or "")
    assert client.bash("echo " + "'a'" * 3_000 + " | wc -c", interactive=True).stdout == "3001"


def test_a_zshenv_cannot_take_over_the_zsh_runner(state_dir: Path, tmp_path: Path) -> None:
    """The user's .zshenv (read by every zsh) aliasing the runner's own words, or making
    functions of them, changes nothing: the command runs once, sees no helper and no
    argument, as under zsh -c."""
    zsh = needs_tool("zsh", "zsh")
    (tmp_path / ".zshenv").write_text(
        "eval() { echo NOPE; }; unset() { echo NOPE; }\n"
        "alias eval='echo NOPE' unset='echo NOPE' builtin='echo NOPE'\n"
    )
    env = {**os.environ, "WAVE_SHELL": zsh, "ZDOTDIR": str(tmp_path)}
    r = Client(state_dir=state_dir, env=env).bash("print -r -- $# ${+__wave_payload}; nope_x")
    assert r.stdout.splitlines() == ["0 0", "(eval):1: command not found: nope_x"], r.stdout
    assert r.exit_code == 127


def test_zsh_keeps_every_byte_of_the_command(state_dir: Path, tmp_path: Path) -> None:
    """Text whose UTF-8 bytes include 0x83-0x9F (CJK, emoji, an em dash) reaches zsh
    intact, in what it prints and what it writes (a function body of zsh's own once
    mangled those bytes)."""
    env = {**os.environ, "WAVE_SHELL": needs_tool("zsh", "zsh")}
    client = Client(state_dir=state_dir, cwd=tmp_path, env=env)
    text = "a \u2014 b \U0001f389 \u6f22\u5b57"
    r = client.bash(f"echo '{text}'; echo '{text}' > out.txt")
    assert r.stdout == text
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == text + "\n"
