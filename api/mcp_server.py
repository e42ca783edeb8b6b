"""``wave-bash mcp``: the Bash, TaskOutput, TaskStop and TaskInput tools over MCP stdio (SPEC I3).

Built on the official SDK's low-level ``Server`` so the tools' input schemas are exactly
:func:`api.tool_definitions` (``format="mcp"``), not a second hand-written copy. Each tool
call runs the blocking :class:`Client` in a worker thread; progress flows back through
the SDK from that thread. Works with the SDK's 1.x (1.10+) and 2.x releases: what differs
between them is in :mod:`.mcp_compat`.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import io
import itertools
import json
import os
import queue
import re
import secrets
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp.types as types
import pydantic_core
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from . import mcp_compat, texts
from .calls import CallScope
from .client import Client, inject_login_path
from .errors import CallAbandonedError, SupervisorUnavailableError, WaveError
from .models import BashResult, Notice, NoticeClaim, Progress
from .protocol import check_session
from .relay import Presence
from .texts import (
    cancelled_still_running_text,
    more_notices_text,
    notices_waiting_text,
    remote_paths_text,
    tool_result_text,
)
from .tools import (
    BASH_TOOL,
    TASK_INPUT_TOOL,
    TASK_OUTPUT_TOOL,
    TASK_STOP_TOOL,
    TOOL_ALIASES,
    tool_definitions,
)

SERVER_NAME = "wave-bash"
MCP_NOTICE_LEASE_SECONDS = 600.0
"""How long notices claimed for a result stay with this server before others may take
them (only a server killed outright leaves them held that long: one that exits gives
back what it did not write). Longer than any host takes to read a result."""
NOTICES_PER_RESULT = 20
"""Notices one result carries at most, the oldest first; the others come with the next
results (600 tasks ended while no server ran made one result of 120,000 characters,
which a host may cut or refuse after they counted as shown: a trial)."""


def default_session() -> str:
    """A fresh agent-session name; reuse it (``--session``) to reattach after a restart."""
    return f"mcp-{secrets.token_hex(4)}"


APPROVAL_COMMAND_CHARS = 4000
"""Most of a command an approval question quotes."""


def structured_result(
    tool: str, data: dict[str, Any] | None, notices: list[Notice]
) -> dict[str, Any] | None:
    """A result's structured content: the contract JSON with each text carried once.

    ``stdout`` is left out of a Bash result: its ``message`` holds it (followed by
    ``Exit code N`` or a note when there is one). Completion notices delivered with the
    result are in ``notices`` (the I4 notice records), as in the text: hosts that show
    models only the structured content lose none.
    """
    if data is None and not notices:
        return None
    out = dict(data or {})
    if tool == BASH_TOOL:
        out.pop("stdout", None)
    if notices:
        out["notices"] = [n.to_json_dict() for n in notices]
    return out


NO_OUTPUT_TEXT = "(no output)"
"""A result's text where a command printed nothing: a host that passes an empty text
block on to a model's API is refused ("text content blocks must be non-empty"), and a
model told nothing cannot tell no output from a result that was dropped (a trial)."""


def _tool_result(text: str, **fields: Any) -> types.CallToolResult:
    """A tool result from its text and other fields by their wire names (both SDKs take
    them); its text is never empty, nor blanks alone (a model's API refuses both), and
    holds no surrogate (:func:`mcp_compat.json_safe`)."""
    text = mcp_compat.json_safe(text if text.strip() else NO_OUTPUT_TEXT)
    content = [types.TextContent(type="text", text=text)]
    return types.CallToolResult.model_validate({"content": content, **mcp_compat.json_safe(fields)})


def _error_result(text: str) -> types.CallToolResult:
    return _tool_result(text, isError=True)


def result_text(text: str, notices: list[Notice], waiting: str | None = None) -> str:
    """The result's text with the notices delivered with it, one per line after it (or
    ``waiting``: why some wait); ``(no output)`` where the text is empty or blanks alone,
    notices or not
    (`true` followed by a notice read as if the notice were what `true` printed: a
    trial)."""
    lines = "\n".join([n.message for n in notices] + ([waiting] if waiting else []))
    text = text if text.strip() else NO_OUTPUT_TEXT
    return f"{text}\n\n{lines}" if lines else text


class WaveMcp:
    """The tool handlers of one MCP server process, bound to one agent session.

    Notices go out with tool results under a claim: confirmed (``ack``) once the result
    carrying them was written to the host, given back (``release``) when it could not be,
    so none is lost with a dying host and none is shown twice to racing readers.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        """Runs the tools; closed when the host leaves (calls in flight become lost)."""
        self.notices = Client(
            state_dir=client.layout.root, session=client.session, env=client.env,
            transport=client.transport, **client.remote_options(),
        )  # fmt: skip
        """Claims, confirms and gives back notices, also after the host left."""
        self.unconfirmed: dict[Any, str] = {}
        """Request ID → claim on the notices its result carries, until it is written."""
        self.acks = Acknowledger(self.notices.ack_notices, MCP_NOTICE_LEASE_SECONDS)
        """Confirms the claims of written results, apart from the writes."""
        self.end_acks = Acknowledger(
            lambda task_id: self.notices.ack_ends([task_id]), MCP_NOTICE_LEASE_SECONDS
        )
        """Confirms ends written results showed whose notices their claims did not hold."""
        self.unconfirmed_ends: dict[Any, str] = {}
        """Request ID → task whose end its result shows, its notice in no claim of it (a
        full disk records none: the end came again as a notice once there was space)."""
        self.unwritten_results: dict[Any, str] = {}
        """Request ID → task of a foreground result, until it is written."""
        self.unwritten_reads: dict[Any, Read] = {}
        """Request ID → the read of new output its result carries, until it is written."""
        self.written_reads: collections.OrderedDict[Any, Read] = collections.OrderedDict()
        """The reads of the last results written: a host that cancels one of them after
        all (its timeout came as the result did) never showed it (:meth:`cancelled`)."""
        self.written_results: collections.OrderedDict[Any, str] = collections.OrderedDict()
        """The same for the last foreground or prompt results written: their tasks."""
        self.written_claims: collections.OrderedDict[Any, str] = collections.OrderedDict()
        """The same for the notices the last results written carried: their claims."""
        self.cancelled_unwritten: collections.OrderedDict[Any, bool] = collections.OrderedDict()
        """Requests the host cancelled as their result was made or written: what it took
        went back as the cancel came (a call sent right after it found a read still
        taken, a CI run); what is taken after that goes back as it is written."""
        self.unwritten_inputs: dict[Any, Typed] = {}
        """Request ID → the input a TaskInput result says was typed, until it is written."""
        self.written_inputs: collections.OrderedDict[Any, Typed] = collections.OrderedDict()
        """The same for the last results written (:attr:`written_reads`)."""
        self.typed_unseen: list[Typed] = []
        """Inputs typed by TaskInput calls whose results the host never showed (it
        cancelled them), until a result that says so is written (I3d)."""
        self.unwritten_notes: dict[Any, Notes] = {}
        """Request ID → what its result says of cancelled calls (I3c, I3d), until it is
        written: one never shown (cancelled too) leaves it to the next (a review)."""
        self.written_notes: collections.OrderedDict[Any, Notes] = collections.OrderedDict()
        """The same for the last results written (:attr:`written_reads`)."""
        self.cancelled_running: dict[str, str] = {}
        """Task → command of each Bash call the host cancelled as its command ran, until
        a result says it still runs (or its end)."""
        self.relay: str | None = None
        """This server's name as a relay (:meth:`attend`); its calls name receipts."""
        self.presence: Presence | None = None
        self._receipts = itertools.count(1)
        self.held: dict[Any, str] = {}
        """Request ID → receipt under which the supervisor holds what its result took,
        until the result is written (or given back) and the receipt confirmed."""
        self.confirms = Acknowledger(self._confirm, MCP_NOTICE_LEASE_SECONDS)
        """Confirms receipts apart from the writes, as :attr:`acks` does claims."""
        self.host_gone = False
        self.answering: set[Any] = set()
        """Tool calls under way, or whose result or error is not written yet."""
        self._calls_limiter: anyio.CapacityLimiter | None = None

    def attend(self) -> None:
        """Be present at the supervisor as a relay (:mod:`.relay`): what a result takes
        there is held until this server wrote it to its host, and given back should the
        server end first (killed: a foreground result or a read was lost, a trial)."""
        self.relay = secrets.token_hex(8)
        self.presence = self.client.attend_as_relay(self.relay)

    def _receipt(self) -> str | None:
        return None if self.relay is None else f"{self.relay}:{next(self._receipts):x}"

    def _confirm(self, receipt: str) -> None:
        self.notices.confirm_delivered([receipt])

    def _settle_receipt(self, request_id: Any) -> None:
        """What the request's result took stands, or was given back by this server."""
        receipt = self.held.pop(request_id, None)
        if receipt is not None:
            self.confirms.add(receipt)

    async def list_tools(self) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool.model_validate(t)
                for t in tool_definitions("mcp", follow_cd=self.client.follow_cd)
            ]
        )

    async def call_tool(
        self, request: mcp_compat.ToolRequest, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        self.answering.add(request.id)  # (until its answer is written: :meth:`written`)
        try:
            return await self._call_tool(request, params)
        except BaseException:  # (a cancelled call gets no result; an error's is refused)
            self.answering.discard(request.id)
            self.cancelled_unwritten.pop(request.id, None)  # (answered: its ID may come
            # again, and its result is no cancelled one's, a review)
            raise

    async def _call_tool(
        self, request: mcp_compat.ToolRequest, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name = TOOL_ALIASES.get(params.name, params.name)  # (the call as named: `BashOutput`
        arguments = dict(params.arguments or {})  # is TaskOutput that does not block, a review)
        if self.host_gone:  # it sent the call and left: nobody would see what it does
            return _error_result("the MCP host went away; nothing was run")
        on_progress = self._progress_reporter(request) if name == BASH_TOOL else None
        started: list[str] = []
        cancelled = False  # (set as the host cancels: read by on_start, in the call's thread)
        command = str(arguments.get("command") or "")

        def on_start(task_id: str) -> None:  # (in the call's thread)
            started.append(task_id)
            if cancelled and name == BASH_TOOL:  # named after its call was cancelled (the
                self.cancelled_running[task_id] = command  # next result said nothing of
                # it, a CI run: the host's cancel came before the thread read its ID)

        scope = CallScope(receipt=self._receipt())
        handoff = _Handoff(lambda got: self._given_back(name, started, got, arguments, scope))
        call = functools.partial(
            self.client.call_tool, params.name, arguments, on_progress=on_progress,
            on_start=on_start, on_ask=self._asker(request, arguments.get("command")),
            scope=scope, keep_notice=True,  # (an end it shows is confirmed once written)
        )  # fmt: skip
        data: dict[str, Any] | None = None
        try:
            data = await anyio.to_thread.run_sync(
                lambda: handoff.arrived(handoff.cut_short(call)), abandon_on_cancel=True,
                limiter=self._call_threads(),
            )  # fmt: skip
        except anyio.get_cancelled_exc_class():
            # The host cancelled the request (its user pressed Esc, its request timed
            # out): the call ends as a lost caller's, at once, its thread freed; its
            # command goes on in the background and is announced (SPEC F5). The output
            # a read took goes back, as its result is never written (B6c).
            cancelled = True  # (first: a task named from now on is said by on_start)
            scope.abandon()
            if name == BASH_TOOL and started:  # (said with the next result: I3c)
                self.cancelled_running[started[0]] = command
            taken = handoff.abandon()  # (none yet: the thread gives back as its call ends)
            if taken is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(
                        self._given_back, name, started, taken, arguments
                    )
            if scope.held and scope.receipt is not None:  # (given back here: done with)
                self.confirms.add(scope.receipt)
            raise
        except WaveError as exc:
            text, is_error = exc.message, True
            unreachable = isinstance(exc, SupervisorUnavailableError)
        else:
            text, is_error = tool_result_text(name, data), not bool(data.get("success", True))
            unreachable = False
        if (announced := _announced_unseen(name, data, started)) is not None:
            self.unwritten_results[request.id] = announced
        if (read := _read_of(name, data)) is not None:
            self.unwritten_reads[request.id] = read
        if (typed := _typed_of(name, data, arguments)) is not None:
            self.unwritten_inputs[request.id] = typed
        if scope.held and scope.receipt is not None:
            self.held[request.id] = scope.receipt
        try:
            result = await self._result(
                request, name, data, text, is_error, unreachable, started, scope.receipt
            )
            await anyio.lowlevel.checkpoint_if_cancelled()
            return result
        except anyio.get_cancelled_exc_class():
            # Cancelled by the host as the call ended (as its notices were claimed, a
            # review; as it looked for the commands of cancelled calls, another): the SDK
            # never writes its result, so what it took goes back and its foreground end
            # becomes a notice now, not when this server exits.
            with anyio.CancelScope(shield=True):
                await self.settle_unwritten(request.id)
            raise

    async def _result(
        self,
        request: mcp_compat.ToolRequest,
        name: str,
        data: dict[str, Any] | None,
        text: str,
        is_error: bool,
        unreachable: bool,
        started: list[str],
        receipt: str | None,
    ) -> types.CallToolResult:
        """A call's result, with the notices it carries claimed for it (not from a
        supervisor the call could not reach: a frozen one held its result another 20 s,
        the claim giving up as the call had, a trial)."""
        claim_scope = CallScope(receipt=receipt)
        claim = None if unreachable else await self._claim_notices(request.id, claim_scope)
        if claim_scope.held and claim_scope.receipt is not None:
            self.held[request.id] = claim_scope.receipt
        notices = claim.notices if claim else []
        waiting = (
            notices_waiting_text(claim.model_dump(by_alias=True))
            if claim and claim.waiting
            else more_notices_text(claim.more)
            if claim and claim.more
            else None
        )
        shown = _ended_task(name, data)
        if shown is not None and all(n.task_id != shown for n in notices):
            self.unconfirmed_ends[request.id] = shown
        if shown is not None:
            # It shows how the task ended (TaskOutput, TaskInput, TaskStop): its notice is not said
            # again, yet stays in the claim, acknowledged once this result is written
            # (never lost with the host).
            notices = [n for n in notices if n.task_id != shown]
        if data is None:  # an error result: its text in structured content too (a host that
            data = {"success": False, "error": text}  # shows models only that saw none)
        running = await self._cancelled_still_running(notices, started)
        if running:
            data = {**data, "stillRunning": running}
        typed_unseen, self.typed_unseen = self.typed_unseen, []
        if running or typed_unseen:
            self.unwritten_notes[request.id] = Notes(running, typed_unseen)
        if typed_unseen:
            data = {**data, "typedInputs": [_typed_entry(typed) for typed in typed_unseen]}
        said = result_text(text, notices, waiting)
        if running or typed_unseen:
            lines = [cancelled_still_running_text(r["taskId"], r["command"], r["outputPath"])
                     for r in running]  # fmt: skip
            lines += [texts.cancelled_input_typed_text(*typed) for typed in typed_unseen]
            said = "\n\n".join([said, *lines])
        paths = [str(data.get("outputPath") or ""), *(n.output_path for n in notices)]
        if self.client.remote is not None and any(p and p in said for p in paths):
            said += f"\n\n{remote_paths_text(str(self.client.remote))}"
        return _tool_result(
            said,
            structuredContent=structured_result(name, data, notices),
            isError=is_error,
        )

    async def _cancelled_still_running(
        self, notices: list[Notice], started: list[str]
    ) -> list[dict[str, str]]:
        """The commands of cancelled Bash calls that still run, each said once (one this
        result tells the end or the start of is not)."""
        told = {n.task_id for n in notices} | set(started)
        pending = {k: v for k, v in self.cancelled_running.items() if k not in told}
        for task_id in set(self.cancelled_running) & told:
            del self.cancelled_running[task_id]
        if not pending:
            return []

        def look() -> list[dict[str, str]]:
            found = []
            for task_id, command in pending.items():
                with contextlib.suppress(WaveError):
                    record = self.notices.wait(task_id, timeout=0)
                    if record.status == "running":
                        found.append(
                            {
                                "taskId": task_id,
                                "command": command,
                                "outputPath": record.output_path,
                            }
                        )
            return found

        running = await anyio.to_thread.run_sync(look, limiter=self._call_threads())
        for task_id in pending:  # (one that ended meanwhile: its notice says so)
            self.cancelled_running.pop(task_id, None)
        return running

    def _call_threads(self) -> anyio.CapacityLimiter:
        """The threads tool calls wait in, apart from anyio's default ones, which read
        stdin and write stdout: calls that wait long (40 foreground commands) must not
        keep the server from reading the host's next request or its cancellations."""
        if self._calls_limiter is None:
            self._calls_limiter = anyio.CapacityLimiter(CALL_THREADS)
        return self._calls_limiter

    async def _claim_notices(
        self, request_id: Any, scope: CallScope | None = None
    ) -> NoticeClaim | None:
        """Take the session's pending notices for this result (none once the host left)."""
        if self.host_gone or request_id is None:
            return None
        try:
            claim = await anyio.to_thread.run_sync(
                functools.partial(
                    self.notices.claim_notices,
                    lease=MCP_NOTICE_LEASE_SECONDS,
                    scope=scope,
                    limit=NOTICES_PER_RESULT,
                )
            )
        except WaveError:
            return None
        if claim.notices:
            self.unconfirmed[request_id] = claim.claim
        return claim

    async def written(self, request_id: Any) -> None:
        """The result of ``request_id`` reached the host: its notices are delivered (the
        confirmation goes apart: awaited here, a slow one held every message after it)."""
        if self.cancelled_unwritten.pop(request_id, None) is not None:
            # (the host gave up on it first, and never shows it: what it took after the
            # cancel goes back too)
            await self.settle_unwritten(request_id)
            return
        self.answering.discard(request_id)
        claim = self.unconfirmed.pop(request_id, None)
        _keep_last(self.written_reads, request_id, self.unwritten_reads.pop(request_id, None))
        _keep_last(self.written_inputs, request_id, self.unwritten_inputs.pop(request_id, None))
        _keep_last(self.written_results, request_id, self.unwritten_results.pop(request_id, None))
        _keep_last(self.written_notes, request_id, self.unwritten_notes.pop(request_id, None))
        if claim is not None:
            self.acks.add(claim)
            _keep_last(self.written_claims, request_id, claim)
        if (ended := self.unconfirmed_ends.pop(request_id, None)) is not None:
            self.end_acks.add(ended)
        self._settle_receipt(request_id)

    async def write_failed(self) -> None:
        """The host no longer reads what we write: nothing more can reach it. Calls in
        flight become lost callers, what was never written goes back to the session,
        and the process ends (a thread blocked reading stdin would keep it alive)."""
        await self.gone()
        with anyio.CancelScope(shield=True):
            await self.release_unwritten()
        os._exit(0)  # (released: what was written is confirmed, as far as it can be)

    async def gone(self, reason: str = "the MCP host went away") -> None:
        """The host went away (stdin closed, a write failed) or told this server to stop:
        calls in flight become lost callers (their commands keep running in the background
        and are announced later), and notices not written out go back to the session for
        its next reader."""
        if self.host_gone:
            return
        self.host_gone = True
        self.client.close(reason)

    async def answered(self) -> None:
        """Return once the calls under way have been answered (:meth:`gone` ends them at
        once, as abandoned): a server told to stop exited before some answers were
        written, 1 run in 8 (a trial)."""
        while self.answering:
            await anyio.sleep(0.01)

    async def settle_unwritten(self, request_id: Any) -> None:
        """The result of ``request_id`` will never be written (or shown): what it claimed
        goes back to the session, and its foreground command's end becomes a notice."""
        self.answering.discard(request_id)
        self.cancelled_unwritten.pop(request_id, None)  # (answered: its ID may come again)
        await self._give_back(request_id)

    async def _give_back(self, request_id: Any) -> None:
        """What the result of ``request_id``, never shown, took (so far) goes back."""
        self.unconfirmed_ends.pop(request_id, None)
        self._typed_unseen(self.unwritten_inputs.pop(request_id, None))
        self._notes_unseen(self.unwritten_notes.pop(request_id, None))
        claim = self.unconfirmed.pop(request_id, None)
        if claim is not None:
            with contextlib.suppress(WaveError):
                await anyio.to_thread.run_sync(self.notices.release_notices, claim)
        task_id = self.unwritten_results.pop(request_id, None)
        if task_id is not None:
            with contextlib.suppress(WaveError):
                await anyio.to_thread.run_sync(self.notices.announce_result, task_id)
        await anyio.to_thread.run_sync(self._unread, self.unwritten_reads.pop(request_id, None))
        self._settle_receipt(request_id)

    async def cancelled(self, request_id: Any) -> None:
        """The host cancelled ``request_id``: one whose result it was sent as it gave up
        (a host timeout as long as the wait's) never showed its output, which goes back
        to the session's next reader (B6c: 38 lines of a task were lost so, a trial), nor
        the notices it carried (confirmed as shown, they come back). One whose result
        is being made or written gives back what it took now, before the next request
        is read (a read right after the cancel found the output still taken, a CI run)."""
        request_id = self._known_as(request_id)
        if request_id in self.answering:  # (its result not written yet)
            _keep_last(self.cancelled_unwritten, request_id, True)
            await self._give_back(request_id)
            return
        read = self.written_reads.pop(request_id, None)
        shown = self.written_results.pop(request_id, None)
        claim = self.written_claims.pop(request_id, None)
        self._typed_unseen(self.written_inputs.pop(request_id, None))
        self._notes_unseen(self.written_notes.pop(request_id, None))
        if read is not None or shown is not None:
            await anyio.to_thread.run_sync(self._never_shown, read, shown)
        if claim is not None:
            with contextlib.suppress(WaveError):  # (its confirmation may come after: it
                # finds the claim settled, and changes nothing)
                await anyio.to_thread.run_sync(self.notices.release_notices, claim, True)

    def _known_as(self, request_id: Any) -> Any:
        """The ID a cancel names as this server knows it: `"2"` names request 2, as the
        SDK matches it."""
        if isinstance(request_id, str) and re.fullmatch(r"-?[0-9]{1,20}", request_id):
            other: Any = int(request_id)  # (20 digits at most: past 4300 `int` raised, and
            # ended the server, a review)
        elif isinstance(request_id, int) and not isinstance(request_id, bool):
            other = str(request_id)  # (`9` names request `"9"` too)
        else:
            return request_id
        known = (self.answering, self.written_reads, self.written_results,
                 self.written_claims, self.written_inputs, self.written_notes)  # fmt: skip
        if not any(request_id in ids for ids in known) and any(other in ids for ids in known):
            return other
        return request_id

    def _given_back(
        self,
        name: str,
        started: list[str],
        data: dict[str, Any] | None,
        arguments: Any,
        scope: CallScope | None = None,
    ) -> None:  # (``data`` None: the call was cut short as the host cancelled it)
        """A result the host never sees (it cancelled the call as the result came, or
        before: its input most likely typed once its request was sent, not before, a
        review)."""
        shown = _announced_unseen(name, data, started)
        sent = scope is not None and scope.sent
        typed = _typed_of(name, data, arguments) if data else _maybe_typed(name, arguments, sent)
        self._typed_unseen(typed)
        self._never_shown(_read_of(name, data), shown)

    def _typed_unseen(self, typed: Typed | None) -> None:
        """An input typed by a call whose result the host never showed: the next result
        says so (I3d; from a call's thread too, as list appends are atomic)."""
        if typed is not None:
            self.typed_unseen.append(typed)

    def _notes_unseen(self, notes: Notes | None) -> None:
        """What a result never shown said of cancelled calls: the next result says it."""
        if notes is not None:
            for running in notes.running:
                self.cancelled_running.setdefault(running["taskId"], running["command"])
            self.typed_unseen.extend(notes.typed)

    def _never_shown(self, read: Read | None, task_id: str | None) -> None:
        """A result the host never showed: its read goes back (B6c), and a foreground or
        prompt result (``task_id``) becomes a notice (ND5: a REPL whose prompt came as
        the call was cancelled, before or after it was written, waited unknown, two
        reviews)."""
        self._unread(read)
        if task_id is not None:
            with contextlib.suppress(WaveError):
                self.notices.announce_result(task_id)

    def _unread(self, read: Read | None) -> None:
        """Give back a read whose result never reached the host (B6c)."""
        if read is not None:
            with contextlib.suppress(WaveError):
                self.notices.unread_output(*read)

    async def release_unwritten(self) -> None:
        """Give back the notices of results never written (the host left first), and
        announce their foreground commands' ends as notices instead. Called
        once the transport has stopped writing: a result still queued when stdin closed
        may have reached the host after all (then it was confirmed)."""
        claims, self.unconfirmed = list(self.unconfirmed.values()), {}
        for claim in claims:
            with contextlib.suppress(WaveError):
                await anyio.to_thread.run_sync(self.notices.release_notices, claim)
        await anyio.to_thread.run_sync(self.acks.drain, ACK_PATIENCE_AT_EXIT)
        await anyio.to_thread.run_sync(self.end_acks.drain, ACK_PATIENCE_AT_EXIT)
        tasks, self.unwritten_results = list(self.unwritten_results.values()), {}
        for task_id in tasks:  # a result it never got: its end comes as a notice instead
            with contextlib.suppress(WaveError):
                await anyio.to_thread.run_sync(self.notices.announce_result, task_id)
        reads, self.unwritten_reads = list(self.unwritten_reads.values()), {}
        for read in reversed(reads):  # (output it never got: read again by the next
            # reader; newest first, as each goes back to where the one before ended)
            await anyio.to_thread.run_sync(self._unread, read)
        for request_id in list(self.held):  # (given back above: done with)
            self._settle_receipt(request_id)
        await anyio.to_thread.run_sync(self.confirms.drain, ACK_PATIENCE_AT_EXIT)
        if self.presence is not None:  # (what is still held goes back now, not at exit)
            await anyio.to_thread.run_sync(self.presence.close)

    def _asker(self, request: mcp_compat.ToolRequest, command: object) -> Any:
        """Ask the host's user (an elicitation) about a command that needs approval, from
        the thread that runs the call; None when the host cannot ask (SPEC PM3). The
        question shows the whole command (what runs if they say yes), then why."""

        def ask(result: BashResult) -> bool | None:
            if self.host_gone:
                return None
            shown = str(command)
            if len(shown) > APPROVAL_COMMAND_CHARS:
                shown = f"{shown[:APPROVAL_COMMAND_CHARS]}\n… ({len(shown)} characters in all)"
            reason = result.permission.reason if result.permission else result.message
            shown, reason = texts.for_approval(shown), texts.for_approval(reason)
            message = f"Run this command?\n\n{shown}\n\nIt needs approval: {reason}."
            return anyio.from_thread.run(request.ask_user, message)

        return ask

    def _progress_reporter(self, request: mcp_compat.ToolRequest) -> Any:
        """A callback for the client thread that sends MCP progress (message = shortResult)."""
        count = 0

        def report(update: Progress) -> None:
            nonlocal count
            count += 1  # progress must increase with every notification
            with contextlib.suppress(Exception):  # a host that left: the command goes on
                anyio.from_thread.run(request.report_progress, float(count), update.short_result)

        return report


ACK_PATIENCE_AT_EXIT = 5.0
"""Seconds a server that is ending waits for confirmations still being tried."""


class Acknowledger:
    """Confirms notice claims in a thread of its own, each again until it succeeds or its
    lease ends: a confirmation the supervisor did not get (over SSH, a refused
    connection; a supervisor restarting) left the claim to lapse, and its notices came
    again with a later result, ten minutes on (a review)."""

    def __init__(self, ack: Callable[[str], object], lease: float) -> None:
        self._ack, self._lease = ack, lease
        self._due: queue.SimpleQueue[tuple[str, float]] = queue.SimpleQueue()
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, claim: str) -> None:
        with self._lock:
            self._pending += 1
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="notice-acks", daemon=True)
                self._thread.start()
        self._due.put((claim, time.monotonic() + self._lease))

    def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until every confirmation was made or given up."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while True:
            claim, until = self._due.get()
            delay = 0.1
            while True:
                try:
                    self._ack(claim)
                    break
                except Exception:  # (any: this thread confirms every claim after this one)
                    if time.monotonic() + delay >= until:
                        break  # (lapsed: its notices are pending again, for the next reader)
                    time.sleep(delay)
                    delay = min(delay * 2, 10.0)
            with self._lock:
                self._pending -= 1
                if self._pending == 0:
                    self._idle.set()


