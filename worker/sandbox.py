"""The opt-in sandbox (SPEC SB): a command run under bubblewrap.

``read-only``: the whole file system read-only. ``workspace-write``: the workspace (the
project root of the command's directory, or a given one) writable, its ``.git/hooks`` and
``.git/config`` and the shell rc files in it read-only. Both: a private writable ``/tmp``
(one per agent session, kept between its commands) and ``/var/tmp`` (so no socket of
another program there is reachable: tmux, ssh-agent, a supervisor), ``$XDG_RUNTIME_DIR`` and the state dir hidden (the supervisor's
socket would run commands outside), a minimal ``/dev``, no network unless allowed (a new
network namespace: loopback only, abstract sockets included).

No ``--die-with-parent``: a background task outlives its caller. The sandbox stays in the
task's process group, cgroup and process tree, so TaskStop stops it like any task.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

RC_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
    ".zshenv", ".zprofile", ".zlogin", ".zlogout",
)  # fmt: skip
"""Shell start-up files: what a sandboxed command writes there would run unsandboxed later."""
GIT_PROTECTED = (".git/hooks", ".git/config")
"""What git runs or reads for commands to run (``core.hooksPath``, aliases)."""


class SandboxError(Exception):
    """The sandbox cannot be set up here (the message says why)."""


@dataclass(frozen=True)
class Sandbox:
    mode: str
    """``read-only`` or ``workspace-write``."""
    workspace: str
    network: bool = False


def project_root(cwd: str) -> str:
    """The nearest ancestor of ``cwd`` (itself included) holding ``.git``, else ``cwd``."""
    current = Path(cwd)
    for folder in (current, *current.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(current)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def bwrap_argv(
    bwrap: str,
    sandbox: Sandbox,
    cwd: str,
    hidden: Sequence[str],
    writable_files: Sequence[str] = (),
    home: str | None = None,
    temp_dir: str | None = None,
) -> list[str]:
    """The bubblewrap command line that runs what follows it in ``sandbox``.

    ``hidden``: directories replaced by empty ones (the state dir, the socket's dir);
    ``writable_files``: files inside them the command must write (its exit record, for
    the directory it ends in); ``temp_dir``: what the command sees as ``/tmp`` (default
    an empty one of its own)."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *(["--bind", temp_dir, "/tmp"] if temp_dir else ["--tmpfs", "/tmp"]),
            "--tmpfs", "/var/tmp"]  # fmt: skip
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        argv += ["--tmpfs", runtime]
    workspace = os.path.realpath(sandbox.workspace)
    if sandbox.mode == "workspace-write":
        argv += ["--bind", workspace, workspace]
        protected = [os.path.join(workspace, name) for name in GIT_PROTECTED]
        home = home or os.path.expanduser("~")
        protected += [os.path.join(home, name) for name in RC_FILES]
        protected += [os.path.join(workspace, name) for name in RC_FILES]
        for path in dict.fromkeys(protected):
            if _inside(path, workspace) and os.path.lexists(path) and not os.path.islink(path):
                argv += ["--ro-bind", path, path]
    else:
        argv += ["--ro-bind", workspace, workspace]  # visible again if under /tmp
    real_cwd = os.path.realpath(cwd)
    if not _inside(real_cwd, workspace):
        argv += ["--ro-bind-try", real_cwd, real_cwd]
    for folder in dict.fromkeys(hidden):
        argv += ["--tmpfs", folder]
    for path in writable_files:
        argv += ["--bind", path, path]
    if not sandbox.network:
        argv.append("--unshare-net")
    argv += ["--chdir", real_cwd, "--"]
    return argv


_probed: dict[str, str] = {}


def probe(bwrap: str) -> str:
    """Check once that bubblewrap runs here with the namespaces it needs; returns its
    version.

    Raises:
        SandboxError: it is not installed, or cannot create namespaces (saying why).
    """
    if bwrap in _probed:
        return _probed[bwrap]
    try:
        version = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        trial = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--unshare-net", "--", "true"],
            capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except FileNotFoundError:
        raise SandboxError(
            f"bubblewrap is not installed ({bwrap} not found): install the bubblewrap "
            "package to use the sandbox"
        ) from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"bubblewrap ({bwrap}) cannot run: {exc}") from None
    if trial.returncode != 0:
        cause = trial.stderr.strip() or f"exit status {trial.returncode}"
        raise SandboxError(
            f"bubblewrap cannot set up a sandbox here: {cause} (it needs user namespaces, "
            "or root; see /proc/sys/user/max_user_namespaces and "
            "kernel.unprivileged_userns_clone)"
        )
    _probed[bwrap] = version or "bubblewrap"
    return _probed[bwrap]
