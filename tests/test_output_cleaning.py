"""Output cleaning and truncation (SPEC O1–O3), on strings and on real log files."""

from __future__ import annotations

import re
import time
import tracemalloc
from pathlib import Path

import pytest

from wave_bash.api import Client
from wave_bash.worker import clean_bytes, clean_text, excerpt_text, last_lines, read_excerpt


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[1;31mred\x1b[0m plain", "red plain"),  # colours
        ("\x1b]0;window title\x07text", "text"),  # OSC title (BEL)
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC hyperlink (ST)
        ("\x1b(Bcharset", "charset"),  # charset designation
        ("a\x1b[2Cb\x1b[Hc", "a  bc"),  # moves along the line followed, others dropped
        ("10%\x1b[1G\x1b[0K55%\x1b[1G\x1b[0Kdone", "done"),  # npm's progress: no \r
        (">>> ls\x1b[6D\x1b[0m>>> ls\x1b[6D\r\r\n42\r\n", ">>> ls\n42\n"),  # a REPL's redraw
        ("abc\x1b[9Dx\x1b[Gy\x1b[0Cz", "ybz"),  # not before the line's start; 0 is 1
        ("\x1b[999999Cx\x1b[999999Cy", " " * 1000 + "xy"),  # not past MOVE_LIMIT
        ("a\r\x1b[" + "9" * 5000 + "Cx", "x"),  # more than 6 digits: any CSI (int() refused)
        ("10%\r55%\r100%", "100%"),  # progress bar leaves its last state
        ("100 files\r\x1b[K5 files", "5 files"),  # erase-in-line after \r
        ("abcdef\rXY", "XYcdef"),  # a terminal overwrites, keeps the rest
        ("dos line\r", "dos line"),  # CRLF endings
        ("a\r\nb\r\n", "a\nb\n"),  # a terminal's lines (taken in one pass)
        ("xyz\rab\r\n10%\r20%\r\n", "abz\n20%\n"),  # overwrites before CRLF
        ("a\r\r\nb\x08c\r\n", "a\nc\n"),
        ("Loading\x1b[2K\r\nok\r\n", "\nok\n"),  # a line that erases itself (a review)
        ("ab\x08c", "ac"),  # backspace
        ("bell\x07 and nul\x00", "bell and nul"),
        ("tab\tstays", "tab\tstays"),
        ("abcdef\x1b[3D\x1b[1Kxy\r", "   xyf"),  # to the cursor, through it
        ("old\x1b[2K\rnew", "new"),  # the whole line
        # An ESC that starts no sequence is dropped with the control after it: joined to
        # what followed, it made a clipboard write and a reset (a trial).
        ("x\x1b\x00]52;c;aGk=\x1b\x00\\", "x]52;c;aGk=\\"),
        ("A\x1b\x01c B\x1b\x0e\x9b31m", "Ac B"),
        ("start\n\x1b]0;oops\nERROR: failed\n", "start\n\nERROR: failed\n"),  # ends at its line
        ("a\x1bPq#0;2;0;0;0#1~~@@\x1b\\b", "ab"),  # DCS: a sixel image
        ("c\x1b_Gf=100,a=T;iVBORw0KGgo=\x1b\\d\x1b^pm\x07\x1bXsos\x9c", "cd"),  # APC, PM, SOS
        ("\x90dcs\x9c\x9d8;;x\x07e\x85", "e"),  # their 8-bit forms, and other C1 controls
    ],
)
def test_clean_text(raw: str, shown: str) -> None:
    assert clean_text(raw) == shown


@pytest.mark.parametrize(
    "unit",
    [
        "a" * 16 + "\x1b[1K" * 8,  # erases over a long line (froze the supervisor: a trial)
        "\x1b[2K\x1b[1GProgress: 12/345",  # Node's readline.clearLine, cursorTo(0)
        "x\x1b[2K",  # erases that never move the cursor back
        "\x1b[K\x1b[999Cx",  # moves that would pad
        "b" * 8 + "\x1b[99D\x1b[99C\r",
        "y\x1b[999A",  # moves to other lines, with what they carry
        "y\x1b[999B\n\x1b[J",
        "\x1b[A" + "x" * 40 + "\n",
    ],
)
def test_cleaning_takes_time_linear_in_its_text(unit: str) -> None:
    """8 times the text takes about 8 times as long, not 64 (a ratio within one run);
    and what it shows is bounded by what it was given."""

    def took(copies: int) -> float:
        text = unit * copies + "\r\n"
        best = float("inf")
        for _ in range(3):
            began = time.perf_counter()
            shown = clean_text(text)
            best = min(best, time.perf_counter() - began)
        assert len(shown) <= 5 * len(text) + 1000
        return best

    small, large = took(4000), took(32000)
    assert large / small < 24, (small, large)


