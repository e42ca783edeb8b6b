"""How a client reaches its supervisor: a Unix socket, or loopback TCP with a token.

Unix sockets (0600 in a 0700 dir, peer uid checked) are the default. Where they are not
available (Windows), or when ``WAVE_TRANSPORT=tcp`` asks for it, the supervisor listens on
127.0.0.1 only and writes its port and a random token to ``supervisor.tcp`` (0600, in the
private state dir); both sides of every connection prove they know the token, which never
crosses the wire (:func:`tcp_handshake`). Both sides choose the
same way, and an auto-started supervisor inherits the client's environment.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import socket
import stat
import struct
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import (
    ForbiddenError,
    InvalidInputError,
    ProtocolError,
    StateDirError,
    SupervisorNotAnsweringError,
    SupervisorUnavailableError,
)
from .paths import (
    StateLayout,
    check_dir_stat,
    check_private_dir,
    check_socket_dir,
    ensure_private_dir,
    socket_address,
    socket_fallback_dir,
)
from .wire import decode, encode

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms
    import subprocess
    from typing import Any

TRANSPORT_ENV = "WAVE_TRANSPORT"
REMOTE_HOME_CWD = "~"
"""The ``cwd`` a remote caller sends when it has no directory there to name: the remote home."""
BRIDGE_STARTED = "wave-bash bridge: started"
"""The line a bridge writes on its stderr as it starts, which ssh passes on whatever its
``LogLevel``: an ssh that fails after it lost a connection made (tried again, RM3), where
one that fails before it could make none. (Cut by keepalives at ``LogLevel=ERROR``, ssh
exits 255 without a word.)"""
LOOPBACK = "127.0.0.1"


def chosen_transport(env: Mapping[str, str] | None = None) -> str:
    """``"unix"`` or ``"tcp"``: ``WAVE_TRANSPORT`` if set, else Unix sockets where they exist."""
    value = (os.environ if env is None else env).get(TRANSPORT_ENV, "").lower()
    if value in ("unix", "tcp"):
        return value
    return "unix" if hasattr(socket, "AF_UNIX") else "tcp"


class TcpEndpoint:
    """Where a TCP supervisor listens, and the secret a client must present."""

    __slots__ = ("port", "token")

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TcpEndpoint) and (other.port, other.token) == (
            self.port,
            self.token,
        )

    def __hash__(self) -> int:
        return hash((self.port, self.token))

    def __repr__(self) -> str:
        return f"TcpEndpoint(port={self.port})"  # never the token

    def write(self, path: Path) -> None:
        """Publish atomically, readable by the owner only, into the directory checked as
        this user's private one through its descriptor: a new file of a name no one can
        guess (by name, a predictable one followed a link another user planted in a
        directory of theirs put in the state dir's place: a review read the token).

        Raises:
            StateDirError: the directory is not this user's private one (any more).
        """
        import secrets

        tmp = f".{path.name}.{secrets.token_hex(8)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        published = json.dumps({"port": self.port, "token": self.token}).encode()
        if os.open not in os.supports_dir_fd:  # (Windows: no descriptor of a directory)
            _write_new(path.with_name(tmp), flags, published)
            os.replace(path.with_name(tmp), path)
            return
        dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        dir_fd = os.open(path.parent, dir_flags)
        try:
            check_dir_stat(path.parent, os.fstat(dir_fd))
            _write_new(tmp, flags, published, dir_fd)
            os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            os.close(dir_fd)

    @classmethod
    def read(cls, path: Path, dir_fd: int | None = None) -> TcpEndpoint:
        """Raises ``FileNotFoundError`` when no TCP supervisor has published one (anything
        but a regular file of this user there counts as none: a FIFO would hold the
        reader; the supervisor publishes its endpoint again). ``dir_fd``: ``path`` is a
        name in that directory."""
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path.name if dir_fd is not None else path, flags, dir_fd=dir_fd)
        try:
            st = os.fstat(fd)
            owner = os.getuid() if hasattr(os, "getuid") else st.st_uid
            if not stat.S_ISREG(st.st_mode) or st.st_uid != owner:
                raise FileNotFoundError(errno.ENOENT, "no endpoint file there", str(path))
            data = json.loads(os.read(fd, 4096))
        finally:
            os.close(fd)
        return cls(int(data["port"]), str(data["token"]))


def _write_new(name: str | Path, flags: int, data: bytes, dir_fd: int | None = None) -> None:
    """Write ``data`` into a file made now (``flags``), owner-only."""
    fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def read_endpoint(layout: StateLayout) -> TcpEndpoint:
    """The TCP endpoint published in the state dir, read through a descriptor of that
    directory once it is checked as this user's (checked by name, then read by name, a
    directory another user renamed into place between the two gave its endpoint: a
    review had root's first call send its command and environment to nobody's listener).

    Raises:
        FileNotFoundError: none is published there (the state dir is missing too).
        StateDirError: the state dir is not this user's, or not a directory.
    """
    if os.open not in os.supports_dir_fd:  # (Windows: no descriptor of a directory)
        if os.path.lexists(layout.root):
            check_private_dir(layout.root, any_mode=True)
        return TcpEndpoint.read(layout.tcp_endpoint)
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dir_fd = os.open(layout.root, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            check_private_dir(layout.root, any_mode=True)  # (says what is wrong with it)
        raise
    try:
        check_dir_stat(layout.root, os.fstat(dir_fd), any_mode=True)
        return TcpEndpoint.read(layout.tcp_endpoint, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (None if unknown)."""
    if hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    try:
        return int(os.getpeereid(sock.fileno())[0])  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return None


