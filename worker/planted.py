"""What a sandboxed command leaves in its workspace for git or a shell to run later,
outside the sandbox (SPEC SB): the repositories and start-up files found as it starts
(protected by the sandbox's mounts, ``worker.sandbox``), and what it made of them judged
and moved aside as it ends (a ``.git`` it made, a nested repository's ``core.fsmonitor``,
a hook). Read here, never by running git, whose config is what is judged.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
import shutil
import stat
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from .files import open_regular
from .gitindex import MAX_GITLINKS, MAX_INDEX_BYTES, gitlinks

SYSTEM_DIRS = (
    "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
    "/run/current-system/sw/bin",
)  # fmt: skip
"""Where the supervisor finds the programs it runs outside a sandbox for a sandboxed task
(bubblewrap, git reading a config, the task's monitor bash), never on the caller's
``PATH``: its entries may lie in a workspace (an activated ``.venv/bin``,
``node_modules/.bin``, ``~/.local/bin`` with ``--workspace ~``) that an earlier sandboxed
command wrote (a review planted ``git``, ``bwrap`` and ``bash`` there; each ran outside,
as root). The last is NixOS's."""


def system_program(name: str) -> str | None:
    """``name`` found in :data:`SYSTEM_DIRS`, or None."""
    return shutil.which(name, path=os.pathsep.join(SYSTEM_DIRS))


RC_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".mkshrc", ".gitconfig",
)  # fmt: skip
"""Start-up files of shells (and git's own config: its aliases and ``core.fsmonitor``
run programs): what a sandboxed command writes there would run unsandboxed later."""


HOME_FILES = (
    ".config/git/config", ".config/fish/config.fish", ".config/fish/conf.d",
    ".config/fish/functions", ".config/fish/completions", ".config/fish/fish_variables",
    ".local/share/fish/vendor_conf.d", ".local/share/fish/vendor_functions.d",
    ".local/share/fish/vendor_completions.d", ".bashrc.d", ".profile.d", ".zshrc.d",
    ".ssh/rc", ".ssh/config", ".ssh/config.d", ".ssh/authorized_keys", ".ssh/authorized_keys2",
    ".ssh/environment", ".pam_environment", ".config/environment.d", ".config/autostart",
    ".config/systemd/user", ".config/systemd/user.control", ".local/share/systemd/user",
)  # fmt: skip
"""Besides those, in a home directory given as the workspace: git's other user config,
fish's and the shells' start-up folders, ssh's (``~/.ssh/rc`` runs at each login,
``~/.ssh/config`` names programs, ``authorized_keys`` lets a key in; a review planted an
fsmonitor in the first), and what a login or the desktop runs or reads its environment
from (a user service, an autostart entry): what ``api.permissions`` asks for as code a
shell or a login runs (a review wrote a fish function and a user service from inside).
A folder is read-only whole; one missing, once made, is moved aside whole."""


NEW_REPOSITORY = ("config", "config.worktree", "commondir", "hooks")
"""What of a ``.git`` the workspace had not as a command started (``git init``), and which
it made, is moved aside as it ends, with a ``.git`` made as a file (a ``gitdir:`` pointer
to a directory of its own) and a ``HEAD`` in the workspace itself, which would make it a
git dir (``git init --bare .``): git run there later, outside, would run what the command
put in its config (``core.fsmonitor``: a shell prompt showing git's status runs it as you
``cd`` there; a review) or hooks. The repository stays; so does its config where it holds only
settings that run nothing (:data:`INERT_SETTINGS`: a clone keeps its remote, a SHA-256
or reftable repository its format), and its hooks where they are ``git init``'s samples."""


INERT_SETTINGS = re.compile(
    r"(?:core\.(?:repositoryformatversion|filemode|bare|logallrefupdates|ignorecase"
    r"|precomposeunicode|symlinks|autocrlf|eol|safecrlf|sharedrepository)"
    r"|extensions\.(?:objectformat|refstorage|partialclone|worktreeconfig)"
    r"|remote\..+\.(?:url|pushurl|fetch|push|promisor|partialclonefilter|tagopt|mirror|prune)"
    r"|branch\..+\.(?:remote|pushremote|merge|rebase)|submodule\.(?:.+\.)?(?:url|active|branch)"
    r"|submodule\.recurse"
    r"|user\.(?:name|email)|init\.defaultbranch|pull\.(?:rebase|ff)|fetch\.prune"
    r"|push\.(?:default|autosetupremote)|core\.worktree)",
    re.DOTALL,
)
"""Settings of a new repository's config that run nothing (``git init`` and ``git clone``
write these): any other, or one git cannot read, has the config moved aside."""


REMOTE_URL_KEYS = re.compile(r"(?:remote\..+\.(?:url|pushurl)|submodule\..+\.url)", re.DOTALL)


NETWORK_URL = re.compile(r"(?:(?:https?|ssh|git)://|[\w.-]+@[\w.-]+:(?!:))[^\s]*", re.ASCII)
"""The only URLs inert there: of another machine. A path names a repository here, whose
hooks a push runs, and which the command may have written (the workspace, the session's
``/tmp``, through ``/proc/self/cwd``: reviews planted a ``pre-receive`` in each);
``ext::`` runs a command."""


REMOTE_NAME_KEYS = re.compile(
    r"(?:branch\..+\.(?:remote|pushremote)|extensions\.partialclone)", re.DOTALL
)
"""Settings whose value names a remote, or else is taken for a URL: it must name one the
config defines (or be ``.``, the repository itself)."""


CONFIG_READ_LIMIT = 1 << 16


