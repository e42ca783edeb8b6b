"""Ctrl+B in a terminal: a key watcher that backgrounds the running command (SPEC F4)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import sys
import termios
import threading
import tty
from collections.abc import Callable

CTRL_B = b"\x02"


class CtrlBWatcher:
    """Reads the terminal in cbreak mode while a command runs; calls ``on_ctrl_b`` on Ctrl+B.

    What else is typed is kept (:attr:`typed`) and, with ``give_back``, put back into the
    terminal's input as the watcher closes (``TIOCSTI``, where the kernel allows it):
    type-ahead for the shell, as when the command runs in it directly (it was read and
    lost: a review); not after Ctrl+C, which drops type-ahead as a terminal does. The
    terminal mode is restored on :meth:`close` (use it as a context manager).
    """

    def __init__(self, on_ctrl_b: Callable[[], None], give_back: bool = True) -> None:
        self.on_ctrl_b = on_ctrl_b
        self.give_back = give_back
        self.typed = bytearray()
        """What was typed while the command ran, Ctrl+B left out."""
        self.fd = sys.stdin.fileno()
        self.saved = termios.tcgetattr(self.fd)
        self.stop_r, self.stop_w = os.pipe()
        tty.setcbreak(self.fd, termios.TCSANOW)  # (the default flush lost what was typed
        # before it started: a trial's keys typed during `sleep 2; wave-bash run …`)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd, self.stop_r], [], [])
            if self.stop_r in ready:
                return
            data = os.read(self.fd, 1024)
            if not data:
                return  # (the terminal closed)
            if CTRL_B in data:
                with contextlib.suppress(Exception):
                    self.on_ctrl_b()
            self.typed += data.replace(CTRL_B, b"")

    def close(self, interrupted: bool = False) -> None:
        os.write(self.stop_w, b"x")
        self.thread.join(timeout=2)
        termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        os.close(self.stop_r)
        os.close(self.stop_w)
        if interrupted or not self.give_back:
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
