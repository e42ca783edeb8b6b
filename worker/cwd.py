"""Reading back a command's final directory (SPEC E3), for POSIX and Git Bash alike."""

from __future__ import annotations

import contextlib
import logging
import ntpath
import os
import posixpath
import sys
from collections.abc import Callable
from pathlib import Path

from .windows import posix_to_windows_path

log = logging.getLogger(__name__)


def read_final_cwd(
    cwd_file: Path,
    start_cwd: str,
    *,
    windows: bool = sys.platform == "win32",
    isdir: Callable[[str], bool] = os.path.isdir,
    realpath: Callable[[str], str] = os.path.realpath,
) -> str | None:
    """The directory a command ended in, when it exists and differs from ``start_cwd``.

    The temp file is always removed. On Windows the ``pwd -P`` output of Git Bash
    (``/c/Users/x``) is converted to a native path before it is checked. Any failure
    (no file: ``exec``, kill; a deleted directory) returns ``None`` and logs at debug level.
    """
    try:
        # Bytes as the file system gives them (a name need not be UTF-8); only the newline
        # `pwd` adds is dropped, since a name may end in spaces.
        final = os.fsdecode(cwd_file.read_bytes()).removesuffix("\n")
    except OSError as exc:
        log.debug("no cwd captured in %s (%s)", cwd_file, exc)
        return None
    finally:
        with contextlib.suppress(OSError):  # gone, or a read-only tasks dir
            cwd_file.unlink()
    if windows:
        final = posix_to_windows_path(final)
    if not final or not isdir(final):
        log.debug("captured cwd %r does not exist", final)
        return None
    paths = ntpath if windows else posixpath
    if paths.normcase(paths.normpath(final)) == paths.normcase(paths.normpath(realpath(start_cwd))):
        return None
    return final
