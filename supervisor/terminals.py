"""The supervisor's side of interactive tasks (SPEC P): a connection to each one's
terminal host (``worker/ptyhost.py``, the task's job), which holds the terminal.

The host, not the supervisor, owns the terminal, so the session outlives a supervisor:
its successor connects to the same socket (``tasks/<id>.tty``) and finds the same
command at the same prompt. Input goes through here; the host says when its command
waits for input (read from the kernel, see the host).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
import struct
from pathlib import Path
from typing import Any

from wave_bash.api.errors import InvalidInputError
from wave_bash.api.paths import socket_address

CONNECT_PATIENCE = 10.0
"""Seconds a new task's host may take to open its socket (a Python start on a busy host)."""
REPLY_TIMEOUT = 5.0
TYPING_WINDOW = 1.0
"""Seconds after keys were typed during which a person's view looks for output often
(their echo, the command's answer): ``supervisor.handlers.terminal``."""
SEEN_EVERY = 1.0
"""Seconds between two of an attach's ``seen`` sent to its terminal host."""
MAX_ATTACHES_SEEN = 64
"""Attaches whose last ``seen`` a link remembers (more: it forgets them all, and each is
said at its next call)."""
HOST_LINE_LIMIT = 1 << 20
"""Bytes of one message from a terminal host at most (its replies are a few dozen): a
socket that sends more is no host of ours, and its link is closed."""

log = logging.getLogger(__name__)


class TerminalGone(InvalidInputError):
    """The task's terminal cannot be reached (its host ended or was killed)."""


class NotTaken(InvalidInputError):
    """The host neither took nor refused an input in time (stopped, overloaded): it may
    still type it when it goes on."""


class TypedThenGone(TerminalGone):
    """The host took the input, then its terminal closed before all of it was written:
    the command ended, maybe by what it read (a paste longer than the terminal holds)."""


