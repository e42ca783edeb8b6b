"""Which shell runs a command (SPEC SH1): bash or zsh, never ``/bin/sh``.

Lookups are parameters so the order is testable with any fake file system.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

from .errors import NoShellError
from .windows import find_git_bash

Which = Callable[[str, str | None], str | None]
IsExecutable = Callable[[str], bool]

INSTALL_HINT = (
    "No bash or zsh found to run the command (wave-bash never falls back to /bin/sh). "
    "Install bash (e.g. `apt-get install bash`, `brew install bash`) or set WAVE_SHELL "
    "to the path of a bash or zsh executable."
)


@dataclass(frozen=True)
class Shell:
    """A resolved shell: its path and whether it is ``bash`` or ``zsh``."""

    path: str
    kind: str  # "bash" | "zsh"


def shell_kind(path: str) -> str | None:
    """``"bash"`` or ``"zsh"`` when the file name says so (``bash``, ``zsh-5.9``, ``bash.exe``)."""
    name = PurePath(path.replace("\\", "/")).name.lower().removesuffix(".exe")
    for kind in ("bash", "zsh"):
        if name == kind or name.startswith(kind + "-") or name.startswith(kind + "5"):
            return kind
    return None


def _default_is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _default_which(name: str, path: str | None) -> str | None:
    """``name`` on ``path``'s absolute entries only: a relative one (``node_modules/.bin``)
    names a directory a command, maybe a sandboxed one, can write, and the shell found
    there would run the monitor, outside any sandbox."""
    if path is not None:
        path = os.pathsep.join(p for p in path.split(os.pathsep) if os.path.isabs(p))
    return shutil.which(name, path=path)


def resolve_shell(
    env: Mapping[str, str],
    *,
    which: Which = _default_which,
    is_executable: IsExecutable = _default_is_executable,
    platform: str = sys.platform,
) -> Shell:
    """Pick the shell for a command from the caller's environment.

    Order: ``WAVE_SHELL`` (it must name an executable bash or zsh); ``$SHELL`` if it is
    an executable zsh or bash; bash on ``PATH`` or ``/bin/bash``; zsh on ``PATH``. On
    Windows (``platform="win32"``) it is Git Bash (see :func:`find_git_bash`).

    Raises:
        NoShellError: neither bash nor zsh (nor Git Bash on Windows) exists, or
            ``WAVE_SHELL`` names none (a misspelt one ran bash without a word: a trial;
            as ``WAVE_GIT_BASH_PATH`` on Windows).
    """
    if platform == "win32":
        return Shell(find_git_bash(env, which=which, is_file=is_executable), "bash")
    path = env.get("PATH")
    for var in ("WAVE_SHELL", "SHELL"):
        candidate = env.get(var, "")
        kind = shell_kind(candidate) if candidate else None
        if kind and "/" not in candidate and "\\" not in candidate:
            candidate = which(candidate, path) or ""  # a bare name such as WAVE_SHELL=zsh
        if kind and candidate and is_executable(candidate):
            return Shell(candidate, kind)
        if var == "WAVE_SHELL" and env.get(var):
            raise NoShellError(
                f"WAVE_SHELL is set to {env[var]}, which is not an executable bash or zsh "
                "(wave-bash never runs commands with another shell): set it to one, or "
                "unset it to use $SHELL or bash."
            )
    bash = which("bash", path) or ("/bin/bash" if is_executable("/bin/bash") else None)
    if bash:
        return Shell(bash, "bash")
    zsh = which("zsh", path)
    if zsh:
        return Shell(zsh, "zsh")
    raise NoShellError(INSTALL_HINT)


def resolve_monitor_bash(
    shell: Shell,
    env: Mapping[str, str],
    *,
    which: Which = _default_which,
    is_executable: IsExecutable = _default_is_executable,
) -> str | None:
    """The bash that runs the task monitor, or ``None`` when only zsh exists.

    When the command's shell is bash the monitor is that same binary; for zsh it is any
    bash on ``PATH`` or ``/bin/bash`` (zsh refuses job control without a terminal).
    """
    if shell.kind == "bash":
        return shell.path
    return which("bash", env.get("PATH")) or ("/bin/bash" if is_executable("/bin/bash") else None)


_VERSION_PROBES = {
    "bash": 'echo "${BASH_VERSINFO[0]} ${BASH_VERSINFO[1]}"',
    "zsh": 'echo "${ZSH_VERSION//./ }"',
}


_versions: dict[tuple[str, str, int, int], tuple[int, int]] = {}
_NOT_RUNNABLE = frozenset({errno.ENOENT, errno.EACCES, errno.ENOEXEC, errno.ENOTDIR, errno.ELOOP})
"""Why a probe could not start that says the file runs nothing (not a want of resources)."""


def reported_version(path: str, kind: str) -> tuple[int, int]:
    """The major and minor version the ``kind`` shell at ``path`` says it is ((0, 0): it
    says none, so it is no working bash or zsh), asked once per binary: kept by its
    inode and change time (a file replaced in place is asked again).

    Raises:
        OSError: no verdict: the probe could not start for want of resources (a burst at
            the descriptor limit took a real bash for none, for good: a CI run), or gave
            no answer within 10 s (``TimeoutError``: a loaded host may answer next time).
    """
    try:
        info = os.stat(path)
    except OSError:
        return 0, 0
    key = (path, kind, info.st_ino, info.st_mtime_ns)
    if key in _versions:
        return _versions[key]
    try:
        out = subprocess.run(
            [path, "-c", _VERSION_PROBES[kind]],
            env={}, capture_output=True, text=True, timeout=10, check=False,
        ).stdout.split()  # fmt: skip
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{path} did not say its version within 10 s") from None
    except OSError as exc:
        if exc.errno not in _NOT_RUNNABLE:
            raise
        out = []
    try:
        version = int(out[0]), int(out[1])
    except (ValueError, IndexError):
        version = 0, 0
    _versions[key] = version
    return version


def refuse_impostors(shell: Shell, monitor_bash: str | None) -> None:
    """Refuse a command's shell or monitor bash that does not say its version: a script
    named ``bash`` first on PATH ran instead of the monitor, printed its own words, and
    its task "completed" with exit 0 though the command never ran (a trial); the next
    start broke on its closed pipe ("[Errno 32] Broken pipe").

    Raises:
        NoShellError: naming the impostor.
        OSError: no verdict (see :func:`reported_version`).
    """
    for path, kind in ((shell.path, shell.kind), (monitor_bash, "bash")):
        if path is not None and reported_version(path, kind) == (0, 0):
            raise NoShellError(
                f"{path} is named {kind} but is no working {kind}: asked its version "
                f"(`{kind} -c`), it gave none, so it would not run the command (wave-bash "
                f"runs commands with bash or zsh only): put a real {kind} first on PATH, "
                "or set WAVE_SHELL to one."
            )
