"""A task's files in ``tasks/``: their names are known here and nowhere else."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar


@dataclass(frozen=True)
class TaskFiles:
    """The files of one task inside ``tasks/``: ``<id>.log`` (its output), ``<id>.err.log``
    (stderr, when kept apart), ``<id>.exit`` (its exit record, written by its monitor,
    with the directory a foreground command ended in), ``<id>.json`` (its record, from
    which a lost journal is rebuilt; empty until its command starts) and ``<id>.tty``
    (an interactive task's terminal)."""

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
        """Remove what a task that never ran can have: its empty logs, its exit record's
        placeholder and its ``.json``."""
        for path in (self.log, self.err_log, self.exit, self.meta):
            if path is not None:
                path.unlink(missing_ok=True)

    @classmethod
    def recorded(cls, tasks_dir: Path) -> list[Path]:
        """The ``.json`` records of every task (sorted), to rebuild a journal from."""
        return sorted(tasks_dir.glob(f"*{cls.META}"))

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
