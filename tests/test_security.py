"""A hostile local user cannot impersonate the supervisor or steer its directories (issue 11 §1).

The attacker runs as another uid (``nobody``) in a forked child: root can become anyone,
and CI runs as root. The child only makes system calls (it may not be able to read the
Python installation as that user).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import select
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, needs, needs_root, reap, wait_until

from wave_bash.api import Client, StateDirError
from wave_bash.api.errors import ForbiddenError

NOBODY = 65534


@pytest.fixture(autouse=True)
def _as_root() -> None:
    needs_root("acting as another uid needs root (CI runs as root)")


class FakeServer:
    """Another user listening on a Unix socket path, recording what clients send it."""

    def __init__(self, path: Path, make_dir: bool) -> None:
        ready_r, ready_w = os.pipe()
        self._got_r, got_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                if make_dir:
                    os.mkdir(path.parent, 0o777)
                    os.chmod(path.parent, 0o777)
                srv = socket.socket(socket.AF_UNIX)
                srv.bind(str(path))
                os.chmod(path, 0o777)
                srv.listen(8)
                os.write(ready_w, b"1")
                while select.select([srv], [], [], 30)[0]:
                    conn, _ = srv.accept()
                    conn.settimeout(2)
                    got = b""
                    with contextlib.suppress(OSError):
                        conn.sendall(b'{"type":"result","data":{"stdout":"fake"}}\n')
                        while chunk := conn.recv(65536):
                            got += chunk
                    conn.close()
                    os.write(got_w, (got or b"-").replace(b"\n", b" ") + b"\n")
            except BaseException as exc:
                os.write(ready_w, b"E" + repr(exc).encode())
            finally:
                os._exit(0)
        os.close(ready_w)
        os.close(got_w)
        status = os.read(ready_r, 4096)
        os.close(ready_r)
        assert status == b"1", status

    def received(self, connections: int) -> list[bytes]:
        """What each of the first ``connections`` clients sent (``b"-"``: nothing)."""
        got = b""
        while got.count(b"\n") < connections and select.select([self._got_r], [], [], 10)[0]:
            got += os.read(self._got_r, 65536)
        os.kill(self.pid, 9)
        os.waitpid(self.pid, 0)
        os.close(self._got_r)
        return got.splitlines()


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A dir the other user can traverse (pytest's own is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="wb-sec-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def shared_tmp(tmp_path: Path) -> Path:
    """A world-writable sticky dir standing in for /tmp (so the real one is not touched)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    return tmp


def _run_cli(state_dir: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env |= {"WAVE_STATE_DIR": str(state_dir), "TMPDIR": str(tmp), "WAVE_SOCKET_FALLBACK": "1"}
    env["AWS_SECRET_ACCESS_KEY"] = "s3cr3t"
    return subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", *args], capture_output=True, text=True, timeout=60,
        env=env, cwd=REPO,
    )  # fmt: skip


def _long_state_dir(tmp_path: Path) -> Path:
    path = tmp_path / ("d" * 60) / ("e" * 60)
    assert len(os.fsencode(path / "supervisor.sock")) > 108
    return path


def test_fallback_dir_of_another_user_is_refused(tmp_path: Path, shared_tmp: Path) -> None:
    state_dir = _long_state_dir(tmp_path)
    digest = hashlib.sha256(os.fsencode(state_dir)).hexdigest()[:16]
    fake = FakeServer(shared_tmp / "wave-bash-0" / f"{digest}.sock", make_dir=True)
    marker = tmp_path / "ran"
    r = _run_cli(state_dir, shared_tmp, "run", "--", f"touch {marker}")
    got = fake.received(0)
    assert r.returncode == 2, r
    assert "wave-bash-0" in r.stderr and "another user" in r.stderr, r.stderr
    assert "the socket's fallback dir cannot be used" in r.stderr  # (which to change)
    assert got == [] and not marker.exists()  # it never even connected