def test_invalid_utf8_is_replaced() -> None:
    assert clean_bytes(b"ok \xff\xfe \xe2\x82") == "ok \ufffd\ufffd \ufffd"


def test_multiline_progress() -> None:
    raw = "building\n[#   ] 10%\r[##  ] 50%\r[####] 100%\ndone\n"
    assert clean_text(raw) == "building\n[####] 100%\ndone\n"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        # docker's layers: up over them, each line erased and drawn again (64 lines came
        # for the 4 a terminal showed: a trial)
        (
            "a: 0%\nb: 0%\n" + "\x1b[2A\x1b[2Ka: 50%\n\x1b[2Kb: 50%\n" * 3 + "done\n",
            "a: 50%\nb: 50%\ndone\n",
        ),
        # rich's and pip's: erase, up, erase…, then the new frame
        ("go\nx\ny\n\r\x1b[2K\x1b[1A\x1b[2K\x1b[1A\x1b[2KX\nY\n", "go\nX\nY\n"),
        # tqdm's second bar: down a line, back up, at the column it had
        ("\rbar1 10%\n\rbar2 20%\x1b[A\rbar1 90%\n\rbar2 99%\x1b[A", "bar1 90%\nbar2 99%"),
        ("ab\x1b[Acd", "abcd"),  # up from the first line: it stays there, at its column
        ("one\ntwo\nthree\x1b[2F\x1b[Jnew\n", "new\n"),  # to a line's start, erase below
        # down past the last line: into a blank one, as on a screen not yet full (it went
        # over the last line: a review)
        ("ok\nERROR: disk full\x1b[1B\rnext", "ok\nERROR: disk full\nnext"),
        ("ok\nline\x1b[2B after", "ok\nline\n     after"),
        ("a\nb\x1bMc", "ac\nb"),  # ESC M: up one
        # an error long before is no progress line to redraw: a screen's 24 rows at most,
        # however often it goes up and erases (a review)
        ("ERROR\n" + "x\n" * 23 + "\x1b[999A\x1b[J", "ERROR\n"),
        ("ERROR\n" + "x\n" * 22 + "\x1b[999A\x1b[J", ""),
        (
            "ERROR\n" + "x\n" * 23 + "\x1b[999A\x1b[J" * 3 + "y\n" * 30 + "\x1b[999A\x1b[J",
            "ERROR\n" + "y\n" * 7,
        ),
        # where the cursor is on its line: after moves along it too (a review)
        ("ERROR: boom\nprogress 50%\x1b[3D\x1b[1Ax", "ERROR: boxm\nprogress 50%"),
        ("ab\nxyz\x1b[2G\x1b[Aq", "aq\nxyz"),
        # a line erased below, then the place saved above it: blank again (a review)
        ("a\n\x1b7\nb\nc\x1b[3A\x1b[J\x1b8X", "a\nX"),
        # a place by the screen's row (apt's progress line), a scroll region: line by line
        ("\x1b7\x1b[24;0fbar\x1b8Unpack\n\x1b[1Aok", "barUnpack\nok"),
        # a line wide in columns (CJK, emoji, tabs), or wide once and overwritten (a review)
        ("E\n" + "错" * 41 + "\nstep\x1b[2A\r\x1b[Kover", "E\n" + "错" * 41 + "\nover"),
        ("E\n" + "\t" * 10 + "v\nstep\x1b[2A\r\x1b[Kover", "E\n" + "\t" * 10 + "v\nover"),
        ("E\n" + "A" * 100 + "\r\x1b[2Kdone\nstep\x1b[2A\r\x1b[Kover", "E\ndone\nover"),
        # (one not yet crossed when a move had crossed those after it: a second read)
        (
            "E\n" + "x" * 100 + "\nb\nc\nd\x1b[2A\x1b[2A\r\x1b[Kover",
            "E\n" + "x" * 100 + "\nb\nc\nover",
        ),
        # (a return it drew, then an erase: its other row stays, as the error above it)
        ("E\n" + "x" * 100 + "\x1b7\r\x1b7\x1b[Kdone\nbar\x1b[2A\r\x1b[Kover", "E\ndone\nover"),
        # a line that may wrap takes rows a move counts: drawn as before, moves dropped
        # (a wrapped command line's redraw went over the error above it: a review)
        ("error: failed\n" + "x" * 120 + "\x1b[1A\r\x1b[2Kstatus", "error: failed\nstatus"),
        (
            "error: failed\n" + "x" * 81 + "\nstep\x1b[2A\r\x1b[2Kstatus",
            "error: failed\n" + "x" * 81 + "\nstatus",
        ),
        # a place saved and restored (a review: what came after went over lines above)
        (
            "job1 running\njob2 running\nstep 3\n\x1b7\x1b[3A\r\x1b[2Kjob1 done\x1b8ERROR: 4\n",
            "job1 done\njob2 running\nstep 3\nERROR: 4\n",
        ),
        ("a\nb\n\x1b[s\x1b[2A\rA\x1b[uc\n", "A\nb\nc\n"),
        ("\x1b[31mred\x1b[0m\x1b[1Aup", "redup"),  # colours around it, dropped
    ],
)
def test_moves_to_other_lines_draw_there(raw: str, shown: str) -> None:
    assert clean_text(raw) == shown


