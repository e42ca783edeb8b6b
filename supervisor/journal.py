"""The task journal: SQLite in WAL mode, the supervisor its only writer (SPEC D1).

Every state change is one ``BEGIN IMMEDIATE`` transaction. The schema version lives in
``PRAGMA user_version`` and :data:`MIGRATIONS` upgrades older files in place. The journal
never stores environment values (SPEC X2).

A write the file system refuses (full, read-only, I/O error) is **held**, not lost: each
held write is the latest state of one thing (a task row, a notice, a delivery, a read
offset), kept in memory, seen by every read, and written with the next write or
:meth:`Journal.flush` once the disk takes it again. Only the start of a new task is
refused instead (:class:`StorageError`): nothing runs that could not be recorded.
"""

from __future__ import annotations

import copy
import errno
import functools
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from wave_bash.api.errors import StorageError
from wave_bash.api.states import BackgroundReason, EndReason, Owner, TaskStatus
from wave_bash.worker.files import gone_or_replaced

log = logging.getLogger(__name__)

STORAGE_ERRORS = frozenset(
    {"SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_BUSY"}
)
"""SQLite's primary result codes that mean "the journal does not take it now": a full or
read-only disk, or another process's write lock on it (the user's own `sqlite3` in a
transaction: a task's end was dropped for good, and it stayed `running`, a trial)."""
JOURNAL_LOCKED = "Its journal is locked by another process (database is locked)"
"""The problem said where another process holds the journal's write lock."""
BUSY_TIMEOUT = 0.25
"""Seconds a write waits for another process's lock before it is held and tried again
later (SQLite's default, 5 s, held the event loop that long per write: a trial)."""


def storage_problem(exc: BaseException) -> str | None:
    """What keeps the state dir from being written, if ``exc`` says so (else None)."""
    if isinstance(exc, sqlite3.Error):
        name = getattr(exc, "sqlite_errorname", "") or ""
        primary = "_".join(name.split("_")[:2])  # SQLITE_IOERR_WRITE → SQLITE_IOERR
        if primary not in STORAGE_ERRORS:
            return None
        if primary == "SQLITE_FULL":
            return "No space left on device"
        if primary == "SQLITE_BUSY":
            return JOURNAL_LOCKED
        return str(exc) + (_size_limit_note() if primary == "SQLITE_IOERR" else "")
    if isinstance(exc, OSError) and exc.errno in _STORAGE_ERRNOS:
        said = exc.strerror or str(exc)
        return said + (_size_limit_note() if exc.errno in (errno.EIO, errno.EFBIG) else "")
    return None


def _size_limit_note() -> str:
    """An I/O error's likely cause where this process may write no file past a size (a
    hard ``ulimit -f``, which it cannot raise: SQLite says "disk I/O error" as its WAL
    meets it, with the disk far from full, and nothing named it; a trial)."""
    try:
        import resource
    except ImportError:  # (Windows)
        return ""
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    if hard == resource.RLIM_INFINITY:
        return ""
    return (
        f" (maybe the file size limit: this supervisor may write no file past {hard} bytes,"
        " its hard `ulimit -f`; start it where that is higher)"
    )


MIN_FREE_BYTES = 64 * 1024
"""Less free space than this in the state dir counts as full (a journal page, a record)."""


def disk_problem(path: Path, *, new_files: bool = True) -> str | None:
    """Why files cannot be written under ``path`` now, from the file system's own figures:
    no space, or (``new_files``: where files are to be created) no inode left."""
    if not hasattr(os, "statvfs"):  # Windows
        return None
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return exc.strerror or str(exc)
    if st.f_flag & os.ST_RDONLY:
        return "Read-only file system"
    # root may use the blocks and inodes a file system keeps back (ext4's 5 %): the
    # figures free for anyone else would report a disk full where root's writes succeed.
    root = _real_root()
    free_bytes = (st.f_bfree if root else st.f_bavail) * st.f_frsize
    free_inodes = st.f_ffree if root else st.f_favail
    if free_bytes < MIN_FREE_BYTES:
        return "No space left on device"
    if new_files and st.f_files and free_inodes == 0:  # (`df` shows bytes free: a review)
        return "No space left on device (no free inodes)"
    return None


