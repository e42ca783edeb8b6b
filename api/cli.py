"""The ``wave-bash`` command line (SPEC I2).

Exit codes: ``run`` exits with the command's own exit code (124 when it moved to the
background at its timeout, as ``timeout(1)`` and ``wait``: a script's ``&&`` must not go
on while it runs; 0 when started in the background or moved there by the person; that of
the signal that stopped it under F3's ``sleep`` rule, 143, as ``sleep 1; make test`` cut
short must not let ``&&`` go on either); every
error of wave-bash itself exits 2 with the message on stderr, or
``{"success": false, "error": ...}`` on stdout with ``--json``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shlex
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

from .calls import (
    FOREGROUND_PATIENCE,
    RECONNECT_PATIENCE,
    STATUS_LIMIT,
    Caller,
    CallScope,
    cli_words,
)
from .connection import caller_environment, chosen_ssh_options, connector_for, supervisor_log
from .constants import DEFAULT_SESSION, DEFAULT_TIMEOUT_MS, MAX_INPUT_CHARS, TERMINAL_SIDE_MAX
from .errors import InvalidInputError, StorageError, SupervisorUnavailableError, WaveError
from .paths import StateLayout, current_umask, resolve_state_dir
from .pieces import STDOUT_WRITER, STREAM_AFTER, PiecePrinter, RawPrinter, Streamer, watch_reader
from .pieces import ended as _ended
from .units import check_timeout_ms, parse_duration, parse_timeout_ms

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms
    import argparse
    from typing import Any, NoReturn

    from .connection import Connector

ERROR_EXIT = 2


class Cli:
    """What every verb needs: the connection and this caller's session. The CLI speaks
    the wire protocol's JSON directly (no models to import: the supervisor validates)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.layout = StateLayout(resolve_state_dir(args.state_dir))
        # (given as an option, not by the environment, which the next command has too)
        self.state_dir_given = args.state_dir not in (None, os.environ.get("WAVE_STATE_DIR"))
        self.session: str = DEFAULT_SESSION if args.session is None else args.session
        self.session_given = args.session not in (None, os.environ.get("WAVE_SESSION"))
        self.remote: str | None = _remote_arg(args)
        self.ssh_option: list[str] = list(args.ssh_option or [])
        self.remote_command: str | None = args.remote_command
        self.connector: Connector = connector_for(
            self.layout,
            remote=self.remote,
            ssh_options=_ssh_options(args.ssh_option),
            remote_command=args.remote_command,
        )
        self.calls = Caller(self.connector, supervisor_log(self.connector, self.layout))
        self.calls.on_retrying = _say_retrying
        self.calls.cli_hint = _wave(self)

    def call(self, op: str, patience: float = RECONNECT_PATIENCE, **params: Any) -> Any:
        return self.calls.call(op, {"session": self.session, **params}, patience=patience)


def _remote_arg(args: argparse.Namespace) -> str | None:
    """``--remote`` as given; empty, it is refused (``--remote "$HOST"`` with ``HOST``
    unset ran the command here: a trial), unless ``WAVE_REMOTE`` is empty too (a variable
    set empty reads as unset, as in a shell)."""
    if args.remote == "" and os.environ.get("WAVE_REMOTE") != "":
        raise InvalidInputError(
            "--remote is empty: name a host (ssh://[user@]host[:port]), or leave it out to run here"
        )
    return args.remote or None


def _say_retrying(why: str, left: float) -> None:
    """A call that keeps trying says so on stderr (a remote `run` whose sshd went down
    was silent for 96 s: a trial)."""
    print(f"wave-bash: {why}; trying again for up to {left:.0f} s", file=sys.stderr)


def _ssh_options(given: Sequence[str]) -> list[str]:
    """The ``--ssh-option`` values, each split as a shell would."""
    try:
        return [arg for option in given for arg in shlex.split(option)]
    except ValueError as exc:  # an unclosed quote
        raise InvalidInputError(f"--ssh-option {given!r}: {exc}") from None


def _timeout_arg(text: str) -> float | None:
    return check_timeout_ms(parse_timeout_ms(text))


def _cwd_arg(cli: Cli, cwd: str) -> str:
    """``--cwd`` as the supervisor takes it: absolute here; on a remote, one that is not
    is read in the remote home (the bridge expands ``~``), as commands start there."""
    if not cli.connector.remote:
        return os.path.abspath(cwd)
    return cwd if cwd.startswith(("/", "~")) else f"~/{cwd}"


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


class _PipeOnReaderGone:
    """A foreground run's stdout reader went away (`run -- yes | head -1`, `run -- 'tail
    -f log' | grep -m1 ready`): its command gets SIGPIPE as it next writes, as a pipe's
    writer does (it ran on to its log's cap, or its timeout: a trial). Only a pipe or a
    socket has a reader to lose (:func:`watch_reader`)."""

    def __init__(self, cli: Cli, running: list[str], armed: bool) -> None:
        self.cli, self.running = cli, running
        self.gone = threading.Event()
        self.sent = threading.Lock()
        if armed:  # (a background start, an interactive command: they go on regardless)
            watch_reader(self.reader_gone)

    def reader_gone(self) -> None:
        self.gone.set()
        self.started()

    def started(self) -> None:
        """Its task is named (or its reader gone): said once both are."""
        if not (self.gone.is_set() and self.running) or not self.sent.acquire(blocking=False):
            return
        with contextlib.suppress(WaveError, OSError):
            self.cli.call("interrupt", task_id=self.running[-1], signal="PIPE")


def cmd_run(cli: Cli, args: argparse.Namespace) -> int:
    if args.size and not args.interactive:  # (the supervisor names the library's argument)
        raise InvalidInputError("--size is only for interactive commands (run -i)")
    if args.raw and args.json:
        raise InvalidInputError("--raw prints the log's bytes: it does not go with --json")
    command = " ".join(args.command) if len(args.command) != 1 else args.command[0]
    if args.cwd == "":  # (`--cwd "$DIR"` with DIR unset ran here: a trial)
        raise InvalidInputError("--cwd is empty: name a directory, or leave it out for this one")
    cwd = _cwd_arg(cli, args.cwd) if args.cwd else cli.connector.default_cwd()
    timeout = _timeout_arg(args.timeout) if args.timeout is not None else None
    watched = (
        sys.stderr.isatty() and sys.stdin.isatty() and not args.json and sys.platform != "win32"
    )  # a person at a terminal: the key watcher (termios), and the live view
    # Into a pipe or a file the output streams as it is written, terminal or not (`run --
    # make | tee log` got it all at the end, none once Ctrl+C had stopped tee too: a
    # trial); the live view is left out beside a pipe, whose reader may print to the same
    # terminal (not with -i, whose output comes at its prompt: it showed nothing till
    # then, a review), and is all there is of it when the output goes to that terminal.
    shown = watched and (args.interactive or not _a_pipe(sys.stdout))
    running: list[str] = []  # the task ID, once the supervisor started it
    pressed: list[str] = []  # the task given a Ctrl+C (at a terminal: the first one)

    after = 0.0 if _a_pipe(sys.stdout) else STREAM_AFTER  # (a reader that may go: at once)
    streamer = Streamer(lambda task_id: _printer(cli, task_id, args.raw), after)
    to_terminal = shown and sys.stdout.isatty()
    piped = _PipeOnReaderGone(cli, running, not (args.background or args.interactive))
    streams = not (to_terminal or args.json or args.background or args.interactive)

    def started(task_id: str) -> None:
        running.append(task_id)
        if streams:
            streamer.start(task_id)
        piped.started()

    def background_it() -> None:
        if running:
            cli.call("background", task_id=running[0])

    def interrupting() -> None:  # the first Ctrl+C given to the command
        if watcher is not None:  # (what was typed ahead: dropped, as a terminal drops
            watcher.typed.clear()  # its input on SIGINT)
        if live is not None:
            live.say_keys("Ctrl+C sent: press it again to stop it")

    wait_s = (timeout or DEFAULT_TIMEOUT_MS) / 1000
    rules, sandbox = _guard(args)
    if sandbox is not None and sandbox["workspace"] is None:
        _pin_workspace(cli, args, sandbox)
    params = {
        "session": cli.session,
        "command": command,
        "timeout": timeout,
        "description": args.description,
        "run_in_background": args.background,
        "cwd": cwd,
        "cwd_fallback": not args.cwd,  # (the current directory, deleted: see current_dir)
        "env": {} if cli.connector.remote else caller_environment(),  # a bridge uses its own
        "progress": shown,
        "exact_output": not args.json,  # (printed as the log has it: the model's is trimmed)
        "umask": current_umask(),
        "request_key": os.urandom(16).hex(),
        "interactive": args.interactive,
        "terminal_size": _size_arg(args.size) if args.size else None,
        "rules": rules,
        "sandbox": sandbox,
    }
    patience = RECONNECT_PATIENCE if args.background else max(FOREGROUND_PATIENCE, wait_s)
    try:
        with contextlib.ExitStack() as terminal:
            if watched and not args.background:  # (before the watcher: given back after)
                terminal.enter_context(_ctrl_c_interrupts(cli, running, pressed, interrupting))
            live = watcher = None
            if watched:
                from .keys import CtrlBWatcher  # POSIX terminals only

                # (-i: what is typed goes to the command once it asks, not back to the shell)
                watcher = terminal.enter_context(
                    CtrlBWatcher(background_it, give_back=not args.interactive)
                )
            if shown:
                from .display import LiveView

                live = LiveView()
                terminal.callback(live.done)  # (first: type-ahead comes back after it)
                if watcher is not None:  # (back in the foreground: drawn again at once)
                    watcher.on_foreground = live.redraw
            result = cli.calls.call(
                "run", params, live.show if live else None, started, patience=patience
            )
        if _asks(result) and watched:  # a person at the terminal decides
            if not _approved(result):  # (the refusal again, "a person can allow it when
                raise InvalidInputError("declined: nothing was run")  # asked": a trial)
            params = {**params, "approved": True, "request_key": os.urandom(16).hex()}
            with _ctrl_c_interrupts(cli, running, pressed, interrupting):
                result = cli.calls.call("run", params, None, started, patience=patience)
        streamed = streamer.finish()  # (its last write waits for the reader, as any write)
    except KeyboardInterrupt:
        stop = watched and not args.background  # a background start was meant to go on
        task_id = running[-1] if running else None
        return _interrupted(cli, task_id, stop, _so_far(cli, args, task_id, streamer))
    except Terminated as exc:  # (as a caller gone: it goes on, in the background; what it
        # printed so far, as after a SIGINT: a harness's timeout got none)
        task_id = running[-1] if running else None
        return _leave(128 + exc.signum, _so_far(cli, args, task_id, streamer),
                      _gone_note(cli, exc.said, task_id))  # fmt: skip
    except BaseException:  # (a call that failed: its stream ends before the error is said)
        streamer.finish()
        raise
    try:
        return _show_run(cli, args, result, running, watcher, rules, streamed, bool(pressed))
    except Terminated as exc:  # (printing its output to a reader that reads nothing)
        return _leave(128 + exc.signum, None, _gone_note(cli, exc.said, running[-1], result))
    except BrokenPipeError:  # (`run -- make | head -1`: its reader went away, quietly;
        _quiet_stdout()  # the command's status all the same, for a pipefail script,
        with contextlib.suppress(WaveError, OSError):  # and what stderr would say: that
            _report_run(result, False, cli, printed=True)  # it moved on was lost, a trial)
        return _run_exit(result)
    except OSError as exc:  # (it started: its ID, as a result the script could not read)
        if not running:
            raise
        raise OSError(
            exc.errno,
            f"{exc.strerror or exc}; the command is task {running[-1]}"
            f" (`{_wave(cli)} output {running[-1]}`)",
        ) from None


