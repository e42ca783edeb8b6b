"""A task's files in ``tasks/``: their names are known here and nowhere else."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar


@dataclass(frozen=True)
class TaskFiles:
    """The files of one task inside ``tasks/``: ``<id>.log`` (its output), ``<id>.err.log``
    (stderr, when kept apart), ``<id>.exit`` (its exit record: the status its monitor
    writes, the task's record from which a lost journal is rebuilt, the directory a
    foreground command ended in; see ``worker.spawn.ExitRecord``) and ``<id>.tty`` (an
    interactive task's terminal). ``<id>.json`` held the record before it moved into
    the exit record: tasks of an earlier version have one."""

    LOG: ClassVar[str] = ".log"
    ERR_LOG: ClassVar[str] = ".err.log"
    EXIT: ClassVar[str] = ".exit"
    META: ClassVar[str] = ".json"
    LEFT: ClassVar[str] = ".left"
    TTY: ClassVar[str] = ".tty"

    log: Path
    exit: Path
    meta: Path
    left: Path
    """Without cgroups: the processes its command left behind when it ended."""
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
            tty=tasks_dir / f"{task_id}{cls.TTY}",
            err_log=tasks_dir / f"{task_id}{cls.ERR_LOG}" if separate_stderr else None,
        )

    def remove_unused(self) -> None:
        """Remove what a task that never ran can have: its empty logs and its exit
        record's placeholder (and an earlier version's ``.json``)."""
        for path in (self.log, self.err_log, self.exit, self.meta):
            if path is not None:
                path.unlink(missing_ok=True)

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