class HostStdin:
    """The host's side of stdin for the SDK's stdio transport: its end is the host leaving.
    A request the SDK would drop unanswered (a lone UTF-16 surrogate, ``\\udc00``, that a
    JavaScript host's ``JSON.stringify`` can send; arguments nested deeper than its parser
    goes: the host then waited for ever) or change (bytes that are no UTF-8 became
    U+FFFD, and the changed command ran) is answered here with an error (``reply``), and
    never reaches a tool."""

    def __init__(
        self,
        raw: Any,
        on_gone: Callable[[], Awaitable[None]],
        reply: Callable[[str], Awaitable[None]] | None = None,
        on_cancel: Callable[[Any], Awaitable[None]] | None = None,
    ) -> None:
        self.raw, self.on_gone, self.reply, self.on_cancel = raw, on_gone, reply, on_cancel

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        try:
            async for raw_line in self.raw:
                line = raw_line.removeprefix("\ufeff")  # (a byte-order mark: no JSON)
                refusal = _refusal(line) if self.reply is not None else None
                if refusal is None:  # (what is answered no request, a response or a
                    # notification, goes on as before, a byte that is no UTF-8 as U+FFFD)
                    if self.on_cancel is not None and (cancelled := _cancelled(line)) is not None:
                        await self.on_cancel(cancelled)  # (the SDK drops one for an answered call)
                    yield _as_before(line)
                elif self.reply is not None:
                    await self.reply(refusal)
        finally:
            await self.on_gone()


