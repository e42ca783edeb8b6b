"""The task journal: SQLite in WAL mode, the supervisor its only writer (SPEC D1).

Every state change is one ``BEGIN IMMEDIATE`` transaction. The schema version lives in
``PRAGMA user_version`` and :data:`MIGRATIONS` upgrades older files in place. The journal
never stores environment values (SPEC X2).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any


def storable(value: Any) -> Any:
    """``value`` as SQLite can hold it: text is UTF-8 there, so characters UTF-8 cannot
    hold (the ``\\udcXX`` of a path with undecodable bytes) become backslash escapes. The
    journal's text is for people; the command runs from the original."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode()
    return value


SCHEMA_V1 = """
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    command TEXT NOT NULL,
    description TEXT,
    session TEXT NOT NULL,
    cwd TEXT NOT NULL,
    shell TEXT,
    status TEXT NOT NULL,
    owner TEXT NOT NULL,
    background_reason TEXT,
    owner_changed_at REAL,
    exit_code INTEGER,
    pid INTEGER,
    pid_start INTEGER,
    boot_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    output_path TEXT NOT NULL,
    err_path TEXT,
    timeout_ms REAL
);
CREATE INDEX tasks_by_session ON tasks (session, status);
CREATE INDEX tasks_by_status ON tasks (status);
CREATE TABLE notices (
    task_id TEXT PRIMARY KEY REFERENCES tasks (id) ON DELETE CASCADE,
    session TEXT NOT NULL,
    created_at REAL NOT NULL,
    delivered_at REAL
);
CREATE INDEX notices_pending ON notices (session) WHERE delivered_at IS NULL;
CREATE TABLE read_offsets (
    task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    session TEXT NOT NULL,
    offset INTEGER NOT NULL,
    PRIMARY KEY (task_id, session)
);
"""

SCHEMA_V2 = """
ALTER TABLE tasks ADD COLUMN end_reason TEXT;
"""
"""v2: why a task ended when its exit code does not say it (stopped, log cap, ...)."""

