"""Output cleaning (SPEC O1) and head/tail truncation read from the log (O2, O3).

Cleaning renders text as a terminal would show it: escape sequences are dropped,
``\\r`` overwrites the current line (so a progress bar leaves its last state), ``ESC[K``
erases to the end of the line, backspace moves left. Invalid UTF-8 becomes U+FFFD.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .files import open_regular

# The sequences a terminal consumes without showing anything, one pattern each.
_CSI = r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # colours, cursor moves, erase
_OSC = r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # titles, hyperlinks
_ESC = r"\x1b[()*+\-./][ -~]|\x1b[ -/]*[0-~]|\x1b$"  # charsets and other ESC sequences
_CTL = r"[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]+"  # other C0 controls (not \t, \n, \r, \b)

# Everything that is dropped without moving the cursor, as one C-level substitution.
_DROP = re.compile(f"{_CSI}|{_OSC}|{_ESC}|{_CTL}")

# One token per match for lines with overwrites: what moves the cursor, what is dropped, text.
_TOKEN = re.compile(
    rf"(?P<erase>\x1b\[[0-2]?K)|(?P<csi>{_CSI})|(?P<osc>{_OSC})|(?P<esc>{_ESC})"
    rf"|(?P<cr>\r)|(?P<bs>\x08)|(?P<ctl>{_CTL})"
    r"|(?P<text>[^\x1b\x9b\x9d\r\x08\x00-\x07\x0b\x0c\x0e-\x1f\x7f]+)"
)


def _render_line(line: str) -> str:
    if "\r" not in line and "\x08" not in line:
        # Fast path: without carriage returns or backspaces the cursor only moves forward,
        # so dropping every sequence shows what a terminal shows.
        return _DROP.sub("", line) if not line.isprintable() else line
    buf: list[str] = []
    col = 0
    for m in _TOKEN.finditer(line):
        kind = m.lastgroup
        if kind == "text":
            text = m.group()
            end = col + len(text)
            if col >= len(buf):
                buf.extend(" " * (col - len(buf)))
                buf.extend(text)
            else:
                buf[col:end] = text
            col = end
        elif kind == "cr":
            col = 0
        elif kind == "bs":
            col = max(0, col - 1)
        elif kind == "erase":
            mode = m.group()[2:-1] or "0"
            if mode == "0":
                del buf[col:]
            elif mode == "1":
                buf[:col] = " " * min(col, len(buf))
            else:
                buf.clear()
    return "".join(buf).rstrip(" ") if buf else ""


def clean_text(text: str) -> str:
    """Strip escape sequences and collapse carriage-return overwrites, line by line."""
    if "\r" not in text and "\x08" not in text:
        return _DROP.sub("", text)  # no overwrites anywhere: one pass over the whole text
    return "\n".join(_render_line(line) for line in text.split("\n"))


def decode(data: bytes) -> str:
    """Bytes of a log as text; invalid UTF-8 is replaced, never an exception."""
    return data.decode("utf-8", errors="replace")


def clean_bytes(data: bytes) -> str:
    """Decode and clean a chunk of log."""
    return clean_text(decode(data))


def last_lines(text: str, count: int) -> str:
    """The last ``count`` non-empty lines (SPEC S1 ``shortResult``)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-count:]) if count > 0 else ""


@dataclass(frozen=True)
class Excerpt:
    """Cleaned output for a result: the whole text or its head and tail with a marker."""

    text: str
    truncated: bool
    size: int  # bytes of raw log covered


HEAD_SHARE = 0.3
"""Part of the character budget kept from the head; the tail (errors) gets the rest."""

WHOLE_READ_BYTES = 1024 * 1024
"""Logs up to this size are read and cleaned whole; bigger ones only at both ends."""


def _marker(omitted: str, path: str) -> str:
    return f"\n... [{omitted} omitted; full output: {path}] ...\n"


