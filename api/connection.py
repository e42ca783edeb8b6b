"""How a client reaches its supervisor: one ``Channel`` per request, opened by a
``Connector`` (the local socket, the SSH bridge, or an in-memory one for tests); both are
typing protocols, for type checkers only.

The client's retry and re-attach logic sees only these two interfaces, so it is the same
for every way of reaching a supervisor, and can be tested without real supervisors.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator, Sequence

from .errors import InvalidInputError
from .launch import connect_or_start
from .paths import StateLayout
from .transport import REMOTE_HOME_CWD, Remote, chosen_transport, connect_ssh, finish_ssh
from .wire import decode, read_messages

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms: the protocols are for type checkers
    import queue
    import subprocess
    from typing import Any, Protocol

    Exchange = Callable[[dict[str, Any]], Iterator[dict[str, Any]]]
    """An in-memory supervisor: gets a request, yields the answer's messages. Ending without
    a final ``result``/``error`` is a connection lost; raising ``SupervisorUnavailableError``
    is a supervisor that cannot be reached."""

    class Channel(Protocol):
        """One connection carrying one request."""

        def send(self, data: bytes) -> None:
            """Send the request line. Raises ``OSError`` when the other side is gone."""

        def messages(self, deadline: float | None = None) -> Iterator[dict[str, Any]]:
            """The answer's messages until the other side closes (past ``deadline``, a
            ``time.monotonic()``, waiting for the next raises ``AnswerOverdue``)."""

        def interrupt(self) -> None:
            """End the exchange now, from any thread (the caller went away)."""

        def close(self) -> str | None:
            """Release the channel; returns why its carrier failed (``ssh`` itself), if it did."""

    class Connector(Protocol):
        """A way to reach one supervisor."""

        remote: bool
        """Commands run on another machine: its environment, its home, its paths."""
        may_start: bool
        """Whether opening may start a supervisor (so an unreachable one is worth waiting for)."""

        def open(self, *, start: bool = True) -> Channel:
            """A channel to the supervisor (started first when allowed and ``start``).

            Raises:
                SupervisorUnavailableError: none could be reached.
            """

        def default_cwd(self) -> str:
            """Where commands start when the caller names no directory."""


class SocketChannel:
    """A connected socket (Unix, TCP or one end of a socketpair)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def messages(self, deadline: float | None = None) -> Iterator[dict[str, Any]]:
        return read_messages(self.sock, deadline=deadline)

    def interrupt(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> str | None:
        self.sock.close()
        return None


def current_dir() -> str:
    """This process's working directory; once it is deleted (or renamed away) under us,
    the path a shell would still give (``$PWD``): the supervisor then runs the command in
    its nearest existing ancestor and says so (a default directory falls back, as a
    followed ``cd`` does), or in it again if it was made anew (``rm -rf build && mkdir
    build``).

    Raises:
        InvalidInputError: it is gone and no absolute ``$PWD`` names it.
    """
    try:
        return os.getcwd()
    except FileNotFoundError:
        pwd = os.environ.get("PWD", "")
        if os.path.isabs(pwd):
            return pwd
        raise InvalidInputError(
            "the current directory no longer exists (it was deleted or moved): "
            "cd to an existing one, or name one (cwd)"
        ) from None


class LocalConnector:
    """The supervisor of a local state dir, over its Unix socket (or loopback TCP)."""

    remote = False

    def __init__(self, layout: StateLayout, transport: str, autostart: bool) -> None:
        self.layout, self.transport, self.may_start = layout, transport, autostart

    def open(self, *, start: bool = True) -> Channel:
        return SocketChannel(
            connect_or_start(self.layout, self.transport, start and self.may_start)
        )

    def default_cwd(self) -> str:
        return current_dir()


class SshChannel(SocketChannel):
    """A socket whose other end is ``ssh HOST wave-bash bridge``."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen[bytes], remote: Remote) -> None:
        super().__init__(sock)
        self.proc, self.remote = proc, remote

    def messages(self, deadline: float | None = None) -> Iterator[dict[str, Any]]:
        return read_messages(self.sock, preamble=True, deadline=deadline)

    def close(self) -> str | None:
        super().close()
        return finish_ssh(self.proc, self.remote)


class SshConnector:
    """The supervisor of another machine, through ``ssh HOST wave-bash bridge`` (one ssh
    per request; the bridge starts the remote supervisor when needed)."""

    remote = True
    may_start = False  # an ssh that fails is reported at once, not waited for

    def __init__(self, remote: Remote, options: Sequence[str], command: str) -> None:
        self.target, self.options, self.command = remote, list(options), command

    def open(self, *, start: bool = True) -> Channel:
        sock, proc = connect_ssh(self.target, self.options, self.command)
        return SshChannel(sock, proc, self.target)

    def default_cwd(self) -> str:
        return REMOTE_HOME_CWD


def connector_for(
    layout: StateLayout,
    *,
    transport: str | None = None,
    remote: str | None = None,
    ssh_options: Sequence[str] = (),
    remote_command: str | None = None,
    autostart: bool = True,
) -> Connector:
    """The connector these arguments ask for: ``remote`` (default ``WAVE_REMOTE``) through
    ssh, else the state dir's own supervisor over ``transport`` (default ``WAVE_TRANSPORT``)."""
    remote = remote or os.environ.get("WAVE_REMOTE") or None
    if remote:
        command = remote_command or os.environ.get("WAVE_REMOTE_COMMAND") or "wave-bash"
        return SshConnector(Remote.parse(remote), ssh_options, command)
    return LocalConnector(layout, transport or chosen_transport(), autostart)


class MemoryChannel:
    """A channel to an :data:`Exchange` (the answer runs as the messages are read)."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self._request: dict[str, Any] | None = None
        import threading

        self._interrupted = threading.Event()

    def send(self, data: bytes) -> None:
        self._request = decode(data.rstrip(b"\n"))

    def messages(self, deadline: float | None = None) -> Iterator[dict[str, Any]]:
        assert self._request is not None, "send() first"
        for message in self.exchange(self._request):
            if self._interrupted.is_set():
                return
            yield message

    def interrupt(self) -> None:
        self._interrupted.set()

    def close(self) -> str | None:
        return None


class MemoryConnector:
    """An in-memory supervisor for tests: every request goes to ``exchange``; ``sent``
    keeps each request (decoded) in order."""

    remote = False

    def __init__(self, exchange: Exchange, *, may_start: bool = True, cwd: str = "/") -> None:
        self.exchange, self.may_start, self.cwd = exchange, may_start, cwd
        import queue

        self.sent: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()

    def open(self, *, start: bool = True) -> Channel:
        def recorded(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
            self.sent.put(request)
            return self.exchange(request)

        return MemoryChannel(recorded)

    def default_cwd(self) -> str:
        return self.cwd