def _show_run(
    cli: Cli,
    args: argparse.Namespace,
    result: dict[str, Any],
    running: list[str],
    watcher: Any,
    rules: Any,
    streamed: PiecePrinter | None,
    interrupted: bool,
) -> int:
    """Print a run's result (as :func:`cmd_run` got it; ``streamed``: the output printed
    as it came so far; ``interrupted``: given a Ctrl+C) and return its exit code."""
    ahead = bytes(watcher.typed).decode("utf-8", "replace") if watcher is not None else ""
    if ahead and args.interactive and result.get("waitingForInput") and not args.json:
        # Typed while it ran, for it: typed now that it asks (with the terminal's echo as
        # it set it: a `read -s` password is not echoed into its log, a review).
        if result.get("stdout"):
            print(result["stdout"])
        task_id = result["backgroundTaskId"]
        answer = _send_input(cli, task_id, ahead, None, rules)
        return _report_input(task_id, answer, False, cli)
    # (at its timeout, by Ctrl+B, or by `bg ID` from another shell)
    moved_on = result.get("assistantAutoBackgrounded") or result.get("backgroundedByUser")
    if args.raw and running and (moved_on or _finished(result)):
        _print_rest_raw(cli, running[-1], streamed)
        return _report_run(result, False, cli, printed=True)
    if moved_on and running and not args.json:
        # What it printed so far (Ctrl+B or its timeout: a live view that showed it is
        # erased; without one, a script saw none of it, a review)
        _print_so_far(cli, running[-1], streamed)
        return _report_run(result, False, cli, printed=True)
    if interrupted and running and _finished(result) and not args.json:
        # Ended by a Ctrl+C, maybe: its output so far, cut as after a stop (a runaway
        # command is why one presses it, and all of it took seconds to print: a review).
        _print_so_far(cli, running[-1], streamed)
        return _report_run(result, False, cli, printed=True)
    if streamed is not None and running:  # (the rest of it, whatever the result says:
        _print_whole_output(cli, running[-1], streamed)  # its excerpt came again, a review)
        return _report_run(result, False, cli, printed=True)
    if result.get("truncated") and not args.json and running and _finished(result):
        # A command runner prints all of it (a person, a pipe into `jq`); the excerpt is
        # for a model's result (`--json`, the tools).
        _print_whole_output(cli, running[-1])
        return _report_run(result, False, cli, printed=True)
    return _report_run(result, args.json, cli)


def _finished(result: dict[str, Any]) -> bool:
    """A foreground result of a command that ended (not moved to the background)."""
    return result.get("exitCode") is not None and not result.get("backgroundTaskId")


@contextlib.contextmanager
def _ctrl_c_interrupts(
    cli: Cli, running: list[str], pressed: list[str], on_press: Callable[[], None]
) -> Iterator[None]:
    """At a terminal, the first Ctrl+C is the running command's, as a terminal gives it
    to its foreground job (B3b: pytest prints its summary; ``run`` then ends as the
    command does; ``on_press`` drops what was typed ahead, as a terminal does); the next one
    stops it (``KeyboardInterrupt``: :func:`_interrupted`), as does the first where there
    is nothing to interrupt (the command not named yet, or no process of it left to
    signal). ``pressed`` gets the task given it. Where SIGINT is ignored, it stays so."""
    import signal
    import threading

    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield
        return
    waiting = [True]  # (its call still waits: a stop now would cut a result short)

    def give(task_id: str) -> None:
        try:
            cli.call("interrupt", task_id=task_id)
            return
        except (WaveError, OSError):  # (ended meanwhile, or no process to signal yet)
            pass
        with contextlib.suppress(WaveError, OSError):
            if cli.call("wait", task_id=task_id, timeout=0).get("status") != "running":
                return  # it ended: its result is on its way
        if waiting:  # the stop, as a second Ctrl+C (a signal: the main thread may wait
            # in a system call, which only a signal cuts short, not interrupt_main())
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def press(signum: int, frame: Any) -> None:
        _CTRL_C_TAKEN.append(signum)
        if running and not pressed:
            pressed.append(running[-1])
            on_press()
            threading.Thread(target=give, args=(running[-1],), daemon=True).start()
            return
        previous(signum, frame)

    signal.signal(signal.SIGINT, press)
    try:
        yield
    finally:
        waiting.clear()
        signal.signal(signal.SIGINT, previous)


def _interrupted(
    cli: Cli, task_id: str | None, stop: bool, so_far: Callable[[], object] | None
) -> int:
    """Ctrl+C during ``run`` (at a terminal, the second: see :func:`_ctrl_c_interrupts`):
    a person at a terminal means to stop the command, so it is stopped; anything else (a
    script, an agent's harness) leaves it running in the background, as a caller that
    went away does. Either way, said on stderr, after what it printed so far
    (``so_far``)."""
    if task_id is None or not stop:  # (its output so far too, as the README says: a
        return _leave(INTERRUPTED_EXIT, so_far, _gone_note(cli, "interrupted", task_id))
    try:  # (a trial's script got none)
        record = cli.call("stop", task_id=task_id, interrupted=True)
        note = f"^C: stopped task {task_id} ({record.get('status')})"
    except WaveError as exc:  # it ended meanwhile
        note = f"^C: task {task_id}: {exc.message}"
    return _leave(INTERRUPTED_EXIT, so_far, note)  # (the live view that showed it is erased)


def _gone_note(
    cli: Cli, said: str, task_id: str | None, result: dict[str, Any] | None = None
) -> str:
    """What a CLI leaving on a signal says of its command (``result``: its call's, if it
    came)."""
    if task_id is None:  # (the supervisor had not named it yet: SIGTERM said nothing)
        return (
            f"wave-bash: {said} before the command was started or named; "
            "`wave-bash tasks` shows whether it runs"
        )
    if result is not None and _finished(result):
        return f"wave-bash: {said}; task {task_id} had ended ({_wave(cli)} output {task_id})"
    return (
        f"wave-bash: {said}; task {task_id} keeps running in the background "
        f"({_wave(cli)} stop {task_id} stops it)"
    )


LEAVING_PATIENCE = 2.0
"""Seconds a CLI told to stop (a signal) gives the output it still prints to a reader that
does not take it: it leaves all the same (it waited as long as the reader, a trial)."""


def _so_far(
    cli: Cli, args: argparse.Namespace, task_id: str | None, streamer: Streamer
) -> Callable[[], object] | None:
    """What prints a command's output so far as the CLI leaves on a signal (None: nothing
    to print, or its stream is stuck on a reader that reads nothing, and holds stdout)."""
    streamed = streamer.finish(LEAVING_PATIENCE)
    if task_id is None or streamer.stuck:
        return None
    if args.raw:  # (bytes, as the rest of `--raw`: it printed them cleaned, a trial)
        return lambda: _print_rest_raw(cli, task_id, streamed)
    return lambda: _print_so_far(cli, task_id, streamed)


def _leave(code: int, so_far: Callable[[], object] | None, note: str) -> int:
    """Leave on a signal: the output so far (given ``LEAVING_PATIENCE``), then ``note`` on
    stderr, whatever came of the first (a reader gone, `| head -1`, lost the note, and
    the exit code became 0; a stalled one held the CLI: a trial). Where stdout is held
    by a write that waits, at once: Python's own last flush would wait too, or abort."""
    import threading

    def print_so_far() -> None:
        with contextlib.suppress(WaveError, OSError):
            so_far()  # type: ignore[misc]
            sys.stdout.flush()

    if so_far is not None:
        printing = threading.Thread(target=print_so_far, name=STDOUT_WRITER, daemon=True)
        printing.start()
        printing.join(LEAVING_PATIENCE)
    with contextlib.suppress(OSError):
        print(note, file=sys.stderr, flush=True)
    _quiet_stdout()  # (what is still buffered goes nowhere: the reader took none of it)
    if any(t.name == STDOUT_WRITER and t.is_alive() for t in threading.enumerate()):
        os._exit(code)
    return code