def test_several_progress_bars_of_a_real_command(client: Client) -> None:
    """Three bars drawn 20 times in place, as docker's layers: the model reads the
    four lines a terminal shows."""
    bars = "; ".join(
        f"printf '\\033[2K{name}: %d%%\\n' $((i*5))" for name in ("layer1", "layer2", "layer3")
    )
    r = client.bash(
        "printf 'layer1: 0%%\\nlayer2: 0%%\\nlayer3: 0%%\\n'; "
        f"for i in $(seq 1 20); do printf '\\033[3A'; {bars}; done; echo Pull complete"
    )
    assert r.stdout == "layer1: 100%\nlayer2: 100%\nlayer3: 100%\nPull complete"


def test_last_lines_skips_blank_lines() -> None:
    assert last_lines("a\n\nb\n  \nc\nd\n\n", 3) == "b\nc\nd"


def test_excerpt_keeps_head_and_tail() -> None:
    text = "HEAD\n" + "x" * 100_000 + "\nTAIL"
    ex = excerpt_text(text, 30_000, "/log")
    assert ex.truncated and len(ex.text) <= 30_000
    assert ex.text.startswith("HEAD\n") and ex.text.endswith("\nTAIL")
    marker = [line for line in ex.text.splitlines() if "omitted" in line]
    assert len(marker) == 1 and "full output: /log" in marker[0]
    omitted = int(marker[0].split("[")[1].split()[0])
    assert omitted == len(text) - (len(ex.text) - len(marker[0]) - 2)


def test_an_excerpt_is_cut_between_lines() -> None:
    """Cut where the budget ran out, `line 1008` showed as `line 100` and `line 48097` as
    `97`, each read as a line of its own (a review): each end is cut between two lines
    where one ends near, and the marker counts the lines left out."""
    lines = [f"line {i}" for i in range(1, 50_001)]
    ex = excerpt_text("\n".join(lines), 30_000, "/log")
    head, marker, tail = re.split(r"\n(\.\.\. \[.*\] \.\.\.)\n", ex.text)
    shown_head, shown_tail = head.split("\n"), tail.split("\n")
    assert shown_head == lines[: len(shown_head)] and shown_tail == lines[-len(shown_tail) :]
    left_out = len(lines) - len(shown_head) - len(shown_tail)
    assert marker.startswith(f"... [{left_out} lines, ") and "characters omitted" in marker
    # blank lines at a cut are left out too, and counted (they vanished from the count)
    text = "x" * 8900 + "\n" * 51 + "y" * 100_000 + "\n" * 50 + "z" * 20_000
    ex = excerpt_text(text, 30_000, "/log")
    assert "[100 lines, 100101 characters omitted" in ex.text
    assert "[1 line, " in excerpt_text("x" * 9000 + "\ny\n" + "z" * 30_000, 30_000, "/l").text


