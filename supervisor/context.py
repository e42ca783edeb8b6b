"""What every request handler can reach, and the connection it answers on."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wave_bash.api.constants import MAX_REQUEST_BYTES
from wave_bash.api.errors import BusyError, ProtocolError
from wave_bash.api.paths import StateLayout
from wave_bash.api.wire import encode

from .journal import Journal
from .relays import Relays
from .settings import Settings
from .tasks import TaskManager

MAX_CONNECTIONS = 1024
"""The most connections served at once by default."""
REQUEST_CHUNK = 64 * 1024
"""Bytes read from a peer at a time (also the stream's buffer limit)."""
REQUEST_BUDGET_BYTES = 64 * 1024 * 1024
"""Bytes of unfinished requests buffered across all connections at once."""


@dataclass
class ByteBudget:
    """Bytes buffered for unfinished requests, bounded across connections: peers that send
    huge lines slowly cannot grow the supervisor's memory without limit."""

    limit: int
    used: int = 0

    def take(self, count: int) -> None:
        """Raises :class:`BusyError` when ``count`` more bytes would pass the limit."""
        if self.used + count > self.limit:
            raise BusyError("the supervisor is busy reading other large requests; try again")
        self.used += count

    def give(self, count: int) -> None:
        self.used -= count


class Connection:
    """One client connection, carrying requests one after another (a client keeps its
    connection between calls, ``api.connection``).

    ``closed`` completes when the peer goes away (EOF), which is how a foreground caller's
    crash is noticed (SPEC F5). ``interrupted``: the peer sent bytes while a request was
    being answered (no client of ours does): the connection carries no further request.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._leftover = b""
        self.interrupted = False
        self.let_in = False
        """Its peer was let in as it was accepted (a Unix peer of our uid)."""
        self.after_reply: Callable[[], object] | None = None
        """Done once the result was handed to the peer: what must not happen for a
        result that never left (a read offset advanced past output nobody saw)."""
        self.give_back: list[Callable[[], object]] = []
        """What undoes ``after_reply`` and what else the result took, should a relay that
        got it never pass it on (:mod:`.relays`)."""
        self.after_answer: list[Callable[[], object]] = []
        """Done once the request is over, answered or not (a read turn given back)."""

    async def read_line(self, budget: ByteBudget | None, limit: int = MAX_REQUEST_BYTES) -> bytes:
        """One line from the peer (empty at EOF), at most ``limit`` bytes long, its bytes
        counted in the supervisor-wide ``budget`` (if any) while it is incomplete.
        Bytes after the newline are kept for the next call.

        Raises:
            ProtocolError: the line is too long. BusyError: the budget is spent.
        """
        buf, self._leftover = bytearray(self._leftover), b""
        searched, taken = 0, 0
        try:
            while (newline := buf.find(b"\n", searched)) < 0:
                if len(buf) > limit:
                    raise ProtocolError(f"request too large (over {limit} bytes)")
                searched = len(buf)
                chunk = await self.reader.read(min(REQUEST_CHUNK, limit + 1 - len(buf)))
                if not chunk:
                    return bytes(buf)
                if budget is not None:
                    budget.take(len(chunk))
                    taken += len(chunk)
                buf += chunk
            self._leftover = bytes(buf[newline + 1 :])
            return bytes(buf[: newline + 1])
        finally:
            if budget is not None:
                budget.give(taken)

    async def wait_for_request(self) -> bool:
        """Wait until the peer starts its next request (its first byte is kept for
        :meth:`read_line`, which counts the rest in the budget); False when it closed
        the connection instead."""
        if self._leftover:
            return True
        try:
            self._leftover = await self.reader.read(1)
        except (ConnectionError, OSError):
            return False
        return bool(self._leftover)

    def hung_up(self) -> bool:
        """Whether the peer has closed its end already (a request it sent to a supervisor
        stopped meanwhile, then gave up on: it was told the command may have started, and
        may send it again). Read from the socket itself, without taking anything."""
        if self.reader.at_eof():
            return True
        sock = self.writer.get_extra_info("socket")
        if sock is None:
            return False
        try:  # (no `dup`: with no descriptor left, a read's caller was taken for gone)
            peer = socket.socket(fileno=sock.fileno())
        except (OSError, ValueError):
            return True  # (closed already: -1)
        try:
            return peer.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except (BlockingIOError, InterruptedError):
            return False  # (open, nothing sent: a client waits for its answer)
        except OSError:
            return True  # (reset)
        finally:
            peer.detach()  # (the stream's own)

    def watch_for_close(self) -> asyncio.Task[None]:
        """Start noticing EOF from the peer (call once the request line was read; cancel
        before the answer goes out: the peer's next request is for :meth:`read_line`)."""

        async def wait_eof() -> None:
            try:
                while await self.reader.read(4096):
                    self.interrupted = True  # (a client waits for its answer: ignored)
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

    async def send(self, message: dict[str, Any]) -> bool:
        """Write one protocol line; returns whether it left (a vanished peer is no error)."""
        if self.writer.is_closing():
            return False
        try:
            self.writer.write(encode(message))
            await self.writer.drain()
        except (ConnectionError, OSError):
            if not self.closed.done():
                self.closed.set_result(None)
            return False
        return True


READ_TURN_PATIENCE = 10.0
"""Seconds a reader waits for its turn (:class:`ReadTurns`) before it reads anyway."""


@dataclass
class _Turn:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class ReadTurns:
    """Readers of one task's new output in one session take turns (SPEC B6): each reads
    from where the last reply that left ended. Two that read at once both got it all
    (parallel tool calls of a host), as the offset is recorded only once a reply left."""

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str], _Turn] = {}

    async def take(self, task_id: str, session: str, conn: Connection) -> None:
        """Wait for this reader's turn, given back once ``conn``'s request is over; or
        until its peer leaves (its answer, never sent, records nothing); or for
        ``READ_TURN_PATIENCE`` at most, then read all the same: a reader before it whose
        peer reads nothing (stopped, its link frozen) may hold its turn while its answer
        waits to be sent, and held every later read of that task in that session."""
        key = (task_id, session)
        turn = self._turns.setdefault(key, _Turn())
        turn.users += 1
        taking = asyncio.ensure_future(turn.lock.acquire())

        def give_back() -> None:
            if taking.done() and not taking.cancelled():
                turn.lock.release()
            else:
                taking.cancel()
            turn.users -= 1
            if not turn.users:
                del self._turns[key]

        conn.after_answer.append(give_back)
        waits: list[asyncio.Future[Any]] = [taking, conn.closed]
        await asyncio.wait(waits, timeout=READ_TURN_PATIENCE, return_when=asyncio.FIRST_COMPLETED)