WRITTEN_READS_KEPT = 64
"""Written results whose reads a late cancel may still give back."""


def _keep_last(kept: collections.OrderedDict[Any, Any], request_id: Any, item: object) -> None:
    """Keep what a written result carries, the last :data:`WRITTEN_READS_KEPT` only."""
    if item is not None:
        kept[request_id] = item
        while len(kept) > WRITTEN_READS_KEPT:
            kept.popitem(last=False)


def _cancelled(line: str) -> Any:
    """The request a ``notifications/cancelled`` line cancels (None: no such line, or no
    request ID in it)."""
    if "notifications/cancelled" not in line:
        return None
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "notifications/cancelled":
        return None
    params = message.get("params")
    request_id = params.get("requestId") if isinstance(params, dict) else None
    # (an id is a string or a whole number, as the SDK takes it: an object's, unhashable,
    # ended the server, a trial; `true`, equal to 1 here, gave back request 1's read)
    ok = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    return request_id if ok else None


def _as_before(line: str) -> str:
    if not _NOT_UTF8.search(line):
        return line
    return line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
"""What a surrogate's escape starts with (``\\ud800``-``\\udfff``): ``json.dumps``
escapes every non-ASCII character of a host's request, so ``\\u`` alone is common."""


_NOT_UTF8 = re.compile("[\ud800-\udfff]")
"""A byte that is no UTF-8, as stdin's decoder (``surrogateescape``) leaves it."""
NESTING_LOOKED_AT = 64
"""Brackets in a line from which its depth is checked (a cheap count first)."""


