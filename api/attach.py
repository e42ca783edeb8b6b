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
import signal
import termios
import threading
import tty
from collections.abc import Callable, Iterator
from typing import Any

from .constants import TERMINAL_SIDE_MAX
from .errors import InvalidInputError, TaskNotRunningError

DETACH_KEY = b"\x1d"
"""Ctrl+]: leaves the task running."""
_ESC = rb"\x1b[\x00-\x17\x19\x1c-\x1f\x7f]*"
"""ESC, and the C0 controls a terminal runs (or, DEL, ignores) without leaving the escape
it began: ``ESC NUL ]52;…`` sets the clipboard as ``ESC ]52;…`` does (a review)."""
_CSI, _OSC, _DCS = (rb"(?:" + _ESC + c + rb"|" + c1 + rb")" for c, c1 in (
    (rb"\[", rb"\xc2\x9b"), (rb"\]", rb"\xc2\x9d"), (rb"P", rb"\xc2\x90")
))  # fmt: skip
_ST = rb"(?:\x07|" + _ESC + rb"\\|\xc2\x9c)"
"""Each introducer also as a C1 control in UTF-8 (``U+009B``…), which VTE's terminals
obey (a trial: an OSC 52 so spelt reached the person's terminal)."""
TERMINAL_QUERIES = re.compile(
    b"|".join(
        (
            _CSI + rb"[?>=]?[0-9;]*[nc]",  # status and cursor reports (6n), attributes (c, >c)
            _CSI + rb"[?>]?[0-9;]*\$p",  # mode reports (DECRQM)
            _CSI + rb">[0-9;]*q",  # the terminal's version (XTVERSION)
            _CSI + rb"[0-9;]*t",  # window reports and moves
            _CSI + rb"\?u",  # the keyboard protocol's flags (kitty's)
            _CSI + rb"[0-9]*x",  # the terminal's parameters (DECREQTPARM)
            _CSI + rb"[0-9;]*\*y",  # a checksum of the screen (DECRQCRA)
            _CSI + rb"[0-9;]*\$[uw]",  # presentation and tab states (DECRQTSR, DECRQPSR)
            _CSI + rb"\?[0-9;]*[mS]",  # key modifier and graphics settings (XTQMODKEYS…)
            _ESC + rb"Z|\x05",  # who the terminal is (DECID), its answerback (ENQ)
            _OSC + rb"[0-9]+;(?:[^\x07\x1b;]*;)*\?" + _ST,  # colours, the clipboard (…;?)
            _DCS + rb"[$+]q[^\x1b\x07]*?" + _ST,  # settings, capabilities (DECRQSS, XTGETTCAP)
            _ESC + rb"_G[^\x1b\x07;]*a=q[^\x1b\x07]*?" + _ST,  # kitty's image support (a=q)
        )
    )
)
"""Questions a program asks its terminal, which the terminal answers as typed input. Left
out of the output a person's terminal is shown on attaching (written before they came):
answered then, the answer went into whatever the program read next, a password (a
review: `read -s` got ``ESC[2;18R`` before it). A question asked while they are attached
goes through: the program waits for that answer."""
WATCH_MS = 5000
"""How long one call waits for output (the most a ``terminal`` request waits). Keys and
resizes go in calls of their own as they come, beside the waiting one: a key never waits
for a poll to end, and an idle attach makes one call in five seconds."""

Call = Callable[..., dict[str, Any]]


