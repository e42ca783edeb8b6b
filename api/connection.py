"""How a client reaches its supervisor: a ``Channel`` per request, opened by a
``Connector`` (the local socket, the SSH bridge, or an in-memory one for tests); both are
typing protocols, for type checkers only. The local socket's channel that got its answer
is kept for the next call, for a few seconds: connecting (and the supervisor's accept)
took a quarter of a quick call.

The client's retry and re-attach logic sees only these two interfaces, so it is the same
for every way of reaching a supervisor, and can be tested without real supervisors.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence

from .errors import InvalidInputError
from .launch import connect_or_start
from .paths import StateLayout
from .transport import (
    REMOTE_HOME_CWD,
    Remote,
    check_connection,
    check_ssh_options,
    chosen_transport,
    connect_ssh,
    control_path,
    finish_ssh,
    forget_connection,
    supervisor_runs,
)
from .wire import decode, read_messages

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms: the protocols are for type checkers
    import queue
    import subprocess
    from typing import Any, Protocol

    Exchange = Callable[[dict[str, Any]], Iterator[dict[str, Any]]]
    """An in-memory supervisor: gets a request, yields the answer's messages. Ending without
    a final ``result``/``error`` is a connection lost; raising ``SupervisorUnavailableError``
    is a supervisor that cannot be reached."""

    class Channel(Protocol):
        """One connection carrying a request (or several, one after another: ``keeps``)."""

        keeps: bool
        """Whether it may ask to carry another request once this one is answered."""
        kept_open: bool
        """Whether the supervisor said, with its answer, that it keeps it open (``release``)."""

        def send(self, data: bytes) -> None:
            """Send the request line. Raises ``OSError`` when the other side is gone."""

        def messages(
            self, deadline: float | None = None, check: Callable[[], bool] | None = None
        ) -> Iterator[dict[str, Any]]:
            """The answer's messages until the other side closes (past ``deadline``, a
            ``time.monotonic()``, waiting for the next raises ``AnswerOverdue``; after a
            silence, ``check`` is asked whether the supervisor answers: see
            :func:`~wave_bash.api.wire.read_messages`)."""

        def interrupt(self) -> None:
            """End the exchange now, from any thread (the caller went away)."""

        def close(self) -> str | None:
            """Release the channel; returns why its carrier failed (``ssh`` itself), if it did."""

        def release(self) -> None:
            """Its request got its whole answer: kept for the next call if ``kept_open``,
            else closed."""

    class Connector(Protocol):
        """A way to reach one supervisor."""

        remote: bool
        """Commands run on another machine: its environment, its home, its paths."""
        may_start: bool
        """Whether opening may start a supervisor (so an unreachable one is worth waiting for)."""

        def open(self, *, start: bool = True) -> Channel:
            """A channel to the supervisor (started first when allowed and ``start``).

            Raises:
                SupervisorUnavailableError: none could be reached.
            """

        def default_cwd(self) -> str:
            """Where commands start when the caller names no directory."""

        def drop_kept(self) -> None:
            """Close the channel kept for the next call, if any (the client is closed)."""

        def wait_stopped(self, deadline: float) -> None:
            """Return once the supervisor that answered a shutdown has let its state dir
            go (its lock), or at ``deadline`` (monotonic)."""


COERCED_CTYPES = frozenset({"C.UTF-8", "C.utf8", "UTF-8"})
"""What Python sets ``LC_CTYPE`` to as it starts under the C locale (PEP 538)."""


_environment_seen: tuple[dict[Any, Any], dict[str, str]] | None = None
"""The environment as last read (``os.environ``'s own encoded mapping) and as decoded."""


def with_own_entries(login: str, inherited: str) -> str:
    """The login PATH ``login`` after the absolute entries of ``inherited`` it lacks, each
    once, in their order: what a process's starter put on its PATH (an activated venv's
    ``bin``) stays first, where a profile that sets the PATH anew dropped it (SPEC E1)."""
    known = set(login.split(os.pathsep))
    own = [  # (absolute only: a `.` first ran a workspace's `ls` for an allowed one; a review)
        entry
        for entry in inherited.split(os.pathsep)
        if os.path.isabs(entry) and entry not in known
    ]
    return os.pathsep.join(dict.fromkeys([*own, *login.split(os.pathsep)]))


def caller_environment() -> dict[str, str]:
    """The environment a command gets: this process's, less what Python added to it as it
    started. Under a C or POSIX locale Python sets ``LC_CTYPE=C.UTF-8`` in its own
    environment (PEP 538): commands ran with a UTF-8 character type that their caller had
    not (`sort`, `tr`, `wc -m` and grep's classes read text otherwise: a trial). The
    environment as this process was started shows in ``/proc/self/environ`` (Linux).

    Read as one copy of ``os.environ``'s own mapping, made at once: read name by name, a
    variable another thread removed meanwhile raised ``KeyError`` (a trial). Decoded
    again only when it changed since the last call: decoding 40 variables took 35–70 µs
    of every command's start, which a comparison of the encoded ones saves."""
    global _environment_seen
    encoded: dict[Any, Any] | None = getattr(os.environ, "_data", None)  # (CPython)
    if encoded is None:
        return _started_environment(dict(os.environ))
    snapshot = dict(encoded)  # (a C-level copy: no other thread's change tears it)
    seen = _environment_seen
    if seen is not None and seen[0] == snapshot:
        return dict(seen[1])
    key, value = os.environ.decodekey, os.environ.decodevalue
    env = _started_environment({key(k): value(v) for k, v in snapshot.items()})
    _environment_seen = (snapshot, env)
    return dict(env)


def _started_environment(env: dict[str, str]) -> dict[str, str]:
    """``env`` (this process's) less the ``LC_CTYPE`` Python set for itself, if it did."""
    if env.get("LC_CTYPE") not in COERCED_CTYPES:
        return env
    try:
        with open("/proc/self/environ", "rb") as fh:
            started: dict[bytes, bytes] = {}
            for line in fh.read().split(b"\0"):
                name, _, value = line.partition(b"=")
                started.setdefault(name, value)  # (the first, as the C library reads)
    except OSError:
        return env
    ctype = started.get(b"LC_CTYPE") or started.get(b"LANG") or b"C"
    if started.get(b"LC_ALL") or ctype not in (b"C", b"POSIX"):
        return env  # (no coercion: a value set since, kept)
    if started.get(b"PYTHONCOERCECLOCALE") == b"0":
        return env
    if b"LC_CTYPE" in started:
        env["LC_CTYPE"] = os.fsdecode(started[b"LC_CTYPE"])
    else:
        del env["LC_CTYPE"]
    return env


KEEP_SECONDS = 5.0
"""How long a kept connection may wait for the next call: far less than the supervisor
keeps it open (``supervisor.server.KEPT_OPEN_SECONDS``), so a request never crosses its
close. Calls further apart connect again (a millisecond lost beside the caller's pause)."""
_PEEK = socket.MSG_PEEK | getattr(socket, "MSG_DONTWAIT", 0)


class SocketChannel:
    """A connected socket (Unix, TCP or one end of a socketpair); kept after its answer
    by ``pool`` (see :class:`KeptChannel`), if given. A forked child closes its copy at
    once, in use or kept: held there, it would hide its parent's death from the
    supervisor (F5) while the parent's call, or its next one, goes through it."""

    def __init__(self, sock: socket.socket, pool: KeptChannel | None = None) -> None:
        self.sock, self.pool = sock, pool
        self.keeps = pool is not None and hasattr(socket, "MSG_DONTWAIT")
        self.kept_open = False
        _CHANNELS.add(self)

    def release(self) -> None:
        if self.pool is None or not self.kept_open:
            self.close()
        else:
            self.kept_open = False
            self.pool.put(self)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def messages(
        self, deadline: float | None = None, check: Callable[[], bool] | None = None
    ) -> Iterator[dict[str, Any]]:
        return read_messages(self.sock, deadline=deadline, check=check)

    def interrupt(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> str | None:
        self.sock.close()
        return None


class KeptChannel:
    """The one connection a local connector keeps between calls (a call made meanwhile by
    another thread opens its own). A kept one is given again only in the process that
    made it, within ``KEEP_SECONDS``, and while the supervisor has neither closed it
    (stopped, killed, replaced) nor sent anything on it. A forked child has none (see
    :class:`SocketChannel`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: tuple[SocketChannel, float, int] | None = None
        _KEEPERS.add(self)

    def _forget_in_child(self) -> None:
        self._lock = threading.Lock()  # (another thread may have held it at the fork)
        self._kept = None  # (its socket is closed with every channel's)

    def put(self, channel: SocketChannel) -> None:
        with self._lock:
            old, self._kept = self._kept, (channel, time.monotonic(), os.getpid())
        if old is not None and old[2] == os.getpid():
            old[0].close()

    def take(self) -> SocketChannel | None:
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is None or kept[2] != os.getpid():  # (a fork's: its parent's to close)
            return None
        channel, since, _ = kept
        try:
            if time.monotonic() - since < KEEP_SECONDS:
                channel.sock.settimeout(None)  # (with a time limit, recv would wait)
                channel.sock.recv(1, _PEEK)  # end of file, or bytes nobody asked for
        except BlockingIOError:  # nothing: the supervisor waits for the next request
            return channel
        except OSError:
            pass
        channel.close()
        return None

    def drop(self) -> None:
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None and kept[2] == os.getpid():
            kept[0].close()


_KEEPERS: weakref.WeakSet[KeptChannel] = weakref.WeakSet()
_CHANNELS: weakref.WeakSet[SocketChannel] = weakref.WeakSet()


def _close_copies_in_child() -> None:
    """A forked child closes its copies of its parent's connections, kept or in use (a
    call of the parent's in flight as another thread forked; a review found it)."""
    for keeper in list(_KEEPERS):
        keeper._forget_in_child()
    for channel in list(_CHANNELS):
        with contextlib.suppress(OSError):
            channel.sock.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_copies_in_child)


def current_dir() -> str:
    """This process's working directory; once it is deleted (or renamed away) under us,
    the path a shell would still give (``$PWD``): the supervisor then runs the command in
    its nearest existing ancestor and says so (a default directory falls back, as a
    followed ``cd`` does), or in it again if it was made anew (``rm -rf build && mkdir
    build``).

    Where ``$PWD`` names it by another path (through a link: ``cd ~/proj``, a link to
    ``/srv/proj``), that one, as bash takes it as it starts: a command's ``pwd`` and
    ``cd ..`` then go where the caller's would (``/srv`` was a trial's surprise).

    Raises:
        InvalidInputError: it is gone and no absolute ``$PWD`` names it.
    """
    try:
        here = os.getcwd()
    except FileNotFoundError:
        pwd = os.environ.get("PWD", "")
        if os.path.isabs(pwd):
            return pwd
        raise InvalidInputError(
            "the current directory no longer exists (it was deleted or moved): "
            "cd to an existing one, or name one (cwd)"
        ) from None
    pwd = os.environ.get("PWD", "")
    if pwd == here or not _names_here(pwd):
        return here
    return pwd


def _names_here(pwd: str) -> bool:
    """Whether ``pwd`` is an absolute path without ``.`` or ``..`` that names this
    process's working directory (bash's test of the ``$PWD`` it inherits)."""
    if not os.path.isabs(pwd) or any(part in (".", "..") for part in pwd.split("/")):
        return False
    try:
        there, here = os.stat(pwd), os.stat(".")
    except OSError:
        return False
    return (there.st_dev, there.st_ino) == (here.st_dev, here.st_ino)


class LocalConnector:
    """The supervisor of a local state dir, over its Unix socket (or loopback TCP)."""

    remote = False

    def __init__(self, layout: StateLayout, transport: str, autostart: bool) -> None:
        self.layout, self.transport, self.may_start = layout, transport, autostart
        self.kept = KeptChannel()

    def open(self, *, start: bool = True) -> Channel:
        kept = self.kept.take()
        if kept is not None:
            return kept
        sock = connect_or_start(self.layout, self.transport, start and self.may_start)
        return SocketChannel(sock, self.kept)

    def default_cwd(self) -> str:
        return current_dir()

    def drop_kept(self) -> None:
        self.kept.drop()

    def wait_stopped(self, deadline: float) -> None:
        # (its lock goes last, its log closed: a `supervisor stop`, then `umount`, found
        # the state dir busy, as the supervisor had answered before it stopped: a trial)
        while supervisor_runs(self.layout) and time.monotonic() < deadline:
            time.sleep(0.01)


MASTER_CHECK_SECONDS = 10.0
"""How often a call waiting over a shared connection checks that its master answers (as
ssh's own keepalives ask the server every 10 s)."""


SSH_EXIT_PATIENCE = 10.0
"""Seconds an ssh whose answer came has to exit (it does at once) before it is killed."""
SSH_HANG_UP_PATIENCE = 2.0
"""Seconds an ssh left before its answer has to exit (the remote bridge sees its caller
hang up, and ends), before it is killed: a remote that never answers held a SIGTERM'd
CLI for 12 s (a trial)."""


class SshChannel(SocketChannel):
    """A socket whose other end is ``ssh HOST wave-bash bridge``."""

    def __init__(
        self,
        sock: socket.socket,
        proc: subprocess.Popen[bytes],
        remote: Remote,
        control: str | None = None,
        shared: bool = False,
    ) -> None:
        super().__init__(sock)
        self.proc, self.remote, self.control, self.shared = proc, remote, control, shared
        """``control``: the socket of the connection it goes over; ``shared``: made
        before it (by another call)."""
        self._done = threading.Event()
        self._answered = False
        """Whether its answer came (then ssh ends by itself: its exit is waited for)."""
        if control is not None:
            threading.Thread(target=self._watch, args=(control,), daemon=True).start()

    def _watch(self, control: str) -> None:
        """While the call waits, check now and then that the connection's master still
        answers: one stopped or frozen (its keepalives with it) held the call to its
        answer's deadline, then its patience was spent (a trial). Forgotten, it is killed:
        the call sees its end and is sent again, over a new connection."""
        while not self._done.wait(MASTER_CHECK_SECONDS):
            if not check_connection(control):
                return

    def messages(
        self, deadline: float | None = None, check: Callable[[], bool] | None = None
    ) -> Iterator[dict[str, Any]]:
        for message in read_messages(self.sock, preamble=True, deadline=deadline, check=check):
            if message.get("type") in ("result", "error"):
                self._answered = True
            yield message

    def close(self) -> str | None:
        self._done.set()
        super().close()
        patience = SSH_EXIT_PATIENCE if self._answered else SSH_HANG_UP_PATIENCE
        failure = finish_ssh(self.proc, self.remote, self.shared, patience, self._answered)
        if failure is not None and failure.cut and self.shared and self.control is not None:
            forget_connection(self.control)  # (a stopped master held every call: a review)
        return failure


class SshConnector:
    """The supervisor of another machine, through ``ssh HOST wave-bash bridge`` (one ssh
    per request, over one connection the requests share: ssh's ``ControlMaster``; the
    bridge starts the remote supervisor when needed)."""

    remote = True
    may_start = False  # an ssh that fails is reported at once, not waited for

    def __init__(
        self, remote: Remote, options: Sequence[str], command: str, layout: StateLayout
    ) -> None:
        self.target, self.options, self.command = remote, list(options), command
        self.layout = layout
        self._control: list[str | None] = []  # (found at the first request)

    def open(self, *, start: bool = True) -> Channel:
        if not self._control:
            self._control.append(control_path(self.layout, self.target, self.options))
        control = self._control[0]  # (a connection made before, by this call or another,
        made = control is not None and check_connection(control)  # which still answers)
        sock, proc = connect_ssh(self.target, self.options, self.command, control)
        return SshChannel(sock, proc, self.target, control, made)

    def default_cwd(self) -> str:
        return REMOTE_HOME_CWD

    def drop_kept(self) -> None:
        pass

    def wait_stopped(self, deadline: float) -> None:
        pass  # (the remote's bridge answered for it)


def supervisor_log(connector: Connector, layout: StateLayout) -> str:
    """Where to read why a supervisor failed: its log in this state dir, or on the remote
    (the local path named for a remote's was no help)."""
    if isinstance(connector, SshConnector):
        return f"supervisor.log in the state dir on {connector.target}"
    return str(layout.log)


def connector_for(
    layout: StateLayout,
    *,
    transport: str | None = None,
    remote: str | None = None,
    ssh_options: Sequence[str] = (),
    remote_command: str | None = None,
    autostart: bool = True,
) -> Connector:
    """The connector these arguments ask for: ``remote`` (default ``WAVE_REMOTE``) through
    ssh, else the state dir's own supervisor over ``transport`` (default ``WAVE_TRANSPORT``)."""
    remote = remote or os.environ.get("WAVE_REMOTE") or None
    if remote:
        command = remote_command or os.environ.get("WAVE_REMOTE_COMMAND") or "wave-bash"
        ssh_options = chosen_ssh_options(ssh_options)
        check_ssh_options(ssh_options)
        return SshConnector(Remote.parse(remote), ssh_options, command, layout)
    return LocalConnector(layout, transport or chosen_transport(), autostart)


SSH_OPTIONS_ENV = "WAVE_SSH_OPTIONS"


def chosen_ssh_options(given: Sequence[str]) -> list[str]:
    """``given``, else ``WAVE_SSH_OPTIONS`` split as a shell would (``-F ~/dev/ssh_config``):
    ``WAVE_REMOTE`` alone was not enough where ssh needed an option, and every call then
    took ``--ssh-option`` (a trial).

    Raises:
        InvalidInputError: the variable cannot be split (an unclosed quote).
    """
    if given:
        return list(given)
    import shlex

    try:
        options = shlex.split(os.environ.get(SSH_OPTIONS_ENV, ""))
        check_ssh_options(options)
    except (ValueError, InvalidInputError) as exc:  # (the variable named: the flag was)
        raise InvalidInputError(f"{SSH_OPTIONS_ENV}: {exc}") from None
    return options


class MemoryChannel:
    """A channel to an :data:`Exchange` (the answer runs as the messages are read)."""

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self._request: dict[str, Any] | None = None
        self._interrupted = threading.Event()
        self.keeps = self.kept_open = False

    def send(self, data: bytes) -> None:
        self._request = decode(data.rstrip(b"\n"))

    def messages(
        self, deadline: float | None = None, check: Callable[[], bool] | None = None
    ) -> Iterator[dict[str, Any]]:
        assert self._request is not None, "send() first"
        for message in self.exchange(self._request):
            if self._interrupted.is_set():
                return
            yield message

    def interrupt(self) -> None:
        self._interrupted.set()

    def close(self) -> str | None:
        return None

    def release(self) -> None:
        pass


class MemoryConnector:
    """An in-memory supervisor for tests: every request goes to ``exchange``; ``sent``
    keeps each request (decoded) in order."""

    remote = False

    def __init__(self, exchange: Exchange, *, may_start: bool = True, cwd: str = "/") -> None:
        self.exchange, self.may_start, self.cwd = exchange, may_start, cwd
        import queue

        self.sent: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()

    def open(self, *, start: bool = True) -> Channel:
        def recorded(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
            self.sent.put(request)
            return self.exchange(request)

        return MemoryChannel(recorded)

    def default_cwd(self) -> str:
        return self.cwd

    def drop_kept(self) -> None:
        pass

    def wait_stopped(self, deadline: float) -> None:
        pass
