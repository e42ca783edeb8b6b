"""The task monitor where no bash exists (zsh only): ``python pymonitor.py EXIT CMD_SHELL``.

Run as a script, so it imports nothing but the standard library (and starts quickly). Like
the bash monitor it reads its instructions from stdin until the supervisor closes it, runs
the command in its own process group (its text in the shell's environment, not its argv:
F1a), waits for it and writes the exit status to EXIT;
its own exit is the commit point. Incomplete instructions run nothing and record only
that (``-`` through descriptor 7, the exit record: see ``worker.spawn.EXIT_RECORD_FD``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
from typing import Any

EXIT_RECORD_FD = 7
"""Its exit record, open from its start (``worker.spawn.EXIT_RECORD_FD``)."""
PASSED_FDS_FROM = 10
"""Descriptors from this number on are what the monitor is started with for its job (a
sandbox's sources, from ``worker.sandbox.FIRST_SOURCE_FD``): passed on to it."""
PAYLOAD_VARIABLE = "__wave_payload"
"""How a command reaches a shell that is not the monitor's own job (zsh, a terminal host,
a sandbox): in its environment, never in an argv that ``ps`` shows every user (F1a), and
unset before it runs."""
PAYLOAD_RUNNERS = {
    "bash": f"BASH_EXECUTION_STRING=${PAYLOAD_VARIABLE}; \\builtin export -n BASH_EXECUTION_STRING;"
    f' \\builtin eval "\\builtin unset {PAYLOAD_VARIABLE}; ${PAYLOAD_VARIABLE}"',
    "zsh": f"ZSH_EXECUTION_STRING=${PAYLOAD_VARIABLE};"
    f' \\builtin eval "\\builtin unset {PAYLOAD_VARIABLE}; ${PAYLOAD_VARIABLE}"',
}
"""The ``-c`` script that runs the payload: an ``eval`` on its first line, so that its own
lines count from 1 (zsh names them ``(eval):N:`` where ``zsh -c`` says ``zsh:N:``; a
function named ``zsh`` would say ``zsh:N:`` but took a syntax error for success and made
zsh 5.9 crash when the command defined a ``zsh`` function). Through ``\\builtin``: no alias
or function of the user's ``.zshenv`` or ``BASH_ENV`` named like the runner's own words
replaces them (a function named ``builtin`` would)."""


def exit_status(returncode: int) -> int:
    """A ``subprocess`` return code as the shell reports it (signal N → 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def _passed_fds() -> list[int]:
    """The descriptors from :data:`PASSED_FDS_FROM` on that this process was started with."""
    try:
        listed = [int(name) for name in os.listdir("/dev/fd")]
    except (OSError, ValueError):
        listed = list(range(PASSED_FDS_FROM, 1024))
    return sorted(fd for fd in listed if fd >= PASSED_FDS_FROM and _is_open(fd))


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def read_instructions(text: str) -> dict[str, str] | None:
    """The ``name=value`` assignments the supervisor wrote (shell-quoted), or ``None``
    when they are incomplete."""
    try:
        fields = dict(word.partition("=")[::2] for word in shlex.split(text))
    except ValueError:  # cut inside a quoted value
        return None
    return fields if fields.get("__wave_go") == "1" else None


def main(argv: list[str]) -> int:
    exit_file, shell = argv
    passed = _passed_fds()  # (before this process opens anything of its own)
    fields = read_instructions(sys.stdin.buffer.read().decode("utf-8", "surrogateescape"))
    if fields is None:  # nothing ran: said through the exit record's descriptor (fd 7)
        if sys.platform != "win32":  # (none is passed there)
            with contextlib.suppress(OSError):
                os.write(EXIT_RECORD_FD, b"-\n")
        return 0
    group: dict[str, Any] = (
        {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
        if sys.platform == "win32"
        else {"process_group": 0}
    )
    try:
        payload = "; ".join(filter(None, (fields.get("__wave_pre"), fields["__wave_cmd"])))
        kind = "zsh" if os.path.basename(shell).startswith("zsh") else "bash"
        proc = subprocess.Popen(
            [shell, "-c", PAYLOAD_RUNNERS[kind]], stdin=subprocess.DEVNULL, close_fds=True,
            pass_fds=passed,
            cwd=fields["__wave_cwd"], env={**os.environ, PAYLOAD_VARIABLE: payload}, **group,
        )  # fmt: skip
    except OSError as exc:  # no such directory (or shell): as bash's failed `cd`
        print(f"wave-bash: {exc}", file=sys.stderr)
        status = 127
    else:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the monitor itself writes nothing to the task's log
        os.dup2(devnull, 2)
        status = exit_status(proc.wait())
    recorded = f"{status}\n".encode()
    try:  # (over the placeholder, through the descriptor held from the start, as the
        os.pwrite(EXIT_RECORD_FD, recorded, 0)  # bash monitor: see worker.monitor)
    except OSError:
        try:
            fd = os.open(exit_file, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(recorded)
        except OSError:
            pass  # a full disk: the supervisor that started us reads our exit status
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