def check_server_uid(sock: socket.socket, path: Path) -> None:
    """Refuse a server of another user before anything is sent to it (SPEC X1): it would
    receive the caller's environment and could answer with made-up results."""
    if not hasattr(os, "getuid"):
        return
    uid = peer_uid(sock)
    if uid != os.getuid():
        raise ForbiddenError(
            f"refusing the server at {path}: it runs as uid {uid}, not as you "
            f"(uid {os.getuid()}); another user may be impersonating the supervisor"
        )


HANDSHAKE_LIMIT = 1024
"""The longest line of the TCP handshake."""
HANDSHAKE_TIMEOUT = 10.0


def handshake_proof(token: str, role: str, nonce: str) -> str:
    """What a side that knows the token answers to the other side's nonce."""
    import hashlib
    import hmac

    return hmac.new(token.encode(), f"{role}:{nonce}".encode(), hashlib.sha256).hexdigest()


def tcp_handshake(
    sock: socket.socket, token: str, where: str, timeout: float | None = None
) -> None:
    """Both sides prove they know the state dir's token, which never crosses the wire.

    The client proves itself only after the listener did: a listener of another user (on
    the port a dead supervisor left in ``supervisor.tcp``) learns nothing, neither the
    token nor the request with its environment. As ours would know the token, such a
    listener means none of ours serves there: it is refused as nothing listening, so a
    supervisor is started (which publishes another port; refused for good, every call
    failed until the user deleted the file: a review).

    Raises:
        ConnectionRefusedError: the listener does not know the token.
        OSError: the connection failed.
    """
    import hmac
    import secrets

    nonce = secrets.token_hex(16)
    sock.sendall(encode({"hello": nonce}))
    reply = _small_line(sock, HANDSHAKE_TIMEOUT if timeout is None else timeout)
    if not reply:  # no answer (let go among many waiting, or a stale port's listener):
        raise ConnectionResetError(  # as no supervisor, whose start is harmless if one runs
            f"the server at {where} closed the connection before the handshake"
        )
    if reply.get("type") == "error" and "proof" not in reply:  # (its text is not trusted)
        code = re.sub(r"[^a-z_]", "", str(reply.get("code")))[:32]
        raise SupervisorUnavailableError(
            f"the server at {where} answered `{code}` instead of the handshake: try again"
        )
    if not hmac.compare_digest(
        str(reply.get("proof", "")), handshake_proof(token, "server", nonce)
    ):
        raise ConnectionRefusedError(
            errno.ECONNREFUSED,
            f"refusing the server at {where}: it does not know this state dir's token "
            "(another user may be impersonating the supervisor)",
        )
    sock.sendall(encode({"proof": handshake_proof(token, "client", str(reply.get("nonce", "")))}))


def _small_line(sock: socket.socket, timeout: float) -> dict[str, Any]:
    sock.settimeout(timeout)
    try:
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(HANDSHAKE_LIMIT)
            if not chunk or len(data) + len(chunk) > HANDSHAKE_LIMIT:
                break
            data += chunk
    finally:
        sock.settimeout(None)
    try:
        return decode(data)
    except ProtocolError:
        return {}