def attach(call: Call, task_id: str, stdin: int = 0, stdout: int = 1) -> int:
    """Connect the terminal on ``stdin``/``stdout`` to the task's until the person detaches
    or the task ends (returns 0).

    A thread waits for the task's output (long calls, one after the other) while this one
    waits for keys and resizes and sends each at once: before, one loop did both, so a
    key typed while it waited for output waited too (up to 100 ms), and an idle attach
    asked ten times a second.
    """
    size = _size(stdout)
    sizer = os.urandom(8).hex()  # (the terminal remembers who set its size last)
    first = call(task_id=task_id, resize=list(size) if size else None, sizer=sizer, wait=0)
    found = first.get("sizeBefore")  # (given back as they leave: see _give_back)
    saved = termios.tcgetattr(stdin) if os.isatty(stdin) else None
    # Keys as UTF-8 text (the request's input): a character split between two reads
    # waits for its end; a byte that is no UTF-8 (a Latin-1 terminal) becomes U+FFFD.
    keys = codecs.getincrementaldecoder("utf-8")(errors="replace")
    view = _View(stdout, first["offset"] - len(base64.b64decode(first["data"])))
    farewell = ""
    running = first["status"] == "running"  # (else its last output, then its end)
    _say(stdout, f"[attached to {task_id}; Ctrl+] detaches, the task keeps running]\r\n"
                 if running else f"[attached to {task_id}, which has ended]\r\n")  # fmt: skip
    try:
        if saved is not None:
            tty.setraw(stdin, termios.TCSANOW)  # (keys typed before it: the task's)
        full_screen = running and first.get("alternateScreen") is True
        if full_screen:  # (vim, less: entered before the output replayed, which does not
            _write(stdout, ALTERNATE_ON)  # show it; a trial)
            view.screen.alternate = True
        view.show(first, replay=True)
        if full_screen and size and found == list(size):
            _redraw(call, task_id, size, sizer)  # (the same size: no signal to redraw)
        elif size and found != list(size):  # (resized: the margins the replay set go, as a
            _write(stdout, WHOLE_SCREEN_SCROLLS)  # terminal's do; vim drew shifted, a trial)
        with view.watching(call, task_id, first, sizer) as woken, _resizes_wake(view) as resizes:
            while True:
                ready, _, _ = select.select([stdin, woken], [], [], None if resizes else 0.5)
                if woken in ready:
                    os.read(woken, 512)
                if view.failed is not None:
                    raise view.failed
                if view.ended is not None:
                    farewell = view.ended
                    return 0
                now = _size(stdout)
                if now is not None and (now != size or view.forgotten):
                    size, view.forgotten = now, False
                    view.show(call(task_id=task_id, resize=list(now), sizer=sizer,
                                   offset=view.offset, wait=0))  # fmt: skip
                if stdin not in ready:
                    continue
                data = os.read(stdin, 4096)
                before, detach, _ = data.partition(DETACH_KEY)
                typed = keys.decode(before)
                if typed:
                    try:
                        reply = call(task_id=task_id, input=typed, offset=view.offset, wait=0)
                    except (InvalidInputError, TaskNotRunningError) as exc:
                        # Refused (a line longer than the terminal takes) or typed as it
                        # ended: said, and the session goes on (the watcher shows an end).
                        # What came with it (the rest of a paste) is not typed either: its
                        # end alone was, after what was on the line (a trial).
                        detach = detach or (DETACH_KEY if _drop_the_rest(stdin) else b"")
                        keys.reset()
                        view.say(f"\r\n[not typed: {exc}; nor what came with it (what is on "
                                 "the line stays: Ctrl+U clears it)]\r\n")  # fmt: skip
                    else:
                        view.show(reply)  # (what they typed before Ctrl+] went first)
                if detach or not data:  # Ctrl+], or their terminal closed
                    farewell = f"\r\n[detached from {task_id}; it keeps running]\r\n"
                    return 0
    finally:
        if running and view.ended is None and view.failed is None:  # (a supervisor gone:
            _give_back(call, task_id, found, size, sizer)  # it would be tried for 30 s more)
        with contextlib.suppress(OSError):
            _write(stdout, view.screen.reset())  # their terminal as the task's output left it
            _say(stdout, farewell)
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)


ALTERNATE_ON = b"\x1b[?1049h"
"""Enters the alternate screen (saving the person's own, given back as they leave)."""
WHOLE_SCREEN_SCROLLS = b"\x1b7\x1b[r\x1b8"
"""The scrolling margins reset to the whole screen, the cursor kept where it is."""
PASTE_GAP = 0.05
"""Seconds without a key that end a paste (its pieces come at once)."""


def _drop_the_rest(stdin: int) -> bool:
    """Read and drop the keys that came at once with a refused piece (a paste's rest);
    returns whether Ctrl+] was among them."""
    detach = False
    while select.select([stdin], [], [], PASTE_GAP)[0]:
        data = os.read(stdin, 65536)
        if not data:
            return True
        detach = detach or DETACH_KEY in data
    return detach