def _guard(args: argparse.Namespace) -> tuple[Any, Any]:
    """The rules and sandbox of ``run`` (options, else the environment); the quick path
    parses no such options, so only the environment can give them there."""
    sandboxed = _sandbox_arg(args)
    if not (getattr(args, "rules", None) or os.environ.get("WAVE_RULES")) and not sandboxed:
        return None, None  # the common case: nothing to import
    from .guard import from_environment

    return from_environment(
        getattr(args, "rules", None), getattr(args, "sandbox", None),
        getattr(args, "allow_network", False) or None, getattr(args, "workspace", None),
    )  # fmt: skip


def _pin_workspace(cli: Cli, args: argparse.Namespace, sandbox: dict[str, Any]) -> None:
    """Fix the sandbox's workspace where ``run`` was called, as a client fixes it where it
    is made (SB1): never where ``--cwd`` points, which would make any directory writable
    (``--cwd /etc``). A remote's is known only there, so with ``--cwd`` it must be given."""
    if not cli.connector.remote:
        from .guard import nearest_existing_dir, workspace_for

        try:
            here = cli.connector.default_cwd()
        except InvalidInputError:  # (gone, and no $PWD says where it was)
            raise InvalidInputError(
                "the current directory no longer exists: give the sandbox's workspace "
                "(--workspace DIR), or cd to an existing directory"
            ) from None
        # Deleted under us: where the command then runs (its nearest existing ancestor).
        sandbox["workspace"] = workspace_for(sandbox["mode"], nearest_existing_dir(here))
    elif args.cwd:
        raise InvalidInputError(
            "with a remote, --cwd and a sandbox, give the sandbox's workspace (--workspace): "
            "it must not move with --cwd"
        )


def _sandbox_arg(args: argparse.Namespace) -> str | None:
    """``--sandbox`` (else ``WAVE_SANDBOX``), refusing a sandbox's options without one (a
    person gave them meaning a sandbox: not silently ignored)."""
    sandbox: str | None = getattr(args, "sandbox", None) or os.environ.get("WAVE_SANDBOX")
    if (getattr(args, "allow_network", False) or getattr(args, "workspace", None)) and (
        sandbox in (None, "", "off")
    ):
        raise InvalidInputError(
            "--allow-network and --workspace are a sandbox's: give --sandbox MODE too"
        )
    return sandbox


def _asks(result: dict[str, Any]) -> bool:
    return bool((result.get("permission") or {}).get("decision") == "ask")