def supervisor_runs(layout: StateLayout) -> bool:
    """Whether a supervisor holds the state dir's lock (a shared lock cannot be taken
    beside its own; a starting one waits a moment for it, see ``supervisor.daemon``);
    where this cannot be told, it is taken to."""
    try:
        import fcntl
    except ImportError:  # (Windows)
        return True
    flags = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK
    try:
        fd = os.open(layout.lock, flags)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (the lock, if taken, goes with it)
    return False


def connect(layout: StateLayout, transport: str) -> socket.socket:
    """A connected socket to the supervisor (token already sent for TCP).

    Raises:
        OSError: nothing listens (missing socket or endpoint file, refused), or a TCP
            listener closed before it answered the handshake (nothing proven either way).
        ForbiddenError: what listens runs as another user.
        StateDirError: the state dir is a link or another user's (refused whether or not
            a supervisor runs there, as when one must start), the socket's fallback dir
            is a link or not private to this user.
    """
    if transport == "tcp":
        try:
            endpoint = read_endpoint(layout)
        except (ValueError, KeyError) as exc:
            raise ConnectionRefusedError(f"unreadable {layout.tcp_endpoint}: {exc}") from None
        sock = socket.create_connection((LOOPBACK, endpoint.port), timeout=None)
        try:
            tcp_handshake(sock, endpoint.token, f"{LOOPBACK}:{endpoint.port}")
        except TimeoutError:  # (silent: one of ours, stopped or frozen, if it holds its
            sock.close()  # lock; a start was tried beside it, then "did not start": a review)
            if supervisor_runs(layout):
                raise SupervisorNotAnsweringError(
                    f"the supervisor has not answered in time (stopped or frozen? see "
                    f"{layout.log}): no handshake within {HANDSHAKE_TIMEOUT:g} s"
                ) from None
            raise
        except SupervisorUnavailableError as exc:  # an error answered, not the handshake
            sock.close()
            if not supervisor_runs(layout):  # (none of ours: another user's listener,
                # answering `busy` for ever, kept every call waiting: a review)
                raise ConnectionRefusedError(errno.ECONNREFUSED, str(exc)) from None
            raise
        except BaseException:
            sock.close()
            raise
        return sock
    if os.path.lexists(layout.root):  # (none yet: nothing listens, one starts)
        check_private_dir(layout.root, any_mode=True)
    check_socket_dir(layout, make=False)  # a shared fallback: someone else's dir?
    found = os.lstat(layout.socket)  # (missing: FileNotFoundError, nothing listens)
    if not stat.S_ISSOCK(found.st_mode):  # a link (to another state dir's supervisor, a
        # trial) or a directory put there: not followed; a supervisor that serves here
        # listens again within seconds (``supervisor.daemon``), as if none listened yet
        raise ConnectionRefusedError(errno.ECONNREFUSED, f"{layout.socket} is not a socket")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket_address(layout.socket) as address:
            sock.connect(address)
        check_server_uid(sock, layout.socket)
    except BaseException:
        sock.close()
        raise
    return sock


_SSH_URL = re.compile(
    r"ssh://(?:(?P<user>[^@/:\[\]]+)@)?"
    r"(?:(?P<host>[^@/:\[\]]+)|\[(?P<address>[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*(?:%[\w.-]+)?)\])"
    r"(?::(?P<port>[0-9]+))?/?"
)
"""``ssh://[user@]host[:port]``, an IPv6 address in brackets (``ssh://[::1]:2222``, as
ssh's own URLs have it; a zone after ``%``, or ``%25`` as RFC 6874 writes it). A port
is ASCII digits (a ``\\d`` took full-width ones, which ``int`` read: a trial)."""


