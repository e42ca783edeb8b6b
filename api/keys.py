"""Ctrl+B in a terminal: a key watcher that backgrounds the running command (SPEC F4)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import sys
import termios
import threading
import tty
from collections.abc import Callable
from types import FrameType

from .display import in_foreground

CTRL_B = b"\x02"

LOOK_AGAIN = 0.2
"""Seconds between looks, in the background, for whether it is in the foreground again."""


class CtrlBWatcher:
    """Reads the terminal in cbreak mode while a command runs; calls ``on_ctrl_b`` on Ctrl+B.

    What else is typed is kept (:attr:`typed`) and, with ``give_back``, put back into the
    terminal's input as the watcher closes (``TIOCSTI``, where the kernel allows it):
    type-ahead for the shell, as when the command runs in it directly (it was read and
    lost: a review); not after Ctrl+C, which drops type-ahead as a terminal does. The
    terminal mode is restored on :meth:`close` (use it as a context manager).

    It keeps to job control, as a full-screen program does: it takes the terminal only
    while its process is in the foreground (`wave-bash run … &` was stopped by SIGTTOU
    as it set the mode, before its command started: a review), gives it back as Ctrl+Z
    stops it, and takes it again once in the foreground (`fg`); in the background it
    reads nothing (a read there stops the process: SIGTTIN).
    """

    def __init__(self, on_ctrl_b: Callable[[], None], give_back: bool = True) -> None:
        self.on_ctrl_b = on_ctrl_b
        self.give_back = give_back
        self.typed = bytearray()
        """What was typed while the command ran, Ctrl+B left out."""
        self.fd = sys.stdin.fileno()
        self.saved = termios.tcgetattr(self.fd)
        self.wake_r, self.wake_w = os.pipe()
        self.closing = False
        self.in_charge = False
        """Whether the terminal is in cbreak mode for it (only in the foreground)."""
        self.lock = threading.RLock()  # (the mode and a read: never one without the other;
        # reentrant: a Ctrl+Z handled as `fg` takes it, in the same thread)
        self.on_foreground: Callable[[], None] | None = None
        """Called as it takes the terminal again (`fg`; maybe in its own thread): the live
        view redraws."""
        self.handlers: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():  # (handlers: only there)
            self.handlers[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, self._stopping)
        self._take()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _take(self) -> None:
        """cbreak mode, in the foreground (TCSANOW: the default flush lost what was typed
        before it started, a trial's keys typed during `sleep 2; wave-bash run …`)."""
        with self.lock:
            if self.in_charge or self.closing or not in_foreground(self.fd):
                return
            tty.setcbreak(self.fd, termios.TCSANOW)
            self.in_charge = True
        os.write(self.wake_w, b"w")  # (the reader watches the terminal again)
        if self.on_foreground is not None:
            with contextlib.suppress(Exception):
                self.on_foreground()

    def _give_back(self) -> None:
        with self.lock:
            if not self.in_charge:
                return
            if in_foreground(self.fd):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
            self.in_charge = False
        os.write(self.wake_w, b"w")  # (the reader watches for the foreground instead)

    def _stopping(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl+Z (SIGTSTP): the shell's mode back, then stopped as by default; on with
        the terminal again if continued in the foreground."""
        self._give_back()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # (stopped here until SIGCONT)
        signal.signal(signal.SIGTSTP, self._stopping)
        self._take()

    def _run(self) -> None:
        while True:
            watched = [self.wake_r, self.fd] if self.in_charge else [self.wake_r]
            # (`fg` of a process the shell never stopped, `run … &` or after `bg`, sends
            # no signal: in the background, it looks again a few times a second)
            ready, _, _ = select.select(watched, [], [], None if self.in_charge else LOOK_AGAIN)
            if not ready:
                self._take()
                continue
            if self.wake_r in ready:
                if b"x" in os.read(self.wake_r, 64):
                    return
                continue  # (taken or given back: watched anew)
            with self.lock:
                if not (self.in_charge and in_foreground(self.fd)):
                    self.in_charge = False  # (sent to the background without a Ctrl+Z)
                    continue
                data = os.read(self.fd, 1024)
            if not data:
                return  # (the terminal closed)
            if CTRL_B in data:
                with contextlib.suppress(Exception):
                    self.on_ctrl_b()
            self.typed += data.replace(CTRL_B, b"")

    def close(self, interrupted: bool = False) -> None:
        for number, handler in self.handlers.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        with self.lock:
            self.closing = True
        os.write(self.wake_w, b"x")
        self.thread.join(timeout=2)
        self._give_back()
        os.close(self.wake_r)
        os.close(self.wake_w)
        if interrupted or not self.give_back or not in_foreground(self.fd):
            return
        for byte in bytes(self.typed):  # (in order, until the kernel refuses one)
            try:
                fcntl.ioctl(self.fd, termios.TIOCSTI, bytes([byte]))
            except OSError:
                break

    def __enter__(self) -> CtrlBWatcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(interrupted=kind is KeyboardInterrupt)