def _redraw(call: Call, task_id: str, size: tuple[int, int], sizer: str) -> None:
    """Have a full-screen program draw its screen again: its terminal resized one row
    less and back (a signal each), as ``dtach -r winch`` does; the output replayed is
    only the last of what it drew (a trial saw vim's first rows wrong)."""
    columns, rows = size
    with contextlib.suppress(InvalidInputError, TaskNotRunningError):
        if rows > 1:
            call(task_id=task_id, resize=[columns, rows - 1], sizer=sizer, wait=0)
        call(task_id=task_id, resize=[columns, rows], sizer=sizer, wait=0)


def _give_back(
    call: Call, task_id: str, found: Any, mine: tuple[int, int] | None, sizer: str
) -> None:
    """Leaving, say so: the terminal takes the size of the attach that stays, or the
    task's own (a second attach, larger, that left kept the first one's program drawing
    for a screen it did not have; tmux goes back to the size of the client that stays).
    The terminal host keeps who set which size; ``found`` is what an older one takes."""
    if not (isinstance(found, list) and mine is not None):
        return
    with contextlib.suppress(Exception):  # (the task may end as they leave)
        call(task_id=task_id, resize=found, sizer=sizer, only_if_last=True, wait=0)


class _View:
    """What the person's terminal has shown of the task's log: each reply's data is written
    from where the last write ended (either thread's, whichever comes first), never twice
    and never once the attach has ended."""

    def __init__(self, stdout: int, offset: int) -> None:
        self.stdout = stdout
        self.offset = offset
        self.screen = _Screen()
        self.clipboard = _NoClipboard()
        self.ended: str | None = None
        self.failed: BaseException | None = None
        self.forgotten = False
        """The terminal host counted this attach as gone: the keys' loop sets its size."""
        self._lock = threading.RLock()  # (a resize's signal handler may come in while held)
        self._closed = False
        self._wake = -1

    def show(self, reply: dict[str, Any], replay: bool = False) -> None:
        """Write what ``reply`` has beyond what was shown; ``replay``: output the task
        wrote before the person came (its terminal queries are left out). Never what
        would set the person's clipboard (OSC 52; tmux lets no program do that either)."""
        data, end = base64.b64decode(reply["data"]), int(reply["offset"])
        with self._lock:
            start = end - len(data)
            if self._closed or end <= self.offset or start > self.offset:
                return  # (shown already; or a gap, which the watcher's next call fills)
            data = data[self.offset - start :]
            if replay:
                data = TERMINAL_QUERIES.sub(b"", data)
            data = self.clipboard.filter(data)
            self.screen.see(data)
            _write(self.stdout, data)
            self.offset = end

    def say(self, text: str) -> None:
        with self._lock:
            if not self._closed:
                _say(self.stdout, text)

    @contextlib.contextmanager
    def watching(
        self, call: Call, task_id: str, reply: dict[str, Any], sizer: str
    ) -> Iterator[int]:
        """Run the output thread; yields the descriptor it (and a resize) wakes the keys'
        loop through. On leaving, nothing more is written (the thread, a daemon, may
        still be in a call: its reply is dropped). Its calls name ``sizer``: the terminal
        host counts an attach it has not heard from for a while as gone (one killed)."""
        woken, self._wake = os.pipe()
        os.set_blocking(self._wake, False)  # (a full pipe wakes the loop already)
        threading.Thread(
            target=self._watch,
            args=(call, task_id, reply, sizer),
            name="attach-output",
            daemon=True,
        ).start()
        try:
            yield woken
        finally:
            with self._lock:  # (after this, the thread touches no descriptor)
                self._closed = True
                os.close(self._wake)
                os.close(woken)

    def poke(self) -> None:
        """Wake the keys' loop (the output thread ended, the terminal was resized)."""
        with self._lock, contextlib.suppress(OSError):
            if not self._closed:
                os.write(self._wake, b"!")

    def _watch(self, call: Call, task_id: str, reply: dict[str, Any], sizer: str) -> None:
        """Wait for output and show it, until the task's log is shown to its end (the task
        ended) or a call fails (raised in the keys' loop)."""
        try:
            while not self._closed:
                if reply["status"] != "running" and not reply["data"]:
                    code = reply.get("exitCode")
                    self.ended = (f"\r\n[task {task_id} ended: {reply['status']}"
                                  + ("" if code is None else f", exit code {code}") + "]\r\n")  # fmt: skip
                    return
                reply = call(task_id=task_id, offset=self.offset, wait=WATCH_MS, sizer=sizer)
                if reply.get("sizerForgotten") is True:  # (counted as gone: stopped, or
                    self.forgotten = True  # its output stalled; its size is set again)
                    self.poke()
                self.show(reply)
        except BaseException as exc:
            self.failed = exc
        finally:
            self.poke()


