"""The ``wave-bash`` command line (SPEC I2).

Exit codes: ``run`` exits with the command's own exit code (0 when it moved to the
background); every error of wave-bash itself exits 2 with the message on stderr, or
``{"success": false, "error": ...}`` on stdout with ``--json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .client import Client
from .display import LiveView, task_table
from .errors import InvalidInputError, SupervisorUnavailableError, WaveError
from .models import BashResult, check_timeout_ms
from .tools import tool_definitions
from .units import parse_duration

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


def cmd_run(client: Client, args: argparse.Namespace) -> int:
    command = " ".join(args.command) if len(args.command) != 1 else args.command[0]
    if args.cwd:
        client.cwd = os.path.abspath(args.cwd)
    timeout = _timeout_arg(args.timeout) if args.timeout is not None else None
    interactive = (
        sys.stderr.isatty() and sys.stdin.isatty() and not args.json and sys.platform != "win32"
    )  # the key watcher needs termios
    running: list[str] = []  # the task ID, once the supervisor started it

    def background_it() -> None:
        if running:
            client.background(running[0])

    with contextlib.ExitStack() as terminal:
        live = None
        if interactive:
            live = LiveView()
            terminal.callback(live.clear)
            from .keys import CtrlBWatcher  # POSIX terminals only

            terminal.enter_context(CtrlBWatcher(background_it))
        result = client.bash(
            command,
            timeout=timeout,
            run_in_background=args.background,
            description=args.description,
            on_progress=live.show if live else None,
            on_start=running.append if interactive else None,
        )
    return _report_run(result, args.json, client.remote)


def _report_run(result: BashResult, as_json: bool, remote: object = None) -> int:
    if result.error is not None:
        raise InvalidInputError(result.error)
    if as_json:
        _print_json(result.to_json_dict())
    elif result.background_task_id or result.interrupted:
        if result.stdout:
            print(result.stdout)
        print(result.message.removeprefix(result.stdout).lstrip("\n"), file=sys.stderr)
        if remote is not None:
            print(f"(the output file is on {remote})", file=sys.stderr)
    elif result.stdout:
        print(result.stdout)
    if result.background_task_id or result.interrupted:
        return 0
    return result.exit_code if result.exit_code is not None else 1


def cmd_schema(client: Client | None, args: argparse.Namespace) -> int:
    _print_json(tool_definitions(args.format))
    return 0


def cmd_bridge(client: Client | None, args: argparse.Namespace) -> int:
    from .bridge import main as serve_bridge

    return serve_bridge(args.state_dir)


def cmd_mcp(client: Client | None, args: argparse.Namespace) -> int:
    from .mcp_server import main as serve_mcp  # the SDK is imported only when serving MCP

    remote = {
        "remote": args.remote,
        "ssh_options": [arg for opt in args.ssh_option for arg in shlex.split(opt)],
        "remote_command": args.remote_command,
    }
    return serve_mcp(args.state_dir, args.mcp_session or args.session, args.follow_cd, remote)


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
    except SupervisorUnavailableError:
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
        if status.held_writes:
            print(
                f"{status.held_writes} journal write(s) held in memory: "
                f"{status.storage_problem} (written once the disk takes them)"
            )
    return 0


def cmd_tasks(client: Client, args: argparse.Namespace) -> int:
    records = client.tasks(all=args.all)
    if args.json:
        _print_json([r.to_json_dict() for r in records])
    elif records:
        print(task_table(records))
    else:
        print("no tasks")
    return 0


def cmd_output(client: Client, args: argparse.Namespace) -> int:
    if not args.follow:
        out = client.task_output(args.id, block=False, offset=0)
        if args.json:
            _print_json(out.to_json_dict())
        elif out.output:
            print(out.output)
        return 0
    offset = 0
    while True:  # each call is a real wait on the supervisor: until output, end or timeout
        out = client.task_output(
            args.id, block=True, timeout=30_000, pattern=r"[\s\S]", offset=offset
        )
        if out.output:
            print(out.output, flush=True)
        offset = out.next_offset or offset
        if out.status.ended:
            if args.json:
                _print_json(out.to_json_dict())
            return 0


def cmd_wait(client: Client, args: argparse.Namespace) -> int:
    timeout = _timeout_arg(args.timeout) if args.timeout is not None else None
    record = client.wait(args.id, timeout=timeout)
    if args.json:
        _print_json(record.to_json_dict())
    else:
        code = "" if record.exit_code is None else f" (exit code {record.exit_code})"
        print(f"{record.id} {record.status}{code}")
    return 0


def cmd_stop(client: Client, args: argparse.Namespace) -> int:
    if len(args.id) == 1:
        records = [client.task_stop(args.id[0])]
    else:
        records = client.task_stop_many(args.id)
    if args.json:
        _print_json(
            records[0].to_json_dict() if len(records) == 1 else [r.to_json_dict() for r in records]
        )
    else:
        for record in records:
            print(f"{record.id} {record.status}")
    return 0


def cmd_bg(client: Client, args: argparse.Namespace) -> int:
    record = client.background(args.id)
    print(f"{record.id} moved to the background; output: {record.output_path}")
    return 0


def cmd_gc(client: Client, args: argparse.Namespace) -> int:
    older_than = parse_duration(args.older_than) if args.older_than is not None else None
    removed = client.gc(older_than)
    if args.json:
        _print_json({"removed": removed})
    else:
        print(f"removed {len(removed)} finished task(s)")
    return 0


def cmd_notifications(client: Client, args: argparse.Namespace) -> int:
    notices = client.notifications()
    if args.json:
        _print_json([n.to_json_dict() for n in notices])
    else:
        for notice in notices:
            print(notice.message)
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
    parser.add_argument(
        "--remote",
        default=os.environ.get("WAVE_REMOTE"),
        help="ssh://[user@]host[:port]: drive the supervisor on that machine",
    )
    parser.add_argument(
        "--ssh-option",
        action="append",
        default=[],
        metavar="ARG",
        help="extra ssh arguments, e.g. --ssh-option='-i ~/.ssh/devbox'",
    )
    parser.add_argument(
        "--remote-command",
        default=os.environ.get("WAVE_REMOTE_COMMAND"),
        help="how to run wave-bash on the remote (default: wave-bash)",
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

    tasks = _verb(sub, "tasks", cmd_tasks, "list tasks of this session (--all: every session)")
    tasks.add_argument("--all", action="store_true")
    output = _verb(
        sub, "output", cmd_output, "print a task's output (--follow: until it ends)", ids="1"
    )
    output.add_argument("--follow", "-f", action="store_true")
    wait = _verb(sub, "wait", cmd_wait, "wait until a task ends", ids="1")
    wait.add_argument("--timeout", help="longest wait in ms")
    _verb(sub, "stop", cmd_stop, "stop tasks and all their processes", ids="+")
    _verb(
        sub,
        "bg",
        cmd_bg,
        "move a running foreground command to the background",
        ids="1",
        json=False,
    )
    bridge = sub.add_parser(
        "bridge", help="serve one request from stdin (ssh HOST wave-bash bridge)"
    )
    bridge.set_defaults(func=cmd_bridge, needs_client=False)
    mcp = sub.add_parser("mcp", help="serve the Bash, TaskOutput and TaskStop tools over MCP stdio")
    mcp.add_argument(
        "--session", dest="mcp_session", help="agent session (default: WAVE_SESSION or new)"
    )
    mcp.add_argument(
        "--follow-cd", action="store_true", help="start each command where the last ended"
    )
    mcp.set_defaults(func=cmd_mcp, needs_client=False)
    gc = _verb(
        sub, "gc", cmd_gc, "prune finished tasks and their logs (default age: WAVE_RETENTION, 7d)"
    )
    gc.add_argument("--older-than", help="age such as 45s, 30m, 12h, 7d")
    _verb(sub, "notifications", cmd_notifications, "completion notices of this session (once each)")

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
            client = Client(
                state_dir=args.state_dir, session=args.session, remote=args.remote,
                ssh_options=[arg for opt in args.ssh_option for arg in shlex.split(opt)],
                remote_command=args.remote_command,
            )  # fmt: skip
        return func(client, args)
    except WaveError as exc:
        if as_json:
            _print_json({"success": False, "error": exc.message})
        else:
            print(f"wave-bash: {exc.message}", file=sys.stderr)
        return ERROR_EXIT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`wave-bash schema | head -1`)
        _quiet_stdout()
        return 0


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so Python's final flush has nowhere to fail."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
