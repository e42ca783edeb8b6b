"""``wave-bash attach ID``: a person takes over an interactive task's terminal (SPEC P5).

The person's terminal goes raw; what they type is sent to the task's terminal, what the
task prints is written to theirs, and the detach key (Ctrl+], as in telnet) leaves the
task running. Everything goes through the supervisor's ``terminal`` request, one short
call at a time, so it works wherever the CLI does: after a supervisor restart (the next
call reaches the new one) and over ``--remote``.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import os
import re
import select
import shutil
import termios
import tty
from collections.abc import Callable
from typing import Any

from .constants import TERMINAL_SIDE_MAX
from .errors import InvalidInputError, TaskNotRunningError

DETACH_KEY = b"\x1d"
"""Ctrl+]: leaves the task running."""
POLL_MS = 100
"""How long one call waits for output when nothing was typed."""

Call = Callable[..., dict[str, Any]]


def attach(call: Call, task_id: str, stdin: int = 0, stdout: int = 1) -> int:
    """Connect the terminal on ``stdin``/``stdout`` to the task's until the person detaches
    (returns 0) or the task ends (returns its exit code, or 0 if unknown)."""
    size = _size(stdout)
    reply = call(task_id=task_id, resize=list(size), wait=0)
    saved = termios.tcgetattr(stdin) if os.isatty(stdin) else None
    # Keys as UTF-8 text (the request's input): a character split between two reads
    # waits for its end; a byte that is no UTF-8 (a Latin-1 terminal) becomes U+FFFD.
    keys = codecs.getincrementaldecoder("utf-8")(errors="replace")
    screen = _Screen()
    _say(stdout, f"[attached to {task_id}; Ctrl+] detaches, the task keeps running]\r\n")
    farewell = ""
    detached = f"\r\n[detached from {task_id}; it keeps running]\r\n"
    try:
        if saved is not None:
            tty.setraw(stdin)
        while True:
            data = base64.b64decode(reply["data"])
            screen.see(data)
            _write(stdout, data)
            if reply["status"] != "running" and not reply["data"]:
                code = reply.get("exitCode")
                farewell = (f"\r\n[task {task_id} ended: {reply['status']}"
                            + ("" if code is None else f", exit code {code}") + "]\r\n")  # fmt: skip
                return 0
            typed, detach = _typed(stdin, reply, keys)
            if detach and not typed:
                farewell = detached
                return 0
            now = _size(stdout)
            resized = None if now == size else list(now)
            size = now
            try:
                reply = call(
                    task_id=task_id,
                    input=typed or None,
                    resize=resized,
                    offset=reply["offset"],
                    wait=0 if typed or resized else POLL_MS,
                )
            except (InvalidInputError, TaskNotRunningError) as exc:
                if not typed:
                    raise
                # Refused (a line longer than the terminal takes) or typed as it ended:
                # said, and the session goes on (the next call shows an end).
                _say(stdout, f"\r\n[not typed: {exc}]\r\n")
                reply = call(task_id=task_id, offset=reply["offset"], wait=0)
            if detach:  # (what they typed before Ctrl+] went first)
                _write(stdout, base64.b64decode(reply["data"]))
                farewell = detached
                return 0
    finally:
        with contextlib.suppress(OSError):
            _write(stdout, screen.reset())  # their terminal as the task's output left it
            _say(stdout, farewell)
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)


class _Screen:
    """Which of the terminal's modes the task's output left on, to turn off as the person
    leaves: their own shell came back on the alternate screen, with mouse reports (a
    review). The alternate screen is left only if it was seen entered (leaving it also
    moves the cursor to where it was saved)."""

    ALTERNATE = re.compile(rb"\x1b\[\?(?:1049|1047|47)([hl])")
    RESET = (
        b"\x1b[0m\x1b[?25h\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l"
        b"\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l\x1b[?7h\x1b[4l\x1b(B\x0f\x1b7\x1b[r\x1b8"
    )
    """Plain text, a visible cursor, normal cursor and keypad keys, no mouse reports (in
    any encoding), no focus reports, no bracketed paste, lines that wrap, no insert mode,
    the ASCII character set, the whole screen scrolling (its cursor kept: setting the
    scroll region moves it): as a shell expects them (a review found a task's scroll
    region, wrapping and insert mode left on the person's terminal)."""

    def __init__(self) -> None:
        self.alternate = False
        self.tail = b""

    def see(self, data: bytes) -> None:
        seen = self.tail + data
        for match in self.ALTERNATE.finditer(seen):
            self.alternate = match[1] == b"h"
        self.tail = seen[-8:]  # (a sequence split between two reads)
        if self.tail.rfind(b"\x1b") < 0:
            self.tail = b""

    def reset(self) -> bytes:
        return (b"\x1b[?1049l" if self.alternate else b"") + self.RESET


def _size(stdout: int) -> tuple[int, int]:
    """The person's terminal's columns and rows: the terminal's own (``COLUMNS`` and
    ``LINES`` may be stale or made up, 20000 was refused), within what a task's terminal
    takes."""
    try:
        size = os.get_terminal_size(stdout)
    except OSError:  # (not a terminal: what the environment says, else 80×24)
        size = shutil.get_terminal_size()
    columns, rows = size
    return max(1, min(TERMINAL_SIDE_MAX, columns)), max(1, min(TERMINAL_SIDE_MAX, rows))


def _typed(stdin: int, reply: dict[str, Any], keys: codecs.IncrementalDecoder) -> tuple[str, bool]:
    """What the person typed since the last call ("" for nothing), and whether they
    detach (Ctrl+], or their terminal closed): what they typed before it is sent."""
    ready, _, _ = select.select([stdin], [], [], 0 if reply["data"] else 0.01)
    if not ready:
        return "", False
    data = os.read(stdin, 4096)
    if not data:  # their terminal closed
        return "", True
    before, detach, _ = data.partition(DETACH_KEY)
    return keys.decode(before), bool(detach)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _say(fd: int, text: str) -> None:
    _write(fd, text.encode())


def main_call(cli_call: Callable[..., Any]) -> Call:
    """The ``terminal`` request through the CLI's caller."""

    def call(**params: Any) -> dict[str, Any]:
        if params.get("input"):  # a call resent after a supervisor restart types once
            params["request_key"] = os.urandom(16).hex()
        return dict(cli_call("terminal", **{k: v for k, v in params.items() if v is not None}))

    return call
