"""The opt-in sandbox (SPEC SB): a command run under bubblewrap.

``read-only``: the whole file system read-only. ``workspace-write``: the workspace (the
project root of the caller's directory, or a given one) writable; its ``.git`` pinned in
place, ``.git/hooks`` (an empty one where there is none) and ``.git/config`` (and its
submodules') and the shell rc files in it read-only. Both: a private writable ``/tmp``
(one per agent session, kept between its commands) and ``/var/tmp`` (so no socket of
another program there is reachable: tmux, ssh-agent, a supervisor), ``/run``, ``$XDG_RUNTIME_DIR``, the state dir and the default
one hidden (the supervisor's socket would run commands outside; docker's too), its own
process and IPC namespaces (no process outside is visible or signalled), no capability,
``/proc/sys`` read-only, no Unix-domain socket, no socket family but Internet and
netlink, and no io_uring (``worker.seccomp``: a socket file anywhere is a way out), a
minimal ``/dev``, no network unless allowed (a new network namespace:
loopback only, abstract sockets included).

No ``--die-with-parent``: a background task outlives its caller. The sandbox stays in the
task's process group, cgroup and process tree, so TaskStop stops it like any task.
"""

from __future__ import annotations

import contextlib
import os
import platform
import stat
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .files import open_regular
from .planted import (
    HOME_FILES,
    NESTED_JUDGED,
    NEW_REPOSITORY,
    RC_FILES,
    SYSTEM_DIRS,
    git_dir_identities,
    gitlinked_repositories,
    included_configs,
    inside,
    move_made,
    nested_repositories,
    open_plain,
    protected_paths,
    system_program,
)
from .pymonitor import PASSED_FDS_FROM
from .seccomp import system_call_filter

LOADER_VARIABLES = frozenset({
    "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LD_AUDIT", "LD_DEBUG",
    "LD_DEBUG_OUTPUT", "LD_DYNAMIC_WEAK", "LD_HWCAP_MASK", "LD_LIBRARY_PATH", "LD_ORIGIN_PATH",
    "LD_PRELOAD", "LD_PROFILE", "LD_SHOW_AUXV", "LD_USE_LOAD_BIAS", "LOCALDOMAIN", "LOCPATH",
    "MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
})  # fmt: skip
"""What glibc ignores for a set-id program (its unsecure-envvars list, but ``TMPDIR``):
each names files loaded or read into a process. A sandboxed task's monitor and
bubblewrap run outside the sandbox without them (a workspace directory in the caller's
``LD_LIBRARY_PATH`` would have them load what a command wrote there, as root); the
command gets them back inside (``--setenv``)."""


RUNTIME_DIRS = ("/run", "/var/run")
"""Where system daemons keep their sockets (docker, dbus, systemd, screen): hidden."""
RESOLVER_DIRS = ("/run/systemd/resolve", "/run/resolvconf")
"""Kept (read-only) when the network is allowed: ``/etc/resolv.conf`` may point there."""


PROC_WRITABLE_BY_ROOT = ("sys", "sysrq-trigger", "irq", "bus")
"""What in a new ``/proc`` root writes with no capability: ``/proc/sys`` checks the uid
only (``kernel.core_pattern = |PROGRAM`` has the kernel run PROGRAM as root outside, at
the next crash), ``sysrq-trigger`` reboots. bubblewrap makes them read-only only where
it sees them writable, and bubblewrap run by root does not (a reviewer escaped so)."""
_PROC_READ_ONLY = [
    word
    for name in PROC_WRITABLE_BY_ROOT
    for word in ("--ro-bind-try", f"/proc/{name}", f"/proc/{name}")
]


class SandboxError(Exception):
    """The sandbox cannot be set up here (the message says why)."""


@dataclass(frozen=True)
class Sandbox:
    mode: str
    """``read-only`` or ``workspace-write``."""
    workspace: str
    network: bool = False


