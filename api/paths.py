"""Where a state directory keeps its things (SPEC §13), shared by client and supervisor.

Private directories are checked without following symbolic links (SPEC X1): a link, a
directory of another user or a non-directory is refused with an error naming the path,
so a local user cannot steer wave-bash into a directory of their choosing.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from .errors import StateDirError

SOCKET_PATH_LIMIT = 100
"""Longest socket path used as is; ``sun_path`` holds 108 bytes on Linux, 104 on macOS."""

SQLITE_PATH_LIMIT = 512
"""The longest file path SQLite opens (its Unix ``mxPathname``; measured with 3.40)."""

JOURNAL_LONGEST_FILE = "journal.db.building-journal"
"""The longest name of the journal's files (a journal rebuilt beside its place, and its
rollback file): a state dir whose path leaves no room for it started a supervisor that
then failed with "unable to open database file", or only at its first rebuild."""

PROC_FD = Path("/proc/self/fd")
"""Linux: a directory held open is reachable as ``/proc/self/fd/N``, a short path."""


def resolve_state_dir(state_dir: str | os.PathLike[str] | None = None) -> Path:
    """The state dir: the argument, else ``WAVE_STATE_DIR``, else the platform's user state
    dir; as one spelling (:func:`canonical`).

    Raises:
        StateDirError: ``state_dir`` is empty (``--state-dir "$DIR"`` with ``DIR`` unset
            went to the default one: a trial), or too long for SQLite.
    """
    if state_dir is not None and not os.fspath(state_dir):
        raise StateDirError("the state dir given is empty: name one, or give none for the default")
    chosen = Path(state_dir or os.environ.get("WAVE_STATE_DIR") or _user_state_dir())
    try:
        chosen = chosen.expanduser()
    except RuntimeError:  # (`~nosuchuser/x`: a traceback, a trial)
        raise StateDirError(f"the state dir {chosen}: its ~ names no user here") from None
    refuse_foreign_links(chosen.absolute())
    root = canonical(chosen)
    longest = len(os.fsencode(root / JOURNAL_LONGEST_FILE))
    if longest > SQLITE_PATH_LIMIT:
        room = SQLITE_PATH_LIMIT - len(JOURNAL_LONGEST_FILE) - 1
        raise StateDirError(
            f"the state dir's path is {longest - len(JOURNAL_LONGEST_FILE) - 1} bytes long,"
            f" more than the {room} SQLite leaves for its journal's files: choose a shorter one"
        )
    return root


def refuse_foreign_links(path: Path) -> None:
    """Refuse ``path`` where a link of another user's (root's aside) is on its way, the
    links it leads to followed as the kernel does: that user could point it elsewhere
    between two calls (a trial's `nobody` moved root's state dir from one folder to
    another by a link in a sticky folder; a kernel without `protected_symlinks` follows
    it).

    Raises:
        StateDirError: naming the link and its owner.
    """
    owner = _owner()
    if owner is None:  # (Windows: no uids)
        return
    unmapped = _unmapped_owner()
    trusted = {0, owner, *unmapped}
    todo, here, followed = list(path.parts[1:]), Path(path.anchor), 0
    while todo and followed < 40:  # (the kernel's own limit on links in a path)
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            here = here.parent
            continue
        step = here / part
        try:
            st = os.lstat(step)
        except OSError:  # (missing: nothing further to follow; made later as this user's)
            return
        if not stat.S_ISLNK(st.st_mode):
            here = step
            continue
        if st.st_uid not in trusted or _made_by_anyone(step, st, unmapped):
            raise StateDirError(
                f"refusing {path}: {step} on its way is a link of another user's (uid "
                f"{st.st_uid}), who could point it elsewhere; choose a state dir whose path "
                "holds no link of another user's"
            )
        target = Path(os.readlink(step))
        todo = [*target.parts[1:], *todo] if target.is_absolute() else [*target.parts, *todo]
        here = Path(target.anchor) if target.is_absolute() else here
        followed += 1


def default_state_dir() -> Path:
    """The platform's user state dir of wave-bash (where a client given none goes)."""
    return canonical(Path(_user_state_dir()).expanduser())


def canonical(path: Path) -> Path:
    """``path`` absolute with its parent's links and ``..`` resolved as the kernel does:
    one state dir has one name (its cgroups and socket are named after it; ``../state``
    and ``/tmp/x/state`` once had a supervisor each). Its last part is kept as given, so
    a state dir that is itself a link is still seen, and refused (X1)."""
    path = path.absolute()
    if path.name in ("", ".", ".."):
        return Path(os.path.realpath(path))
    return Path(os.path.realpath(path.parent)) / path.name


def _user_state_dir() -> str:
    import platformdirs  # only where no state dir is given

    return platformdirs.user_state_dir("wave-bash")


