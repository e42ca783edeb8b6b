"""Windows: Git Bash resolution and path conversion (SPEC SH2, E3), as pure functions.

Everything takes the platform's facts (environment, file lookups) as parameters, so the
rules are tested on any OS. Windows paths are handled with ``ntpath`` whatever the host.
"""

from __future__ import annotations

import ntpath
import os
import re
import shutil
from collections.abc import Callable, Mapping

from .errors import NoShellError

GIT_BASH_ENV = "WAVE_GIT_BASH_PATH"

INSTALL_HINT = (
    "Git Bash was not found, and wave-bash never falls back to cmd.exe. Install Git for "
    "Windows (https://git-scm.com/download/win) or set WAVE_GIT_BASH_PATH to its bash.exe "
    "(for example C:\\Program Files\\Git\\bin\\bash.exe)."
)

Which = Callable[[str, str | None], str | None]
IsFile = Callable[[str], bool]


_DRIVE = re.compile(r"^([A-Za-z]):(?:[\\/]|$)")
_POSIX_DRIVE = re.compile(r"^/(?:cygdrive/)?([A-Za-z])(?=/|$)")


def windows_to_posix_path(path: str) -> str:
    r"""A Windows path as Git Bash reads it: ``C:\Users\x`` → ``C:/Users/x``.

    Backslashes would be escapes to bash; forward slashes keep the drive letter, which
    Git Bash accepts. UNC paths become ``//server/share/...``; POSIX input is unchanged.
    """
    return path.replace("\\", "/")


def posix_to_windows_path(path: str) -> str:
    r"""A path printed by Git Bash (``pwd -P``) as a native Windows path.

    ``/c/Users/x`` and ``/cygdrive/c/Users/x`` → ``C:\Users\x``; ``/c`` → ``C:\``;
    ``C:/Users/x`` → ``C:\Users\x``; ``//server/share/x`` → ``\\server\share\x``.
    Native input is returned normalised; a trailing separator is dropped except at a root.
    Paths inside Git's own tree (``/usr/bin``) have no drive and are returned unchanged.
    """
    path = path.strip()
    match = _POSIX_DRIVE.match(path)
    if match:
        rest = path[match.end() :]
        path = f"{match.group(1).upper()}:{rest or '/'}"
    elif path.startswith("//") or path.startswith("\\\\"):
        path = "\\\\" + path[2:]
    elif not _DRIVE.match(path):
        return path
    native = path.replace("/", "\\")
    drive = _DRIVE.match(native)
    if drive:
        native = drive.group(1).upper() + native[1:]
    root = ntpath.splitdrive(native)[0] + "\\"
    stripped = native.rstrip("\\")
    return root if len(stripped) < len(root) else stripped


def _default_is_file(path: str) -> bool:
    return os.path.isfile(path)


def _default_which(name: str, path: str | None) -> str | None:
    return shutil.which(name, path=path)


def usual_git_bash_locations(env: Mapping[str, str]) -> list[str]:
    """Where Git for Windows installs bash.exe by default (machine-wide and per user)."""
    places = [
        env.get("ProgramFiles") or "C:\\Program Files",
        env.get("ProgramFiles(x86)") or "C:\\Program Files (x86)",
    ]
    if env.get("LOCALAPPDATA"):
        places.append(ntpath.join(env["LOCALAPPDATA"], "Programs"))
    return [ntpath.join(place, "Git", "bin", "bash.exe") for place in places]


def find_git_bash(
    env: Mapping[str, str],
    *,
    which: Which = _default_which,
    is_file: IsFile = _default_is_file,
) -> str:
    r"""Git Bash's ``bash.exe``: ``WAVE_GIT_BASH_PATH``; then derived from ``git`` on
    ``PATH`` (``…\Git\cmd\git.exe`` → ``…\Git\bin\bash.exe``); then the usual folders.

    Raises:
        NoShellError: none found (also when ``WAVE_GIT_BASH_PATH`` names a missing file).
    """
    configured = env.get(GIT_BASH_ENV)
    if configured:
        if is_file(configured):
            return configured
        raise NoShellError(
            f"{GIT_BASH_ENV} is set to {configured}, which does not exist. {INSTALL_HINT}"
        )
    git = which("git", env.get("PATH") or env.get("Path"))
    if git:
        derived = ntpath.normpath(ntpath.join(git, "..", "..", "bin", "bash.exe"))
        if is_file(derived):
            return derived
    for candidate in usual_git_bash_locations(env):
        if is_file(candidate):
            return candidate
    raise NoShellError(INSTALL_HINT)
