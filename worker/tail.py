"""Log tailing: watchfiles is the wake-up hint, byte offsets in the file are the truth."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import re
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import re2
from watchfiles import awatch

from .files import SHORT_OF_DESCRIPTORS, open_regular
from .output import ESCAPE_ROOM, clean_bytes, finished_start, unfinished_end

RECHECK_MS = 200
"""Even without a change event the file is looked at this often: an event can be missed,
e.g. a write that lands before the watcher is set up."""


async def changes(path: Path | str, stop: asyncio.Event) -> AsyncIterator[None]:
    """Yield whenever ``path`` may have changed, and at least every ``RECHECK_MS``.

    Works with ``WATCHFILES_FORCE_POLLING=1`` too; ends when ``stop`` is set. A file that
    is not there (a command removed its log), or whose path watchfiles cannot take (bytes
    that are no UTF-8: a state dir named so), is looked at every ``RECHECK_MS`` only.
    """
    try:
        async for _ in awatch(
            path,
            stop_event=stop,
            debounce=5,
            step=5,
            rust_timeout=RECHECK_MS,
            yield_on_timeout=True,
            recursive=False,
        ):
            yield None
    except (FileNotFoundError, UnicodeEncodeError):
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), RECHECK_MS / 1000)
            yield None


def file_size(path: Path | str) -> int:
    """Current size of a log (0 when missing)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


PATTERN_MAX_MEM = 8 << 20
"""Bytes RE2 may use for one compiled pattern (its default): a bigger one is refused."""
PATTERN_MAX_CHARS = 1024
"""The longest pattern accepted: RE2 bounds the compiled program, not the parsing, and a
model's pattern is a line, not a page."""


def whole_lines_end(
    path: Path | str, start: int, end: int, limit: int, longest: int, ended: bool = False
) -> int:
    """Where a read of ``[start, end)`` stops to end with a whole line: after the last
    newline within ``limit`` bytes, or after the first one within ``longest`` (a long
    line); a line longer than that is cut there, never inside a UTF-8 character nor an
    escape sequence; a partial line alone gives nothing yet (``start``), unless the output
    has ``ended``: then it is the last line (one of 0.5 to 1 MiB was never read)."""
    stop = min(end, start + longest)
    if stop <= start:
        return start
    try:
        with open_regular(path) as fh:
            fh.seek(start)
            data = fh.read(stop - start)
    except OSError as exc:
        if exc.errno in SHORT_OF_DESCRIPTORS:
            raise  # (an empty piece of an ended task's log read as its end: a review)
        return start
    newline = data.rfind(b"\n", 0, limit)
    if newline < 0:
        newline = data.find(b"\n", limit)
    if newline >= 0:
        return start + newline + 1
    if len(data) < longest:
        return start + len(data) if ended else start
    return start + len(data) - unfinished_end(data)  # (cleaned in two pieces, an escape
    # sequence's halves showed as text: a trial)


SETTLED_SECONDS = 3.0
"""A log unwritten for this long holds nothing back: what ends it is what the command
left there (a stray ESC, a byte of no character), not half of what it is writing."""


def settled_end(path: Path | str, start: int, end: int) -> int:
    """Where a read of a running task's log from ``start`` stops so as not to end inside
    a UTF-8 character or an escape sequence, which the command is still writing: read
    in two halves, each was cleaned apart (``ünïcöd��``, ``C3`` then ``1mred``: a
    trial). What was held back comes with the next read."""
    if end <= start:
        return end
    try:
        with open_regular(path) as fh:
            if time.time() - os.fstat(fh.fileno()).st_mtime > SETTLED_SECONDS:
                return end
            fh.seek(max(start, end - ESCAPE_ROOM))
            tail = fh.read(end - max(start, end - ESCAPE_ROOM))
    except OSError:
        return end
    return end - unfinished_end(tail)