def current_umask() -> int | None:
    """This process's umask (the mode commands create files with), read without changing
    it: ``os.umask`` would race other threads. (Read as bytes in one go: read and decoded
    line by line, it cost every command's start 20–55 µs more.)"""
    try:
        fd = os.open("/proc/self/status", os.O_RDONLY | os.O_CLOEXEC)
        try:
            status = os.read(fd, 1 << 16)
        finally:
            os.close(fd)
        at = status.index(b"\nUmask:") + len(b"\nUmask:")
        return int(status[at : status.index(b"\n", at)], 8)
    except (OSError, ValueError):
        return None


def _owner() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def check_private_dir(path: Path, *, any_mode: bool = False) -> None:
    """Refuse ``path`` unless it is a real directory (not a link) of this user, mode 0700
    (any mode with ``any_mode``: a caller that only connects, where the supervisor's
    peer credentials are checked anyway, and the next start tightens it).

    Raises:
        StateDirError: naming the path and what is wrong with it.
    """
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise StateDirError(f"private dir {path} cannot be used: {exc.strerror}") from None
    check_dir_stat(path, st, any_mode=any_mode)


def check_dir_stat(
    path: Path, st: os.stat_result, tighten: int | None = None, any_mode: bool = False
) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise StateDirError(
            f"refusing {path}: it is a symbolic link (a private dir must be a real directory)"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise StateDirError(f"refusing {path}: it is not a directory")
    owner = _owner()
    if owner is not None and st.st_uid != owner:
        raise StateDirError(
            f"refusing {path}: it belongs to another user (uid {st.st_uid}, not {owner})"
        )
    if owner is not None and st.st_mode & 0o077 and not any_mode:
        if tighten is None:
            raise StateDirError(
                f"refusing {path}: its mode is {stat.S_IMODE(st.st_mode):04o}, not 0700"
            )
        os.fchmod(tighten, 0o700)  # ours: made private through the descriptor, not the name


def check_ancestors(path: Path) -> bool:
    """Refuse ``path`` below a directory that lets another user rename what it holds: one
    of another user's (root's aside), or one writable by others, or by a group other than
    this user's own private one, without the sticky bit (``/tmp`` has it). Such a user
    could put a directory of theirs in its place between a check and a write by name: a
    review had a supervisor publish its TCP token, as root, into another user's file so
    (as ssh's ``StrictModes`` refuses a home others can write).

    Returns whether some were missing (to be made as this user's, then looked at again).

    Raises:
        StateDirError: naming that directory and what to do.
    """
    owner = _owner()
    if owner is None:  # (Windows: no uids)
        return False
    unmapped = _unmapped_owner()
    trusted = {0, owner, *unmapped}
    missing = False
    for parent in path.parents:  # (its links resolved as the kernel does: see canonical)
        try:
            st = os.stat(parent)
        except OSError:
            missing = True
            continue
        if st.st_uid not in trusted or _made_by_anyone(parent, st, unmapped):
            raise StateDirError(
                f"refusing {path}: {parent} above it belongs to another user (uid "
                f"{st.st_uid}), who could put a directory of theirs in its place; choose "
                "a state dir under directories of yours"
            )
        if st.st_mode & stat.S_ISVTX:
            continue
        writer = _acl_writer(parent, st, trusted)
        if writer:  # (its group bits are the ACL's mask: a trial's parent,
            raise StateDirError(  # 0770 with `setfacl -m u:4242:rwx`, passed as root's)
                f"refusing {path}: {parent} above it lets {writer} write in it (its access "
                f"ACL), who could put a directory of theirs in its place; `setfacl -b "
                f"{parent}`, or choose another state dir"
            )
        by_others = st.st_mode & stat.S_IWOTH
        by_group = (
            st.st_mode & stat.S_IWGRP
            and not _own_group(st.st_uid, st.st_gid)
            and writer != ""  # (with an ACL, its own group entry said what the group may)
        )
        if by_others or by_group:
            raise StateDirError(
                f"refusing {path}: {parent} above it is writable by other users (mode "
                f"{stat.S_IMODE(st.st_mode):04o}, no sticky bit), who could put a directory "
                f"of theirs in its place; `chmod go-w {parent}`, or choose another state dir"
            )
    return missing


ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK = 0x02, 0x04, 0x08, 0x10
"""Tags of a POSIX ACL's entries (``system.posix_acl_access``: a version, then entries
of tag, permissions and id, little-endian)."""


def _acl_writer(path: Path, st: os.stat_result, trusted: set[int]) -> str | None:
    """Who other than ``trusted`` users and this user's private group the directory's
    access ACL lets write in it (``"user 4242"``, ``"group 50"``, ``"its group"``); ``""``
    when it has an ACL that lets no other write, None when it has none (or none is
    readable: its mode bits say it all)."""
    import struct

    try:
        raw = os.getxattr(path, "system.posix_acl_access")
    except (OSError, AttributeError):  # none (ENODATA), none here (ENOTSUP), or no xattrs
        return None
    entries = [struct.unpack_from("<HHI", raw, at) for at in range(4, len(raw) - 7, 8)]
    mask = next((perm for tag, perm, _ in entries if tag == ACL_MASK), 0o7)
    for tag, perm, ident in entries:
        if not perm & mask & 0o2:
            continue
        if tag == ACL_USER and ident not in trusted:
            return f"user {ident}"
        if tag == ACL_GROUP and not _own_group(st.st_uid, ident):
            return f"group {ident}"
        if tag == ACL_GROUP_OBJ and not _own_group(st.st_uid, st.st_gid):
            return "its group"
    return ""


def _own_group(uid: int, gid: int) -> bool:
    """Whether ``gid`` is the private group of ``uid``, its owner and this user (named as
    the user, no other member, listed or by its primary group: what a umask of 002 leaves
    group-writable on Debian and Ubuntu, whose ``~/.local`` would be refused otherwise)."""
    if uid != _owner() or gid != os.getgid():
        return False
    import grp
    import pwd

    try:
        group, user = grp.getgrgid(gid), pwd.getpwuid(uid)
    except KeyError:
        return False
    if group.gr_name != user.pw_name or not set(group.gr_mem) <= {user.pw_name}:
        return False
    # (root's group, gid 0, is the primary group of `sync` or `halt` on some systems)
    return all(u.pw_gid != gid or u.pw_uid == uid for u in pwd.getpwall())


def _unmapped_owner() -> tuple[int, ...]:
    """In a user namespace of its own (flatpak, `bwrap --unshare-user`, a rootless
    container), the uid that owners not mapped there show as (``/``, ``/tmp``: root's
    outside); none in the first namespace, where that uid is a user (``nobody``), nor
    where the namespace maps it (a container's 65536 ids: ``nobody`` is a user there, and
    trusting it let a ``nobody`` own the state dir's parent and swap it, a review)."""
    try:
        with open("/proc/self/uid_map") as fh:
            ranges = [[int(n) for n in line.split()] for line in fh if line.strip()]
        with open("/proc/sys/kernel/overflowuid") as fh:
            overflow = int(fh.read())
    except (OSError, ValueError):
        return ()
    if ranges == [[0, 0, 4294967295]]:
        return ()
    if any(len(r) != 3 or r[0] <= overflow < r[0] + r[2] for r in ranges):
        return ()
    return (overflow,)


def _made_by_anyone(path: Path, st: os.stat_result, unmapped: tuple[int, ...]) -> bool:
    """Whether ``path``, owned by an unmapped user (``unmapped``: root's, or any
    other user's outside, they look alike), is in a directory where any user makes
    entries (``/tmp``): there it may be another user's (a review's ``nobody`` made the
    state dir's parent in a shared folder, and root's supervisor in a namespace mapping
    only itself took it for root's). ``/``, ``/home`` and ``/tmp`` themselves are not."""
    if st.st_uid not in unmapped or path.parent == path:
        return False
    try:
        return bool(os.stat(path.parent).st_mode & stat.S_IWOTH)
    except OSError:
        return True


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) if needed and check it is ours and private (SPEC X1).

    The last component is never followed if it is a symbolic link; a directory of ours
    with a wider mode is tightened to 0700 (through a descriptor opened with
    ``O_NOFOLLOW``, so a link swapped in meanwhile is never chmodded). The parents are
    the user's own choice and may be links (``/var`` → ``/private/var`` on macOS), but
    none may let another user rename what it holds (:func:`check_ancestors`).

    Raises:
        StateDirError: a link, another user's directory, not a directory, not writable,
            under a directory another user can change.
    """
    try:
        missing = check_ancestors(path)  # (first: nothing is made in one it refuses)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if missing:  # (again: a missing one another user made meanwhile)
            check_ancestors(path)
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(path, flags)
        except OSError:
            check_private_dir(path)  # a link or a file: say so
            raise
        try:
            check_dir_stat(path, os.fstat(fd), tighten=fd)
        finally:
            os.close(fd)
        import tempfile  # on this rare path only: the CLI starts without it

        try:
            with tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-"):
                pass  # a unique name: many starters (threads, processes) probe at once
        except OSError as exc:  # full (of bytes or of inodes) is writable: DF3-DF5 apply
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
    except PermissionError as exc:
        raise StateDirError(f"state dir {path} is not writable: {exc.strerror}") from None
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):  # the caller's shortage, not the dir's
            raise
        if exc.errno == errno.EROFS:  # (it said `[Errno 30] … .write-probe-x8f`: a trial)
            raise StateDirError(
                f"state dir {path} is on a read-only file system: make it writable, or use "
                "another (--state-dir, WAVE_STATE_DIR)"
            ) from None
        if exc.errno in (errno.EEXIST, errno.ENOTDIR) and (file := _not_a_directory(path)):
            raise StateDirError(  # (it said `[Errno 17] File exists`: a trial)
                f"state dir {path} cannot be used: {file} is no directory"
            ) from None
        raise StateDirError(f"state dir {path} cannot be used: {exc}") from None
    return path


def _not_a_directory(path: Path) -> Path | None:
    """The first of ``path``'s ancestors that exists and is no directory, if one is."""
    for ancestor in reversed(path.parents):
        if ancestor.exists() and not ancestor.is_dir():
            return ancestor
    return None


