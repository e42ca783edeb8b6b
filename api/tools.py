"""Tool definitions for model providers (SPEC T1–T3, B3, B6), rendered from the constants.

The ceiling (``MAX_TIMEOUT_MS``) and the default (``DEFAULT_TIMEOUT_MS``) appear in the
tool description and in the ``timeout`` parameter description, both from one constant;
the schema itself carries no ``maximum`` because larger values are executed as given.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from .constants import (
    DEFAULT_TASK_INPUT_TIMEOUT_MS,
    DEFAULT_TASK_OUTPUT_TIMEOUT_MS,
    DEFAULT_TIMEOUT_MS,
    MAX_OUTPUT_CHARS,
    MAX_TIMEOUT_MS,
)
from .texts import format_seconds

ToolFormat = Literal["anthropic", "openai", "mcp"]

BASH_TOOL = "Bash"
TASK_OUTPUT_TOOL = "TaskOutput"
TASK_STOP_TOOL = "TaskStop"
TASK_INPUT_TOOL = "TaskInput"
TOOL_ALIASES = {
    "KillBash": TASK_STOP_TOOL,
    "KillShell": TASK_STOP_TOOL,
    "BashOutput": TASK_OUTPUT_TOOL,
}
"""Older tool names still accepted when a host calls them (Claude Code's before 2.1)."""


def _minutes(ms: int) -> str:
    minutes = ms / 60_000
    return f"{minutes:g} minute" + ("" if minutes == 1 else "s")


CEILING_TEXT = f"up to {MAX_TIMEOUT_MS}ms / {_minutes(MAX_TIMEOUT_MS)}"
DEFAULT_TEXT = f"{DEFAULT_TIMEOUT_MS}ms / {_minutes(DEFAULT_TIMEOUT_MS)}"

TIMEOUT_PARAMETER_TEXT = (
    f"Optional timeout in milliseconds ({CEILING_TEXT}). Default: {DEFAULT_TEXT}. "
    "When it passes, the command keeps running in the background and you get its task ID; "
    "a command that starts with `sleep` is terminated instead."
)

BASH_DESCRIPTION = f"""Executes a bash command in a fresh shell and returns its output.

- Each call starts a new shell: variables, functions and `cd` do not carry over.
- stdout and stderr are returned interleaved, with the exit code when it is not 0.
- Output above {MAX_OUTPUT_CHARS} characters keeps its head and tail; the full output stays \
in the file named in the result.
- You can specify an optional timeout in milliseconds ({CEILING_TEXT}). If you give none, \
the default is {DEFAULT_TEXT}. A command still running when its timeout passes is not \
killed: it moves to the background, you get its task ID and output file, and you will be \
notified when it completes. Commands starting with `sleep` are terminated instead.
- Set run_in_background to true for servers, watchers and long builds: the call returns at \
once with a task ID; no timeout applies. Read its output with TaskOutput (or the output file) \
and stop it with TaskStop.
- Set interactive to true for a command that asks questions (a prompt, a REPL, `git add \
-p`, a confirmation): it runs on a terminal, and when it waits for input the call returns \
at once with waitingForInput and its task ID; answer with TaskInput. Without it, commands \
read no input (stdin is /dev/null).
- Prefer dedicated tools (Read, Write, Grep) over cat, sed and grep where the host offers them.
- Write a clear description of 5-10 words for the people watching."""

TASK_OUTPUT_DESCRIPTION = f"""Returns the new output, status and exit code of a background task.

- Returns only the output written since your last TaskOutput call for that task.
- With block=true (the default) it waits until the task ends, the optional regex `pattern` \
matches new output, or `timeout` milliseconds pass (default \
{DEFAULT_TASK_OUTPUT_TIMEOUT_MS}ms / {format_seconds(DEFAULT_TASK_OUTPUT_TIMEOUT_MS)}s): \
no polling loop is needed.
- With block=false it returns at once."""

TASK_INPUT_DESCRIPTION = f"""Types input into an interactive command (started with \
interactive=true) and returns its new output.

- `input` is typed as is: end a line with \\n to press Enter; control characters work \
(\\u0003 is Ctrl+C, \\u0004 is Ctrl+D, \\u001b is Escape).
- Returns as soon as the command waits for input again or ends, or after `timeout` \
milliseconds (default {DEFAULT_TASK_INPUT_TIMEOUT_MS}ms), with status, exit code, new \
output and waitingForInput."""

TASK_STOP_DESCRIPTION = """Stops a running background task and every process it started.

- Sends SIGTERM to the task's process group and its escaped descendants, then SIGKILL after \
a grace period. Afterwards no process of the task remains.
- Takes the task ID returned by Bash (`shell_id` is accepted as an older name)."""


def _bash_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command to execute"},
            "timeout": {"type": "number", "description": TIMEOUT_PARAMETER_TEXT},
            "description": {
                "type": "string",
                "description": "Clear, concise description of what this command does in 5-10 words",
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Set to true to run this command in the background. "
                "Use TaskOutput to read the output later.",
            },
            "interactive": {
                "type": "boolean",
                "description": "Set to true to run this command on a terminal and answer its "
                "prompts with TaskInput (default false: no input)",
            },
        },
        "required": ["command"],
    }


