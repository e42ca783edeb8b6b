"""Output cleaning (SPEC O1) and head/tail truncation read from the log (O2, O3).

Cleaning renders text as a terminal would show it: escape sequences are dropped,
``\\r`` overwrites the current line (so a progress bar leaves its last state), ``ESC[K``
erases to the end of the line, backspace and the cursor's moves along its line (``ESC[nD``,
``ESC[nC``, ``ESC[nG``) move it there, and its moves to other lines (``ESC[nA``…) draw
there (several progress bars leave their last state). What it shows is never more than a
few times what it was given, and takes time linear in it. Invalid UTF-8 becomes U+FFFD.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from .files import open_regular

# The sequences a terminal consumes without showing anything.
_CSI = r"\[[0-?]*[ -/]*[@-~]"  # (after ESC, or 0x9b) colours, cursor moves, erase
_STRING = r"[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
"""The rest of a string (after ESC and one of ``]P_^X``, or its C1 control): OSC (titles,
hyperlinks), DCS (sixel images), APC (kitty's images), PM, SOS, ended by BEL or ST, or
by its line's end (a terminal swallows all up to the end: an unfinished title hid a
build's error and every line after it, a trial)."""
_SEQUENCES = (
    rf"\x1b(?:{_CSI}|[\]P_^X]{_STRING}|[()*+\-./][ -~]|[ -/]*[0-~]|)"
    rf"|\x9b{_CSI[2:]}|[\x90\x98\x9d-\x9f]{_STRING}|[\x80-\x9f]"
)
"""One alternation after a common ESC (a third faster than each apart): CSI, strings,
charsets and other ESC sequences, and an ESC that begins none of them; then their 8-bit
forms and the other C1 controls. A lone ESC is dropped, never shown (``ESC NUL ]52;…``
was an ESC joined to what follows once the NUL was dropped: a clipboard write in the
"cleaned" text, a trial)."""
_CTL = r"[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]+"  # other C0 controls (not \t, \n, \r, \b)

# Everything that is dropped without moving the cursor, as one C-level substitution.
_DROP = re.compile(f"{_SEQUENCES}|{_CTL}")
_DROPPED = re.compile(r"[\x00-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""A character that starts what :data:`_DROP` drops: text without one is looked for
once, ten times faster than by the substitution (plain output printed at 50 MB/s)."""

# One token per match for lines with overwrites: what moves the cursor, what is dropped, text.
_TOKEN = re.compile(
    rf"(?P<erase>\x1b\[[0-2]?K)|(?P<move>\x1b\[[0-9]{{0,6}}[CDG])|(?P<drop>{_SEQUENCES}|{_CTL})"
    rf"|(?P<cr>\r)|(?P<bs>\x08)"
    r"|(?P<text>[^\x1b\r\x08\x00-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f]+)"
)


_ERASE = re.compile(r"\x1b\[[0-2]?K")
_MOVE = re.compile(r"\x1b\[[0-9]{0,6}[CDG]")
"""A move of the cursor along its line: a line editor's or a REPL's redraw goes back over
what it drew (ptpython drew each typed line twice in a row, read as text twice). One of
more digits is dropped as any CSI (5,000 digits were more than ``int`` reads: a review)."""


def _overwrites(text: str) -> bool:
    """Whether ``text`` moves its cursor back, or forward over what it drew."""
    return "\r" in text or "\x08" in text or ("\x1b" in text and _MOVE.search(text) is not None)


MOVE_LIMIT = 1000
"""The farthest column a move forward goes to past a line's text, as a terminal stops at
its last column (``ESC[99999999C`` would pad the line with as many spaces)."""

PAD_SHARE = 4
"""Blanks the cursor's moves may add to a text, as a multiple of its length: output of
moves alone (``ESC[K ESC[999C x``, 10 bytes) would grow a thousandfold."""


def _render_line(line: str, room: list[int]) -> str:
    """``line`` as a terminal draws it, in time linear in its length: an erase is noted
    where it ends (the cells written before it are blank), not made over every cell it
    covers (``ESC[1K`` on a 64,000-character line, 32,000 times, froze the supervisor for
    every caller: a trial). ``room``: the blanks moves may still add."""
    if not _overwrites(line):
        # Fast path: without carriage returns, backspaces or moves the cursor only moves
        # forward, so dropping every sequence shows what a terminal shows.
        return _DROP.sub("", line) if not line.isprintable() else line
    cells: list[str] = []
    stamps: list[int] | None = None  # when each cell was written (its token's number),
    # kept from the first erase that notes its end on: those before it were all earlier
    erased: list[tuple[int, int]] = []  # (end, when): the cells before end, written before
    col = 0
    for when, m in enumerate(_TOKEN.finditer(line)):
        kind = m.lastgroup
        if kind == "text":
            text = m.group()
            if col > len(cells):  # (moved past the line's end: blanks between, if room)
                gap = min(col - len(cells), room[0])
                room[0] -= gap
                cells.extend(" " * gap)
                if stamps is not None:
                    stamps.extend([when] * gap)
                col = len(cells)
            end = col + len(text)
            cells[col:end] = text
            if stamps is not None:
                stamps[col:end] = [when] * len(text)
            col = end
        elif kind == "cr":
            col = 0
        elif kind == "bs":
            col = max(0, col - 1)
        elif kind == "move":
            sequence = m.group()
            count = int(sequence[2:-1] or 1) or 1
            if sequence[-1] == "D":
                col = max(0, col - count)
            else:  # no farther than a column past what the line holds, or MOVE_LIMIT
                target = col + count if sequence[-1] == "C" else count - 1
                col = min(target, max(len(cells), MOVE_LIMIT))
        elif kind == "erase":
            mode = m.group()[2:-1] or "0"
            if mode == "0" or (mode == "2" and col == 0):  # to the end: those cells go
                # (each once; the whole line from its start too: a display's redraw)
                del cells[col:]
                if stamps is not None:
                    del stamps[col:]
            else:  # to the cursor (through it), or all
                erased.append((col + 1 if mode == "1" else len(cells), when))
                stamps = [-1] * len(cells) if stamps is None else stamps
    if stamps is not None:
        _blank_erased(cells, stamps, erased)
    return "".join(cells).rstrip(" ")


def _blank_erased(cells: list[str], stamps: list[int], erased: list[tuple[int, int]]) -> None:
    """Blank each cell an erase after its writing covered, in one pass from the right."""
    latest = [-1] * (len(cells) + 1)  # the last erase that ends at each cell
    for end, when in erased:
        end = min(end, len(cells))
        latest[end] = max(latest[end], when)
    erased_at = -1
    for i in range(len(cells) - 1, -1, -1):
        erased_at = max(erased_at, latest[i + 1])
        if stamps[i] < erased_at:
            cells[i] = " "


_VERTICAL = re.compile(r"\x1b\[([0-9]{0,6})([ABEF])|\x1b\[0?J|\x1bM|\x1b[78]|\x1b\[[su]")
"""A move of the cursor to another line (up, down; ``F`` and ``E`` to its start; ``ESC M``
up one), an erase of what is below it, a save and a restore of its place: a display of
several progress bars (docker's layers, rich's and pip's, tqdm's) redraws its lines in
place, and each frame was read as lines of its own (64 lines for the 4 a terminal
showed: a trial)."""
_PLACED = re.compile(r"\x1b\[[0-9;]*[Hfdr]")
"""A place given by the screen's row (``ESC[r;cH``, ``ESC[rd``) or a scroll region: rows
this cleaning does not know (apt's progress line on the screen's last row landed on
dpkg's lines, a review): a text with one is cleaned line by line."""
_LINES = re.compile(f"{_VERTICAL.pattern}|{_PLACED.pattern}|\n")
_PLACE = re.compile(r"\r(?:\x1b\[[0-9]+C)?")
"""What :meth:`_Lines.go` adds to the line it goes to (a return, then to its column)."""
_ERASES = ("\x1b[2K", ("\x1b[2K", "\x1b[K", "\x1b[0K"))
"""What erases a whole line, from its column, and from its start."""
SCREEN_ROWS = 24
"""A screen's rows, a task's terminal's (80×24): a move up stops at the top of the
screen the last line drawn is on; what scrolled past it is out of its reach (an error
printed long before is no progress bar to redraw, nor erased by ``ESC[999A ESC[J``)."""
SCREEN_COLUMNS = 80
"""A line that ever reached past this column (a CJK character takes two, a tab up to
eight) may take two rows of the screen, which moves count: a move across one is
unsure."""


PARTS_HELD = 8
"""Parts a line holds before they are drawn into one (:meth:`_Lines._draw_line`)."""
MOVES_FREE, MOVE_BYTES = 1000, 16
"""Moves between lines followed in a text: 1,000 and one more for each 16 bytes; a
display redraws a frame of text for each few (docker's, one in 140 bytes; rich's, one in
60). Past it, the text is moves for their own sake, cleaned line by line (moves alone
cost 3 s a MB here: a review)."""


class _Unsure(Exception):
    """A move between lines whose rows on the screen are unknown (a line that may wrap:
    a move up from a wrapped command line put its text over the error above it, a
    review), or too many moves (:data:`MOVES_FREE`): the text is drawn line by line
    instead, such moves dropped, as before."""


def _columns(text: str) -> int:
    """The columns ``text`` takes on a terminal: two for a wide character, a tab to the
    next multiple of 8 (40 CJK characters counted 40, and a redraw went over the error
    above them: a review)."""
    if text.isascii() and "\t" not in text:
        return len(text)
    column = 0
    for char in text:
        if char == "\t":
            column += 8 - column % 8
        else:
            column += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return column


_LEAD = re.compile(r"\x1b\[([0-9]+)C")


def _extent(raw: str) -> int:
    """The most columns a line's text ever reached: each stretch from a return starts at
    column 0, or where a move forward first takes it (:meth:`_Lines.go`'s); a line
    wrapped, then overwritten by a return to `done`, still takes its two rows (a review).
    Other moves along the line left out."""
    most = 0
    for stretch in raw.split("\r"):
        lead = _LEAD.match(stretch)
        start = int(lead.group(1)) if lead else 0
        most = max(most, start + _columns(_DROP.sub("", stretch)))
    return most


class _Lines:
    """Lines as a terminal draws them, its cursor moving between them; each line's parts
    kept as they came and drawn (:func:`_render_line`) at the end. How wide a line is is
    learnt only once a move crosses it (a long log with one move up took four times as
    long, each line learnt as the cursor left it)."""

    def __init__(self, room: list[int]) -> None:
        self.room = room
        self.lines: list[list[str]] = []
        self.measured: list[int] = []  # each line's parts when its width was last learnt
        self.wide: list[bool] = []  # each line's: it may take two rows (once so, it stays)
        self.row = self.column = self.top = 0
        self._add_line()
        self.arrived = 0  # the cursor's line's parts before it came there (at ``column``)
        self.landed = False  # come by a move to a line that takes one row, nothing drawn
        self.saved = (0, 0)

    def _add_line(self) -> None:
        self.lines.append([])
        self.measured.append(0)
        self.wide.append(False)
        self.top = max(self.top, len(self.lines) - SCREEN_ROWS)

    def draw(self, text: str) -> None:
        if not text:
            return
        parts = self.lines[self.row]
        if self.landed and text.startswith(_ERASES[self.column == 0]):
            # (a line of one row the cursor came to and erases whole: what it held is
            # gone; drawn again and again, each frame cost a docker display 20 µs a line.
            # Not after a return the text drew: a wrapped line keeps its other rows)
            del parts[:-1]
            self.arrived, self.measured[self.row] = min(self.arrived, 1), 0
        self.landed = False
        parts.append(text)

    def where(self) -> tuple[int, int]:
        """The cursor's line and column (the column worked out only when asked: a long
        log with one move up cleaned four times slower, each line's worked out)."""
        for part in self.lines[self.row][self.arrived :]:
            self.column = _column_after(part, self.column)
        self.arrived = len(self.lines[self.row])
        return self.row, self.column

    def _measure(self, row: int) -> None:
        """Learn from what ``row`` got since it was last learnt whether it may take two
        rows; draw its parts into one where they pile up (a bar redrawn by returns
        alone), not each time (a docker display cleaned at 0.8 MB/s, each line drawn as
        the cursor left it)."""
        parts = self.lines[row]
        if len(parts) == self.measured[row]:
            return
        since = "".join(parts[max(0, self.measured[row] - 1) :])  # (with the part before:
        self.wide[row] = self.wide[row] or _extent(since) > SCREEN_COLUMNS  # its stretch)
        if len(parts) > PARTS_HELD:
            parts[:] = [_render_line("".join(parts), self.room)]
        self.measured[row] = len(parts)

    def go(self, row: int, column: int, grow: int = 0) -> None:
        """To ``row`` (within the screen; up to ``grow`` blank lines made below the last,
        as on a screen not yet full) at ``column``, sure of the rows between (the cursor's
        place: :meth:`where`)."""
        if self.column > SCREEN_COLUMNS:  # (on a line's second row, or past it)
            raise _Unsure
        self._leave()
        row = min(max(row, self.top), len(self.lines) - 1 + grow)
        while len(self.lines) <= row:
            self._add_line()
        first, last = min(row, self.row), max(row, self.row)
        for between in range(first, last + 1):  # (a screen or two: both are near the
            self._measure(between)  # last line)
        if any(self.wide[first : last + 1]):
            raise _Unsure
        place = f"\r\x1b[{min(column, 999_999)}C" if column else "\r"
        parts = self.lines[row]
        if not (parts and parts[-1] == place):  # (moves with no text between: one)
            parts.append(place)
        self.row, self.column, self.arrived = row, column, len(parts)
        self.landed = True

    def _leave(self) -> None:
        """A place the cursor came to on its line, and leaves with nothing drawn, goes: it
        adds nothing (moves alone took 4 s a MB, each line learnt again: a review)."""
        left = self.lines[self.row]
        while len(left) > self.measured[self.row] and _PLACE.fullmatch(left[-1]):
            left.pop()

    def newline(self) -> None:
        if self.row + 1 < len(self.lines):  # (on a line drawn before: at its start)
            self.go(self.row + 1, 0)
            return
        self._leave()
        self._add_line()
        self.row, self.column, self.arrived = self.row + 1, 0, 0
        self.landed = False

    def erase_below(self) -> None:
        del self.lines[self.row + 1 :]
        del self.measured[self.row + 1 :]
        del self.wide[self.row + 1 :]
        self.lines[self.row].append("\x1b[K")

    def text(self) -> str:
        return "\n".join(_render_line("".join(parts), self.room) for parts in self.lines)


def _column_after(drawn: str, column: int) -> int:
    """The cursor's column (in characters, as :func:`_render_line` counts them) after
    ``drawn`` from ``column``: returns, backspaces and moves along the line followed (a
    move up after `ESC[3D` wrote at the line's start, over the error above: a review)."""
    _, returned, last = drawn.rpartition("\r")
    column = 0 if returned else column
    if last.isprintable():
        return column + len(last)
    if "\x08" not in last and _MOVE.search(last) is None:
        return column + len(_DROP.sub("", last))
    for m in _TOKEN.finditer(last):
        kind, found = m.lastgroup, m.group()
        if kind == "text":
            column += len(found)
        elif kind == "bs":
            column = max(0, column - 1)
        elif kind == "move":
            count = int(found[2:-1] or 1) or 1
            column = {"D": max(0, column - count), "C": column + count}.get(found[-1], count - 1)
    return column


def _render_lines(text: str, room: list[int]) -> str:
    """``text`` drawn with its cursor's moves between lines (:class:`_Lines`): each
    line's text, as it comes, goes to the line the cursor is on, at its column; line by
    line, the moves dropped, where one is unsure (:class:`_Unsure`). Linear in its
    length."""
    screen, budget = _Lines(room), room[0]
    at, moves = 0, MOVES_FREE + len(text) // MOVE_BYTES
    try:
        for m in _LINES.finditer(text):
            screen.draw(text[at : m.start()])
            at = m.end()
            found, move = m.group(), m.group(2)
            if found == "\n":
                screen.newline()
                continue
            moves -= 1
            if moves < 0 or _PLACED.fullmatch(found):
                raise _Unsure
            row, column = screen.where()
            count = int(m.group(1) or 1) or 1
            if move in ("B", "E"):  # (into a blank line below the last, as on a screen
                screen.go(row + count, 0 if move == "E" else column, grow=1)  # not full)
            elif move in ("A", "F"):
                screen.go(row - count, 0 if move == "F" else column)
            elif found == "\x1bM":
                if row == screen.top:  # (a terminal scrolls its screen down there)
                    raise _Unsure
                screen.go(row - 1, column)
            elif found in ("\x1b7", "\x1b[s"):
                screen.saved = (row, column)
            elif found in ("\x1b8", "\x1b[u"):  # (to a line erased since: blank again)
                screen.go(*screen.saved, grow=SCREEN_ROWS)
            else:
                screen.erase_below()
    except _Unsure:
        room[0] = budget  # (what the lines drawn so far took is theirs again)
        return "\n".join(_render_line(line, room) for line in text.split("\n"))
    screen.draw(text[at:])
    return screen.text()


def clean_text(text: str) -> str:
    """Strip escape sequences and collapse carriage-return overwrites, line by line."""
    # A carriage return just before a newline overwrites nothing: a terminal's lines end
    # so (a pseudo-terminal's output, a CRLF file), each one drawn a character at a time
    # before (an interactive `yes | head -c 5M` printed in 2.8 s, not 0.3 s: a trial).
    # Unless a line erases itself, which the drawing does (`Loading\e[2K\r\n`).
    if "\r\n" in text and not _ERASE.search(text):
        text = text.replace("\r\n", "\n")
    vertical = "\x1b" in text and _VERTICAL.search(text) is not None
    if not (vertical or _overwrites(text)):  # no overwrites anywhere: one pass over it all
        return _DROP.sub("", text) if _DROPPED.search(text) else text
    room = [PAD_SHARE * len(text) + MOVE_LIMIT]
    if vertical:
        return _render_lines(text, room)
    return "\n".join(_render_line(line, room) for line in text.split("\n"))


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
    """Keep ``text`` whole if it fits, else its head and tail around one marker line, each
    cut at a line's end where one is near (:func:`head_of`, :func:`tail_of`), the marker
    counting the lines and characters left out."""
    if len(text) <= max_chars:
        return Excerpt(text, False, len(text))
    total = text.count("\n")
    sample = _marker(f"{total} lines, {len(text)} characters", path)
    head_n, tail_n = _split_budget(max_chars, len(sample))
    head = head_of(text, head_n).rstrip("\n")
    tail = tail_of(text, tail_n).lstrip("\n")  # (counted as shown: blank lines at a cut
    lines = total - head.count("\n") - tail.count("\n") - 1  # are left out too)
    marker = _marker(_left_out(lines, len(text) - len(head) - len(tail)), path)
    return Excerpt(head + marker + tail, True, len(text))


def _left_out(lines: int, characters: int) -> str:
    if lines <= 0:  # (part of one line)
        return f"{characters} characters"
    return f"{lines} line{'s' if lines > 1 else ''}, {characters} characters"


LINE_SNAP = 1024
"""Characters an excerpt's cut moves, at most, to fall between two lines: cut where the
budget ran out, `line 1008` showed as `line 100`, and `line 48097` as `97`, each read as
a line of its own (a review)."""


def head_of(text: str, n: int) -> str:
    """The first ``n`` characters of ``text``, ending before the last line break among its
    last :data:`LINE_SNAP` (else where ``n`` ends)."""
    if n >= len(text):
        return text
    cut = text.rfind("\n", max(0, n - LINE_SNAP), n)
    return text[:cut] if cut > 0 else text[:n]


def tail_of(text: str, n: int) -> str:
    """The last ``n`` characters of ``text``, beginning at the first line that starts among
    its first :data:`LINE_SNAP` (else where they begin)."""
    if n >= len(text):
        return text
    start = len(text) - n
    if start == 0 or text[start - 1] == "\n":
        return text[start:]
    cut = text.find("\n", start, start + LINE_SNAP)
    return text[cut + 1 :] if cut >= 0 else text[start:]


ESCAPE_ROOM = 256
"""Bytes before a cut where an escape sequence it may be inside is looked for (one longer
is no terminal's: a hyperlink's is the longest in use)."""

_UNFINISHED_ESCAPE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*|[\]P_^X][^\x07\x1b\n]*|[ -/]*)\Z")
"""An escape sequence the end of the data cuts: a lone ESC, a CSI with no final byte, a
string (OSC, DCS, APC, PM, SOS) with no terminator (on its line: cleaning ends one at a
newline), an ESC with intermediates only."""

_SEQUENCE = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]P_^X][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~])"
)
"""An escape sequence from its ESC to its end (a string's at its line's end if not before)."""


def unfinished_end(data: bytes) -> int:
    """How many bytes at the end of ``data`` begin a UTF-8 character or an escape sequence
    they do not finish (looked for in its last ``ESCAPE_ROOM`` bytes)."""
    last = data[-ESCAPE_ROOM:]
    escape = _UNFINISHED_ESCAPE.search(last)
    return max(len(last) - escape.start() if escape else 0, _unfinished_character(last))


def finished_start(data: bytes, cut: int) -> int:
    """Where what is read of ``data`` from ``cut`` on begins with no end of a character or
    an escape sequence: at the ESC of one that the cut is inside, else at the next
    character (a tail read from inside a line began `08mEND` or with U+FFFD: a trial)."""
    escape = data.rfind(b"\x1b", max(0, cut - ESCAPE_ROOM), cut)
    if escape >= 0:
        sequence = _SEQUENCE.match(data, escape)
        if sequence is None or sequence.end() > cut:
            return escape
    while cut < len(data) and data[cut] & 0xC0 == 0x80:
        cut += 1
    return cut


def _unfinished_character(data: bytes) -> int:
    """How many bytes at the end of ``data`` begin a UTF-8 character they do not finish."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # (a continuation byte: its first is further back)
            continue
        if byte < 0xC0:
            return 0
        needs = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
        return back if back < needs else 0
    return 0


LINE_START_ROOM = 1024
"""Bytes into a tail within which it begins at a whole line rather than inside one."""


def _from_a_line_start(data: bytes, margin: int) -> bytes:
    """The tail of a log read from its middle, from its first whole line on when one
    begins within ``LINE_START_ROOM``, else from the next character (O3: a long last line
    kept only what followed it, a 1 MB line of base64 showed as its next line, `END`, in
    9,000 of 30,000 characters; a trial); where the line it starts inside was overwritten
    (``\r``), from its last overwrite: a progress bar's last state is whole there (the
    line was dropped: a build's `progress 100%` before its error showed as its first
    state, from the head; a trial). ``margin``: the bytes read before where the tail
    begins, to see what its first line begins inside."""
    cut = data.find(b"\n", margin)
    if not margin <= cut < len(data) - 1:
        cut = len(data)
    overwrite = data.rfind(b"\r", margin, cut)
    if 0 <= overwrite < cut - 1:
        return data[overwrite + 1 :]
    if cut < len(data) and cut - margin <= LINE_START_ROOM:
        return data[cut + 1 :]
    return data[finished_start(data, margin) :]


BINARY_SAMPLE_BYTES = 8192
"""How much of an output is looked at to tell UTF-16 text (binary is found line by line)."""
BINARY_MIN_BYTES = 64
"""A shorter run of binary lines is shown as text."""
BINARY_SHARE = 0.3
"""Bytes are binary when this share of them is not text."""
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
    """UTF-16 text: a byte-order mark, or NUL in every other byte (mostly ASCII in
    UTF-16), and mostly printable once decoded so (16-bit binary data, or random bytes
    after a byte-order mark, are not: a review)."""
    even, odd = sample[0::2], sample[1::2]
    if sample[:2] == b"\xfe\xff" or (sample[:2] != b"\xff\xfe" and even.count(0) > odd.count(0)):
        codec = "utf-16-be"
    else:
        codec = "utf-16-le"
    marked = sample[:2] in (b"\xff\xfe", b"\xfe\xff")
    if not marked and not max(even.count(0), odd.count(0)) > 0.9 * len(odd) > 0:
        return False
    text = sample[2 if marked else 0 : len(sample) & ~1].decode(codec, errors="replace")
    shown = sum(c.isprintable() or c in "\t\r\n" for c in text)
    return shown >= 0.9 * len(text)


def binary_note(size: int, path: str) -> str:
    """What a model sees instead of binary output: its size and where it is."""
    return f"[binary output, {size} bytes: not shown; full output: {path}]"


BINARY_LINE_MIN_BYTES = 16
"""A shorter line is not judged alone (a few bytes between two newlines of random data)."""
TEXT_END_MIN_CHARS = 8
"""Fewer characters of text between binary output are not shown (see :func:`_says_something`)."""


def _binary_line(line: bytes) -> bool:
    """A line long enough to judge that is mostly not text."""
    if len(line) < BINARY_LINE_MIN_BYTES:
        return False
    if line.isascii():  # (no decoding: only controls can make it binary)
        return len(_NOT_TEXT.findall(line)) > BINARY_SHARE * len(line)
    return looks_binary(line, 0)


def _odd(data: bytes) -> bool:
    """Whether ``data`` holds anything that is not text: a control no terminal shows, or
    invalid UTF-8 (a short line of it is judged with its neighbours)."""
    if _NOT_TEXT.search(data):
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def binary_runs(data: bytes) -> list[tuple[int, int]]:
    """Where ``data`` holds binary output, as (start, end) byte ranges of whole lines:
    each run of lines that are not text (mostly so, or short and holding what is not
    text), of ``BINARY_MIN_BYTES`` at least, with a line that is mostly not text or
    mostly not text as a whole. Found line by line, not judged on a sample: the text a
    program writes before, between and after binary output (an error, a prompt) stays (a
    review: a prompt after 300 bytes of binary was hidden, and 2 KB of binary after 2.3 KB
    of text was shown). UTF-16 text has none."""
    if not _odd(data) or _utf16(data[:BINARY_SAMPLE_BYTES]):  # (text: one search, one decode)
        return []
    runs: list[tuple[int, int]] = []
    start, judged, at = -1, False, 0

    def close(end: int) -> None:
        if (
            start >= 0
            and end - start >= BINARY_MIN_BYTES
            and (judged or looks_binary(data[start:end], 0))
        ):
            runs.append((start, min(end, len(data))))

    for line in data.split(b"\n"):
        end = at + len(line) + 1
        if _binary_line(line):
            start, judged = (at if start < 0 else start), True
        elif len(line) < BINARY_LINE_MIN_BYTES and _odd(line):
            start = at if start < 0 else start
        else:
            close(at)
            start, judged = -1, False
        at = end
    close(at)
    return runs


def render_bytes(data: bytes, path: str) -> tuple[str, bool]:
    """``data`` cleaned (:func:`clean_bytes`), each run of binary output in it
    (:func:`binary_runs`) one line with its size instead, and whether there was one; text
    between two runs that says nothing (a few bytes of them that look like text) is
    counted with them; before the first and after the last, only what does not look like
    a program's text (:func:`_edge_text`: `PASSED`, `Password: ` stay, a trial found
    them hidden)."""
    runs = [(start, _text_after(data, start, end)) for start, end in binary_runs(data)]
    if not runs:
        return clean_bytes(data), False
    pieces: list[tuple[bool, bytes]] = []  # (binary?, bytes)
    at = 0
    for start, end in runs:
        pieces += [(False, data[at:start]), (True, data[start:end])]
        at = end
    pieces.append((False, data[at:]))
    merged: list[tuple[bool, int, str]] = []  # (binary?, bytes, text)
    for index, (binary, piece) in enumerate(pieces):
        text = "" if binary else clean_bytes(piece).strip("\n")
        edge = index in (0, len(pieces) - 1)  # (before the first run, after the last)
        shown = _says_something(text) or (edge and _edge_text(piece, text, index > 0))
        binary = binary or (bool(piece) and not shown)
        if merged and binary and merged[-1][0]:  # (a count: copies were quadratic)
            merged[-1] = (True, merged[-1][1] + len(piece), "")
        elif piece:
            merged.append((binary, len(piece), text))
    text = "\n".join(binary_note(size, path) if is_binary else text
                     for is_binary, size, text in merged if is_binary or text)  # fmt: skip
    return text, True


def _edge_text(piece: bytes, text: str, last: bool) -> bool:
    """Whether the short text before the first run of binary output or after the last
    (``last``) is a program's (`PASSED`, `Password: `, `$ `, lines), not random bytes
    that happen to be text between two newlines (a review of 1000 `head -c N
    /dev/urandom`: `c`, `ԇ$3I`, `A~%`): printable, and several lines, or a whole line
    after the binary, or words with a space (a prompt), or one word of two letters or
    more."""
    words = text.strip()
    lines = [line for line in words.replace("\t", " ").splitlines() if line.strip()]
    if not words or "\ufffd" in words or not all(line.isprintable() for line in lines):
        return False
    if len(lines) > 1 or (last and piece.endswith(b"\n")):
        return True
    return " " in text.strip("\n") or _a_word(words)


def _a_word(words: str) -> bool:
    """Two letters or digits at least (`ok`, `Done.`, `100%`; not `%k`, `A~%`)."""
    return sum(c.isalnum() for c in words) >= 2


_PROMPT_END = re.compile(r"[:?$>#] $")
"""How a prompt printed after binary output ends (`Password: `, `$ `, `> `)."""


def _text_after(data: bytes, start: int, end: int) -> int:
    """Where a run of binary output (``start``, ``end``) ends once the text a program
    wrote right after it on its last line is taken out (`cat a.png; echo PASSED`: a file
    seldom ends with a newline, and a whole-line judge hid the word with it): a line
    ended by a newline whose last printable characters hold two letters or digits, or
    a prompt (random bytes end so about once in 5000 outputs)."""
    line_end = end - 1 if data[end - 1 : end] == b"\n" else end
    line_start = max(start, data.rfind(b"\n", start, line_end) + 1)
    cut = line_end  # (where the printable text found so far starts: a character at a time)
    for at in range(line_end - 1, max(line_start, line_end - 256) - 1, -1):
        if 0x80 <= data[at] < 0xC0:  # (inside a character: its first byte decides)
            continue
        try:
            char = data[at:cut].decode("utf-8")
        except UnicodeDecodeError:
            break
        if not (char == "\t" or char.isprintable()):
            break
        cut = at
    text = data[cut:line_end].decode("utf-8", "replace")
    # a line (`echo PASSED`), or with no newline after it a prompt (not the binary's own end)
    shown = _a_word(text.strip()) if line_end < end else bool(_PROMPT_END.search(text))
    return cut if shown and cut > start else end


def _says_something(text: str) -> bool:
    """Text worth showing beside binary output: lines of it, or a few words (random bytes
    between two newlines are short, and seldom hold a space or valid UTF-8)."""
    text = text.strip()
    if len(text) >= BINARY_MIN_BYTES:
        return True
    return len(text) >= TEXT_END_MIN_CHARS and " " in text and "\ufffd" not in text


def read_piece(path: Path | str, start: int, end: int) -> tuple[str, bool]:
    """``path[start:end]`` cleaned as the lines it holds, every one kept, blank or not (a
    piece of a stream, printed one after another: nothing trimmed at its edges), without
    its last newline, and whether it had one (a long line may go on in the next piece)."""
    with open_regular(path) as fh:
        fh.seek(start)
        data = fh.read(max(0, end - start))
    text = render_bytes(data, str(path))[0]
    line_ended = data.endswith(b"\n")
    if line_ended and text.endswith("\n"):  # (cleaned first: a CRLF's fast path stays)
        text = text[:-1]
    return text, line_ended


def read_excerpt(
    path: Path | str,
    max_chars: int,
    *,
    start: int = 0,
    end: int | None = None,
    shown_path: str | None = None,
    exact: bool = False,
) -> Excerpt:
    """Cleaned output of ``path[start:end]`` within ``max_chars`` characters (SPEC O2, O3);
    with ``exact``, an output that fits keeps the blank lines at its edges (a model's
    result leaves them out).

    Only the head and the tail of a large log are read, so a 1 GiB log costs about what a
    1 MiB one does. Each run of binary output in what is read (``head -c 4096
    /dev/urandom``) is replaced by one line with its size and path (:func:`render_bytes`).
    Characters omitted from the middle are counted exactly for logs read whole, and as
    raw bytes for larger ones.
    """
    shown = shown_path or str(path)
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size if end is None else end
        span = max(0, size - start)
        fh.seek(start)
        if span <= WHOLE_READ_BYTES:
            text, hidden = render_bytes(fh.read(span), shown)
            ex = excerpt_text(text if exact else text.strip("\n"), max_chars, shown)
            return Excerpt(ex.text, ex.truncated or hidden, span)
        # Budget in bytes: a character is at least one byte, and escape sequences or
        # overwritten progress lines only shrink the text, so read generously.
        head_n, tail_n = _split_budget(max_chars, 120 + len(shown))
        head_bytes, tail_bytes = head_n * 3, tail_n * 3
        fh.seek(start)
        read = fh.read(head_bytes)
        head = render_bytes(read[: len(read) - unfinished_end(read)], shown)[0]
        if len(read) == head_bytes and not head.endswith("\n"):  # (the read stopped in a
            cut = head.rfind("\n", max(0, len(head) - LINE_SNAP))  # line: shrunk by `\r`
            head = head[:cut] if cut > 0 else head  # overwrites, the head ended `36%`)
        margin = min(ESCAPE_ROOM, size - tail_bytes - start)
        fh.seek(size - tail_bytes - margin)
        tail = render_bytes(_from_a_line_start(fh.read(tail_bytes + margin), margin), shown)[0]
    head = head_of(head, head_n).strip("\n")
    tail = tail_of(tail.rstrip("\n"), tail_n).lstrip("\n")
    omitted = span - len(head.encode()) - len(tail.encode())
    return Excerpt(head + _marker(f"about {omitted} bytes", shown) + tail, True, span)
