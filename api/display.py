"""What the CLI shows people: the live view of a running command and the task table."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime

from .models import Progress, TaskRecord
from .states import Owner


class LiveView:
    """The last lines of a running command, redrawn in place on a terminal's stderr."""

    def __init__(self) -> None:
        self.lines = 0

    def show(self, update: Progress) -> None:
        self.clear()
        width = os.get_terminal_size(sys.stderr.fileno()).columns
        lines = [line[: width - 1] for line in update.short_result.splitlines()]
        status = f"… running {update.elapsed_ms // 1000}s ({update.task_id}, Ctrl+B to background)"
        sys.stderr.write("\n".join([*lines, status]) + "\n")
        sys.stderr.flush()
        self.lines = len(lines) + 1

    def clear(self) -> None:
        if self.lines:
            sys.stderr.write("\x1b[1A\x1b[2K" * self.lines)
            sys.stderr.flush()
            self.lines = 0


def task_table(records: list[TaskRecord]) -> str:
    """Tasks as a table for people: id, status (exit code), owner/reason, age, command."""
    now = datetime.now(UTC)
    rows = [("ID", "STATUS", "OWNER", "AGE", "COMMAND")]
    for r in records:
        owner = r.owner if r.owner is Owner.FOREGROUND else f"bg:{r.background_reason}"
        status = r.status if r.exit_code is None else f"{r.status}({r.exit_code})"
        if r.leftover_processes:  # ended, but what it started still runs
            status += f"+{r.leftover_processes} running"
        elif r.monitor_lost:
            status += " (monitor lost)"
        age = int((now - r.started_at).total_seconds())
        rows.append((r.id, status, owner, _age(age), r.command.replace("\n", " ")[:60]))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row))
        for row in rows
    )


def _age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