def test_fallback_dir_as_a_symlink_is_refused(tmp_path: Path, shared_tmp: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    victim.chmod(0o755)
    pid = os.fork()
    if pid == 0:  # the attacker plants the link
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.symlink(victim, shared_tmp / "wave-bash-0")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert (shared_tmp / "wave-bash-0").is_symlink()
    r = _run_cli(_long_state_dir(tmp_path), shared_tmp, "run", "--", "echo hi")
    assert r.returncode == 2, r
    assert "symbolic link" in r.stderr and "wave-bash-0" in r.stderr, r.stderr
    assert "set XDG_RUNTIME_DIR, or TMPDIR, to a private dir of yours" in r.stderr
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755  # not chmodded
    assert list(victim.iterdir()) == []  # no socket created inside


def test_server_of_another_uid_is_refused_before_anything_is_sent(
    tmp_path: Path, shared_tmp: Path
) -> None:
    """The client checks the server's uid (SO_PEERCRED) before it sends its request."""
    state_dir = tmp_path / "s"
    state_dir.mkdir(mode=0o777)
    state_dir.chmod(0o777)  # a careless mode: another user can bind in it
    fake = FakeServer(state_dir / "supervisor.sock", make_dir=False)
    with pytest.raises(ForbiddenError):  # the Python client alike
        Client(state_dir=state_dir).status()
    marker = tmp_path / "ran"
    r = _run_cli(state_dir, shared_tmp, "run", "--", f"touch {marker}")
    got = fake.received(2)
    assert r.returncode == 2, r
    assert "uid 65534" in r.stderr and "impersonat" in r.stderr, r.stderr
    assert got == [b"-", b"-"], got  # both connected and sent nothing at all
    assert not marker.exists()


def test_state_dir_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o755)
    real.chmod(0o755)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(StateDirError, match="symbolic link"):
        Client(state_dir=link).bash("echo hi")
    assert stat.S_IMODE(real.stat().st_mode) == 0o755 and list(real.iterdir()) == []


def test_state_dir_link_is_refused_while_a_supervisor_runs_behind_it(tmp_path: Path) -> None:
    """A link to a state dir is refused as a caller connects, not only when a supervisor
    must start there (before, it was followed to the running one)."""
    real = tmp_path / "real"
    client = Client(state_dir=real)
    try:
        assert client.bash("echo hi").stdout == "hi"
        link = tmp_path / "link"
        link.symlink_to(real)
        with pytest.raises(StateDirError, match="symbolic link"):
            Client(state_dir=link).bash("echo hi")
    finally:
        client.shutdown()


def test_a_link_of_another_user_on_the_way_is_refused(tmp_path: Path) -> None:
    """`nobody` pointed a link of its own, in a sticky folder on the way, from one of
    root's folders to another: root's tasks vanished from view and a second supervisor
    started (a trial; a kernel without `protected_symlinks` follows it). Refused; one's
    own link is followed as before."""
    shared, real = tmp_path / "shared", tmp_path / "real"
    shared.mkdir()
    shared.chmod(0o1777)
    real.mkdir()
    link = shared / "lnk"
    link.symlink_to(real)
    os.lchown(link, NOBODY, NOBODY)
    said = f"{link} on its way is a link of another user's (uid {NOBODY})"
    with pytest.raises(StateDirError, match=re.escape(said)):
        Client(state_dir=link / "state")
    with pytest.raises(StateDirError, match=re.escape(said)):  # (behind a link of one's own)
        mine = tmp_path / "mine"
        mine.symlink_to(link)
        Client(state_dir=mine / "state")
    assert not (real / "state").exists()
    os.lchown(link, 0, 0)
    client = Client(state_dir=link / "state")
    try:
        assert client.bash("echo hi").stdout == "hi" and (real / "state").is_dir()
    finally:
        client.shutdown()