class Remote:
    """A remote dev box reached with ``ssh`` (the user's config, agent and keys apply)."""

    __slots__ = ("host", "port", "user")

    def __init__(self, host: str, user: str | None = None, port: int | None = None) -> None:
        self.host, self.user, self.port = host, user, port

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Remote) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def __repr__(self) -> str:
        return f"Remote({str(self)!r})"

    @classmethod
    def parse(cls, url: str) -> Remote:
        """``ssh://[user@]host[:port]``."""
        match = _SSH_URL.fullmatch(url.strip())
        if not match:
            raise InvalidInputError(f"remote must look like ssh://[user@]host[:port], got {url!r}")
        port = match.group("port")
        if port is not None and not 0 < int(port) < 65536:  # (`:0` was port 22: a trial)
            raise InvalidInputError(f"the port of {url!r} must be 1 to 65535")
        address = match.group("address")  # (ssh takes it bare; a zone as RFC 6874 writes
        address = address and address.replace("%25", "%", 1)  # it in a URL, `%25eth0`)
        host = match.group("host") or address
        return cls(host, match.group("user"), int(port) if port else None)

    def __str__(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ssh://{user}{host}{port}"

    def ssh_argv(
        self,
        options: Sequence[str],
        remote_command: str,
        verb: str = "bridge",
        tty: bool = False,
        control: str | None = None,
    ) -> list[str]:
        """``ssh … HOST '<remote_command> bridge'`` (BatchMode: never a password prompt);
        ``verb`` another CLI verb (its arguments shell-quoted), ``tty`` one on a terminal,
        ``control`` the socket of the connection it shares (:func:`control_path`)."""
        argv = ["ssh", "-o", "BatchMode=yes", *(["-t"] if tty else []), *options]
        argv += ["-o", f"ConnectTimeout={CONNECT_TIMEOUT}"]  # (ssh: the first value holds)
        if control is not None:
            argv += ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}"]
            argv += ["-o", f"ControlPersist={CONTROL_PERSIST}"]
        argv += [
            "-o",
            f"ServerAliveInterval={ALIVE_INTERVAL}",
            "-o",
            f"ServerAliveCountMax={ALIVE_COUNT}",
        ]
        if self.port:
            argv += ["-p", str(self.port)]
        target = f"{self.user}@{self.host}" if self.user else self.host
        return [*argv, "--", target, f"{remote_command} {verb}"]


SSH_VALUED = "BbcDEeFIiJLlmOoPpQRSWw"
"""ssh's options that take a value (the next word, or the rest of theirs: ``-i KEY``,
``-oBatchMode=yes``)."""


def check_ssh_options(options: Sequence[str]) -> None:
    """Refuse ssh arguments that are no options. ssh takes the first word that is none
    for the host, and runs the words after it, wave-bash's own options included, as the
    remote command: `--ssh-option="-o ProxyCommand=nc %h %p"`, split as a shell would,
    made `%h` the host (a trial).

    Raises:
        InvalidInputError: a word is no option, or the last one's value is missing.
    """
    value_next = False
    for word in options:
        if value_next:
            value_next = False
            continue
        if word[:1] != "-" or word in ("-", "--"):
            raise InvalidInputError(
                f"ssh option {word!r} is no option (ssh would take it for the host): quote "
                "a value with spaces whole, as in --ssh-option=\"-o 'ProxyCommand=nc %h %p'\" "
                "(in Python: ssh_options=['-o', 'ProxyCommand=nc %h %p'])"
            )
        valued = next((i for i, letter in enumerate(word[1:]) if letter in SSH_VALUED), None)
        value_next = valued == len(word) - 2  # (its value is the next word)
    if value_next:
        raise InvalidInputError(f"ssh option {options[-1]!r} needs a value after it")


CONNECT_TIMEOUT = 15
"""Seconds ssh waits for an unreachable host (its own default is the system's TCP
timeout: minutes); an ``-o ConnectTimeout=`` among the caller's options comes first."""
ALIVE_INTERVAL, ALIVE_COUNT = 10, 3
"""ssh asks the server whether it is still there after 10 s of silence and gives up
after 3 unanswered asks: a connection frozen or cut on the way (no reset ever comes)
ends in 30-40 s, and the call is sent again (RM3), instead of hanging until TCP gives up
(hours). The caller's own ``-o ServerAlive…`` come first."""


CONTROL_PERSIST = "10m"
"""How long the connection that calls to a remote share stays open after its last call
(ssh's ``ControlPersist``): an agent's next call usually comes within minutes, and then
costs one round trip over it instead of a new ssh login (key exchange and
authentication: several round trips and ~0.2 s of CPU)."""
CONTROL_DIR_ROOM = 108 - 1 - 17 - 1 - 16
"""The longest directory a control socket fits in: ``sun_path`` holds 108 bytes with its
NUL, and ssh binds a new master's socket at its path plus a 17-character suffix before it
links it to its name (16 hex characters)."""


_SSH_PLAIN = re.compile(r"[\w./%+,=@~:-]+", re.ASCII)
"""A path ssh takes whole as an option's value: it splits one at blanks and reads quotes
and backslashes (macOS's default state dir, ``~/Library/Application Support``, made
every remote call fail)."""


