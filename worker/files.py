"""A task's files in ``tasks/``: their names are known here and nowhere else."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, ClassVar

FINAL_DIR_LIMIT = 64 << 10
"""Bytes of a ``.cwd`` read at most (a directory is at most 4 KiB long on Linux)."""


SHORT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
"""The errors of an open that finds a file there, unread for want of a descriptor (it is
not gone)."""


class NotRegularFileError(OSError):
    """A file a command could write that is no regular file (a FIFO, a directory, a
    device put in its place)."""


def open_regular(
    path: str | os.PathLike[str], *, follow: bool = False, buffering: int = -1
) -> BinaryIO:
    """A file a command could write (a task's files, a workspace's git files), opened for
    reading only when it is a regular file: never waiting (a FIFO planted there would
    hold the reader, the supervisor's event loop, until someone writes to it) and, unless
    ``follow``, never through a link.

    Raises:
        OSError: it cannot be opened; :class:`NotRegularFileError`: it is no regular file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = _open_with_spare(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file", os.fsdecode(path))
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


class _Spare:
    """A descriptor held back for the reads a process must make when it has no other
    (:func:`keep_spare_descriptor`)."""

    lock = threading.Lock()
    fd: int | None = None
    wanted = False


def gone_or_replaced(path: str | os.PathLike[str]) -> bool:
    """Whether a task's file is no longer there as a regular file: removed, or replaced
    by a link, a FIFO, a directory (read as empty, it looked like a command that printed
    nothing: a review). A file that cannot be looked at now is not taken for gone."""
    try:
        return not stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def keep_spare_descriptor() -> None:
    """Hold a descriptor back, given up for a task's file this process has no other one
    to open (a burst of connections at a low limit took them all: an exit record read as
    missing, a log as empty, a trial and a review), held again once one is free."""
    with _Spare.lock:
        _Spare.wanted = True
        if _Spare.fd is None:  # (none free now: the next open takes it again)
            with contextlib.suppress(OSError):
                _Spare.fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


def _open_with_spare(path: str | os.PathLike[str], flags: int) -> int:
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno not in SHORT_OF_DESCRIPTORS or _Spare.fd is None:
            raise
        with _Spare.lock:
            if _Spare.fd is not None:
                os.close(_Spare.fd)
                _Spare.fd = None
        return os.open(path, flags)
    if _Spare.wanted and _Spare.fd is None:
        keep_spare_descriptor()
    return fd


def read_small_file(path: Path, limit: int) -> bytes:
    """The first ``limit`` bytes of a regular file that a command could write (see
    :func:`open_regular`); empty when it is none."""
    try:
        with open_regular(path, buffering=0) as fh:
            return fh.read(limit) or b""
    except OSError:
        return b""


@dataclass(frozen=True)
class TaskFiles:
    """The files of one task inside ``tasks/``: ``<id>.log`` (its output), ``<id>.err.log``
    (stderr, when kept apart), ``<id>.exit`` (its exit record: the status its monitor
    writes, the task's record from which a lost journal is rebuilt, the directory a
    foreground command ended in; see ``worker.spawn.ExitRecord``), ``<id>.cwd`` (the
    directory a sandboxed foreground command ended in) and ``<id>.tty`` (an interactive
    task's terminal). ``<id>.json`` held the record before it moved into the exit
    record: tasks of an earlier version have one."""

    LOG: ClassVar[str] = ".log"
    ERR_LOG: ClassVar[str] = ".err.log"
    EXIT: ClassVar[str] = ".exit"
    META: ClassVar[str] = ".json"
    LEFT: ClassVar[str] = ".left"
    CWD: ClassVar[str] = ".cwd"
    TTY: ClassVar[str] = ".tty"

    log: Path
    exit: Path
    meta: Path
    left: Path
    """Without cgroups: the processes its command left behind when it ended."""
    cwd: Path
    """The directory a sandboxed foreground command ended in: the one file of its task
    its sandbox can write (its exit record holds the task's record, which a journal is
    rebuilt from)."""
    tty: Path
    """An interactive task's terminal socket (held by its terminal host)."""
    err_log: Path | None = None

    @classmethod
    def for_task(cls, tasks_dir: Path, task_id: str, separate_stderr: bool = False) -> TaskFiles:
        return cls(
            log=tasks_dir / f"{task_id}{cls.LOG}",
            exit=tasks_dir / f"{task_id}{cls.EXIT}",
            meta=tasks_dir / f"{task_id}{cls.META}",
            left=tasks_dir / f"{task_id}{cls.LEFT}",
            cwd=tasks_dir / f"{task_id}{cls.CWD}",
            tty=tasks_dir / f"{task_id}{cls.TTY}",
            err_log=tasks_dir / f"{task_id}{cls.ERR_LOG}" if separate_stderr else None,
        )

    def remove_unused(self) -> None:
        """Remove what a task that never ran can have: its empty logs, its exit record's
        placeholder, a sandboxed command's empty ``.cwd`` (and an earlier version's
        ``.json``)."""
        for path in (self.log, self.err_log, self.exit, self.cwd, self.meta):
            if path is not None:
                path.unlink(missing_ok=True)

    def make_cwd(self) -> str:
        """Create the (empty, private) ``.cwd`` a sandboxed foreground command's shell
        appends its final directory to; returns its path.

        Raises:
            OSError: it cannot be created (a full disk; something in its place).
        """
        os.close(os.open(self.cwd, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600))  # fmt: skip
        return str(self.cwd)

    def final_dir(self) -> str | None:
        """What a sandboxed command's shell appended to its ``.cwd`` (its last line; the
        command could write more there), or None."""
        lines = os.fsdecode(read_small_file(self.cwd, FINAL_DIR_LIMIT)).splitlines()
        return lines[-1] if lines else None

    @classmethod
    def recorded(cls, tasks_dir: Path) -> list[Path]:
        """Every file that may hold a task's record (sorted), to rebuild a journal from:
        the exit records (a standby's holds none), and an earlier version's ``.json``."""
        return sorted([*tasks_dir.glob(f"*{cls.EXIT}"), *tasks_dir.glob(f"*{cls.META}")])

    @classmethod
    def logged_ids(cls, tasks_dir: Path) -> Iterator[str]:
        """IDs of every task (or standby) that has an output log."""
        for path in tasks_dir.glob(f"*{cls.LOG}"):
            if not path.name.endswith(cls.ERR_LOG):
                yield path.name.removesuffix(cls.LOG)

    @staticmethod
    def every_file(tasks_dir: Path, task_id: str) -> Iterator[Path]:
        """Every file of one task, whatever it is."""
        return tasks_dir.glob(f"{task_id}.*")
