"""The installed ``wave-bash`` command's entry point.

Python turns a Ctrl+C into ``KeyboardInterrupt`` from its first line on, so one pressed
while the CLI's modules load (its first ~20 ms) printed a traceback. Until the CLI sets
its own handlers, a Ctrl+C ends the command as it ends any program: by the signal.
"""

from __future__ import annotations

import signal

_INTERRUPTS = signal.getsignal(signal.SIGINT) is signal.default_int_handler
if _INTERRUPTS:  # (not where SIGINT is ignored, as for `cmd &` in a script: it stays so)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def main() -> int:
    """Load the CLI, then run it with Python's Ctrl+C back, which it takes over (a Ctrl+C
    that ended it ends the command by the signal: :func:`cli.leave_as`)."""
    from .cli import leave_as
    from .cli import main as run_cli

    if _INTERRUPTS:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return leave_as(run_cli())