class TerminalLink:
    """One connection to one terminal host; each request carries an ID its reply
    repeats, so a reply that comes late (or never) is nobody else's."""

    def __init__(self, task_id: str, path: Path) -> None:
        self.task_id = task_id
        self.path = path
        self.waiting = False
        """The command waits for input now (as the host last said)."""
        self.closed = False
        self.typed_at = -TYPING_WINDOW
        """When keys were last typed (the loop's clock)."""
        self.keys: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Done as keys are typed next (then replaced): a person's view waiting for output
        wakes to look for their echo at once."""
        self._changed = asyncio.Event()
        self._connected: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None
        """A plain non-blocking socket, not asyncio streams: a failed write (the host
        gone) must not discard replies already received, as a stream's error would."""
        self._pump: asyncio.Task[None] | None = None
        self._replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._queued: dict[int, asyncio.Future[None]] = {}
        """Inputs the host has said it took (``queued``), before its reply that all of it
        was written: a refusal comes first, however short the caller's timeout."""
        self._sending = asyncio.Lock()
        self._next_id = 0
        self._seen: dict[str, float] = {}
        """When each attach was last said to be there (:meth:`seen`)."""

    def start(self, gone: asyncio.Future[None]) -> None:
        """Connect in the background (the host may not listen yet); ``gone``: the task
        ended, no host will come."""
        if self._connected is None:
            self._connected = asyncio.create_task(self._connect(gone))
            # Its failure is raised to whoever asks (ready); nobody asking is fine too.
            self._connected.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def ready(self) -> None:
        """Connected, or :class:`TerminalGone`."""
        if self._connected is None:
            raise TerminalGone(f"task {self.task_id} has no terminal connection")
        await asyncio.shield(self._connected)
        if self.closed:
            raise TerminalGone(f"the terminal of task {self.task_id} has closed")

    async def _connect(self, gone: asyncio.Future[None]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CONNECT_PATIENCE
        delay = 0.005
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            try:
                if not stat.S_ISSOCK(os.lstat(self.path).st_mode):
                    raise ConnectionRefusedError(f"{self.path} is not a socket")
                with socket_address(self.path) as address:
                    await loop.sock_connect(sock, address)
                break
            except OSError as exc:
                sock.close()
                if gone.done() or loop.time() > deadline:
                    self._close()
                    raise TerminalGone(
                        f"the terminal of task {self.task_id} cannot be reached: {exc}"
                    ) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.1)
        _pid, uid, _gid = struct.unpack(
            "3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        )
        if uid != os.getuid():  # not our task's host: nothing is typed into it
            sock.close()
            self._close()
            raise TerminalGone(f"the terminal socket of task {self.task_id} is not ours")
        self._sock = sock
        self._pump = asyncio.create_task(self._read(sock))

    async def _read(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        pending = b""
        try:
            while data := await loop.sock_recv(sock, 65536):
                pending += data
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    self._received(line)
                if len(pending) > HOST_LINE_LIMIT:  # no host of ours says that much at once
                    log.warning("task %s: its terminal host sent too long a line", self.task_id)
                    return
        except OSError:  # reset: what came before it was read first
            pass
        finally:
            self._close()

    def _received(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if "waiting" in message:
            self._set_waiting(bool(message["waiting"]))
            return
        ident = message.get("id")
        if "queued" in message:
            queued = self._queued.pop(ident, None) if isinstance(ident, int) else None
            if queued is not None and not queued.done():
                queued.set_result(None)
            # Input taken, to be typed: what it waited at is answered, from now, not once
            # its host's next message says so (a host slow under load left "waiting"
            # standing, and a TaskInput then a TaskOutput returned at once, in front of
            # the prompt they were to wait for). An input sent again is not typed again
            # ("again", no "queued"): it changes nothing (cleared then, it waited for ever).
            self._set_waiting(False)
            return
        reply = self._replies.pop(ident, None) if isinstance(ident, int) else None
        if reply is not None and not reply.done():
            reply.set_result(message)

    def _set_waiting(self, waiting: bool) -> None:
        self.waiting = waiting
        self._changed.set()
        self._changed = asyncio.Event()

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for reply in self._replies.values():
            if not reply.done():
                reply.set_exception(TerminalGone(f"the terminal of task {self.task_id} closed"))
                reply.exception()  # retrieved: nobody may wait for it any more
        self._replies.clear()
        self._set_waiting(False)
        if self._sock is not None:
            self._sock.close()

    async def waiting_for_input(self) -> None:
        """Returns once the command waits for input (never if the terminal closes)."""
        while not self.waiting:
            if self.closed:
                await asyncio.Future()  # the task's end is what the caller waits for then
            await self._changed.wait()

    async def _request(
        self, message: dict[str, Any], timeout: float, queued: bool = False
    ) -> dict[str, Any] | None:
        """Send a request and wait up to ``timeout`` s for its reply (None: not yet);
        ``queued``: first for the host to take it or refuse it (up to ``REPLY_TIMEOUT``;
        a host from before ``queued`` was said answers only when done)."""
        await self.ready()
        assert self._sock is not None
        loop = asyncio.get_running_loop()
        self._next_id += 1
        ident = self._next_id
        reply: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._replies[ident] = reply
        taken: asyncio.Future[None] = loop.create_future()
        if queued:
            self._queued[ident] = taken
        deadline = loop.time() + timeout
        try:
            line = json.dumps({**message, "id": ident}).encode() + b"\n"
            async with self._sending:  # one line at a time: a long one is sent in parts
                await self._send(line)
            if queued:
                first: list[asyncio.Future[Any]] = [taken, reply]
                done, _ = await asyncio.wait(
                    first, timeout=REPLY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
                )
                if not done:  # (a reply of "waiting" it sent before is stale now)
                    self._set_waiting(False)
                    raise NotTaken(
                        f"the terminal of task {self.task_id} has not taken the input for "
                        f"{REPLY_TIMEOUT:.0f} s (its host is stopped or overloaded): it may "
                        "still be typed when the host goes on; read the task's output "
                        "before typing it again"
                    )
            answer = await asyncio.wait_for(asyncio.shield(reply), max(0, deadline - loop.time()))
        except TimeoutError:
            return None
        except OSError as exc:
            raise TerminalGone(f"the terminal of task {self.task_id} is gone: {exc}") from None
        finally:
            self._replies.pop(ident, None)
            self._queued.pop(ident, None)
        if "ended" in answer:  # typed (in part at least), then the command ended
            raise TypedThenGone(f"the command of task {self.task_id} has ended")
        if "gone" in answer:  # it came as the command ended: not typed
            raise TerminalGone(f"the command of task {self.task_id} has ended")
        if "error" in answer:
            raise InvalidInputError(f"task {self.task_id}: {answer['error']}")
        return answer

    async def _send(self, line: bytes) -> None:
        """Send one whole line, or close the link: a host that reads nothing for
        ``REPLY_TIMEOUT`` s (stopped, wedged) would have had the next request joined to
        the part of this one already sent, and both lost; closed, it drops that part."""
        assert self._sock is not None
        try:
            await asyncio.wait_for(
                asyncio.get_running_loop().sock_sendall(self._sock, line), REPLY_TIMEOUT
            )
        except TimeoutError:
            self.close()
            raise TerminalGone(
                f"the terminal of task {self.task_id} takes no input: its host has read "
                f"nothing for {REPLY_TIMEOUT:.0f} s (nothing was typed)"
            ) from None

    async def type(
        self, text: str, key: str | None = None, timeout: float = REPLY_TIMEOUT, lines: bool = False
    ) -> bool:
        """Type ``text`` into the terminal (``key``: an input sent again with the same key
        is typed once; ``lines``: its line ends are Enter presses, see ``worker.ptyhost``).
        True once all of it was written; False when the command has not read it all within
        ``timeout`` s (the rest is typed as it reads)."""
        loop = asyncio.get_running_loop()
        self.typed_at = loop.time()
        keys, self.keys = self.keys, loop.create_future()
        keys.set_result(None)
        message: dict[str, Any] = {"input": text, "key": key}
        if lines:
            message["lines"] = True
        return await self._request(message, timeout, queued=True) is not None

    async def resize(
        self, columns: int, rows: int, sizer: str | None = None, only_if_last: bool = False
    ) -> tuple[tuple[int, int] | None, bool | None]:
        """Set the terminal's size, as ``sizer`` (``only_if_last``: only while that one set
        it last); returns the size it had and whether its program is on the alternate
        screen (each None from a host older than that answer)."""
        message: dict[str, Any] = {"resize": [columns, rows], "by": sizer}
        if only_if_last:
            message["if_last"] = True
        reply = await self._request(message, REPLY_TIMEOUT)
        if reply is None:
            raise TerminalGone(f"the terminal of task {self.task_id} does not answer")
        was, alternate = reply.get("was"), reply.get("alternate")
        size = (was[0], was[1]) if isinstance(was, list) and len(was) == 2 else None
        return size, alternate if isinstance(alternate, bool) else None

    async def seen(self, sizer: str) -> bool | None:
        """Tell the terminal host that the attach ``sizer`` is still there (it counts one
        not heard from for a while as gone: ``worker.ptyhost.ATTACH_LEASE``), once a
        second at most (an attach's calls come back to back while output pours). Returns
        whether the host knew it (None: not asked, or no answer)."""
        now = asyncio.get_running_loop().time()
        if now - self._seen.get(sizer, -SEEN_EVERY) < SEEN_EVERY:
            return None
        if len(self._seen) >= MAX_ATTACHES_SEEN:
            self._seen.clear()
        self._seen[sizer] = now
        # (a host older than that request, or gone: the caller's wait sees the task's end)
        with contextlib.suppress(InvalidInputError):
            reply = await self._request({"seen": sizer}, REPLY_TIMEOUT)
            known = None if reply is None else reply.get("seen")
            return known if isinstance(known, bool) else None
        return None

    def close(self) -> None:
        if self._connected is not None and not self._connected.done():
            self._connected.cancel()
        if self._pump is not None:
            self._pump.cancel()
        with contextlib.suppress(Exception):
            self._close()