def host_read_only(bwrap: str, writable: Sequence[str], bound: Sequence[str] = ()) -> list[str]:
    """The bubblewrap words that run the sandbox's own bubblewrap where the host is
    read-only but for ``writable`` (what its command may write anyway) and what
    ``bound`` binds (bubblewrap's words: the workspace, by the descriptor the supervisor
    opened through no link, which a command cannot swap for a host directory).

    bubblewrap 0.8 looks up where each mount goes by its path, following links, and
    creates it when missing: a background sandboxed command of the session could swap a
    place it mounts on in the workspace or the session's ``/tmp`` for a link to
    ``/oldroot/…`` (the host, during its set-up) after the checks, and bubblewrap, run by
    root, made an empty file or directory at any host path (``/etc/nologin``: no login
    but root's) before it saw the race. Under this one such a creation fails, read-only,
    with nothing made. ``/dev`` is a new one of its own, and so are the process
    namespace and its ``/proc``: the host's leads back to the writable host
    (``/proc/2/root``, a kernel thread's root, a reviewer's way round the first version).
    """
    argv = [bwrap, "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in dict.fromkeys(writable):
        argv += ["--bind", path, path]
    return [*argv, *bound, "--"]


def bwrap_argv(
    bwrap: str,
    sandbox: Sandbox,
    cwd: str,
    hidden: Sequence[str],
    writable_files: Sequence[str] = (),
    home: str | None = None,
    temp_dir: str | None = None,
    filtered: bool = True,
    sources: Sources | None = None,
) -> list[str]:
    """The bubblewrap command line that runs what follows it in ``sandbox``.

    ``sources``: what is bound from places a command can write (:func:`open_sources`),
    as descriptors ``FIRST_SOURCE_FD`` on, which its caller opens on them (see
    :meth:`Sources.redirections`); with the variables set inside only, read from
    :attr:`Sources.environment`.

    ``hidden``: directories replaced by empty ones (the state dir, the socket's dir);
    ``writable_files``: files inside them the command must write (its ``.cwd``, for
    the directory it ends in); ``temp_dir``: what the command sees as ``/tmp`` (default
    an empty one of its own); ``filtered``: bubblewrap reads the system-call filter
    (``worker.seccomp``) from descriptor ``SECCOMP_FD``, which its caller opens on
    :func:`filter_file`."""
    workspace = sandbox.workspace  # (its real path: see Sources.outer)
    binds = sources.binds() if sources is not None else []
    writable = [*([temp_dir] if temp_dir else []), *writable_files]
    outer = [word for bind in binds if bind[0] == "outer" for word in bind[1]]
    if sandbox.mode == "workspace-write" and not outer:
        writable.append(workspace)  # (no descriptor: a caller that checked nothing)
    # No capability inside, whoever starts it: bubblewrap run by root keeps root's (it
    # could remount the root read-write), by another user it has none to drop.
    argv = [*host_read_only(bwrap, writable, outer),
            bwrap, "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc", *_PROC_READ_ONLY,
            *(["--bind", temp_dir, "/tmp"] if temp_dir else ["--tmpfs", "/tmp"]),
            "--tmpfs", "/var/tmp"]  # fmt: skip
    argv += [word for bind in binds if bind[0] == "temp" for word in bind[1]]
    for run in RUNTIME_DIRS:  # sockets of daemons that would run things outside (docker…)
        if os.path.isdir(run) and not os.path.islink(run):
            argv += ["--tmpfs", run]
    if sandbox.network:  # the resolver's files live there on some systems
        for path in RESOLVER_DIRS:
            argv += ["--ro-bind-try", path, path]
    runtime = _runtime_dir()
    if runtime:
        argv += ["--tmpfs", runtime]
    if sandbox.mode == "workspace-write":
        argv += ["--bind", workspace, workspace]
        argv += [word for bind in binds if bind[0] == "workspace" for word in bind[1]]
    else:
        argv += ["--ro-bind", workspace, workspace]  # visible again if under /tmp
    for folder in dict.fromkeys(hidden):
        argv += ["--tmpfs", folder]
    for path in writable_files:
        argv += ["--bind", path, path]
    if not sandbox.network:
        argv.append("--unshare-net")
    if filtered:
        argv += ["--seccomp", str(SECCOMP_FD)]
    if sources is not None and sources.environment is not None:
        argv += ["--args", str(sources.environment_number)]
    elif sources is not None:
        argv += sources.setenv
    argv += ["--chdir", start_dir(cwd, sandbox, hidden, temp_dir), "--"]
    env = signal_env()
    if env is None:
        return argv
    # Ctrl+C (an interrupt, B3b, or the key typed on a sandboxed terminal) reaches the
    # whole process group: the bubblewraps die of it, and the sandbox with them, where
    # the command would have run its trap (a review). They ignore it; the command inside
    # has it back as it was.
    return [env, "--ignore-signal=INT", *argv, env, "--default-signal=INT"]


def signal_env() -> str | None:
    """GNU ``env``'s path where it sets signals ignored and back (coreutils 8.31+), else
    None (remembered)."""
    if _signal_env:
        return _signal_env[0]
    found = next((p for p in ("/usr/bin/env", "/bin/env") if os.access(p, os.X_OK)), None)
    try:
        ok = found is not None and subprocess.run(
            [found, "--ignore-signal=INT", "--default-signal=INT", "true"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            timeout=10, check=False,
        ).returncode == 0  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        ok = False
    _signal_env.append(found if ok else None)
    return _signal_env[0]


_signal_env: list[str | None] = []


FIRST_SOURCE_FD = PASSED_FDS_FROM
"""bubblewrap's descriptors of what it binds from places a command can write (a monitor
passes them on to its job: ``worker.pymonitor.PASSED_FDS_FROM``)."""


@dataclass
class Sources:
    """What bubblewrap binds from places a sandboxed command can write (its workspace,
    its own ``/tmp``), opened here through no link and handed to bubblewrap as
    descriptors (``--bind-fd``): a path it would look up again as it mounts, after a
    background command of the session had put a link in its way (a reviewer had the
    host's root bound writable in the sandbox so). Held until the command ends."""

    outer: list[tuple[int, str, bool]] = field(default_factory=list)
    """The same, bound by the bubblewrap around the sandbox's (:func:`host_read_only`):
    the writable workspace."""
    temp: list[tuple[int, str, bool]] = field(default_factory=list)
    """(descriptor here, where it is mounted, writable), after the sandbox's ``/tmp``."""
    workspace: list[tuple[int, str, bool]] = field(default_factory=list)
    """The same, after the workspace."""
    absent: list[str] = field(default_factory=list)
    """Protected files missing as the command starts (a ``.git/commondir``): no mount
    can keep what is not there, and git would read a config it names. One the command
    makes is moved aside as it ends (:meth:`move_made`)."""
    links: list[tuple[str, str]] = field(default_factory=list)
    """The user's links on the way to start-up files (path, target): one the command
    replaced is moved aside as it ends (:meth:`move_made`)."""
    unjudged: list[str] = field(default_factory=list)
    """Where :meth:`move_made` found more than it looks at (said with the result)."""
    nested_known: set[tuple[int, int]] | None = None
    """The git dirs of the workspace's nested repositories as the command started
    (:func:`git_dir_identities`; None: not all were found): what it made a repository of
    another is judged whole as it ends (:func:`planted.move_made`)."""
    environment: int | None = None
    """A memory file of bubblewrap's ``--setenv NAME VALUE`` words, NUL-separated: the
    variables set inside only (:data:`LOADER_VARIABLES`), read with ``--args`` (in its
    argv, every user read their values: ``ps``, a review)."""

    setenv: list[str] = field(default_factory=list)
    """The same words for bubblewrap's argv, where no memory file can be made (a kernel
    or a filter without ``memfd_create``)."""

    def set_environment(self, variables: Mapping[str, str]) -> None:
        """Hand ``variables`` to bubblewrap through :attr:`environment`."""
        if not variables:
            return
        listed = [word for name, value in variables.items() for word in ("--setenv", name, value)]
        words = b"".join(os.fsencode(word) + b"\0" for word in listed)
        try:
            fd = os.memfd_create("wave-bash-environment", os.MFD_CLOEXEC)
        except OSError:  # (ENOSYS, EPERM: the command runs all the same)
            self.setenv = listed
            return
        self.environment = fd
        view = memoryview(words)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)

    def move_made(self, task_id: str, made_before: float, made_after: float = 0.0) -> list[str]:
        """What the command made of what was missing as it started, moved aside
        (:func:`planted.move_made`); returns the paths moved, and keeps in
        :attr:`unjudged` where it found more than it looks at."""
        moved, self.unjudged = move_made(
            self.links, self.absent, self.nested_known, task_id, made_before, made_after
        )
        return moved

    def _all(self) -> list[tuple[str, tuple[int, str, bool]]]:
        return (
            [("outer", o) for o in self.outer]
            + [("temp", t) for t in self.temp]
            + [("workspace", w) for w in self.workspace]
        )

    def binds(self) -> list[tuple[str, list[str]]]:
        """bubblewrap's words for each, with the place they go after."""
        return [
            (where, ["--bind-fd" if writable else "--ro-bind-fd", str(FIRST_SOURCE_FD + i), dest])
            for i, (where, (_, dest, writable)) in enumerate(self._all())
        ]

    def numbered(self) -> list[tuple[int, int]]:
        """Each descriptor here, and the number bubblewrap finds it at: the task's monitor
        gets them as it starts, and its job from it (opened by the job from this
        process's ``/proc/PID/fd/N``, they were gone with a supervisor killed as it
        handed the command over)."""
        pairs = [(fd, FIRST_SOURCE_FD + i) for i, (_, (fd, _, _)) in enumerate(self._all())]
        if self.environment is not None:
            pairs.append((self.environment, self.environment_number))
        return pairs

    @property
    def environment_number(self) -> int:
        """The descriptor bubblewrap reads :attr:`environment` from."""
        return FIRST_SOURCE_FD + len(self._all())

    def close(self) -> None:
        for fd in [fd for _, (fd, _, _) in self._all()] + [self.environment or -1]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.outer.clear()
        self.temp.clear()
        self.workspace.clear()
        self.environment = None


def open_sources(
    sandbox: Sandbox, hidden: Sequence[str], temp_dir: str | None, home: str | None = None
) -> Sources:
    """Open what bubblewrap binds from where a command can write (see :class:`Sources`):
    each directory on the way to a mount in the sandbox's own ``/tmp`` (pinned: none can
    be renamed away), and in ``workspace-write`` the workspace's ``.git`` and each
    directory on the way to a protected path or a ``hidden`` one (pinned, writable), the
    protected paths (read-only) and what hooks that are links lead to (read-only). A path
    that is a link or missing now is left out."""
    sources = Sources()
    try:
        if temp_dir:
            for place in _temp_chain(sandbox.workspace, hidden):
                fd = open_plain(temp_dir, place[len("/tmp/") :])
                if fd is not None:
                    sources.temp.append((fd, place, True))
        if sandbox.mode != "workspace-write":
            return sources
        workspace = sandbox.workspace  # (its real path: found once, by the supervisor)
        root = open_plain("/", workspace)
        if root is None:
            raise SandboxError(
                f"the sandbox workspace {workspace} leads through a link now, or is gone: "
                "a directory on its path was replaced (by a command?)"
            )
        sources.outer.append((root, workspace, True))
        home = home or os.path.expanduser("~")
        nested, complete = nested_repositories(workspace, NESTED_JUDGED)  # (as it ends)
        gitlinked, read = gitlinked_repositories(workspace, nested)
        if complete and read:  # (the workspace's own too: never judged as a new one's)
            sources.nested_known = git_dir_identities([workspace, *nested, *gitlinked])
        protected = protected_paths(workspace, home, nested)
        protected, sources.links = _through_links(protected, workspace, home)
        linked = _linked_hooks(workspace, [path for path, hooks in protected if hooks])
        # (A hidden directory in the workspace, `--workspace ~` with the state dir in it,
        # is a mount point, but its parents were not: renamed, with a link planted where
        # the state dir was, they steered the supervisor's prune outside; a review.)
        kept_away = [h for h in map(os.path.realpath, hidden) if inside(h, workspace)]
        pins = _pinned(workspace, [path for path, _ in protected] + linked + kept_away)
        git = os.path.join(workspace, ".git")
        wanted = [(p, True) for p in pins] + [(p, p == git) for p, _ in protected]
        files = {p for p, hooks in protected if not hooks and p != git}
        wanted += [(target, False) for target in linked]
        sources.absent.append(os.path.join(git, "modules") + "/")  # (see move_made)
        sources.absent.append(os.path.join(workspace, "*"))  # (its nested repositories: same)
        if not os.path.lexists(git):  # (a repository the command makes: see NEW_REPOSITORY)
            sources.absent += [os.path.join(git, name) for name in NEW_REPOSITORY] + [git]
            if not os.path.lexists(head := os.path.join(workspace, "HEAD")):
                sources.absent.append(head)
        for path, writable in wanted:
            fd = open_plain(workspace, os.path.relpath(path, workspace))
            if fd is None:
                if path in files and not os.path.lexists(path):
                    sources.absent.append(path)
                continue
            mode = os.fstat(fd).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):  # (a FIFO hung bubblewrap's
                os.close(fd)  # opening it, and every command after: a review)
                raise SandboxError(
                    f"the sandbox cannot keep {path} read-only: it is no file or directory "
                    "(a FIFO, a socket, a device); remove it"
                )
            if path == git and not stat.S_ISDIR(mode):
                writable = False  # (a worktree's `.git` file: read-only)
            sources.workspace.append((fd, path, writable))
    except BaseException:
        sources.close()
        raise
    return sources


