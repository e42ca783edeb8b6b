"""Where a request reaches the worker: the worker's and the OS's errors become the
contract's, mapped in one place (as httpx's ``map_httpcore_exceptions``)."""

from __future__ import annotations

import errno
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wave_bash.api.errors import (
    BusyError,
    InvalidInputError,
    ShellNotFoundError,
    SpawnError,
    StorageError,
)
from wave_bash.worker import BadEnvironmentError, NoShellError
from wave_bash.worker.files import SHORT_OF_DESCRIPTORS

from .journal import disk_problem, storage_problem

log = logging.getLogger(__name__)


@contextmanager
def worker_errors(state_dir: Path) -> Iterator[None]:
    """Map what starting a command can raise below the contract to the contract's errors.

    A full or read-only state dir is a :class:`StorageError` that says nothing ran.
    """
    try:
        yield
    except NoShellError as exc:
        raise ShellNotFoundError(str(exc)) from None
    except BadEnvironmentError as exc:
        raise InvalidInputError(f"cannot pass this environment on: {exc}") from None
    except UnicodeEncodeError as exc:  # text no shell can be given (a lone surrogate)
        raise InvalidInputError(f"cannot run this command: {exc}") from None
    except StorageError as exc:
        raise _not_started(exc.message, state_dir) from None
    except sqlite3.Error as exc:
        problem = storage_problem(exc)
        if problem is None:
            raise
        raise _not_started(problem, state_dir) from None
    except OSError as exc:
        problem = storage_problem(exc)
        if problem is None and _refused_in(exc, state_dir):  # (`chmod a-w tasks`: the
            problem = exc.strerror  # file named was a standby's; a review)
        if problem is not None:
            raise _not_started(problem, state_dir) from None
        log.warning("could not start a command: %s", exc)
        if exc.errno in SHORT_OF_DESCRIPTORS:  # (a burst at a low descriptor limit:
            raise BusyError(  # the client sends it again shortly; nothing started, D3a)
                f"the supervisor is out of file descriptors ({exc.strerror}): the command "
                "was not started"
            ) from None
        raise SpawnError(f"could not start the command: {exc}") from None


def _refused_in(exc: OSError, state_dir: Path) -> bool:
    """Whether ``exc`` is the state dir's refusal of a write (its permissions)."""
    if exc.errno not in (errno.EACCES, errno.EPERM) or not isinstance(exc.filename, str):
        return False
    return Path(exc.filename).is_relative_to(state_dir)


def _not_started(problem: str, state_dir: Path) -> StorageError:
    if "space" in problem.lower():  # (the file system's figures tell bytes from inodes)
        problem = disk_problem(state_dir) or problem
    return StorageError(
        f"{problem} in the state dir {state_dir}: the command was not started (nothing "
        f"runs that wave-bash cannot record); {_remedy(problem)}"
    )


def _remedy(problem: str) -> str:
    """What to do about a state dir that takes no writes (a read-only one was told to
    free some space; a failure review)."""
    words = problem.lower()
    if "read-only" in words or "readonly" in words:
        return "make it writable again"
    if "permission" in words:
        return "let this user write there again (`ls -ld` shows each directory's owner and mode)"
    if "inode" in words:
        return "delete some files there (each takes an inode: `df -i` shows them)"
    if "space" in words or "quota" in words or "full" in words:
        return "free some space there"
    if "locked" in words:
        return "end the other process's transaction on journal.db (a `sqlite3` left open?)"
    return "check that disk"
