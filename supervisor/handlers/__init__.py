"""One handler per protocol verb (the pueue pattern); :data:`HANDLERS` maps verb → handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..context import Connection, Context
from . import gc, login_path, notifications, output, run, status, tasks

Handler = Callable[[Context, Any, Connection], Awaitable[Any]]

HANDLERS: dict[str, Handler] = {
    "run": run.handle,
    "attach": run.handle_attach,
    "status": status.handle_status,
    "shutdown": status.handle_shutdown,
    "login_path": login_path.handle,
    "stop": tasks.handle_stop,
    "stop_many": tasks.handle_stop_many,
    "background": tasks.handle_background,
    "wait": tasks.handle_wait,
    "tasks": tasks.handle_tasks,
    "output": output.handle,
    "notifications": notifications.handle_notifications,
    "ack": notifications.handle_ack,
    "announce": notifications.handle_announce,
    "claim": notifications.handle_claim,
    "release": notifications.handle_release,
    "gc": gc.handle,
}

__all__ = ["HANDLERS", "Handler"]
