"""The supervisor's life: one per state dir (held lock), socket, recovery, signals.

Liveness is the held lock, not a pid file: a second supervisor started for the same
state dir finds the lock taken and exits quietly. Signal handlers only set an event;
the loop does the work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import hashlib
import logging
import os
import secrets
import signal
import socket
import sys
from functools import partial
from pathlib import Path
from typing import cast

from filelock import FileLock, Timeout

from wave_bash.api.constants import START_CUT_EXIT
from wave_bash.api.errors import InvalidInputError, StateDirError, WaveError
from wave_bash.api.paths import (
    StateLayout,
    default_state_dir,
    ensure_private_dir,
    move_aside,
    resolve_state_dir,
    socket_address,
)
from wave_bash.api.transport import LOOPBACK, TcpEndpoint, chosen_transport, tcp_handshake
from wave_bash.worker import choose_tracker
from wave_bash.worker.cgroups import leave_task_cgroups
from wave_bash.worker.files import keep_spare_descriptor
from wave_bash.worker.kill import TAG

from .context import MAX_CONNECTIONS, REQUEST_CHUNK, Context
from .faults import crash_point
from .journal import Journal
from .logs import log_loop_errors, setup_logging
from .recovery import open_journal, recover
from .retention import housekeeping, prune_in_background
from .server import accept_connection
from .settings import Settings
from .standby import remove_leftovers
from .tasks import AFTER_REPLIES, TaskManager

log = logging.getLogger("supervisor")

LISTEN_BACKLOG = 512
"""Connections the kernel queues before accept (callers arrive in bursts)."""


def _socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            with socket_address(path) as address:
                probe.connect(address)
        except OSError:
            return False
    return True


async def _bind(ctx: Context, again: bool = False) -> asyncio.AbstractServer | None:
    """Listen (``again``: on a socket path something removed or replaced while this
    supervisor, which holds the state dir, serves: whatever is there goes)."""
    if chosen_transport() == "tcp":
        return await _bind_tcp(ctx)
    path = ctx.layout.socket
    ensure_private_dir(path.parent)
    if path.exists() or path.is_symlink():
        # (a link, never followed: one to another state dir's socket, which answered,
        # kept every supervisor from starting here, "another process already serves")
        if not again and path.is_socket() and not path.is_symlink() and _socket_answers(path):
            log.error("another process already serves %s; exiting", path)
            return None
        if path.is_dir() and not path.is_symlink():  # (put there: kept, with what it holds)
            log.warning("%s was a directory: moved to %s", path, move_aside(path))
        else:
            path.unlink()  # stale socket of a dead supervisor
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with socket_address(path) as address:
            sock.bind(address)  # born private: the supervisor's umask is 077 (SPEC X1)
            os.chmod(address, 0o600)
    except BaseException:
        sock.close()
        raise
    return await asyncio.start_unix_server(
        partial(accept_connection, ctx), sock=sock, limit=REQUEST_CHUNK, backlog=LISTEN_BACKLOG
    )


PROBE_SECONDS = 1.0
"""How long a TCP supervisor's predecessor, still published, has to answer its hello."""


async def _bind_tcp(ctx: Context) -> asyncio.AbstractServer | None:
    """Loopback TCP where Unix sockets are not available: port + token in a 0600 file."""
    path = ctx.layout.tcp_endpoint
    with contextlib.suppress(OSError, ValueError, KeyError, WaveError):
        old = TcpEndpoint.read(path)
        with socket.create_connection((LOOPBACK, old.port), timeout=1.0) as probe:
            # Ours, not a squatter (which may hold it as long as it likes: not longer)
            tcp_handshake(probe, old.token, f"{LOOPBACK}:{old.port}", timeout=PROBE_SECONDS)
            log.error("another supervisor already serves port %d; exiting", old.port)
            return None
    server = await asyncio.start_server(
        partial(accept_connection, ctx),
        host=LOOPBACK,
        port=0,
        limit=REQUEST_CHUNK,
        backlog=LISTEN_BACKLOG,
    )
    ctx.token = secrets.token_urlsafe(32)
    TcpEndpoint(server.sockets[0].getsockname()[1], ctx.token).write(path)
    return server