def control_path(layout: StateLayout, remote: Remote, options: Sequence[str]) -> str | None:
    """The socket of the ssh connection that calls to ``remote`` with ``options`` share
    (ssh's ``ControlMaster``; a name of its own for each set of options, which a shared
    connection would otherwise ignore), in the state dir's private ``ssh`` dir, else in
    the private fallback dir; None (a login per call) where neither fits or can be
    made, or holds what ssh would read apart (a blank, a quote), and on Windows, whose
    OpenSSH shares no connections. A private directory: ssh trusts whatever answers at
    that path."""
    if sys.platform == "win32":
        return None
    import hashlib

    key = json.dumps([str(remote), list(options)]).encode()
    name = hashlib.sha256(key).hexdigest()[:16]
    for directory in (layout.ssh, socket_fallback_dir() / "ssh"):
        if len(os.fsencode(directory)) > CONTROL_DIR_ROOM or not _SSH_PLAIN.fullmatch(
            str(directory)
        ):
            continue
        try:
            ensure_private_dir(directory.parent)
            ensure_private_dir(directory)
        except StateDirError:
            continue
        if _sockets_bind(directory):
            return f"{directory}/{name}".replace("%", "%%")  # (ssh expands `%` tokens)
    return None


MASTER_PATIENCE = 3.0
"""Seconds a shared connection's master has to greet a new call (it does at once): one
that does not is stopped or frozen, and every call would wait on it (a review)."""


