"""The task monitor where no bash exists (zsh only): ``python pymonitor.py EXIT CMD_SHELL CWD``.

Run as a script, so it imports nothing but the standard library (and starts quickly). Like
the bash monitor it runs the command in its own process group, waits for it and writes
the exit status to EXIT; its own exit is the commit point.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

PAYLOAD_VAR = "WAVE_PAYLOAD"


def exit_status(returncode: int) -> int:
    """A ``subprocess`` return code as the shell reports it (signal N → 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def main(argv: list[str]) -> int:
    exit_file, shell, cwd = argv
    payload = os.environ.pop(PAYLOAD_VAR, "")
    group: dict[str, Any] = (
        {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
        if sys.platform == "win32"
        else {"process_group": 0}
    )
    proc = subprocess.Popen([shell, "-c", payload], close_fds=True, cwd=cwd, **group)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the monitor itself writes nothing to the task's log
    os.dup2(devnull, 2)
    status = exit_status(proc.wait())
    fd = os.open(exit_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{status}\n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
