"""``wave-bash mcp``: the Bash, TaskOutput and TaskStop tools over MCP stdio (SPEC I3).

Built on the official SDK's low-level ``Server`` so the tools' input schemas are exactly
:func:`api.tool_definitions` (``format="mcp"``), not a second hand-written copy. Each tool
call runs the blocking :class:`Client` in a worker thread; progress flows back through
the SDK from that thread.
"""

from __future__ import annotations

import functools
import secrets
import sys
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .client import Client, inject_login_path
from .errors import WaveError
from .models import Progress
from .texts import tool_result_text
from .tools import BASH_TOOL, TOOL_ALIASES, tool_definitions

SERVER_NAME = "wave-bash"


def default_session() -> str:
    """A fresh agent-session name; reuse it (``--session``) to reattach after a restart."""
    return f"mcp-{secrets.token_hex(4)}"


def _text_result(text: str, data: dict[str, Any] | None, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=data,
        is_error=is_error,
    )


class WaveMcp:
    """The tool handlers of one MCP server process, bound to one agent session."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool.model_validate(t) for t in tool_definitions("mcp")]
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = TOOL_ALIASES.get(params.name, params.name)
        arguments = dict(params.arguments or {})
        on_progress = self._progress_reporter(ctx) if name == BASH_TOOL else None
        call = functools.partial(self.client.call_tool, name, arguments, on_progress=on_progress)
        try:
            data = await anyio.to_thread.run_sync(call)
        except WaveError as exc:
            return _text_result(self._with_notices(exc.message), None, True)
        success = bool(data.get("success", True))
        return _text_result(self._with_notices(tool_result_text(name, data)), data, not success)

    def _progress_reporter(self, ctx: ServerRequestContext[Any]) -> Any:
        """A callback for the client thread that sends MCP progress (message = shortResult)."""
        count = 0

        def report(update: Progress) -> None:
            nonlocal count
            count += 1  # progress must increase with every notification
            anyio.from_thread.run(
                functools.partial(
                    ctx.session.report_progress, float(count), None, update.short_result
                )
            )

        return report

    def _with_notices(self, text: str) -> str:
        """Append this session's pending completion notices (then acknowledged)."""
        try:
            notices = self.client.notifications()
        except WaveError:
            return text
        if not notices:
            return text
        lines = "\n".join(n.message for n in notices)
        return f"{text}\n\n{lines}" if text else lines


def build_server(client: Client) -> Server[Any]:
    """The MCP server object for one agent session (usable with any SDK transport)."""
    handlers = WaveMcp(client)
    return Server(
        SERVER_NAME,
        instructions="Run shell commands that survive their timeout; see the Bash tool.",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )


async def _serve(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(
    state_dir: str | None,
    session: str | None,
    follow_cd: bool,
    remote: dict[str, Any] | None = None,
) -> int:
    """Serve MCP on stdin/stdout until the client closes the connection."""
    session = session or default_session()
    print(
        f"wave-bash mcp: agent session {session} (reuse it with --session to reattach)",
        file=sys.stderr,
    )
    client = Client(state_dir=state_dir, session=session, follow_cd=follow_cd, **(remote or {}))
    if client.remote is None:  # a remote bridge gives commands the remote login PATH
        inject_login_path(client)  # once per host: every command inherits it (SPEC E1)
    anyio.run(_serve, build_server(client))
    return 0