def socket_fallback_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where a socket goes when its real path is too long and ``/proc`` cannot shorten it:
    ``$XDG_RUNTIME_DIR/wave-bash`` (a private per-user dir) when set, else
    ``<tmp>/wave-bash-<uid>``. Both are checked like any private dir before use."""
    env = os.environ if env is None else env
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "wave-bash"
    owner = _owner()
    import tempfile

    return Path(tempfile.gettempdir()) / f"wave-bash-{owner if owner is not None else 'user'}"


def check_socket_dir(layout: StateLayout, make: bool) -> None:
    """Check (``make``: make) the directory the socket is in, when it is not the state dir
    itself: the fallback dir. Its refusal says so, and what to change: the checks' own
    advice is a state dir's, and set that way, a user changed the wrong path (helper 217).

    Raises:
        StateDirError: naming the fallback dir, what is wrong and how to choose another.
    """
    where = layout.socket.parent
    if where == layout.root or not (make or os.path.lexists(where)):
        return
    try:
        ensure_private_dir(where) if make else check_private_dir(where)
    except StateDirError as exc:
        raise StateDirError(
            f"the socket's fallback dir cannot be used (the state dir's path is too long "
            "for a socket here; set XDG_RUNTIME_DIR, or TMPDIR, to a private dir of yours, "
            f"or choose a shorter state dir): {exc}"
        ) from None


def proc_fd_usable() -> bool:
    """Whether long socket paths can be reached through ``/proc/self/fd`` (Linux)."""
    return os.environ.get("WAVE_SOCKET_FALLBACK") != "1" and PROC_FD.is_dir()


@contextlib.contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """A ``sun_path`` for ``path`` that fits, valid inside the ``with`` block.

    A long path is reached through its directory held open (``/proc/self/fd/N/name``),
    opened without following a link; the socket itself stays at its real place.
    """
    if len(os.fsencode(path)) <= SOCKET_PATH_LIMIT or not proc_fd_usable():
        yield str(path)
        return
    flags = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW
    fd = os.open(path.parent, flags)
    try:
        yield f"{PROC_FD}/{fd}/{path.name}"
    finally:
        os.close(fd)


def move_aside(path: Path) -> Path:
    """Rename what someone put where a file of ours belongs (a directory, a link) to a
    name of its own beside it, ``NAME.moved-<ns>``, and return that: kept, never
    deleted, never followed.

    Raises:
        OSError: it cannot be renamed (gone meanwhile, a directory not writable).
    """
    aside = path.with_name(f"{path.name}.moved-{time.time_ns()}")
    os.rename(path, aside)
    return aside


class StateLayout:
    """The files of one state directory. (A plain class, as in the rest of the CLI's hot
    path: importing ``dataclasses`` or ``typing`` would cost a ``wave-bash run`` 5 ms.)"""

    __slots__ = ("root",)

    def __init__(self, root: Path) -> None:
        self.root = root

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateLayout) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"StateLayout({str(self.root)!r})"

    @property
    def journal(self) -> Path:
        return self.root / "journal.db"

    @property
    def lock(self) -> Path:
        return self.root / "supervisor.lock"

    @property
    def log(self) -> Path:
        return self.root / "supervisor.log"

    @property
    def tcp_endpoint(self) -> Path:
        """Port and token of a supervisor listening on loopback TCP (see api.transport)."""
        return self.root / "supervisor.tcp"

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @property
    def ssh(self) -> Path:
        """The sockets of shared connections to remotes (``api.transport.control_path``)."""
        return self.root / "ssh"

    @property
    def socket(self) -> Path:
        """The socket: in the state dir, reached through ``/proc`` when its path is too
        long (Linux), else in the private fallback dir (:func:`socket_fallback_dir`)."""
        real = self.root / "supervisor.sock"
        if len(os.fsencode(real)) <= SOCKET_PATH_LIMIT or proc_fd_usable():
            return real
        import hashlib

        digest = hashlib.sha256(os.fsencode(self.root)).hexdigest()[:16]
        return socket_fallback_dir() / f"{digest}.sock"