def test_a_state_dir_under_a_file_says_which_is_no_directory(tmp_path: Path) -> None:
    """(`[Errno 17] File exists: '…/afile'`, as a parent is made: a trial.)"""
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(StateDirError) as refused:
        Client(state_dir=afile / "sub" / "state").bash("echo hi")
    assert str(refused.value).endswith(f"cannot be used: {afile} is no directory")


def test_state_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(StateDirError, match="another user"):
        Client(state_dir=theirs).bash("echo hi")


def test_long_state_dir_keeps_its_socket_inside(tmp_path: Path) -> None:
    """On Linux a long path is reached through /proc/self/fd: no shared fallback dir."""
    state_dir = _long_state_dir(tmp_path)
    client = Client(state_dir=state_dir)
    try:
        assert client.bash("echo hi").stdout == "hi"
        sock = state_dir / "supervisor.sock"
        assert stat.S_ISSOCK(sock.lstat().st_mode) and stat.S_IMODE(sock.lstat().st_mode) == 0o600
        assert client.status().socket_path == str(sock)
    finally:
        client.shutdown()
        wait_until(lambda: not (state_dir / "supervisor.sock").exists(), 10)


def _state_dir_of_length(tmp_path: Path, length: int) -> Path:
    path = tmp_path
    while (room := length - len(os.fsencode(path)) - 1) > 200:
        path /= "d" * 200
    return path / ("e" * room)


def test_a_state_dir_too_long_for_sqlite_is_refused_by_its_length(tmp_path: Path) -> None:
    """SQLite opens no file path over 512 bytes: a longer state dir started a supervisor
    that failed with "unable to open database file", and one a few bytes shorter failed
    only when its journal was rebuilt (its longer file name)."""
    longest = _state_dir_of_length(tmp_path, 484)
    with Client(state_dir=longest) as client:
        try:
            task = client.bash("echo kept", run_in_background=True).background_task_id
            assert task is not None
            client.wait(task, timeout=10_000)
            assert client.shutdown()
            (longest / "journal.db").unlink()  # rebuilt from the task files
            assert client.task_output(task).output.strip() == "kept"
        finally:
            client.shutdown()
            reap(longest)
    too_long = _state_dir_of_length(tmp_path, 485)
    with pytest.raises(StateDirError, match="path is 485 bytes long, more than the 484 SQLite"):
        Client(state_dir=too_long)
    r = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(too_long), "tasks"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert (r.returncode, r.stdout) == (2, "") and "choose a shorter one" in r.stderr
    assert not too_long.exists()


def test_fallback_prefers_xdg_runtime_dir(tmp_path: Path) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    state_dir = _long_state_dir(tmp_path)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "WAVE_SOCKET_FALLBACK": "1"}
    env["WAVE_STATE_DIR"] = str(state_dir)
    cli = [sys.executable, "-m", "wave_bash.api.cli"]
    try:
        r = subprocess.run([*cli, "run", "--", "echo hi"], capture_output=True, text=True,
                           env=env, timeout=60, cwd=REPO)  # fmt: skip
        assert (r.returncode, r.stdout.strip()) == (0, "hi"), r
        (sock,) = (runtime / "wave-bash").iterdir()
        assert stat.S_ISSOCK(sock.lstat().st_mode)
        assert stat.S_IMODE((runtime / "wave-bash").stat().st_mode) == 0o700
    finally:
        subprocess.run([*cli, "supervisor", "stop"], env=env, timeout=60, cwd=REPO)


