"""``login_path``: probe the caller's login shell for its PATH on its behalf (SPEC E1)."""

from __future__ import annotations

import asyncio
import sys

from api.errors import ShellNotFoundError
from api.protocol import LoginPathParams
from worker import NoShellError, probe_login_path, resolve_shell

from ..context import Connection, Context


async def handle(ctx: Context, p: LoginPathParams, conn: Connection) -> dict[str, str | None]:
    try:
        shell = resolve_shell(p.env)
    except NoShellError as exc:
        raise ShellNotFoundError(str(exc)) from None
    windows = sys.platform == "win32"  # Git Bash: -lic 'cygpath -pw "$PATH"'
    path = await asyncio.to_thread(
        probe_login_path, shell.path, p.env, (p.timeout or 0) / 1000, windows
    )
    return {"path": path, "shell": shell.path}