def _approved(result: dict[str, Any]) -> bool:
    """Ask the person at this terminal about a command that needs approval: why it does,
    not the model's text ("Nothing was run", then "Run it anyway?", read as a
    contradiction: a trial)."""
    from . import texts

    reason = (result.get("permission") or {}).get("reason") or "it needs approval"
    print(f"This command needs approval: {texts.for_approval(reason)}.", file=sys.stderr)
    print("Run it? [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _size_arg(text: str) -> list[int]:
    match = re.fullmatch(r"(\d{1,5})x(\d{1,5})", text.strip())
    size = [int(match[1]), int(match[2])] if match else []
    if not size or not all(1 <= side <= TERMINAL_SIDE_MAX for side in size):
        raise InvalidInputError(
            f"--size takes COLUMNSxROWS, each from 1 to {TERMINAL_SIDE_MAX} (such as 120x40), "
            f"not {text!r}"
        )
    return size


def _report_run(result: dict[str, Any], as_json: bool, cli: Cli, printed: bool = False) -> int:
    """Print a run's result (``printed``: its whole output is out already) and return the
    exit code."""
    stdout, message = result.get("stdout") or "", result.get("message") or ""
    moved = bool(result.get("backgroundTaskId") or result.get("interrupted"))
    error = result.get("error")
    if error is not None and result.get("exitCode") is None and not moved:
        if as_json:  # nothing ran: all of the result (a refusal's decision, rule, source)
            _print_json(result)
            return ERROR_EXIT
        raise InvalidInputError(str(error))  # nothing ran (refused, a bad cwd, …)
    if as_json:
        _print_json(result)
    elif result.get("waitingForInput"):
        task_id = result["backgroundTaskId"]
        if stdout:
            print(stdout)
        print(
            f"[{task_id} waits for input: answer with `{_wave(cli)} input {task_id} TEXT`, "
            f"or take over its terminal with `{_wave(cli)} attach {task_id}`]",
            file=sys.stderr,
        )
    elif moved:
        if stdout and not printed:
            print(stdout)
        if _started_in_background(result):  # its ID for a script: `ID=$(wave-bash run …)`
            print(result["backgroundTaskId"])
        print(_for_people(message.removeprefix(stdout).lstrip("\n")), file=sys.stderr)
        path = result.get("outputPath")
        if cli.remote is not None and path and path in message:  # (not after a `sleep`
            # stopped at its timeout, whose message names no file: a trial)
            print(f"(the output file is on {cli.remote})", file=sys.stderr)
    else:
        if not printed:  # (exact: as the log has it, blank edge lines too, as `output`)
            _write_lines(stdout)
        for note in _notes(result):
            print(note, file=sys.stderr)
    return _run_exit(result)


def _run_exit(result: dict[str, Any]) -> int:
    """The exit code of `run` for a result (the command's own, as the module says)."""
    moved = bool(result.get("backgroundTaskId") or result.get("interrupted"))
    if result.get("error") is not None and result.get("exitCode") is None and not moved:
        return ERROR_EXIT  # (nothing ran)
    if (
        result.get("assistantAutoBackgrounded")
        or result.get("waitingForInput")
        or result.get("backgroundedByUser")  # (Ctrl+B: exit 0 let `&& deploy` go on while
    ):  # it ran, a trial; a shell's Ctrl+Z stops the list too)
        return STILL_RUNNING_EXIT  # (it runs on: `run -i … && deploy` must not go on)
    if moved and not result.get("interrupted"):
        return 0
    code = result.get("exitCode")  # (a command the `sleep` rule stopped: 143, never 0)
    return int(code) if code is not None else 1


def _started_in_background(result: dict[str, Any]) -> bool:
    """Started in the background as asked (``--background``), not moved there."""
    flags = ("backgroundedByUser", "assistantAutoBackgrounded", "interrupted", "waitingForInput")
    return bool(result.get("backgroundTaskId")) and not any(result.get(f) for f in flags)


def _notes(result: dict[str, Any]) -> list[str]:
    """What a finished command's result says beside its output and exit code (processes
    it left running, a lost status, a directory gone, the state dir full): for stderr."""
    stdout, message = result.get("stdout") or "", result.get("message") or ""
    rest = _without_block(message, stdout) if stdout else message
    notes = [line for line in rest.splitlines() if line.strip()]
    notes = [line for line in notes if line != f"Exit code {result.get('exitCode')}"]
    error = result.get("error")
    if error is not None and error not in notes:
        notes.append(str(error))
    return ["wave-bash: " + _for_people(note) for note in notes]


def _without_block(text: str, block: str) -> str:
    """``text`` without ``block`` where it stands as whole lines (the output in a result's
    message, which a note before it may quote: `pwd` printing the directory a note names)."""
    start = 0
    while (found := text.find(block, start)) >= 0:
        end = found + len(block)
        if text[found - 1 : found] in ("", "\n") and text[end : end + 1] in ("", "\n"):
            return text[:found] + text[end:]
        start = found + 1
    return text


_FOR_PEOPLE = (
    (re.compile(r'TaskStop \(task_id "([^"]+)"\)'), r"`wave-bash stop \1`"),
    (re.compile(r"\bTaskStop\b"), "`wave-bash stop`"),
    (re.compile(r"\bTaskOutput\b"), "`wave-bash output`"),
    (re.compile(r"\bTaskInput\b"), "`wave-bash input`"),
    (re.compile(r"you will be notified when it completes"), "`wave-bash wait` waits for its end"),
)


def _for_people(text: str) -> str:
    """A supervisor's text as a person at the CLI reads it: the commands that do what the
    tools a model is told of do (a review met TaskStop, TaskOutput and "you will be
    notified" in `run`'s, `wait`'s and `notifications`' lines)."""
    for pattern, replacement in _FOR_PEOPLE:
        text = pattern.sub(replacement, text)
    return text


def cmd_schema(cli: Cli | None, args: argparse.Namespace) -> int:
    from .tools import tool_definitions  # the models: only here

    _print_json(tool_definitions(args.format))
    return 0


def cmd_bridge(cli: Cli | None, args: argparse.Namespace) -> int:
    from .bridge import main as serve_bridge

    return serve_bridge(args.state_dir)


def cmd_mcp(cli: Cli | None, args: argparse.Namespace) -> int:
    from .mcp_server import main as serve_mcp  # the SDK is imported only when serving MCP

    remote = {
        "remote": _remote_arg(args),
        "ssh_options": _ssh_options(args.ssh_option),
        "remote_command": args.remote_command,
    }
    _sandbox_arg(args)
    guard = {
        "rules": args.rules, "sandbox": args.sandbox, "allow_network": args.allow_network or None,
        "workspace": args.workspace,
    }  # fmt: skip
    session = args.session if args.mcp_session is None else args.mcp_session
    return serve_mcp(args.state_dir, session, args.follow_cd, remote, guard)


def _shutdown(cli: Cli) -> tuple[int, int] | None:
    """Stop the supervisor if one runs (its tasks keep running); how many tasks it left
    running, and how many ended ones whose processes still run (None: none ran)."""
    answer = cli.calls.shutdown({"session": cli.session})
    if answer is None:
        return None
    held = int(answer.get("heldWrites") or 0)
    if held:  # (it stopped without a word of them: a review)
        print(
            f"wave-bash: the supervisor held {held} journal write(s) the state dir refused "
            f"({answer.get('storageProblem')}): lost with it unless the disk took them as it "
            "stopped; the next supervisor reads every task's end back from its exit record, "
            "and a completion notice may be shown again",
            file=sys.stderr,
        )
    return int(answer.get("runningTasks") or 0), int(answer.get("lingeringTasks") or 0)


def cmd_supervisor(cli: Cli, args: argparse.Namespace) -> int:
    if args.action == "stop":
        counts = _shutdown(cli)
        left, lingering = counts or (0, 0)
        if args.json:
            _print_json({"running": False, "stopped": counts is not None, "runningTasks": left,
                         "lingeringTasks": lingering})  # fmt: skip
        elif counts is None:
            print("no supervisor was running")
        elif left or lingering:  # (it said nothing of ended tasks whose processes ran on)
            kept = [f"{left} task(s) keep running"] if left else []
            kept += [f"{lingering} ended task(s) left processes running"] if lingering else []
            print(
                f"supervisor stopped; {' and '.join(kept)} (the next call starts a "
                "supervisor that takes them back; `wave-bash stop ID` stops one)"
            )
        else:
            print("supervisor stopped")
        return 0
    if args.action == "status":
        cli.connector.may_start = False
    try:
        patience = STATUS_LIMIT if args.action == "status" else RECONNECT_PATIENCE
        status = cli.call("status", patience)
    except SupervisorUnavailableError as exc:
        if args.action == "start":
            raise
        if "not answered in time" in str(exc):  # (there, stopped or frozen: not "none")
            if args.json:
                _print_json({"running": True, "answering": False, "stateDir": str(cli.layout.root),
                             "error": str(exc)})  # fmt: skip
            else:
                print(f"a supervisor for {cli.layout.root} does not answer: {exc}")
            return UNKNOWN_STATUS_EXIT
        if args.json:
            _print_json({"running": False, "stateDir": str(cli.layout.root)})
        else:
            print(f"no supervisor is running for {cli.layout.root}")
        return NOT_RUNNING_EXIT
    if args.json:
        _print_json(status)
    else:
        print(
            f"supervisor pid {status.get('pid')} serving {status.get('socketPath')}\n"
            f"state dir {status.get('stateDir')}, {status.get('runningTasks')} running "
            f"task(s), {status.get('lingeringTasks')} ended with processes still running, "
            f"protocol {status.get('protocolVersion')}\n"
            f"tracking: {status.get('tracking')}\nsandbox: {status.get('sandbox')}"
        )
        if status.get("heldWrites"):
            print(
                f"{status['heldWrites']} journal write(s) held in memory: "
                f"{status.get('storageProblem')} (written once the disk takes them)"
            )
        elif status.get("storageProblem"):  # (a full disk before any write failed: DF2)
            print(f"state dir: {status['storageProblem']} (no new command starts)")
    return 0


def cmd_tasks(cli: Cli, args: argparse.Namespace) -> int:
    records = cli.call("tasks", all=args.all)
    if args.running:  # (what an agent asks after a restart: a trial found no way), with
        # an ended one whose processes run on (`completed(0)+1 running`: left out, a trial)
        records = [r for r in records if not _ended(r) or r.get("leftoverProcesses")]
    if args.json:
        _print_json(records)
    elif records:
        from .display import task_table

        print(task_table(records, sessions=args.all))
    else:
        print("no running tasks" if args.running else "no tasks")
    return 0


def _printer(cli: Cli, task_id: str, raw: bool = False) -> PiecePrinter:
    """Prints the task's output exactly, in pieces (see ``api.pieces``); ``raw``: its
    log's bytes as they are."""
    op = "terminal" if raw else "output"

    def read(params: dict[str, Any], scope: CallScope | None) -> dict[str, Any]:
        params = {"session": cli.session, "task_id": task_id, **params}
        answer: dict[str, Any] = cli.calls.call(op, params, scope=scope)
        return answer

    return (RawPrinter if raw else PiecePrinter)(read)


def _wave(cli: Cli) -> str:
    """How a hint names the CLI: with the ``--state-dir`` and ``--remote`` it was given
    (the task is there: pasted hints got "No task found" from another supervisor, and
    started one in the default state dir: trials), and the ssh options and remote
    command that reach it (without them, a wrong key or no `wave-bash` there: a trial).
    What the environment gave stays there for the next command."""
    state_dir = str(cli.layout.root) if cli.state_dir_given else None
    session = cli.session if cli.session_given else None
    return cli_words(state_dir, cli.remote, cli.ssh_option, cli.remote_command, session)


def _print_so_far(cli: Cli, task_id: str, streamed: PiecePrinter | None = None) -> None:
    """A task's output so far as its result shows it, at most the excerpt's 30,000
    characters (its start and its end): a runaway command is why one presses Ctrl+C, and
    all of it could be a gigabyte. Where it is cut, says how to see all of it. After a
    stream (``streamed``), the excerpt of what it has not printed (printed whole, a
    command that wrote faster than the stream was followed for as long as it ran: a
    review)."""
    offset = streamed.offset if streamed is not None else 0
    out = cli.call("output", task_id=task_id, block=False, offset=offset, exact_output=True)
    _write_lines(out.get("output") or "")  # (blank edge lines too: as the log has them)
    if out.get("truncated"):
        print(f"(cut short: `{_wave(cli)} output {task_id}` prints all of it)",
              file=sys.stderr)  # fmt: skip


def _write_lines(text: str) -> None:
    """``text`` as it is, a last line with no newline given one (nothing for none)."""
    if text:
        sys.stdout.write(text if text.endswith("\n") else f"{text}\n")


def _print_rest_raw(cli: Cli, task_id: str, streamed: PiecePrinter | None) -> None:
    """The task's log bytes so far, from where its stream got to (``--raw``)."""
    (streamed or _printer(cli, task_id, raw=True)).print_all(follow=False)


def _print_whole_output(
    cli: Cli, task_id: str, streamed: PiecePrinter | None = None
) -> dict[str, Any]:
    """The task's whole cleaned output so far (after a stream, what it has not printed),
    then the rest of a line still being written; returns the last answer."""
    printer = streamed or _printer(cli, task_id)
    out = printer.print_all(follow=False)
    if not _ended(out):  # (a supervisor of before: a running task's unfinished last line)
        rest: dict[str, Any] = cli.call(
            "output", task_id=task_id, block=False, offset=printer.offset
        )
        if rest.get("output"):
            print(rest["output"])
        return rest
    return out


def cmd_output(cli: Cli, args: argparse.Namespace) -> int:
    if args.raw:
        if args.json:
            raise InvalidInputError("--raw prints the log's bytes: it does not go with --json")
        raw = _printer(cli, args.id, raw=True)
        streamed = _follow(raw) if args.follow else raw.print_all(follow=False)
        if streamed is None:  # (its reader went away: as below)
            return _exit_code(cli.call("wait", task_id=args.id, timeout=0))
        last = streamed
        gone = last.get("logGone") and _log_gone(
            cli.call("output", task_id=args.id, block=False, offset=0)  # (says its path)
        )  # (it printed nothing and exited 0: a trial)
        if not args.follow:
            return gone or 0
        print(_status_line(_end_of(cli, args.id, last)), file=sys.stderr)  # (as --follow)
        _shown_ends(cli, [last])
        return gone or _exit_code(last)
    if not args.follow:
        if args.json:
            _print_json(out := cli.call("output", task_id=args.id, block=False, offset=0))
        else:
            out = _print_whole_output(cli, args.id)
        return _log_gone(out)
    if args.json:  # one JSON value: the whole output once it ended, as without --follow
        while not _ended(end := cli.call("wait", task_id=args.id, timeout=600_000)):
            pass
        _print_json(out := cli.call("output", task_id=args.id, block=False, offset=0))
        _shown_ends(cli, [end])
        return _log_gone(out) or _exit_code(end)
    printer = _printer(cli, args.id)
    printer.on_waiting = lambda: _say_waiting(cli, args.id, printer.line_open)
    followed = _follow(printer)
    if followed is None:  # (`output --follow ID | head`: it exits as `wait` does, 124
        # while the task runs, for a pipefail script: 0 read as a success, a trial; not
        # shown, so its notice stays)
        return _exit_code(cli.call("wait", task_id=args.id, timeout=0))
    last = followed
    # How it ended, as `wait` says it (its notice is taken as shown: it printed nothing of
    # the end and exited 0, so a failure went unseen; a trial)
    print(_status_line(_end_of(cli, args.id, last)), file=sys.stderr)
    _shown_ends(cli, [last])
    return _log_gone(last) or _exit_code(last)


def _follow(printer: PiecePrinter) -> dict[str, Any] | None:
    """The task's output printed until it ends: its last answer, or ``None`` once
    stdout's reader went away, seen as it went (at the next write only, `output --follow
    ID | grep -m1 ready` waited for a quiet task's next line: a trial)."""
    scope, gone = CallScope(), threading.Event()

    def reader_gone() -> None:
        gone.set()
        scope.abandon()

    watch_reader(reader_gone)
    try:
        return printer.print_all(follow=True, scope=scope)
    except (BrokenPipeError, SupervisorUnavailableError) as exc:
        if isinstance(exc, SupervisorUnavailableError) and not gone.is_set():
            raise
        _quiet_stdout()
        return None


def _say_waiting(cli: Cli, task_id: str, after_a_prompt: bool) -> None:
    """On stderr, that a followed task waits for input, and how to answer it (the stream
    went silent at its prompt, as `wait` did: a trial)."""
    wave = _wave(cli)
    print(f"{chr(10) if after_a_prompt else ''}[{task_id} waits for input: {wave} input "
          f"{task_id} TEXT, or {wave} attach {task_id}]", file=sys.stderr, flush=True)  # fmt: skip


def _log_gone(out: dict[str, Any]) -> int:
    """B6d: 1, and why on stderr, when the task's log was removed (it printed nothing and
    exited 0: a review). An end on a full state dir is said on stderr too (DF4: its
    notice, which this read confirms, alone said so)."""
    if out.get("error"):
        print(f"wave-bash: {out['error']}", file=sys.stderr)
    if not out.get("logGone"):
        return 0
    from . import texts

    print(f"wave-bash: {texts.log_gone_text(str(out.get('outputPath')))}", file=sys.stderr)
    return 1


def _shown_ends(cli: Cli, records: Sequence[dict[str, Any]]) -> None:
    """The ends of tasks just printed count as their completion notices, as an MCP result
    that shows one does (`notifications` said again what `wait` had printed: a trial)."""
    ended = [r.get("id") or r.get("taskId") for r in records if _ended(r)]
    if ended:
        sys.stdout.flush()  # (printed first: a notice is delivered once shown)
        cli.call("ack", task_ids=[task_id for task_id in ended if task_id])


def _end_of(cli: Cli, task_id: str, last: dict[str, Any]) -> dict[str, Any]:
    """How a task read to its end ended, as ``wait`` has it: for one killed, the record
    says why (an output's answer does not; "killed (exit code 143)" alone: a trial)."""
    if last.get("status") != "killed":
        return {**last, "id": task_id}
    record: dict[str, Any] = cli.call("wait", task_id=task_id, timeout=0)
    return record


def _status_line(record: dict[str, Any]) -> str:
    from . import texts
    from .states import EndReason

    code, reason = record.get("exitCode"), record.get("endReason")
    said = "" if code is None else f" (exit code {code})"
    if reason == "not_started":  # (said "X lost" alone: a review)
        said = " (never started: nothing ran; run it again)"
    elif record.get("status") == "lost":  # (why, as the result says it: "X lost" alone,
        from .states import TaskStatus  # a trial)

        lost = texts.outcome_text(TaskStatus.LOST, code, EndReason(reason) if reason else None)
        return f"{record['id']} {lost.removeprefix('was ')}"
    elif record.get("status") == "killed" and reason in {r.value for r in EndReason}:
        # Why wave-bash ended it: "killed (exit code 143)" alone read as a crash after
        # the log cap, and `wait` takes the notice that said it as shown (a trial).
        why = texts.stopped_text(code, EndReason(reason))  # (a person stops it with the
        said += f". {_for_people(why)}" if why else ""  # CLI)
    left = texts.leftover_text(int(record.get("leftoverProcesses") or 0))  # (as `run` and
    said += left.replace("TaskStop", f"`wave-bash stop {record['id']}`")  # `tasks` say: a review)
    return f"{record['id']} {record['status']}{said}"


INTERRUPTED_EXIT = 130
"""What the CLI exits with after Ctrl+C (128 + SIGINT, as a shell reports it); the
installed command dies of the signal instead (:func:`leave_as`)."""
_CTRL_C_TAKEN: list[int] = []
"""Set once a Ctrl+C reached this process (its own SIGINT handlers)."""


def leave_as(code: int) -> int:
    """The command's end: ``code``, or, where a Ctrl+C ended it (:data:`INTERRUPTED_EXIT`),
    death by SIGINT, as a program that handles the key and then ends should: a shell
    running a script ends the script only when its foreground program died of it, and
    went on to the script's next line after one that exited 130 (a trial)."""
    import signal

    if code != INTERRUPTED_EXIT or not _CTRL_C_TAKEN:
        return code
    for stream in (sys.stdout, sys.stderr):  # (never flushed by an exit by a signal)
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    return code  # (where it is blocked: a thread of an embedding program)


NOT_RUNNING_EXIT = 3
"""``supervisor status`` with none running: LSB's "program is not running", as
``systemctl status`` (``wave-bash supervisor status >/dev/null && …``)."""

SSH_FAILED_EXIT = 255
"""What ssh exits with when it could not connect or the connection ended."""
UNKNOWN_STATUS_EXIT = 4
"""``supervisor status`` with one that does not answer (stopped, frozen): LSB's "status
is unknown"."""

STILL_RUNNING_EXIT = 124
"""What ``wait`` exits with when the task still runs at its ``--timeout`` (as timeout(1))."""


def cmd_wait(cli: Cli, args: argparse.Namespace) -> int:
    """Exits as the task did (a script can test it), 124 when it still runs at the
    timeout, 1 when its exit status was lost. Several tasks (as bash's and pueue's
    `wait` take them; `wait a b` was refused, a trial): each waited for in turn within
    the one timeout, its line printed as it ends; 124 if one still runs, else the exit
    of the first that did not succeed (`wait $A $B && deploy` deploys only after both
    succeeded), else 0."""
    import time

    timeout = _timeout_arg(args.timeout) if args.timeout is not None else None
    ids = list(dict.fromkeys(args.id))
    if len(ids) > 1:
        for task_id in ids:  # (an unknown one is said before any wait)
            cli.call("wait", task_id=task_id, timeout=0)
    until = None if timeout is None else time.monotonic() + timeout / 1000
    records: list[dict[str, Any]] = []
    try:
        for task_id in ids:
            left = None if until is None else max(0.0, (until - time.monotonic()) * 1000)
            records.append(cli.call("wait", task_id=task_id, timeout=left))
            if not args.json:
                print(_status_line(records[-1]), flush=True)
        if args.json:
            _print_json(records[0] if len(records) == 1 else records)
    except BrokenPipeError:  # (`wait ID | true`: its exit code all the same, as `run`'s,
        _quiet_stdout()  # for a pipefail script; not shown, so its notice stays: a trial)
        return _waited_exit(records)
    _shown_ends(cli, records)
    return _waited_exit(records)


def _waited_exit(records: list[dict[str, Any]]) -> int:
    """``wait``'s exit for the tasks it waited for (see :func:`cmd_wait`)."""
    codes = [_exit_code(record) for record in records]
    if STILL_RUNNING_EXIT in codes:
        return STILL_RUNNING_EXIT
    return next((code for code in codes if code != 0), 0)


def _a_pipe(stream: Any) -> bool:
    """Whether ``stream`` is a pipe or a socket (not a terminal, a file or a device)."""
    import stat

    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def cmd_stop(cli: Cli, args: argparse.Namespace) -> int:
    if len(args.id) == 1:
        records = [cli.call("stop", task_id=args.id[0])]
    else:
        records = cli.call("stop_many", task_ids=args.id)
    if args.json:
        _print_json(records[0] if len(records) == 1 else records)
    else:
        for record in records:
            stopped = record.get("stoppedProcesses") or 0
            left = f" (stopped {stopped} process(es) it had left running)" if stopped else ""
            if stopped or record.get("endReason") == "stopped" or record["status"] == "running":
                print(f"{record['id']} {record['status']}{left}")
            else:  # (one of several that had ended by itself: "X failed" read as a stop
                print(f"{_status_line(record)}: it had already ended")  # that failed, a trial)
    _shown_ends(cli, records)
    return 0


def cmd_input(cli: Cli, args: argparse.Namespace) -> int:
    if (args.text is None) == (not args.stdin):
        raise InvalidInputError(
            "input types one text: name it (input ID TEXT) or pipe it in with --stdin"
        )
    given = _piped_text() if args.stdin else args.text
    text = given if args.no_enter else given + "\n"
    timeout = _timeout_arg(args.timeout) if args.timeout is not None else None
    rules, _ = _guard(args)  # (WAVE_RULES: input goes only where they let a command start)
    out = _send_input(cli, args.id, text, timeout, rules)
    try:
        return _report_input(args.id, out, args.json, cli)
    except BrokenPipeError:  # (`input ID x | head -1`: the task's status all the same, as
        _quiet_stdout()  # `run` gives its command's)
        return _exit_code(out)


def _piped_text() -> str:
    """``input ID --stdin`` types what comes on stdin, its last line end left out (``echo
    "$PASSWORD" | wave-bash input ID --stdin``, as ``docker login --password-stdin``: a
    secret in an argument is in ``ps`` and the shell's history, a trial); at most what one
    input takes, read no further."""
    if sys.stdin.isatty():
        raise InvalidInputError("--stdin types what is piped in: stdin is a terminal here")
    data = sys.stdin.buffer.read(4 * MAX_INPUT_CHARS + 1)
    if len(data) > 4 * MAX_INPUT_CHARS:  # (the supervisor says what is over, below it)
        raise InvalidInputError(f"the input on stdin is over {MAX_INPUT_CHARS} characters")
    if not data:  # (an Enter alone may take a prompt's default: a review)
        raise InvalidInputError("--stdin: nothing came on stdin, nothing was typed")
    text = data.decode(errors="replace")
    return text.removesuffix("\n").removesuffix("\r")  # (a CRLF's CR was typed: a review)


def _send_input(
    cli: Cli, task_id: str, text: str, timeout: float | None, rules: Any
) -> dict[str, Any]:
    """TaskInput: type ``text``, then wait until the command asks again or ends."""
    patience = max(FOREGROUND_PATIENCE, (timeout or 10_000) / 1000)
    return dict(cli.call(
        "input", patience, task_id=task_id, input=text, timeout=timeout,
        request_key=os.urandom(16).hex(), rules=rules,
    ))  # fmt: skip


def _report_input(task_id: str, out: dict[str, Any], as_json: bool, cli: Cli) -> int:
    """Print what an input brought (its new output, then where the command is) and return
    the exit code, as ``wait``'s."""
    if as_json:
        _print_json(out)
    else:
        if out.get("output"):
            print(out["output"])
        wave = _wave(cli)
        if out.get("waitingForInput"):
            print(f"[{task_id} waits for input: {wave} input {task_id} TEXT, or {wave} "
                  f"attach {task_id}]", file=sys.stderr)  # fmt: skip
        elif _ended(out):
            print(f"[{_status_line({**out, 'id': task_id})}]", file=sys.stderr)
        else:  # (the timeout passed while it worked: say so, as the tool's text does)
            print(f"[{task_id} still running, not waiting for input: {wave} output "
                  f"{task_id}]", file=sys.stderr)  # fmt: skip
    return _exit_code(out)


def _exit_code(record: dict[str, Any]) -> int:
    """What ``wait`` and ``input`` exit with: the task's exit code once it ended (1 when
    its status was lost), 124 while it runs (waiting for input too): a script's ``&&``
    goes on only after a success."""
    if not _ended(record):
        return STILL_RUNNING_EXIT
    code = record.get("exitCode")
    return int(code) & 0xFF if code is not None else 1


def cmd_attach(cli: Cli, args: argparse.Namespace) -> int:
    if sys.platform == "win32" or not sys.stdin.isatty():
        if cli.remote is None and sys.platform != "win32":  # (an unknown ID is the error
            cli.call("wait", task_id=args.id, timeout=0)  # to name first: a trial)
        raise InvalidInputError("attach needs a terminal (POSIX) on stdin")
    if cli.remote is not None:  # attached over there, on a terminal ssh carries (-t)
        import subprocess

        from .transport import Remote, control_path

        verb = shlex.join(["--session", cli.session, "attach", args.id])
        remote_command = args.remote_command or "wave-bash"
        remote = Remote.parse(cli.remote)
        options = chosen_ssh_options(_ssh_options(args.ssh_option))
        control = control_path(cli.layout, remote, options)
        quiet = [*options, "-o", "LogLevel=ERROR"]  # (no "Shared connection … closed.")
        argv = remote.ssh_argv(quiet, remote_command, verb, tty=True, control=control)
        try:
            code = subprocess.run(argv).returncode
        except FileNotFoundError:
            raise SupervisorUnavailableError(
                "ssh is not installed: install an OpenSSH client to use --remote"
            ) from None
        if code == SSH_FAILED_EXIT:  # (ssh's own, its words hidden by LogLevel=ERROR: it
            print(  # exited 255 without a word as the connection went, a trial)
                f"\r\nwave-bash: ssh to {cli.remote} failed, or its connection ended; that "
                f"stops no task there (`{_wave(cli)} attach {args.id}` takes {args.id} over "
                "again)",
                file=sys.stderr,
            )
        return code
    from .attach import attach, main_call

    return attach(main_call(cli.call), args.id)


def cmd_bg(cli: Cli, args: argparse.Namespace) -> int:
    record = cli.call("wait", task_id=args.id, timeout=0)  # (its record now: no waiting)
    if record["status"] == "running" and record["owner"] == "background":
        print(f"{record['id']} is already in the background; output: {record['outputPath']}")
        return 0  # (as bash's `bg` for a job already there)
    record = cli.call("background", task_id=args.id)
    print(f"{record['id']} moved to the background; output: {record['outputPath']}")
    return 0


def cmd_interrupt(cli: Cli, args: argparse.Namespace) -> int:
    record = cli.call("interrupt", task_id=args.id)
    task_id, wave = record["id"], _wave(cli)
    if record.get("interactive"):  # (a shell or a REPL reads it as a key and goes on:
        # `wait` then waited for good, a trial)
        print(
            f"{task_id}: Ctrl+C typed into its terminal; its command decides what it does "
            f"(`{wave} output {task_id}` shows what it printed, `{wave} input {task_id} TEXT` "
            f"answers it; `{wave} stop {task_id}` stops it)"
        )
        return 0
    print(
        f"{task_id}: Ctrl+C sent; it runs on until its command ends by it "
        f"(`{wave} wait {task_id}`; `{wave} stop {task_id}` stops it)"
    )
    return 0


def cmd_gc(cli: Cli, args: argparse.Namespace) -> int:
    older_than = parse_duration(args.older_than) if args.older_than is not None else None
    result = cli.call("gc", older_than=older_than, unread=args.unread)
    removed, kept = result["removed"], result.get("keptUnread", 0)
    running = result.get("keptRunning", 0)
    if args.json:
        _print_json({"removed": removed, "keptUnread": kept, "keptRunning": running})
    else:
        print(f"removed {len(removed)} finished task(s)")
        wave = _wave(cli)
        if kept:  # (with the age it was given: pasted without it, none went, a trial)
            again = [*(["--older-than", args.older_than] if args.older_than else []), "--unread"]
            print(
                f"kept {kept} whose completion notice no session has read yet "
                f"(`{wave} gc {shlex.join(again)}` removes them too)"
            )
        if running:
            print(
                f"kept {running} whose processes still run "
                f"(`{wave} stop ID` stops them; `{wave} tasks` lists them)"
            )
    return 0


def cmd_notifications(cli: Cli, args: argparse.Namespace) -> int:
    """Claimed, shown, then confirmed (see ``Client.notifications``): a cut connection
    loses none; one not shown goes back to the next reader at once (the CLI killed: in a
    minute)."""
    import uuid

    token = uuid.uuid4().hex
    claim = cli.call("claim", claim=token)
    notices = claim["notices"]
    if not notices:
        if claim.get("waiting"):  # (as any call the full disk cannot serve, DF3; one JSON
            from . import texts  # value with --json: the error's)

            raise StorageError(texts.notices_waiting_text(claim))
        if args.json:
            _print_json(notices)
        return 0
    try:
        if args.json:
            _print_json(notices)
        else:
            from .texts import visible

            for notice in notices:  # (it quotes the command: its colour codes shown, not run)
                lines = _for_people(str(notice["message"])).split("\n")
                print("\n".join(visible(line) for line in lines))
        sys.stdout.flush()  # (shown first: a closed stdout confirms nothing)
    except BaseException:  # not shown (a closed or full stdout, Ctrl+C): the next reader's
        with contextlib.suppress(Exception):  # now, not when the lease ends
            cli.call("release", claim=token)
        raise
    cli.call("ack", claim=token)
    return 0


def _verb(
    sub: Any,
    name: str,
    func: Callable[..., int],
    help: str,
    *,
    ids: str | None = None,
    json: bool = True,
) -> argparse.ArgumentParser:
    """A subcommand taking one task ID (``ids="1"``) or several (``"+"``), with ``--json``."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    if ids == "1":
        parser.add_argument("id")
    elif ids:
        parser.add_argument("id", nargs=ids)
    if json:
        parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=func)
    return parser


def _version_action() -> type[argparse.Action]:
    import argparse

    class Version(argparse.Action):
        """``--version``: the installed package's (read only when asked: its metadata
        costs the CLI's start-up 25 ms)."""

        def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
            super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

        def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
            from importlib.metadata import PackageNotFoundError, version

            try:
                print(f"wave-bash {version('wave-bash')}")
            except PackageNotFoundError:
                print("wave-bash (not installed: a source tree)")
            parser.exit()

    return Version


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; with ``only``, that verb's alone."""
    import argparse
    from collections.abc import Mapping

    class Parser(argparse.ArgumentParser):
        verbs: Mapping[str, argparse.ArgumentParser]  # (the verbs' parsers, on the CLI's)

        def error(self, message: str) -> NoReturn:  # (said by :func:`parse`)
            raise BadArguments(self, message)

    parser = Parser(
        prog="wave-bash",
        description="Run shell commands through a supervisor that keeps them alive.",
    )
    parser.add_argument("--version", action=_version_action(), help="print the version and exit")
    _add_global_options(parser)
    # (every verb named, where a parser built for one verb said `{run} ...`: a trial)
    sub = parser.add_subparsers(dest="verb", required=True, metavar="{" + ",".join(_VERBS) + "}")
    for name, add in _VERBS.items():
        if only is None or only == name:
            add(sub)
    for name, verb in sub.choices.items():  # `mcp --session` is the MCP server's own
        _add_global_options(verb, after_verb=True, skip=("--session",) if name == "mcp" else ())
    parser.verbs = sub.choices  # (see :func:`parse`)
    return parser


def _add_global_options(
    parser: argparse.ArgumentParser, *, after_verb: bool = False, skip: Sequence[str] = ()
) -> None:
    """The options of every verb. They come before the verb (``wave-bash --session S
    tasks``) or, as users of git and pueue write them, after it (``wave-bash tasks
    --session S``), where they win over the same option given before it; ``--ssh-option``
    adds to those before it (see :func:`parse`)."""
    import argparse

    def default(value: Any) -> Any:
        return argparse.SUPPRESS if after_verb else value  # unset after the verb: kept

    options: list[tuple[str, dict[str, Any]]] = [
        ("--state-dir", {"default": default(os.environ.get("WAVE_STATE_DIR")),
                         "help": "state directory"}),
        ("--session", {"default": default(os.environ.get("WAVE_SESSION") or None),
                       "help": "agent session name"}),
        ("--remote", {"default": default(os.environ.get("WAVE_REMOTE")),
                      "help": "ssh://[user@]host[:port]: drive the supervisor on that machine"}),
        ("--ssh-option", {"action": "append", "default": default([]), "metavar": "ARG",
                          "dest": "ssh_option_after" if after_verb else "ssh_option",
                          "help": "extra ssh arguments, e.g. --ssh-option='-i ~/.ssh/devbox'"}),
        ("--remote-command", {"default": default(os.environ.get("WAVE_REMOTE_COMMAND")),
                              "help": "how to run wave-bash on the remote (default: wave-bash)"}),
    ]  # fmt: skip
    for flag, settings in options:
        if flag not in skip:
            parser.add_argument(flag, **settings)


def _add_run(sub: Any) -> None:
    import argparse

    run = sub.add_parser("run", help="run a command (foreground unless --background)")
    run.add_argument(
        "--timeout", help="foreground timeout: ms, or with a unit, 30s, 10m (default 2m)"
    )
    run.add_argument("--background", action="store_true", help="start in the background")
    run.add_argument(
        "--cwd", help="directory to run in (default: here; with --remote, the remote home)"
    )
    run.add_argument("--description", help="what the command does, for people")
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument(
        "--raw", action="store_true",
        help="print its output as the log has it (binary, colours), not cleaned for reading",
    )  # fmt: skip
    run.add_argument(
        "--interactive", "-i", action="store_true",
        help="run on a terminal; returns when it waits for input (answer: wave-bash input)",
    )  # fmt: skip
    run.add_argument("--size", help="terminal size of --interactive, COLUMNSxROWS (80x24)")
    _add_guard_options(run)
    run.add_argument(
        "command", nargs=argparse.REMAINDER,
        help="-- COMMAND... (several words are joined with spaces into one shell command "
        "line, as ssh does: quote the whole line to keep inner quoting)",
    )  # fmt: skip
    run.set_defaults(func=cmd_run)


def _add_schema(sub: Any) -> None:
    schema = sub.add_parser("schema", help="print the tool definitions")
    schema.add_argument(
        "--format", choices=["anthropic", "openai", "mcp"], default="anthropic",
        help="whose tool format (default: anthropic)",
    )  # fmt: skip
    schema.set_defaults(func=cmd_schema, needs_client=False)


def _add_tasks(sub: Any) -> None:
    tasks = _verb(sub, "tasks", cmd_tasks, "list tasks of this session (--all: every session)")
    tasks.add_argument("--all", action="store_true", help="every session's tasks")
    tasks.add_argument(
        "--running", action="store_true",
        help="only those still running, or ended with processes still running",
    )  # fmt: skip


def _add_output(sub: Any) -> None:
    output = _verb(
        sub, "output", cmd_output, "print a task's output (--follow: until it ends)", ids="1"
    )
    output.add_argument(
        "--follow", "-f", action="store_true", help="go on printing what it writes until it ends"
    )
    output.add_argument(
        "--raw", action="store_true",
        help="its bytes as the log has them (binary, colours), not cleaned for reading",
    )  # fmt: skip


def _add_wait(sub: Any) -> None:
    wait = _verb(
        sub, "wait", cmd_wait,
        "wait until tasks end; exits with the exit code of the first that failed, else 0 "
        "(124: one still running at --timeout)",
        ids="+",
    )  # fmt: skip
    wait.add_argument("--timeout", help="longest wait: ms, or with a unit, 30s, 10m")


def _add_stop(sub: Any) -> None:
    _verb(sub, "stop", cmd_stop, "stop tasks and all their processes", ids="+")


def _add_input(sub: Any) -> None:
    typed = _verb(
        sub, "input", cmd_input,
        "type a line into an interactive task, print its new output", ids="1",
    )  # fmt: skip
    typed.add_argument(
        "text", nargs="?", help="what to type (Enter is added unless -n; after -- if it "
        "starts with -: input ID -- -y)",
    )  # fmt: skip
    typed.add_argument(
        "--stdin", action="store_true",
        help="type what comes on stdin instead, its last newline left out (a secret)",
    )  # fmt: skip
    typed.add_argument("-n", "--no-enter", action="store_true", help="do not press Enter")
    typed.add_argument("--timeout", help="longest wait for the next prompt: ms, or 30s, 10m (10s)")


def _add_attach(sub: Any) -> None:
    help = "take over an interactive task's terminal (Ctrl+] detaches)"
    _verb(sub, "attach", cmd_attach, help, ids="1", json=False)


def _add_bg(sub: Any) -> None:
    help = "move a running foreground command to the background"
    _verb(sub, "bg", cmd_bg, help, ids="1", json=False)


def _add_interrupt(sub: Any) -> None:
    help = "press Ctrl+C for a running task (SIGINT to its command; stop ends it)"
    _verb(sub, "interrupt", cmd_interrupt, help, ids="1", json=False)


def _add_bridge(sub: Any) -> None:
    bridge = sub.add_parser(
        "bridge", help="serve one request from stdin (ssh HOST wave-bash bridge)"
    )
    bridge.set_defaults(func=cmd_bridge, needs_client=False)


def _add_mcp(sub: Any) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve the Bash, TaskOutput, TaskStop and TaskInput tools over MCP stdio"
    )
    mcp.add_argument(
        "--session",
        dest="mcp_session",
        metavar="NAME",
        help="agent session (default: WAVE_SESSION or new)",
    )
    mcp.add_argument(
        "--follow-cd", action="store_true", help="start each command where the last ended"
    )
    _add_guard_options(mcp)
    mcp.set_defaults(func=cmd_mcp, needs_client=False)


