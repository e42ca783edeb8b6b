"""The wire format, without models: JSON lines (cheap to import; the CLI's hot path and
the client's connection logic need nothing more).

One connection carries one request. The client sends a single line
``{"v": PROTOCOL_VERSION, "op": <verb>, ...params}``; the supervisor answers with zero or
more ``{"type": "progress"|"started", "data": {...}}`` lines and ends with exactly one
``{"type": "result", "data": ...}`` or ``{"type": "error", "code", "message", "taskId"}``.
Closing the connection before the end is how a caller disappears (SPEC F5).
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Callable, Iterator

from .errors import ProtocolError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms
    from typing import Any

PROTOCOL_VERSION = 1
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Longest accepted line; requests carry the caller's environment, which can be large."""


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line (compact ASCII JSON, newline-terminated).

    ASCII, so that text no UTF-8 can hold still travels: a path with undecodable bytes
    (``os.fsdecode`` gives ``\\udcXX``) arrives as the same string on the other side.
    """
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


MAX_INTEGER_DIGITS = 100
"""Digits a protocol integer has at most (offsets stop at 2**62, 19 digits): one of 309 or
more overflowed the float a timeout is read as, an internal error (a review)."""


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ValueError(f"an integer of more than {MAX_INTEGER_DIGITS} digits")
    return int(text)


def decode(line: bytes) -> dict[str, Any]:
    """Parse one protocol line into a JSON object, or raise :class:`ProtocolError`."""
    try:
        message = json.loads(line, parse_int=_integer)
    except ValueError as exc:  # (not JSON, not UTF-8, an integer too long)
        raise ProtocolError(f"malformed protocol message: {exc}") from None
    except RecursionError:  # (`[[[[…`: nested deeper than the parser's stack)
        raise ProtocolError("malformed protocol message: nested too deep") from None
    if not isinstance(message, dict):
        raise ProtocolError("malformed protocol message: not a JSON object")
    return message


LONGEST_WAIT = 86400.0
"""Seconds one wait on a socket lasts at most (a timeout of ``1e13`` ms, which a caller
may give, overflows the platform's ``time_t``)."""


def read_messages(
    sock: socket.socket,
    preamble: bool = False,
    deadline: float | None = None,
    check: Callable[[], bool] | None = None,
) -> Iterator[dict[str, Any]]:
    """The protocol lines arriving on ``sock`` until the peer closes it. ``preamble``:
    lines that are no JSON object before the first message are skipped (a remote login
    shell's greeting from its ``.bashrc``, on the stdout ssh relays). ``deadline`` (a
    ``time.monotonic()``): past it, waiting for more raises :class:`AnswerOverdue`.
    ``check``: asked after each :data:`SILENCE_CHECK_SECONDS` with nothing read whether
    the peer still answers; when it does not, :class:`NotAnswering` is raised."""
    buf, searched = bytearray(), 0  # (no newline before `searched`: a 7 MB line searched
    check_at = time.monotonic() + SILENCE_CHECK_SECONDS if check is not None else None
    while True:
        wake = (
            deadline
            if check_at is None
            else check_at
            if deadline is None
            else min(deadline, check_at)
        )
        if wake is not None:  # (a day at a time: a socket takes no longer timeout)
            sock.settimeout(min(max(0.001, wake - time.monotonic()), LONGEST_WAIT))
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return
        except TimeoutError:
            now = time.monotonic()
            if check is not None and check_at is not None and now >= check_at:
                if not check():
                    raise NotAnswering("no answer to a check either") from None
                check_at = time.monotonic() + SILENCE_CHECK_SECONDS
            if deadline is None or time.monotonic() < deadline:
                continue
            raise AnswerOverdue("no answer in time") from None
        if check_at is not None:
            check_at = time.monotonic() + SILENCE_CHECK_SECONDS
        if not chunk:
            return
        buf += chunk  # and copied whole at each 64 KiB piece took 12 s to list five times)
        while (newline := buf.find(b"\n", searched)) >= 0:
            line = bytes(buf[:newline])
            del buf[: newline + 1]
            searched = 0
            if preamble:
                found = _after_preamble(line)
                if found is None:
                    continue
                preamble = False
                yield found
                continue
            yield decode(line)
        searched = len(buf)
        if len(buf) > MAX_MESSAGE_BYTES:
            raise ProtocolError("the peer sent an oversized message")


class AnswerOverdue(OSError):
    """The peer has said nothing by the call's deadline (a frozen supervisor or link)."""


class NotAnswering(AnswerOverdue):
    """The peer said nothing for a while, and did not answer a check meanwhile either."""


SILENCE_CHECK_SECONDS = 10.0
"""Seconds of silence after which a waiting call checks that its supervisor answers."""


def _after_preamble(line: bytes) -> dict[str, Any] | None:
    """The message a line ends with, after what a greeting left before it on the same
    line (one printed with no newline), or None for a line of greeting alone."""
    start = line.find(b"{")
    for _ in range(64):
        if start < 0:
            return None
        with contextlib.suppress(ProtocolError):
            return decode(line[start:])
        start = line.find(b"{", start + 1)
    return None


def error_message(code: str, message: str, task_id: str | None = None) -> dict[str, Any]:
    """The final line of a failed request."""
    return {"type": "error", "code": code, "message": message, "taskId": task_id}
