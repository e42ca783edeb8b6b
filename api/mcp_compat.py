"""The two major versions of the MCP SDK (1.21.1+ and 2.x) behind one small surface.

The rest of the MCP server is written against what both versions share:
``mcp.types`` (2.x mirrors ``mcp_types`` there), models built from their wire (camelCase)
names, ``mcp.server.stdio.stdio_server`` and ``Server.run``. What differs is here,
chosen once by the installed version:

- **Registering the tools**: 2.x takes ``on_list_tools``/``on_call_tool`` callbacks
  that get a request context. 1.x has decorators, but its ``call_tool`` passes only the
  name and arguments, checks the input against the schema first (its message would
  replace ours for bad input) and turns exceptions into tool results. So on 1.x our
  handlers go straight into ``request_handlers`` (where the decorators put theirs), and
  the context comes from ``Server.request_context``.
- **Progress**: 2.x ``ctx.session.report_progress`` (nothing is sent when the request
  carried no progress token); 1.x sends a progress notification to the request's
  token, when it has one.

The 1.x branch handles the SDK's objects as ``Any``, because mypy checks it against the
installed SDK, which is 2.x. With 1.x installed, ``.ci/typecheck --always-true MCP_V1``
checks the rest against 1.x.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp.types as types
from mcp.server.lowlevel import Server

MCP_V1 = version("mcp").split(".")[0] == "1"
"""The installed SDK is a 1.x release: 1.21.1 or later (structured content came in 1.10;
1.21.1 is the first that imports with current pydantic, whose private ``eval_type_backport``
earlier releases use)."""
try:
    WAVE_BASH_VERSION = version("wave-bash")
except PackageNotFoundError:  # (a checkout run without installing it)
    WAVE_BASH_VERSION = "unknown"
"""What ``initialize`` answers as ``serverInfo.version`` (it was empty)."""


@dataclass(frozen=True)
class ToolRequest:
    """What a tool handler needs of the request it answers."""

    id: types.RequestId | None
    report_progress: Callable[[float, str | None], Coroutine[Any, Any, None]]
    """Send progress (a value that increases with each call, and a message) to the
    client, if it asked for progress."""
    ask_user: Callable[[str], Coroutine[Any, Any, bool | None]]
    """Ask the host's user to approve something (an elicitation): True approved, False
    refused or dismissed, None when the client cannot ask (no elicitation support)."""


APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Run this command"}},
    "required": ["approve"],
}
"""The form of an approval: one yes/no."""


async def _ask(session: Any, request_id: Any, message: str) -> bool | None:
    capability = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    if not session.check_client_capability(capability):
        return None
    answer = await session.elicit(json_safe(message), APPROVAL_SCHEMA, request_id)
    content = answer.content or {}
    return bool(answer.action == "accept" and content.get("approve") is True)  # said, not assumed


ListTools = Callable[[], Awaitable[types.ListToolsResult]]
CallTool = Callable[[ToolRequest, types.CallToolRequestParams], Awaitable[types.CallToolResult]]


if not MCP_V1:
    from mcp.server.context import ServerRequestContext

    def build_server(
        name: str, instructions: str, list_tools: ListTools, call_tool: CallTool
    ) -> Server[Any]:
        """A low-level server whose only tools are ``list_tools``/``call_tool``."""

        async def on_list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return await list_tools()

        async def on_call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            async def report_progress(progress: float, message: str | None) -> None:
                await ctx.session.report_progress(progress, None, message)

            async def ask_user(message: str) -> bool | None:
                return await _ask(ctx.session, ctx.request_id, message)

            return await call_tool(ToolRequest(ctx.request_id, report_progress, ask_user), params)

        return Server(
            name,
            version=WAVE_BASH_VERSION,
            instructions=instructions,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
        )

else:

    def build_server(
        name: str, instructions: str, list_tools: ListTools, call_tool: CallTool
    ) -> Server[Any]:
        """A low-level server whose only tools are ``list_tools``/``call_tool``."""
        server: Server[Any] = Server(name, version=WAVE_BASH_VERSION, instructions=instructions)
        sdk: Any = server  # request_handlers, request_context: 1.x only
        v1: Any = types  # ServerResult, ListToolsRequest, CallToolRequest as 1.x has them

        async def on_list_tools(request: Any) -> Any:
            return v1.ServerResult(await list_tools())

        async def on_call_tool(request: Any) -> Any:
            ctx = sdk.request_context
            token = ctx.meta.progressToken if ctx.meta is not None else None

            async def report_progress(progress: float, message: str | None) -> None:
                if token is not None:
                    await ctx.session.send_progress_notification(
                        token, progress, None, message, related_request_id=ctx.request_id
                    )

            async def ask_user(message: str) -> bool | None:
                return await _ask(ctx.session, ctx.request_id, message)

            result = await call_tool(
                ToolRequest(ctx.request_id, report_progress, ask_user), request.params
            )
            return v1.ServerResult(result)

        sdk.request_handlers[v1.ListToolsRequest] = on_list_tools
        sdk.request_handlers[v1.CallToolRequest] = on_call_tool
        return server


def json_safe(value: Any) -> Any:
    """``value`` with each text that holds a surrogate written with backslash escapes
    (the bytes of a path that is no UTF-8, ``\\xff``): the SDK's JSON refuses a
    surrogate, and it dropped the answer unsaid, the host waiting for ever (a state dir
    named so; a review)."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            try:
                return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            except UnicodeEncodeError:
                return value.encode("utf-8", "backslashreplace").decode()
        return value
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value
