"""The terminal of an interactive task: ``python ptyhost.py SOCKET COLS ROWS -- ARGV...``.

It is the task's job (its monitor waits for it and records its status), so the terminal
lives as long as the command, whatever happens to the supervisor or the agent's host. It
opens a pseudo-terminal, runs ARGV on it in a session of its own, copies everything the
terminal prints to its stdout (the task's log) and exits with the command's status (a
signal N as 128 + N).

SOCKET (a Unix socket in the private tasks dir) is how the supervisor, and through it a
person who attaches, reaches the terminal: JSON lines. In: ``{"input": TEXT}``,
``{"resize": [COLS, ROWS]}``. Out: ``{"waiting": BOOL}`` at connection and on every
change, ``{"wrote": N}`` once an input is all written, ``{"error": TEXT}``. Only a peer of
the same user is served.

"Waiting for input" is read from the kernel: the terminal's foreground process group has a
process blocked in a read (or poll/select) of the terminal, none of it runs, and nothing
was printed or typed for QUIET seconds. Run as a script: the standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import platform
import selectors
import signal
import socket
import stat
import struct
import sys
import termios
import time

QUIET = float(os.environ.pop("WAVE_INPUT_QUIET_S", "") or 1.0)
"""Seconds without output or input before a blocked read counts as waiting for input."""
CHECK_INTERVAL = 0.1
MAX_PENDING_INPUT = 1 << 20
"""Input bytes queued for the terminal at most (a program that reads nothing)."""
SOCKET_PATH_LIMIT = 100

# Syscalls that wait for a descriptor to be readable: (read-like, taking the fd first),
# (poll-like, whose descriptors are in memory). By architecture, from the kernel's tables.
_SYSCALLS = {
    "x86_64": ({0, 17, 19, 295}, {7, 23, 232, 270, 271, 281, 441}),
    "aarch64": ({63, 65, 67, 69}, {22, 72, 73, 441}),
}
READS, POLLS = _SYSCALLS.get(platform.machine(), (set(), set()))


def _proc(pid: int | str, name: str) -> str | None:
    try:
        with open(f"/proc/{pid}/{name}", encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _link(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _stat_fields(pid: int | str) -> list[str] | None:
    text = _proc(pid, "stat")
    if text is None or ")" not in text:
        return None
    return text.rsplit(")", 1)[1].split()  # state, ppid, pgrp, ...


def _processes_of(root: int) -> list[int]:
    """``root`` and its descendants (the command's process tree)."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else ():
            todo.extend(int(c) for c in (_proc(f"{pid}/task/{tid}", "children") or "").split())
    return found


def _thread_reads_terminal(pid: int, tid: str, tty: str) -> bool | None:
    """Whether this thread waits to read the terminal (None: it is not waiting at all)."""
    fields = _stat_fields(f"{pid}/task/{tid}")
    if fields is None:
        return False
    if fields[0] not in ("S", "D"):  # running (R), stopped (T, t), a zombie
        return None
    call = (_proc(f"{pid}/task/{tid}", "syscall") or "").split()
    if not call:  # unreadable (a setuid program such as sudo asking a password): asleep
        return True
    if not call[0].isdigit():  # "running"
        return None
    number = int(call[0])
    if number in READS and len(call) > 1:
        return _link(f"/proc/{pid}/fd/{int(call[1], 16)}") == tty
    if number in POLLS:
        return _link(f"/proc/{pid}/fd/0") == tty
    return False


def blocked_on_terminal(master: int, child: int, tty: str) -> bool:
    """Whether the terminal's foreground process group waits to read it: a thread of it
    blocked reading the terminal, no thread of it running."""
    try:
        foreground = os.tcgetpgrp(master)
    except OSError:
        return False
    reading = False
    for pid in _processes_of(child):
        fields = _stat_fields(pid)
        if fields is None or int(fields[2]) != foreground:
            continue
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            state = _thread_reads_terminal(pid, tid, tty)
            if state is None:
                return False
            reading = reading or state
    return reading


def bind_private(path: str) -> socket.socket:
    """A listening Unix socket at ``path``, mode 0600 (a long path reached through its
    directory held open)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    directory, name = os.path.split(path)
    old = os.umask(0o077)
    dir_fd = None
    try:
        address = path
        if len(os.fsencode(path)) > SOCKET_PATH_LIMIT:
            dir_fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
            address = f"/proc/self/fd/{dir_fd}/{name}"
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)  # our own, from a host killed before (never anything else)
        sock.bind(address)
    finally:
        os.umask(old)
        if dir_fd is not None:
            os.close(dir_fd)
    sock.listen(8)
    sock.setblocking(False)
    return sock


def same_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", creds)[1]
    return uid == os.getuid()


def set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def spawn(argv: list[str], cols: int, rows: int) -> tuple[int, int, str]:
    """Start ``argv`` on a new terminal: (pid, master fd, terminal path)."""
    master, slave = os.openpty()
    set_size(slave, cols, rows)
    tty = os.ttyname(slave)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.login_tty(slave)  # a new session, the terminal its controlling one, on 0/1/2
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)  # as a shell would have left them
            os.environ["TERM"] = "dumb"
            os.execvp(argv[0], argv)
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(2, f"wave-bash: cannot run {argv[0]}: {exc}\n".encode())
            os._exit(127)
    os.close(slave)
    os.set_blocking(master, False)
    return pid, master, tty


class Client:
    """One connected peer: its unread bytes and its pending replies."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox = b""
        self.outbox = b""

    def say(self, message: dict[str, object]) -> None:
        self.outbox += json.dumps(message).encode() + b"\n"


class Host:
    def __init__(self, listener: socket.socket, master: int, child: int, tty: str) -> None:
        self.listener, self.master, self.child, self.tty = listener, master, child, tty
        self.sel = selectors.DefaultSelector()
        self.clients: dict[int, Client] = {}
        self.pending = b""
        """Input not written to the terminal yet."""
        self.queued = self.written = 0
        """Input bytes queued and written so far."""
        self.owed: list[tuple[Client, int, int]] = []
        """(client, size, end): ``{"wrote": size}`` is owed once ``written`` reaches end."""
        self.last_activity = time.monotonic()
        self.waiting = False
        self.status: int | None = None
        self.sel.register(listener, selectors.EVENT_READ, "listen")
        self.sel.register(master, selectors.EVENT_READ, "master")
        self.pidfd = os.pidfd_open(child) if hasattr(os, "pidfd_open") else None
        if self.pidfd is not None:  # else looked for at every round (macOS)
            self.sel.register(self.pidfd, selectors.EVENT_READ, "child")

    def run(self) -> int:
        while self.status is None:
            for client in self.clients.values():  # writable only matters with replies owed
                wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if client.outbox else 0)
                if self.sel.get_key(client.sock).events != wanted:
                    self.sel.modify(client.sock, wanted, client)
            for key, events in self.sel.select(CHECK_INTERVAL):
                if key.data == "listen":
                    self.accept()
                elif key.data == "master":
                    if events & selectors.EVENT_READ:
                        self.copy_output()
                    if events & selectors.EVENT_WRITE:
                        self.write_input()
                elif key.data == "child":
                    self.reap()
                else:
                    self.serve(key.data, events)
            if self.pidfd is None:
                self.reap()
            self.check_waiting()
        self.drain()
        return self.status

    def accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        if not same_user(sock):
            sock.close()
            return
        sock.setblocking(False)
        client = Client(sock)
        self.clients[sock.fileno()] = client
        client.say({"waiting": self.waiting})
        self.sel.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, client)  # a hello

    def drop(self, client: Client) -> None:
        self.clients.pop(client.sock.fileno(), None)
        with contextlib.suppress(Exception):
            self.sel.unregister(client.sock)
        client.sock.close()
        self.owed = [owed for owed in self.owed if owed[0] is not client]

    def serve(self, client: Client, events: int) -> None:
        if events & selectors.EVENT_WRITE and client.outbox:
            try:
                sent = client.sock.send(client.outbox)
                client.outbox = client.outbox[sent:]
            except BlockingIOError:
                pass
            except OSError:
                self.drop(client)
                return
        if events & selectors.EVENT_READ:
            try:
                data = client.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.drop(client)
                return
            client.inbox += data
            while b"\n" in client.inbox:
                line, client.inbox = client.inbox.split(b"\n", 1)
                self.request(client, line)
            if len(client.inbox) > 2 * MAX_PENDING_INPUT:
                self.drop(client)

    def request(self, client: Client, line: bytes) -> None:
        try:
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError("not an object")
            if "input" in message:
                text = message["input"]
                if not isinstance(text, str):
                    raise ValueError("input must be text")
                data = text.encode("utf-8", "surrogateescape")
                if len(self.pending) + len(data) > MAX_PENDING_INPUT:
                    client.say({"error": "the terminal is not reading its input"})
                    return
                self.pending += data
                self.queued += len(data)
                self.owed.append((client, len(data), self.queued))
                self.activity()
                self.write_input()
            elif "resize" in message:
                cols, rows = message["resize"]
                if not (isinstance(cols, int) and isinstance(rows, int)):
                    raise ValueError("resize takes two integers")
                if not (1 <= cols <= 10000 and 1 <= rows <= 10000):
                    raise ValueError("a terminal size is between 1 and 10000")
                set_size(self.master, cols, rows)
                client.say({"resized": [cols, rows]})
            else:
                raise ValueError("unknown request")
        except (ValueError, TypeError, OSError) as exc:
            client.say({"error": str(exc)})

    def activity(self) -> None:
        self.last_activity = time.monotonic()
        self.set_waiting(False)

    def set_waiting(self, waiting: bool) -> None:
        if waiting != self.waiting:
            self.waiting = waiting
            for client in self.clients.values():
                client.say({"waiting": waiting})

    def check_waiting(self) -> None:
        if time.monotonic() - self.last_activity < QUIET:
            return
        self.set_waiting(blocked_on_terminal(self.master, self.child, self.tty))

    def copy_output(self) -> bool:
        """Copy what the terminal printed to the log; False once nothing more can come."""
        try:
            data = os.read(self.master, 65536)
        except BlockingIOError:
            return True
        except OSError:  # EIO: no process has the terminal open any more
            with contextlib.suppress(Exception):
                self.sel.unregister(self.master)
            return False
        if not data:
            return False
        self.activity()
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(1, view) :]
            except InterruptedError:
                continue
            except OSError:  # a full disk: the output is lost, the session goes on
                break
        return True

    def write_input(self) -> None:
        while self.pending:
            try:
                written = os.write(self.master, self.pending)
            except BlockingIOError:
                break
            except OSError as exc:
                for client, _, _ in self.owed:
                    client.say({"error": f"cannot write to the terminal: {exc.strerror}"})
                self.owed.clear()
                self.written += len(self.pending)
                self.pending = b""
                break
            self.pending = self.pending[written:]
            self.written += written
            while self.owed and self.owed[0][2] <= self.written:
                client, size, _ = self.owed.pop(0)
                client.say({"wrote": size})
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.pending else 0)
        with contextlib.suppress(Exception):
            self.sel.modify(self.master, events, "master")

    def reap(self) -> None:
        try:
            pid, status = os.waitpid(self.child, os.WNOHANG)
        except ChildProcessError:
            self.status = 127
            return
        if pid:
            code = os.waitstatus_to_exitcode(status)
            self.status = 128 - code if code < 0 else code

    def drain(self) -> None:
        """What the command printed last (the terminal may hold it after its exit)."""
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                ready = selectors.DefaultSelector()
                ready.register(self.master, selectors.EVENT_READ)
                if not ready.select(0.05):
                    break
            except (OSError, ValueError, KeyError):
                break
            if not self.copy_output():
                break
        for client in list(self.clients.values()):
            with contextlib.suppress(OSError):
                client.sock.setblocking(True)
                client.sock.settimeout(0.2)
                client.sock.sendall(client.outbox)
            client.sock.close()


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: ptyhost.py SOCKET COLS ROWS -- ARGV...", file=sys.stderr)
        return 2
    path, cols, rows, command = argv[0], int(argv[1]), int(argv[2]), argv[4:]
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    listener = bind_private(path)
    try:
        child, master, tty = spawn(command, cols, rows)
        return Host(listener, master, child, tty).run()
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        listener.close()


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as exc:
        if exc.errno != errno.EINTR:
            print(f"wave-bash: terminal host failed: {exc}", file=sys.stderr)
        sys.exit(127)
