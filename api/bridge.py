"""``wave-bash bridge``: the protocol on stdin/stdout, relayed to this machine's supervisor.

``ssh HOST wave-bash bridge`` makes SSH the transport to a remote dev box: SSH does the
authentication and encryption, and no port is opened. One bridge carries one request, like
one socket connection. A ``run`` request gets this machine's environment (with its login
PATH, probed once per supervisor) instead of the caller's, and starts in the remote home
unless the caller named a directory.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import socket
import sys
import threading
from typing import Any, BinaryIO

from .calls import Caller
from .connection import LocalConnector, caller_environment, with_own_entries
from .constants import DEFAULT_SESSION
from .errors import SupervisorUnavailableError, WaveError
from .launch import connect_or_start
from .paths import StateLayout, resolve_state_dir
from .transport import BRIDGE_STARTED, REMOTE_HOME_CWD, chosen_transport
from .wire import decode, encode, error_message

LOGIN_PATH_TIMEOUT_MS = 5000
"""How long the login shell's PATH is waited for (probed once per supervisor)."""
FINAL = re.compile(rb'\{"type":"(?:result|error)"')
"""The start of a final answer line (as ``encode`` writes it)."""


def _remote_run(message: dict[str, Any], layout: StateLayout, transport: str) -> dict[str, Any]:
    env = caller_environment()
    with contextlib.suppress(WaveError):  # (the wire protocol as the CLI speaks it: no
        caller = Caller(LocalConnector(layout, transport, True), str(layout.log))  # models)
        session = os.environ.get("WAVE_SESSION") or DEFAULT_SESSION
        params = {"session": session, "env": env, "timeout": LOGIN_PATH_TIMEOUT_MS}
        login_path = caller.call("login_path", params).get("path")
        if login_path:
            env = {**env, "PATH": with_own_entries(login_path, env.get("PATH", ""))}
    cwd = str(message.get("cwd") or REMOTE_HOME_CWD)
    return {**message, "env": env, "cwd": os.path.expanduser(cwd), "umask": None}


def relay(stdin: BinaryIO, stdout: BinaryIO, layout: StateLayout, transport: str) -> int:
    """Read one request, hand it to the local supervisor, copy every answer line back."""
    line = stdin.readline()
    if not line:
        return 0
    if _closed(stdin):  # (gone already: nothing is sent, so nothing runs; sent, it raced
        # the hang-up below, and a loaded supervisor ran it before it saw that: a CI run)
        return _say(stdout, SupervisorUnavailableError.code, CALLER_GONE + "nothing was sent)")
    try:
        message = decode(line)
        message.pop("keep", None)  # (one request per bridge: the answer ends it)
        if message.get("op") == "run":
            message = _remote_run(message, layout, transport)
        sock = connect_or_start(layout, transport, autostart=True)
    except WaveError as exc:
        return _say(stdout, exc.code, exc.message, exc.task_id)
    answered = False
    caller_gone = threading.Event()
    with sock:
        sock.sendall(encode(message))
        threading.Thread(target=_hang_up_with, args=(stdin, sock, caller_gone), daemon=True).start()
        with sock.makefile("rb") as answers:
            for answer in answers:  # progress lines, then the result or error
                stdout.write(answer)
                stdout.flush()
                answered = answered or FINAL.match(answer) is not None
    if not answered and caller_gone.is_set():  # (a request only read then is not run,
        # and one running has lost its caller, F5: either way it is said, PR2)
        code = SupervisorUnavailableError.code
        return _say(stdout, code, CALLER_GONE + "nothing more is read)")
    # Answered; or the supervisor went away first (killed, restarted): the caller sees
    # the connection end, as on a local socket, and sends the call again (CR1). An error
    # said here was taken as the answer, and the call failed (a trial).
    return 0


CALLER_GONE = "the caller's end closed before the supervisor answered ("


def _say(stdout: BinaryIO, code: str, text: str, task_id: str | None = None) -> int:
    """Answer with an error (the bridge's exit code then: 2)."""
    stdout.write(encode(error_message(code, text, task_id)))
    stdout.flush()
    return 2


def _closed(stdin: BinaryIO) -> bool:
    """Whether the caller's end has closed already (read at once, without waiting)."""
    with contextlib.suppress(OSError, ValueError):
        if select.select([stdin.fileno()], [], [], 0)[0]:
            return not os.read(stdin.fileno(), 65536)  # (nothing more comes: one request)
    return False


def _hang_up_with(stdin: BinaryIO, sock: socket.socket, gone: threading.Event) -> None:
    """Close the supervisor's connection once the caller's end closes (its ssh gone: the
    local CLI killed, interrupted, its machine asleep): the supervisor then sees its
    caller lost (F5), where it went on answering a bridge nobody read (a review). Sets
    ``gone`` first."""
    with contextlib.suppress(OSError, ValueError):  # (the descriptor, not the buffered
        while os.read(stdin.fileno(), 65536):  # file: its lock held at exit aborted Python)
            pass  # (nothing more comes: one request per bridge)
    gone.set()
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def main(state_dir: str | None) -> int:
    """Serve one request from stdin; exits when it is answered or the caller hangs up."""
    with contextlib.suppress(OSError, ValueError):  # (for the caller's ssh: RM3)
        print(BRIDGE_STARTED, file=sys.stderr, flush=True)
    layout = StateLayout(resolve_state_dir(state_dir))
    return relay(sys.stdin.buffer, sys.stdout.buffer, layout, chosen_transport())
