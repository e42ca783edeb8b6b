"""One handler per protocol verb (the pueue pattern); :data:`HANDLERS` maps verb → handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..context import Connection, Context
from . import login_path, run, status

Handler = Callable[[Context, Any, Connection], Awaitable[Any]]

HANDLERS: dict[str, Handler] = {
    "run": run.handle,
    "status": status.handle_status,
    "shutdown": status.handle_shutdown,
    "login_path": login_path.handle,
}

__all__ = ["HANDLERS", "Handler"]