def _through_links(
    protected: list[tuple[str, bool]], workspace: str, home: str
) -> tuple[list[tuple[str, bool]], list[tuple[str, str]]]:
    """Start-up files reached through the user's own links (`~/.bashrc → dotfiles/bashrc`,
    `~/.config → dotfiles/config`: a dotfiles layout) protected where they lead, when in
    the workspace (outside it the host is read-only); each such link kept with its target,
    to judge as the command ends (a link replaced, by a file or another link, is moved
    aside). They stayed writable: no mount goes through a link (a review)."""
    names = {*(os.path.join(workspace, n) for n in RC_FILES),
             *(os.path.join(home, n) for n in (*RC_FILES, *HOME_FILES))}  # fmt: skip
    resolved: list[tuple[str, bool]] = []
    links: dict[str, str] = {}
    for path, hooks in protected:
        real = os.path.realpath(path)
        if path not in names or real == path:
            resolved.append((path, hooks))
            continue
        links.update(_links_on_the_way(path, workspace))
        if inside(real, workspace):
            resolved.append((real, hooks))
    return list(dict.fromkeys(resolved)), list(links.items())


def _links_on_the_way(path: str, workspace: str) -> dict[str, str]:
    """The links (path → target) on the way from the workspace to ``path``, itself too."""
    found: dict[str, str] = {}
    parts = os.path.relpath(path, workspace).split(os.sep)
    for index in range(1, len(parts) + 1):
        place = os.path.join(workspace, *parts[:index])
        if not os.path.islink(place):
            continue
        with contextlib.suppress(OSError):
            found[place] = os.readlink(place)
        break  # (what lies beyond it is where it leads: resolved)
    return found


