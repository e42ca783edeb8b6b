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


class TerminalGone(InvalidInputError):
    """The task's terminal cannot be reached (its host ended or was killed)."""


class TerminalLink:
    """One connection to one terminal host; requests go one at a time."""

    def __init__(self, task_id: str, path: Path) -> None:
        self.task_id = task_id
        self.path = path
        self.waiting = False
        """The command waits for input now (as the host last said)."""
        self.closed = False
        self._changed = asyncio.Event()
        self._connected: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pump: asyncio.Task[None] | None = None
        self._replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lock = asyncio.Lock()

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
            try:
                if not stat.S_ISSOCK(os.lstat(self.path).st_mode):
                    raise ConnectionRefusedError(f"{self.path} is not a socket")
                with socket_address(self.path) as address:
                    reader, writer = await asyncio.open_unix_connection(address)
                break
            except OSError as exc:
                if gone.done() or loop.time() > deadline:
                    self._close()
                    raise TerminalGone(
                        f"the terminal of task {self.task_id} cannot be reached: {exc}"
                    ) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.1)
        sock = writer.get_extra_info("socket")
        _pid, uid, _gid = struct.unpack(
            "3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        )
        if uid != os.getuid():  # not our task's host: nothing is typed into it
            writer.close()
            self._close()
            raise TerminalGone(f"the terminal socket of task {self.task_id} is not ours")
        self._writer = writer
        self._pump = asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while line := await reader.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(message, dict):
                    continue
                if "waiting" in message:
                    self._set_waiting(bool(message["waiting"]))
                else:
                    self._replies.put_nowait(message)
        except OSError:
            pass
        finally:
            self._close()

    def _set_waiting(self, waiting: bool) -> None:
        self.waiting = waiting
        self._changed.set()
        self._changed = asyncio.Event()

    def _close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._replies.put_nowait({"error": "the terminal closed"})
        self._set_waiting(False)
        if self._writer is not None:
            self._writer.close()

    async def waiting_for_input(self) -> None:
        """Returns once the command waits for input (never if the terminal closes)."""
        while not self.waiting:
            if self.closed:
                await asyncio.Future()  # the task's end is what the caller waits for then
            await self._changed.wait()

    async def _request(self, message: dict[str, Any], answer: str) -> dict[str, Any]:
        await self.ready()
        async with self._lock:
            assert self._writer is not None
            try:
                self._writer.write(json.dumps(message).encode() + b"\n")
                await self._writer.drain()
                reply = await asyncio.wait_for(self._replies.get(), REPLY_TIMEOUT)
            except (OSError, TimeoutError) as exc:
                raise TerminalGone(
                    f"the terminal of task {self.task_id} does not answer: {exc}"
                ) from None
        if answer not in reply:
            raise TerminalGone(f"task {self.task_id}: {reply.get('error', 'no answer')}")
        return reply

    async def type(self, text: str) -> None:
        """Type ``text`` into the terminal; returns once all of it was written."""
        await self._request({"input": text}, "wrote")

    async def resize(self, columns: int, rows: int) -> None:
        await self._request({"resize": [columns, rows]}, "resized")

    def close(self) -> None:
        if self._connected is not None and not self._connected.done():
            self._connected.cancel()
        if self._pump is not None:
            self._pump.cancel()
        with contextlib.suppress(Exception):
            self._close()
