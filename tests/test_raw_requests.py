"""Raw protocol requests with values no client sends get a clear invalid-input error,
never an internal error (issue 11 §5)."""

from __future__ import annotations

import os
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


def test_a_boolean_protocol_version_is_refused(client: Client, state_dir: Path) -> None:
    client.status()
    answer = ask_supervisor(state_dir, "status", {"v": True})
    assert answer["code"] == "protocol", answer


def test_an_offset_past_the_end_reads_nothing(client: Client, state_dir: Path) -> None:
    tid = start_bg(client, "echo hi")
    client.wait(tid, timeout=10_000)
    for offset in (2**40, 2**53, 2**62):
        answer = ask_supervisor(state_dir, "output", {"task_id": tid, "offset": offset})
        assert answer["type"] == "result", answer
        assert answer["data"]["output"] == ""  # type: ignore[index]