def prepare_temp(temp_dir: str, workspace: str, hidden: Sequence[str]) -> None:
    """Make, in a sandbox's own ``/tmp`` (``temp_dir``), the directories bubblewrap mounts
    the workspace and the hidden directories on where they are under ``/tmp``, each
    through no link: a link an earlier command left on the way (``/tmp/x → /oldroot/…``)
    had bubblewrap make directories at a host path of the command's choice. A link or
    file in such a place is removed (a mount would cover it)."""
    for place in _temp_places(workspace, hidden):
        fd = os.open(temp_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for name in place[len("/tmp/") :].split("/"):
                try:
                    if not stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode):
                        os.unlink(name, dir_fd=fd)
                        raise FileNotFoundError
                except FileNotFoundError:
                    os.mkdir(name, 0o755, dir_fd=fd)
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = inner
        finally:
            os.close(fd)


def _temp_chain(workspace: str, hidden: Sequence[str]) -> list[str]:
    """The directories on the way (below ``/tmp``, parents first) to what is mounted in
    the sandbox's own ``/tmp``: each pinned by a mount of its own, so that no command of
    the session can rename it and put a link in its place while another one starts."""
    chain: list[str] = []
    for place in _temp_places(workspace, hidden):
        parent = os.path.dirname(place)
        while parent != "/tmp":
            chain.append(parent)
            parent = os.path.dirname(parent)
    return sorted(set(chain), key=lambda p: p.count("/"))