def test_the_head_of_a_big_log_ends_with_a_whole_line(tmp_path: Path) -> None:
    """Read by its bytes, the head of a log over 1 MiB stopped inside a line, its progress
    overwrites shrinking what it shows: it ended `done 66`, `36%` (a review)."""
    log = tmp_path / "log"
    with open(log, "w") as out:
        n = 0
        while out.tell() < 2_000_000:
            out.write("".join(f"\r{i}%" for i in range(100)) + f"\rdone {n}\n")
            n += 1
    head = read_excerpt(log, 30_000).text.split("\n... [")[0].splitlines()
    assert head == [f"done {i}" for i in range(len(head))]


def test_small_output_is_untouched() -> None:
    assert excerpt_text("short", 30_000, "/log").text == "short"


def _big_log(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.write(b"FIRST LINE\n" + b"some text\n" * 1000)  # text where binary is judged
        fh.truncate(size - 11)  # sparse middle: NUL bytes, as cheap to create as to skip
        fh.seek(size - 11)
        fh.write(b"\nLAST LINE\n")


def test_big_log_reads_only_head_and_tail(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    _big_log(path, 1 << 30)  # 1 GiB
    tracemalloc.start()
    ex = read_excerpt(path, 30_000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ex.truncated
    assert ex.text.startswith("FIRST LINE") and ex.text.endswith("LAST LINE")
    assert "bytes omitted; full output:" in ex.text
    assert peak < 8 * 1024 * 1024  # memory independent of the log's size


def test_read_excerpt_range(tmp_path: Path) -> None:
    path = tmp_path / "t.log"
    path.write_bytes(b"one\ntwo\nthree\n")
    assert read_excerpt(path, 100, start=4).text == "two\nthree"
    assert read_excerpt(path, 100, start=4, end=8).text == "two"


def test_a_follow_piece_ends_with_a_whole_line_or_a_whole_character(tmp_path: Path) -> None:
    from wave_bash.worker.tail import whole_lines_end

    log = tmp_path / "log"
    log.write_bytes(b"one\ntwo\nthr")
    assert whole_lines_end(log, 0, 11, 9, 100) == 8  # the last newline within the limit
    assert whole_lines_end(log, 0, 11, 6, 100) == 4
    assert whole_lines_end(log, 8, 11, 6, 100) == 8  # a partial line alone: nothing yet
    log.write_bytes(b"x" * 10 + b"\n")
    assert whole_lines_end(log, 0, 11, 4, 100) == 11  # a long line: the first newline
    line = ("\u5b57" * 10).encode()  # 30 bytes, no newline, longer than `longest`
    log.write_bytes(line)
    for longest in range(4, 12):
        cut = whole_lines_end(log, 0, 30, 2, longest)
        assert 0 < cut <= longest and line[:cut].decode()  # never inside a character
    assert whole_lines_end(log, 0, 30, 2, 40) == 0  # a partial line alone: nothing yet,
    assert whole_lines_end(log, 0, 30, 2, 40, ended=True) == 30  # unless it is the last
    log.write_bytes(b"x" * 1000 + b"\x1b]0;title\x07" + b"y" * 10)
    assert whole_lines_end(log, 0, 1023, 100, 1005) == 1000  # never inside an escape


def test_a_piece_of_a_stream_keeps_every_line(tmp_path: Path) -> None:
    """A piece is printed after the last: nothing of it is trimmed (blank lines at its
    edges were lost), and it says whether it ended a line (a newline was added every MiB
    of a long line: a trial)."""
    from wave_bash.worker import read_piece

    log = tmp_path / "log"
    data = b"\n\nred \x1b[31mx\x1b[0m\r\n\n\n"
    log.write_bytes(data)
    assert read_piece(log, 0, len(data)) == ("\n\nred x\n\n", True)
    assert read_piece(log, 0, 6) == ("\n\nred ", False)
    assert read_piece(log, 2, 2) == ("", False)


def test_a_tail_read_from_inside_a_progress_line_keeps_its_last_state(tmp_path: Path) -> None:
    """A log over a MiB is read at both ends; the tail's first line, read from its middle,
    was dropped whole: a progress bar's `100%` before the build's error showed as its
    first state, from the head (a trial). From its last overwrite on, it is whole."""
    log = tmp_path / "log"
    bar = "".join(f"\rprogress {i // 2000}%" for i in range(200_001))
    log.write_text(bar + "\nerror: build failed\n")
    text = read_excerpt(log, 30_000).text
    assert text.endswith("] ...\nprogress 100%\nerror: build failed")
    log.write_text("a" * 2_000_000 + "\nb\n")  # (no overwrite: its end is kept, O3; it
    tail = read_excerpt(log, 30_000).text.partition("] ...\n")[2]  # was dropped, and the
    assert tail.endswith("aaa\nb") and len(tail) > 20_000  # tail was `b`: a trial)
    log.write_text("a" * 2_000_000 + "\n" + "c\n" * 40_000)  # (a line begins near: there)
    assert read_excerpt(log, 30_000).text.partition("] ...\n")[2].startswith("c\nc")


def _excerpt_of(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "out.log"
    path.write_bytes(data)
    return read_excerpt(path, 30_000).text


def test_binary_output_keeps_the_text_around_it(tmp_path: Path) -> None:
    """Binary output was judged on its first 8 KiB as a whole: an error printed before it
    or a prompt after it was hidden with it (a review: the question an interactive command
    asked after 300 bytes of binary), and binary after more text than that was shown as
    replacement characters. It is found line by line; the text around it stays."""
    blob = bytes(range(256)) * 12  # 3 KiB: controls, NULs, invalid UTF-8
    note = "[binary output, {} bytes: not shown; full output: " + str(tmp_path / "out.log") + "]"
    assert _excerpt_of(tmp_path, b"error: cannot open x.bin\n" + blob) == (
        "error: cannot open x.bin\n" + note.format(len(blob))
    )
    prompt = b"\nOverwrite config? [y/N] "
    shown = _excerpt_of(tmp_path, blob + prompt)  # (the newline ends the binary's last line)
    assert shown == note.format(len(blob) + 1) + prompt.decode()
    text = b"a line of text\n" * 160  # 2.4 KB, then 3 KiB of binary, then text again
    shown = _excerpt_of(tmp_path, text + blob + b"\nafter it all\n")
    assert shown == text.decode().strip() + "\n" + note.format(len(blob) + 1) + "\nafter it all"
    assert "\ufffd" not in shown


def test_short_text_before_and_after_binary_output_stays(tmp_path: Path) -> None:
    """Text of fewer than 16 characters before the first run of binary or after the last
    was counted with it (`PASSED` after a dump, `Password: ` after it, a trial): only
    text between two runs that says nothing is."""
    zeros = b"\0" * 4000
    note = "[binary output, {} bytes: not shown; full output: " + str(tmp_path / "out.log") + "]"
    assert _excerpt_of(tmp_path, zeros + b"\nPASSED\n") == note.format(4001) + "\nPASSED"
    assert _excerpt_of(tmp_path, b"START\n" + zeros + b"\n") == "START\n" + note.format(4001)
    assert _excerpt_of(tmp_path, zeros + b"\nPassword: ") == note.format(4001) + "\nPassword: "
    for after in ("\nPASSED\nOK\n", "\n完成\n", "\n0\n", "\n$ ", "\n> ", "\nOK\t3\n"):
        shown = _excerpt_of(tmp_path, zeros + after.encode())  # (a second review's)
        assert shown == note.format(4001) + "\n" + after.strip("\n"), after
    file = bytes(range(256)) * 8 + b"\xaeB`\x82"  # (a file seldom ends with a newline)
    for after in ("PASSED\n", "Password: ", "> ", "Готово.\n"):  # (a third review)
        assert _excerpt_of(tmp_path, file + after.encode()).endswith("]\n" + after.strip("\n"))
    for before in ("Done.\n", "100%\n", "Загрузка...\n", "10%\r50%\r100%\n"):
        assert _excerpt_of(tmp_path, before.encode() + file).startswith(before.split("\r")[-1])
    random_bytes = bytes(range(256)) * 8  # (the start of random output: no text shown)
    assert _excerpt_of(tmp_path, b"A~%\n" + random_bytes).startswith("[binary output")
    assert not _excerpt_of(tmp_path, random_bytes + b"\n%k").endswith("%k")
    between = _excerpt_of(tmp_path, b"hello\n" + zeros + b"\nq7\n" + zeros + b"\nbye")
    assert between == "hello\n" + note.format(8005) + "\nbye"  # (`q7`: counted with them)


def test_text_with_a_few_odd_bytes_stays_text(tmp_path: Path) -> None:
    latin1 = "café au lait\n".encode("latin-1") * 300  # invalid UTF-8 in every line
    assert _excerpt_of(tmp_path, latin1).count("caf\ufffd au lait") == 300
    bells = b"done\a\n" * 100
    assert _excerpt_of(tmp_path, bells).splitlines() == ["done"] * 100
    nuls = b"".join(b"file_%d.txt\0" % i for i in range(1, 21))  # `find -print0`
    assert _excerpt_of(tmp_path, nuls).startswith("file_1.txtfile_2.txt")


def test_only_the_binary_runs_are_hidden(tmp_path: Path) -> None:
    """Hidden from the first binary line to the last, the text between two binary runs
    went too (a `FAILED` line), and a log over 1 MiB with binary in its first bytes hid
    everything; binary of short lines only showed nothing at all (a review)."""
    blob = bytes(range(256)) * 12
    middle = b"FAILED test_a in the middle\n" * 100
    shown = _excerpt_of(tmp_path, blob + b"\n" + middle + blob)
    assert shown.count("[binary output, ") == 2 and shown.count("FAILED test_a") == 100
    lines = b"".join(b"INFO compiling module number %d\n" % i for i in range(60_000))
    big = _excerpt_of(tmp_path, blob + b"\n" + lines)  # 2 MB: read at both ends only
    assert big.startswith("[binary output, ") and "\nINFO compiling module number 0\n" in big
    assert big.endswith("INFO compiling module number 59999")
    short = _excerpt_of(tmp_path, b"\x00\x01\x02\x03\x04\x05\x06\n" * 600)
    assert short.startswith("[binary output, 4800 bytes")


def test_a_byte_order_mark_or_nuls_do_not_make_binary_text(tmp_path: Path) -> None:
    """Any output starting with a UTF-16 byte-order mark, or 16-bit numbers (a NUL in
    every other byte), was taken for UTF-16 text and shown as garbage (a review)."""
    import struct

    noise = bytes((i * 7919 + 13) % 256 for i in range(5000))  # (fixed: no flake)
    assert _excerpt_of(tmp_path, b"\xff\xfe" + noise).startswith("[binary output, 5002 bytes")
    numbers = struct.pack("<8000H", *[(i % 255) + 1 for i in range(8000)])
    assert _excerpt_of(tmp_path, numbers).startswith("[binary output, 16000 bytes")
    text = "Windows tool output\r\nline two\r\n"
    assert _excerpt_of(tmp_path, text.encode("utf-16-le")) == "Windows tool output\nline two"


def _filter(path: Path, pattern: str, limit: int = 30_000) -> tuple[str, int]:
    from wave_bash.worker.tail import compile_pattern, matching_lines

    return matching_lines(path, compile_pattern(pattern), 0, path.stat().st_size, limit)


def test_a_filter_matches_each_line_by_itself(tmp_path: Path) -> None:
    """Searched a chunk at a time, a filter still keeps the lines its pattern matches
    alone, as grep: not one that a match across lines begins on."""
    log = tmp_path / "log"
    log.write_bytes(b"ok\nERR 1\na\nbc\n\x1b[31mERR\x1b[0m 2\nlast a")
    assert _filter(log, "^ERR") == ("ERR 1\nERR 2", 0)
    assert _filter(log, "a\nb|c") == ("bc", 0)  # (the match across lines is no line's)
    assert _filter(log, "a$") == ("a\nlast a", 0)  # (the last line, with no newline)
    assert _filter(log, "x*")[0].split("\n") == ["ok", "ERR 1", "a", "bc", "ERR 2", "last a"]
    # What a pattern says of a text's ends, each line's (found at a chunk's ends: a review)
    for pattern in (r"\AERR", r"(?-m)^ERR", r"(?i-m)^err"):
        assert _filter(log, pattern) == ("ERR 1\nERR 2", 0), pattern
    assert _filter(log, r"a\z") == _filter(log, r"(?-m)a$") == ("a\nlast a", 0)


def test_a_filter_reads_a_long_line_in_pieces(tmp_path: Path) -> None:
    """A 24 MB line: matched in bounded pieces, once, shown cut (it was held whole, and
    joined again for each chunk read: minutes, 574 MB, a trial)."""
    log = tmp_path / "log"
    with log.open("wb") as fh:
        fh.write(b"head\n")
        for _ in range(24):
            fh.write(b"a" * (1 << 20))
        fh.write(b"needle needle\nshort needle end\n")
    tracemalloc.start()
    text, omitted = _filter(log, "needle")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    long_line, short = text.split("\n")
    assert long_line.startswith("… aaa") and long_line.endswith("characters cut]")
    assert len(long_line) < 15_100 and (short, omitted) == ("short needle end", 0)
    assert peak < 16 << 20
    # A piece's edges are no line's start or end but the line's own (`^a+$` matched a 3 MB
    # line that holds a `b`, `^bcd` its middle: a review).
    line = bytearray(b"a" * (3 << 20))
    line[5], line[2 << 20], line[-3:] = ord("b"), ord("c"), b"end"
    log.write_bytes(b"x\n" + line + b"\ny\n")
    for pattern, shown in (("^a+$", ""), ("^c", ""), ("a$", ""), ("^aaaaab", "aaaaab"),
                           ("c", "… a"), ("end$", "… a"), ("^y$", "y")):  # fmt: skip
        assert _filter(log, pattern)[0][: len(shown) or None].startswith(shown), pattern


def test_a_filter_takes_time_linear_in_the_output_and_stops_when_told(tmp_path: Path) -> None:
    """8 times the output takes about 8 times as long (a ratio within one run); a filter
    whose caller left stops reading."""
    import threading

    from wave_bash.worker.tail import compile_pattern, matching_lines

    def took(lines: int, pattern: str, line: bytes = b"") -> float:
        log = tmp_path / f"{lines}.log"
        made = (line or b"line %d of the output\n" % i for i in range(lines))
        log.write_bytes(b"".join(made) + b"y\n")
        began = time.perf_counter()
        _filter(log, pattern)
        return time.perf_counter() - began

    for pattern, line in (("nothing", b""), ("line", b""), ("x[^y]*y", b"x\n")):
        small, large = took(8_000, pattern, line), took(64_000, pattern, line)  # (a chunk)
        assert large / small < 24, (pattern, small, large)  # (the last matches over lines)
    gone = threading.Event()
    gone.set()
    log = tmp_path / "64000.log"
    assert matching_lines(log, compile_pattern("line"), 0, log.stat().st_size, 30_000, gone) == (
        "",
        0,
    )


@pytest.mark.parametrize(
    "sequence",
    [
        b"\x1b[38;5;208m",
        b"\x1b[31m",
        b"\x1b]8;;http://example.com/yy\x1b\\",
        "é".encode(),
        "😀".encode(),
    ],
)
def test_a_large_logs_head_and_tail_end_and_begin_between_sequences(
    tmp_path: Path, sequence: bytes
) -> None:
    """Read at both ends of a log with no newline near its cuts, the head ended `xxxxx38`
    and the tail began `08mEND`, `\\yyEND` or U+FFFD (a trial): each cut is moved out of
    the character or escape sequence it falls inside."""
    log = tmp_path / "log"
    for shift in range(12):
        log.write_bytes(b"x" * 5 + b"y" * shift + sequence * 300_000 + b"END")
        text = read_excerpt(log, 30_000).text
        head, marker, tail = text.partition("\n... [")
        assert marker and tail.split("] ...\n", 1)[1].endswith("END")
        if sequence[0] == 0x1B:
            assert head == "x" * 5 + "y" * shift and tail.split("] ...\n", 1)[1] == "END"
        assert "\ufffd" not in text