def sandbox_hidden_dirs(layout: StateLayout) -> list[str]:
    """Besides the state dir, what a sandboxed command must not reach: the socket's
    directory when elsewhere, and the default state dir of any other wave-bash client
    (its supervisor's socket would run commands outside the sandbox)."""
    hidden = [layout.socket.parent, default_state_dir()]
    return [str(d) for d in dict.fromkeys(hidden) if d != layout.root and _is_dir(d)]


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a directory; not one that cannot be looked at (``HOME=/root``
    for another user: `is_dir` raised, and no supervisor started, a trial), which no
    command of this user can reach either."""
    try:
        return path.is_dir()
    except OSError:
        return False


async def serve(
    layout: StateLayout, settings: Settings, journal: Journal, ready: Ready | None = None
) -> int:
    """Serve until stopped. The caller closes ``journal`` once the event loop has ended:
    a task's end may still come in as ``asyncio.run`` cancels what is left, and closed
    here, its write met a closed database and was dropped (a trial)."""
    log_loop_errors(asyncio.get_running_loop())
    before, now = raise_open_files_limit()
    keep_spare_descriptor()
    loop = asyncio.get_running_loop()
    journal.defer_writes(lambda flush: loop.call_later(AFTER_REPLIES, flush))
    tracker = choose_tracker(tracker_name(layout.root), settings.tracking)
    tasks = TaskManager(
        journal, layout.tasks, command_open_files=before if before != now else None,
        tracker=tracker, memory_limit=settings.task_memory_limit, bwrap=settings.bwrap,
        hidden_dirs=sandbox_hidden_dirs(layout),
    )  # fmt: skip
    log.info("tracking task processes by %s", tasks.tracking)
    if settings.task_memory_limit and (tracker is None or tracker.memory_base is None):
        log.warning("WAVE_TASK_MEMORY_LIMIT is not enforced: no memory cgroup is usable")
    ctx = Context(layout, journal, tasks, settings, max_connections=connection_cap(settings, now))
    log.info("descriptor limit %s (commands get %s); up to %d connections", now, before,
             ctx.max_connections)  # fmt: skip
    ctx.tasks.made_files.start()  # (before a re-adopted task's command can take them all)
    recover(ctx.tasks, settings.attach_grace)
    ctx.tasks.adopt_leftovers()  # (what ended tasks left running, as the last one saw it)
    if tracker is not None:  # cgroups of tasks that ended while no supervisor watched
        keep = {*ctx.tasks.live, *ctx.tasks.lingering}
        tracker.tidy(keep=keep | {row.id for row in journal.tasks(running_only=True)})
    remove_leftovers(journal, layout.tasks)
    server = await _bind(ctx)
    if server is None:
        return 1
    prune_in_background(ctx)
    _on_stop_signals(loop, ctx.stop_event)
    log.info("supervisor %d serving %s", os.getpid(), layout.socket)
    crash_point("before_serving")
    if ready is not None:
        ready.say(b"1")
    servers = [server]
    chores = [asyncio.create_task(housekeeping(ctx))]
    chores.append(asyncio.create_task(_keep_socket(ctx, servers)))
    await ctx.stop_event.wait()
    log.info("supervisor %d stopping; %d task(s) keep running", os.getpid(), len(ctx.tasks.live))
    for chore in chores:
        chore.cancel()
    ctx.tasks.standby.close()
    ctx.tasks.made_files.close()  # (watched again by the next supervisor, as it adopts)
    ctx.tasks.after_replies()  # (ends' usage read before their cgroups go)
    ctx.tasks.cgroup_ops.shutdown(wait=True)  # cgroups being made or removed: done first
    servers[-1].close()
    if not ctx.state_dir_lost:  # (else the cgroups and socket may be another's now)
        if ctx.tasks.tracker is not None:
            ctx.tasks.tracker.tidy(keep={*ctx.tasks.live, *ctx.tasks.lingering}, parents=True)
        ctx.tasks.flush_identities()  # the next supervisor adopts by pid without a tag scan
        with contextlib.suppress(OSError):
            (layout.tcp_endpoint if ctx.token else layout.socket).unlink()
    return 0


LOCK_PATIENCE = 0.5
"""How long a starting supervisor waits for the state dir's lock before it takes another
for its holder."""

SOCKET_CHECK_SECONDS = 2.0
"""How often the supervisor checks that its socket is still where clients look for it."""


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    """What tells a file from the one put in its place (an inode number is often given
    again at once: the type and change time tell them apart)."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_mode, found.st_ctime_ns