def _add_guard_options(parser: Any) -> None:
    """``--rules``, ``--sandbox``, ``--allow-network``, ``--workspace`` (SPEC PM, SB)."""
    parser.add_argument("--rules", help="permission rules file, TOML or JSON (default WAVE_RULES)")
    parser.add_argument(
        "--sandbox", choices=["read-only", "workspace-write", "off"],
        help="run commands under bubblewrap (default WAVE_SANDBOX)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-network", action="store_true", help="keep the network inside the sandbox"
    )
    parser.add_argument(
        "--workspace", help="the sandbox's writable directory (default: project root)"
    )


def _add_gc(sub: Any) -> None:
    gc = _verb(
        sub, "gc", cmd_gc, "prune finished tasks and their logs (default age: WAVE_RETENTION, 7d)"
    )
    gc.add_argument(
        "--older-than", help="age such as 45s, 30m, 12h, 7d, 2w (a bare number: seconds)"
    )
    gc.add_argument(
        "--unread", action="store_true",
        help="also tasks whose completion notices no session has read (kept otherwise)",
    )  # fmt: skip


def _add_notifications(sub: Any) -> None:
    help = "completion notices of this session (once each)"
    _verb(sub, "notifications", cmd_notifications, help)


def _add_supervisor(sub: Any) -> None:
    sup = sub.add_parser("supervisor", help="start, stop or inspect the supervisor")
    sup.add_argument("action", choices=["start", "stop", "status"])
    sup.add_argument("--json", action="store_true", help="print JSON")
    sup.set_defaults(func=cmd_supervisor)