def test_a_runtime_dir_of_another_user_is_named_as_what_to_change(tmp_path: Path) -> None:
    """An ``XDG_RUNTIME_DIR`` of another user's is refused, and the refusal names it as the
    socket's fallback dir to change: it advised choosing another state dir (helper 217)."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    os.chown(runtime, NOBODY, NOBODY)
    state_dir = _long_state_dir(tmp_path)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "WAVE_SOCKET_FALLBACK": "1"}
    r = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "run", "--",
         "echo hi"], capture_output=True, text=True, env=env, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert (r.returncode, r.stdout) == (2, ""), r
    assert f"{runtime} above it belongs to another user (uid {NOBODY})" in r.stderr, r.stderr
    assert "the socket's fallback dir cannot be used" in r.stderr
    assert "set XDG_RUNTIME_DIR, or TMPDIR, to a private dir of yours" in r.stderr
    assert list(runtime.iterdir()) == []


@pytest.mark.parametrize(
    ("owner", "group", "mode", "refused"),
    [
        (NOBODY, NOBODY, 0o755, "belongs to another user (uid 65534)"),
        (0, 0, 0o777, "is writable by other users (mode 0777, no sticky bit)"),
        (0, NOBODY, 0o775, "is writable by other users (mode 0775, no sticky bit)"),
        (0, 0, 0o1777, None),  # as /tmp: no one renames what is not theirs there
        (0, 0, 0o775, None),  # its own private group (umask 002: Debian's, Ubuntu's ~/.local)
    ],
)
def test_a_state_dir_under_a_directory_others_can_change_is_refused(
    tmp_path: Path, owner: int, group: int, mode: int, refused: str | None
) -> None:
    """A directory above the state dir that another user can rename entries of let them
    put a directory of theirs in its place between a check and a write by name: a review
    had the supervisor, as root, publish its TCP token into their file, then run their
    command. Such a state dir is refused, naming that directory (as ssh's StrictModes)."""
    above = tmp_path / "above"
    above.mkdir()
    os.chown(above, owner, group)
    above.chmod(mode)
    state_dir = above / "sub" / "state"  # (the directory to fix is the one above `sub`)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state_dir), "run",
             "--", "echo ran"], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        if state_dir.is_dir():  # (a supervisor started there, refused or not)
            reap(state_dir)
    if refused is None:
        assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
        return
    assert (done.returncode, done.stdout) == (2, "")
    assert f"refusing {state_dir}: {above} above it {refused}" in done.stderr, done.stderr
    assert not (above / "sub").exists()  # (nothing made there)
    with pytest.raises(StateDirError, match="above it"):
        Client(state_dir=state_dir).bash("echo ran")


@pytest.mark.parametrize(
    ("entries", "refused"),
    [
        ([(0x02, 0o7, 4242), (0x10, 0o7, None)], "lets user 4242 write in it (its access ACL)"),
        ([(0x08, 0o7, 4242), (0x10, 0o7, None)], "lets group 4242 write in it (its access ACL)"),
        ([(0x02, 0o7, 4242), (0x10, 0o5, None)], None),  # (the mask takes the write away)
        ([(0x02, 0o7, 0), (0x10, 0o7, None)], None),  # (this user itself)
    ],
)
def test_a_state_dir_under_a_directory_an_acl_lets_others_change_is_refused(
    tmp_path: Path, entries: list[tuple[int, int, int | None]], refused: str | None
) -> None:
    """A parent that an access ACL let another user write (`setfacl -m u:4242:rwx`, mode
    0770 with root's group) passed as root's own: a trial swapped the state dir for one of
    its own, and its files made the result's output, and its directory the next command's
    (follow_cd). An ACL's entries count as the mode's bits do, through its mask."""
    import struct

    above = tmp_path / "above"
    above.mkdir(mode=0o700)
    owner_group_other = [(0x01, 0o7, None), (0x04, 0o0, None), (0x20, 0o0, None)]
    acl = sorted(owner_group_other + entries, key=lambda e: (e[0], e[2] or 0))
    raw = struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, 0xFFFFFFFF if ident is None else ident)
        for tag, perm, ident in acl
    )
    try:
        os.setxattr(above, "system.posix_acl_access", raw)
    except OSError as exc:
        needs(False, f"ACLs on {tmp_path} ({exc.strerror})", "mount it with ACLs (ext4's default)")
    state_dir = above / "state"
    try:
        client = Client(state_dir=state_dir)
        if refused is None:
            assert client.bash("echo ran").stdout == "ran"
            return
        with pytest.raises(StateDirError) as err:
            client.bash("echo ran")
    finally:
        if state_dir.is_dir():
            reap(state_dir)
    assert f"refusing {state_dir}: {above} above it {refused}" in str(err.value)
    assert not state_dir.exists()


