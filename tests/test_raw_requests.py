"""Raw protocol requests with values no client sends get a clear invalid-input error,
never an internal error (issue 11 §5)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from pathlib import Path

import pytest
from conftest import ask_supervisor, start_bg

from wave_bash.api import Client

ENV = {"PATH": os.environ.get("PATH", "/usr/bin"), "HOME": "/root"}


@pytest.mark.parametrize(
    ("op", "params"),
    [
        ("output", {"task_id": "\udcff"}),
        ("output", {"task_id": "TASK", "offset": 1e23}),
        ("output", {"task_id": "TASK", "offset": True}),
        ("output", {"task_id": "TASK", "offset": -5}),
        ("output", {"task_id": "TASK", "offset": 10**30}),
        ("login_path", {"timeout": 1e308, "env": ENV}),
        ("login_path", {"env": {**ENV, "SHELL": "/bin/bash\x00"}}),
        ("login_path", {"env": {**ENV, "A\x00": "b"}}),
        ("login_path", {"env": {**ENV, "HOME": "\ud800"}}),
        ("stop_many", {"task_ids": ["\udcff"]}),
        ("ack", {"task_ids": ["\udcff"]}),
        ("gc", {"older_than": True}),
        ("run", {"command": "echo hi", "cwd": "/tmp", "umask": True}),
        ("claim", {"lease": 1e9}),
    ],
)
def test_bad_values_are_invalid_input(
    client: Client, state_dir: Path, op: str, params: dict[str, object]
) -> None:
    tid = start_bg(client, "echo hi")
    params = {k: (tid if v == "TASK" else v) for k, v in params.items()}
    answer = ask_supervisor(state_dir, op, params)
    assert (answer["type"], answer["code"]) == ("error", "invalid_input"), answer


@pytest.mark.parametrize("version", [True, None, "1"])
def test_a_protocol_version_that_is_no_integer_is_refused(
    client: Client, state_dir: Path, version: object
) -> None:
    """Refused, saying what a request needs (a missing one was answered "version None is
    not supported … restart it", advice for a client of another version: a trial)."""
    client.status()
    answer = ask_supervisor(state_dir, "status", {"v": version})
    assert answer["code"] == "protocol", answer
    assert "needs its protocol version as an integer `v`" in str(answer["message"]), answer


def test_an_offset_past_the_end_reads_the_log_from_its_start(
    client: Client, state_dir: Path
) -> None:
    """As a log cut in place is read again (B2), as `tail -f` does; a huge one too."""
    tid = start_bg(client, "echo hi")
    client.wait(tid, timeout=10_000)
    for offset in (4, 2**40, 2**53, 2**62):
        answer = ask_supervisor(state_dir, "output", {"task_id": tid, "offset": offset})
        assert answer["type"] == "result", answer
        assert answer["data"]["output"] == "hi"  # type: ignore[index]


@pytest.mark.parametrize(
    "line",
    [
        b"[" * 200_000,  # once the JSON parser's recursion limit: an internal error
        b'{"v":1,"op":"output","taskId":"x","offset":' + b"9" * 5000 + b"}",  # (4300 digits
        b'{"v":1,"op":"wait","taskId":"x","timeout":1' + b"0" * 4000 + b"}",  # (a float's
    ],  # at most: Python's limit of an integer read from text; 309 or more overflowed a
    ids=["nested", "long-integer", "overflowing-integer"],  # timeout's float: internal)
)
def test_a_request_json_cannot_hold_is_a_protocol_error(
    client: Client, state_dir: Path, line: bytes
) -> None:
    client.status()
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(str(state_dir / "supervisor.sock"))
        s.sendall(line + b"\n")
        answer = json.loads(s.makefile("rb").readline())
    assert (answer["type"], answer["code"]) == ("error", "protocol"), answer
    assert client.status().pid


def test_a_terminal_socket_that_sends_an_endless_line_is_let_go(tmp_path: Path) -> None:
    """What stands at a task's `.tty` may be no host of ours: one endless line from it
    grew the supervisor's memory without bound."""
    from wave_bash.supervisor.terminals import HOST_LINE_LIMIT, TerminalLink

    path = tmp_path / "t.tty"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)

    async def scenario() -> None:
        link = TerminalLink("t", path)
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        link.start(gone)
        peer, _ = await asyncio.get_running_loop().sock_accept(server)
        chunk = b"x" * 65536
        sent = 0
        with peer:
            peer.setblocking(False)
            while not link.closed and sent < 4 * HOST_LINE_LIMIT:
                with contextlib.suppress(BlockingIOError):
                    sent += peer.send(chunk)
                await asyncio.sleep(0)
        assert link.closed and sent < 4 * HOST_LINE_LIMIT

    server.setblocking(False)
    with server:
        asyncio.run(asyncio.wait_for(scenario(), 30))