async def _keep_socket(ctx: Context, servers: list[asyncio.AbstractServer]) -> None:
    """Listen again (TCP: publish the endpoint again) when the socket's path no longer
    leads to this supervisor (a command or a person removed or replaced it): clients
    would find no supervisor there, and none could start while this one holds the state
    dir. Stop when the state dir itself was removed or replaced (``rm -rf``): its lock
    went with it, so another supervisor may serve there, and two took the socket from
    each other by turns (a trial)."""
    path = ctx.layout.tcp_endpoint if ctx.token else ctx.layout.socket
    bound = _identity(path)
    root = os.open(ctx.layout.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        while True:
            await asyncio.sleep(SOCKET_CHECK_SECONDS)
            if not _same_dir(ctx.layout.root, root):
                log.error("the state dir %s was removed or replaced: stopping", ctx.layout.root)
                ctx.state_dir_lost = True
                ctx.stop_event.set()
                return
            if _identity(path) == bound:
                continue
            log.warning("%s was removed or replaced: published again", path)
            try:
                if ctx.token:  # (the same port and token)
                    port = cast(asyncio.Server, servers[-1]).sockets[0].getsockname()[1]
                    TcpEndpoint(port, ctx.token).write(path)
                    bound = _identity(path)
                    continue
                server = await _bind(ctx, again=True)
            except Exception as exc:  # (a directory put there): tried again at the next check
                log.error("cannot listen on %s again: %s", path, exc)
                continue
            if server is not None:
                servers[-1].close()  # (its connections go on; no new one reaches it)
                servers.append(server)
                bound = _identity(path)
    finally:
        os.close(root)


def _same_dir(path: Path, fd: int) -> bool:
    """Whether ``path`` is still the directory open as ``fd`` (an inode held open: no new
    directory takes its number), or cannot be told now (a parent not searchable for a
    moment, an I/O error: a trial's `chmod 000` of a parent stopped a supervisor)."""
    try:
        found, held = os.lstat(path), os.fstat(fd)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        return exc.errno != errno.ESTALE  # (a directory gone on the server: lost too)
    return (found.st_dev, found.st_ino) == (held.st_dev, held.st_ino) and held.st_nlink > 0


def _on_stop_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """SIGTERM/SIGINT stop the supervisor (tasks keep running); SIGHUP is ignored. The
    handlers only set an event; the loop does the work."""
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: None)
    except (NotImplementedError, AttributeError):  # Windows' Proactor loop
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))


class Ready:
    """The write end of the pipe a detached supervisor's starter waits on (None: not
    detached). Said once: ``1`` serving, ``0`` another supervisor serves, else why it
    could not start, which the starter prints (its log may be on the full disk that
    stopped it)."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def say(self, value: bytes) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            with contextlib.suppress(OSError):
                os.write(fd, value[:READY_LIMIT])
            os.close(fd)


READY_LIMIT = 4096
"""Bytes of a start failure's reason sent to the starter (one pipe write, never blocked)."""