def check_connection(control: str, patience: float = MASTER_PATIENCE) -> bool:
    """Whether the master of a shared connection answers (its greeting, as each call's
    ssh connects); one that does not is forgotten (:func:`forget_connection`). A socket
    with no master (refused: a master killed) or none at all ssh itself replaces."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(patience)
        try:
            probe.connect(control.replace("%%", "%"))
            if probe.recv(1):
                return True
        except TimeoutError:
            pass
        except OSError:
            return False
    forget_connection(control)
    return False


def forget_connection(control: str) -> None:
    """End a shared connection a call failed over (lost, or its master stopped: every
    call would wait on it), so that the next call makes a new one: its master killed
    outright (one that ended by itself removed the socket at its path, the new master's
    by then; a trial) and its socket removed."""
    import signal  # (a failed remote call only: the CLI's start-up)

    path = control.replace("%%", "%")
    for pid in _masters(path):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)


def _masters(path: str) -> list[int]:
    """This user's ssh processes that serve ``path`` (named ``ssh: PATH [mux]``), where
    ``/proc`` tells."""
    wanted = f"ssh: {path} [mux]".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if entry.stat().st_uid != os.getuid():
                    continue
                with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                    if fh.read(len(wanted) + 2).rstrip(b"\0") == wanted:
                        found.append(int(entry.name))
    return found


def _sockets_bind(directory: Path) -> bool:
    """Whether a socket can be made in ``directory`` (not on every network or FUSE file
    system): a master ssh that cannot make its socket fails its call."""
    probe = directory / f".probe-{os.getpid()}-{os.urandom(4).hex()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(str(probe))
        except OSError:
            return False
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return True


def connect_ssh(
    remote: Remote, options: Sequence[str], remote_command: str, control: str | None = None
) -> tuple[socket.socket, subprocess.Popen[bytes]]:
    """A socket whose other end is ``ssh HOST wave-bash bridge`` (one request, like a
    connection, over the connection at ``control`` if given); the caller reaps the ssh
    process with :func:`finish_ssh`."""
    import subprocess

    ours, theirs = socket.socketpair()
    try:
        proc = subprocess.Popen(
            remote.ssh_argv(options, remote_command, control=control),
            stdin=theirs.fileno(), stdout=theirs.fileno(), stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
    except FileNotFoundError:
        ours.close()
        raise SupervisorUnavailableError(
            "ssh is not installed: install an OpenSSH client to use --remote"
        ) from None
    finally:
        theirs.close()
    return ours, proc


class SshFailure(str):
    """Why ssh failed (the message); ``cut``: a connection made, then lost (ssh killed,
    the server's end closed), which a call may try again, unlike one that could not be
    made (refused, unreachable, no key, no wave-bash there)."""

    cut = False


SSH_FAILED = 255
"""ssh's own exit status (the remote command's passes through: a bridge that failed)."""
CUT_SIGNS = ("closed by remote host", "Connection reset", "Broken pipe", "Timeout, server")
"""What ssh says when a connection it had made is lost (where it says anything: a
bridge of this version also says it started, :data:`BRIDGE_STARTED`)."""
UNMADE_SIGNS = ("exchange_identification:",)
"""What ssh says of a connection it never made, whatever the words that follow (its
first exchange: `kex_exchange_identification: Connection closed by remote host` from a
port that is no sshd, a ProxyCommand that failed, a bastion down). Such a line is no cut:
a connection that cannot be made fails at once (RM3; it was tried for two minutes, and
`run` said the command may have started: a trial)."""


def _says_cut(lines: Sequence[str]) -> bool:
    """Whether ssh's words say a connection it had made was lost (:data:`CUT_SIGNS`),
    none of them of one it never made (:data:`UNMADE_SIGNS`: its next line, `Connection
    reset by HOST port N`, is of that failure too, a review)."""
    said = "\n".join(lines)
    unmade = any(sign in said for sign in UNMADE_SIGNS)
    return not unmade and any(sign in said for sign in CUT_SIGNS)


def finish_ssh(
    proc: subprocess.Popen[bytes],
    remote: Remote,
    shared: bool = False,
    patience: float = 10.0,
    answered: bool = False,
) -> SshFailure | None:
    """Reap the ssh process; returns why it failed (its stderr), or None if it did not.
    ``shared``: it went over a connection made before (a master's socket was there), so
    ssh's own failure without a word is one of a connection made, then lost: ssh says
    nothing when the master it used dies, and a bridge's first line may be lost with it.
    (A socket left by a master killed is replaced by a new master, which says why it
    could not connect: as any first connection, not tried again.) ``patience``: seconds
    it has to end before it is killed. ``answered``: the bridge answered the call (else
    an ssh that exits 0 must have started one: RM3)."""
    import subprocess

    stopped = False
    try:
        _, err = proc.communicate(timeout=patience)
    except subprocess.TimeoutExpired:
        proc.kill()
        stopped = True
        try:
            _, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:  # (its stderr held open by a stopped master it
            if proc.stderr is not None:  # handed it to: the call hung for good; a trial)
                proc.stderr.close()
            proc.wait()
            err = b""
    code = proc.returncode
    lines = [  # (ssh's notice of a host key it added is no reason: helper 220)
        line for line in err.decode(errors="replace").strip().splitlines()
        if not line.startswith("Warning: Permanently added ")
    ]  # fmt: skip
    started = BRIDGE_STARTED in lines
    if code == 0 and (answered or started):
        return None
    if code == 0:  # (a remote command that is no wave-bash: tried for 2 minutes, a trial)
        return SshFailure(
            f"could not reach wave-bash on {remote} over ssh: the remote command ended "
            "without starting wave-bash's bridge (is --remote-command a wave-bash?)"
        )
    detail = "\n".join(line for line in lines if line != BRIDGE_STARTED).strip()
    silent = not detail
    if stopped:  # (its signal 9 read as a cut: it was ours, a trial)
        detail = detail or f"ssh did not end within {patience:g} s of its call, and was stopped"
    elif code < 0:  # (killed by someone)
        detail = detail or f"the connection was cut (ssh ended by signal {-code})"
    detail = detail or f"exit {code}"
    if code == 127:
        detail += " (is wave-bash installed on the remote, or set --remote-command?)"
    elif silent and 0 < code != SSH_FAILED and not started:  # (`--remote-command false`)
        detail += ": the remote command ended without starting wave-bash's bridge (is "
        detail += "--remote-command a wave-bash?)"
    elif "HOST IDENTIFICATION HAS CHANGED" in detail:  # (not to be accepted blindly)
        detail += (" (the host's key is not the one ssh knew: make sure the host is the "
                   "right one before you remove the old key with ssh-keygen -R)")  # fmt: skip
    elif "Host key verification failed" in detail:  # (a host ssh has never seen: BatchMode)
        detail += (" (ssh knows no key for that host yet: connect once with ssh to accept "
                   "it, or pass --ssh-option=-oStrictHostKeyChecking=accept-new)")  # fmt: skip
    failure = SshFailure(f"could not reach wave-bash on {remote} over ssh: {detail}")
    lost = code == SSH_FAILED and (started or (shared and silent))  # (not the bridge's
    # own failure: its status)
    failure.cut = code < 0 or lost or _says_cut(detail.splitlines())
    return failure
