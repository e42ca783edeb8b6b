"""A relay's presence at its supervisor: an MCP server, which passes results on to its
host, holds a connection open while it lives (``relay``). What its calls' results take is
held until it confirms them passed on, and given back once that connection closes first:
killed with a result in hand, a server lost it for good (a trial)."""

from __future__ import annotations

import contextlib
import threading

from .connection import SocketChannel
from .launch import connect_or_start
from .paths import StateLayout

RETRY_SECONDS = 1.0
"""How soon a presence cut (its supervisor stopped or replaced) is made again."""


class Presence:
    """Holds a relay present at the supervisor of ``layout`` (``line``: its ``relay``
    request) from a thread of its own,
    back within :data:`RETRY_SECONDS` after a supervisor restart. It never starts a
    supervisor (``supervisor stop`` would not stay stopped): the first call does, and
    a result before the presence is back is not held."""

    def __init__(self, layout: StateLayout, transport: str, line: bytes) -> None:
        self.layout, self.transport, self.line = layout, transport, line
        self._stop = threading.Event()
        self._channel: SocketChannel | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="relay-presence", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # (none running yet, refused, cut: again)
                channel = SocketChannel(connect_or_start(self.layout, self.transport, False))
                with self._lock:
                    if self._stop.is_set():
                        channel.close()
                        return
                    self._channel = channel
                try:
                    channel.send(self.line)
                    for _ in channel.messages():  # (none comes: it ends as the connection does)
                        pass
                finally:
                    with self._lock:
                        self._channel = None
                    channel.close()
            self._stop.wait(RETRY_SECONDS)

    def close(self) -> None:
        """End the presence (the relay is done: it gave back or confirmed all it had)."""
        with self._lock:
            self._stop.set()
            if self._channel is not None:
                self._channel.interrupt()
        self._thread.join(5)