def _move_link_on_the_way(
    parent: str, task_id: str, made_after: float, made_before: float
) -> list[str]:
    """Move aside the first link on the way to ``parent`` (a protected file's directory)
    where the command made it (its change time in the task's): git would follow it to
    what the command wrote. Returns the path moved."""
    parts = [part for part in parent.split("/") if part]
    for index, name in enumerate(parts):
        above = "/" + "/".join(parts[:index])
        fd = open_plain("/", above)
        if fd is None:
            return []
        try:
            found = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISLNK(found.st_mode):
                continue
            made = made_after - CLOCK_SLACK <= found.st_ctime <= made_before
            if made and _move_aside(fd, name, task_id):
                return [os.path.join(above, name)]
            return []
        except OSError:
            return []
        finally:
            os.close(fd)
    return []


def _stays(fd: int, parent: str, name: str, made: os.stat_result) -> bool:
    """Whether a protected file a sandboxed command made stays where it is: a new
    repository's ``.git`` directory (what git would run of it is moved), its config where
    every setting runs nothing, its hooks directory holding only ``git init``'s samples,
    never a ``HEAD`` in the workspace itself."""
    if name == ".git":
        return stat.S_ISDIR(made.st_mode)
    if name == "config" and os.path.basename(parent) == ".git":
        return _inert_config(fd, name, made)
    if name == "hooks" and os.path.basename(parent) == ".git":
        return _inert_hooks(fd, name, made)
    return False


def _inert_config(fd: int, name: str, made: os.stat_result) -> bool:
    """A git config a command made that runs nothing, under one name only (a hard link
    elsewhere in the workspace would stay writable once it is read-only; a review)."""
    return stat.S_ISREG(made.st_mode) and made.st_nlink == 1 and _runs_nothing(fd, name)


def _inert_hooks(fd: int, name: str, made: os.stat_result) -> bool:
    """A hooks directory a command made that holds only ``git init``'s samples."""
    return stat.S_ISDIR(made.st_mode) and _only_samples(fd, name)


def _move_aside(fd: int, name: str, task_id: str) -> bool:
    """Rename ``name`` in the directory ``fd`` to ``NAME.moved-by-wave-bash-TASK`` (with a
    random part where something is in the way); whether it was there to move. A
    directory the command made read-only (`chmod 555 .git`, which kept a planted
    `commondir` where it was: a review) is made writable for its owner first."""
    suffixes = [task_id, f"{task_id}-{os.urandom(4).hex()}"]
    while suffixes:
        aside = f"{name}.moved-by-wave-bash-{suffixes[0]}"
        try:
            os.rename(name, aside, src_dir_fd=fd, dst_dir_fd=fd)
        except FileNotFoundError:  # (not made: nothing to move)
            return False
        except PermissionError:
            if not _owner_may_write(fd):  # (else the same name again)
                return False
            continue
        except OSError:  # (a directory in the way: the next name)
            suffixes.pop(0)
            continue
        with contextlib.suppress(OSError):
            _remember(
                _MOVED,
                _entry_key(fd, aside),
                _identity(os.stat(aside, dir_fd=fd, follow_symlinks=False)),
            )
        return True
    return False


REMEMBERED = 10_000
"""Entries :data:`_MOVED` and :data:`_INERT` hold at most (then they start again empty:
what they spare is work, never a judgement)."""


def _remember(registry: dict[Any, Any], key: Any, value: Any) -> None:
    if len(registry) >= REMEMBERED:
        registry.clear()
    registry[key] = value


_MOVED: dict[tuple[int, int, str], tuple[int, int]] = {}
"""What this process moved aside, by (device, directory, name), as it was then (inode,
change time): a file or link not judged again while it stays so. A rename stamps a new
change time, so each judgement made while a command runs (``supervisor.madefiles``)
moved the last one's again (a review: ``x.moved-by-wave-bash-A.moved-by-wave-bash-A…``);
one changed since is judged as anything made. (A directory is always looked into: what
is written in it leaves its own times as they were.)"""


def _entry_key(fd: int, name: str) -> tuple[int, int, str]:
    folder = os.fstat(fd)
    return folder.st_dev, folder.st_ino, name


def _identity(found: os.stat_result) -> tuple[int, int]:
    return found.st_ino, found.st_ctime_ns


def _moved_by_us(fd: int, name: str, found: os.stat_result) -> bool:
    """Whether ``name`` in the directory ``fd`` is what this process moved aside there,
    unchanged since."""
    return _MOVED.get(_entry_key(fd, name)) == _identity(found)


def _owner_may_write(fd: int) -> bool:
    """Give the directory ``fd`` (opened ``O_PATH``, through no link) its owner's write
    and search bits back; whether it had lacked them."""
    try:
        mode = os.fstat(fd).st_mode
        if mode & 0o300 == 0o300:
            return False
        os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(mode) | 0o300)
    except OSError:
        return False
    return True


POINTERS = frozenset({"commondir", "config.worktree", "gitdir", "config"})
"""The files of an existing git dir that git reads as pointers to more config or to
another git dir, watched while a command runs where they were missing
(``supervisor.madefiles``): git never makes them there itself (``git worktree add``
makes a new admin directory; ``git config --worktree`` a ``config.worktree`` only where
``extensions.worktreeConfig`` is set, in the read-only config)."""


def watch_targets(absent: Sequence[str]) -> list[tuple[str, frozenset[str]]]:
    """What to watch while a sandboxed command runs (``supervisor.madefiles``): each git
    dir (one with a ``HEAD``) in which one of :data:`POINTERS` was missing as it started,
    with those names. A ``.git/commondir`` a background command made had a ``git status``
    outside read the config it named while the command ran on (a trial). What a command
    makes of a new repository (and a shell rc file) is judged as it ends."""
    found: dict[str, set[str]] = {}
    for path in absent:
        if path.endswith(("/", "/*")):
            continue
        directory, name = os.path.split(path)
        if name in POINTERS and os.path.lexists(os.path.join(directory, "HEAD")):
            found.setdefault(directory, set()).add(name)
    return [(directory, frozenset(names)) for directory, names in found.items()]