@contextlib.contextmanager
def _resizes_wake(view: _View) -> Iterator[bool]:
    """SIGWINCH wakes the keys' loop, which sends the new size at once; yields False where
    no handler can be set (not the main thread): the loop then looks every 0.5 s."""
    try:
        previous = signal.signal(signal.SIGWINCH, lambda *_: view.poke())
    except (ValueError, AttributeError):  # (not the main thread; no SIGWINCH)
        yield False
        return
    try:
        yield True
    finally:
        signal.signal(signal.SIGWINCH, previous)


class _Screen:
    """Which of the terminal's modes the task's output left on, to turn off as the person
    leaves: their own shell came back on the alternate screen, with mouse reports (a
    review). The alternate screen is left only if it was seen entered (leaving it also
    moves the cursor to where it was saved)."""

    ALTERNATE = re.compile(rb"\x1b\[\?(?:1049|1047|47)([hl])")
    RESET = (
        b"\x1b[0m\x1b[?25h\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l"
        b"\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l\x1b[?7h\x1b[4l\x1b(B\x0f\x1b7\x1b[r\x1b8"
        b"\x1b[<99u\x1b[>4m\x1b[?2026l"
    )
    """Plain text, a visible cursor, normal cursor and keypad keys, no mouse reports (in
    any encoding), no focus reports, no bracketed paste, lines that wrap, no insert mode,
    the ASCII character set, the whole screen scrolling (its cursor kept: setting the
    scroll region moves it), keys as plain bytes (kitty's keyboard flags popped, xterm's
    modifyOtherKeys off: Ctrl+C came as ``CSI 99;5u`` to the person's shell, a trial), no
    synchronized output held: as a shell expects them (a review found a task's scroll
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


class _NoClipboard:
    """Takes out of the task's output what sets the person's clipboard (OSC 52): a
    sandboxed command's text there would be pasted into their own shell (a review).
    Read as a terminal reads an OSC (``ESC ]``): its number as an integer (``052``) with
    the control bytes in it ignored, ended by BEL, ESC (``ESC \\`` or the start of another
    sequence: a stray ``ESC ] 52;`` held nothing after it back, a review), CAN or SUB.
    One cut between two reads is held until its end, the rest of its text dropped past
    ``HOLD`` bytes. An OSC begun by the C1 control ``U+009D`` in UTF-8 (``C2 9D``) is one
    too, in VTE's terminals, ended by ``U+009C`` as well (it reached the person's
    terminal: a trial); the lone byte 0x9d is none in a UTF-8 terminal (``Ý`` holds it).
    """

    START = re.compile(_ESC + rb"\]|\xc2\x9d")
    OPENING = re.compile(_ESC + rb"\Z")
    """An ESC at a read's end, with the controls that may stand between it and ``]``."""
    IN_ITS_PLACE = b"\x1b\\"
    """What an OSC 52 taken out leaves: an ST, which shows nothing. Nothing left a string
    it had ended open (``ESC]2;title`` then text in the title), and an ESC before it,
    which it cancelled, began a sequence with what followed (``ESC P``: a DCS that hid
    the prompt; a trial)."""
    ENDS = re.compile(rb"[\x07\x1b\x18\x1a]|\xc2\x9c")
    CONTROLS = re.compile(rb"[\x00-\x1f\x7f]")
    HOLD = 1 << 16

    def __init__(self) -> None:
        self.held = b""
        self.dropping = False

    def filter(self, data: bytes) -> bytes:
        data, self.held = self.held + data, b""
        out: list[bytes] = []
        at = 0
        if self.dropping:  # (the rest of one too long to hold)
            ended = self._end(data, 0)
            if ended is None:
                return b""
            self.dropping, at = False, ended[1]
        while True:
            found = self.START.search(data, at)
            if found is None:
                tail = data[at:]
                opening = self.OPENING.search(tail[-self.HOLD :])  # (maybe one's start)
                if opening is not None:
                    cut = len(tail) - (opening.end() - opening.start())
                    tail, self.held = tail[:cut], tail[cut:]
                elif tail.endswith(b"\xc2"):
                    tail, self.held = tail[:-1], tail[-1:]
                out.append(tail)
                return b"".join(out)
            start, body = found.span()
            out.append(data[at:start])
            ended = self._end(data, body)
            if ended is None:  # (its end still to come)
                if not self._may_set(data[body:]):
                    out.append(data[start:])
                elif len(data) - start <= self.HOLD:
                    self.held = data[start:]
                else:
                    self.dropping = True
                return b"".join(out)
            stop, at = ended
            if not self._sets(data[body:stop]):
                out.append(data[start:at])
            else:  # (an ST in its place: it ends what it ended, a string before it, a
                out.append(self.IN_ITS_PLACE)  # title; and an ESC just before it: a trial)

    def _end(self, data: bytes, at: int) -> tuple[int, int] | None:
        """Where an OSC's text stops (at BEL, ESC, CAN, SUB or ``U+009C``) and where what
        follows it begins (after BEL, ``ESC \\``, CAN, SUB, ``U+009C``; at another ESC), or
        None when its end has not come yet."""
        found = self.ENDS.search(data, at)
        if found is None:
            return None
        stop = found.start()
        if data[stop] != 0x1B:
            return stop, found.end()
        if stop + 1 >= len(data):
            return None  # (ESC last: `\\` may follow)
        return stop, stop + 2 if data[stop + 1] == 0x5C else stop

    SETTERS = (b"52", b"5522", b"1337")
    """OSC 52; kitty's clipboard (5522); iTerm2's ``1337;Copy=`` and ``CopyToClipboard``,
    which Ghostty takes too (a review: they went through)."""
    ITERM_COPY = (b"Copy=", b"CopyToClipboard")

    def _sets(self, body: bytes, ended: bool = True) -> bool:
        """Whether the OSC ``body`` sets the clipboard (``ended``: all of it is here;
        else whether it may, once the rest comes)."""
        number, _, rest = self.CONTROLS.sub(b"", body).partition(b";")
        if not number.isdigit() or number.lstrip(b"0") not in self.SETTERS:
            return False
        if number.lstrip(b"0") != b"1337":
            return True
        return rest.startswith(self.ITERM_COPY) or (
            not ended and any(copy.startswith(rest) for copy in self.ITERM_COPY)
        )

    def _may_set(self, body: bytes) -> bool:
        """Whether an OSC whose end has not come may set the clipboard."""
        text = self.CONTROLS.sub(b"", body)
        if b";" in text:
            return self._sets(text, ended=False)
        digits = text.lstrip(b"0")
        return (text.isdigit() and any(n.startswith(digits) for n in self.SETTERS)) or not text


def _size(stdout: int) -> tuple[int, int] | None:
    """The person's terminal's columns and rows: the terminal's own (``COLUMNS`` and
    ``LINES`` may be stale or made up, 20000 was refused), within what a task's terminal
    takes; None for a terminal that says 0 (it has none set: the task keeps its own, as
    under tmux; it was made 1×1, and stayed so after the person left)."""
    try:
        size = os.get_terminal_size(stdout)
    except OSError:  # (not a terminal: what the environment says, else 80×24)
        size = shutil.get_terminal_size()
    columns, rows = size
    if columns <= 0 or rows <= 0:
        return None
    return min(TERMINAL_SIDE_MAX, columns), min(TERMINAL_SIDE_MAX, rows)


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