def _split_budget(max_chars: int, marker_len: int) -> tuple[int, int]:
    room = max(0, max_chars - marker_len)
    head = int(room * HEAD_SHARE)
    return head, room - head


def excerpt_text(text: str, max_chars: int, path: str) -> Excerpt:
    """Keep ``text`` whole if it fits, else its head and tail around one marker line."""
    if len(text) <= max_chars:
        return Excerpt(text, False, len(text))
    sample = _marker(f"{len(text)} characters", path)
    head_n, tail_n = _split_budget(max_chars, len(sample))
    omitted = len(text) - head_n - tail_n
    marker = _marker(f"{omitted} characters", path)
    return Excerpt(
        text[:head_n].rstrip("\n") + marker + text[len(text) - tail_n :].lstrip("\n"),
        True,
        len(text),
    )


def _drop_partial_first_line(text: str) -> str:
    cut = text.find("\n")
    return text[cut + 1 :] if 0 <= cut < len(text) - 1 else text


BINARY_SAMPLE_BYTES = 8192
"""How much of an output is looked at to tell binary from text."""
BINARY_MIN_BYTES = 64
"""Shorter output is always shown as text."""
BINARY_SHARE = 0.3
"""An output is binary when this share of its sample is not text."""
_NOT_TEXT = re.compile(rb"[\x00-\x07\x0e-\x1a\x1c-\x1f\x7f]")


def looks_binary(sample: bytes, min_bytes: int = BINARY_MIN_BYTES) -> bool:
    """Whether bytes are mostly not text: controls no terminal shows, or invalid UTF-8."""
    if len(sample) < min_bytes:  # too little to judge: shown as text
        return False
    if _utf16(sample):  # Windows tools' output: its NULs are dropped, its text stays
        return False
    invalid = sample.decode("utf-8", errors="replace").count("\ufffd")
    return len(_NOT_TEXT.findall(sample)) + invalid > BINARY_SHARE * len(sample)


