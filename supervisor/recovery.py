"""Start-up recovery: a sound journal, and every task an earlier supervisor left (SPEC D3–D5).

The journal is the index, the task folder the truth. Each task has ``tasks/<id>.json``
(what was asked, never the environment; created empty with its monitor, filled just
before it is journaled), the log, and the monitor's exit record. A corrupt journal is
moved aside, never silently replaced, and the index is rebuilt from those files.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import sqlite3
import time
from pathlib import Path

from wave_bash.api.errors import StorageError
from wave_bash.api.paths import StateLayout
from wave_bash.api.states import BackgroundReason, Owner, TaskStatus
from wave_bash.worker import TaskFiles, open_regular, read_exit_record

from .identity import boot_id, start_ticks
from .journal import Journal, TaskRow, disk_problem, storage_problem
from .processes import children_running, listed_leftovers
from .tasks import TaskManager, find_monitors, leftovers_text, status_for, stop_reason_marked

log = logging.getLogger(__name__)


DAMAGE = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})
"""SQLite's primary result codes that mean the journal is damaged (not that the disk
refuses it now: full, read-only, an I/O error, which leave it as it is)."""


def journal_damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the journal is damaged (:data:`DAMAGE`)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return isinstance(exc, sqlite3.DatabaseError) and "_".join(name.split("_")[:2]) in DAMAGE


def open_journal(layout: StateLayout) -> Journal:
    """Open the journal; quarantine it when it is damaged, and build the index from the
    task files when it is damaged or gone.

    A sound journal takes in the tasks whose files it has no row for: its WAL lost or
    cut short passes ``quick_check`` and forgot them, running ones too, out of any
    TaskStop's reach (a trial).

    Raises:
        StorageError: the journal cannot be opened or built for another reason (a full or
            read-only disk, an I/O error): it is left as it is, for a later start.
    """
    path = layout.journal
    marker = damage_marker(layout)
    if not path.exists():
        built = _build(layout, None)
        _forget(marker)
        return built
    try:
        # An empty file is no journal (one is built aside and renamed in place, its
        # header written): SQLite takes it for a valid empty database, and every task
        # was forgotten (a review truncated it). One a supervisor found damaged as it ran
        # is, whatever `quick_check` says (it compares no index with its table: a stale
        # index entry passed it, and every start exited again, a review).
        found = ""
        with contextlib.suppress(OSError):  # (none, or not a file: as if none)
            found = marker.read_text(errors="replace").strip()
        empty = path.stat().st_size == 0
        journal = Journal(path) if not (empty or found) else None
        problem = journal.quick_check() if journal is not None else (found or "an empty file")
    except sqlite3.DatabaseError as exc:
        if not journal_damaged(exc):
            raise StorageError(f"cannot open {path}: {_why(path, exc)}") from None
        problem = str(exc)
    else:
        if problem == "ok" and journal is not None:
            _take_in_missing(journal, layout.tasks)
            return journal
        if journal is not None:
            journal.close()
    last_write = max(  # (no reader had a notice of a task that ended after it; not the
        (p.stat().st_mtime for p in _database(path)[:2] if p.exists()),  # shared-memory
        default=None,  # index's, which opening it writes)
    )
    stamp = _aside_stamp(path)
    for damaged, aside in zip(
        _database(path), _database(path.with_name(f"{path.name}.corrupt-{stamp}")), strict=True
    ):
        if damaged.exists():
            damaged.rename(aside)
    log.error(
        "journal %s is corrupt (%s): moved aside as %s.corrupt-%s; rebuilding the index from %s",
        path, problem, path.name, stamp, layout.tasks,
    )  # fmt: skip
    built = _build(layout, last_write)
    _forget(marker)
    return built


def _aside_stamp(path: Path) -> str:
    """The time for the name of a damaged journal moved aside, with a count where one
    moved aside in the same second has it: `rename` replaced that one (D5 keeps each,
    and a `-wal` of the first was paired with the second: a helper's trial)."""
    stamp = base = time.strftime("%Y%m%dT%H%M%S")
    count = 1
    while any(
        os.path.lexists(p) for p in _database(path.with_name(f"{path.name}.corrupt-{stamp}"))
    ):
        count += 1
        stamp = f"{base}-{count}"
    return stamp


def _take_in_missing(journal: Journal, tasks_dir: Path) -> None:
    """Rows for the tasks whose files a sound journal has none for (its WAL lost); a
    background one's end gets its notice (what was delivered of it went with the rows).
    A disk that refuses them leaves them to the next start."""
    try:  # (a task that started before the main file's last write, its last checkpoint,
        # had its row there: one missing was deleted on purpose, a prune whose unlink of
        # its files failed, and comes back with no notice at each start: a review)
        checkpointed = journal.path.stat().st_mtime
        found = rebuild(journal, tasks_dir, unseen_after=0.0, started_after=checkpointed)
    except (StorageError, sqlite3.Error, OSError) as exc:
        log.warning("cannot take in tasks the journal lacks now: %s", exc)
        return
    if found:
        log.warning("the journal had no row for %d task(s) found in %s (a lost WAL?): "
                    "taken in from their files", found, tasks_dir)  # fmt: skip


def _forget(marker: Path) -> None:
    """Remove the damage marker once the journal is rebuilt."""
    with contextlib.suppress(OSError):
        marker.unlink(missing_ok=True)


def damage_marker(layout: StateLayout) -> Path:
    """The file a supervisor that found its journal damaged as it ran leaves, saying why,
    for the next start to move the journal aside and rebuild it."""
    return layout.journal.with_name(f"{layout.journal.name}.damaged")


def mark_damaged(layout: StateLayout, exc: BaseException) -> None:
    """Leave :func:`damage_marker` (best effort: with no marker, the next start checks)."""
    with contextlib.suppress(OSError):
        damage_marker(layout).write_text(f"{exc} (found as the supervisor ran)\n")


def _database(path: Path) -> list[Path]:
    """A SQLite database's files: itself, its WAL and its shared-memory index."""
    return [path, Path(f"{path}-wal"), Path(f"{path}-shm")]


def _why(path: Path, exc: sqlite3.Error) -> str:
    """What keeps ``path`` from being written, in the file system's words where it says
    (SQLite reports a full disk as a "disk I/O error" when it cannot grow its files)."""
    return disk_problem(path.parent) or storage_problem(exc) or str(exc)


def _build(layout: StateLayout, unseen_after: float | None) -> Journal:
    """A journal indexing the task files, built beside its place and moved there whole: a
    build the disk cuts short leaves no journal, so the next start builds it again (an
    empty one left in place would pass its check, every task and notice lost). With no
    task file to index it is made in place (a first start: 6 ms sooner).
    ``unseen_after``: see :func:`rebuild`."""
    path = layout.journal
    building = path.with_name(f"{path.name}.building")
    files = _database(building)
    for leftover in files:  # of a build cut short
        leftover.unlink(missing_ok=True)
    for stale in _database(path)[1:]:
        stale.unlink(missing_ok=True)  # of a journal deleted: replayed over the new one
    if not TaskFiles.recorded(layout.tasks):  # nothing to index: made in place
        try:
            return Journal(path)
        except sqlite3.Error as exc:
            for made in _database(path):
                made.unlink(missing_ok=True)  # (there was none: see open_journal)
            raise StorageError(f"cannot create {path}: {_why(path, exc)}") from None
    try:
        journal = Journal(building)
        try:
            rebuild(journal, layout.tasks, unseen_after)
            journal.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            journal.close()
        os.replace(building, path)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot build {path}: {_why(path, exc)}") from None
    except StorageError as exc:
        raise StorageError(f"cannot build {path}: {exc}") from None
    finally:
        for leftover in files:
            leftover.unlink(missing_ok=True)
    return Journal(path)


def rebuild(
    journal: Journal,
    tasks_dir: Path,
    unseen_after: float | None,
    started_after: float | None = None,
) -> int:
    """Recreate journal rows from the task files that have none; returns how many.

    Ended tasks come back with their recorded exit code. A background task that ended
    at or after ``unseen_after`` (the last write of the journal replaced: no reader can have had
    its notice since) gets a notice; one that ended before (or with None: a journal
    deleted, whose last write is unknown) none, as it may have been delivered (after a
    rebuild, tasks that ended while no supervisor ran were never announced: a trial).
    Unfinished ones come back running, for :func:`recover` to re-adopt by their tag or to
    record as lost. With ``started_after``, only the tasks that started after it.
    """
    known = {f.name for f in dataclasses.fields(TaskRow)}
    count = 0
    paths = [path for path in TaskFiles.recorded(tasks_dir) if not journal.exists(path.stem)]
    lingering: dict[str, int] | None = None  # (looked for once, if an ended task needs it)
    for path in paths:
        task_id = path.stem
        try:
            text: bytes | None
            if path.suffix == TaskFiles.META:  # an earlier version's record file
                with open_regular(path) as fh:
                    text = fh.read()
            else:
                text = read_exit_record(path).record
            if not text:  # a standby's, whose command never came (or an old task's .exit)
                continue
            fields = json.loads(text)
            row = TaskRow(**{k: v for k, v in fields.items() if k in known})
            if started_after is not None and row.started_at <= started_after:
                continue
        except (OSError, ValueError, TypeError) as exc:
            log.warning("cannot rebuild task from %s: %s", path, exc)
            continue
        # Its own ID and files, whatever its record says (no record names another's).
        files = TaskFiles.for_task(tasks_dir, task_id, separate_stderr=row.err_path is not None)
        row.id, row.output_path = task_id, str(files.log)
        row.err_path = str(files.err_log) if files.err_log else None
        exit_file = files.exit
        row.pid = row.pid_start = None
        row.status, row.exit_code, row.ended_at = TaskStatus.RUNNING, None, None
        record = read_exit_record(exit_file)
        row.end_reason = stop_reason_marked(record)  # (a stop's, marked before its signal)
        code = record.status
        if code is not None:
            row.status, row.exit_code = status_for(code, row.end_reason is not None), code
            row.ended_at = exit_file.stat().st_mtime
            # Its monitor may linger, a child subreaper, while what it left runs (those
            # are its children, not init's): found by its tag, as a running task's is.
            if lingering is None:
                lingering = find_monitors({path.stem for path in paths})
            monitor = lingering.get(task_id)
            if monitor is not None and row.boot_id == boot_id():
                row.pid, row.pid_start = monitor, start_ticks(monitor)
            left = listed_leftovers(files.left, task_id, row.started_at, (), monitor)
            if monitor is not None and row.pid is not None:  # (what it holds now: those it
                left = left or children_running(monitor)  # listed may have moved on, a trial)
            row.leftovers = leftovers_text(left)  # (taken up again: adopt_leftovers)
        # (at its last write too: the clock's tick held both, a CI run; a notice said
        # twice is better than none, D5)
        unseen = unseen_after is not None and (row.ended_at or 0) >= unseen_after
        rebuilt = started_after is None  # (not the take-in of rows a lost WAL held, where
        # every end counts as unseen: each foreground result since the last checkpoint,
        # long shown, came again as a notice, a review)
        if code is not None and unseen and rebuilt and row.owner is Owner.FOREGROUND:
            # Its record says foreground as it started; it may have moved to the
            # background since (its timeout, Ctrl+B), its caller told a notice would come
            # (none did, a trial): its end after the journal's last write reached no
            # caller that is known, and is announced, as a lost caller's is (at least once:
            # a result that did reach it is said twice, D5).
            row.owner, row.background_reason = Owner.BACKGROUND, BackgroundReason.CALLER_LOST
            row.owner_changed_at = row.ended_at
        journal.insert_task(row)
        if code is not None and unseen and row.owner is Owner.BACKGROUND:
            journal.finish_task(row, row.session)
        count += 1
    log.info("rebuilt %d task(s) from %s", count, tasks_dir)
    return count


def recover(tasks: TaskManager, attach_grace: float = 10.0) -> None:
    """Re-adopt tasks an earlier supervisor left running, or record how they ended.

    A re-adopted foreground task waits ``attach_grace`` seconds for its caller."""
    rows = tasks.journal.tasks(running_only=True)
    monitors = find_monitors({r.id for r in rows if r.pid_start is None})
    for row in rows:
        task = tasks.adopt(row, monitors.get(row.id), attach_grace)
        log.info("task %s %s", row.id, "re-adopted" if task else f"ended meanwhile: {row.status}")
    tasks.flush_identities()
