"""The ``wave-bash`` command line (SPEC I2).

Exit codes: ``run`` exits with the command's own exit code (0 when it moved to the
background); every error of wave-bash itself exits 2 with the message on stderr, or
``{"success": false, "error": ...}`` on stdout with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .client import Client
from .errors import InvalidInputError, WaveError
from .models import BashResult, Progress, check_timeout_ms
from .tools import tool_definitions

ERROR_EXIT = 2


def _timeout_arg(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        raise InvalidInputError(
            f"timeout must be a non-negative number of milliseconds, got {text!r}"
        ) from None
    return check_timeout_ms(value)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


class LiveView:
    """The last lines of a running command, redrawn in place on a terminal's stderr."""

    def __init__(self) -> None:
        self.lines = 0

    def show(self, update: Progress) -> None:
        self.clear()
        width = os.get_terminal_size(sys.stderr.fileno()).columns
        lines = [line[: width - 1] for line in update.short_result.splitlines()]
        status = f"… running {update.elapsed_ms // 1000}s ({update.task_id}, Ctrl+B to background)"
        sys.stderr.write("\n".join([*lines, status]) + "\n")
        sys.stderr.flush()
        self.lines = len(lines) + 1

    def clear(self) -> None:
        if self.lines:
            sys.stderr.write("\x1b[1A\x1b[2K" * self.lines)
            sys.stderr.flush()
            self.lines = 0


def cmd_run(client: Client, args: argparse.Namespace) -> int:
    command = " ".join(args.command) if len(args.command) != 1 else args.command[0]
    if args.cwd:
        client.cwd = os.path.abspath(args.cwd)
    timeout = _timeout_arg(args.timeout) if args.timeout is not None else None
    live = LiveView() if sys.stderr.isatty() and not args.json else None
    try:
        result = client.bash(
            command,
            timeout=timeout,
            run_in_background=args.background,
            description=args.description,
            on_progress=live.show if live else None,
        )
    finally:
        if live:
            live.clear()
    return _report_run(result, args.json)


def _report_run(result: BashResult, as_json: bool) -> int:
    if result.error is not None:
        raise InvalidInputError(result.error)
    if as_json:
        _print_json(result.to_json_dict())
    elif result.background_task_id or result.interrupted:
        if result.stdout:
            print(result.stdout)
        print(result.message.removeprefix(result.stdout).lstrip("\n"), file=sys.stderr)
    elif result.stdout:
        print(result.stdout)
    if result.background_task_id or result.interrupted:
        return 0
    return result.exit_code if result.exit_code is not None else 1


def cmd_schema(client: Client | None, args: argparse.Namespace) -> int:
    _print_json(tool_definitions(args.format))
    return 0


def cmd_supervisor(client: Client, args: argparse.Namespace) -> int:
    if args.action == "stop":
        stopped = client.shutdown()
        if args.json:
            _print_json({"running": False, "stopped": stopped})
        else:
            print("supervisor stopped" if stopped else "no supervisor was running")
        return 0
    if args.action == "status":
        client.autostart = False
    try:
        status = client.status()
    except WaveError:
        if args.action == "start":
            raise
        if args.json:
            _print_json({"running": False, "stateDir": str(client.layout.root)})
        else:
            print(f"no supervisor is running for {client.layout.root}")
        return 0
    if args.json:
        _print_json(status.to_json_dict())
    else:
        print(
            f"supervisor pid {status.pid} serving {status.socket_path}\n"
            f"state dir {status.state_dir}, {status.running_tasks} running task(s), "
            f"protocol {status.protocol_version}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wave-bash",
        description="Run shell commands through a supervisor that keeps them alive.",
    )
    parser.add_argument(
        "--state-dir", default=os.environ.get("WAVE_STATE_DIR"), help="state directory"
    )
    parser.add_argument(
        "--session", default=os.environ.get("WAVE_SESSION"), help="agent session name"
    )
    sub = parser.add_subparsers(dest="verb", required=True)

    run = sub.add_parser("run", help="run a command (foreground unless --background)")
    run.add_argument("--timeout", help="foreground timeout in ms (default 120000)")
    run.add_argument("--background", action="store_true", help="start in the background")
    run.add_argument("--cwd", help="directory to run in (default: here)")
    run.add_argument("--description", help="what the command does, for people")
    run.add_argument("--json", action="store_true", help="print the result as one JSON object")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND...")
    run.set_defaults(func=cmd_run)

    schema = sub.add_parser("schema", help="print the tool definitions")
    schema.add_argument("--format", choices=["anthropic", "openai", "mcp"], default="anthropic")
    schema.set_defaults(func=cmd_schema, needs_client=False)

    sup = sub.add_parser("supervisor", help="start, stop or inspect the supervisor")
    sup.add_argument("action", choices=["start", "stop", "status"])
    sup.add_argument("--json", action="store_true")
    sup.set_defaults(func=cmd_supervisor)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb == "run":
        if args.command and args.command[0] == "--":
            args.command = args.command[1:]
        if not args.command:
            parser.error("run needs a command: wave-bash run -- COMMAND...")
    as_json = getattr(args, "json", False)
    func: Callable[[Any, argparse.Namespace], int] = args.func
    try:
        client = None
        if getattr(args, "needs_client", True):
            client = Client(state_dir=args.state_dir, session=args.session)
        return func(client, args)
    except WaveError as exc:
        if as_json:
            _print_json({"success": False, "error": exc.message})
        else:
            print(f"wave-bash: {exc.message}", file=sys.stderr)
        return ERROR_EXIT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