def _refusal(line: str) -> str | None:
    """The error answer to a request the SDK would drop or change, else None."""
    code, problem = _problem(line)
    if problem is None:
        return _misshapen(line)
    message = _request_head(line)
    if message is None or message.get("id") is None or "method" not in message:
        return None  # (a notification or a response: nothing to answer)
    return _error_answer(message["id"], code, problem) + "\n"


def _misshapen(line: str) -> str | None:
    """The error answer to a line the SDK drops for its shape, unanswered (a trial: the
    host waited for ever): no JSON (-32700, with its id where one can be found, else a
    null one, as JSON-RPC says), a batch (no MCP version the SDK speaks takes one: each
    request's error, in an array), no object (``42``), an object with no method (and no
    result nor error: no response either), a method that is no string, a request without
    ``"jsonrpc": "2.0"`` or whose id is no string nor whole number (-32600)."""
    text = line.strip()
    if not text:
        return None
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):  # (`"2.0"` in a line tells nothing: a review)
        found = _request_head(text) or {}  # (a request's id, not a response's)
        request_id = found.get("id") if "method" in found else None
        return _error_answer(request_id, -32700, "Parse error: the line is not JSON") + "\n"
    if isinstance(message, list):  # (an empty one, or one of no messages, `[1, 2]`, was
        if not message:  # not answered either: JSON-RPC answers each, a trial)
            return _error_answer(None, -32600, "Invalid Request: an empty batch") + "\n"
        batched = [_error_answer(m["id"] if _request(m) else None, -32600,
                                 "Invalid Request: batches are not taken; send each request alone")
                   for m in message if not _answerless(m)]  # fmt: skip
        return f"[{', '.join(batched)}]\n" if batched else None
    if not isinstance(message, dict):  # (`42`, `"hello"`, `null`: dropped unanswered, a trial)
        return _error_answer(None, -32600, "Invalid Request: a message is a JSON object") + "\n"
    if "method" not in message and "result" not in message and "error" not in message:
        text = "Invalid Request: a request needs a method"  # (`{"id": 80}`: dropped too)
        return _error_answer(_valid_id(message.get("id")), -32600, text) + "\n"
    if "method" in message and not isinstance(message["method"], str):
        text = "Invalid Request: a request's method is a string"
        return _error_answer(_valid_id(message.get("id")), -32600, text) + "\n"
    if _request(message) and "params" in message and not isinstance(message["params"], dict):
        text = (
            f"Invalid params: a request's params are an object, not {_json_type(message['params'])}"
        )
        return _error_answer(_valid_id(message["id"]), -32602, text) + "\n"  # (unanswered)
    if message.get("method") == "tools/call" and _request(message):
        params = message.get("params")  # (the SDK's answer said "Invalid request
        arguments = params.get("arguments") if isinstance(params, dict) else None  # parameters"
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):  # alone)
            text = "Invalid params: a tool call's params are an object with the tool's `name`"
            return _error_answer(_valid_id(message["id"]), -32602, text) + "\n"
        if arguments is not None and not isinstance(arguments, dict):
            text = (
                "Invalid params: a tool call's `arguments` are an object of named values "
                f'(`{{"command": "ls"}}`), not {_json_type(arguments)}'
            )
            return _error_answer(_valid_id(message["id"]), -32602, text) + "\n"
    if "method" in message and "id" in message:
        request_id = message["id"]  # (MCP's: a string or a whole number, never null; the SDK
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):  # dropped
            text = "Invalid Request: a request's id must be a string or a whole number"
            return _error_answer(None, -32600, text) + "\n"  # others unanswered: a trial)
    if _request(message) and message.get("jsonrpc") != "2.0":
        text = 'Invalid Request: a request needs "jsonrpc": "2.0"'
        return _error_answer(message["id"], -32600, text) + "\n"
    return None


