"""A task's output printed exactly as its log has it, cleaned, in bounded pieces of whole
lines (the CLI's `run`, `output` and `output --follow`), and streamed as it comes where no
live view shows a foreground command."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading

from .calls import CallScope
from .constants import RAW_PIECE_MAX

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 4 ms (it came back here: 1.55×, not 1.33×)
    from collections.abc import Callable
    from typing import Any, BinaryIO, TypeAlias

    ReadPiece: TypeAlias = Callable[[dict[str, Any], CallScope | None], dict[str, Any]]
    """An ``output`` call of the task (``terminal`` for :class:`RawPrinter`) with these
    parameters (its ID and session added), in this scope."""

FOLLOW_WAIT = {"block": True, "timeout": 30_000, "pattern": r"\n"}
"""A piece of a stream: a real wait on the supervisor, until a line, the end, a timeout."""
STREAM_AFTER = 0.3
"""Seconds a foreground command runs before its output is streamed into a file: a quick
one's comes with its result, with no call more. Into a pipe it is streamed at once: its
reader may go away after its first line (`run -- yes | head -1`), and the command gets
SIGPIPE only once that is known, writing on meanwhile (0.6 GB in the 0.3 s, a trial)."""
STDOUT_WRITER = "stdout writer"
"""The name of a thread that writes to stdout: one still alive as the CLI leaves holds it
(a reader that reads nothing), and Python's own last flush would wait for it, or abort."""
STREAM_INTERVAL = 0.25
"""Seconds between two pieces of a stream at least: each is a call (over ``--remote``, an
ssh session), and one per line cost the supervisor 0.67 s of CPU for 2,500 lines (a
review); what came meanwhile comes in the next piece."""


def ended(record: dict[str, Any]) -> bool:
    return bool(record.get("status") != "running")


class PiecePrinter:
    """Prints a task's output from ``offset`` on, each byte as the log has it, blank lines
    too (they were lost at a piece's edges, and a newline was added every MiB: a trial)."""

    def __init__(self, read: ReadPiece) -> None:
        self.read = read
        self.offset = 0
        self.line_open = False
        """The last piece printed ended inside a line (one longer than a piece, a prompt)."""
        self.on_waiting: Callable[[], None] | None = None
        """Called as a followed task waits for input, once until it prints again."""

    def print_piece(
        self, wait: dict[str, Any], scope: CallScope | None = None
    ) -> tuple[dict[str, Any], bool]:
        """Print the next piece; returns its answer and whether it read nothing new."""
        out = self.read({"offset": self.offset, "follow": True, **wait}, scope)
        text, line_ended = out.get("output") or "", out.get("lineEnded")
        if line_ended is None:  # (a supervisor of before: its pieces are trimmed lines)
            line_ended = bool(text)
        if text or line_ended:
            sys.stdout.write(text + ("\n" if line_ended else ""))
            sys.stdout.flush()
            self.line_open = not line_ended
        next_offset = out.get("nextOffset") or self.offset
        read_nothing = next_offset == self.offset
        self.offset = next_offset
        return out, read_nothing

    def print_all(self, follow: bool, scope: CallScope | None = None) -> dict[str, Any]:
        """What the task has written so far, or with ``follow`` until it ends; returns the
        last answer. A last line with no newline gets one, as before. ``scope`` lets
        another thread end the stream (:func:`watch_reader`)."""
        wait = FOLLOW_WAIT if follow else {"block": False}
        said = False
        while True:
            out, read_nothing = self.print_piece(wait, scope)
            said = said and read_nothing
            if follow and not said and out.get("waitingForInput") and self.on_waiting:
                self.on_waiting()
                said = True
            if read_nothing and (not follow or ended(out)):
                if self.line_open:
                    print(flush=True)
                    self.line_open = False
                return out


RAW_WAIT_MS = 5000
"""How long a raw piece of a stream waits for new bytes at most (``terminal``'s bound)."""


