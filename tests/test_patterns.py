"""TaskOutput patterns: linear time, off the event loop, every line scanned (issue 11 §2, 12 §6)."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import psutil
import pytest
from conftest import start_bg, wait_until

from wave_bash.api import Client, InvalidInputError, TaskOutputResult, texts
from wave_bash.worker.tail import PatternScanner


def test_catastrophic_pattern_freezes_nothing(client: Client, state_dir: Path) -> None:
    """``(a+)+$`` on a long run of ``a`` ending in ``b`` backtracks forever in Python's
    ``re``; the call must end at its timeout and other sessions must stay responsive."""
    tid = start_bg(client, "head -c 30000 /dev/zero | tr '\\0' a; echo b; sleep 60")
    wait_until(lambda: Path(client.tasks()[0].output_path).stat().st_size > 30000)
    results: list[TaskOutputResult] = []
    started = time.monotonic()
    waiter = threading.Thread(
        target=lambda: results.append(client.task_output(tid, pattern="(a+)+$", timeout=3000))
    )
    waiter.start()
    other = Client(state_dir=state_dir, session="other")
    latencies = []
    for _ in range(5):
        t0 = time.monotonic()
        assert other.bash("echo hi", timeout=10_000).stdout == "hi"
        latencies.append(time.monotonic() - t0)
    waiter.join(20)
    assert results, "TaskOutput did not return"
    assert results[0].status == "running"  # no match: it waited for its timeout, no longer
    assert time.monotonic() - started < 15
    assert max(latencies) < 2, latencies  # milliseconds normally; the old code froze for good
    client.task_stop(tid)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [(r"(a)\1", "backreferences"), (r"foo(?=bar)", "lookaround"), ("(unclosed", "missing")],
)
def test_unsupported_pattern_is_a_clear_error(client: Client, pattern: str, why: str) -> None:
    tid = start_bg(client, "true")
    with pytest.raises(InvalidInputError, match="not a valid regular expression") as err:
        client.task_output(tid, pattern=pattern)
    assert why in str(err.value) and "(?m)" not in str(err.value)  # (the model's own)


def test_too_costly_pattern_is_refused(client: Client) -> None:
    tid = start_bg(client, "true")
    with pytest.raises(InvalidInputError, match="not a valid regular expression"):
        client.task_output(tid, pattern="((((x{1000}){1000}){1000}){1000})")


def test_match_before_megabytes_of_output_is_found(client: Client) -> None:
    """Every line since the last read is scanned, not only the last megabyte."""
    tid = start_bg(client, "echo READY; head -c 3M /dev/zero | tr '\\0' x; echo; sleep 30")
    wait_until(lambda: Path(client.tasks()[0].output_path).stat().st_size > 3_000_000)
    started = time.monotonic()
    out = client.task_output(tid, pattern="^READY$", timeout=20_000)
    assert out.status == "running" and time.monotonic() - started < 10
    assert out.output.startswith("READY")
    client.task_stop(tid)


def test_match_written_after_megabytes_is_found(client: Client) -> None:
    tid = start_bg(client, "sleep 1; head -c 5M /dev/zero | tr '\\0' x; echo; echo DONE; sleep 30")
    out = client.task_output(tid, pattern="DONE", timeout=20_000)
    assert out.status == "running" and "DONE" in out.output
    client.task_stop(tid)


def test_unfinished_line_matches(client: Client) -> None:
    """A prompt has no newline yet: it must still wake the wait."""
    tid = start_bg(client, "printf 'Password: '; sleep 30")
    started = time.monotonic()
    out = client.task_output(tid, pattern="Password: $", timeout=20_000)
    assert out.status == "running" and time.monotonic() - started < 10
    assert out.output == "Password: "
    client.task_stop(tid)


def test_an_enormous_pattern_is_refused_at_once(client: Client, state_dir: Path) -> None:
    """RE2 bounds the compiled program, not the parsing: a long pattern is refused by its
    length before any work (a 300 KB one froze the loop for 7 s and kept 3 GB)."""
    tid = start_bg(client, "true")
    started = time.monotonic()
    with pytest.raises(InvalidInputError, match="longer than 1024 characters"):
        client.task_output(tid, pattern=r"\pL" * 100_000)
    assert time.monotonic() - started < 4  # (it took 7 s)


def test_costly_scans_do_not_delay_task_stop(client: Client, state_dir: Path) -> None:
    """Pattern scans have threads of their own: a TaskStop is not queued behind them."""
    big = start_bg(client, "head -c 20M /dev/urandom | base64 -w 200; sleep 60")
    wait_until(lambda: Path(client.tasks()[0].output_path).stat().st_size > 20_000_000, 30)
    victim = start_bg(client, "sleep 60")
    scans = [
        threading.Thread(
            target=lambda: Client(state_dir=state_dir, session="scan").task_output(
                big, pattern=r"[\p{L}\p{N}]{300}q", timeout=8_000, offset=0
            )
        )
        for _ in range(6)
    ]
    supervisor = psutil.Process(client.status().pid or 0)
    busy_from = sum(supervisor.cpu_times()[:2])
    for t in scans:
        t.start()
    try:
        wait_until(lambda: sum(supervisor.cpu_times()[:2]) > busy_from + 1)  # scans under way
        started = time.monotonic()
        assert client.task_stop(victim).status == "killed"
        assert time.monotonic() - started < 5  # was 58 s behind the scans
    finally:
        client.task_stop(big)
        for t in scans:  # (they outlive their timeout: one left ran into the teardown in CI)
            t.join(60)
    assert not any(t.is_alive() for t in scans)


@pytest.mark.parametrize("ended", [False, True], ids=["running", "ended"])
def test_a_search_that_outlasts_its_wait_ends_the_read_where_it_got_to(
    client: Client, state_dir: Path, tmp_path: Path, ended: bool
) -> None:
    """A pattern wait on a log too big to search by its timeout answers at the timeout, with
    what it searched: the rest comes with the next read, searched in turn, an ended task's
    too. (Searched to the end first, one wait of 8 s on 20 MB answered after 11.5 s, six
    after up to 36 s: a trial; an ended task's rest was then never searched: a review.)"""
    done = tmp_path / "done"
    rest = "" if ended else "; sleep 60"
    big = start_bg(
        client, f"head -c 8M /dev/urandom | base64 -w 200; echo the-end; touch {done}{rest}"
    )
    try:
        wait_until(done.exists, 60)
        if ended:
            wait_until(lambda: client.tasks(all=True)[0].status == "completed", 30)
        reader = Client(state_dir=state_dir, session="scan")
        reads: list[TaskOutputResult] = []
        while not reads or not reads[-1].pattern_matched:
            assert len(reads) < 500
            reads.append(
                reader.task_output(big, pattern=r"[\p{L}\p{N}]{300}q|^the-end$", timeout=300)
            )
        size = Path(reads[0].output_path).stat().st_size
        assert len(reads) > 1  # (one read, searched to the end, before)
        assert [r.start_offset for r in reads] == [0] + [r.next_offset for r in reads[:-1]]
        status = "completed" if ended else "running"
        for r in reads[:-1]:
            assert (r.pattern_matched, r.status) == (False, status)
            assert r.next_offset is not None and r.unsearched_bytes
            assert r.next_offset + r.unsearched_bytes == size and r.next_offset > r.start_offset
            assert "the-end" not in r.output
        assert "the-end" in reads[-1].output and reads[-1].next_offset == size
        assert reads[-1].unsearched_bytes is None
        text = texts.tool_result_text("TaskOutput", reads[0].model_dump(by_alias=True))
        assert f"; {reads[0].unsearched_bytes} more bytes of output, not searched yet, come" in text
    finally:
        if not ended:
            client.task_stop(big)


def test_a_wait_that_runs_out_returns_the_unfinished_last_line(client: Client) -> None:
    """A search stopped by its deadline still searches, and returns, the prompt or progress
    line that came last (a first version left it out of every read: a review)."""
    tid = start_bg(client, "echo line1; printf 'Continue? [y/N] '; sleep 60")
    try:
        wait_until(lambda: client.task_output(tid, block=False, offset=0).output.endswith("] "))
        out = client.task_output(tid, pattern="never-there", timeout=0)
        assert (out.output, out.pattern_matched) == ("line1\nContinue? [y/N] ", False)
        assert client.task_output(tid, pattern=r"Continue\?", timeout=0, offset=0).pattern_matched
    finally:
        client.task_stop(tid)


def test_a_long_line_is_cut_between_characters(client: Client, tmp_path: Path) -> None:
    """A read that ends where the search got to inside a line longer than a chunk ends
    between characters and escape sequences (it split an é and an ESC[0m: a review)."""
    done = tmp_path / "done"
    tid = start_bg(
        client,
        "python3 -c \"import sys; sys.stdout.write('x' + 'é' * 200000 + '\\x1b[31mab\\x1b[0m' * 30000)\""
        f"; touch {done}; sleep 60",
    )
    try:
        wait_until(done.exists, 30)
        pieces = []
        while not pieces or pieces[-1].unsearched_bytes:
            assert len(pieces) < 50
            pieces.append(client.task_output(tid, pattern="never-there", timeout=0))
        assert len(pieces) > 1
        log = Path(pieces[0].output_path).read_bytes()
        for piece in pieces:
            assert "\ufffd" not in piece.output and not piece.output.startswith(("[", "m"))
            before = log[: piece.next_offset]
            before.decode()  # (no character cut)
            escape = before[-8:].rfind(b"\x1b")
            assert escape < 0 or re.fullmatch(rb"\x1b\[\d*m(ab)*", before[-8:][escape:])
    finally:
        client.task_stop(tid)


def test_a_match_across_a_long_lines_chunks_is_found(client: Client, tmp_path: Path) -> None:
    """A line longer than a chunk is searched in pieces that overlap: a match across the
    cut between two was missed (a review)."""
    done = tmp_path / "done"
    before = PatternScanner.CHUNK - PatternScanner.OVERLAP - 3  # (across the old cut)
    tid = start_bg(
        client,
        f"python3 -c \"import sys; sys.stdout.write('x' * {before} + 'NEEDLE' + 'y' * 300000)\""
        f"; touch {done}; sleep 60",
    )
    try:
        wait_until(done.exists, 30)
        out = client.task_output(tid, pattern="NEEDLE", timeout=10_000, offset=0)
        assert out.pattern_matched is True
    finally:
        client.task_stop(tid)


def test_short_waits_are_not_queued_behind_long_searches(client: Client, state_dir: Path) -> None:
    """Searches take the pattern threads in turn, a chunk at a time: beside two long
    waits on a big log, a 1-s wait on a few bytes answered after 29 s (a review)."""
    big = start_bg(client, "head -c 20M /dev/urandom | base64 -w 200; sleep 60")
    small = start_bg(client, "echo six; sleep 60")
    wait_until(lambda: Path(client.tasks()[0].output_path).stat().st_size > 20_000_000, 30)

    def hog(n: int) -> None:
        Client(state_dir=state_dir, session=f"hog{n}").task_output(
            big, pattern=r"[\p{L}\p{N}]{300}q", timeout=15_000, offset=0
        )

    hogs = [threading.Thread(target=hog, args=(n,)) for n in range(2)]
    for t in hogs:
        t.start()
    try:
        waits = []
        for _ in range(2):
            started = time.monotonic()
            out = client.task_output(small, pattern="never-there", timeout=1_000, offset=0)
            waits.append(time.monotonic() - started)
            assert out.output == "six"
        assert max(waits) < 5, waits  # (the hogs hold the threads for 15 s)
    finally:
        client.task_stop(big)
        client.task_stop(small)
        for t in hogs:
            t.join(60)
    assert not any(t.is_alive() for t in hogs)


def test_a_reader_that_loses_its_turn_says_what_it_read(client: Client) -> None:
    """Two readers of one session wait for one line: the one that reads it says matched,
    the other, which reads nothing, says not found (it said matched beside no output)."""
    tid = start_bg(client, "sleep 1; echo the-end; sleep 60")
    answers: list[TaskOutputResult] = []
    readers = [
        threading.Thread(
            target=lambda: answers.append(client.task_output(tid, pattern="the-end", timeout=5_000))
        )
        for _ in range(2)
    ]
    for t in readers:
        t.start()
    for t in readers:
        t.join(60)
    client.task_stop(tid)
    got = sorted((a.pattern_matched, a.output) for a in answers)
    assert got == [(False, ""), (True, "the-end")]