_VERBS: dict[str, Callable[[Any], None]] = {
    "run": _add_run,
    "schema": _add_schema,
    "tasks": _add_tasks,
    "output": _add_output,
    "wait": _add_wait,
    "stop": _add_stop,
    "bg": _add_bg,
    "interrupt": _add_interrupt,
    "input": _add_input,
    "attach": _add_attach,
    "bridge": _add_bridge,
    "mcp": _add_mcp,
    "gc": _add_gc,
    "notifications": _add_notifications,
    "supervisor": _add_supervisor,
}
"""Each verb and how its arguments are declared: a call builds only its own verb's
parser (building all of them costs a ``wave-bash run`` 3 ms)."""

_GLOBAL_WITH_VALUE = ("--state-dir", "--session", "--remote", "--ssh-option", "--remote-command")
_GLOBAL_SCALARS = tuple(option for option in _GLOBAL_WITH_VALUE if option != "--ssh-option")


def _misplaced(argv: Sequence[str], message: str) -> str:
    """What to add to an error for a verb's option given before the verb, else '':
    `wave-bash --json tasks` said only "unrecognized arguments: --json", and `wave-bash
    --timeout 5000 run -- make` "invalid choice: '5000'", its value read as the verb."""
    if not message.startswith(("unrecognized arguments: ", "argument {")):
        return ""
    at = 0
    while at < len(argv) and argv[at] not in _VERBS and argv[at] != "--":
        at += 2 if argv[at] in _GLOBAL_WITH_VALUE else 1
    if at >= len(argv) or argv[at] not in _VERBS:
        return ""
    verb = argv[at]
    verbs = getattr(build_parser(verb), "verbs", {})
    takes = verbs[verb]._option_string_actions  # (argparse has no public way to ask)
    early = [arg for arg in argv[:at] if arg in takes and arg not in _GLOBAL_WITH_VALUE]
    if not early:
        return ""
    return f" ({early[0]} is an option of {verb}: it goes after the verb, `wave-bash {verb} {early[0]} …`)"


