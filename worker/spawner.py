"""A small process that starts monitors which must be child subreapers, for a supervisor
whose own fork costs milliseconds.

Only the new process itself can make itself a child subreaper (``prctl``), between fork
and ``exec``: ``posix_spawn`` runs nothing there, so such a monitor was a fork of the
whole supervisor (2-3 ms for its 40 MB here, the event loop held throughout, then a
copy-on-write fault for each page it wrote next). This process is small, and forks
instead. Its fork is a ``clone`` with ``CLONE_PARENT``: the monitor is the supervisor's
child all the same, which reaps it and gets its status as before.

Run as a script (``python -I -S spawner.py``, the stdlib only) with its stdin a stream
socket from the supervisor. Each request is a length (8 bytes) with the descriptors to
give attached, then the marshalled argv, environment (``NAME=value`` bytes) and the
numbers the descriptors take in the child; the answer is the pid and the ``exec``
error's errno (one of them 0). Nothing else is inherited: every other descriptor here is
close-on-exec. It exits when the supervisor's end closes.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import marshal
import os
import platform
import signal
import socket
import struct
import sys
import threading
from collections.abc import Sequence

CLONE_PARENT = 0x8000
PR_SET_CHILD_SUBREAPER = 36
SYSCALL_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220}
"""``SYS_clone`` where known (the flags are its first argument on each); elsewhere the
supervisor forks such monitors itself."""
MAX_FDS = 16
HEADER = struct.Struct("=Q")
ANSWER = struct.Struct("=ii")
LOW_FDS = 16
"""Descriptors here are kept at or above this, clear of the numbers a child's take."""


def _serve(channel: socket.socket) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    clone_number = SYSCALL_CLONE[platform.machine()]
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(
                channel, HEADER.size, MAX_FDS, socket.MSG_CMSG_CLOEXEC
            )
        except OSError:
            return
        if not data:
            return
        try:
            while len(data) < HEADER.size:
                data += _exactly(channel, HEADER.size - len(data))
            (length,) = HEADER.unpack(data)
            argv, env, numbers = marshal.loads(_exactly(channel, length))
            fds = [_above_low(fd) for fd in fds]
            channel.sendall(ANSWER.pack(*_start(libc, clone_number, argv, env, fds, numbers)))
        except (OSError, EOFError, ValueError, TypeError):
            return
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _exactly(channel: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        part = channel.recv(size - len(data))
        if not part:
            raise EOFError
        data += part
    return data


def _above_low(fd: int) -> int:
    """``fd`` moved to a number clear of the children's (close-on-exec)."""
    if fd >= LOW_FDS:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, LOW_FDS)
    os.close(fd)
    return moved


def _start(
    libc: ctypes.CDLL, clone_number: int, argv: list[bytes], env: list[bytes],
    fds: Sequence[int], numbers: Sequence[int],
) -> tuple[int, int]:  # fmt: skip
    """Clone, set the child up and ``exec``; returns (pid, 0), or (pid, errno) when
    ``exec`` failed (the child has exited: the supervisor reaps it), or (0, errno)."""
    error_read, error_write = os.pipe()  # close-on-exec: end of file once it has exec'd
    error_read, error_write = _above_low(error_read), _above_low(error_write)
    try:
        pid = libc.syscall(clone_number, CLONE_PARENT | signal.SIGCHLD, 0, 0, 0, 0)
        if pid == 0:  # the child: one thread, nothing but os calls until exec
            code = 0
            try:
                os.setsid()
                if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
                    raise OSError(ctypes.get_errno(), "prctl")
                for fd, number in zip(fds, numbers, strict=True):
                    os.dup2(fd, number)  # inheritable, unlike the original
                for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these
                    signal.signal(sig, signal.SIG_DFL)
                os.execve(argv[0], argv, dict(_split(entry) for entry in env))
            except OSError as exc:
                code = exc.errno or 1
            except BaseException:
                code = 1
            with contextlib.suppress(BaseException):
                os.write(error_write, ANSWER.pack(0, code))
            os._exit(127)
        if pid < 0:
            return 0, ctypes.get_errno() or 1
        os.close(error_write)
        error_write = -1
        answer = os.read(error_read, ANSWER.size)
        return pid, ANSWER.unpack(answer)[1] if answer else 0
    finally:
        os.close(error_read)
        if error_write >= 0:
            os.close(error_write)


def _split(entry: bytes) -> tuple[bytes, bytes]:
    name, _, value = entry.partition(b"=")
    return name, value


def usable() -> bool:
    """Whether this machine can have a spawner (Linux, a known ``clone`` number)."""
    return sys.platform == "linux" and platform.machine() in SYSCALL_CLONE


class SpawnerError(OSError):
    """The spawner could not be started or answer: start the monitor another way."""


class Spawner:
    """The supervisor's side: starts the spawner on first use, and again if it died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channel: socket.socket | None = None
        self._pid = 0

    def spawn(
        self, argv: Sequence[str], env: dict[str, str], moves: Sequence[tuple[int, int]]
    ) -> int:
        """Start ``argv`` as this process's child, in a session of its own, a child
        subreaper, with each descriptor of ``moves`` at its number there; returns its pid.

        Raises:
            OSError: ``exec`` failed (as ``posix_spawn`` raises it).
            ValueError: ``env`` cannot be given to a process.
            SpawnerError: no spawner: fork another way.
        """
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
            for attempt in (1, 2):  # once more with a new spawner if this one died
                try:
                    channel = self._channel or self._start()
                    socket.send_fds(channel, [HEADER.pack(len(request))], [fd for fd, _ in moves])
                    channel.sendall(request)
                    pid, error = (int(n) for n in ANSWER.unpack(_exactly(channel, ANSWER.size)))
                except (OSError, EOFError) as exc:
                    self.close()
                    if attempt == 2:
                        raise SpawnerError(f"no spawner: {exc}") from None
                    continue
                if error:
                    if pid > 0:  # it exited at once: our child, reaped here
                        with contextlib.suppress(ChildProcessError):
                            os.waitpid(pid, 0)
                    raise OSError(error, os.strerror(error), argv[0])
                return pid
        raise AssertionError("unreachable")

    @property
    def pid(self) -> int:
        """The spawner's pid (0: none started)."""
        return self._pid

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with open(os.devnull, "wb") as null:
                self._pid = os.posix_spawn(
                    sys.executable,
                    [sys.executable, "-I", "-S", __file__],
                    {},
                    file_actions=[
                        (os.POSIX_SPAWN_DUP2, theirs.fileno(), 0),
                        (os.POSIX_SPAWN_DUP2, null.fileno(), 1),
                        (os.POSIX_SPAWN_DUP2, null.fileno(), 2),
                    ],
                    setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
                )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
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


def main() -> int:
    number = _above_low(os.dup(0))
    os.close(0)
    # Nothing its starter left inheritable may reach a monitor: only the channel stays.
    os.closerange(3, number)
    os.closerange(number + 1, os.sysconf("SC_OPEN_MAX"))
    _serve(socket.socket(fileno=number))
    return 0


if __name__ == "__main__":
    sys.exit(main())
