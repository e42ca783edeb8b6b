"""``login_path``: probe the caller's login shell for its PATH on its behalf (SPEC E1)."""

from __future__ import annotations

import asyncio
import sys

from wave_bash.api.errors import InvalidInputError
from wave_bash.api.models import LoginPathResult
from wave_bash.api.protocol import LoginPathParams
from wave_bash.worker import probe_login_path, resolve_shell

from ..boundary import worker_errors
from ..context import Connection, Context

_probed: dict[tuple[str, str, str, str], str | None] = {}
"""Login PATHs already probed, by (shell, HOME, USER, PATH): a login profile is read once
per supervisor for each, however many hosts or remote bridges ask. (The PATH it starts
from counts: Debian's `/etc/profile` finds `id` on it to choose root's PATH, and the first
bridge's, broken, left every later call without `/usr/sbin`: a trial.)"""


async def handle(ctx: Context, p: LoginPathParams, conn: Connection) -> LoginPathResult:
    for name, value in p.env.items():  # as a command's environment must be
        if "=" in name or "\0" in name or "\0" in value or not _encodable(name + value):
            raise InvalidInputError(f"cannot pass this environment on: bad entry {name!r}")
    with worker_errors(ctx.layout.root):
        shell = resolve_shell(p.env)
    key = (shell.path, p.env.get("HOME", ""), p.env.get("USER", ""), p.env.get("PATH", ""))
    if _probed.get(key) is None:  # failures are tried again next time
        windows = sys.platform == "win32"  # Git Bash: -lic 'cygpath -pw "$PATH"'
        _probed[key] = await asyncio.to_thread(
            probe_login_path, shell.path, p.env, (p.timeout or 0) / 1000, windows
        )
    return LoginPathResult(path=_probed[key], shell=shell.path)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True