def _checked_in_a_user_namespace(path: Path, uid_map: str, as_uid: int | None = None) -> str:
    """What :func:`check_ancestors` says of ``path`` in a new user namespace whose map
    (written from outside, as a container's runtime writes it) is ``uid_map``; made by
    ``as_uid`` (None: root)."""
    import ctypes

    from wave_bash.api.paths import check_ancestors

    said_r, said_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if as_uid is not None:
                os.setgroups([])
                os.setgid(as_uid)
                os.setuid(as_uid)
            if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
                raise OSError(ctypes.get_errno(), "unshare")
            os.write(said_w, b"+")
            os.read(go_r, 1)  # (mapped now)
            try:
                check_ancestors(path)
                os.write(said_w, b"trusted")
            except StateDirError as exc:
                os.write(said_w, str(exc).encode())
        except BaseException as exc:
            os.write(said_w, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(said_w)
    try:
        assert os.read(said_r, 1) == b"+"
        for name in ("uid_map", "gid_map"):
            Path(f"/proc/{pid}/{name}").write_text(uid_map)
        os.write(go_w, b"g")
        return os.read(said_r, 4096).decode()
    finally:
        os.waitpid(pid, 0)
        for fd in (said_r, go_r, go_w):
            os.close(fd)


@pytest.mark.parametrize("uid_map", ["0 0 65536", "0 0 1"])
def test_in_a_user_namespace_nobodys_directory_in_a_shared_folder_is_not_trusted(
    tmp_path: Path, uid_map: str
) -> None:
    """Root of a user namespace trusted the overflow uid as root's: where the namespace
    maps 65536 ids (a container), it is `nobody`, a user there; where it maps root alone,
    every other user's files show as it too. A `nobody` made the state dir's parent in a
    shared folder, and swapped the state dir under root's supervisor, which then read
    its log as the command's output (a review)."""
    needs_root("a user namespace's map of more than this user is written by root")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "agent"
    planted.mkdir(mode=0o755)
    os.chown(planted, NOBODY, NOBODY)
    said = _checked_in_a_user_namespace(planted / "state", uid_map)
    assert said.startswith(f"refusing {planted / 'state'}: {planted} above it belongs to "), said
    planted.chmod(0o700)
    os.chown(planted, 0, 0)  # (root's outside: root's in the namespace too)
    assert _checked_in_a_user_namespace(planted / "state", uid_map) == "trusted"


def test_in_a_user_namespace_of_its_own_the_unmapped_owner_is_trusted(tmp_path: Path) -> None:
    """In a user namespace of its own (flatpak, `bwrap --unshare-user`, a rootless
    container), `/` and `/tmp`, root's outside, show as owned by the overflow uid: every
    state dir was refused as below another user's directory (a review). That uid is
    trusted there as root is; not in the first namespace, where it is `nobody`, nor for
    an entry of a shared folder (a test's own dir in `/tmp`: any user's look alike there,
    see above). The state dir's parent is the user's own, in `/tmp`."""
    from wave_bash.api.paths import check_ancestors

    home = tmp_path
    home.chmod(0o700)
    os.chown(home, NOBODY, NOBODY)
    with pytest.raises(StateDirError, match="belongs to another user"):
        check_ancestors(home / "state")  # (root here: nobody's directory is another's)
    # nobody, then uid 1000 in a namespace of its own: root's files unmapped
    said = _checked_in_a_user_namespace(home / "state", f"1000 {NOBODY} 1", as_uid=NOBODY)
    assert said == "trusted", said
