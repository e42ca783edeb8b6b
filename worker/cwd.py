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
    returns ``None``.
    """
    if not captured:
        return None
    final = captured
    if windows:
        final = posix_to_windows_path(final)
    if not final or not isdir(final):
        log.debug("captured cwd %r does not exist", final)
        return None
    paths = ntpath if windows else posixpath
    if paths.normcase(paths.normpath(final)) == paths.normcase(paths.normpath(realpath(start_cwd))):
        return None
    return final
