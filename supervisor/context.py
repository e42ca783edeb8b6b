"""What every request handler can reach, and the connection it answers on."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from api.paths import StateLayout
from api.protocol import encode

from .journal import Journal
from .settings import Settings
from .tasks import TaskManager


class Connection:
    """One client connection carrying one request.

    ``closed`` completes when the peer goes away (EOF), which is how a foreground caller's
    crash is noticed (SPEC F5).
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def watch_for_close(self) -> asyncio.Task[None]:
        """Start noticing EOF from the peer (call once the request line was read)."""

        async def wait_eof() -> None:
            try:
                while await self.reader.read(4096):
                    pass  # the protocol sends one request per connection; ignore extra bytes
            except (ConnectionError, OSError):
                pass
            if not self.closed.done():
                self.closed.set_result(None)

        return asyncio.create_task(wait_eof())

    def send_now(self, message: dict[str, Any]) -> None:
        """Hand one line to the kernel at once (no await): it is sent even if this process
        dies right after (an empty asyncio transport buffer writes synchronously)."""
        if not self.writer.is_closing():
            self.writer.write(encode(message))

    async def send(self, message: dict[str, Any]) -> None:
        """Write one protocol line; a vanished peer is not an error here."""
        if self.writer.is_closing():
            return
        try:
            self.writer.write(encode(message))
            await self.writer.drain()
        except (ConnectionError, OSError):
            if not self.closed.done():
                self.closed.set_result(None)


@dataclass
class Context:
    """The supervisor's shared state, handed to every handler."""

    layout: StateLayout
    journal: Journal
    tasks: TaskManager
    settings: Settings = field(default_factory=Settings)
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    started_at: float = field(default_factory=time.time)
    token: str | None = None
    """The secret TCP clients must present (None: Unix socket, peer uid checked)."""
    active_connections: int = 0
    last_activity: float = field(default_factory=time.monotonic)
    """When a client was last served (monotonic), for the idle exit."""
