"""The terminal of an interactive task: ``python ptyhost.py SOCKET COLS ROWS -- ARGV...``.

It is the task's job (its monitor waits for it and records its status), so the terminal
lives as long as the command, whatever happens to the supervisor or the agent's host. It
opens a pseudo-terminal, runs ARGV on it in a session of its own, copies everything the
terminal prints to its stdout (the task's log) and exits with the command's status (a
signal N as 128 + N).

SOCKET (a Unix socket in the private tasks dir) is how the supervisor, and through it a
person who attaches, reaches the terminal: JSON lines. In: ``{"id": ID, "input": TEXT,
"key": KEY}`` (an input whose KEY was seen is not typed again), ``{"id": ID, "resize":
[COLS, ROWS], "by": TOKEN}`` (an attach's, or with no TOKEN the task's own size), ``{"id":
ID, "seen": TOKEN}`` (that attach is still there: see ``ATTACH_LEASE``). Out:
``{"waiting": BOOL}`` at connection and on every change; to each request, with its ID,
``{"queued": N}`` at once for an input taken (refused: ``{"error": TEXT}``), ``{"wrote":
N}`` once all of it was written, ``{"resized": …}``, ``{"seen": BOOL}`` or ``{"error":
TEXT}``; as the command ends, to an input not all written ``{"ended": true}`` (part of it
was: the command may have ended by it) or ``{"gone": true}`` (none was), as to any request
that comes then. Only peers of the same user are served, 16 at most.

"Waiting for input" is read from the kernel: the terminal's foreground process group has a
process blocked in a read (or poll/select) of the terminal, none of it runs, and nothing
was printed or typed for QUIET seconds. The host is a child subreaper: a process the
command's processes leave behind (``( read … & )``) stays in its tree, where that look
finds it. Run as a script: the standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import platform
import re
import selectors
import signal
import socket
import stat
import struct
import sys
import termios
import time
from typing import Any

QUIET = float(os.environ.pop("WAVE_INPUT_QUIET_S", "") or 1.0)
"""Seconds without output or input before a blocked read counts as waiting for input."""
CHECK_INTERVAL = 0.1
ECHO_WINDOW = 1024
"""Bytes of input written ahead of their echo at most, while the terminal echoes: the
kernel keeps 4 KiB of echo its reader has not taken, and drops older echo past it (a
64 KB paste written at once lost blocks of its echo, 1 in 5 times: a review)."""
ECHO_PATIENCE = 0.05
"""Seconds without output after which input written is taken as echoed all the same
(Ctrl+D echoes nothing; a program that reads no more has its terminal take no more), and
the window doubles, up to :data:`ECHO_WINDOW_MOST`: 30,000 Ctrl+Ds took 3.5 s at 1 KiB a
round (a review). Output read brings it back to :data:`ECHO_WINDOW`."""
ECHO_WINDOW_MOST = 8192
"""The window at most: what the kernel keeps of unread echo and output together."""
MAX_PENDING_INPUT = 1 << 20
MAX_ATTACHED = 64
ATTACH_LEASE = 15.0
"""Seconds after which an attach that has not been heard from counts as gone (its size
given back, the program's questions answered by this host again): a live one calls at
least every 5 s (``api.attach.WATCH_MS``); one killed outright (SIGKILL, a dropped ssh)
never said it left, and kept its size and the questions unanswered for good (helper
216's trial: a prompt_toolkit program hung)."""
"""Attaches whose sizes are remembered at most (one killed never says it left)."""
"""Input bytes queued for the terminal at most (a program that reads nothing)."""
SOCKET_PATH_LIMIT = 100

# Syscalls that wait for a descriptor to be readable, by architecture (the kernel's
# tables): the descriptor is the first argument (read family); an array of pollfd at
# the first argument, its length the second (poll); an fd_set of the second argument's
# first N bits, N the first argument (select); an epoll descriptor whose registered
# descriptors its fdinfo lists (epoll).
_SYSCALLS = {
    "x86_64": {
        "read": {0, 17, 19, 295}, "poll": {7, 271}, "select": {23, 270}, "epoll": {232, 281, 441},
    },
    "aarch64": {"read": {63, 65, 67, 69}, "poll": {73}, "select": {72}, "epoll": {22, 441}},
}  # fmt: skip
SYSCALLS = _SYSCALLS.get(platform.machine(), {})
CONTROLLING_TERMINAL = "/dev/tty"


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
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:  # gone meanwhile
            continue
        for tid in threads:
            todo.extend(int(c) for c in (_proc(f"{pid}/task/{tid}", "children") or "").split())
    return found


class Terminal:
    """What identifies the task's terminal in another process: its path, and
    ``/dev/tty`` (the controlling terminal, which it is for the whole session)."""

    def __init__(self, path: str) -> None:
        self.names = {path, CONTROLLING_TERMINAL}

    def is_fd(self, pid: int, fd: int) -> bool:
        return _link(f"/proc/{pid}/fd/{fd}") in self.names


def _memory(pid: int, address: int, size: int) -> bytes | None:
    """Bytes of a process's memory (its ancestor may read them), or None."""
    if size <= 0 or size > 1 << 16:
        return None
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(address)
            return mem.read(size)
    except (OSError, ValueError, OverflowError):
        return None


def _waits_on_terminal(pid: int, call: list[str], terminal: Terminal) -> bool:
    """Whether the syscall ``call`` (``/proc/…/syscall``: number, arguments) waits for
    the terminal to be readable, reading the arguments as the kernel has them."""
    number, args = int(call[0]), [int(a, 16) for a in call[1:7] if a.startswith("0x")]
    if len(args) < 2:
        return False
    if number in SYSCALLS.get("read", ()):
        return terminal.is_fd(pid, args[0])
    if number in SYSCALLS.get("poll", ()):
        data = _memory(pid, args[0], 8 * args[1])
        fds = [] if data is None else [struct.unpack_from("i", data, 8 * i)[0]
                                       for i in range(len(data) // 8)]  # fmt: skip
        return any(fd >= 0 and terminal.is_fd(pid, fd) for fd in fds)
    if number in SYSCALLS.get("select", ()):
        bitmap = _memory(pid, args[1], (args[0] + 7) // 8) if args[1] else None
        fds = [] if bitmap is None else [i for i in range(args[0]) if bitmap[i // 8] >> (i % 8) & 1]
        return any(terminal.is_fd(pid, fd) for fd in fds)
    if number in SYSCALLS.get("epoll", ()):
        info = _proc(pid, f"fdinfo/{args[0]}") or ""
        fds = [int(line.split()[1]) for line in info.splitlines() if line.startswith("tfd:")]
        return any(terminal.is_fd(pid, fd) for fd in fds)
    return False


def _thread_reads_terminal(pid: int, tid: str, terminal: Terminal, echo_off: bool) -> bool | None:
    """Whether this thread waits to read the terminal (None: it runs, so the group is
    not waiting)."""
    fields = _stat_fields(f"{pid}/task/{tid}")
    if fields is None or fields[0] in ("Z", "X"):  # gone, or a zombie: not in the way
        return False
    if fields[0] not in ("S", "D"):  # running (R), stopped (T, t)
        return None
    call = (_proc(f"{pid}/task/{tid}", "syscall") or "").split()
    if not call:  # unreadable (setuid: sudo, passwd): asleep with echo off is a password
        return echo_off
    if not call[0].isdigit():  # "running"
        return None
    return _waits_on_terminal(pid, call, terminal)


def blocked_on_terminal(master: int, root: int, terminal: Terminal) -> bool:
    """Whether the terminal's foreground process group, of ``root``'s tree, waits to read
    it: a thread of it blocked reading the terminal, no thread of it running."""
    try:
        foreground = os.tcgetpgrp(master)
        echo_off = not termios.tcgetattr(master)[3] & termios.ECHO
    except (OSError, termios.error):
        return False
    reading = False
    for pid in _processes_of(root):
        fields = _stat_fields(pid)
        if fields is None or int(fields[2]) != foreground:
            continue
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            state = _thread_reads_terminal(pid, tid, terminal, echo_off)
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


def get_size(fd: int) -> tuple[int, int]:
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, bytes(8)))
    return cols, rows


def _size_of(value: object) -> tuple[int, int]:
    """A size a request names: ``[columns, rows]``, each 1–10000."""
    if not (isinstance(value, list) and len(value) == 2):
        raise ValueError("a terminal size is [columns, rows]")
    cols, rows = value
    if not (isinstance(cols, int) and isinstance(rows, int)):
        raise ValueError("resize takes two integers")
    if not (1 <= cols <= 10000 and 1 <= rows <= 10000):
        raise ValueError("a terminal size is between 1 and 10000")
    return cols, rows


SUSPEND_KEY = b"\x1a"
"""Ctrl+Z."""
IUTF8 = getattr(termios, "IUTF8", 0o40000 if sys.platform in ("linux", "darwin") else 0)
"""The terminal's UTF-8 input flag (Python's ``termios`` names it from 3.13; the same
value on Linux and macOS)."""


def spawn(argv: list[str], cols: int, rows: int) -> tuple[int, int, int, str]:
    """Start ``argv`` on a new terminal: (pid, master fd, terminal fd, terminal path).
    The caller keeps the terminal open while the command runs: with no process holding
    it (a command that closes it, to open ``/dev/tty`` again later) reading the master
    fails, and what came after was lost until the end."""
    master, slave = os.openpty()
    set_size(slave, cols, rows)
    # Input is UTF-8 (TaskInput's text, attach's keys): an erase takes back a character,
    # not its last byte, as in tmux (without it `é⌫` left a broken byte in the line read).
    # Ctrl+Z is a character until a shell with job control runs a job (Host.write_input).
    attributes = termios.tcgetattr(slave)
    attributes[0] |= IUTF8
    attributes[6][termios.VSUSP] = b"\0"
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    tty = os.ttyname(slave)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(master)
            os.login_tty(slave)  # a new session, the terminal its controlling one, on 0/1/2
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)  # as a shell would have left them
            os.environ["TERM"] = "dumb"
            for name in EDITORS:  # (an editor has keys to read here: TaskInput, attach)
                if os.environ.get(name, "").endswith(NO_EDITOR):
                    del os.environ[name]
            os.environ.setdefault("EDITOR", TERMINAL_EDITOR)
            os.execvp(argv[0], argv)
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(2, f"wave-bash: cannot run {argv[0]}: {exc}\n".encode())
            os._exit(127)
    os.set_blocking(master, False)
    return pid, master, slave, tty


NO_EDITOR = "wave-bash-no-editor"
"""The editor a command without a terminal gets (``worker/spawn.py``, E2a), failing at
once: on a terminal it is unset (`git rebase -i` failed there saying there was none, and
a command's `EDITOR=vi` lost to its `GIT_SEQUENCE_EDITOR`: a trial)."""
EDITORS = ("EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR")
TERMINAL_EDITOR = "vi"
"""``EDITOR`` on a terminal where none is set: git's own default, which it refuses on a
dumb terminal without ``EDITOR`` (`Terminal is dumb, but EDITOR unset`: a review); git's
``core.editor`` still comes first."""


MAX_CLIENTS = 16
"""Connections served at once (the supervisor needs one; a person attaching, a few)."""
MAX_OUTBOX = 1 << 20
"""Replies a peer may leave unread before it is dropped."""
REMEMBERED_KEYS = 256
"""Inputs recognised when sent again (a supervisor replaced mid-call resends)."""
LINE_LIMIT = 4095
"""Longest line a terminal in line mode takes (the kernel's buffer, less the newline)."""


def _special(cc: list[Any], index: int | None) -> int | None:
    """A special character of the terminal (``termios`` ``c_cc``), None where disabled."""
    if index is None or index >= len(cc) or not isinstance(cc[index], bytes):
        return None
    value = cc[index][0] if cc[index] else _DISABLED
    return None if value == _DISABLED else value


_DISABLED = 0 if sys.platform.startswith("linux") else 0xFF
"""``_POSIX_VDISABLE``: a special character so set is none (0xFF on macOS and the BSDs,
where ``eol`` and ``eol2`` are so set by default)."""


def typed_line(line: bytearray, data: bytes, attrs: list[Any]) -> tuple[int, bool]:
    """Type ``data`` onto ``line``, the text a terminal in line mode keeps, as its line
    discipline edits it with the terminal's own settings (``termios.tcgetattr``): a line
    end (Enter, ``eol``, ``eof``) or a signal character (``isig``) clears it, ``kill``
    (Ctrl+U) too, ``erase`` (Backspace) takes back a character (a whole one under
    ``iutf8``), ``werase`` (Ctrl+W) a word, ``lnext`` (Ctrl+V) makes the next byte plain.
    Returns the longest the line got, and whether that line held text typed before
    ``data``. (Counting every byte since a fixed set of line ends refused Backspaces as
    making the line longer, and took Ctrl+C for a line end under ``-isig``: a trial.)"""
    iflag, lflag, cc = attrs[0], attrs[3], attrs[6]
    special = {name: _special(cc, getattr(termios, name, None)) for name in _SPECIAL}
    extended = bool(lflag & termios.IEXTEN)
    swallowed = {special["VSTART"], special["VSTOP"]} if iflag & termios.IXON else set()
    if extended and lflag & termios.ECHO:  # (Ctrl+R prints the line again)
        swallowed.add(special["VREPRINT"])
    clears = {10, special["VEOL"], special["VEOF"], special["VKILL"]}
    if extended:  # (Linux reads `eol2` only with `iexten`)
        clears.add(special["VEOL2"])
    signals = (
        {special["VINTR"], special["VQUIT"], special["VSUSP"]} if lflag & termios.ISIG else set()
    )
    whole_chars = bool(iflag & IUTF8)  # (termios has none before Python 3.13)
    longest, carried, carried_at_longest = len(line), bool(line), bool(line)
    literal = False
    for byte in data:
        if literal:
            literal = False
        elif byte == 13 and iflag & termios.IGNCR:
            continue
        else:
            if byte == 13 and iflag & termios.ICRNL:
                byte = 10
            elif byte == 10 and iflag & termios.INLCR:
                byte = 13
            if byte in clears or (byte in signals and not lflag & termios.NOFLSH):
                line.clear()
                carried = False
                continue
            if byte in signals or byte in swallowed:  # (`noflsh`: the line stays)
                continue
            if byte == special["VERASE"]:
                _erase(line, whole_chars, word=False)
                continue
            if extended and byte == special["VWERASE"]:
                _erase(line, whole_chars, word=True)
                continue
            if extended and byte == special["VLNEXT"]:
                literal = True
                continue
        line.append(byte)
        if len(line) > longest:
            longest, carried_at_longest = len(line), carried
    return longest, carried_at_longest


def _erase(line: bytearray, whole_chars: bool, word: bool) -> None:
    """Take back the last character of ``line`` (under ``iutf8`` a whole UTF-8 one), or
    with ``word`` as ``werase`` does: the characters that are no word's, then the word's
    before them, each judged by its first byte as Linux does (letters of Latin-1 too: a
    UTF-8 character's first byte is one), or on the BSDs and macOS up to a blank."""
    in_word = _word_linux if sys.platform.startswith("linux") else _word_bsd
    seen = False
    while line:
        start = len(line) - 1
        while whole_chars and start > 0 and line[start] & 0xC0 == 0x80:
            start -= 1  # (its continuation bytes, then its first)
        if whole_chars and line[start] & 0xC0 == 0x80:
            return  # (no first byte before them: Linux erases no part of a character)
        if word and in_word(line[start]):
            seen = True
        elif word and seen:
            return
        del line[start:]
        if not word:
            return


def _word_linux(byte: int) -> bool:
    """A word's byte for Linux's ``werase``: ``isalnum`` of its Latin-1 table, or ``_``."""
    if byte < 0x80:
        return chr(byte).isalnum() or byte == 95
    return byte >= 0xC0 and byte not in (0xD7, 0xF7)  # (its letters: À to ÿ but × and ÷)


def _word_bsd(byte: int) -> bool:  # (the BSDs' and macOS's: up to a blank)
    return byte not in b" \t"


_SPECIAL = ("VEOL", "VEOL2", "VEOF", "VKILL", "VINTR", "VQUIT", "VSUSP", "VERASE", "VWERASE",
            "VLNEXT", "VSTART", "VSTOP", "VREPRINT")  # fmt: skip
"""The special characters :func:`typed_line` reads (``None`` where a platform has none)."""


ALTERNATE_SCREEN = re.compile(rb"\x1b\[\?(?:1049|1047|47)([hl])")
"""A program entering (``h``) or leaving (``l``) the alternate screen (vim, less, top)."""

CURSOR_QUESTION = re.compile(rb"\x1b\[\??6n")
"""A program asking its terminal where the cursor is (DSR 6, DECXCPR): crossterm's and
prompt_toolkit's programs, fzf's ``--height``; unanswered, it waits (a trial: for good,
"waiting for input" with nothing shown)."""
_SEQUENCE = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -~])")
_HOME = re.compile(rb"\x1b\[(?:1?;?1?)?[Hf]")
ANSWER_WINDOW = 1.0
"""Seconds a question waits for its program to leave line mode and read the answer."""
ANSWERED_AT_MOST = 4096
"""Input bytes waiting to be typed past which a question is left unanswered (a program
that asks in a loop and reads nothing)."""


def cursor_after(cursor: tuple[int, int], data: bytes) -> tuple[int, int]:
    """Where the cursor is after ``data``, roughly, as (row, column) from 0: each newline a
    row down, the characters after the last newline or carriage return across, a move
    home at the top; other moves, escape sequences and wide characters are not followed.
    Not held to the terminal's size, which its answer is (the same place: a size that
    holds both steps holds their sum), as it is when asked. Enough to answer a program's
    question where no terminal of a person would (tmux answers from its screen)."""
    row, col = cursor
    homes = [home.end() for home in _HOME.finditer(data)]
    if homes:
        row, col, data = 0, 0, data[homes[-1] :]
    row += data.count(b"\n")
    cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
    shown = len(_SEQUENCE.sub(b"", data[cut + 1 :]).decode(errors="replace"))
    return row, (col if cut < 0 else 0) + shown


class Client:
    """One connected peer: its unread bytes and its pending replies."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox = b""
        self.outbox = b""

    def say(self, message: dict[str, object]) -> None:
        self.outbox += json.dumps(message).encode() + b"\n"


class Host:
    def __init__(
        self, listener: socket.socket, master: int, child: int, tty: str, held: int = -1
    ) -> None:
        self.listener, self.master, self.child = listener, master, child
        self.held = held
        """The terminal's own end, held open until the command ends (see :func:`spawn`)."""
        self.own_size = get_size(master)
        """The task's own size: as started, or as a caller set it since."""
        self.attached: dict[str, tuple[int, int]] = {}
        """The size each person attached now set (by an attach's token), in the order
        they came: the last one's is the terminal's; as one leaves, the one before's, or
        the task's own once none is left (tmux's way)."""
        self.heard_from: dict[str, float] = {}
        """When each attach in ``attached`` was last heard from (see ``ATTACH_LEASE``)."""
        self.alternate = False
        """Whether the program is on the alternate screen, from all it printed: an attach
        replays only the last of it, and must enter that screen itself (a trial)."""
        self.printed_tail = b""
        self.cursor = (0, 0)
        """Where the cursor is, roughly (:func:`cursor_after`), to answer where it is."""
        self.questions: list[tuple[float, tuple[int, int]]] = []
        """Questions for the cursor's place not answered yet: when, and the place then."""
        self.terminal = Terminal(tty)
        self.sel = selectors.DefaultSelector()
        self.clients: dict[int, Client] = {}
        self.pending = b""
        """Input not written to the terminal yet."""
        self.queued = self.written = 0
        """Input bytes queued and written so far."""
        self.unechoed, self.wrote_at, self.held_for_echo = 0, 0.0, False
        """Input bytes written while the terminal echoes, less the output read since; when
        the last was written; whether the rest waits for their echo (:data:`ECHO_WINDOW`)."""
        self.echo_window = ECHO_WINDOW
        self.owed: list[tuple[Client, dict[str, object], int]] = []
        """(client, reply, end): the reply is owed once ``written`` reaches end."""
        self.typed: dict[str, int] = {}
        """Keys of inputs typed (or queued) already, with their sizes."""
        self.open_line = bytearray()
        """The line typed so far (line mode: the terminal keeps it, see :func:`typed_line`)."""
        self.last_activity = self.last_check = time.monotonic()
        self.waiting = False
        self.status: int | None = None
        self.sel.register(listener, selectors.EVENT_READ, "listen")
        self.sel.register(master, selectors.EVENT_READ, "master")
        self.pidfd = os.pidfd_open(child) if hasattr(os, "pidfd_open") else None
        if self.pidfd is not None:  # else looked for at every round (macOS)
            self.sel.register(self.pidfd, selectors.EVENT_READ, "child")

    def run(self) -> int:
        while self.status is None:
            for client in list(self.clients.values()):  # writable matters with replies owed
                if len(client.outbox) > MAX_OUTBOX:  # it reads nothing: let it go
                    self.drop(client)
                    continue
                wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if client.outbox else 0)
                if self.sel.get_key(client.sock).events != wanted:
                    self.sel.modify(client.sock, wanted, client)
            wait = ECHO_PATIENCE if self.held_for_echo else CHECK_INTERVAL
            for key, events in self.sel.select(wait):
                if key.data == "listen":
                    self.accept()
                elif key.data == "master":
                    if events & selectors.EVENT_READ:
                        self.copy_output()
                    if events & selectors.EVENT_WRITE:
                        self.write_input()
                elif (peer := self.clients.get(key.fd)) is key.data and peer is not None:
                    self.serve(peer, events)  # (not dropped earlier this round)
            # Every round (a syscall): the command's end (its pidfd woke this one), and
            # what it left behind as it ends (a busy command that forks `( x & )` piled up
            # zombies while the look for a prompt waited for a quiet second: a review).
            if self.held_for_echo:  # (see ECHO_PATIENCE)
                self.write_input()
            self.reap()
            self.forget_gone_attaches()
            self.check_waiting()
            self.answer_questions()
        self.drain()
        return self.status

    def accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        if len(self.clients) >= MAX_CLIENTS or not same_user(sock):
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
        """One request; every reply carries the request's ``id``."""
        ident: object = None
        try:
            message = json.loads(line)
            if not isinstance(message, dict):
                raise ValueError("not an object")
            ident = message.get("id")
            if "input" in message:
                lines = message.get("lines") is True
                self.type(client, message["input"], message.get("key"), ident, lines)
            elif "seen" in message:
                seen = message["seen"]
                known = isinstance(seen, str) and seen in self.attached
                if known:
                    self.heard_from[seen] = time.monotonic()
                client.say({"id": ident, "seen": known})
            elif "resize" in message:
                size = _size_of(message["resize"])
                by = message.get("by")
                was = get_size(self.master)
                self.resize(size, by if isinstance(by, str) else None, bool(message.get("if_last")))
                client.say({"id": ident, "resized": list(get_size(self.master)), "was": list(was),
                            "alternate": self.alternate})  # fmt: skip
            else:
                raise ValueError("unknown request")
        except (ValueError, TypeError, OSError, termios.error) as exc:
            client.say({"id": ident, "error": str(exc)})

    def type(
        self, client: Client, text: object, key: object, ident: object, lines: bool = False
    ) -> None:
        """Queue typed input; ``{"wrote": N}`` once the terminal took all of it. An input
        whose key was seen is not typed again (its caller resent it). With ``lines`` (a
        model's text: TaskInput), a line end is the Enter key where the program reads keys
        (the terminal out of line mode): a CR, as a keyboard sends it, for a LF was Ctrl+J
        to crossterm and bubbletea (a trial); in line mode it is a LF, which ends a line
        whatever ``icrnl`` or ``igncr`` say (a CRLF there was two line ends under
        ``icrnl``: pasted with Windows line ends, an answer also answered the next prompt
        unseen, a trial)."""
        if not isinstance(text, str):
            raise ValueError("input must be text")
        if isinstance(key, str) and key in self.typed:
            client.say({"id": ident, "wrote": self.typed[key], "again": True})
            return
        data = text.encode("utf-8", "surrogateescape")
        attrs = termios.tcgetattr(self.master)
        if lines:
            data = data.replace(b"\r\n", b"\n")
            if not attrs[3] & termios.ICANON:
                data = data.replace(b"\n", b"\r")
        open_line = bytearray()
        if attrs[3] & termios.ICANON:
            open_line = bytearray(self.open_line)  # the line typed so far goes on
            longest, joined = typed_line(open_line, data, attrs)
            if longest > LINE_LIMIT:
                said = " with what is typed on it already" if joined else ""
                raise ValueError(
                    f"a terminal in line mode takes lines of at most {LINE_LIMIT} bytes; this "
                    f"input has one of {longest}{said} (write long text to a file and read it "
                    "from there)"
                )
        if len(self.pending) + len(data) > MAX_PENDING_INPUT:
            raise ValueError("the terminal is not reading its input")
        self.open_line = open_line
        if isinstance(key, str):
            self.typed[key] = len(data)
            while len(self.typed) > REMEMBERED_KEYS:
                del self.typed[next(iter(self.typed))]
        self.pending += data
        self.queued += len(data)
        client.say({"id": ident, "queued": len(data)})  # (a refusal would have come now)
        self.owed.append((client, {"id": ident, "wrote": len(data)}, self.queued))
        self.activity()
        self.write_input()

    def resize(self, size: tuple[int, int], by: str | None, leaving: bool) -> None:
        """A size set by an attach (``by``: its token), or by a caller (none), which is the
        task's own from then on, whoever attached before; an attach ``leaving`` gives the
        terminal the size of who stays (two attaches that left in turn kept the size of one
        already gone: a trial)."""
        if leaving:
            if by is None or self.attached.pop(by, None) is None:
                return
            self.heard_from.pop(by, None)
            size = list(self.attached.values())[-1] if self.attached else self.own_size
        elif by is None:
            self.own_size = size
            self.attached.clear()
            self.heard_from.clear()
        else:
            self.attached.pop(by, None)
            self.attached[by] = size
            self.heard_from[by] = time.monotonic()
            while len(self.attached) > MAX_ATTACHED:  # (those that never said they left)
                gone = next(iter(self.attached))
                del self.attached[gone], self.heard_from[gone]
        set_size(self.master, *size)

    def forget_gone_attaches(self) -> None:
        """Those not heard from for ``ATTACH_LEASE`` s leave, as if they had said so."""
        now = time.monotonic()
        for gone in [by for by, at in self.heard_from.items() if now - at > ATTACH_LEASE]:
            self.resize(self.own_size, gone, leaving=True)

    def activity(self) -> None:
        self.last_activity = time.monotonic()
        self.set_waiting(False)

    def set_waiting(self, waiting: bool) -> None:
        if waiting != self.waiting:
            self.waiting = waiting
            for client in self.clients.values():
                client.say({"waiting": waiting})

    def check_waiting(self) -> None:
        """Look again once quiet for QUIET: every round at first, then less often (a
        quiet command with many processes costs a /proc walk each time)."""
        now = time.monotonic()
        quiet = now - self.last_activity
        if quiet < QUIET:
            return
        interval = CHECK_INTERVAL if quiet < QUIET + 2 else min(1.0, quiet / 10)
        if now - self.last_check < interval:
            return
        self.last_check = now
        try:
            waiting = blocked_on_terminal(self.master, os.getpid(), self.terminal)
        except Exception:  # a process gone mid-look, no descriptor left: look again later
            waiting = False
        self.set_waiting(waiting)

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
        self.echo_window = ECHO_WINDOW  # (echo comes again: from one window on)
        if self.unechoed:
            self.unechoed = max(0, self.unechoed - len(data))
            if self.pending and self.unechoed < ECHO_WINDOW // 2:
                self.write_input()
        seen = self.printed_tail + data  # (a sequence split between two reads)
        for switch in ALTERNATE_SCREEN.finditer(seen):
            self.alternate = switch[1] == b"h"
        self.note_questions(seen, len(self.printed_tail))
        self.answer_questions()
        self.printed_tail = seen[-8:] if b"\x1b" in seen[-8:] else b""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(1, view) :]
            except InterruptedError:
                continue
            except OSError:  # a full disk: the output is lost, the session goes on
                break
        return True

    def note_questions(self, seen: bytes, old: int) -> None:
        """Note each question for the cursor's place in what was printed (``seen``, of
        which the first ``old`` bytes were seen before), with the place then, to answer
        (:meth:`answer_questions`)."""
        start = 0
        for question in CURSOR_QUESTION.finditer(seen):
            if question.end() <= old:
                continue
            self.cursor = cursor_after(self.cursor, seen[max(start, old) : question.start()])
            start = question.end()
            self.questions.append((time.monotonic(), self.cursor))
        self.cursor = cursor_after(self.cursor, seen[max(start, old) :])

    def answer_questions(self) -> None:
        """Answer the questions noted, as a terminal does, once the program reads the
        answer: its terminal out of line mode (in it, the answer was echoed and read as a
        line's text), which it may leave just after asking (`read -d R`: a full run), so
        a question waits for it up to ``ANSWER_WINDOW`` s. Not while a person is attached
        (theirs answers). Typed after what is queued, counted as typed."""
        if not self.questions:
            return
        try:
            line_mode = bool(termios.tcgetattr(self.master)[3] & termios.ICANON)
        except termios.error:
            line_mode = True
        if line_mode or self.attached:
            now = time.monotonic()
            self.questions = [q for q in self.questions if now - q[0] < ANSWER_WINDOW]
            if self.attached:
                self.questions.clear()
            return
        cols, rows = get_size(self.master)
        for _, (row, col) in self.questions:
            if len(self.pending) < ANSWERED_AT_MOST:
                answer = b"\x1b[%d;%dR" % (min(row, rows - 1) + 1, min(col, cols - 1) + 1)
                self.pending += answer
                self.queued += len(answer)
        self.questions.clear()
        self.write_input()

    def echo_room(self) -> int | None:
        """How much input may be written now ahead of its echo (None: no bound, the
        terminal echoes nothing)."""
        try:
            echoing = bool(termios.tcgetattr(self.master)[3] & termios.ECHO)
        except termios.error:
            echoing = False
        if not echoing:
            self.unechoed = 0
            return None
        if self.unechoed and time.monotonic() - self.wrote_at > ECHO_PATIENCE:
            self.unechoed = 0  # (no echo came: taken as echoed, and more sent at once)
            self.echo_window = min(self.echo_window * 2, ECHO_WINDOW_MOST)
        return self.echo_window - self.unechoed

    def write_input(self) -> None:
        room = self.echo_room() if self.pending else None
        while self.pending and (room is None or room > 0):
            chunk = self.pending if room is None else self.pending[:room]
            if chunk.startswith(SUSPEND_KEY):  # (each Ctrl+Z as the terminal's state is now)
                self.suspend_key_for(self.job_in_front())
                chunk = chunk[:1]
            elif SUSPEND_KEY in chunk:
                chunk = chunk[: chunk.index(SUSPEND_KEY)]
            try:
                written = os.write(self.master, chunk)
            except BlockingIOError:
                break
            except OSError as exc:
                for client, reply, _ in self.owed:
                    client.say({"id": reply["id"], "error": f"cannot type: {exc.strerror}"})
                self.owed.clear()
                self.written += len(self.pending)
                self.pending = b""
                break
            self.pending = self.pending[written:]
            self.written += written
            if room is not None:
                room -= written
                self.unechoed += written
                self.wrote_at = time.monotonic()
        while self.owed and self.owed[0][2] <= self.written:
            client, reply, _ = self.owed.pop(0)
            client.say(reply)
        self.held_for_echo = bool(self.pending) and room is not None and room <= 0
        writable = self.pending and not self.held_for_echo  # (else its echo, or a round later)
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if writable else 0)
        with contextlib.suppress(Exception):
            self.sel.modify(self.master, events, "master")

    def job_in_front(self) -> bool:
        """Whether a shell with job control (``bash -i``) has put a job of its own in the
        terminal's foreground: its process group is not the command's own."""
        try:
            return os.tcgetpgrp(self.master) != os.getpgid(self.child)
        except OSError:
            return False

    def suspend_key_for(self, job: bool) -> None:
        """Ctrl+Z stops a job of a shell with job control, which takes the terminal back
        (``[1]+ Stopped``); to a command on its own it is a character: a program that stops
        itself on it (``top``, ``nano``) would stay stopped, no shell there to continue it."""
        with contextlib.suppress(OSError, termios.error):
            attributes = termios.tcgetattr(self.master)
            wanted = SUSPEND_KEY if job else b"\0"
            if attributes[6][termios.VSUSP] != wanted:
                attributes[6][termios.VSUSP] = wanted
                termios.tcsetattr(self.master, termios.TCSANOW, attributes)

    def reap(self) -> None:
        """The command's status once it ended; processes adopted meanwhile as they end."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # (none left: the command's was taken elsewhere)
                self.status = 127 if self.status is None else self.status
                break
            if not pid:
                break
            if pid == self.child:
                code = os.waitstatus_to_exitcode(status)
                self.status = 128 - code if code < 0 else code
        if self.status is not None and self.held >= 0:  # the drain ends as the last
            os.close(self.held)  # holder closes it
            self.held = -1

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
        for client, reply, end in self.owed:  # (typed in part, or not at all)
            typed = self.written > end - int(str(reply["wrote"]))
            client.say({"id": reply["id"], "ended" if typed else "gone": True})
        self.owed.clear()
        for client in list(self.clients.values()):
            self.farewell(client)

    def farewell(self, client: Client) -> None:
        """Answer a peer's last requests (the command has ended: ``gone``) and close.
        What it sent is read first: a socket closed with unread data resets the peer's
        end, which would lose the replies already sent (an input that ended the command)."""
        sock = client.sock
        with contextlib.suppress(OSError):
            sock.setblocking(False)
            for _ in range(2):  # what came, then what came while answering
                with contextlib.suppress(BlockingIOError):
                    while data := sock.recv(65536):
                        client.inbox += data
                while b"\n" in client.inbox:
                    line, client.inbox = client.inbox.split(b"\n", 1)
                    with contextlib.suppress(ValueError, AttributeError):
                        client.say({"id": json.loads(line).get("id"), "gone": True})
                sock.settimeout(0.2)
                sock.sendall(client.outbox)
                client.outbox = b""
                sock.setblocking(False)
            sock.shutdown(socket.SHUT_WR)
        sock.close()


PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Become a child subreaper (Linux): a prompt of a process whose parent had exited
    (``( read -p 'name? ' x </dev/tty & )``) was never seen, as it was no descendant of
    the command any more, and every call on it ran its whole timeout (a trial)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):  # (then as before: such a prompt goes unseen)
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def main(argv: list[str]) -> int:
    if len(argv) < 5 or argv[3] != "--":
        print("usage: ptyhost.py SOCKET COLS ROWS -- ARGV...", file=sys.stderr)
        return 2
    path, cols, rows, command = argv[0], int(argv[1]), int(argv[2]), argv[4:]
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    listener = bind_private(path)
    try:
        adopt_orphans()
        child, master, slave, tty = spawn(command, cols, rows)
        # A stop signals every process of the task: the command's own status and last
        # words are what count, so the host outlives it and drains its terminal.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return Host(listener, master, child, tty, slave).run()
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