def _task_output_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "description": "The ID of the background task"},
            "block": {
                "type": "boolean",
                "description": "Wait for the task to end, the pattern or the timeout (default true)",
            },
            "timeout": {
                "type": "number",
                "description": "Longest wait in milliseconds when blocking "
                f"(default {DEFAULT_TASK_OUTPUT_TIMEOUT_MS})",
            },
            "pattern": {
                "type": "string",
                "description": "Regular expression, RE2 syntax (no backreferences or lookaround; ^ and $ match at each line): stop waiting once new output matches it",
            },
        },
        "required": ["task_id"],
    }


def _task_input_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "description": "The ID of the interactive task"},
            "input": {
                "type": "string",
                "description": "Text to type; \\n presses Enter, \\u0003 is Ctrl+C, \\u0004 is Ctrl+D",
            },
            "timeout": {
                "type": "number",
                "description": "Longest wait in milliseconds for the command to wait for input "
                f"again or end (default {DEFAULT_TASK_INPUT_TIMEOUT_MS})",
            },
        },
        "required": ["task_id", "input"],
    }


def _task_stop_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "task_id": {"type": "string", "description": "The ID of the task to stop"},
        },
        "required": ["task_id"],  # the older `shell_id` is still accepted, not advertised
    }


_TOOLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (BASH_TOOL, BASH_DESCRIPTION, _bash_schema()),
    (TASK_OUTPUT_TOOL, TASK_OUTPUT_DESCRIPTION, _task_output_schema()),
    (TASK_STOP_TOOL, TASK_STOP_DESCRIPTION, _task_stop_schema()),
    (TASK_INPUT_TOOL, TASK_INPUT_DESCRIPTION, _task_input_schema()),
)


FRESH_SHELL_LINE = (
    "- Each call starts a new shell: variables, functions and `cd` do not carry over."
)
FOLLOW_CD_LINE = (
    "- Each call starts a new shell, in the directory where the previous command ended: a "
    "`cd` carries over to the next call; variables and functions do not."
)


def tool_definitions(
    format: ToolFormat = "anthropic", *, follow_cd: bool = False
) -> list[dict[str, Any]]:
    """The Bash, TaskOutput, TaskStop and TaskInput tool definitions in a provider's format.

    Args:
        format: ``"anthropic"`` (``input_schema``), ``"openai"`` (function tools with
            ``parameters``) or ``"mcp"`` (``inputSchema``).
        follow_cd: the host starts each command where the previous one ended (the
            Bash description then says that ``cd`` carries over).

    Returns:
        A fresh list of plain dicts, safe to modify.
    """
    tools = []
    for name, description, schema in _TOOLS:
        # (no other field is taken, T6: a host that checks or constrains a model's call
        # by its schema knows it; ignored, `background: true` ran in the foreground)
        schema = {**copy.deepcopy(schema), "additionalProperties": False}
        if follow_cd and name == BASH_TOOL:
            description = description.replace(FRESH_SHELL_LINE, FOLLOW_CD_LINE)
        if format == "anthropic":
            tools.append({"name": name, "description": description, "input_schema": schema})
        elif format == "openai":
            tools.append(
                {
                    "type": "function",
                    "function": {"name": name, "description": description, "parameters": schema},
                }
            )
        elif format == "mcp":
            tools.append({"name": name, "description": description, "inputSchema": schema})
        else:
            raise ValueError(f"unknown tool format {format!r}: use anthropic, openai or mcp")
    return tools
