"""The per-task monitor: waits for the command and records its exit status durably.

The monitor is started in its own session with stdout/stderr on the task's log. It runs
the command as a job in its own process group, waits for it and writes the status to
the exit file; its own exit is the commit point (a reader trusts the exit file once the
monitor process is gone), so no rename is needed.

Usually the monitor is bash with job control (``set -m``). The command text arrives in
the ``WAVE_PAYLOAD`` environment variable rather than in argv, so ``ps``/``pkill -f``
never mistake a monitor for the command, and the command sees neither the variable nor
the monitor's positional parameters. Where no bash exists (zsh only), ``pymonitor.py``
is the monitor.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from .windows import windows_to_posix_path

PAYLOAD_VAR = "WAVE_PAYLOAD"
PYTHON_MONITOR = Path(__file__).with_name("pymonitor.py")
"""The monitor where no bash exists (zsh only): a standalone script."""

# $1 = exit file, $2 = zsh to run the payload with (empty: run it in a bash subshell),
# $3 = the working directory (the monitor is posix_spawn'ed, which cannot chdir itself).
# The job keeps the caller's umask; the monitor's own exit record is private (077).
# `eval "unset c; set +m --; $c"` expands $c before eval runs, so the command starts with
# no helper variable, no positional parameter and no job-control flag of the monitor.
BASH_MONITOR_SCRIPT = """cd -- "$3" || { printf '127\\n' >| "$1"; exit 127; }
set -m
c=$WAVE_PAYLOAD; unset WAVE_PAYLOAD
exec 3>&1 4>&2 >/dev/null 2>&1
if [ -z "$2" ]; then ( eval "unset c; set +m --; $c" ) 1>&3 2>&4 3>&- 4>&- &
else "$2" -c "$c" 1>&3 2>&4 3>&- 4>&- & fi
exec 3>&- 4>&-
umask 077
wait $!
s=$?
printf '%s\\n' "$s" >| "$1"
exit $s"""


def build_payload(
    command: str, cwd_file: str | None, umask: int | None = None, windows: bool = False
) -> str:
    """The shell text the job runs: the command, plus an EXIT trap capturing ``pwd -P``
    and the caller's umask.

    The trap also runs after ``exit N`` (keeping N) and writes nothing when the
    directory is gone; it never changes the command's status.
    """
    lines = []
    if cwd_file is not None:
        if windows:  # Git Bash reads C:\\x as escapes: hand it C:/x
            cwd_file = windows_to_posix_path(cwd_file)
        # umask 077: the file is private; the shell is exiting, nothing else sees it.
        capture = f"umask 077; pwd -P >| {shlex.quote(cwd_file)} 2>/dev/null"
        lines.append(f"trap {shlex.quote(capture)} EXIT")
    if umask is not None:
        lines.append(f"umask {umask:04o}")
    return "\n".join([*lines, command])


def monitor_argv(
    monitor_bash: str | None, shell_path: str, shell_kind: str, exit_file: str, cwd: str
) -> list[str]:
    """The argv of the monitor process for one task.

    Args:
        monitor_bash: the bash that monitors, or ``None`` for the Python fallback.
        shell_path: the shell that runs the command.
        shell_kind: ``"bash"`` or ``"zsh"``.
        exit_file: where the exit status is written.
        cwd: the directory the command starts in.
    """
    if monitor_bash is None:
        # Run as a script, not a module: the stdlib only, nothing of wave-bash imported.
        return [sys.executable, "-P", str(PYTHON_MONITOR), exit_file, shell_path, cwd]
    zsh = shell_path if shell_kind == "zsh" else ""
    return [monitor_bash, "-c", BASH_MONITOR_SCRIPT, "bash", exit_file, zsh, cwd]
