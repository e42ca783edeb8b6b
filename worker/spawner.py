"""A small process that starts monitors which must be child subreapers, for a supervisor
whose own fork costs milliseconds.

Only the new process itself can make itself a child subreaper (``prctl``), between fork
and ``exec``: ``posix_spawn`` runs nothing there, so such a monitor was a fork of the
whole supervisor (2-3 ms for its 40 MB here, the event loop held throughout, then a
copy-on-write fault for each page it wrote next). This process is small, and forks
instead. Its fork is a ``clone`` with ``CLONE_PARENT``: the monitor is the supervisor's
child all the same, which reaps it and gets its status as before.

Run as a script (``python -I -S spawner.py``, the stdlib only) with its stdin a stream
socket from the supervisor. A request is a length (8 bytes) with descriptors attached,
then the marshalled argv, environment (``NAME=value`` bytes) and the numbers the
descriptors after the first two take in the child. The first two are the supervisor's
own pipes to the child: the child writes its pid on the second as it starts, then waits
for one byte on the first before it goes on to ``exec``; on the second again it writes
the errno of a failed ``exec`` (close-on-exec: end of file once it has exec'd). So the
supervisor learns the child's pid and its fate from the child, not from this process,
and a child execs only once the supervisor knows it: a spawner that dies or hangs
mid-request never leaves a monitor started twice, or unknown. The answer to each
request is ``clone``'s errno (0: cloned). It exits when the supervisor's end closes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import marshal
import os
import platform
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence

CLONE_PARENT = 0x8000
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1
SYSCALL_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220}
"""``SYS_clone`` of the 64-bit ABIs where it is known (the flags are its first argument on
each); elsewhere the supervisor forks such monitors itself."""
MAX_FDS = 16
HEADER = struct.Struct("=Q")
NUMBER = struct.Struct("=i")
LOW_FDS = 16
"""Descriptors here are kept at or above this, clear of the numbers a child's take."""
GO = b"g"
PATIENCE = 5.0
"""Seconds the supervisor waits for the spawner or a new child at each step: one that is
stopped or wedged is killed then, and the monitor forked the old way."""