CLOCK_SLACK = 1.0
"""Seconds a file's change time may trail the clock (the kernel stamps it coarsely)."""


MODULE_DEPTH = 8
"""Directories deep under ``.git/modules`` looked at, at most (a submodule named
``libs/foo`` has its git dir at ``modules/libs/foo``; nested ones at ``modules/a/modules/b``)."""


MODULE_ENTRIES = 10_000
"""Entries under ``.git/modules`` looked at, at most, in one task's end."""


MODULE_CONFIGS_READ = 32
"""Configs under ``.git/modules`` that git reads in one task's end, at most (a run of
git each, as the task ends: 4,900 held every caller 11 s; a review): beyond them, a
changed one is moved aside unread."""


WORKTREES_ONE_BY_ONE = 256
"""Linked worktrees (``.git/worktrees/*``) whose files are kept read-only one by one, at
most: beyond, the whole directory is (a review's 50,000 made every later sandboxed start
take 9–13 s and fail for want of descriptors, holding every other caller)."""


SAMPLE_HOOKS = 64
"""Most entries of a hooks directory that can be ``git init``'s samples (it makes 13)."""


def _move_module_parts(
    modules: str, task_id: str, made_after: float, made_before: float,
    seen: list[int] | None = None,
) -> list[str]:  # fmt: skip
    """Under ``modules`` (submodules' git dirs, whose config a plain `git status` at the
    top runs and whose hooks `git submodule update` runs: reviews planted both, through
    names with a slash, ``config.worktree``, ``commondir`` and links), judge what the
    command changed (its change time between ``made_after`` and ``made_before``) as a new
    repository's: a config or ``config.worktree`` kept only where every setting runs
    nothing, hooks only as samples; a ``commondir`` (a pointer to a git dir elsewhere) or
    a link (git follows it) is moved aside. Returns the paths moved. ``seen``: what was
    looked at and read, counted across calls (:func:`_move_nested_parts`)."""
    moved: list[str] = []
    fd = open_plain("/", modules.rstrip("/"))
    if fd is None:
        return moved
    seen = [0, 0, 0] if seen is None else seen  # (entries looked at, configs read, unread)
    try:
        _judge_module_dir(fd, modules.rstrip("/"), task_id, made_after, made_before, 0, seen, moved)
    finally:
        os.close(fd)
    return moved


GIT_RUNS = ("config", "config.worktree", "commondir", "hooks")
"""The names in a git dir whose change has git run what the command wrote."""


GIT_REMOTES = ("remotes", "branches")
"""A git dir's legacy remote files: a path there names a repository whose hooks a push
runs (a review's `remotes/origin` pointed at a bare one the command made)."""


GIT_DATA = frozenset({"objects", "refs", "logs", "lfs", "annex", "rr-cache"})
"""Directories of a git dir that hold data, not what git runs: not looked through (git
LFS's and git-annex's objects would spend the budget in every large repository)."""


def _judge_module_dir(
    fd: int, path: str, task_id: str, made_after: float, made_before: float,
    depth: int, seen: list[int], moved: list[str],
) -> None:  # fmt: skip
    """Judge the directory ``fd`` and what is below it. In a git dir (one with a ``HEAD``,
    as git tells them, or a ``.git``) :data:`GIT_RUNS` and :data:`GIT_REMOTES` are judged
    by name first, whatever the budget (a flood elsewhere had spent it: a review's configs
    of three more repositories stayed unread), and its data directories skipped;
    elsewhere (``modules/``, ``modules/libs/``) only a config that is a file is, and every
    directory is looked into, whatever its name (a submodule named ``config`` or ``lfs``
    is a git dir: a review). ``seen``: entries looked at, configs read, and directories
    that could not be read."""
    git_dir = _has_head(fd) or os.path.basename(path) == ".git"
    judged: set[str] = set()
    for name in GIT_RUNS:  # (a config as a file wherever it is: a repository without its
        try:  # `HEAD` yet is one once `git init` runs there)
            kind = stat.S_IFMT(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            continue
        if git_dir or (kind != stat.S_IFDIR and name != "hooks"):
            _judge_part(fd, path, name, task_id, made_after, made_before, seen, moved)
            judged.add(name)
    if git_dir:
        for name in GIT_REMOTES:
            _move_changed_entries(fd, path, name, task_id, made_after, made_before, seen, moved)
            judged.add(name)
    try:
        listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)  # (fd: O_PATH)
        try:
            with os.scandir(listing) as found:  # (no more listed than looked at)
                entries = [e.name for e in itertools.islice(found, MODULE_ENTRIES + 1)]
        finally:
            os.close(listing)
    except OSError:
        seen[2] += 1  # (said: what it hides was not judged)
        return
    for name in entries:
        if name in judged:
            continue
        seen[0] += 1
        if seen[0] > MODULE_ENTRIES:
            return
        try:
            made = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(made.st_mode) and _moved_by_us(fd, name, made):
            continue
        if stat.S_ISLNK(made.st_mode):  # (git follows it)
            changed = made_after <= made.st_ctime <= made_before
            if changed and _move_aside(fd, name, task_id):
                moved.append(os.path.join(path, name))
        elif stat.S_ISDIR(made.st_mode) and not (git_dir and name in GIT_DATA):
            if depth >= MODULE_DEPTH or (inner := _inner_dir(fd, name, seen)) is None:
                continue
            try:
                sub_path = os.path.join(path, name)
                _judge_module_dir(inner, sub_path, task_id, made_after, made_before,
                                  depth + 1, seen, moved)  # fmt: skip
            finally:
                os.close(inner)


