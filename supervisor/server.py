"""The socket server: peer check, requests one after another on a connection, dispatch to a
handler."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import re
import secrets
import time
from collections.abc import Coroutine
from typing import Any

from pydantic import BaseModel

from wave_bash.api.errors import BusyError, ProtocolError, StorageError, WaveError
from wave_bash.api.protocol import RECEIPT_PATTERN, parse_request
from wave_bash.api.transport import HANDSHAKE_LIMIT, handshake_proof, peer_uid
from wave_bash.api.wire import PROTOCOL_VERSION, decode, error_message

from .context import Connection, Context
from .faults import crash_point
from .handlers import HANDLERS
from .journal import storage_problem
from .recovery import journal_damaged, mark_damaged
from .relays import give_back_result

EXIT_JOURNAL_DAMAGED = 75
"""A supervisor's exit status where it found its journal damaged as it ran (EX_TEMPFAIL:
the next start rebuilds it)."""

log = logging.getLogger(__name__)


REFUSAL_LINGER_SECONDS = 2.0  # how long a refused peer may keep sending before we close


HANDSHAKE_SECONDS = 2.0
"""How long a TCP peer may take to show the token (a client of ours takes milliseconds)."""

MAX_NOT_LET_IN = 64
"""Connections at most whose peer has not been let in (a TCP peer yet to show the token,
a refused one lingering): a new one lets the oldest go. Uncounted, another user's
connections to a TCP supervisor used up its descriptors, and its own commands failed
to start (a review); the oldest goes, not the new one, so that such connections cannot
keep a client of ours out, which shows the token within a millisecond."""


def _peer_uid(conn: Connection) -> int | None:
    """The uid of a Unix socket's peer, from the kernel (SO_PEERCRED); None if unknown."""
    sock = conn.writer.get_extra_info("socket")
    try:
        return peer_uid(sock) if sock is not None else None
    except OSError:  # (gone already)
        return None


async def _peer_allowed(ctx: Context, conn: Connection) -> bool:
    """Unix socket: the peer runs as our uid (SPEC X1), which :func:`accept_connection`
    lets in as it comes: one that comes here is refused. TCP: it presents the token."""
    if ctx.token is None:
        reason = f"connection from uid {_peer_uid(conn)} refused"
    else:  # the handshake of api.transport.tcp_handshake, the listener's side
        try:
            hello = decode(await conn.read_line(None, HANDSHAKE_LIMIT))
            nonce = secrets.token_hex(16)
            proof = handshake_proof(ctx.token, "server", str(hello.get("hello", "")))
            conn.send_now({"proof": proof, "nonce": nonce})
            answer = decode(await conn.read_line(None, HANDSHAKE_LIMIT))
        except (ProtocolError, ValueError, ConnectionError):
            answer = {}
        expected = handshake_proof(ctx.token, "client", nonce) if answer else ""
        if answer and hmac.compare_digest(str(answer.get("proof", "")), expected):
            return True
        if conn not in ctx.not_let_in:  # let go for a newer one: closed, nothing to say
            return False
        reason = "connection without the supervisor's token refused"
    log.warning(reason)
    await conn.send(error_message("forbidden", reason))
    await _linger(conn)
    return False