def _temp_places(workspace: str, hidden: Sequence[str]) -> list[str]:
    places = [os.path.realpath(workspace), *(os.path.normpath(h) for h in hidden)]
    under_tmp = [p for p in places if p.startswith("/tmp/")]
    return [p for p in under_tmp if not any(o != p and inside(p, o) for o in under_tmp)]


def _pinned(workspace: str, protected: Sequence[str]) -> list[str]:
    """The existing directories between the workspace and what it protects (parents
    first): renaming one (``mv .husky x; mkdir -p .husky/_``) replaced what was read-only
    (a review), as a mount point it cannot be."""
    found: list[str] = []
    for path in protected:
        parent = os.path.dirname(path)
        while parent != workspace and inside(parent, workspace):
            if os.path.isdir(parent) and not os.path.islink(parent):
                found.append(parent)
            parent = os.path.dirname(parent)
    return sorted(set(found) - {os.path.join(workspace, ".git")}, key=lambda p: p.count("/"))


def _linked_hooks(workspace: str, folders: Sequence[str]) -> list[str]:
    """The files in the workspace that hooks which are links lead to
    (``.git/hooks/pre-commit → ../../scripts/pre-commit``): read-only too."""
    targets = (os.path.realpath(link) for folder in folders for link in _hook_links(folder))
    return sorted({t for t in targets if inside(t, workspace) and os.path.exists(t)})