def _inner_dir(fd: int, name: str, seen: list[int]) -> int | None:
    """The directory ``name`` of ``fd`` opened (``O_PATH``) through no link, or None,
    counted in ``seen`` as unread."""
    try:
        return os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY, dir_fd=fd)
    except OSError:
        seen[2] += 1
        return None


def _has_head(fd: int) -> bool:
    """Whether the directory ``fd`` has a ``HEAD`` (git takes no directory without one
    for a git dir)."""
    try:
        os.stat("HEAD", dir_fd=fd, follow_symlinks=False)
    except OSError:
        return False
    return True


def _move_changed_entries(
    fd: int, path: str, name: str, task_id: str, made_after: float, made_before: float,
    seen: list[int], moved: list[str],
) -> None:  # fmt: skip
    """Move aside each entry of the directory ``name`` that changed between the two times
    (the whole directory where it holds more than :data:`SAMPLE_HOOKS`, or is unreadable)."""
    try:
        made = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return
    if not stat.S_ISDIR(made.st_mode):  # (a file or link there: git reads none of it…
        if made_after <= made.st_ctime <= made_before and _move_aside(fd, name, task_id):
            moved.append(os.path.join(path, name))  # …but a link may lead to a directory)
        return
    found = _hooks_listed(fd, name)
    if found is None or len(found) > SAMPLE_HOOKS:  # (changed, as _changed_inside counts)
        if _move_aside(fd, name, task_id):
            moved.append(os.path.join(path, name))
        return
    if (inner := _inner_dir(fd, name, seen)) is None:
        return
    try:
        for entry, ctime in found:
            if not made_after <= ctime <= made_before:
                continue
            with contextlib.suppress(OSError):
                if _moved_by_us(inner, entry, os.stat(entry, dir_fd=inner, follow_symlinks=False)):
                    continue
            if _move_aside(inner, entry, task_id):
                moved.append(os.path.join(path, name, entry))
    finally:
        os.close(inner)


def _judge_part(
    fd: int, path: str, name: str, task_id: str, made_after: float, made_before: float,
    seen: list[int], moved: list[str],
) -> None:  # fmt: skip
    """Judge one of :data:`GIT_RUNS` in the git dir ``fd`` as a new repository's, where
    the command changed it (a hooks directory also where a hook in it changed: one edited
    in place leaves the directory's own time as it was; a review)."""
    try:
        made = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return
    changed = made_after <= made.st_ctime <= made_before
    if name == "hooks" and not changed and stat.S_ISDIR(made.st_mode):
        changed = _changed_inside(fd, name, made_after, made_before)
    if not changed:
        return
    if stat.S_ISLNK(made.st_mode) or name == "commondir":
        kept = False
    elif name == "hooks":
        kept = _inert_hooks(fd, name, made)
    elif _INERT.get((made.st_dev, made.st_ino)) == made.st_ctime_ns:
        kept = True  # (read already, unchanged since)
    else:
        seen[1] += 1
        kept = seen[1] <= MODULE_CONFIGS_READ and _inert_config(fd, name, made)
        if kept and time.time() - made.st_ctime > CLOCK_SLACK:  # (one written again within
            # the clock's tick would keep its change time: read again until it is older)
            _remember(_INERT, (made.st_dev, made.st_ino), made.st_ctime_ns)
    if not kept and _move_aside(fd, name, task_id):
        moved.append(os.path.join(path, name))


_INERT: dict[tuple[int, int], int] = {}
"""Configs read and kept (device, inode → change time): not read again, nor counted in
:data:`MODULE_CONFIGS_READ`, while unchanged. A command is judged again as it runs
(``supervisor.madefiles``), and a new repository's config was read at each judgement,
its budget spent on the same ones."""


def _changed_inside(fd: int, name: str, made_after: float, made_before: float) -> bool:
    """Whether an entry of the directory ``name`` changed between the two times (more
    than :data:`SAMPLE_HOOKS` entries count as changed: no hooks directory has them)."""
    found = _hooks_listed(fd, name)
    return (
        found is None
        or len(found) > SAMPLE_HOOKS
        or any(made_after <= ctime <= made_before for _, ctime in found)
    )


def _only_samples(fd: int, name: str) -> bool:
    """Whether a hooks directory holds only what ``git init`` puts there (``*.sample``
    files, which git never runs: a hook runs by its exact name)."""
    found = _hooks_listed(fd, name)
    return (
        found is not None
        and len(found) <= SAMPLE_HOOKS
        and all(entry.endswith(".sample") for entry, _ in found)
    )


def _hooks_listed(fd: int, name: str) -> list[tuple[str, float]] | None:
    """The first :data:`SAMPLE_HOOKS` + 1 entries of the directory ``name`` (opened
    through no link), each with its change time; None where it cannot be read."""
    try:
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
    except OSError:
        return None
    try:
        with os.scandir(inner) as entries:
            return [
                (e.name, e.stat(follow_symlinks=False).st_ctime)
                for e in itertools.islice(entries, SAMPLE_HOOKS + 1)
            ]
    except OSError:
        return None
    finally:
        os.close(inner)