class RawPrinter(PiecePrinter):
    """Prints a task's log from ``offset`` on, byte for byte as it is (``--raw``: binary
    and escapes too; ``> x.tgz`` got a line saying binary output was not shown, a
    trial), read with ``terminal`` requests that name their size."""

    def print_piece(
        self, wait: dict[str, Any], scope: CallScope | None = None
    ) -> tuple[dict[str, Any], bool]:
        waits = RAW_WAIT_MS if wait.get("block") else 0
        out = self.read({"offset": self.offset, "size": RAW_PIECE_MAX, "wait": waits}, scope)
        import base64  # (--raw only: the CLI's start-up)

        data = base64.b64decode(out["data"])
        if data:
            buffer = _stdout_bytes()
            buffer.write(data)
            buffer.flush()
            self.offset = out["offset"]
        return out, not data


def _stdout_bytes() -> BinaryIO:
    """Standard output's bytes, after what its text layer holds; closed, it fails as a
    write to it does (it was a traceback: a trial)."""
    sys.stdout.flush()
    buffer: BinaryIO | None = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))
    return buffer


def watch_reader(on_gone: Callable[[], None]) -> None:
    """Call ``on_gone`` once, from a thread of its own, when stdout's reader has gone: a
    pipe or socket whose other end closed (nothing for a terminal or a file). A stream
    learnt it only from its next write: `output --follow ID | grep -m1 ready` waited for
    the task's next line, for ever where it went quiet (a trial); GNU `tail -f` polls
    alike."""
    import select
    import stat

    try:
        fd = sys.stdout.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)) or not hasattr(select, "poll"):
        return
    gone = select.POLLERR | select.POLLHUP | select.POLLNVAL

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # (these three are always said, whatever is asked)
        while not any(events & gone for _, events in poller.poll()):
            pass
        on_gone()

    threading.Thread(target=watch, name="reader watch", daemon=True).start()


class Streamer:
    """Streams a foreground command's output while the CLI waits for its result, where no
    live view shows it (stdout a pipe or a file: `run -- make | tee log` showed nothing
    until make ended, a trial). It starts once the command has run ``after`` seconds
    (:data:`STREAM_AFTER`); :meth:`finish` stops it, and what it printed is not printed again."""

    def __init__(self, printer_of: Callable[[str], PiecePrinter], after: float) -> None:
        self.printer_of, self.after = printer_of, after
        self.printer: PiecePrinter | None = None
        self.done = threading.Event()
        self.scope = CallScope()
        self.thread: threading.Thread | None = None
        self.stuck = False
        """Still writing to a reader that reads nothing, once :meth:`finish`'s patience
        ran out."""

    def start(self, task_id: str) -> None:
        """Begin for the task (the run's ``on_start``; once)."""
        if self.printer is None:
            self.printer = self.printer_of(task_id)
            self.thread = threading.Thread(target=self._stream, name=STDOUT_WRITER, daemon=True)
            self.thread.start()

    def _stream(self) -> None:
        if self.done.wait(self.after) or self.printer is None:
            return
        # (any failure, a closed stdout or a call that failed, ends it: the result's own
        # printing says it, and prints what was not streamed)
        with contextlib.suppress(Exception):
            while not self.done.is_set():
                out, read_nothing = self.printer.print_piece(FOLLOW_WAIT, self.scope)
                if (read_nothing and ended(out)) or self.done.wait(STREAM_INTERVAL):
                    return

    def finish(self, patience: float | None = None) -> PiecePrinter | None:
        """Stop streaming; the printer to print the rest with, if it printed anything.
        With ``patience``, a stream still writing to a reader that reads nothing after
        that many seconds is left so, ``stuck`` (a CLI told to stop waited for the
        reader: a trial)."""
        self.done.set()
        self.scope.abandon()  # (a wait for the next line ends at once)
        printer = self.printer
        if self.thread is not None:
            with contextlib.suppress(RuntimeError):  # (a signal as it started: not yet)
                self.thread.join(patience)
            self.stuck = self.thread.is_alive()
        return printer if printer is not None and (printer.offset or printer.line_open) else None