def compile_pattern(pattern: str) -> Any:
    """A pattern for :class:`PatternScanner`, matched in linear time (RE2): no model-sent
    pattern can run for long, whatever the output. ``^`` and ``$`` match at every line,
    as grep.

    Raises:
        ValueError: the pattern is invalid or uses what RE2 does not offer
            (backreferences, lookaround), said in plain words.
    """
    if len(pattern) > PATTERN_MAX_CHARS:
        raise ValueError(f"it is longer than {PATTERN_MAX_CHARS} characters")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = PATTERN_MAX_MEM
    try:
        return re2.compile(f"(?m){pattern}", options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        said = str(detail).replace(f": (?m){pattern}", f": {pattern}")  # (the model's own)
        raise ValueError(said) from None


FILTER_LINE_BYTES = 1 << 20
"""A line longer than this is matched in pieces of this size (each with the last
``PatternScanner.OVERLAP`` bytes of the one before): whole, a 300 MB line held as much
memory and was joined again for each chunk read, for minutes (a trial)."""


def matching_lines(
    path: Path | str,
    pattern: Any,
    start: int,
    end: int,
    limit: int,
    cancelled: threading.Event | None = None,
) -> tuple[str, int]:
    """The lines of the log between ``start`` and ``end`` that ``pattern`` matches (each
    cleaned as the output is), read in chunks: the first and last of them up to ``limit``
    characters, each line at most half of it, and how many were left out between. (Matched
    in a read's excerpt, a filter lost what the excerpt had left out, silently: a review.)

    A chunk is cleaned and searched whole (C code), only a line found in it by itself: a
    line at a time, 100 MB took 42 s. ``cancelled`` (its caller left) ends the reading
    at the next chunk."""
    found = _Found(limit)
    finder = _line_finder(pattern)
    alone = pattern if _WHOLE_TEXT_ANCHORS.search(pattern.pattern) else None
    try:
        fh = open_regular(path)
    except OSError as exc:
        if exc.errno in SHORT_OF_DESCRIPTORS:
            raise  # (there, unread: not gone)
        return "", 0
    with fh:
        fh.seek(start)
        carry, pos, skipping, inside = b"", start, False, False
        while pos < end and not (cancelled is not None and cancelled.is_set()):
            data = fh.read(min(PatternScanner.CHUNK, end - pos))
            if not data:
                break
            pos += len(data)
            if skipping:  # the rest of a long line already kept
                newline = data.find(b"\n")
                if newline < 0:
                    continue
                data, skipping = data[newline + 1 :], False
            data = carry + data
            cut = data.rfind(b"\n") + 1 if pos < end else len(data)
            if cut == 0 and len(data) >= FILTER_LINE_BYTES:  # a piece of a long line
                piece = _utf8(data[: len(data) - unfinished_end(data)])
                skipping = _piece_matches(piece, inside, finder, alone)
                if skipping:
                    found.add(("… " if inside else "") + piece.decode())
                    carry, inside = b"", False
                else:  # (on from the character or escape sequence the overlap begins at)
                    carry = data[finished_start(data, len(data) - PatternScanner.OVERLAP) :]
                    inside = True
                continue
            carry = data[cut:]
            if cut:
                text = (b"\0" if inside else b"") + _utf8(data[:cut])
                _search_lines(text, int(inside), finder, alone, found)
                inside = False
    return found.text(), found.omitted


_WHOLE_TEXT_ANCHORS = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-[a-zA-Z]*m")
"""``\\A``, ``\\z``, a ``(?m)`` turned off: what a pattern says of a text's ends, which a
filter, as grep, reads of each line alone (looked for in a chunk, ``\\Aerror`` matched at
its start only: a review)."""


def _line_finder(pattern: Any) -> Any:
    """``pattern`` as one that never matches across a newline (RE2's ``never_nl``): what
    it finds in a chunk is in one line (``x[^y]*y`` found a match over many lines, looked
    for again from each: quadratic, a review)."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = PATTERN_MAX_MEM
    options.never_nl = True
    return re2.compile(pattern.pattern, options)


def _utf8(data: bytes) -> bytes:
    """Log bytes cleaned, as UTF-8: RE2 takes a ``str`` as UTF-8 made again at each
    search (each line found cost the whole chunk)."""
    return clean_bytes(data).encode(errors="surrogatepass")


def _piece_matches(piece: bytes, inside: bool, finder: Any, alone: Any) -> bool:
    """Whether a piece of a long line holds a match: its edges are no line's start or end
    unless they are the line's (a NUL, which cleaning leaves in no text, stands for the
    line on beyond them: ``^bcd`` matched in the middle of a 3 MB line, a review)."""
    framed = (b"\0" if inside else b"") + piece + b"\0"
    if finder.search(framed, int(inside), len(framed) - 1) is None:
        return False
    return alone is None or alone.search(piece) is not None


def _search_lines(text: bytes, at: int, finder: Any, alone: Any, found: _Found) -> None:
    """Each line of ``text`` from ``at`` that the pattern matches by itself, into ``found``
    (a line before ``at``, the NUL, stands for a line it goes on from). ``finder`` is
    searched in the whole text (it never matches across lines: each match is a line's);
    a pattern that speaks of a text's ends (``alone``) is matched in each line alone."""
    first = at
    if alone is not None:
        for line in text[at:].split(b"\n")[: -1 if text.endswith(b"\n") else None]:
            if alone.search(line) is not None:
                found.add(line.decode())
        return
    while at < len(text) and (match := finder.search(text, at)) is not None:
        begin = max(first, text.rfind(b"\n", 0, match.start()) + 1)
        stop = text.find(b"\n", match.start())
        stop = len(text) if stop < 0 else stop
        found.add(("… " if begin == first == 1 else "") + text[begin:stop].decode())
        at = stop + 1


class _Found:
    """The matching lines kept: the first up to half of ``limit`` characters, the last up
    to the other half (each line at most that), and a count of those between."""

    def __init__(self, limit: int) -> None:
        self.half = max(1, limit // 2)
        self.head: list[str] = []
        self.tail: collections.deque[str] = collections.deque()
        self.kept = self.tail_chars = self.omitted = 0

    def add(self, line: str) -> None:
        if len(line) > self.half:
            shown = max(0, self.half - 40)  # (room for what it says)
            line = f"{line[:shown]} … [{len(line) - shown} characters cut]"
        if self.kept + len(line) < self.half:
            self.head.append(line)
            self.kept += len(line) + 1
            return
        self.tail.append(line)
        self.tail_chars += len(line) + 1
        while self.tail_chars > self.half and len(self.tail) > 1:
            self.tail_chars -= len(self.tail.popleft()) + 1
            self.omitted += 1

    def text(self) -> str:
        said = [f"… {self.omitted} matching lines omitted …"] if self.omitted else []
        return "\n".join([*self.head, *said, *self.tail])


class PatternScanner:
    """Finds a pattern in output as it grows, reading each new byte once, a chunk per
    :meth:`step`.

    Every line written after ``start`` is searched, whatever the volume; memory stays at
    one chunk. The last, unfinished line is kept and looked at again as it grows, so a
    match that spans two writes is still found. Steps run one at a time, in a worker
    thread; their caller may stop between any two, and :attr:`searched_to` says how far
    the search got.
    """

    CHUNK = 256 * 1024
    """Bytes matched in a step: a search stops within one chunk of being told to."""
    OVERLAP = 4096
    """Bytes of a line longer than a chunk matched again with the next one (a match
    across the cut was missed: a review)."""

    def __init__(self, path: Path | str, pattern: Any, start: int) -> None:
        self.path = path
        self.pattern = pattern
        self.start = start
        self.pos = start
        """Next byte to read."""
        self.carry = b""
        """Bytes read but not yet searched as a whole: the unfinished line, or the end of
        a long line's piece, matched again with what follows."""
        self.searched_to = start
        """Every byte before this offset was searched, and it begins no character or
        escape sequence's middle: a read that ends here agrees with :attr:`found`."""
        self.found = False
        """Whether the pattern matched in what was searched."""

    def step(self, size: int) -> bool:
        """Search the next chunk before ``size``, and the unfinished last line once that
        is reached; whether the search is over (matched, or searched to ``size``)."""
        if self.found:
            return True
        if size < self.pos:  # cut in place (`: > LOG`): searched again from its start, as
            self.start = self.pos = self.searched_to = 0  # it is read (a match in what
            self.carry = b""  # came after the cut was never found: a review)
        if self.pos < size:
            try:
                with open_regular(self.path) as fh:
                    fh.seek(self.pos)
                    data = fh.read(min(self.CHUNK, size - self.pos))
            except OSError:  # gone, or something else put there (a directory): nothing
                data = b""  # to match
            if data:
                self.pos += len(data)
                self._search(self.carry + data)
                if self.found or self.pos < size:
                    return self.found
        if self.searched_to < self.pos:  # The unfinished last line too (a prompt, a
            self.found = self._matches(self.carry)  # progress line): looked at again,
        self.searched_to = self.pos  # whole, once it ends or grows.
        return True

    def _search(self, data: bytes) -> None:
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) >= self.CHUNK:  # a line longer than a chunk: its pieces
            self.found = self._matches(data)  # overlap, from a character or escape
            self.carry = data[finished_start(data, len(data) - self.OVERLAP) :]  # sequence
        else:
            self.found = self._matches(data[:cut])
            self.carry = data[cut:]
        self.searched_to = self.pos - len(self.carry)

    def _matches(self, data: bytes) -> bool:
        return bool(data) and self.pattern.search(clean_bytes(data)) is not None