@functools.cache
def _real_root() -> bool:
    """Whether this process's user is root outside its user namespace too, as ext4
    requires of one that uses the blocks it keeps back (a rootless container's root,
    uid 0 mapped to another user, may not)."""
    euid = os.geteuid()
    try:
        with open("/proc/self/uid_map") as fh:
            ranges = [tuple(map(int, line.split())) for line in fh if line.strip()]
    except (OSError, ValueError):
        return euid == 0  # (no /proc: no user namespaces to be in)
    outside = next((o + euid - i for i, o, n in ranges if i <= euid < i + n), None)
    return euid == 0 and outside == 0


_STORAGE_ERRNOS = frozenset({28, 30, 122, 5, 27})
"""ENOSPC, EROFS, EDQUOT, EIO, EFBIG (a file size limit)."""


def storable(value: Any) -> Any:
    """``value`` as SQLite can hold it: its text is UTF-8, so text with the ``\\udcXX``
    of undecodable bytes (a path under a state dir named so, a command's directory) is
    kept as their bytes, a blob, which reads back as it was (:func:`readable`): stored
    as backslash escapes, a log's path led nowhere, and its output read as removed (a
    review). A lone surrogate no bytes stand for (JSON's ``"\\ud800"`` in a
    description) becomes its escape."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            try:
                return value.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                return value.encode("utf-8", "backslashreplace").decode()
    return value


def readable(value: Any) -> Any:
    """A value read back: the text :func:`storable` kept as bytes is text again."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


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

SCHEMA_V3 = """
ALTER TABLE notices ADD COLUMN claim TEXT;
ALTER TABLE notices ADD COLUMN claim_until REAL;
ALTER TABLE tasks ADD COLUMN request_key TEXT;
CREATE UNIQUE INDEX tasks_by_request_key ON tasks (request_key) WHERE request_key IS NOT NULL;
"""
"""v3: notices claimed by a reader until it confirms it showed them (or its lease ends);
the caller's key of the request that started a task, so a resent request starts
nothing twice."""

SCHEMA_V4 = """
ALTER TABLE tasks ADD COLUMN cpu_seconds REAL;
ALTER TABLE tasks ADD COLUMN peak_memory INTEGER;
"""
"""v4: what a task used (CPU time, peak memory), where cgroups count it."""

SCHEMA_V5 = """
ALTER TABLE tasks ADD COLUMN interactive INTEGER NOT NULL DEFAULT 0;
"""
"""v5: whether a task runs on a pseudo-terminal (SPEC P1)."""

SCHEMA_V6 = """
ALTER TABLE tasks ADD COLUMN permission TEXT;
ALTER TABLE tasks ADD COLUMN sandbox TEXT;
"""
"""v6: how running a task was allowed (JSON: decision, reason, rule, source) and the
sandbox it ran in (SPEC PM4, SB1)."""

SCHEMA_V7 = """
ALTER TABLE tasks ADD COLUMN sandbox_absent TEXT;
"""
"""v7: the protected files a sandboxed task's start found missing (JSON list), so that the
supervisor that sees it end moves aside those it made, whichever supervisor started it."""

SCHEMA_V8 = """
ALTER TABLE tasks ADD COLUMN leftovers TEXT;
"""
"""v8: without cgroups, the processes an ended task left running (JSON ``{pid: start
ticks}``), so that the next supervisor still shows and stops them."""

SCHEMA_V9 = """
ALTER TABLE tasks ADD COLUMN storage_note TEXT;
"""
"""v9: what a full state dir did to a background task's record as it ended (its notice
says it: the only word of it a background task's caller gets, DF4)."""

SCHEMA_V10 = """
ALTER TABLE tasks ADD COLUMN pruning INTEGER NOT NULL DEFAULT 0;
"""
"""v10: tasks a prune has begun to delete (their files first): the next prune finishes
them whatever their age, where a prune cut short left them listed with their logs gone,
read as removed outside wave-bash, until the retention ran out again."""