def close_inherited_descriptors() -> None:
    """Close every inheritable descriptor the supervisor was started with (beyond stdin,
    stdout and stderr): it uses none of them (its own are all close-on-exec), and one
    kept would keep its starter's pipe open for as long as the supervisor runs, or go to
    every monitor and command (``posix_spawn`` and a fork pass inheritable
    descriptors on)."""
    listing = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    try:
        numbers = [int(name) for name in os.listdir(listing)]
    except (OSError, ValueError):  # (Windows: no fd listing, nothing inherited by number)
        return
    for fd in numbers:
        with contextlib.suppress(OSError):  # (the listing's own descriptor, closed)
            if fd > 2 and os.get_inheritable(fd):
                os.close(fd)


RAISED_LIMITS = ("RLIMIT_FSIZE", "RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_DATA")
"""Soft limits a supervisor raises to its hard ones, for itself and so for every command:
a first starter's ``ulimit -f 200`` cut each later command's log at 200 KB (SIGXFSZ),
then the journal ("disk I/O error"); its ``ulimit -u`` refused later commands (a trial).
Not the core size (a raised one would leave core files in projects), nor the stack (its
size moves where programs map memory); descriptors: :func:`raise_open_files_limit`."""


def leave_what_a_starter_left() -> list[str]:
    """Undo what the process that started this supervisor set for its own use, which every
    command would otherwise inherit for the supervisor's life: lowered soft limits
    (:data:`RAISED_LIMITS`), ignored signals (``trap '' QUIT`` before a ``cmd &``: no
    command could be stopped by SIGQUIT), and a task's cgroup (a supervisor started from
    a task of another state dir went with that task's stop, and every task it ran).
    Returns what it did about a task's cgroup (:func:`leave_task_cgroups`)."""
    with contextlib.suppress(ImportError):  # (Windows)
        import resource

        for name in RAISED_LIMITS:
            which = getattr(resource, name, None)
            if which is None:
                continue
            with contextlib.suppress(ValueError, OSError):
                soft, hard = resource.getrlimit(which)
                if soft != hard and soft != resource.RLIM_INFINITY:
                    resource.setrlimit(which, (hard, hard))
    for number in signal.valid_signals():
        if number in (signal.SIGPIPE, signal.SIGXFSZ):  # (Python's own; children reset them)
            continue
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(number) is signal.SIG_IGN:
                signal.signal(number, signal.SIG_DFL)
    return leave_task_cgroups()


def _detach(layout: StateLayout) -> Ready:
    """Fork; the parent waits until the child serves, then exits (so callers never reap
    a long-lived daemon). Returns the write end of the ready pipe in the child."""
    read_fd, write_fd = os.pipe()
    if os.fork() > 0:
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as ready:
            answer = ready.read(READY_LIMIT)
        if answer in (b"0", b"1"):
            os._exit(0)
        if not answer:  # (it ended without a word: killed as it started)
            print(f"wave-bash supervisor ended as it started (see {layout.log})", file=sys.stderr)
            os._exit(START_CUT_EXIT)
        why = answer.decode(errors="replace").strip()
        print(f"wave-bash supervisor failed to start: {why}", file=sys.stderr)
        os._exit(1)
    os.close(read_fd)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    return Ready(write_fd)


def tracker_name(root: Path) -> str:
    """The name of a state dir's cgroups (a hash: paths may not fit a cgroup name)."""
    return hashlib.sha256(os.fsencode(root)).hexdigest()[:12]


def raise_open_files_limit() -> tuple[int | None, int | None]:
    """Raise the soft descriptor limit to the hard one (each live task holds a pidfd, each
    caller a connection); returns (the limit before, the limit now), None where unknown.
    Commands get the limit before back (see ``TaskManager``): some programs still use
    ``select()`` and break with descriptors above 1024."""
    try:
        import resource
    except ImportError:  # Windows
        return None, None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            return soft, hard
    return soft, soft


MIN_OPEN_FILES = 32
"""Fewest descriptors a supervisor starts with: its journal alone takes three, its log,
lock, socket, event loop and spawner a few more, and each caller and live task one (it
ran a first command from 24 on, here)."""


