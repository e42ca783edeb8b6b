"""The client's reconnect and re-attach logic on an in-memory connector: what it sends
again, and when, when a supervisor goes away mid-call (SPEC CR; issue 14 §3)."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wave_bash.api import CallAbandonedError, Client, SupervisorUnavailableError, TaskNotFoundError
from wave_bash.api import client as client_module
from wave_bash.api.connection import MemoryConnector
from wave_bash.api.models import BashResult

Message = dict[str, Any]


def result(data: dict[str, Any]) -> Message:
    return {"type": "result", "data": data}


def started(task_id: str) -> Message:
    return {"type": "started", "data": {"taskId": task_id}}


DONE = BashResult(success=True, stdout="hi", exit_code=0, message="hi").to_json_dict()


def scripted(*answers: list[Message]) -> MemoryConnector:
    """A supervisor that answers the n-th connection with the n-th list of messages (a
    list without a final message is a supervisor that went away mid-answer)."""
    script = iter(answers)

    def exchange(request: Message) -> Iterator[Message]:
        yield from next(script)

    return MemoryConnector(exchange)


def sent(connector: MemoryConnector) -> list[Message]:
    out = []
    while not connector.sent.empty():
        out.append(connector.sent.get())
    return out


def client(tmp_path: Path, connector: MemoryConnector) -> Client:
    return Client(state_dir=tmp_path, connector=connector, env={"PATH": "/usr/bin"})


def test_a_run_that_started_is_attached_to_again_never_run_twice(tmp_path: Path) -> None:
    connector = scripted([started("t1")], [], [result(DONE)])  # lost twice, then answered
    r = client(tmp_path, connector).bash("echo hi", on_start=lambda task_id: None)
    assert (r.success, r.stdout) == (True, "hi")
    first, *again = sent(connector)
    assert first["op"] == "run"
    assert [(m["op"], m["task_id"]) for m in again] == [("attach", "t1"), ("attach", "t1")]


def test_a_call_left_before_its_task_was_named_says_it_may_have_started(
    tmp_path: Path,
) -> None:
    """A Ctrl+C, or a `close()`, in a call's first milliseconds, before the supervisor
    named its task: the command may run all the same, and the note or the error said
    nothing of it (a trial: 14 of 40 such commands ran)."""

    def ctrl_c(request: Message) -> Iterator[Message]:
        raise KeyboardInterrupt  # (as the request is under way)

    with pytest.raises(KeyboardInterrupt) as caught:
        client(tmp_path, MemoryConnector(ctrl_c)).bash("echo hi")
    assert any("may have started" in note for note in caught.value.__notes__)
    closing: list[Client] = []

    def leave(request: Message) -> Iterator[Message]:
        closing[0].close()  # (its caller goes as the request is under way)
        yield from ()

    closing.append(client(tmp_path, MemoryConnector(leave)))
    with pytest.raises(SupervisorUnavailableError) as abandoned:
        closing[0].bash("echo hi")
    assert "the call was abandoned: its caller went away (its command may have started" in str(
        abandoned.value
    )
    # (its own kind, no outage: a framework that tries again after one retried calls
    # their own caller had abandoned, a review)
    assert type(abandoned.value) is CallAbandonedError
    with pytest.raises(CallAbandonedError, match="this client was closed"):
        closing[0].bash("echo again")


def test_a_run_lost_before_it_started_is_sent_again_with_its_key(tmp_path: Path) -> None:
    connector = scripted([], [result(DONE)])
    assert client(tmp_path, connector).bash("echo hi").success
    runs = sent(connector)
    assert [m["op"] for m in runs] == ["run", "run"]
    assert runs[0]["request_key"] == runs[1]["request_key"] and runs[0]["request_key"]


def test_giving_up_names_the_task_that_keeps_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "FOREGROUND_PATIENCE", 0.3)
    connector = scripted([started("t9")], *itertools.repeat([], 100))
    t = time.monotonic()
    with pytest.raises(SupervisorUnavailableError, match=r"task t9\) may still be running") as err:
        client(tmp_path, connector).bash("sleep 100", timeout=100)
    assert err.value.task_id == "t9"
    assert time.monotonic() - t >= 0.3  # its whole patience (a next delay past it gave up early)


BUSY = {"type": "error", "code": "busy", "message": "the supervisor is serving 8 connections"}


def test_a_busy_answer_is_sent_again_and_giving_up_names_a_started_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`busy` comes before a request is read: it goes again, and a run that had started
    before its supervisor went away and the next one was busy is named as it gives up
    (a review: a bare BusyError hid the task)."""
    connector = scripted([BUSY], [BUSY], [result(DONE)])
    assert client(tmp_path, connector).bash("echo hi").stdout == "hi"
    assert [m["op"] for m in sent(connector)] == ["run", "run", "run"]
    monkeypatch.setattr(client_module, "FOREGROUND_PATIENCE", 0.3)
    connector = scripted([started("t7")], *itertools.repeat([BUSY], 100))
    with pytest.raises(SupervisorUnavailableError, match=r"task t7\) may still be running") as err:
        client(tmp_path, connector).bash("sleep 100", timeout=100)
    assert err.value.task_id == "t7"


