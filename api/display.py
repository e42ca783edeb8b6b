"""What the CLI shows people: the live view of a running command and the task table,
from the contract's JSON (the CLI validates nothing the supervisor validates)."""

from __future__ import annotations

import os
import sys
import threading
import time
from datetime import UTC, datetime

from .states import Owner
from .texts import visible

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms
    from typing import Any


def in_foreground(fd: int) -> bool:
    """Whether this process's group is the foreground one of the terminal ``fd``, or that
    terminal is not its controlling one (no job control there): one in the background
    (`wave-bash run … &`, Ctrl+Z then `bg`) that sets its mode is stopped by SIGTTOU,
    and it did, before its command was started (a review); what it draws there lands in
    the shell's prompt."""
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:  # (ENOTTY: another terminal, `2>/dev/pts/5`, or none)
        return True


class LiveView:
    """The last lines of a running command, redrawn in place on a terminal's stderr,
    while this process is in its foreground (drawn lines are left be once it is not:
    erasing them would erase what the shell printed since)."""

    def __init__(self) -> None:
        self.lines = 0
        self.keys = "Ctrl+B to background"
        """What the status line says of the keys (after a Ctrl+C: that the next stops it)."""
        self.last: dict[str, Any] | None = None
        self.drawing = False
        self.shown_at = 0.0
        self.lock = threading.RLock()  # (a redraw from the key watcher's thread: one at a
        # time; reentrant: a signal handler's in the drawing thread finds `drawing` set)

    def say_keys(self, keys: str) -> None:
        """Say ``keys`` on the status line now, unless it is being drawn (a signal handler
        calls this: the next update says it; a silent command's showed it only once it
        printed again, a review)."""
        self.keys = keys
        if self.last is not None and not self.drawing:
            self.show(self.last)

    def redraw(self) -> None:
        """Draw the last update again (back in the foreground), unless being drawn."""
        with self.lock:
            self.say_keys(self.keys)

    def show(self, update: dict[str, Any]) -> None:
        """Draw a progress update (its contract JSON)."""
        with self.lock:
            if update is not self.last:  # (a new one: drawn again, the same one's time
                self.shown_at = time.monotonic()  # goes on)
            self.drawing, self.last = True, update
            try:
                self._draw(update)
            finally:
                self.drawing = False

    def _draw(self, update: dict[str, Any]) -> None:
        self.clear()
        if not in_foreground(sys.stderr.fileno()):
            return
        # Every line cut short of the width: one that wrapped would leave a row behind
        # at the next redraw. A terminal that reports no size (0, a bare pty) gets 80.
        width = os.get_terminal_size(sys.stderr.fileno()).columns or 80
        seconds = int(update.get("elapsedMs", 0)) // 1000  # (and since, drawn again: `fg`)
        seconds += int(time.monotonic() - self.shown_at)
        status = f"… running {seconds}s ({update.get('taskId')}, {self.keys})"
        lines = [*str(update.get("shortResult", "")).splitlines(), status]
        sys.stderr.write("\n".join(_fit(line, max(1, width - 1)) for line in lines) + "\n")
        sys.stderr.flush()
        self.lines = len(lines)

    def done(self) -> None:
        """Erase it for good (a Ctrl+C after it does not draw it again)."""
        with self.lock:
            self.last = None
            self.clear()

    def clear(self) -> None:
        if self.lines and not in_foreground(sys.stderr.fileno()):
            self.lines = 0
        if self.lines:
            sys.stderr.write("\x1b[1A\x1b[2K" * self.lines)
            sys.stderr.flush()
            self.lines = 0


def _fit(line: str, columns: int) -> str:
    """``line`` cut to at most ``columns`` columns of a terminal: a wide character (CJK,
    an emoji) takes two, a tab up to eight, a combining mark none (cut by characters,
    such a line wrapped, and the next redraw left a row behind: a trial)."""
    import unicodedata

    line = line.expandtabs()
    used = 0
    for at, char in enumerate(line):
        if unicodedata.combining(char):
            continue
        used += 2 if unicodedata.east_asian_width(char) in "WF" else 1
        if used > columns:
            return line[:at]
    return line


COMMAND_WIDTH = 60
"""Characters of a command a table shows (then ``…``)."""


def task_table(records: list[dict[str, Any]], sessions: bool = False) -> str:
    """Tasks (their contract JSON) as a table for people: id, status (exit code),
    owner/reason, age, with ``sessions`` the session (``tasks --all``), command."""
    now = datetime.now(UTC)
    rows = [("ID", "STATUS", "OWNER", "AGE", *(("SESSION",) if sessions else ()), "COMMAND")]
    for r in records:
        owner = Owner(r["owner"])
        who = owner.value if owner is Owner.FOREGROUND else f"bg:{r.get('backgroundReason')}"
        code = r.get("exitCode")
        status = r["status"] if code is None else f"{r['status']}({code})"
        if r.get("leftoverProcesses"):  # ended, but what it started still runs
            status += f"+{r['leftoverProcesses']} running"
        elif r.get("monitorLost"):
            status += " (monitor lost)"
        elif r.get("waitingForInput"):  # (now: OWNER's `bg:waiting_for_input` is why it
            status += " (waiting for input)"  # went to the background, not that it still
            # waits; a row without this note was taken for a REPL at its prompt: a trial)
        age = max(0, int((now - datetime.fromisoformat(r["startedAt"])).total_seconds()))
        # (a remote's clock may be ahead of this one: `-3569s` was shown; a trial)
        # (a line break as ⏎: `echo a⏎sleep 30` read as `echo a sleep 30` was one command)
        command = visible(str(r["command"]).replace("\n", " ⏎ ").replace("\t", " "))
        if len(command) > COMMAND_WIDTH:
            command = command[: COMMAND_WIDTH - 1] + "…"
        session = (visible(str(r.get("session", ""))),) if sessions else ()
        rows.append((str(r["id"]), status, who, _age(age), *session, command))
    last = len(rows[0]) - 1
    widths = [max(len(row[i]) for row in rows) for i in range(last)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < last else cell for i, cell in enumerate(row))
        for row in rows
    )


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