def _verb_in(argv: Sequence[str]) -> str | None:
    """The verb ``argv`` names (after the global options), if it is a known one."""
    args = iter(argv)
    for arg in args:
        if arg in _GLOBAL_WITH_VALUE:
            next(args, None)
        elif not arg.startswith("-"):
            return arg if arg in _VERBS else None
        elif not arg.startswith(_GLOBAL_WITH_VALUE):
            return None  # --help, a typo: the full parser says what is wrong
    return None


_RUN_WITH_VALUE = {
    "--timeout": "timeout", "--cwd": "cwd", "--description": "description", "--size": "size",
}  # fmt: skip
_RUN_FLAGS = {
    "--background": "background", "--json": "json", "--interactive": "interactive",
    "-i": "interactive", "--raw": "raw",
}  # fmt: skip


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
"""argparse's own test (a value such as ``-5`` is no option)."""


def _option_like(text: str) -> bool:
    """Whether argparse reads ``text`` as an option rather than a value (its rules: not
    ``-`` alone, not a negative number, nothing with a space)."""
    if not text.startswith("-") or text == "-" or " " in text:
        return False
    return _NEGATIVE_NUMBER.match(text) is None


def quick_run_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """The arguments of a plain ``run`` (global options, ``run``'s own, the command), as
    :func:`build_parser` would parse them, or ``None`` for anything else (help, another
    verb, an abbreviation, a missing value), which then goes to argparse: argparse costs
    this hottest path 4 ms of a 30 ms call."""
    args: dict[str, Any] = {
        "state_dir": os.environ.get("WAVE_STATE_DIR"),
        "session": os.environ.get("WAVE_SESSION") or None,
        "remote": os.environ.get("WAVE_REMOTE"),
        "ssh_option": [],
        "remote_command": os.environ.get("WAVE_REMOTE_COMMAND"),
        "timeout": None, "cwd": None, "description": None, "background": False,
        "json": False, "interactive": False, "raw": False, "size": None, "rules": None,
        "sandbox": None,
        "allow_network": False, "workspace": None, "verb": "run", "func": cmd_run,
    }  # fmt: skip
    rest = list(argv)

    def value(option: str) -> str | None:
        name, eq, inline = rest[0].partition("=")
        if name != option:
            return None
        if eq:
            rest.pop(0)
            return inline
        if len(rest) < 2 or _option_like(rest[1]):
            return None  # argparse takes no option-like value: let it say so
        rest.pop(0)
        return rest.pop(0)

    while rest and rest[0] != "run":
        option = rest[0].partition("=")[0]
        if option not in _GLOBAL_WITH_VALUE or (found := value(option)) is None:
            return None
        key = option[2:].replace("-", "_")
        if key == "ssh_option":
            args[key].append(found)
        else:
            args[key] = found
    if not rest:
        return None
    rest.pop(0)
    while rest and rest[0].startswith("-") and rest[0] != "--":
        option = rest[0].partition("=")[0]
        if option in _RUN_FLAGS and "=" not in rest[0]:
            args[_RUN_FLAGS[rest.pop(0)]] = True
        elif option in _RUN_WITH_VALUE and (found := value(option)) is not None:
            args[_RUN_WITH_VALUE[option]] = found
        elif option in _GLOBAL_SCALARS and (found := value(option)) is not None:
            args[option[2:].replace("-", "_")] = found  # after the verb: it wins
        else:
            return None  # (an --ssh-option after the verb, added to those before: argparse)
    if rest and rest[0] == "--":
        rest.pop(0)
    if not rest:
        return None
    args["command"] = rest
    from types import SimpleNamespace

    return SimpleNamespace(**args)  # type: ignore[return-value]  # argparse's attributes


