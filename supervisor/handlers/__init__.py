"""One handler per request type (the pueue pattern): :data:`HANDLERS` maps each request
class of :data:`wave_bash.api.protocol.AnyRequest` to the coroutine that serves it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

from wave_bash.api import protocol as rq

from ..context import Connection, Context
from . import gc, login_path, notifications, output, run, status, tasks, terminal

Q = TypeVar("Q", bound=rq.Request[Any])
Handler = Callable[[Context, Any, Connection], Awaitable[Any]]


def _serves(
    kind: type[Q], handler: Callable[[Context, Q, Connection], Awaitable[Any]]
) -> tuple[type[rq.Request[Any]], Handler]:
    """An entry of :data:`HANDLERS`, type-checked: ``handler`` accepts ``kind``."""
    return kind, cast(Handler, handler)


HANDLERS: dict[type[rq.Request[Any]], Handler] = dict(
    [
        _serves(rq.RunRequest, run.handle),
        _serves(rq.AttachRequest, run.handle_attach),
        _serves(rq.StatusRequest, status.handle_status),
        _serves(rq.ShutdownRequest, status.handle_shutdown),
        _serves(rq.LoginPathRequest, login_path.handle),
        _serves(rq.StopRequest, tasks.handle_stop),
        _serves(rq.StopManyRequest, tasks.handle_stop_many),
        _serves(rq.BackgroundRequest, tasks.handle_background),
        _serves(rq.WaitRequest, tasks.handle_wait),
        _serves(rq.TasksRequest, tasks.handle_tasks),
        _serves(rq.OutputRequest, output.handle),
        _serves(rq.InputRequest, terminal.handle_input),
        _serves(rq.TerminalRequest, terminal.handle_terminal),
        _serves(rq.InterruptRequest, terminal.handle_interrupt),
        _serves(rq.NotificationsRequest, notifications.handle_notifications),
        _serves(rq.AckRequest, notifications.handle_ack),
        _serves(rq.AnnounceRequest, notifications.handle_announce),
        _serves(rq.UnreadRequest, output.handle_unread),
        _serves(rq.ClaimRequest, notifications.handle_claim),
        _serves(rq.ReleaseRequest, notifications.handle_release),
        _serves(rq.RelayRequest, notifications.handle_relay),
        _serves(rq.DeliveredRequest, notifications.handle_delivered),
        _serves(rq.GcRequest, gc.handle),
    ]
)

__all__ = ["HANDLERS", "Handler"]
