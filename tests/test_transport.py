"""Loopback TCP with a token, the transport where Unix sockets do not exist (issue 7).

Forced here with ``WAVE_TRANSPORT=tcp``; everything above the transport is unchanged.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import psutil
import pytest
from conftest import start_bg, supervisor_pids, task_alive

from api import Client
from api.protocol import encode, request


@pytest.fixture
def tcp_client(state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Client:
    monkeypatch.setenv("WAVE_TRANSPORT", "tcp")
    return Client(state_dir=state_dir, session="tcp")


def _ask(port: int, *lines: bytes) -> dict[str, object]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for line in lines:
            s.sendall(line)
        return json.loads(s.makefile("rb").readline())


def test_commands_work_over_tcp(tcp_client: Client, state_dir: Path) -> None:
    assert tcp_client.bash("echo over tcp").stdout == "over tcp"
    tid = start_bg(tcp_client, "sleep 300")
    assert tcp_client.task_stop(tid).status == "killed" and not task_alive(tid)
    assert not (state_dir / "supervisor.sock").exists()
    endpoint = state_dir / "supervisor.tcp"
    assert endpoint.stat().st_mode & 0o777 == 0o600
    data = json.loads(endpoint.read_text())
    assert isinstance(data["port"], int) and len(data["token"]) >= 32
    (pid,) = supervisor_pids(state_dir)
    listening = [
        c.laddr for c in psutil.Process(pid).net_connections("tcp") if c.status == "LISTEN"
    ]
    assert [addr.ip for addr in listening] == ["127.0.0.1"]  # loopback only


def test_tcp_needs_the_token(tcp_client: Client, state_dir: Path) -> None:
    tcp_client.status()
    port = json.loads((state_dir / "supervisor.tcp").read_text())["port"]
    for first in (encode({"token": "wrong"}), request("status", {})):
        answer = _ask(port, first)
        assert answer["type"] == "error" and answer["code"] == "forbidden"
    token = json.loads((state_dir / "supervisor.tcp").read_text())["token"]
    assert _ask(port, encode({"token": token}), request("status", {}))["type"] == "result"


def test_graceful_stop_removes_the_endpoint(tcp_client: Client, state_dir: Path) -> None:
    tcp_client.status()
    assert tcp_client.shutdown()
    from conftest import wait_until

    wait_until(lambda: not (state_dir / "supervisor.tcp").exists())
    assert tcp_client.bash("echo again").stdout == "again"  # a new one starts on demand