class BadArguments(Exception):
    """Arguments the parser refused (its ``error``)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser, self.message = parser, message


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The CLI's arguments; bad ones exit 2 with the usage and a message on stderr, or
    with ``--json``, as its one JSON value (a script parsing stdout got nothing: a trial)."""
    args = quick_run_args(argv)
    if args is not None:
        return args
    parser = build_parser(_verb_in(argv))
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # said with the verb's usage (argparse gives the whole CLI's: a trial)
            verb = getattr(parser, "verbs", {}).get(args.verb, parser)
            dashed = args.verb == "input" and getattr(args, "text", "") is None  # (`input ID
            # -y` read `-y` as an option: the way to type it, not just that it is unknown)
            hint = " (text that begins with - goes after --: input ID -- -y)" if dashed else ""
            verb.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
        if args.verb == "run":
            if args.command and args.command[0] == "--":
                args.command = args.command[1:]
            if not args.command:
                parser.error("run needs a command: wave-bash run -- COMMAND...")
    except BadArguments as bad:
        options = argv[: argv.index("--")] if "--" in argv else argv
        bad.message += _misplaced(argv, bad.message)
        # (`--j` too, as argparse takes it: no other option begins so)
        if any(len(o) > 2 and "--json".startswith(o) for o in options):  # (for `run`, a
            # whole result, as any of its failures)
            said = InvalidInputError(f"{bad.parser.prog}: {bad.message}")
            _say_failure(said, as_json=True, ran=_verb_in(argv) == "run")
            sys.exit(ERROR_EXIT)
        bad.parser.print_usage(sys.stderr)
        bad.parser.exit(ERROR_EXIT, f"{bad.parser.prog}: error: {bad.message}\n")
    args.ssh_option = [*args.ssh_option, *vars(args).pop("ssh_option_after", [])]
    return args


class Terminated(BaseException):
    """SIGTERM or SIGHUP: the CLI leaves as asked, through its ``finally`` blocks, so the
    terminal is given back as it was (`attach` and `run`'s key watcher left it raw: a
    trial's `timeout 60 wave-bash attach ID`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def said(self) -> str:
        """What happened, in the words of a shell's job report."""
        import signal

        return "hung up" if self.signum == getattr(signal, "SIGHUP", None) else "terminated"


def _leave_on_termination() -> Callable[[], None]:
    """Make SIGTERM and SIGHUP raise :class:`Terminated` (not where they are ignored, as
    under ``nohup``; the MCP server sets its own), and SIGINT ``KeyboardInterrupt``, each
    once: a second signal as the CLI leaves is taken as said; returns what sets them
    back."""
    import signal
    import threading

    leaving: list[int] = []

    def leave(signum: int, _frame: object) -> None:
        if not leaving:  # (once: leaving, it says what it does; `timeout` signals the
            leaving.append(signum)  # CLI, then its group, and the second cut that
            raise Terminated(signum)  # short: nothing said, a trial)

    def interrupt(signum: int, _frame: object) -> None:
        _CTRL_C_TAKEN.append(signum)
        if not leaving:
            leaving.append(signum)
            raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    taken = [
        number
        for number in (getattr(signal, name, None) for name in ("SIGTERM", "SIGHUP"))
        if number is not None and signal.getsignal(number) is signal.SIG_DFL
    ]
    for number in taken:
        signal.signal(number, leave)
    interrupts = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if interrupts:
        signal.signal(signal.SIGINT, interrupt)

    def set_back() -> None:
        for number in taken:
            signal.signal(number, signal.SIG_DFL)
        if interrupts:
            signal.signal(signal.SIGINT, signal.default_int_handler)

    return set_back


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    _usable_standard_streams()
    set_back = _leave_on_termination()
    try:
        return _run_verb(argv)
    except Terminated as exc:
        return 128 + exc.signum
    finally:
        set_back()  # (for a caller of main() in its own process)


def _run_verb(argv: Sequence[str] | None) -> int:
    args = parse(sys.argv[1:] if argv is None else list(argv))
    as_json = getattr(args, "json", False)
    func: Callable[[Any, argparse.Namespace], int] = args.func
    if sys.stdout is None:  # started with it closed (`>&-`): what it prints fails
        sys.stdout = _ClosedOutput()
    try:
        cli = Cli(args) if getattr(args, "needs_client", True) else None
        return func(cli, args)
    except WaveError as exc:
        try:  # (its JSON into a closed pipe was a traceback: a trial)
            _say_failure(exc, as_json, func is cmd_run)
        except OSError as unwritten:
            _output_failed(unwritten)
        return ERROR_EXIT
    except KeyboardInterrupt:
        return INTERRUPTED_EXIT
    except OSError as exc:
        return _output_failed(exc)


def _say_failure(exc: WaveError, as_json: bool, ran: bool) -> None:
    """A verb's failure: on stderr, or with ``--json`` as its one JSON value."""
    if as_json and ran:  # a whole result, as a refusal's (a trial's script read `exitCode`)
        from .models import BashResult

        failed = BashResult(success=False, message=exc.message, error=exc.message)
        _print_json(failed.to_json_dict())
    elif as_json:
        _print_json({"success": False, "error": exc.message})
    else:
        print(f"wave-bash: {exc.message}", file=sys.stderr)


def _output_failed(exc: OSError) -> int:
    """What could not be printed: the reader went away (`wave-bash schema | head -1`),
    quietly, 0; else (`> /dev/full`, `>&-`, or the like) said, not a traceback (notices
    stay unread), 2."""
    if isinstance(exc, BrokenPipeError):
        _quiet_stdout()
        return 0
    if sys.stderr is not None:
        with contextlib.suppress(OSError):
            print(f"wave-bash: {exc.strerror or exc}", file=sys.stderr)
    _quiet_stdout()
    return ERROR_EXIT


def _usable_standard_streams() -> None:
    """Standard input and error started closed (``<&-``, ``2>&-``) read from and write to
    /dev/null, their descriptors taken (one left free was the next file's: a socket),
    where ``sys.stderr`` was None: `run` died on its ``isatty``, and `mcp` printed its
    first line with ``print(file=None)``, to stdout, into the JSON-RPC stream (a trial).
    (Standard output stays closed: what is printed fails, said, ``_ClosedOutput``.) Text
    a stream's encoding cannot hold (``PYTHONIOENCODING=ascii``) is replaced, not a
    traceback with nothing printed."""
    for fd, name, mode in ((0, "stdin", "r"), (2, "stderr", "w")):
        if getattr(sys, name) is not None:
            continue
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDONLY if mode == "r" else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            setattr(
                sys, name, io.TextIOWrapper(io.FileIO(fd, mode, closefd=False), write_through=True)
            )
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="replace")


class _ClosedOutput(io.TextIOBase):
    """Standard output where there is none: writing fails as writing to a closed
    descriptor does, so that nothing counts as shown (a notice is then not confirmed)."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "cannot print: standard output is closed")

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "cannot print: standard output is closed")


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so Python's final flush has nowhere to fail."""
    if isinstance(sys.stdout, _ClosedOutput):
        sys.stdout = None
        return
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(leave_as(main()))