def prepare_hooks(workspace: str, home: str | None = None) -> None:
    """Make each hooks directory the workspace's git would run that does not exist yet
    (git makes ``.git/hooks``; a repository may have none, and ``core.hooksPath`` may
    name one to come: a reviewer's command made one and planted a hook that git ran
    outside), and each file its config includes (empty), so that each is mounted
    read-only like the others.

    Raises:
        SandboxError: one that leads through a link in the workspace (a command could
            point the link elsewhere: no mount keeps a link in place).
    """
    workspace = os.path.realpath(workspace)
    for included in included_configs(os.path.join(workspace, ".git", "config")):
        _make_empty(workspace, included)  # (a command would write what git reads)
    for path, hooks in protected_paths(workspace, home or os.path.expanduser("~")):
        if not hooks:
            continue
        relative = os.path.relpath(path, workspace).split(os.sep)
        fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in relative:
                try:
                    mode = os.lstat(name, dir_fd=fd).st_mode
                except FileNotFoundError:
                    os.mkdir(name, 0o755, dir_fd=fd)
                    mode = stat.S_IFDIR
                if stat.S_ISLNK(mode):
                    raise SandboxError(
                        f"the sandbox cannot keep the hooks directory {path} read-only: it "
                        f"leads through a link ({name}), which a command could point "
                        "elsewhere; make it a directory, or use the read-only sandbox"
                    )
                if not stat.S_ISDIR(mode):
                    break  # (a file: mounted read-only as it is)
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = inner
        finally:
            os.close(fd)
        for link in _hook_links(path):
            named = os.path.normpath(os.path.join(path, os.readlink(link)))
            if inside(named, workspace) and named != os.path.realpath(link):
                raise SandboxError(
                    f"the sandbox cannot keep the hook {link} read-only: it leads to "
                    f"{named} through another link, which a command could point elsewhere"
                )