def _serve(channel: socket.socket, clone_number: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(
                channel, HEADER.size, MAX_FDS, socket.MSG_CMSG_CLOEXEC
            )
        except OSError:
            return
        if not data:
            return
        fds = [_above_low(fd) for fd in fds]
        try:
            data += _exactly(channel, HEADER.size - len(data))
            (length,) = HEADER.unpack(data)
            argv, env, numbers = marshal.loads(_exactly(channel, length))
            go, report, *given = fds
            error = _clone(libc, clone_number, go, report, (argv, env, given, numbers))
            channel.sendall(NUMBER.pack(error))
        except (OSError, EOFError, ValueError, TypeError):
            return
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _exactly(channel: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        part = channel.recv(size - len(data))
        if not part:
            raise EOFError
        data += part
    return bytes(data)


def _above_low(fd: int) -> int:
    """``fd`` moved to a number clear of the children's (close-on-exec)."""
    if fd >= LOW_FDS:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, LOW_FDS)
    os.close(fd)
    return moved


def _clone(
    libc: ctypes.CDLL,
    clone_number: int,
    go: int,
    report: int,
    what: tuple[list[bytes], list[bytes], list[int], list[int]],
) -> int:
    """Clone a child that reports its pid on ``report``, waits for :data:`GO` on ``go``,
    sets itself up and execs; returns ``clone``'s errno (0: cloned)."""
    argv, env, fds, numbers = what
    pid = libc.syscall(clone_number, CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
    if pid != 0:
        return 0 if pid > 0 else ctypes.get_errno() or errno.EINVAL
    code = 1  # the child: one thread, nothing but os calls until exec
    try:
        os.write(report, NUMBER.pack(os.getpid()))
        if os.read(go, 1) != GO:  # the supervisor gave up on it
            os._exit(127)
        os.setsid()
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # (as the fork did: best effort)
        for fd, number in zip(fds, numbers, strict=True):
            os.dup2(fd, number)  # inheritable, unlike the original
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these
            signal.signal(sig, signal.SIG_DFL)
        os.execve(argv[0], argv, dict(_split(entry) for entry in env))
    except OSError as exc:
        code = exc.errno or 1
    except BaseException:  # (reported below, as any failure before exec)
        code = 1
    with contextlib.suppress(BaseException):  # (no one may read it: no death by SIGPIPE)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.write(report, NUMBER.pack(code))
    os._exit(127)


def _split(entry: bytes) -> tuple[bytes, bytes]:
    name, _, value = entry.partition(b"=")
    return name, value


def usable() -> bool:
    """Whether this machine can have a spawner: Linux, a 64-bit Python (the kernel's
    machine name says nothing of a 32-bit userland's ABI) with a known ``clone``."""
    return sys.platform == "linux" and sys.maxsize > 2**32 and platform.machine() in SYSCALL_CLONE


class SpawnerError(OSError):
    """The spawner could not start the process, and nothing was started: fork it another
    way."""


class Spawner:
    """The supervisor's side: starts the spawner on first use, and again if it died."""

    def __init__(self, patience: float = PATIENCE, clone_number: int | None = None) -> None:
        """``clone_number`` (tests): the syscall the spawner clones with."""
        self.patience = patience
        self._clone_number = clone_number
        self._lock = threading.Lock()
        self._channel: socket.socket | None = None
        self._pid = 0
        self._broken = False
        """Set once the spawner cannot work here: every process is then forked the old way."""

    @property
    def pid(self) -> int:
        """The spawner's pid (0: none started)."""
        return self._pid

    def prepare(self) -> None:
        """Start the spawner now, so that the first process does not wait for its
        interpreter's start-up (about 30 ms); a failure shows at the first spawn."""
        with self._lock:
            if self._channel is None and not self._broken:
                with contextlib.suppress(_Retry):
                    self._start()

    def spawn(
        self, argv: Sequence[str], env: dict[str, str], moves: Sequence[tuple[int, int]]
    ) -> int:
        """Start ``argv`` as this process's child, in a session of its own, a child
        subreaper, with each descriptor of ``moves`` at its number there; returns its pid
        once it has exec'd.

        Raises:
            OSError: ``exec`` failed (as ``posix_spawn`` raises it).
            ValueError: ``env`` cannot be given to a process.
            SpawnerError: nothing was started: fork it another way.
        """
        pid, _ = self._request(argv, env, moves, wait_exec=True)
        return pid

    def spawn_ahead(
        self, argv: Sequence[str], env: dict[str, str], moves: Sequence[tuple[int, int]]
    ) -> tuple[int, int]:
        """:meth:`spawn`, returning as soon as the child is told to exec (a wake-up
        sooner, for a process not needed yet): its pid, and a pipe on which its exec
        shows (:func:`exec_failure`; the caller closes it)."""
        return self._request(argv, env, moves, wait_exec=False)

    def _request(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        moves: Sequence[tuple[int, int]],
        wait_exec: bool,
    ) -> tuple[int, int]:
        for name, value in env.items():  # as os.posix_spawn checks them
            if not name or "=" in name or "\0" in name or "\0" in value:
                raise ValueError(f"illegal environment variable {name!r}")
        request = marshal.dumps(
            (
                [os.fsencode(a) for a in argv],
                [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()],
                [number for _, number in moves],
            )
        )
        with self._lock:
            for attempt in (1, 2):  # once more with a new spawner: no child can have exec'd
                if self._broken:
                    raise SpawnerError("the spawner cannot work here")
                try:
                    return self._spawn(request, [fd for fd, _ in moves], str(argv[0]), wait_exec)
                except _Retry as retry:
                    self.close()
                    if attempt == 2:
                        self._broken = True
                        raise SpawnerError(f"no spawner: {retry}") from None
                except BaseException:  # (the channel may be mid-request: never reused)
                    self.close()
                    raise
        raise AssertionError("unreachable")

    def _spawn(self, request: bytes, fds: list[int], name: str, wait_exec: bool) -> tuple[int, int]:
        """(pid, -1), or without ``wait_exec`` (pid, the report pipe, now the caller's)."""
        deadline = time.monotonic() + self.patience
        channel = self._channel or self._start()
        go_read, go_write = os.pipe()
        report_read, report_write = os.pipe()
        try:
            try:
                socket.send_fds(channel, [HEADER.pack(len(request))], [go_read, report_write, *fds])
                channel.sendall(request)
            except OSError as exc:
                raise _Retry(exc) from None
            finally:
                os.close(go_read)
                os.close(report_write)
            pid = _number(report_read, deadline)
            if pid is None:  # no child: clone failed, or the spawner is gone
                error = self._answer()
                if error in (errno.EAGAIN, errno.ENOMEM):
                    raise SpawnerError(error, os.strerror(error))  # (the fork fails alike)
                if error:  # (ENOSYS, EINVAL: this clone is not the kernel's)
                    self._broken = True
                raise _Retry(f"clone: {os.strerror(error)}" if error else "no child came")
            try:
                os.write(go_write, GO)
                exec_error = _number(report_read, deadline) if wait_exec else None
            except OSError:  # killed before exec (EPIPE), or stuck there (TimeoutError)
                exec_error = -1
            if exec_error is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)  # our child: reaped here
                if exec_error > 0:
                    raise OSError(exec_error, os.strerror(exec_error), name)
                raise SpawnerError(f"the spawner's child {pid} ended before exec")
            if self._answer() != 0:  # (the channel is out of step: a new spawner next time)
                self.close()
            if wait_exec:
                return pid, -1
            report_read, kept = -1, report_read
            return pid, kept
        except TimeoutError:  # stopped or wedged: the child, if any, gets no go, and exits
            raise _Retry("no answer in time") from None
        finally:
            os.close(go_write)
            if report_read >= 0:
                os.close(report_read)

    def _answer(self) -> int | None:
        """The spawner's answer to the request sent (``None``: none)."""
        if self._channel is None:
            return None
        try:
            return int(NUMBER.unpack(_exactly(self._channel, NUMBER.size))[0])
        except (OSError, EOFError):
            return None

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        number = self._clone_number
        argv = [sys.executable, "-I", "-S", __file__, *([str(number)] if number else [])]
        try:
            with open(os.devnull, "wb") as null:
                self._pid = os.posix_spawn(
                    sys.executable,
                    argv,
                    {},
                    file_actions=[
                        (os.POSIX_SPAWN_DUP2, theirs.fileno(), 0),
                        (os.POSIX_SPAWN_DUP2, null.fileno(), 1),
                        (os.POSIX_SPAWN_DUP2, null.fileno(), 2),
                    ],
                    setsid=True,  # (a terminal's signals are not for it)
                    setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                )
        except OSError as exc:
            ours.close()
            raise _Retry(exc) from None
        finally:
            theirs.close()
        ours.settimeout(self.patience)
        self._channel = ours
        return ours

    def close(self) -> None:
        """Stop the spawner (killed: it holds nothing) and reap it."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._pid:
            with contextlib.suppress(OSError):  # (it holds nothing: never waited for)
                os.kill(self._pid, signal.SIGKILL)
                os.waitpid(self._pid, 0)
            self._pid = 0


class _Retry(Exception):
    """This spawner failed, and no child of this request can exec."""


def exec_failure(report: int, patience: float = PATIENCE) -> OSError | None:
    """Whether a child of :meth:`Spawner.spawn_ahead` failed to exec (its errno, or
    ``ETIMEDOUT`` when it has not exec'd within ``patience``); closes ``report``."""
    try:
        error = _number(report, time.monotonic() + patience)
    except TimeoutError:
        error = errno.ETIMEDOUT
    finally:
        os.close(report)
    return None if error is None else OSError(error, os.strerror(error))


def _number(fd: int, deadline: float) -> int | None:
    """The next number on pipe ``fd`` (``None``: end of file first).

    Raises:
        TimeoutError: none by ``deadline``.
    """
    data = b""
    poll = select.poll()  # (not select: the supervisor's descriptors go past 1024)
    poll.register(fd, select.POLLIN)
    while len(data) < NUMBER.size:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poll.poll(remaining * 1000):
            raise TimeoutError
        part = os.read(fd, NUMBER.size - len(data))
        if not part:
            return None
        data += part
    return int(NUMBER.unpack(data)[0])


def main(argv: Sequence[str]) -> int:
    clone_number = int(argv[0]) if argv else SYSCALL_CLONE[platform.machine()]
    parent = os.getppid()  # (killed with its supervisor: one stopped then sees no channel
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # close, and stayed
    if os.getppid() != parent:  # an orphan for good: helper 223; not for its children,
        return 0  # whose fork clears it. Gone before it was set: there is no one to serve)
    number = _above_low(os.dup(0))
    os.close(0)
    # Nothing its starter left inheritable may reach a monitor: only the channel stays.
    os.closerange(3, number)
    os.closerange(number + 1, os.sysconf("SC_OPEN_MAX"))
    _serve(socket.socket(fileno=number), clone_number)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
