"""Reading back a command's final directory (SPEC E3), for POSIX and Git Bash alike."""

from __future__ import annotations

import logging
import ntpath
import os
import posixpath
import sys
from collections.abc import Callable

from .windows import posix_to_windows_path

log = logging.getLogger(__name__)


def final_cwd(
    captured: str | None,
    start_cwd: str,
    *,
    windows: bool = sys.platform == "win32",
    isdir: Callable[[str], bool] = os.path.isdir,
    realpath: Callable[[str], str] = os.path.realpath,
) -> str | None:
    """The directory a command ended in (``captured``: what its ``pwd -P`` printed), when
    it exists and differs from ``start_cwd``.

    On Windows the ``pwd -P`` output of Git Bash (``/c/Users/x``) is converted to a native
    path before it is checked. Nothing captured (``exec``, a kill) or a deleted directory
    (:func:`removed_cwd`) returns ``None``.
    """
    final = _native(captured, windows)
    if final is None or not isdir(final):
        return None
    paths = ntpath if windows else posixpath
    if paths.normcase(paths.normpath(final)) == paths.normcase(paths.normpath(realpath(start_cwd))):
        return None
    return final


def removed_cwd(
    captured: str | None,
    *,
    windows: bool = sys.platform == "win32",
    isdir: Callable[[str], bool] = os.path.isdir,
) -> str | None:
    """The directory a command ended in when it no longer exists (the command removed
    it: its ``$PWD``, as ``pwd -P`` fails there), else None."""
    final = _native(captured, windows)
    if final is None or isdir(final):
        return None
    log.debug("captured cwd %r does not exist", final)
    return final


def _native(captured: str | None, windows: bool) -> str | None:
    if not captured:
        return None
    return (posix_to_windows_path(captured) if windows else captured) or None
