"""Exactly once, for real: notices and results survive structured-content hosts, dying
hosts, racing readers and restarts (issue 12 §1–§5)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import anyio
import mcp_types as types
from conftest import REPO, ask_supervisor, kill_supervisor, start_bg, supervisor_pids, wait_until
from mcp import ClientSession
from test_mcp import run, text

from api import Client, Notice
from api.mcp_server import HostStdout, WaveMcp


def test_notices_are_in_structured_content_too(state_dir: Path) -> None:
    """A host that shows models only structured content (pydantic-ai) gets the notices."""
    Client(state_dir=state_dir, session="s").wait(
        start_bg(Client(state_dir=state_dir, session="s"), "echo bg", description="Say bg"),
        timeout=10_000,
    )

    async def scenario(s: ClientSession) -> list[types.CallToolResult]:
        return [await s.call_tool("Bash", {"command": "echo next"}) for _ in range(2)]

    first, second = run(state_dir, scenario, "--session", "s")
    (notice,) = first.structured_content["notices"]
    record = Notice.model_validate(notice)  # the I4 notice record
    assert (record.status, record.exit_code, record.description) == ("completed", 0, "Say bg")
    assert record.message in text(first)
    assert "notices" not in second.structured_content  # delivered once
    assert Client(state_dir=state_dir, session="s").notifications() == []


def test_structured_content_carries_the_output_once(state_dir: Path) -> None:
    async def scenario(s: ClientSession) -> types.CallToolResult:
        line = "PASSED tests/test_module.py::test_case_number_$i in 0.01s"  # a runner's line
        return await s.call_tool(
            "Bash", {"command": f'for i in $(seq 1 600); do echo "{line}"; done'}
        )

    result = run(state_dir, scenario, "--session", "t")
    body = text(result)
    assert len(body) > 29_000
    # JSON escapes each newline: the rest is the output once (it was twice, 2.1×).
    assert len(json.dumps(result.structured_content)) <= 1.1 * len(body)
    assert result.structured_content["message"] == body


HOST = textwrap.dedent(
    """
    import asyncio, sys
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "api.cli", "mcp", "--session", "dying"],
            env={"WAVE_STATE_DIR": sys.argv[1]}, cwd=sys.argv[2],
        )
        async with stdio_client(params) as streams, ClientSession(*streams) as s:
            await s.initialize()
            await s.call_tool(
                "Bash", {"command": "sleep 1; echo bgdone", "run_in_background": True}
            )
            print("calling", flush=True)
            await s.call_tool("Bash", {"command": "echo fgstart; sleep 3; echo fgdone"})

    asyncio.run(main())
    """
)


def test_host_killed_during_a_call_loses_no_notice(state_dir: Path, tmp_path: Path) -> None:
    """The host dies while a foreground call runs: the command becomes a background task
    (caller_lost), and both it and a background task that ends meanwhile are announced
    exactly once to the next server of the session."""
    script = tmp_path / "host.py"
    script.write_text(HOST)
    host = subprocess.Popen(
        [sys.executable, str(script), str(state_dir), str(REPO)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
    )  # fmt: skip
    try:
        assert host.stdout is not None and host.stdout.readline() == b"calling\n"
        watcher = Client(state_dir=state_dir, session="dying")
        wait_until(lambda: len(watcher.tasks()) == 2)
        time.sleep(0.3)  # the foreground call is in flight
        host.send_signal(signal.SIGKILL)
    finally:
        host.wait(10)
    bg, fg = watcher.tasks()
    wait_until(lambda: watcher.tasks()[1].owner == "background")
    for task_id in (bg.id, fg.id):
        watcher.wait(task_id, timeout=20_000)
    (fg_now,) = [t for t in watcher.tasks() if t.id == fg.id]
    assert (fg_now.background_reason, fg_now.status) == ("caller_lost", "completed")

    async def restart(s: ClientSession) -> list[types.CallToolResult]:
        return [await s.call_tool("Bash", {"command": "true"}) for _ in range(2)]

    first, second = run(state_dir, restart, "--session", "dying")
    ids = sorted(n["taskId"] for n in first.structured_content["notices"])
    assert ids == sorted([bg.id, fg.id])
    assert "notices" not in second.structured_content


def test_racing_readers_get_each_notice_once(state_dir: Path) -> None:
    client = Client(state_dir=state_dir, session="race")
    ids = [start_bg(client, f"sleep 0.{i % 5}") for i in range(100)]
    got: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def reader() -> None:
        mine = Client(state_dir=state_dir, session="race")
        while not stop.is_set():
            notices = [n.task_id for n in mine.notifications()]
            claim = mine.claim_notices()
            notices += [n.task_id for n in claim.notices]
            mine.ack_notices(claim.claim)
            with lock:
                got.extend(notices)

    readers = [threading.Thread(target=reader) for _ in range(4)]
    for t in readers:
        t.start()
    try:
        wait_until(lambda: len(got) >= 100, timeout=30)
    finally:
        stop.set()
        for t in readers:
            t.join(10)
    assert sorted(got) == sorted(ids)  # each once, none twice


def test_claimed_notices_come_back_when_released_or_expired(state_dir: Path) -> None:
    client = Client(state_dir=state_dir, session="lease")
    tid = start_bg(client, "true")
    client.wait(tid, timeout=10_000)
    first = client.claim_notices()
    assert [n.task_id for n in first.notices] == [tid]
    assert client.claim_notices().notices == []  # held by the first reader
    assert client.release_notices(first.claim) == 1
    second = client.claim_notices(lease=1)
    assert [n.task_id for n in second.notices] == [tid]
    time.sleep(1.2)  # the holder vanished: its lease ends
    third = client.claim_notices()
    assert [n.task_id for n in third.notices] == [tid]
    assert client.ack_notices(third.claim) == 1
    assert client.notifications() == []


def test_a_resent_run_starts_nothing_twice(state_dir: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    client = Client(state_dir=state_dir)
    client.status()
    body = {"command": f"echo x >> {marker}; echo out", "cwd": str(tmp_path),
            "env": dict(os.environ), "request_key": "k-1"}  # fmt: skip
    first = ask_supervisor(state_dir, "run", body)
    again = ask_supervisor(state_dir, "run", body)
    assert first["data"]["stdout"] == again["data"]["stdout"] == "out"  # type: ignore[index]
    assert marker.read_text() == "x\n"
    assert len(client.tasks(all=True)) == 1


def test_kill_loop_loses_no_call_and_runs_none_twice(state_dir: Path, tmp_path: Path) -> None:
    """The supervisor is SIGKILLed over and over while calls run: every call returns its
    command's result, and every command ran exactly once."""
    marker = tmp_path / "ran"
    results: dict[int, str] = {}
    errors: list[BaseException] = []
    done = threading.Event()

    def caller(start: int) -> None:
        client = Client(state_dir=state_dir)
        for i in range(start, start + 10):
            try:
                results[i] = client.bash(f"echo {i} >> {marker}; echo {i}", timeout=60_000).stdout
            except BaseException as exc:
                errors.append(exc)

    def killer() -> None:  # every supervisor that comes up dies at once, for 3 seconds
        until = time.monotonic() + 3
        while not done.is_set() and time.monotonic() < until:
            for pid in supervisor_pids(state_dir):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    Client(state_dir=state_dir).status()
    threads = [threading.Thread(target=caller, args=(k * 10,)) for k in range(3)]
    kill = threading.Thread(target=killer)
    kill.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    done.set()
    kill.join(10)
    assert errors == []
    assert results == {i: str(i) for i in range(30)}
    assert sorted(int(x) for x in marker.read_text().split()) == list(range(30))