def _utf16(sample: bytes) -> bool:
    """A byte-order mark, or NUL in every other byte (mostly ASCII in UTF-16)."""
    if sample[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return True
    even, odd = sample[0::2], sample[1::2]
    return max(even.count(0), odd.count(0)) > 0.9 * len(odd) > 0


def binary_note(size: int, path: str) -> str:
    """What a model sees instead of binary output: its size and where it is."""
    return f"[binary output, {size} bytes: not shown; full output: {path}]"


BINARY_LINE_MIN_BYTES = 16
"""A shorter line is not judged alone (a few bytes between two newlines of random data)."""
TEXT_END_MIN_CHARS = 8
"""Fewer characters of text before or after binary output are not shown."""


def _binary_line(line: bytes) -> bool:
    if len(line) < BINARY_LINE_MIN_BYTES or (line.isascii() and not _NOT_TEXT.search(line)):
        return False
    return looks_binary(line, 0)


def binary_span(data: bytes) -> tuple[int, int] | None:
    """Where ``data`` holds binary output: from the start of its first binary line to the
    end of its last one (what lies between is hidden with them); None when its binary
    lines come to fewer than ``BINARY_MIN_BYTES``, or it is UTF-16 text. Judged line by
    line, not on a sample: the text a program writes before or after binary output (an
    error, a prompt) stays (a review: a prompt after 300 bytes of binary was hidden, and
    2 KB of binary after 2.3 KB of text was shown)."""
    if (not _NOT_TEXT.search(data) and _utf8(data)) or _utf16(data[:BINARY_SAMPLE_BYTES]):
        return None
    lines, at = [], 0
    for line in data.split(b"\n"):
        lines.append((at, at + len(line) + 1, _binary_line(line)))
        at += len(line) + 1
    binary = [i for i, (_, _, judged) in enumerate(lines) if judged]
    if sum(lines[i][1] - lines[i][0] - 1 for i in binary) < BINARY_MIN_BYTES:
        return None
    first, last = binary[0], binary[-1]  # (and the short lines of binary next to them)
    while first > 0 and _odd(data[lines[first - 1][0] : lines[first - 1][1]]):
        first -= 1
    while last + 1 < len(lines) and _odd(data[lines[last + 1][0] : lines[last + 1][1]]):
        last += 1
    return lines[first][0], min(lines[last][1], len(data))


def _odd(line: bytes) -> bool:
    """A line too short to judge alone that holds what is not text."""
    return bool(_NOT_TEXT.search(line)) or not _utf8(line)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _around_binary(before: bytes, after: bytes, span: int, path: str, max_chars: int) -> Excerpt:
    """The text before and after binary output (each when it says something) around one
    line with the size of what is not shown (``span``: the output's whole size)."""
    head, tail = (clean_bytes(b).strip("\n") for b in (before, after))
    head, tail = (t if _says_something(t) else "" for t in (head, tail))
    hidden = span - (len(before) if head else 0) - (len(after) if tail else 0)
    text = "\n".join(t for t in (head, binary_note(hidden, path), tail) if t)
    return Excerpt(excerpt_text(text, max_chars, path).text, True, span)


def _says_something(text: str) -> bool:
    """Text worth showing beside binary output: lines of it, or a few words (random bytes
    between two newlines are short, and seldom hold a space)."""
    text = text.strip()
    if len(text) >= BINARY_MIN_BYTES:
        return True
    return len(text) >= TEXT_END_MIN_CHARS and " " in text and "\ufffd" not in text


def read_excerpt(
    path: Path | str,
    max_chars: int,
    *,
    start: int = 0,
    end: int | None = None,
    shown_path: str | None = None,
) -> Excerpt:
    """Cleaned output of ``path[start:end]`` within ``max_chars`` characters (SPEC O2, O3).

    Only the head and the tail of a large log are read, so a 1 GiB log costs about what a
    1 MiB one does. Output that is mostly not text (``head -c 4096 /dev/urandom``) is
    replaced by one line with its size and path. Characters omitted from the middle are counted exactly for logs read
    whole, and as raw bytes for larger ones.
    """
    shown = shown_path or str(path)
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size if end is None else end
        span = max(0, size - start)
        fh.seek(start)
        if span <= WHOLE_READ_BYTES:
            data = fh.read(span)
            found = binary_span(data)
            if found is not None:
                first, last = found
                return _around_binary(data[:first], data[last:], span, shown, max_chars)
            ex = excerpt_text(clean_bytes(data).strip("\n"), max_chars, shown)
            return Excerpt(ex.text, ex.truncated, span)
        head_sample = fh.read(BINARY_SAMPLE_BYTES)
        fh.seek(start + span - BINARY_SAMPLE_BYTES)
        tail_sample = fh.read(BINARY_SAMPLE_BYTES)
        at_head, at_tail = binary_span(head_sample), binary_span(tail_sample)
        if at_head is not None or at_tail is not None:  # (the middle is not read)
            before = head_sample[: at_head[0] if at_head else head_sample.rfind(b"\n") + 1]
            after = tail_sample[at_tail[1] if at_tail else tail_sample.find(b"\n") + 1 :]
            return _around_binary(before, after, span, shown, max_chars)
        # Budget in bytes: a character is at least one byte, and escape sequences or
        # overwritten progress lines only shrink the text, so read generously.
        head_n, tail_n = _split_budget(max_chars, 120 + len(shown))
        head_bytes, tail_bytes = head_n * 3, tail_n * 3
        fh.seek(start)
        head = clean_bytes(fh.read(head_bytes))
        fh.seek(size - tail_bytes)
        tail = _drop_partial_first_line(clean_bytes(fh.read(tail_bytes)))
    head = head[:head_n].strip("\n")
    tail = tail.rstrip("\n")[-tail_n:].lstrip("\n")
    omitted = span - len(head.encode()) - len(tail.encode())
    return Excerpt(head + _marker(f"about {omitted} bytes", shown) + tail, True, span)
