"""Ctrl+B in a terminal: a key watcher that backgrounds the running command (SPEC F4)."""

from __future__ import annotations

import contextlib
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

    The terminal mode is restored on :meth:`close` (use it as a context manager).
    """

    def __init__(self, on_ctrl_b: Callable[[], None]) -> None:
        self.on_ctrl_b = on_ctrl_b
        self.fd = sys.stdin.fileno()
        self.saved = termios.tcgetattr(self.fd)
        self.stop_r, self.stop_w = os.pipe()
        tty.setcbreak(self.fd)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd, self.stop_r], [], [])
            if self.stop_r in ready:
                return
            if CTRL_B in os.read(self.fd, 64):
                with contextlib.suppress(Exception):
                    self.on_ctrl_b()

    def close(self) -> None:
        os.write(self.stop_w, b"x")
        self.thread.join(timeout=2)
        termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        os.close(self.stop_r)
        os.close(self.stop_w)

    def __enter__(self) -> CtrlBWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