def test_a_call_that_gives_up_names_its_task(state_dir: Path) -> None:
    """A foreground call whose supervisor cannot come back keeps trying until its own
    timeout, then says the command may still be running and names its task."""
    client = Client(state_dir=state_dir)
    started: list[str] = []
    box: list[BaseException] = []

    def call() -> None:
        try:
            client.bash("sleep 5", timeout=2_000, on_start=started.append)
        except BaseException as exc:
            box.append(exc)

    t = threading.Thread(target=call)
    t.start()
    wait_until(lambda: started)
    kill_supervisor(state_dir)
    (state_dir / "tasks").rename(state_dir / "tasks.moved")  # no supervisor can start:
    (state_dir / "tasks").write_text("")  # a file where its task folder must be
    t.join(90)
    (state_dir / "tasks").unlink()
    (state_dir / "tasks.moved").rename(state_dir / "tasks")
    assert box, "the call did not give up"
    message = str(box[0])
    assert started[0] in message and "may still be running" in message


def test_a_notice_counts_as_delivered_only_once_its_result_is_written(state_dir: Path) -> None:
    """The host's end of stdout closed: the result carrying the notice cannot be written,
    so the notice goes back to the session; one written to a live pipe is delivered."""
    client = Client(state_dir=state_dir, session="w")

    async def deliver_through(pipe_alive: bool) -> list[str]:
        tid = start_bg(client, "true")
        client.wait(tid, timeout=10_000)
        handlers = WaveMcp(client)
        claim = await handlers._claim_notices(request_id=7)
        assert claim is not None and [n.task_id for n in claim.notices] == [tid]
        read_fd, write_fd = os.pipe()
        if not pipe_alive:
            os.close(read_fd)  # the host is gone
        raw = open(write_fd, "w")  # noqa: SIM115 - closed below, after a failed flush too
        out = HostStdout(anyio.wrap_file(raw), handlers.written, handlers.gone)
        line = json.dumps({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}) + "\n"
        try:
            await out.write(line)
            await out.flush()
        except BrokenPipeError:
            assert not pipe_alive
        else:
            assert pipe_alive
            os.close(read_fd)
        finally:
            with contextlib.suppress(OSError):
                raw.close()
        return [n.task_id for n in client.notifications()]

    assert len(anyio.run(deliver_through, False)) == 1  # not written: given back
    assert anyio.run(deliver_through, True) == []  # written: delivered, never again