@dataclass
class Context:
    """The supervisor's shared state, handed to every handler."""

    layout: StateLayout
    journal: Journal
    tasks: TaskManager
    settings: Settings = field(default_factory=Settings)
    stop_event: asyncio.Event = field(default_factory=asyncio.Event)
    state_dir_lost: bool = False
    """Its state dir was removed or replaced (``rm -rf``): another supervisor may serve
    there now, so this one stops without touching what is there."""
    started_at: float = field(default_factory=time.time)
    token: str | None = None
    """The secret TCP clients must present (None: Unix socket, peer uid checked)."""
    max_connections: int = MAX_CONNECTIONS
    """Connections served at once; more are answered ``busy`` (see ``daemon``)."""
    request_budget: ByteBudget = field(default_factory=lambda: ByteBudget(REQUEST_BUDGET_BYTES))
    active_connections: int = 0
    """Connections open now (any peer): the supervisor is idle with none."""
    served_connections: int = 0
    """Connections of peers let in (the peer's uid, or the TCP token shown), but for those
    waiting for a next request: the cap's."""
    kept_connections: int = 0
    """Connections waiting for a next request (at most as many as the cap)."""
    not_let_in: dict[Connection, None] = field(default_factory=dict)
    """Connections whose peer has not been let in yet, oldest first (see
    ``server.MAX_NOT_LET_IN``)."""
    last_activity: float = field(default_factory=time.monotonic)
    """When a client was last served (monotonic), for the idle exit."""
    pruning: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held by the prune under way (``retention``): one at a time."""
    background: set[asyncio.Task[Any]] = field(default_factory=set)
    """Work running beside the requests (a prune), kept referenced until it ends."""
    read_turns: ReadTurns = field(default_factory=ReadTurns)
    """Readers of a task's new output taking turns (see :class:`ReadTurns`)."""
    relays: Relays = field(default_factory=Relays)
    """Relays (MCP servers) present, and what their results took until passed on."""