def _json_type(value: Any) -> str:
    """What a JSON value is, as JSON names it (``a string``, ``an array``)."""
    for kind, name in ((bool, "a boolean"), (str, "a string"), (int | float, "a number"),
                       (list, "an array"), (dict, "an object")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return "null"


def _valid_id(request_id: Any) -> Any:
    """A request ID as JSON-RPC has them (a string or a whole number), else None."""
    valid = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    return request_id if valid else None


def _answerless(message: Any) -> bool:
    """A notification or a response, which get no answer, even in a batch."""
    if not isinstance(message, dict):
        return False
    if "method" in message:
        return message.get("id") is None
    return "result" in message or "error" in message


def _request(message: Any) -> bool:
    """A request, which gets an answer (a notification or a response does not)."""
    return isinstance(message, dict) and message.get("id") is not None and "method" in message


def _error_answer(request_id: Any, code: int, problem: str) -> str:
    """A JSON-RPC error answer (one line, without its newline)."""
    error = json.dumps({"code": code, "message": f"{problem}; nothing was run"})
    if isinstance(request_id, _IdText):  # (an id too long for a parser: as it came)
        return f'{{"jsonrpc": "2.0", "id": {request_id}, "error": {error}}}'
    return f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "error": {error}}}'


def _problem(line: str) -> tuple[int, str | None]:
    """What is wrong with a line the SDK would take badly (JSON-RPC code, message)."""
    if _NOT_UTF8.search(line):
        return -32700, "Parse error: the request is not UTF-8 (a byte that is no character)"
    if _SURROGATE_ESCAPE.search(line):  # (only as an escape: the text is UTF-8)
        try:
            json.dumps(json.loads(line), ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # (it parsed: the escape named no character)
            return -32602, (
                "Invalid params: the request holds a lone UTF-16 surrogate (a \\ud800-"
                "\\udfff escape that is no character)"
            )
        except (ValueError, RecursionError):
            pass  # (not JSON, or nested deep: looked at below, or the SDK's to answer)
    deep = line.count("[") + line.count("{") > NESTING_LOOKED_AT
    if deep or _LONG_NUMBER.search(line):
        try:
            pydantic_core.from_json(line)  # (the SDK's parser, and its limits)
        except ValueError as exc:
            if "recursion limit" in str(exc):
                return -32602, "Invalid params: the request is nested too deep to be read"
            if "number out of range" in str(exc):  # (dropped unanswered: a trial)
                return -32602, "Invalid params: the request holds a number too long to be read"
    return 0, None


_LONG_NUMBER = re.compile(r"(?<!\d)\d{4000}")
"""Digits in a row past which the SDK's parser may refuse a number (4300 and more); tried
where a run of digits starts only (from each digit, runs of 3999 took seconds a MiB)."""


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]')
_ID_VALUE = re.compile(r'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def _request_head(line: str) -> dict[str, Any] | None:
    """A request's ``id`` and ``method``: from the whole message where it parses, else
    found at its top level (one nested too deep for any parser)."""
    try:
        message = json.loads(line)
        return message if isinstance(message, dict) else None
    except (ValueError, RecursionError):
        pass
    head: dict[str, Any] = {}
    depth = 0
    for token in _TOKEN.finditer(line):
        text = token.group()
        if text in "{[":
            depth += 1
        elif text in "}]":
            depth -= 1
        elif depth == 1 and text in ('"id"', '"method"'):
            value = _ID_VALUE.match(line, token.end())
            if value is not None:
                try:
                    head[text.strip('"')] = json.loads(value.group(1))
                except ValueError:  # (digits past Python's limit: answered as they came)
                    head[text.strip('"')] = _IdText(value.group(1))
    return head


class _IdText(str):
    """A request id kept as its JSON text: a number of more digits than any parser here
    takes (the host gets its own id back; unanswered, it waited for ever)."""


CALL_THREADS = 256
"""Tool calls run at once, each in a thread of its own (more wait for a thread)."""


class HostStdout:
    """stdout for the SDK's stdio transport, telling which results reached the host: the
    transport writes one message and flushes; a message is out once each of its bytes
    is in the pipe. They are written to the descriptor itself, no buffer between: a
    buffered writer took a write the host's leaving cut short for a whole one, and the
    notices of a result the host never got counted as delivered."""

    def __init__(
        self,
        fd: int,
        on_written: Callable[[Any], Awaitable[None]],
        on_gone: Callable[[], Awaitable[None]],
        on_refused: Callable[[Any], Awaitable[None]] | None = None,
    ) -> None:
        """``on_refused``: the answer to a request was an error, not its result (the SDK
        1.x answers a cancelled request so): nothing its result held reached the host."""
        self.fd, self.on_written, self.on_gone = fd, on_written, on_gone
        self.on_refused = on_refused
        self._unflushed: list[str] = []
        self._writing = anyio.Lock()
        """One message at a time: the transport's, and an answer of :class:`HostStdin`."""

    async def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        try:
            async with self._writing:
                await anyio.to_thread.run_sync(_write_all, self.fd, data)
        except OSError:
            await self.on_gone()
            raise
        self._unflushed.append(text)
        return len(text)

    async def answer(self, text: str) -> None:
        """Write a message of our own (no result: nothing to confirm)."""
        with contextlib.suppress(OSError):
            async with self._writing:
                await anyio.to_thread.run_sync(_write_all, self.fd, text.encode())

    async def flush(self) -> None:
        done, self._unflushed = self._unflushed, []
        for text in done:
            request_id = _response_id(text)
            if request_id is not None:
                await self.on_written(request_id)
            elif self.on_refused is not None and (request_id := _response_id(text, "error")):
                await self.on_refused(request_id)


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` (a pipe takes a long message in parts), or raise."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


Read = tuple[str, int, int]
"""A read of a task's new output: its task, where it ended, where it began."""


def _read_of(tool: str, data: dict[str, Any] | None) -> Read | None:
    """The read of new output a TaskOutput or TaskInput result carries, if any."""
    if data is None or tool not in (TASK_OUTPUT_TOOL, TASK_INPUT_TOOL):
        return None
    start, end = data.get("startOffset"), data.get("nextOffset")
    if not (isinstance(start, int) and isinstance(end, int) and end > start):
        return None
    return str(data.get("taskId")), end, start


Typed = tuple[str, str, bool]
"""A task, the input a TaskInput call typed into it, and whether its result said so (not:
the call was cancelled before it answered, its input most likely typed)."""
"""An input a TaskInput call typed: its task, and the input."""


def _typed_entry(typed: Typed) -> dict[str, Any]:
    """A ``typedInputs`` entry (``"unconfirmed": true``: its call was cancelled before it
    answered)."""
    task_id, text, said = typed
    return {"taskId": task_id, "input": text, **({} if said else {"unconfirmed": True})}


class Notes(NamedTuple):
    """What a result says of cancelled calls: commands still running (I3c), inputs typed
    (I3d)."""

    running: list[dict[str, str]]
    typed: list[Typed]


def _typed_of(tool: str, data: dict[str, Any] | None, arguments: dict[str, Any]) -> Typed | None:
    """The input a TaskInput result says was typed, if any (a result says it was)."""
    typed = arguments.get("input")
    if data is None or tool != TASK_INPUT_TOOL or not isinstance(typed, str) or not typed:
        return None
    return str(data.get("taskId")), typed, True


def _maybe_typed(tool: str, arguments: dict[str, Any], sent: bool) -> Typed | None:
    """The input of a TaskInput call cancelled before it answered (the host's own timeout,
    shorter than the call's: its input typed, the model told nothing, and its retry typed
    it twice, a trial), said as most likely typed."""
    task_id, typed = arguments.get("task_id"), arguments.get("input")
    if not sent or tool != TASK_INPUT_TOOL or not isinstance(typed, str) or not typed:
        return None
    if not isinstance(task_id, str) or not task_id.strip():
        return None
    return task_id.strip().lower(), typed, False


def _announced_unseen(tool: str, data: dict[str, Any] | None, started: list[str]) -> str | None:
    """The task whose end or prompt a result the host never sees is announced instead, as
    a notice (ND5): a foreground command's end, or the prompt an interactive one returned
    at, a Bash call's or a TaskInput call's (its was lost with a killed host: a review)."""
    if data is None:
        return None
    if started:
        return (
            started[0] if not data.get("backgroundTaskId") or data.get("waitingForInput") else None
        )
    if (
        tool in (TASK_INPUT_TOOL, TASK_OUTPUT_TOOL)
        and data.get("waitingForInput")
        and data.get("taskId")
    ):
        return str(data["taskId"])
    return None


class _Handoff:
    """A call's result, between the thread that gets it and the host: a call abandoned
    as its result came (the host cancelled it) gives back what it took (``give_back``),
    whichever of the two came second (a read's output was lost: a trial)."""

    def __init__(self, give_back: Callable[[dict[str, Any] | None], object]) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, Any] | None = None
        self._abandoned = False
        self._give_back = give_back

    def arrived(self, data: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if not self._abandoned:
                self._data = data
                return data
        self._give_back(data)
        return data

    def cut_short(self, call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``call()``; cut short by the call's abandonment, it gives back that it has no
        result (a TaskInput's input most likely typed all the same: a trial)."""
        try:
            return call()
        except CallAbandonedError:
            with self._lock:
                abandoned = self._abandoned
            if abandoned:
                self._give_back(None)
            raise

    def abandon(self) -> dict[str, Any] | None:
        """The call is abandoned: the result that came already, if one did."""
        with self._lock:
            self._abandoned = True
            data, self._data = self._data, None
        return data


def _ended_task(tool: str, data: dict[str, Any] | None) -> Any:
    """The task whose end a tool result shows (TaskOutput's, TaskStop's), if it does."""
    if data is None or data.get("status") == "running":
        return None
    shown = {"TaskOutput": data.get("taskId"), TASK_INPUT_TOOL: data.get("taskId")}
    return {**shown, TASK_STOP_TOOL: data.get("id")}.get(tool)


def _response_id(line: str, kind: str = "result") -> Any:
    """The request ID a JSON-RPC response (``kind``: ``result`` or ``error``) answers
    (None for anything else)."""
    if f'"{kind}"' not in line:
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) and kind in message else None


def build_server(client: Client, handlers: WaveMcp | None = None) -> Server[Any]:
    """The MCP server object for one agent session (usable with any SDK transport)."""
    handlers = handlers or WaveMcp(client)
    return mcp_compat.build_server(
        SERVER_NAME,
        "Run shell commands that survive their timeout; see the Bash tool.",
        handlers.list_tools,
        handlers.call_tool,
    )


async def _serve(server: Server[Any], handlers: WaveMcp) -> None:
    """Serve MCP on this process's stdio; what could not be written goes back at the end."""
    stdout = HostStdout(
        sys.stdout.fileno(), handlers.written, handlers.write_failed, handlers.settle_unwritten
    )
    stdin = HostStdin(
        anyio.wrap_file(_text_stream(sys.stdin)), handlers.gone, stdout.answer, handlers.cancelled
    )
    try:
        async with anyio.create_task_group() as group:
            if sys.platform != "win32":
                group.start_soon(_stop_on_signals, handlers)
            async with stdio_server(stdin=cast(Any, stdin), stdout=cast(Any, stdout)) as (
                read_stream,
                write_stream,
            ):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await handlers.release_unwritten()


async def _stop_on_signals(handlers: WaveMcp) -> None:
    """SIGTERM, SIGHUP or SIGINT (a host stopping its server, its terminal closing, a
    Ctrl+C) is the host leaving: the calls under way are answered (abandoned), what was
    never written goes back to the session, then the process ends as the signal would
    have ended it (a trial's result, blocked in a full pipe, kept its notice claimed for
    the lease's 10 minutes; a SIGINT left the server hanging, its calls unanswered, until
    stdin brought a line: a trial)."""
    stops = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    with anyio.open_signal_receiver(*stops) as signals:
        async for signum in signals:  # (not "its caller went away": a trial)
            await handlers.gone(f"the MCP server was told to stop ({signal.Signals(signum).name})")
            with anyio.move_on_after(ANSWER_PATIENCE, shield=True):  # (a host that reads
                await handlers.answered()  # nothing more holds no stop long)
            with anyio.move_on_after(STOP_PATIENCE, shield=True):  # (a frozen supervisor
                await handlers.release_unwritten()  # would hold a stop for good)
            os._exit(128 + signum)


ANSWER_PATIENCE = 2.0
"""Seconds a server told to stop waits for the answers of the calls it ended to be
written (each ends at once; a host that no longer reads takes none)."""
STOP_PATIENCE = 10.0
"""Seconds a server told to stop gives what it never wrote back before it exits anyway."""


def _text_stream(stream: Any) -> io.TextIOWrapper:
    """UTF-8 text over a standard stream's bytes (the platform's encoding is unreliable);
    a byte that is no UTF-8 kept as a surrogate, for :class:`HostStdin` to refuse."""
    return io.TextIOWrapper(stream.buffer, encoding="utf-8", errors="surrogateescape")


def main(
    state_dir: str | None,
    session: str | None,
    follow_cd: bool,
    remote: dict[str, Any] | None = None,
    guard: dict[str, Any] | None = None,
) -> int:
    """Serve MCP on stdin/stdout until the client closes the connection. ``guard``: the
    client's ``rules``, ``sandbox``, ``allow_network`` and ``workspace`` (SPEC PM, SB)."""
    session = default_session() if session is None else check_session(session)
    print(
        f"wave-bash mcp: agent session {session} (reuse it with --session to reattach)",
        file=sys.stderr,
    )
    client = Client(
        state_dir=state_dir, session=session, follow_cd=follow_cd, **(remote or {}),
        **(guard or {}),
    )  # fmt: skip
    if client.rules is not None or client.sandbox is not None:
        mode = client.sandbox["mode"] if client.sandbox else "off"
        origin = client.rules["origin"] if client.rules else "none"
        print(f"wave-bash mcp: permission rules {origin}; sandbox {mode}", file=sys.stderr)
    if client.remote is None:  # a remote bridge gives commands the remote login PATH
        inject_login_path(client)  # once per host: every command inherits it (SPEC E1)
    handlers = WaveMcp(client)
    if client.remote is None:  # (over ssh, a bridge carries one request: none to hold open)
        handlers.attend()
    try:
        anyio.run(_serve, build_server(client, handlers), handlers)
    except BaseException:
        if not handlers.host_gone:
            raise
        # The host died mid-write: what it was owed is back with the session; exit quietly.
    return 0