def _runs_nothing(fd: int, name: str) -> bool:
    """Whether a git config (opened through no link) holds only :data:`INERT_SETTINGS`,
    as git itself reads it (``git config --file -``: read, nothing run, no include
    followed)."""
    git = system_program("git")
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        try:
            text = os.read(handle, CONFIG_READ_LIMIT + 1)
        finally:
            os.close(handle)
        if git is None or len(text) > CONFIG_READ_LIMIT:
            return False
        listed = subprocess.run(
            [git, "config", "--file", "-", "--list", "--null"], input=text,
            capture_output=True, timeout=10, env={"PATH": os.defpath, "GIT_CONFIG_NOSYSTEM": "1"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    if listed.returncode != 0:
        return False
    settings = [
        entry.decode("utf-8", "replace").partition("\n")
        for entry in listed.stdout.split(b"\0")
        if entry
    ]
    remotes = {key[len("remote.") : -len(".url")] for key, _, _ in settings
               if key.startswith("remote.") and key.endswith(".url")}  # fmt: skip
    return all(
        INERT_SETTINGS.fullmatch(key)
        and (not REMOTE_URL_KEYS.fullmatch(key) or NETWORK_URL.fullmatch(value))
        and (not REMOTE_NAME_KEYS.fullmatch(key) or value in remotes or value == ".")
        for key, _, value in settings
    )


def protected_paths(
    workspace: str, home: str, nested: list[str] | None = None
) -> list[tuple[str, bool]]:
    """What git or a shell would run later, outside the sandbox, if a command wrote it,
    each with whether it is a hooks directory: every ``.git`` dir in the workspace pinned
    in place, its (and the submodules its config names') ``hooks`` and ``config``
    read-only, its ``commondir``, ``config.worktree``, the files its config includes and
    the hooks directory it names (``core.hooksPath``; husky's ``.husky/_`` with the
    scripts in ``.husky`` its hooks run) too, a ``.git`` file (a worktree's pointer)
    read-only, the shell rc files in the workspace and in the home directory (if in the
    workspace). ``nested``: its nested repositories, if found already."""
    found: list[tuple[str, bool]] = []
    nested = nested_repositories(workspace)[0] if nested is None else nested
    for root in (workspace, *nested[:NESTED_PROTECTED]):
        git = os.path.join(root, ".git")
        found.append((git, False))
        if os.path.isdir(git) and not os.path.islink(git):
            found += _repository(root, git, 0)
        elif (pointed := _gitdir(git)) is not None and inside(pointed, os.path.realpath(workspace)):
            found += [(pointed, False), *_repository(root, pointed, 0)]  # (`.bare` layout)
        if root != workspace and _bare(root):  # (git takes the directory itself, also
            found += _repository(root, root, 0)  # where its `.git` is none: helper 218)
    for hooks in _user_hooks_paths(home):  # (relative: in whatever repository git runs)
        found.append((os.path.realpath(os.path.join(workspace, os.path.expanduser(hooks))), True))
    found += [(config, False) for config in _user_configs(home)]  # (those in the workspace)
    found += [(os.path.join(workspace, name), False) for name in RC_FILES]
    found += [(os.path.join(home, name), False) for name in (*RC_FILES, *HOME_FILES)]
    real = os.path.realpath(workspace)
    return [
        (path, hooks)
        for path, hooks in dict.fromkeys(found)
        if inside(path, workspace) or inside(path, real)
    ]


NESTED_DEPTH = 2
"""Levels below the workspace where repositories of their own are found (a folder of
clones, a vendored clone, a submodule whose ``.git`` is still a directory)."""


NESTED_LISTED = 2048
"""Directories of the workspace looked at for them, at most, as each sandboxed command
starts (about 5 µs each)."""


NESTED_JUDGED = 8192
"""The same as each ends, for what it made (a project's `node_modules` holds a directory
for each package, about 30 ms for 6000 here)."""


NESTED_PROTECTED = 32
"""Of them, those kept read-only (each takes several mounts: a review's command made 600,
and each later sandboxed start took 8–13 s; 1000 passed bubblewrap's argument limit)."""


def nested_repositories(workspace: str, listed: int = NESTED_LISTED) -> tuple[list[str], bool]:
    """Directories at most :data:`NESTED_DEPTH` below the workspace that hold a ``.git``
    (a review's command set a ``core.fsmonitor`` in ``svc-a/.git/config`` of a folder of
    clones, which the next `git status` there ran, outside), looked for among the first
    ``listed`` directories (files cost nothing: a review's 6000 had hidden a repository
    made after them); with whether all were looked at. A link there to a directory of
    the workspace gives the repository that directory is in, as git finds it from there
    (`cd vendor && git status` runs in the deep one it leads to: helpers 219, 221)."""
    found: list[str] = []
    budget = [listed]
    real = os.path.realpath(workspace)

    unread = [False]  # (a directory it cannot list hides what is in it: a review's
    # `chmod 311 d` kept `d/evil`'s config from a supervisor that is no root)

    def walk(folder: str, depth: int) -> None:
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name != ".git" and entry.is_symlink():
                        budget[0] -= 1
                        if budget[0] < 0:  # (each is followed: counted as a directory)
                            return
                        led = _repository_at_or_above(os.path.realpath(entry.path), real)
                        if led is not None and led not in found:
                            found.append(led)
                        continue
                    if entry.name == ".git" or not entry.is_dir(follow_symlinks=False):
                        continue
                    budget[0] -= 1
                    if budget[0] < 0:
                        return
                    if _holds_one(entry.path):
                        found.append(entry.path)
                    if depth < NESTED_DEPTH:
                        walk(entry.path, depth + 1)
        except OSError:
            unread[0] = True

    walk(workspace, 1)
    return found, budget[0] >= 0 and not unread[0]


def _repository_at_or_above(path: str, workspace: str) -> str | None:
    """The repository git finds from ``path`` (it or a directory above it that holds or is
    one), below the workspace, not in a git dir (a link to the workspace itself, or into
    its ``.git``, had the workspace repository's own config and hooks judged as a new
    one's and moved aside: helper 221); None where there is none."""
    relative = os.path.relpath(path, workspace)
    if relative == "." or relative.startswith("..") or ".git" in relative.split(os.sep):
        return None
    while path.rstrip("/") != workspace.rstrip("/"):
        if _holds_one(path):
            return path
        path = os.path.dirname(path)
    return None


def _holds_one(path: str) -> bool:
    """Whether the directory ``path`` holds a repository (a ``.git``) or is one (bare)."""
    return os.path.lexists(os.path.join(path, ".git")) or _bare(path)


NESTED_GITLINKED = 1024
"""Repositories the indexes name as gitlinks that are judged, at most (past that, the
result says it could not look at all)."""


def gitlinked_repositories(workspace: str, roots: Sequence[str]) -> tuple[list[str], bool]:
    """Repositories below the workspace that the index of its repository, or of one of
    ``roots``, names as a gitlink, at any depth, and those theirs name in turn: `git
    status` goes into each (a review's at `a/b/c`, past :data:`NESTED_DEPTH`, ran its
    fsmonitor at a plain `git status` outside: helper 219). With whether every index
    could be read."""
    found: list[str] = []
    queue = [workspace, *roots]
    listed = set(queue)
    budget, looked = [MAX_INDEX_BYTES], 0  # (one look's: see worker.gitindex)
    while queue:
        root = queue.pop(0)
        git_dir = next((d for d in _git_dirs(root) if os.path.isdir(d)), None)
        if git_dir is None:  # (a `.git` file: a submodule's, a linked worktree's)
            pointed = _gitdir(os.path.join(root, ".git"), follow=False)
            git_dir = pointed if pointed is not None and os.path.isdir(pointed) else None
        if git_dir is None:
            continue
        formats = _git_config(os.path.join(git_dir, "config")).get("extensions.objectformat")
        size = 32 if formats == ["sha256"] else 20
        links = gitlinks(os.path.join(git_dir, "index"), size, budget)
        looked += len(links or ())
        if links is None or looked > MAX_GITLINKS:
            return found, False
        for link in links:
            sub = os.path.normpath(os.path.join(root, link))
            relative = os.path.relpath(sub, workspace)  # (an index the command wrote may
            if (  # name anything: `.`, `.git`, `.git/modules/x`, `../..`)
                sub in listed
                or relative.startswith("..")
                or ".git" in relative.split(os.sep)
                or not _holds_one(sub)
            ):
                continue
            if len(found) >= NESTED_GITLINKED:
                return found, False
            listed.add(sub)
            found.append(sub)
            queue.append(sub)
    return found, True


def _git_dirs(root: str) -> list[str]:
    """The git dirs git may take for the repository at ``root``: its ``.git`` (a
    directory, or the file that points to one), and ``root`` itself where it is one
    (bare), which git takes where its ``.git`` is none (an empty ``.git`` directory beside
    a bare repository's files had its config never judged, and git outside ran it:
    helper 218)."""
    dot_git = os.path.join(root, ".git")
    found = [dot_git] if os.path.lexists(dot_git) else []
    return [*found, root] if not found or _bare(root) else found


def _inode(path: str) -> tuple[int, int] | None:
    """The device and inode of ``path`` itself (a link not followed), or None."""
    try:
        found = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def git_dir_identities(roots: Sequence[str]) -> set[tuple[int, int]]:
    """The device and inode of each git dir of the repositories at ``roots``."""
    return {i for root in roots for d in _git_dirs(root) if (i := _inode(d)) is not None}


def _changed_on_the_way(workspace: str, path: str, made_after: float, made_before: float) -> bool:
    """Whether a directory from the workspace down to ``path`` (itself included) changed
    between the two times: what a command moved there, or made there, or made a git dir
    of (a ``HEAD`` added) changes one of them."""
    while inside(path, workspace) and path.rstrip("/") != workspace.rstrip("/"):
        with contextlib.suppress(OSError):
            if made_after <= os.stat(path, follow_symlinks=False).st_ctime <= made_before:
                return True
        path = os.path.dirname(path)
    return False


def _bare(path: str) -> bool:
    """Whether ``path`` is a git dir itself, as git tells one (a ``HEAD``, ``objects`` and
    ``refs``): git takes it from in it or below (a review's `git init --bare src` with a
    ``core.worktree`` ran its fsmonitor at a `git status` in `src/pkg`)."""
    return all(os.path.lexists(os.path.join(path, name)) for name in ("HEAD", "objects", "refs"))


def _move_nested_parts(
    workspace: str, task_id: str, made_after: float, made_before: float, unjudged: list[str],
    known: set[tuple[int, int]] | None = None,
) -> list[str]:  # fmt: skip
    """What a command made of the repositories at most :data:`NESTED_DEPTH` below the
    workspace, judged as a new repository's (:func:`_move_module_parts`; those there as it
    started were read-only, the first :data:`NESTED_PROTECTED`): a review's command ran
    `git init vendor/lib`, set its ``core.fsmonitor`` and put a gitlink to it in the index,
    and a plain `git status` at the top ran it, outside. A ``.git`` file or link it made
    (git follows it) is moved aside. A git dir that was none of those there as it started
    (``known``, :func:`git_dir_identities`; None: not all were found, and then one with a
    directory on its way that the command changed) is judged whole, whenever its files
    were written: a command had planted a repository too deep to be looked at, or one
    without its ``HEAD``, and the next moved it up or added the ``HEAD``, and git outside
    ran the config the first had written (helper 215; past a flood of directories that
    left the start's look unfinished, helper 218). Where there was more to look at than
    the budgets allow, the workspace is added to ``unjudged`` (said with the task's
    result)."""
    moved: list[str] = []
    seen = [0, 0, 0]  # (entries looked at, configs read, unread: for all of them together)
    roots, complete = nested_repositories(workspace, NESTED_JUDGED)
    linked, read = gitlinked_repositories(workspace, roots)
    roots, complete = [*roots, *linked], complete and read
    for root in roots:
        fd = open_plain("/", root)
        if fd is None:
            continue
        try:
            for git_dir in _git_dirs(root):
                moved += _judge_git_dir(
                    fd, root, git_dir, workspace, task_id, made_after, made_before, known, seen
                )
        finally:
            os.close(fd)
    if not complete or seen[0] > MODULE_ENTRIES or seen[2]:
        unjudged.append(workspace)
    return moved


def _judge_git_dir(
    fd: int, root: str, git_dir: str, workspace: str, task_id: str, made_after: float,
    made_before: float, known: set[tuple[int, int]] | None, seen: list[int],
) -> list[str]:  # fmt: skip
    """:func:`_move_nested_parts` for one git dir of the repository at ``root`` (open as
    ``fd``): what the command changed of it, or all of it where it is new."""
    new = (
        _inode(git_dir) not in known
        if known is not None
        else _changed_on_the_way(workspace, git_dir, made_after, made_before)
    )
    since = 0.0 if new else made_after  # (what made it one may be older than the command)
    try:
        made = os.stat(git_dir, follow_symlinks=False)
    except OSError:
        return []
    if git_dir == root or stat.S_ISDIR(made.st_mode):
        return _move_module_parts(git_dir, task_id, since, made_before, seen)
    if (
        since <= made.st_ctime <= made_before
        and not _linked_worktree(root, workspace)
        and _move_aside(fd, ".git", task_id)
    ):
        return [os.path.join(root, ".git")]
    return []


def _repository(workspace: str, git: str, depth: int) -> list[tuple[str, bool]]:
    """A git directory's protected paths, its submodules' (named in its read-only
    config, not found by walking what a command can make) to 4 levels."""
    config = os.path.join(git, "config")
    settings = _git_config(config)
    found = [(os.path.join(git, "hooks"), True)]
    found += [
        (os.path.join(git, name), False) for name in ("config", "commondir", "config.worktree")
    ]
    hooks = settings.get("core.hookspath")
    if hooks:  # `core.hooksPath` (husky's `.husky/_`): git runs what is there
        where = os.path.realpath(os.path.join(workspace, os.path.expanduser(hooks[-1])))
        found.append((where, True))
        if os.path.basename(where) == "_":  # husky: its hooks run the scripts beside
            found.append((os.path.dirname(where), False))
    for included in included_configs(config, depth):
        found.append((included, False))
    worktrees = os.path.join(git, "worktrees")  # (linked worktrees' own git dirs)
    with contextlib.suppress(OSError), os.scandir(worktrees) as entries:
        listed = list(itertools.islice(entries, WORKTREES_ONE_BY_ONE + 1))
        if len(listed) > WORKTREES_ONE_BY_ONE:
            found.append((worktrees, False))
            listed = []
        for entry in listed:
            if entry.is_dir(follow_symlinks=False):
                found += [(os.path.join(entry.path, name), False)
                          for name in ("commondir", "gitdir", "config.worktree", "config")]  # fmt: skip
    if depth < 4:
        for name in settings.get("submodule", []):
            module = os.path.join(git, "modules", name)
            if os.path.isdir(module) and not os.path.islink(module):
                found += _repository(workspace, module, depth + 1)
    return found


def _user_hooks_paths(home: str) -> list[str]:
    """Each ``core.hooksPath`` of the system's and the user's git config (not the
    repository's: :func:`_repository`): a relative one names a directory in every
    repository, this workspace's too (a review's `.githooks`, planted by a sandboxed
    command, ran at the next commit outside), and the workspace may have no repository
    yet."""
    return [
        value for config in _user_configs(home)
        for value in _git_config(config).get("core.hookspath", [])
    ]  # fmt: skip


def _user_configs(home: str) -> list[str]:
    """The system's and the user's git configs, with every file they include (kept
    read-only where in the workspace: a review's workspace was the dotfiles repository
    `~/.gitconfig` includes, and its command's `core.fsmonitor` there ran in every
    repository)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    configs = [
        os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig",
        "/usr/local/etc/gitconfig",  # (a git built under /usr/local)
        os.path.join(xdg, "git", "config"),
        os.path.join(home, ".gitconfig"),
        os.environ.get("GIT_CONFIG_GLOBAL", ""),
    ]
    # With what each includes, whatever an `includeIf`'s condition (`gitdir:` matches
    # once the command has made a repository there; a review's included hooksPath ran).
    read = [path for config in configs if config for path in (config, *included_configs(config))]
    return list(dict.fromkeys(read))


def _gitdir(dot_git: str, follow: bool = True) -> str | None:
    """Where a ``.git`` file (``gitdir: ./.bare``) points, or None."""
    line = _first_line(dot_git, follow)
    if line is None or not line.startswith("gitdir:"):
        return None
    return os.path.realpath(os.path.join(os.path.dirname(dot_git), line[7:].strip()))


def _first_line(path: str, follow: bool = False) -> str | None:
    try:
        with io.TextIOWrapper(open_regular(path, follow=follow), "utf-8", "replace") as fh:
            return fh.readline(4096)
    except OSError:
        return None


def _linked_worktree(root: str, workspace: str) -> bool:
    """Whether ``root/.git`` is a linked worktree's pointer as `git worktree add` makes it
    in the workspace's repository: to an admin directory ``.git/worktrees/NAME`` whose
    ``commondir`` leads back to the workspace's git dir, with no config of its own
    (``config.worktree``). Git then takes that repository's config and hooks, read-only:
    nothing of the command's runs, and the pointer stays (a sandboxed `git worktree add`
    had its worktree broken as the command ended: a review)."""
    main = os.path.realpath(os.path.join(workspace, ".git"))
    admin = _gitdir(os.path.join(root, ".git"), follow=False)
    if admin is None or os.path.dirname(admin) != os.path.join(main, "worktrees"):
        return False
    common = _first_line(os.path.join(admin, "commondir"))
    return (
        common is not None
        and os.path.realpath(os.path.join(admin, common.strip())) == main
        and not os.path.lexists(os.path.join(admin, "config.worktree"))
    )


def included_configs(config: str, depth: int = 0) -> list[str]:
    """Every file a config includes (``include.path``, ``includeIf``), its own included
    ones too (to 4 levels), as real paths (relative ones from the config's directory)."""
    found = []
    for value in _git_config(config).get("include.path", []):
        path = os.path.realpath(os.path.join(os.path.dirname(config), os.path.expanduser(value)))
        found.append(path)
        if depth < 4:
            found += included_configs(path, depth + 1)
    return found


def _git_config(config: str) -> dict[str, list[str]]:
    """The few settings of a config file the sandbox reads, each value in order:
    ``core.hookspath``, ``include.path`` (``includeIf`` sections' too), the names of
    its ``submodule`` sections and ``extensions.objectformat`` (empty when unreadable).
    Read line by line as git does: a key may come many times (``git config --add
    include.path``)."""
    try:
        with io.TextIOWrapper(open_regular(config, follow=True), "utf-8", "replace") as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        return {}
    found: dict[str, list[str]] = {}
    kind = ""
    for raw in lines:
        line = raw.strip()
        if line.startswith("["):
            header = line[1 : line.find("]")] if "]" in line else line[1:]
            kind, _, name = header.strip().partition(" ")
            kind = kind.lower().split(".")[0]
            if kind == "submodule" and name.strip():
                found.setdefault("submodule", []).append(name.strip().strip('"'))
            line = line[line.find("]") + 1 :].strip() if "]" in line else ""
            if not line:
                continue
        key, sep, value = line.partition("=")
        key = key.strip().lower()
        value = value.split(" #")[0].split(" ;")[0].strip().strip('"')
        if not sep or not value:
            continue
        if kind == "core" and key == "hookspath":
            found.setdefault("core.hookspath", []).append(value)
        elif kind in ("include", "includeif") and key == "path":
            found.setdefault("include.path", []).append(value)
        elif kind == "extensions" and key == "objectformat":
            found.setdefault("extensions.objectformat", []).append(value.lower())
    return found


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or in it (both normalized)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def open_plain(root: str, relative: str) -> int | None:
    """``relative`` under ``root`` opened (``O_PATH``) through no link, or None where it
    is missing or a link."""
    flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(root, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for name in relative.split("/"):
            if name in ("", "."):
                continue
            inner = os.open(name, flags, dir_fd=fd)
            os.close(fd)
            fd = inner
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise OSError("a link")
    except OSError:
        os.close(fd)
        return None
    return fd


def move_made(
    links: Sequence[tuple[str, str]],
    absent: Sequence[str],
    nested_known: set[tuple[int, int]] | None,
    task_id: str,
    made_before: float,
    made_after: float = 0.0,
) -> tuple[list[str], list[str]]:
    """Move aside, as ``NAME.moved-by-wave-bash-TASK``, each protected file that was
    missing when the command started and is there now, made (its inode changed last)
    before ``made_before``, the command's end: not one a person made after it, seen
    by a supervisor that came up later (a review pointed a repository's
    ``commondir`` at a config whose ``core.fsmonitor`` git ran outside the sandbox);
    returns the paths moved, and where it found more than it looks at. Renamed in its
    directory opened through no link, never followed; where the command put something in the way under that name (it knows
    its task ID), under one with a random part added. An entry ending in ``/`` is a
    ``.git/modules`` directory: what the command changed (after ``made_after``, its
    start) of each git dir there is judged as a new repository's; one ending in ``/*``
    is the workspace, whose nested repositories' git dirs are judged so too. ``links``:
    the user's links on the way to start-up files (path, target), one the command
    replaced moved aside too; ``nested_known``: the nested repositories' git dirs as it
    started (:func:`git_dir_identities`)."""
    moved = []
    unjudged: list[str] = []
    for path, target in links:
        parent, name = os.path.split(path)
        fd = open_plain("/", parent)
        if fd is None:
            continue
        try:
            with contextlib.suppress(OSError):
                if os.readlink(name, dir_fd=fd) == target:
                    continue  # (as it was)
            with contextlib.suppress(OSError):
                changed = os.stat(name, dir_fd=fd, follow_symlinks=False).st_ctime
                now_made = made_after - CLOCK_SLACK <= changed <= made_before
                if now_made and _move_aside(fd, name, task_id):
                    moved.append(path)
        finally:
            os.close(fd)
    for path in absent:
        if path.endswith("/*"):
            since = made_after - CLOCK_SLACK
            moved += _move_nested_parts(
                path[:-2], task_id, since, made_before, unjudged, nested_known
            )
            continue
        if path.endswith("/"):
            since, seen = made_after - CLOCK_SLACK, [0, 0, 0]
            moved += _move_module_parts(path, task_id, since, made_before, seen)
            if seen[0] > MODULE_ENTRIES or seen[2]:  # (unsaid: a review's 50,000)
                unjudged.append(path.rstrip("/"))
            continue
        parent, name = os.path.split(path)
        fd = open_plain("/", parent)
        if fd is None:  # (a link the command put on the way: `ln -s evil conf` for
            moved += _move_link_on_the_way(parent, task_id, made_after, made_before)
            continue  # an included `conf/local.cfg`; a review)
        try:
            with contextlib.suppress(OSError):
                made = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if made.st_ctime > made_before:
                    continue  # (made after the command ended)
                if _stays(fd, parent, name, made):
                    continue
            if _move_aside(fd, name, task_id):
                moved.append(path)
        finally:
            os.close(fd)
    return moved, unjudged