def _make_empty(workspace: str, path: str) -> None:
    """An empty file at ``path`` in the workspace where there is nothing, its directory
    reached through no link (else nothing is made)."""
    if not inside(path, workspace) or os.path.lexists(path):
        return
    folder = open_plain(workspace, os.path.relpath(os.path.dirname(path), workspace))
    if folder is None:
        return
    try:
        dir_fd = os.open(f"/proc/self/fd/{folder}", os.O_RDONLY | os.O_DIRECTORY)
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            os.close(os.open(os.path.basename(path), flags, 0o644, dir_fd=dir_fd))
        finally:
            os.close(dir_fd)
    except OSError:
        pass
    finally:
        os.close(folder)


def _hook_links(folder: str) -> list[str]:
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        return [entry.path for entry in entries if entry.is_symlink()]
    return []


def _runtime_dir() -> str | None:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return runtime if runtime and os.path.isdir(runtime) else None


def start_dir(cwd: str, sandbox: Sandbox, hidden: Sequence[str], temp_dir: str | None) -> str:
    """Where a command asked to start in ``cwd`` starts in the sandbox: there, where the
    sandbox shows it (the workspace, the read-only root); under ``/tmp``, the nearest
    directory at or above it in the sandbox's own ``/tmp`` (``temp_dir``); under a
    hidden directory, its empty root. Nothing hidden is ever bound back for a start
    directory: with follow-cd, the directory one command ends in (``/tmp``, ``/run/x``)
    is where the next one starts."""
    given = os.path.normpath(cwd)
    workspace = os.path.realpath(sandbox.workspace)
    real = os.path.realpath(given)
    if inside(real, workspace):  # (a path to it through a link too)
        return real
    # (/tmp: its own; a link in the workspace that leads out is where it leads: one to
    # the real /tmp was a start bubblewrap could not chdir to, a review)
    path = given if inside(given, "/tmp") and not inside(given, workspace) else real
    if inside(path, "/tmp"):
        while path != "/tmp" and not (temp_dir and plain_dir(temp_dir, path[len("/tmp/") :])):
            path = os.path.dirname(path)
        return path
    covered = ["/var/tmp", *RUNTIME_DIRS, *filter(None, [_runtime_dir()]), *hidden]
    return next((os.path.normpath(c) for c in covered if inside(path, os.path.normpath(c))), path)


def in_own_temp(path: str, temp_dir: str) -> bool:
    """Whether ``path`` is a directory in the sandbox's own ``/tmp`` (``temp_dir``
    outside), reached through no link: where a command may end, and the next start."""
    path = os.path.normpath(path)
    return path.startswith("/tmp/") and plain_dir(temp_dir, path[len("/tmp/") :])