MIGRATIONS: Sequence[str] = (SCHEMA_V1, SCHEMA_V2)
"""``MIGRATIONS[n]`` brings a journal from version ``n`` to ``n + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)


@dataclass
class TaskRow:
    """One row of ``tasks``."""

    id: str
    command: str
    description: str | None
    session: str
    cwd: str
    shell: str | None
    status: str
    owner: str
    background_reason: str | None
    owner_changed_at: float | None
    exit_code: int | None
    pid: int | None
    pid_start: int | None
    boot_id: str | None
    started_at: float
    ended_at: float | None
    output_path: str
    err_path: str | None
    timeout_ms: float | None
    end_reason: str | None = None


_COLUMNS = tuple(f.name for f in fields(TaskRow))
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM tasks"


class Journal:
    """Typed access to the journal file; one instance per supervisor."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes
        self.db.execute("PRAGMA foreign_keys=ON")
        self.migrate()

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on error)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def quick_check(self) -> str:
        """SQLite's ``quick_check``: ``"ok"`` or a description of the damage."""
        rows = self.db.execute("PRAGMA quick_check").fetchall()
        return "; ".join(str(r[0]) for r in rows)

    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def migrate(self) -> None:
        """Apply every migration newer than the file's version, each in its own transaction."""
        current = self.version()
        if current > SCHEMA_VERSION:
            raise RuntimeError(
                f"journal {self.path} has schema version {current}, newer than this "
                f"wave-bash ({SCHEMA_VERSION}); upgrade wave-bash"
            )
        for version in range(current, SCHEMA_VERSION):
            with self.transaction() as db:
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {version + 1}")

    # --- tasks -----------------------------------------------------------------------

    def insert_task(self, row: TaskRow) -> None:
        values = tuple(storable(getattr(row, name)) for name in _COLUMNS)
        marks = ", ".join("?" * len(_COLUMNS))
        with self.transaction() as db:
            db.execute(f"INSERT INTO tasks ({', '.join(_COLUMNS)}) VALUES ({marks})", values)

    def delete_task(self, task_id: str) -> None:
        """Remove a task that never ran (its spawn failed)."""
        with self.transaction() as db:
            db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))

    def update_task(self, task_id: str, **changes: Any) -> None:
        """Set columns of one task in one transaction."""
        assignments = ", ".join(f"{name} = ?" for name in changes)
        with self.transaction() as db:
            values = [storable(value) for value in changes.values()]
            db.execute(f"UPDATE tasks SET {assignments} WHERE id = ?", (*values, task_id))

    def finish_task(self, row: TaskRow, notice_session: str | None) -> None:
        """Record the end of a task (with its identity, if not journaled yet) and, for a
        background task, its pending notice."""
        with self.transaction() as db:
            db.execute(
                "UPDATE tasks SET status = ?, exit_code = ?, ended_at = ?, end_reason = ?, "
                "pid = ?, pid_start = ? WHERE id = ?",
                (row.status, row.exit_code, row.ended_at, row.end_reason, row.pid,
                 row.pid_start, row.id),
            )  # fmt: skip
            if notice_session is not None:
                db.execute(
                    "INSERT OR IGNORE INTO notices (task_id, session, created_at) VALUES (?, ?, ?)",
                    (row.id, notice_session, row.ended_at),
                )

    def record_identities(self, identities: Sequence[tuple[str, int | None, int | None]]) -> None:
        """Journal ``(task_id, pid, start_ticks)`` of running tasks in one transaction."""
        with self.transaction() as db:
            db.executemany(
                "UPDATE tasks SET pid = ?, pid_start = ? WHERE id = ?",
                [(pid, ticks, task_id) for task_id, pid, ticks in identities],
            )

    def get(self, task_id: str) -> TaskRow | None:
        row = self.db.execute(f"{_SELECT} WHERE id = ?", (task_id,)).fetchone()
        return TaskRow(*row) if row else None

    def exists(self, task_id: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone() is not None
        )

    def tasks(self, session: str | None = None, running_only: bool = False) -> list[TaskRow]:
        """Tasks ordered by start, optionally of one session and/or still running."""
        where, args = [], []
        if session is not None:
            where.append("session = ?")
            args.append(session)
        if running_only:
            where.append("status = 'running'")
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self.db.execute(f"{_SELECT}{clause} ORDER BY started_at, id", args).fetchall()
        return [TaskRow(*r) for r in rows]

    def prune(self, ended_before: float) -> list[str]:
        """Delete finished tasks that ended before ``ended_before`` (notices and read
        offsets go with them); returns their IDs."""
        with self.transaction() as db:
            ids = [
                r[0]
                for r in db.execute(
                    "SELECT id FROM tasks WHERE status != 'running' AND ended_at < ?",
                    (ended_before,),
                )
            ]
            db.executemany("DELETE FROM tasks WHERE id = ?", [(i,) for i in ids])
        return ids

    def checkpoint(self) -> None:
        """Fold the WAL back into the database file and truncate it."""
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # --- notices ---------------------------------------------------------------------

    def pending_notices(self, session: str) -> list[TaskRow]:
        rows = self.db.execute(
            f"{_SELECT} WHERE id IN (SELECT task_id FROM notices "
            "WHERE session = ? AND delivered_at IS NULL) ORDER BY ended_at, id",
            (session,),
        ).fetchall()
        return [TaskRow(*r) for r in rows]

    def mark_delivered(self, session: str, task_ids: Sequence[str]) -> int:
        """Acknowledge notices; returns how many were still pending."""
        now = time.time()
        with self.transaction() as db:
            cur = db.executemany(
                "UPDATE notices SET delivered_at = ? "
                "WHERE session = ? AND task_id = ? AND delivered_at IS NULL",
                [(now, session, tid) for tid in task_ids],
            )
        return cur.rowcount

    # --- read offsets (TaskOutput) ---------------------------------------------------

    def read_offset(self, task_id: str, session: str) -> int:
        row = self.db.execute(
            "SELECT offset FROM read_offsets WHERE task_id = ? AND session = ?", (task_id, session)
        ).fetchone()
        return int(row[0]) if row else 0

    def set_read_offset(self, task_id: str, session: str, offset: int) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO read_offsets (task_id, session, offset) VALUES (?, ?, ?) "
                "ON CONFLICT (task_id, session) DO UPDATE SET offset = excluded.offset",
                (task_id, session, offset),
            )