SCHEMA_V11 = """
ALTER TABLE tasks ADD COLUMN sandbox_scope TEXT;
"""
"""v11: the workspace and network of the sandbox a task runs in, which a caller under a
sandbox is measured against (SB1c): after a supervisor restart too, where only its mode
was known and a looser task passed (a review)."""

MIGRATIONS: Sequence[str] = (
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6, SCHEMA_V7, SCHEMA_V8,
    SCHEMA_V9, SCHEMA_V10, SCHEMA_V11,
)  # fmt: skip
"""``MIGRATIONS[n]`` brings a journal from version ``n`` to ``n + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)

CALLER_HOLD = "caller"
"""The claim a notice is made with while its foreground caller may come back for the
result: no reader claims it before its ``claim_until``; a claim's lease, durable."""


@dataclass
class TaskRow:
    """One row of ``tasks``."""

    id: str
    command: str
    description: str | None
    session: str
    cwd: str
    shell: str | None
    status: TaskStatus
    owner: Owner
    background_reason: BackgroundReason | None
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
    end_reason: EndReason | None = None
    request_key: str | None = None
    cpu_seconds: float | None = None
    peak_memory: int | None = None
    interactive: bool = False
    permission: str | None = None
    """JSON of the permission decision (no environment values)."""
    sandbox: str | None = None
    sandbox_absent: str | None = None
    """JSON list of protected files missing as the sandboxed task started (see
    ``worker.Sources.absent``): one it made is moved aside as it ends."""
    leftovers: str | None = None
    """Without cgroups: JSON ``{pid: start ticks}`` of the processes the ended task left
    running, while some may (``supervisor.tasks.TaskManager.adopt_leftovers``)."""
    storage_note: str | None = None
    """What a full state dir did to the record of a background task as it ended."""
    sandbox_scope: str | None = None
    """JSON ``{"workspace": …, "network": …}`` of the sandbox it runs in (SB1c)."""

    def __post_init__(self) -> None:
        """Rows read back hold the states' values: make them the enums again, and text
        kept as bytes text (:func:`storable`)."""
        for name, value in vars(self).items():
            if isinstance(value, bytes):
                setattr(self, name, readable(value))
        self.interactive = bool(self.interactive)
        self.status = TaskStatus(self.status)
        self.owner = Owner(self.owner)
        if self.background_reason is not None:
            self.background_reason = BackgroundReason(self.background_reason)
        if self.end_reason is not None:
            self.end_reason = EndReason(self.end_reason)

    @property
    def log_gone(self) -> bool:
        """Its log was removed or replaced outside wave-bash (B6d); one that never
        started had none."""
        return self.end_reason is not EndReason.NOT_STARTED and gone_or_replaced(self.output_path)


_COLUMNS = tuple(f.name for f in fields(TaskRow))
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM tasks"
_ASSIGN = ", ".join(f"{name} = ?" for name in _COLUMNS[1:])


_A_TASKS = ("row", "notice", "delivered", "offset")
"""The kinds of held writes that are one task's (their key's second item is its ID)."""