def test_other_calls_are_sent_again_and_errors_keep_their_class(tmp_path: Path) -> None:
    record = {"id": "t1", "command": "x", "status": "running", "owner": "background",
              "startedAt": "2026-01-01T00:00:00Z", "outputPath": "/x", "session": "s", "cwd": "/"}  # fmt: skip
    missing = {"type": "error", "code": "task_not_found", "message": "No t2 here", "taskId": "t2"}
    connector = scripted([], [result(record)], [missing])
    c = client(tmp_path, connector)
    assert c.task_stop("t1").id == "t1"
    with pytest.raises(TaskNotFoundError, match=r"^No t2 here$") as missed:  # (its own words)
        c.task_stop("t2")
    assert missed.value.task_id == "t2"
    assert [m["op"] for m in sent(connector)] == ["stop", "stop", "stop"]


def test_an_unreachable_supervisor_that_may_not_be_started_fails_at_once(tmp_path: Path) -> None:
    calls = 0

    def unreachable(request: Message) -> Iterator[Message]:
        nonlocal calls
        calls += 1
        raise SupervisorUnavailableError("no supervisor is running")
        yield {}

    connector = MemoryConnector(unreachable, may_start=False)
    with pytest.raises(SupervisorUnavailableError, match="no supervisor is running"):
        client(tmp_path, connector).status()
    assert calls == 1


def test_commands_start_where_the_connector_says(tmp_path: Path) -> None:
    connector = MemoryConnector(lambda request: iter([result(DONE)]), cwd="/srv/app")
    client(tmp_path, connector).bash("pwd")
    assert sent(connector)[0]["cwd"] == "/srv/app"


def test_a_request_over_the_limit_is_refused_before_it_is_sent(state_dir: Path) -> None:
    """9 MB of command: a clear error at once (the client once sent it, met a closed
    pipe, retried for two minutes, then said the command "may have started")."""
    client = Client(state_dir=state_dir)
    started = time.monotonic()
    r = client.bash("echo " + "y" * 9_000_000)
    assert not r.success and "over the 8 MiB a request can have" in (r.error or "")
    assert "script file" in (r.error or "")
    assert time.monotonic() - started < 30 and client.tasks() == []  # not minutes of retries
    described = client.bash("true", description="d" * 9_000_000)  # (not the command's fault)
    assert re.search(r"its `description` alone is 9000\d{3} bytes", described.error or "")


def test_an_answer_sent_before_the_request_was_read_is_not_lost() -> None:
    """A supervisor that refuses a request before reading it all answers, then closes: the
    client's write fails, and the answer says why (not "the supervisor closed")."""
    import socket

    from wave_bash.api.calls import Caller
    from wave_bash.api.connection import SocketChannel
    from wave_bash.api.errors import ProtocolError

    ours, theirs = socket.socketpair()
    theirs.sendall(b'{"type":"error","code":"protocol","message":"request too large"}\n')
    theirs.close()
    caller = Caller(None, "the log")  # type: ignore[arg-type]  # the channel is given
    with pytest.raises(ProtocolError, match="request too large"):
        caller.exchange(SocketChannel(ours), "run", {"command": "x" * 4_000_000})
    ours.close()