def plain_dir(root: str, relative: str) -> bool:
    """Whether ``relative`` is a directory under ``root`` reached through no link (what a
    command left in its ``/tmp`` is not followed outside it)."""
    fd = open_plain(root, relative)
    if fd is None:
        return False
    try:
        return stat.S_ISDIR(os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def _program() -> bytes:
    program = system_call_filter()
    if program is None:
        raise SandboxError(
            f"the sandbox has no system-call filter for this machine ({platform.machine()}): "
            "it could not keep Unix sockets, a way out, from its commands"
        )
    return program


SECCOMP_FD = 9
"""The descriptor bubblewrap reads the system-call filter from (opened for its exec)."""
FILTER_NAME = "sandbox-filter.bpf"


def filter_file(state_dir: str) -> str:
    """The sandbox's system-call filter in ``state_dir`` (written when missing or stale;
    the state dir is private, and hidden from sandboxed commands).

    Raises:
        SandboxError: no filter is known for this machine, or it cannot be written.
    """
    program = _program()
    path = os.path.join(state_dir, FILTER_NAME)
    try:
        with open_regular(path) as fh:
            if fh.read(len(program) + 1) == program:
                return path
    except OSError:
        pass
    temp = f"{path}.{os.getpid()}"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(program)
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise SandboxError(f"cannot write the sandbox's filter {path}: {exc}") from None
    return path


PROBE_RETRY_SECONDS = 30.0
"""How long a failed probe's answer stands (bubblewrap may be installed meanwhile)."""
_probed: dict[str, tuple[float, str | SandboxError]] = {}


def locate(bwrap: str) -> str:
    """bubblewrap's absolute path (``bwrap`` itself when it is one, or not found): a
    name is looked up in :data:`SYSTEM_DIRS` only (a PATH's entries, relative or in a
    workspace, a sandboxed command can write: reviews planted a ``bwrap`` in
    ``node_modules/.bin``, then in an activated ``.venv/bin``, and the next sandboxed
    command ran it, outside, as root)."""
    if os.path.isabs(bwrap):
        return bwrap
    return system_program(bwrap) or bwrap


def probe(bwrap: str) -> str:
    """Check that bubblewrap runs here with the namespaces the sandbox uses; returns its
    version. Success is remembered; a failure for ``PROBE_RETRY_SECONDS`` (the check
    runs processes: not on every status or sandboxed request).

    Raises:
        SandboxError: it is not installed, or cannot create namespaces (saying why).
    """
    now = time.monotonic()
    if bwrap in _probed:
        when, answer = _probed[bwrap]
        if isinstance(answer, str):
            return answer
        if now - when < PROBE_RETRY_SECONDS:
            raise answer
    try:
        version = _trial(bwrap)
    except SandboxError as exc:
        _probed[bwrap] = (now, exc)
        raise
    _probed[bwrap] = (now, version)
    return version


def _trial(bwrap: str) -> str:
    if not os.path.isabs(bwrap):
        raise SandboxError(
            f"bubblewrap is not installed ({bwrap} not found in {', '.join(SYSTEM_DIRS)}): "
            "install the bubblewrap package to use the sandbox (or set WAVE_BWRAP to its path)"
        )
    try:
        version = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        read_end, write_end = os.pipe()  # (the filter is far smaller than a pipe)
        try:
            try:
                os.write(write_end, _program())
            finally:
                os.close(write_end)
            trial = subprocess.run(
                [*host_read_only(bwrap, []), bwrap, "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-net",
                 "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *_PROC_READ_ONLY,
                 "--seccomp", str(read_end), "--", "true"],
                capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL,
                pass_fds=(read_end,),
            )  # fmt: skip
        finally:
            os.close(read_end)
    except FileNotFoundError:  # (a path: WAVE_BWRAP's, as a name is looked up first)
        raise SandboxError(
            f"bubblewrap is not installed ({bwrap} not found, the path WAVE_BWRAP names): "
            "install the bubblewrap package to use the sandbox, or set WAVE_BWRAP to its path"
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
    return version or "bubblewrap"