def check_open_files_limit() -> None:
    """Refuse to start under a descriptor limit too small to serve (``ulimit -n 10``: the
    journal failed to open, said as "unable to open database file"; a failure review).

    Raises:
        InvalidInputError: the hard limit, which the soft one is raised to, is too small.
    """
    try:
        import resource
    except ImportError:  # Windows
        return
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < MIN_OPEN_FILES:
        raise InvalidInputError(
            f"the descriptor limit is {hard} (`ulimit -n`): the supervisor needs at least "
            f"{MIN_OPEN_FILES}; raise it where wave-bash is started"
        )


def connection_cap(settings: Settings, open_files: int | None) -> int:
    """How many connections are served at once: a quarter of the descriptors (the rest
    is for tasks, the journal and log files), at most 1024, unless set."""
    if settings.max_connections is not None:
        return settings.max_connections
    if open_files is None or open_files < 0:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, open_files // 4))


def main(argv: list[str] | None = None) -> int:
    """``python -m wave_bash.supervisor --state-dir DIR``: run the supervisor in the foreground."""
    parser = argparse.ArgumentParser(prog="python -m wave_bash.supervisor", description=__doc__)
    parser.add_argument(
        "--state-dir", help="state directory (default: WAVE_STATE_DIR or the user state dir)"
    )
    parser.add_argument(
        "--detach", action="store_true", help="run in the background; exit once serving"
    )
    args = parser.parse_args(argv)
    os.environ.pop(TAG, None)  # (a task's tag, where a command started it: nothing it
    # starts is that task's; its own pid is never walked through, see worker.kill)
    close_inherited_descriptors()
    cgroup_outcomes = leave_what_a_starter_left()
    layout = StateLayout(resolve_state_dir(args.state_dir))
    os.umask(0o077)  # everything the supervisor creates is private (SPEC X1); commands get
    # the caller's umask with their instructions
    try:
        settings = Settings.from_env()
        check_open_files_limit()
    except WaveError as exc:
        print(f"wave-bash supervisor: {exc}", file=sys.stderr)
        return 2
    try:
        ensure_private_dir(layout.root)
        ensure_private_dir(layout.tasks)
    except StateDirError as exc:
        print(f"wave-bash supervisor: {exc}", file=sys.stderr)
        return 2
    setup_logging(layout, settings.log_level)
    for outcome in cgroup_outcomes:
        log.warning("started inside a task's cgroup: %s", outcome)
    ready = _detach(layout) if args.detach else Ready(None)
    try:
        return _serve_locked(layout, settings, ready)
    finally:  # (said unless said: only a kill says nothing, a start its starter tries
        ready.say(f"it stopped before it served: see {layout.log}".encode())  # again)


def _serve_locked(layout: StateLayout, settings: Settings, ready: Ready) -> int:
    """Serve once this supervisor holds the state dir's lock (or leave it to the one that
    does)."""
    os.chdir("/")  # never keep a project directory busy
    # (a moment's wait: a client asking whether one runs holds a shared lock that long)
    lock = FileLock(str(layout.lock), timeout=LOCK_PATIENCE)
    try:
        lock.acquire()
    except Timeout:
        log.info("another supervisor holds %s; exiting", layout.lock)
        ready.say(b"0")
        return 0
    except OSError as exc:  # (a directory in its place: it never passes, a review)
        log.error("cannot take the lock %s: %s", layout.lock, exc)
        ready.say(f"cannot take its lock {layout.lock}: {exc.strerror or exc}".encode())
        return 2
    journal: Journal | None = None
    try:
        journal = open_journal(layout)
        return asyncio.run(serve(layout, settings, journal, ready))
    except Exception as exc:
        log.exception("supervisor failed")
        ready.say(str(exc).encode(errors="replace") or type(exc).__name__.encode())
        raise
    finally:
        if journal is not None:  # (with what came in as the loop ended; see serve)
            journal.close()
        # (the lock last: the state dir is free once it goes, its log closed too, as
        logging.shutdown()  # `supervisor stop` waits for it, then `umount`s, a trial)
        lock.release()