class Journal:
    """Typed access to the journal file; one instance per supervisor."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
        )
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # durable across process crashes
        self.db.execute("PRAGMA foreign_keys=ON")
        self._held: dict[Hashable, Callable[[sqlite3.Connection], object]] = {}
        self._held_rows: dict[str, TaskRow] = {}
        self._held_notices: dict[str, tuple[str, bool]] = {}
        """task ID → (session, delivered) of notices not written yet."""
        self._held_offsets: dict[tuple[str, str], int] = {}
        self._pruning_unmarked: set[str] = set()
        """Tasks a prune is deleting whose mark the disk refused (:meth:`mark_pruning`):
        their files may be gone already, so they read as being deleted all the same."""
        self.problem: str | None = None
        """Why writes are held (None: they are not)."""
        self._schedule: Callable[[Callable[[], object]], object] | None = None
        self._flush_scheduled = False
        self.migrate()

    def close(self) -> None:
        self.flush()
        if self._held:
            log.error("closing the journal with %d write(s) it could not make", len(self._held))
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any error, the commit's too)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                with suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
            raise

    # --- held writes ----------------------------------------------------------------

    @property
    def held(self) -> int:
        """How many writes wait for the disk to take them (not those of the current
        round, which are written at its end)."""
        return len(self._held) if self.problem else 0

    def defer_writes(self, schedule: Callable[[Callable[[], object]], object]) -> None:
        """Group commit: writes wait for ``schedule`` to run the flush, or for
        :meth:`write_deferred` (the supervisor's come once a reply has gone out, see
        ``supervisor.tasks.AFTER_REPLIES``), and go in one transaction; reads see them at
        once. 1000 tasks stopped together cost one commit, not 2000."""
        self._schedule = schedule

    def _write(self, key: Hashable, apply: Callable[[sqlite3.Connection], object]) -> None:
        """Make one write, after every held one; hold it if the disk refuses (as the last:
        one replacing an earlier of its key kept that one's place, before writes made
        since, and an end's notice held then was marked delivered by a prompt's: a
        review)."""
        self._held.pop(key, None)
        self._held[key] = apply
        if self._schedule is not None and self.problem is None:
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self._schedule(self._scheduled_flush)
            return
        try:
            self._write_held()
        except sqlite3.Error as exc:
            problem = storage_problem(exc)
            if problem is None:
                del self._held[key]
                raise
            if not self.problem:
                log.error("journal writes held in memory (%s): %s", problem, exc)
            self.problem = problem

    def _write_held(self) -> None:
        """Write every held write in one transaction. One that fails for another reason
        than the disk (its task was pruned meanwhile, a bug) is logged and dropped, the
        others written one by one: a bad write must never block the journal for good."""
        try:
            with self.transaction() as db:
                for apply in self._held.values():
                    apply(db)
        except sqlite3.Error as exc:
            if storage_problem(exc) is not None:
                raise
            for key, apply in list(self._held.items()):
                try:
                    with self.transaction() as db:
                        apply(db)
                except sqlite3.Error as item_exc:
                    if storage_problem(item_exc) is not None:
                        raise
                    log.error("dropping journal write %s that cannot be made: %s", key, item_exc)
                del self._held[key]
        self._held.clear()
        self._held_rows.clear()
        self._held_notices.clear()
        self._held_offsets.clear()
        if self.problem:
            log.warning("journal writes resumed (%s before)", self.problem)
        self.problem = None

    def write_deferred(self) -> None:
        """Commit the deferred writes now, if any wait (see :meth:`defer_writes`)."""
        if self._flush_scheduled:
            self._scheduled_flush()

    def _scheduled_flush(self) -> None:
        if not self._flush_scheduled:  # written already, by write_deferred
            return
        self._flush_scheduled = False
        try:
            self._write_held()
        except sqlite3.Error as exc:  # the disk refuses: held until it takes them
            if not self.problem:
                log.error("journal writes held in memory (%s): %s", storage_problem(exc), exc)
            self.problem = storage_problem(exc)

    def flush(self) -> bool:
        """Write what was held; returns whether nothing is held any more."""
        if self._held:
            with suppress(sqlite3.Error):  # the disk still refuses (anything else is dropped)
                self._write_held()
        return not self._held

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
        """Journal a new task; refused (never held) when the disk does not take it.

        Raises:
            StorageError: the disk is full or read-only (the task must not run).
        """
        values = tuple(storable(getattr(row, name)) for name in _COLUMNS)
        marks = ", ".join("?" * len(_COLUMNS))
        try:
            self.flush()
            with self.transaction() as db:
                db.execute(f"INSERT INTO tasks ({', '.join(_COLUMNS)}) VALUES ({marks})", values)
        except sqlite3.Error as exc:
            problem = storage_problem(exc)
            if problem is None:
                raise
            raise StorageError(problem) from None

    def delete_task(self, task_id: str) -> None:
        """Remove a task that never ran (its spawn failed)."""
        with self.transaction() as db:
            db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))

    def save_row(self, row: TaskRow) -> None:
        """Write every column of a journaled task (owner change, identity, end)."""
        snapshot = copy.copy(row)  # (no __init__: 2 per task's end)
        values = [storable(getattr(snapshot, name)) for name in _COLUMNS[1:]]

        def apply(db: sqlite3.Connection) -> None:
            db.execute(f"UPDATE tasks SET {_ASSIGN} WHERE id = ?", (*values, snapshot.id))

        self._held_rows[row.id] = snapshot
        self._write(("row", row.id), apply)

    def record_end_reasons(self, rows: Sequence[TaskRow]) -> None:
        """Write the end reason of running tasks (a stop's intent, before its signals):
        one statement for them all (a stop of 1000 tasks wrote each whole row)."""
        values = [(storable(row.end_reason), row.id) for row in rows]
        self._write(
            ("end_reasons", tuple(row.id for row in rows)),
            lambda db: db.executemany("UPDATE tasks SET end_reason = ? WHERE id = ?", values),
        )

    def finish_task(
        self,
        row: TaskRow,
        notice_session: str | None,
        hold_until: float | None = None,
        prompted: bool = False,
    ) -> None:
        """Record the end of a task (with its identity, if not journaled yet) and, for a
        background task, its pending notice; ``hold_until`` (wall clock): no reader claims
        it before then (its foreground caller, cut off, may come back for the result).
        ``prompted``: it may have a prompt's notice (:meth:`post_prompt_notice`), which
        a foreground end, its caller back, takes away (it read as a second end's: a
        review)."""
        self.save_row(row)
        if notice_session is None and prompted:
            self._held_notices[row.id] = (row.session, True)  # (gone for readers at once)
            task_id = row.id
            self._write(
                ("notice", task_id),
                lambda db: db.execute("DELETE FROM notices WHERE task_id = ?", (task_id,)),
            )
        if notice_session is not None:  # (after a prompt's, pending again: see below)
            self._held_notices[row.id] = (notice_session, False)
            hold = (CALLER_HOLD, hold_until) if hold_until is not None else (None, None)
            values = (row.id, notice_session, row.ended_at, *hold)
            self._write(
                ("notice", row.id),
                lambda db: db.execute(
                    "INSERT INTO notices (task_id, session, created_at, claim, claim_until) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (task_id) DO UPDATE SET "
                    "session = excluded.session, created_at = excluded.created_at, "
                    "claim = excluded.claim, claim_until = excluded.claim_until, "
                    "delivered_at = NULL WHERE notices.created_at < excluded.created_at",
                    values,
                ),
            )

    def post_prompt_notice(self, row: TaskRow, again: bool = False) -> None:
        """The notice of a running interactive task whose caller went away, waiting for
        input (ND5): its one notice before its end's, which takes its place (pending
        again, whether this one was delivered or not; a claim on this one settles
        nothing of it). Posted once: never again once there (a supervisor replaced),
        unless ``again``: the prompt a caller back got never reached it after all (a
        review), pending again if it is still the prompt's."""
        held = self._held_notices.get(row.id)
        if held is not None and not (again and held[1]):
            return
        self._held_notices[row.id] = (row.session, False)
        values = (row.id, row.session, again)
        self._write(  # (made at 0: any end is newer, whatever the clocks say)
            ("notice", row.id),
            lambda db: db.execute(
                "INSERT INTO notices (task_id, session, created_at) VALUES (?, ?, 0) "
                "ON CONFLICT (task_id) DO UPDATE SET delivered_at = NULL, claim = NULL, "
                "claim_until = NULL WHERE notices.created_at = 0 AND ?",
                values,
            ),
        )

    def record_identities(self, rows: Sequence[TaskRow]) -> None:
        """Journal the pid and start time of running tasks."""
        for row in rows:
            self.save_row(row)

    def get(self, task_id: str) -> TaskRow | None:
        """The task's row; None also for one a prune is deleting (:meth:`mark_pruning`):
        its files may be gone already (a read of one read as a log removed outside
        wave-bash: a trial)."""
        held = self._held_rows.get(task_id)
        if task_id in self._pruning_unmarked:
            return None
        if held is not None:
            return copy.copy(held)
        row = self.db.execute(f"{_SELECT} WHERE id = ? AND pruning = 0", (task_id,)).fetchone()
        return TaskRow(*row) if row else None

    def with_leftovers(self) -> list[TaskRow]:
        """Ended tasks that left processes running, without cgroups (rare: no index)."""
        rows = self.db.execute(f"{_SELECT} WHERE leftovers IS NOT NULL").fetchall()
        return [TaskRow(*row) for row in rows]

    def exists(self, task_id: str) -> bool:
        return (
            self.db.execute("SELECT 1 FROM tasks WHERE id = ?", (task_id,)).fetchone() is not None
        )

    def tasks(self, session: str | None = None, running_only: bool = False) -> list[TaskRow]:
        """Tasks ordered by start, optionally of one session and/or still running; not
        those a prune is deleting."""
        where, args = ["pruning = 0"], []
        if session is not None:
            where.append("session = ?")
            args.append(session)
        if running_only:
            where.append(f"status = '{TaskStatus.RUNNING}'")
        clause = f" WHERE {' AND '.join(where)}"
        rows = self.db.execute(f"{_SELECT}{clause} ORDER BY started_at, id", args).fetchall()
        found = [
            self._held_rows.get(r[0]) or TaskRow(*r)
            for r in rows
            if r[0] not in self._pruning_unmarked
        ]
        if running_only and self._held_rows:
            found = [r for r in found if r.status is TaskStatus.RUNNING]
        return found

    def prunable(self, ended_before: float, undelivered_before: float | None = None) -> list[str]:
        """Finished tasks that ended before ``ended_before``, and those a prune began to
        delete (:meth:`mark_pruning`); not one whose notice is still pending unless it
        ended before ``undelivered_before`` (default: ``ended_before``). A task whose row
        waits for the disk counts as that row says: on a full disk, the one that filled it
        ended last, and its end is held (a prune, the remedy, left it: a trial)."""
        self.flush()
        undelivered_before = ended_before if undelivered_before is None else undelivered_before
        found = [
            r[0]
            for r in self.db.execute(
                f"SELECT id FROM tasks WHERE status != '{TaskStatus.RUNNING}' AND (pruning = 1"
                " OR ended_at < ? AND (ended_at < ? OR id NOT IN"
                " (SELECT task_id FROM notices WHERE delivered_at IS NULL)))",
                (ended_before, undelivered_before),
            )
            if r[0] not in self._held_rows
        ]
        for row in self._held_rows.values():
            ended_at = row.ended_at
            if row.status is TaskStatus.RUNNING or ended_at is None or ended_at >= ended_before:
                continue
            if ended_at < undelivered_before or not self._notice_pending(row.id):
                found.append(row.id)
        return found + sorted(self._pruning_unmarked - set(found))

    def _notice_pending(self, task_id: str) -> bool:
        held = self._held_notices.get(task_id)
        if held is not None:
            return not held[1]
        return bool(
            self.db.execute(
                "SELECT 1 FROM notices WHERE task_id = ? AND delivered_at IS NULL", (task_id,)
            ).fetchone()
        )

    def mark_pruning(self, task_ids: list[str]) -> None:
        """Record, before their files go, that these finished tasks are being deleted:
        committed, or held in memory where the disk refuses it (a prune is the remedy for
        a full disk: their files go all the same, and a cut prune's rows read as "removed
        outside wave-bash", a trial); raised for any other error (nothing is removed)."""
        # (a row whose end waits for the disk, or for the round's commit, says "running"
        # in the file, where no mark takes: marked in memory, as it ended there; a CI run)
        self._pruning_unmarked.update(i for i in task_ids if i in self._held_rows)
        try:
            with self.transaction() as db:
                db.executemany(
                    f"UPDATE tasks SET pruning = 1 WHERE id = ? AND status != '{TaskStatus.RUNNING}'",
                    [(i,) for i in task_ids],
                )
        except sqlite3.Error as exc:
            if storage_problem(exc) is None:
                raise
            log.warning("pruning with the rows' mark held in memory: %s", exc)
            self._pruning_unmarked.update(task_ids)

    def delete_tasks(self, task_ids: list[str]) -> list[str]:
        """Delete these finished tasks (notices and read offsets go with them); returns
        those deleted (not one that runs again meanwhile). Their held writes go too."""
        held = {i for i in task_ids if i in self._held_rows}  # (their rows say "running")
        ended = [i for i in held if self._held_rows[i].status is not TaskStatus.RUNNING]
        ids = [i for i in task_ids if i not in held]
        with self.transaction() as db:
            db.executemany(
                f"DELETE FROM tasks WHERE id = ? AND status != '{TaskStatus.RUNNING}'",
                [(i,) for i in ids],
            )
            db.executemany("DELETE FROM tasks WHERE id = ?", [(i,) for i in ended])
        ids += ended
        gone = set(ids)
        self._pruning_unmarked -= gone
        for key in [
            k for k in self._held if isinstance(k, tuple) and k[0] in _A_TASKS and k[1] in gone
        ]:
            del self._held[key]
        for task_id in gone:
            self._held_rows.pop(task_id, None)
            self._held_notices.pop(task_id, None)
        for offset in [k for k in self._held_offsets if k[0] in gone]:
            del self._held_offsets[offset]
        if self.problem:  # (the disk took the deletion: the others now, and a status that
            with suppress(sqlite3.Error):  # said it was full for as long as none came, a
                self._write_held()  # trial)
        return ids

    def undelivered_ended_before(self, ended_before: float) -> list[str]:
        """The finished tasks that ended before ``ended_before`` and still have a notice
        no session has read, those held in memory too (DF2: a `gc` on a full disk counted
        none of them, the ends that disk held; a trial)."""
        found = {
            row[0]
            for row in self.db.execute(
                "SELECT id FROM tasks WHERE ended_at < ? AND id IN"
                " (SELECT task_id FROM notices WHERE delivered_at IS NULL)",
                (ended_before,),
            )
        }
        for task_id, (_, delivered) in self._held_notices.items():
            row = self.get(task_id)
            if delivered or row is None or row.ended_at is None or row.ended_at >= ended_before:
                found.discard(task_id)
            else:
                found.add(task_id)
        return sorted(found)

    def sessions(self) -> set[str]:
        """The sessions that have a task in the journal."""
        return {r[0] for r in self.db.execute("SELECT DISTINCT session FROM tasks")}

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
        found = {r[0]: self._held_rows.get(r[0]) or TaskRow(*r) for r in rows}
        for task_id, (notice_session, delivered) in self._held_notices.items():
            row = self.get(task_id)
            if notice_session == session and row is not None:
                found[task_id] = row
            if delivered:
                found.pop(task_id, None)
        return sorted(found.values(), key=lambda r: (r.ended_at or 0, r.id))

    def by_request_key(self, key: str) -> TaskRow | None:
        """The task a request with this key started, if any."""
        row = self.db.execute(f"{_SELECT} WHERE request_key = ?", (key,)).fetchone()
        return self.get(row[0]) if row else None

    def claim_notices(
        self,
        session: str,
        claim: str,
        lease: float,
        *,
        deliver: bool = False,
        limit: int | None = None,
    ) -> tuple[list[TaskRow], int]:
        """Atomically take the session's pending notices that nobody holds (or whose
        holder's lease ran out, or ``claim`` holds already: a claim sent again) for
        ``claim``: concurrent readers never get the same one. With ``deliver`` they are
        marked delivered in the same transaction. With ``limit``, the oldest so many;
        also returns how many others could have been taken.

        While the disk refuses writes a claim cannot be recorded: nothing is handed out
        then, and the notices wait for the disk.
        """
        if not self.flush():
            return [], 0
        now = time.time()
        try:
            with self.transaction() as db:
                ids = [
                    r[0]
                    for r in db.execute(
                        "SELECT task_id FROM notices WHERE session = ? AND delivered_at IS NULL "
                        "AND (claim IS NULL OR claim_until < ? OR claim = ?) AND NOT EXISTS "
                        "(SELECT 1 FROM tasks WHERE id = task_id AND pruning = 1) "  # (going)
                        "ORDER BY claim = ? DESC, created_at, task_id",  # (held first: sent again)
                        (session, now, claim, claim),
                    )
                ]
                more = max(0, len(ids) - limit) if limit is not None else 0
                ids = ids[:limit] if limit is not None else ids
                db.executemany(
                    "UPDATE notices SET claim = ?, claim_until = ?, delivered_at = ? "
                    "WHERE task_id = ?",
                    [(claim, now + lease, now if deliver else None, task_id) for task_id in ids],
                )
        except sqlite3.Error as exc:
            if storage_problem(exc) is None:
                raise
            return [], 0
        rows = [row for task_id in ids if (row := self.get(task_id)) is not None]
        return sorted(rows, key=lambda r: (r.ended_at or 0, r.id)), more

    def settle_claim(self, claim: str, delivered: bool, shown_too: bool = False) -> int:
        """The holder of ``claim`` showed its notices (``delivered``: never again) or gave
        them back (pending again for the next reader; ``shown_too``: also those it had
        confirmed as shown, which never were); returns how many. The supervisor's own
        hold (:data:`CALLER_HOLD`) is no reader's to settle."""
        if claim == CALLER_HOLD:
            return 0
        which = "" if shown_too and not delivered else " AND delivered_at IS NULL"
        if delivered:
            sql = "UPDATE notices SET delivered_at = ? WHERE claim = ? AND delivered_at IS NULL"
        else:
            sql = (
                "UPDATE notices SET claim = NULL, claim_until = NULL, delivered_at = NULL "
                f"WHERE claim = ?{which}"
            )
        args = (time.time(), claim) if delivered else (claim,)
        (count,) = self.db.execute(
            f"SELECT count(*) FROM notices WHERE claim = ?{which}", (claim,)
        ).fetchone()
        # (each settling a write of its own, in order: a release replaced by the claim's
        # confirmation held in the same flush had its notices marked delivered, lost: a
        # result written, then cancelled, releases after its confirmation may be sent)
        self._write(("claim", claim, delivered), lambda db: db.execute(sql, args))
        return int(count)

    def mark_delivered(self, session: str, task_ids: Sequence[str]) -> int:
        """Acknowledge notices; returns how many were still pending."""
        pending = {r.id for r in self.pending_notices(session)} & set(task_ids)
        now = time.time()
        for task_id in pending:
            self._held_notices[task_id] = (session, True)
            self._write(("delivered", task_id), _deliver(now, session, task_id))
        return len(pending)

    # --- read offsets (TaskOutput) ---------------------------------------------------

    def read_offset(self, task_id: str, session: str) -> int:
        held = self._held_offsets.get((task_id, session))
        if held is not None:
            return held
        row = self.db.execute(
            "SELECT offset FROM read_offsets WHERE task_id = ? AND session = ?", (task_id, session)
        ).fetchone()
        return int(row[0]) if row else 0

    def set_read_offset(self, task_id: str, session: str, offset: int) -> None:
        self._held_offsets[(task_id, session)] = offset
        self._write(
            ("offset", task_id, session),
            lambda db: db.execute(
                "INSERT INTO read_offsets (task_id, session, offset) VALUES (?, ?, ?) "
                "ON CONFLICT (task_id, session) DO UPDATE SET offset = excluded.offset",
                (task_id, session, offset),
            ),
        )


def _deliver(now: float, session: str, task_id: str) -> Callable[[sqlite3.Connection], object]:
    def apply(db: sqlite3.Connection) -> object:
        return db.execute(
            "UPDATE notices SET delivered_at = ? "
            "WHERE session = ? AND task_id = ? AND delivered_at IS NULL",
            (now, session, task_id),
        )

    return apply
