"""How a client reaches its supervisor: a Unix socket, or loopback TCP with a token.

Unix sockets (0600 in a 0700 dir, peer uid checked) are the default. Where they are not
available (Windows), or when ``WAVE_TRANSPORT=tcp`` asks for it, the supervisor listens on
127.0.0.1 only and writes its port and a random token to ``supervisor.tcp`` (0600, in the
private state dir); every connection must present the token first. Both sides choose the
same way, and an auto-started supervisor inherits the client's environment.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .paths import StateLayout
from .protocol import encode

TRANSPORT_ENV = "WAVE_TRANSPORT"
LOOPBACK = "127.0.0.1"


def chosen_transport(env: Mapping[str, str] | None = None) -> str:
    """``"unix"`` or ``"tcp"``: ``WAVE_TRANSPORT`` if set, else Unix sockets where they exist."""
    value = (os.environ if env is None else env).get(TRANSPORT_ENV, "").lower()
    if value in ("unix", "tcp"):
        return value
    return "unix" if hasattr(socket, "AF_UNIX") else "tcp"


@dataclass(frozen=True)
class TcpEndpoint:
    """Where a TCP supervisor listens, and the secret a client must present."""

    port: int
    token: str

    def write(self, path: Path) -> None:
        """Publish atomically, readable by the owner only."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"port": self.port, "token": self.token}, fh)
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> TcpEndpoint:
        """Raises ``FileNotFoundError`` when no TCP supervisor has published one."""
        data = json.loads(path.read_text())
        return cls(int(data["port"]), str(data["token"]))


def connect(layout: StateLayout, transport: str) -> socket.socket:
    """A connected socket to the supervisor (token already sent for TCP).

    Raises:
        OSError: nothing listens (missing socket or endpoint file, refused).
    """
    if transport == "tcp":
        try:
            endpoint = TcpEndpoint.read(layout.tcp_endpoint)
        except (ValueError, KeyError) as exc:
            raise ConnectionRefusedError(f"unreadable {layout.tcp_endpoint}: {exc}") from None
        sock = socket.create_connection((LOOPBACK, endpoint.port), timeout=None)
        try:
            sock.sendall(encode({"token": endpoint.token}))
        except BaseException:
            sock.close()
            raise
        return sock
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(layout.socket))
    except BaseException:
        sock.close()
        raise
    return sock