def accept_connection(
    ctx: Context, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> Coroutine[Any, Any, None]:
    """A connection as it is accepted, before its handler runs (a burst is accepted
    whole first, each holding a descriptor): a Unix peer of our uid is let in at once;
    any other is counted among those not let in, the oldest of them let go beyond
    :data:`MAX_NOT_LET_IN`. Returns what serves it."""
    conn = Connection(reader, writer)
    if ctx.token is None and _peer_uid(conn) == os.getuid():
        conn.let_in = True
    else:
        if len(ctx.not_let_in) >= MAX_NOT_LET_IN:
            oldest = next(iter(ctx.not_let_in))
            del ctx.not_let_in[oldest]
            oldest.writer.transport.abort()  # (its reads end: refused, with no lingering)
        ctx.not_let_in[conn] = None
    return serve_connection(ctx, conn)


async def _let_in(ctx: Context, conn: Connection) -> bool:
    """Whether the peer may be served (:func:`_peer_allowed`); one let go meanwhile
    (:func:`accept_connection`) is not."""
    if conn.let_in:
        return True
    if conn not in ctx.not_let_in:
        return False
    try:  # (TCP: a peer that has not shown the token within a moment is let go)
        async with asyncio.timeout(HANDSHAKE_SECONDS if ctx.token else None):
            return await _peer_allowed(ctx, conn)
    except TimeoutError:
        raise ProtocolError(f"no handshake within {HANDSHAKE_SECONDS:g}s") from None
    finally:
        ctx.not_let_in.pop(conn, None)


async def _linger(conn: Connection) -> None:
    """Close our side, then absorb what the peer still sends until it closes (bounded).

    Closing with its request unread would break the peer's send (EPIPE) or reset the
    connection before it reads the answer, and it would never learn why it was refused.
    """
    with contextlib.suppress(OSError, asyncio.TimeoutError):
        if conn.writer.can_write_eof():
            conn.writer.write_eof()
        async with asyncio.timeout(REFUSAL_LINGER_SECONDS):
            while await conn.reader.read(65536):
                pass


def _receipt(value: object) -> str | None:
    """A request's ``receipt`` (a relay's, :mod:`.relays`), checked."""
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(RECEIPT_PATTERN, value):
        raise ProtocolError(f"a receipt is RELAY:N in lowercase hex, not {value!r:.80}")
    return value


def to_wire(result: Any) -> Any:
    """A handler's return value as JSON-ready data (camelCase for contract models)."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True)
    if isinstance(result, list):
        return [to_wire(item) for item in result]
    return result


KEPT_OPEN_SECONDS = 15.0
"""How long a connection waits for its next request before it is closed: a client reuses
one it has kept for 5 s at most (``api.connection.KEEP_SECONDS``), so it never sends on
one being closed."""


async def serve_connection(ctx: Context, conn: Connection) -> None:
    """Answer the requests of one connection, one after another: a client keeps its
    connection between calls (connecting and accepting took a quarter of a quick call).
    Waiting for its next request, a connection counts neither as activity (the idle
    exit) nor towards the cap; its next request is let in as a new connection's."""
    writer = conn.writer
    ctx.active_connections += 1
    served = kept = False
    try:
        if not await _let_in(ctx, conn):
            return
        while True:
            # Only peers let in count towards the cap: another user's idle connections to
            # a TCP supervisor filled it, and its own clients were turned away (a review).
            ctx.served_connections += 1
            served = True
            if ctx.served_connections > ctx.max_connections:
                raise BusyError(
                    f"the supervisor is serving {ctx.max_connections} connections already; "
                    "try again shortly"
                )
            try:
                async with asyncio.timeout(ctx.settings.request_timeout):
                    line = await conn.read_line(ctx.request_budget)
            except TimeoutError:
                raise ProtocolError(
                    f"no complete request within {ctx.settings.request_timeout:g}s"
                ) from None
            if not line:
                return
            lines = [line]
            del line  # (handed over: no frame keeps a waiting request's bytes)
            may_keep = ctx.kept_connections < ctx.max_connections  # (their descriptors)
            if not await _answer(ctx, conn, lines, may_keep):
                return
            ctx.active_connections -= 1
            ctx.served_connections -= 1
            ctx.kept_connections += 1
            served, kept = False, True
            try:
                async with asyncio.timeout(KEPT_OPEN_SECONDS):
                    asked = await conn.wait_for_request()
            except TimeoutError:
                asked = False
            finally:
                ctx.kept_connections -= 1
            if not asked or ctx.stop_event.is_set():  # (a stopping one: the client sends
                return  # it again, to the next supervisor)
            ctx.active_connections += 1
            kept = False
    except WaveError as exc:
        await conn.send(error_message(exc.code, exc.message, exc.task_id))
    except asyncio.CancelledError:  # the supervisor stopping: its handlers end quietly,
        return  # where Python 3.11's streams log each one cancelled as an error
    finally:
        ctx.served_connections -= served
        if not kept:  # (one that waited for a next request in vain was no activity)
            ctx.active_connections -= 1
            ctx.last_activity = time.monotonic()
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


ACTS_ON_TASKS = frozenset(
    {"run", "input", "terminal", "interrupt", "background", "stop", "stop_many"}
)
"""Requests that act on tasks: one whose caller gave up and hung up before it was read
(a supervisor stopped, then continued) does nothing (CR3): a caller told it failed may
send it again, and its keys were typed twice, a trial."""


async def _answer(ctx: Context, conn: Connection, lines: list[bytes], may_keep: bool) -> bool:
    """Answer the request line ``lines`` holds (taken out of it); returns whether the
    connection carries another (the request asked for that, and ``may_keep``)."""
    watcher: asyncio.Task[None] | None = None
    keep = False
    try:
        message = decode(lines.pop())
        wants_more = message.pop("keep", None) is True and may_keep  # (PR1)
        receipt = _receipt(message.pop("receipt", None))
        version = message.get("v")
        if type(version) is not int:  # (not a client of another version: its advice was
            raise ProtocolError(  # to restart the supervisor, a trial)
                f"a request needs its protocol version as an integer `v` ({PROTOCOL_VERSION})"
            )
        if version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"protocol version {version!r} is not supported: this supervisor "
                f"speaks version {PROTOCOL_VERSION} (restart it with `wave-bash supervisor stop`)"
            )
        params = parse_request(message)
        if message.get("op") in ACTS_ON_TASKS and conn.hung_up():  # (nobody learns it)
            log.warning("a %s request's caller hung up before it was read: not done", message["op"])
            return False
        handler = HANDLERS[type(params)]
        del message  # only the parsed request stays while the handler waits
        watcher = conn.watch_for_close()
        result = await handler(ctx, params, conn)
        watcher.cancel()  # (before the answer: what the peer sends next is its next request)
        crash_point("before_reply")
        wanted = result is not None or not conn.closed.done()
        keep = wants_more and not conn.interrupted and not conn.closed.done()
        held = receipt is not None and bool(conn.give_back) and ctx.relays.present(receipt)
        answer = {
            "type": "result", "data": to_wire(result),
            **({"keep": True} if keep else {}), **({"held": True} if held else {}),
        }  # fmt: skip
        sent = wanted and await conn.send(answer)
        if wanted and not sent:  # its caller gone (a foreground end, taken as shown, never
            give_back_result(conn.give_back)  # went out: no notice said it, a trial with a
            # stopped supervisor), what it took is given back (ND6)
        if sent and conn.after_reply is not None:
            conn.after_reply()
        if sent and held and receipt is not None:  # (its relay confirms it passed on)
            ctx.relays.hold(receipt, conn.give_back)
        keep = keep and sent
    except WaveError as exc:  # (then closed, as the client closes it after an error)
        await conn.send(error_message(exc.code, exc.message, exc.task_id))
    except Exception as exc:  # a bug must not take the supervisor down
        problem = storage_problem(exc)
        if journal_damaged(exc):  # (every call failed as "internal" until a restart: a
            log.error(  # review) the next supervisor quarantines it and rebuilds the index
                "the journal is damaged (%s): exiting so that the next start rebuilds it from "
                "the task files; the calls cut are sent again, the tasks re-adopted",
                exc,
            )
            mark_damaged(ctx.layout, exc)
            logging.shutdown()
            os._exit(EXIT_JOURNAL_DAMAGED)
        if problem is not None:  # a full or read-only disk is no bug: say so
            text = f"{problem} in the state dir {ctx.layout.root}"
            await conn.send(error_message(StorageError.code, text))
        else:
            log.exception("request failed")
            said = str(exc) or type(exc).__name__  # (a MemoryError says nothing: a review)
            await conn.send(error_message("internal", f"internal supervisor error: {said}"))
    finally:
        if watcher is not None:  # (gone before the next read: one reader at a time)
            watcher.cancel()
            await asyncio.wait([watcher])
        conn.after_reply = None
        conn.give_back = []
        for done in conn.after_answer:
            done()
        conn.after_answer.clear()
        ctx.last_activity = time.monotonic()
        try:  # after the reply: no caller waits for these writes and process starts
            crash_point("after_reply")  # (the reply's own writes not committed yet)
            ctx.tasks.after_replies()  # (first: what it records goes in the same commit)
            ctx.journal.write_deferred()
            if not ctx.stop_event.is_set():
                ctx.tasks.refill_standby()
        except Exception:  # only speed is lost
            log.debug("no standby monitor", exc_info=True)
    return keep
