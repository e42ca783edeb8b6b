"""The per-task monitor: waits for the command and records its exit status durably.

The monitor is started in its own session with stdout/stderr on the task's log. It (or,
where the job joins cgroups, its job) reads its instructions (working directory and
command) from stdin, a pipe from the supervisor, until the supervisor closes it: so a
monitor can be started ahead of its command (a standby, see ``supervisor.standby``) and
a command then starts with one write instead of a process start. It runs the command as a job in its own process group, waits for it and
writes the status to the exit file, then closes its record pipe; that close, or its own
exit, is the commit point (a reader trusts the exit file once either has happened), so
no rename is needed. A monitor whose pipe closes without complete instructions exits at
once and records nothing.

Usually the monitor is bash with job control (``set -m``). The command text never
appears in argv, so ``ps``/``pkill -f`` never mistake a monitor for the command, and the
command sees neither the monitor's variables nor its positional parameters. Where no bash
exists (zsh only), ``pymonitor.py`` is the monitor.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from .cgroups import join_line
from .pymonitor import PAYLOAD_RUNNERS, PAYLOAD_VARIABLE
from .sandbox import SECCOMP_FD
from .windows import windows_to_posix_path

PYTHON_MONITOR = Path(__file__).with_name("pymonitor.py")
"""The monitor where no bash exists (zsh only): a standalone script."""

GO_MARK = "__wave_go=1"
"""The last line of complete instructions (a truncated write never runs anything)."""

_ZSH_RUNNER = shlex.quote(PAYLOAD_RUNNERS["zsh"])

# The caller's exported functions live in the monitor, as in any bash it starts, so the
# monitor and the job's own steps call every builtin as `\\builtin NAME`: a function `cd`,
# `wait` or `printf` cannot take them over (and `\\` keeps an alias off). `exec` with
# redirections alone only acts as `exec` itself, so a function `exec` is set aside first
# (`__wave_fx`: its definition, and its export) and defined again in the job, before its
# command: the command sees every function. (In POSIX mode the special builtin `exec`
# comes before functions, and a function of that name cannot be defined again.) The
# supervisor starts no monitor with a `BASH_ENV` or a function named `builtin`.
_MONITOR_START = """{ __wave_re=; [[ -o errexit ]] && __wave_re+='\\builtin set -e; '; [[ -o nounset ]] && __wave_re+='\\builtin set -u; '; [[ -o pipefail ]] && __wave_re+='\\builtin set -o pipefail; '; [[ -o allexport ]] && __wave_re+='\\builtin set -a; '; [[ -o xtrace ]] && __wave_re+='\\builtin set -x; '; \\builtin set +e +u +o pipefail +a +x; } 2>/dev/null; \\builtin export -n __wave_re; __wave_fx=; [[ -o posix ]] || ! \\builtin declare -F exec >/dev/null 2>&1 || { __wave_fx=$(\\builtin declare -f exec); [[ $'\\n'$(\\builtin declare -Fx)$'\\n' != *$'\\ndeclare -fx exec\\n'* ]] || __wave_fx+=$'\\n\\\\builtin export -f exec'; \\builtin unset -f exec; }; __wave_run=@ZSH_RUNNER@; IFS= TMOUT= \\builtin read -r __wave_cm || { @UNSTARTED@; }; [[ -z $__wave_cm ]] || \\builtin ulimit -Su "$__wave_cm" 2>/dev/null; [[ $__wave_cm != unlimited ]] || __wave_cm=32768;"""

# A monitor whose pipe closes with no (complete) instructions ran nothing: it says so in
# its exit record (through fd 7, ``worker.spawn.EXIT_RECORD_FD``) and exits 0, so that a
# task whose supervisor died before handing its command over ends "never started", not
# "lost" (its caller may run it again).
_UNSTARTED = "{ \\builtin printf '%s\\n' - >&7; } 2>/dev/null; \\builtin exit 0"

_RESTORE_EXEC = """[[ -z $__wave_fx ]] || \\builtin eval "$__wave_fx"; \\builtin unset __wave_fx;"""


FORWARDED_SIGNALS = (
    "HUP", "INT", "USR1", "USR2", "ALRM", "TERM", "ABRT", "TRAP", "SYS", "XCPU", "XFSZ",
    "VTALRM", "PROF", "IO", "PWR", "STKFLT",
)  # fmt: skip
"""Signals the monitor passes on to its job: in a command run in its subshell, a `$$` it
computes (`eval "kill \\$$"`; one its text names runs in a bash of its own, F1b) is the
monitor's pid, so its `kill` reaches the monitor, where under `bash -c` it would reach
the command's shell: so the monitor does not die of it, losing the status (`kill -ABRT
$$` did: a trial). It reaches the job a moment later than `bash -c`'s
would, the time the monitor takes to wake. (SIGQUIT needs nothing: bash ignores it, the
monitor as `bash -c`. A fault's signals, SEGV, BUS, FPE, ILL, are not trapped: a
handler that returns from a real fault in the monitor would meet it again, for ever.
Those a platform lacks are left out: bash refuses a name it does not know.)"""

# A forwarded signal interrupts the monitor's wait: it waits again, for the job's own
# status. bash 5.2 sometimes answers that second wait with -1 when the job ended meanwhile
# (it lost the status): then the monitor ends as one killed, with no record, and the task
# ends with its status lost, never a made-up one. INT goes to the job's process group, as
# a terminal sends it: a bash waiting for a command that SIGINT does not end goes on (it
# takes the command to have handled it).
_FORWARD = "; ".join(
    f"\\builtin trap '__wave_sig={128 + signal.Signals[f'SIG{name}'].value}; "
    f'\\builtin kill -{name} {"-" if name == "INT" else ""}"$!" 2>/dev/null\' {name}'
    for name in FORWARDED_SIGNALS
    if hasattr(signal, f"SIG{name}")
)
_FORWARDED_HERE = [name for name in FORWARDED_SIGNALS if hasattr(signal, f"SIG{name}")]
JOB_WAIT = (
    'while __wave_sig=; \\builtin wait "$!"; __wave_status=$?; [[ -n $__wave_sig ]] || '
    "{ ((__wave_status > 128 && BASH_VERSINFO[0] >= 4)) && { \\builtin kill -0 %% 2>/dev/null "
    '|| { \\builtin wait "$!"; __wave_status=$?; ((0)); }; } && '
    "{ IFS= TMOUT= \\builtin read -r -t 0.2 __wave_c </dev/fd/5; (($? > 128)); } 2>/dev/null; }; "
    "do ((1)); done; ((__wave_status >= 0)) || \\builtin kill -KILL $$"
)
"""How a monitor waits for its job's end. Job control is on while the job is forked (for
its process group), and a job that stops at once, before the monitor turns it off
(`kill -STOP $BASHPID` first thing, under load), is seen to stop: `wait` returns at once
for it, as for any stopped job (147), and the monitor recorded its task as killed and
exited, which orphaned the job's process group, so the kernel sent the paused command
SIGHUP (a full run of the tests). A status over 128 of a job still in the monitor's job
table (an ended one is gone from it once waited for) is such a stop: bash goes on
answering `wait` for it at once until the job ends (which it still sees), so the monitor
waits again every 0.2 s, sleeping on its record pipe (fd 5, which nothing writes to) in
between. Where none is left, it asks `wait` once more: a job that ended between the two
has its own status there (it was recorded 147: a review); one waited for already
answers what it did. (`wait -f` spins at full CPU while the job stays stopped; `wait -n`
returns at once.) A bash 3, or no pipe to read, leaves the old end: the task recorded
killed."""
STOPPING_SIGNAL = "URG"
"""What a stop sends a joined monitor before it signals the job (``worker.spawn.tell_stopping``):
a job killed before it took any of its instructions then has them run by no replacement
job (it would run the command after the stop). Ignored by default, by every process;
the monitor traps it until its job has said how far it got."""
_UNTRAP = "\\builtin trap - " + " ".join(_FORWARDED_HERE)
"""A job forked after the forwarding traps were set drops them (``trap -p`` would show
them, and ``eval "$(trap -p TERM)"`` would set them in the command's shell)."""


# The job runs its command as `bash -c` would: `$1`, with the caller's options (`$2`) on
# the command's own line; with none, the text of `BASH_EXECUTION_STRING` alone, so that
# a syntax error quotes the command's line, not the job's. A command that is one program
# and its plain words (`$3`: the program's name, see :func:`direct_program`) it execs, as `bash -c` execs the last simple command: a process
# fewer per task. Only a program found on PATH at an absolute path (`hash` lists no
# builtin, function or keyword; bash 5+, where `BASH_CMDS` is bash's table, not a
# string from the caller's environment; a relative PATH entry would change the `$0` it
# gets; then it is forgotten again: a hashed path is what bash would run), and with
# none of the caller's options, which would trace or change the line.
# Its environment's `_` is the program's path, as bash gives it. The program leads the
# job's process group, as under a `bash -c` that leads its own (`setsid PROGRAM` forks).
_RUN = (
    "if [[ -n $3 && -z $2 ]] && ((BASH_VERSINFO[0] >= 5)) && [[ ${BASH_CMDS@a} == *A* ]] "
    '&& \\builtin hash -- "$3" 2>/dev/null && [[ ${BASH_CMDS[$3]-} == /* ]]; then '
    '\\builtin set -- "$1" "${BASH_CMDS[$3]}"; \\builtin eval "_=\\$2 \\builtin exec $1"; '
    'else [[ -z $3 ]] || \\builtin hash -d -- "$3" 2>/dev/null; '
    'if [[ -z $2 ]]; then \\builtin set --; \\builtin eval -- "$BASH_EXECUTION_STRING"; '
    'else \\builtin eval "\\builtin set --; $2$1"; fi; fi'
)


_OLDPWD_BACK = (
    "if [[ -n $__wave_oh && -d $__wave_od ]]; then OLDPWD=$__wave_od; else \\builtin unset"
    " OLDPWD; \\builtin export OLDPWD; fi; \\builtin unset __wave_cwd __wave_od __wave_oh"
)
"""The caller's ``OLDPWD`` back after the monitor's ``cd`` into the command's directory,
which set it to ``/`` (`cd -` went to `/`: a trial); as under ``bash -c``, exported with
no value where the caller had none, or one that is no directory."""


def _monitor_script(text: str) -> str:
    parts = (  # in this order: the start holds the runner's mark
        ("@START@", _MONITOR_START),
        ("@UNSTARTED@", _UNSTARTED),
        ("@ZSH_RUNNER@", _ZSH_RUNNER),
        ("@FORWARD@", _FORWARD),
        ("@WAIT@", JOB_WAIT),
        ("@UNTRAP@", _UNTRAP),
        ("@RESTORE_EXEC@", _RESTORE_EXEC),
        ("@STOPPING@", STOPPING_SIGNAL),
        ("@RUN@", _RUN),
        ("@OLDPWD@", _OLDPWD_BACK),
    )
    for mark, part in parts:
        text = text.replace(mark, part)
    return text


# $1 = exit file, $2 = zsh to run the payload with (empty: run it in a bash subshell); zsh
# gets the payload in its environment and the runner (`__wave_run`) as its script, so the
# command's text is in no argv (F1a); a bash job unsets `__wave_run`.
# Instructions on stdin set __wave_cwd, __wave_pre (the job's own settings: cwd capture
# trap, umask, descriptor limit), __wave_cmd and, last, __wave_go. `.` reads a pipe
# to its end from bash 4 on; bash 3 (old macOS) reads nothing from it: `eval "$(cat)"`.
# Job control (`set -m`) is on for the job's fork only, to put it in a process group of
# its own: with it on, `wait` would return as the job stops (147 for SIGSTOP), and the
# monitor, exiting, would record that and kill the paused command by SIGHUP.
# The job keeps the caller's umask; the monitor's own exit record is private (077).
# The exit record is written over the placeholder the supervisor reserved, through the
# descriptor held on it from the start (fd 7; by its path, `1<>`, no truncation, where
# that one is gone), so it needs no new disk block: it is written even on a full disk,
# and on a state dir mounted read-only over the task meanwhile (by its path, three
# tasks so ended were lost: a trial). Then
# the monitor closes fd 5, its record pipe (``worker.spawn.Monitor.record_pipe``; the
# job closes it at once): the supervisor sees the status before the monitor's exit.
# `eval "set --; $2$1"` expands the command ($1) before eval runs, so it starts with no
# helper variable, no positional parameter and no job-control flag. The caller's errexit,
# nounset, pipefail, allexport and xtrace (SHELLOPTS in its environment) are kept aside
# for the command (`__wave_re`, then $2, set on the command's own line): under them the
# monitor itself would exit at `wait` without a status, export its variables to the
# command or trace its own script into the log.
# $3, when given, is where a monitor that is a child subreaper lists, as its command
# ends, the processes the command left behind (its remaining children): the supervisor
# keeps them visible and stoppable (where no cgroup does). Having recorded the status,
# such a monitor lingers while it has children (it reaps them as they end), so that
# what they fork as they exit (a chain of `setsid` hops) stays in its tree, where a
# stop finds it, never under init: it looks after 0.5, 1, 2, then every 4 seconds,
# reaping what ended meanwhile (a zombie until then, which the supervisor, counting its
# children itself, never counts: only the monitor's own exit waits for the look; 100
# monitors looking twice a second cost 3 % of a core, a trial), sleeping on a pipe of its
# own (`__wave_p`, a process substitution's opened both ways, which nothing writes to;
# made, and its process reaped, before the status: none is counted a leftover; bash 4.1
# or newer, for `{var}<>`), with its signal traps (they named the job's pid, maybe
# another process's now), its files and its directory (`/`: no unmount held) let go.
# The first line on stdin is the soft process limit the monitor restores before it forks
# (empty: nothing to restore; see ``worker.spawn``: the supervisor may lower the limit of
# a monitor it has just started, so that bash sizes its table of finished background
# jobs by it). The job, a fork, inherits that small table size: `CHILD_MAX` (not
# exported) gives it back the size a bash started under the real limit has, so a command
# keeps the status of each of thousands of background jobs for `wait PID`. The job's
# `BASH_EXECUTION_STRING` is its command, as under `bash -c`, not the monitor's script.
# The job is started from the script's first line (a loop whose second pass starts it):
# an eval counts lines from the line it is on, so the command's own line numbers start
# at 1 in its error messages, as with `bash -c` ("line 1: sudo: command not found").
BASH_MONITOR_SCRIPT = _monitor_script("""@START@ \\builtin unset __wave_go; while ((1)); do if [[ ${__wave_go-} == 2 ]]; then @FORWARD@; if [[ -z $2 ]]; then ( @UNTRAP@; @RESTORE_EXEC@ [[ -z $__wave_cm ]] || { CHILD_MAX=$__wave_cm; \\builtin export -n CHILD_MAX; }; BASH_EXECUTION_STRING=$__wave_cmd; \\builtin export -n BASH_EXECUTION_STRING; \\builtin eval "$__wave_pre"; \\builtin set +m -- "$__wave_cmd" "$__wave_re" "${__wave_x-}"; \\builtin unset __wave_cmd __wave_go __wave_pre __wave_cm __wave_re __wave_run __wave_x; @RUN@ ) 1>&3 2>&4 3>&- 4>&- 5>&- 7>&- & else ( @RESTORE_EXEC@ __wave_payload="${__wave_pre:+$__wave_pre; }$__wave_cmd" \\builtin exec -a "${2##*/}" "$2" -c "$__wave_run" ) 1>&3 2>&4 3>&- 4>&- 5>&- 7>&- & fi; \\builtin break; fi
if ((BASH_VERSINFO[0] < 4)); then \\builtin eval "$(\\builtin command cat)"; else \\builtin . /dev/stdin; fi
[[ ${__wave_go-} == 1 ]] || { @UNSTARTED@; }
\\exec </dev/null
__wave_od=${OLDPWD-} __wave_oh=${OLDPWD+1}; \\builtin cd -- "$__wave_cwd" || { \\builtin printf '127\\n' 1<> "$1"; \\builtin exit 127; }
@OLDPWD@
\\builtin set -m
\\exec 3>&1 4>&2 >/dev/null 2>&1
__wave_go=2
done
\\exec 3>&- 4>&-; \\builtin set +m
\\builtin umask 077
@WAIT@
__wave_p=; if [[ -n $3 ]]; then \\builtin read -r __wave_left < "/proc/$$/task/$$/children"; [[ -n $__wave_left ]] && { \\builtin printf '%s\\n' "$__wave_left" >| "$3"; ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] < 401)) || { \\exec {__wave_p}<> <(:); \\builtin wait $!; }; }; fi 2>/dev/null
{ \\builtin printf '%s\\n' "$__wave_status" >&7; } 2>/dev/null || \\builtin printf '%s\\n' "$__wave_status" 1<> "$1"
\\exec 5>&-
[[ -z $__wave_p ]] || { @UNTRAP@; \\exec >/dev/null 2>&1 7>&-; \\builtin cd /; __wave_w=0.5; while __wave_left=; \\builtin read -r __wave_left < "/proc/$$/task/$$/children"; [[ -n $__wave_left ]]; do IFS= TMOUT= \\builtin read -r -t "$__wave_w" -u "$__wave_p" __wave_c; case $__wave_w in 0.5) __wave_w=1;; 1) __wave_w=2;; *) __wave_w=4;; esac; done; } 2>/dev/null
\\builtin exit $__wave_status""")


# The same monitor where the job must join cgroups ($3…: their cgroup.procs files). The
# job is forked at once and joins them while it waits for its instructions: moving a
# process into a cgroup waits for a kernel grace period (up to ~15 ms on an idle host),
# which this takes off the command's path. The job reads the instructions itself, from
# the supervisor's pipe (the monitor's stdin, as fd 6), so a command starts with one
# read of them, as with the monitor above; its stdout/stderr are the log again (fds
# 3/4). It tells the monitor how far it got on its fd 8, the write end of a pipe whose
# read end is the monitor's fd 9 (``worker.spawn.STARTED_FDS``): "r" once it has read
# the instructions' first byte (an empty line: until then it has taken nothing from
# them), "s" once it has all of them and starts its command. The monitor reads these,
# then waits for the job (reading, not waiting, as a command's `kill $$` arrives at
# once: bash 5.2 mostly loses a job's status when the job ends as a trap interrupts
# `wait`). Then: "rs", the status is the command's; "r", the job ended with part of its
# instructions: killed as it read them (a TaskStop as the task starts), the status is
# the signal's, as for a `bash -c` killed before its command; cut short, nothing ran and
# the monitor dies without a status; nothing, the job ended before it took any: the
# monitor reads them from its stdin itself and hands complete ones to another job
# (forked with them: the same body, which then reads nothing; only its error messages
# count lines from the line it is forked on), or exits recording nothing; unless a stop
# came first (``STOPPING_SIGNAL``, trapped from before the job's fork until it has
# said how far it got): then the status is the job's, and nothing runs. Instructions
# are read from one pipe, by one of them: a command never runs twice, nor from part of
# its text. The caller's errexit, nounset and pipefail (SHELLOPTS) hold for the command,
# never for the monitor or the job's own steps. bash 4 or newer: the cgroup tracker only
# exists on Linux.
BASH_JOINED_MONITOR_SCRIPT = _monitor_script("""@START@ \\exec 3>&1 4>&2 >/dev/null 2>&1 6<&0; \\builtin set -m; __wave_stop=; \\builtin trap __wave_stop=1 @STOPPING@; __wave_body='\\builtin trap - @STOPPING@; \\builtin unset __wave_body; \\exec 1>&3 2>&4 3>&- 4>&- 5>&- 7>&- 9<&-; for __wave_f in "${@:3}"; do { \\builtin echo 0 >| "$__wave_f"; } 2>/dev/null; done; \\builtin unset __wave_f; if [[ -n $__wave_in ]]; then IFS= TMOUT= \\builtin read -r -N 1 -u 6 __wave_in || \\builtin exit 0; { \\builtin printf r >&8; } 2>/dev/null; \\builtin . /dev/fd/6; fi; \\exec 6<&- </dev/null; [[ ${__wave_go-} == 1 ]] || \\builtin exit 0; { \\builtin printf s >&8; } 2>/dev/null; \\exec 8>&-; \\builtin unset __wave_go __wave_in __wave_stop; __wave_od=${OLDPWD-} __wave_oh=${OLDPWD+1}; \\builtin cd -- "$__wave_cwd" || \\builtin exit 127; @OLDPWD@; @RESTORE_EXEC@ if [[ -z $2 ]]; then [[ -z $__wave_cm ]] || { CHILD_MAX=$__wave_cm; \\builtin export -n CHILD_MAX; }; BASH_EXECUTION_STRING=$__wave_cmd; \\builtin export -n BASH_EXECUTION_STRING; \\builtin eval "$__wave_pre"; \\builtin set +m -- "$__wave_cmd" "$__wave_re" "${__wave_x-}"; \\builtin unset __wave_cmd __wave_pre __wave_cm __wave_re __wave_run __wave_x; @RUN@; else __wave_payload="${__wave_pre:+$__wave_pre; }$__wave_cmd" \\builtin exec -a "${2##*/}" "$2" -c "$__wave_run"; fi'; \\builtin unset __wave_go; __wave_in=6; ( \\builtin eval "$__wave_body" ) &
\\exec 6<&- 8>&-; \\builtin set +m
\\builtin trap '' PIPE; @FORWARD@
\\builtin umask 077
__wave_ok=; while ((${#__wave_ok} < 2)); do IFS= TMOUT= \\builtin read -r -N 1 -u 9 __wave_c; __wave_s=$?; ((__wave_s > 128)) && \\builtin continue; ((__wave_s == 0)) || \\builtin break; __wave_ok+=$__wave_c; done; \\builtin trap - @STOPPING@
@WAIT@
if [[ -z $__wave_ok$__wave_stop ]]; then \\builtin . /dev/stdin; [[ ${__wave_go-} == 1 ]] || { @UNSTARTED@; }; \\builtin unset __wave_ok __wave_status __wave_sig __wave_c __wave_s __wave_stop; __wave_in=; \\builtin set -m; ( @UNTRAP@; \\builtin trap - PIPE; \\builtin eval "$__wave_body" ) & \\builtin set +m; @WAIT@; elif [[ $__wave_ok != rs ]] && ((__wave_status <= 128)); then \\builtin kill -KILL $$; fi
{ \\builtin printf '%s\\n' "$__wave_status" >&7; } 2>/dev/null || \\builtin printf '%s\\n' "$__wave_status" 1<> "$1"
\\exec 5>&-
\\builtin exit $__wave_status""")


def monitor_instructions(
    command: str,
    cwd: str,
    cwd_file: str | None,
    umask: int | None = None,
    windows: bool = False,
    *,
    open_files: int | None = None,
    cgroups: Sequence[str] = (),
    bash_env: str | None = None,
    xtrace_fd: str | None = None,
    verbose: bool = False,
) -> bytes:
    """What the supervisor writes to a monitor's stdin: shell assignments, read by the bash
    monitor with ``.`` and by the Python monitor with ``shlex``.

    ``bash_env``: the caller's ``BASH_ENV``, which its monitor ran without, given back to
    the job's environment (a zsh command's bash reads it; a bash command's is empty, or it
    would be a wrapped command, see :func:`wrapped_command`). ``verbose``: the caller's
    ``verbose`` (``SHELLOPTS``), which its bash monitor ran without, given back to a bash
    command with its other options.
    """
    if windows:  # read by Git Bash's cd
        cwd = windows_to_posix_path(cwd)
    prelude = build_prelude(
        cwd_file, umask, windows, open_files=open_files, cgroups=cgroups, bash_env=bash_env,
        xtrace_fd=xtrace_fd,
    )  # fmt: skip
    if verbose:  # (set with the caller's other options, on the command's own line)
        prelude += ("; " if prelude else "") + "__wave_re+='\\builtin set -v; '"
    program = None if windows else direct_program(command)
    text = (  # (the first line is empty: see BASH_JOINED_MONITOR_SCRIPT)
        f"\n__wave_cwd={shlex.quote(cwd)}\n__wave_pre={shlex.quote(prelude)}\n"
        f"__wave_cmd={shlex.quote(command)}\n__wave_x={program or ''}\n{GO_MARK}\n"
    )
    return text.encode("utf-8", "surrogateescape")  # paths may hold undecodable bytes


_PLAIN_COMMAND = re.compile(
    r"[ \t]*([A-Za-z0-9_][A-Za-z0-9_.+-]*)([ \t]+[A-Za-z0-9_./:=,@%+-]+)*[ \t]*"
)
"""One program and plain words: nothing bash expands, quotes, redirects or joins."""
KEYWORDS = frozenset({
    "!", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function",
    "if", "in", "select", "then", "time", "until", "while",
})  # fmt: skip
"""Bash's reserved words (``time`` has a program of its name too)."""


def direct_program(command: str) -> str | None:
    """The program a command that is one program and plain words runs (``pytest -x
    tests``, ``sleep 600``), which its job may exec as ``bash -c`` would; None for any
    other command. Whether the name is a program (not a builtin or function) is the
    job's to tell, as it runs."""
    match = _PLAIN_COMMAND.fullmatch(command)
    if match is None or match[1] in KEYWORDS:
        return None
    return match[1]


def build_prelude(
    cwd_file: str | None,
    umask: int | None = None,
    windows: bool = False,
    *,
    open_files: int | None = None,
    cgroups: Sequence[str] = (),
    bash_env: str | None = None,
    xtrace_fd: str | None = None,
) -> str:
    """The job's settings, one line run before its command: first it joins its cgroups
    (``cgroups``: their ``cgroup.procs`` files), then an EXIT trap appending ``pwd -P``
    to ``cwd_file`` (the task's exit record), the caller's umask, the soft descriptor
    limit commands get and the caller's ``BASH_ENV`` (``bash_env``) and
    ``BASH_XTRACEFD`` (``xtrace_fd``) back in its environment. Every builtin as
    ``\\builtin``: the caller's functions are defined here.

    The trap also runs after ``exit N`` (keeping N) and writes nothing when the
    directory is gone; it never changes the command's status (the caller's errexit,
    the command's ERR trap and a file-size limit included).
    """
    parts = [join_line(list(cgroups))] if cgroups else []
    if cwd_file is not None:
        if windows:  # Git Bash reads C:\\x as escapes: hand it C:/x
            cwd_file = windows_to_posix_path(cwd_file)
        # Appended to the exit record (after its placeholder; the monitor writes the
        # status over the placeholder). Errors silenced before the redirection is tried:
        # an unwritable or full tasks dir must not add a line to the command's output;
        # nor does the caller's xtrace trace it, its errexit or ERR trap act on a failed
        # capture (a deleted directory), or a file-size limit kill the shell (SIGXFSZ):
        # each changed the command's status. Only the job's own shell: bash runs the trap
        # in a forked child a signal kills before it execs (`sleep 30 & kill $!`), whose
        # lines read as a garbled directory (a trial). (zsh has no BASHPID: its $$.)
        capture = (  # (the job's own pid goes in as the trap is set, between the halves)
            "{ \\builtin set +eux; \\builtin trap '' XFSZ; [[ ${BASHPID:-$$} != ",
            f" ]] || \\builtin pwd -P >> {shlex.quote(cwd_file)} || "  # (a directory removed:
            f"\\builtin printf '%s\\n' \"$PWD\" >> {shlex.quote(cwd_file)} || "  # its name)
            "\\builtin :; } 2>/dev/null",
        )
        parts.append(
            f"\\builtin trap {shlex.quote(capture[0])}${{BASHPID:-$$}}{shlex.quote(capture[1])} EXIT"
        )
    if umask is not None:
        parts.append(f"\\builtin umask {umask:04o}")
    if open_files is not None:
        parts.append(f"\\builtin ulimit -Sn {int(open_files)} 2>/dev/null")
    if bash_env is not None:
        parts.append(f"\\builtin export BASH_ENV={shlex.quote(bash_env)}")
    if xtrace_fd is not None:  # (its monitor ran without it)
        parts.append(f"\\builtin export BASH_XTRACEFD={shlex.quote(xtrace_fd)}")
    return "; ".join(parts)


def build_payload(
    command: str,
    cwd_file: str | None,
    umask: int | None = None,
    windows: bool = False,
    *,
    open_files: int | None = None,
) -> str:
    """The prelude and the command as one ``-c`` text (zsh, the Python monitor), the
    prelude on the command's first line so that its line numbers stay its own."""
    prelude = build_prelude(cwd_file, umask, windows, open_files=open_files)
    return f"{prelude}; {command}" if prelude else command


def monitor_argv(
    monitor_bash: str | None,
    shell_path: str,
    shell_kind: str,
    exit_file: str,
    joins: Sequence[str] = (),
    leftovers_file: str | None = None,
) -> list[str]:
    """The argv of the monitor process for one task.

    Args:
        monitor_bash: the bash that monitors, or ``None`` for the Python fallback.
        shell_path: the shell that runs the command.
        shell_kind: ``"bash"`` or ``"zsh"``.
        exit_file: where the exit status is written.
        joins: ``cgroup.procs`` files the job joins as soon as it exists (bash only; the
            Python monitor's job joins them in its prelude).
        leftovers_file: where a monitor that is a child subreaper lists the processes
            its command left behind (its children when the command has ended).
    """
    if monitor_bash is None:
        # Run as a script, not a module: the stdlib only, nothing of wave-bash imported.
        return [sys.executable, "-P", str(PYTHON_MONITOR), exit_file, shell_path]
    zsh = shell_path if shell_kind == "zsh" else ""
    # `--norc`: a bash started with `SSH_CLIENT` set below shell level 2 (a supervisor in
    # an ssh session, a remote's) sources `~/.bashrc`, whose output went into every
    # task's log (pyenv's rehash errors: a CI run) and whose code ran in the monitor.
    if joins:
        return [monitor_bash, "--norc", "-c", BASH_JOINED_MONITOR_SCRIPT, "bash", exit_file, zsh,
                *joins]  # fmt: skip
    return [monitor_bash, "--norc", "-c", BASH_MONITOR_SCRIPT, "bash", exit_file, zsh,
            leftovers_file or ""]  # fmt: skip


PTY_HOST = Path(__file__).with_name("ptyhost.py")
"""An interactive task's job: holds its terminal (a standalone script, the stdlib only)."""


def wrapped_command(
    command: str,
    shell_path: str,
    cwd_file: str | None,
    *,
    terminal: tuple[str, tuple[int, int]] | None = None,
    sandbox: Sequence[str] = (),
    sandbox_filter: str | None = None,
    bash_env: str | None = None,
    windows: bool = False,
) -> str:
    """The command that runs ``command`` in a shell of its own, which the job ``exec``s:
    on a pseudo-terminal (``terminal``: its socket and size, columns × rows) and/or in a
    sandbox (``sandbox``: the bubblewrap argv that precedes the command), the terminal
    host running the sandbox running the shell; or that shell alone, to start as
    ``bash -c`` does (``BASH_ENV``). That shell appends its final directory to
    ``cwd_file`` when given; the job's own prelude has set the umask and descriptor
    limit, inherited. ``bash_env``: the caller's ``BASH_ENV``, given back to that shell
    only (its monitor ran without it: bash would source it there, ahead of the command,
    outside the sandbox). ``sandbox_filter``: the system-call filter file the sandbox reads
    from descriptor ``SECCOMP_FD`` (``worker.sandbox.filter_file``). ``windows``: the
    shell is Git Bash. What the sandbox binds by descriptor the job has from its monitor
    (``worker.sandbox.Sources.numbered``)."""
    runner = PAYLOAD_RUNNERS["zsh" if os.path.basename(shell_path).startswith("zsh") else "bash"]
    if windows:  # Git Bash reads C:\\x as escapes: hand it C:/x
        shell_path = windows_to_posix_path(shell_path)
    # $0 is the shell's name, as `bash -c` has it (argv[0] keeps the path, for `$BASH`).
    argv = [*sandbox, shell_path, "-c", runner, os.path.basename(shell_path)]
    if terminal is not None:
        path, (columns, rows) = terminal
        host = [sys.executable, "-I", "-S", str(PTY_HOST), path, str(columns), str(rows), "--"]
        argv = host + argv
    payload = shlex.quote(build_payload(command, cwd_file, windows=windows))
    given = f"BASH_ENV={shlex.quote(bash_env)} " if bash_env is not None else ""
    words = " ".join(shlex.quote(word) for word in argv)
    # One shell level, as under `bash -c`: the monitor counted one already.
    level = "SHLVL=$((SHLVL > 0 ? SHLVL - 1 : 0)) "
    opened = f" {SECCOMP_FD}< {shlex.quote(sandbox_filter)}" if sandbox_filter else ""
    return f"{level}{given}{PAYLOAD_VARIABLE}={payload} \\builtin exec {words}{opened}"
