"""The login-shell PATH probe (SPEC E1): run once per host, never per command.

GUI-started hosts have an incomplete PATH (no nvm, Homebrew, ...). The host asks the
user's login shell once for its PATH and puts it into its own environment; every command
then inherits it and runs with plain ``-c``. Markers around the value ignore whatever
the rc files print.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Mapping

log = logging.getLogger(__name__)

_START, _END = "__WAVE_LOGIN_PATH_START__", "__WAVE_LOGIN_PATH_END__"


def probe_script(windows: bool = False) -> str:
    """The ``-lic`` script: prints PATH between markers (converted with cygpath on Windows)."""
    value = '"$(cygpath -pw "$PATH")"' if windows else '"$PATH"'
    return f"printf '\\n{_START}%s{_END}\\n' {value}"


def parse_probe_output(output: str) -> str | None:
    """The PATH between the markers, or ``None`` when the probe printed no usable value."""
    start = output.rfind(_START)
    if start < 0:
        return None
    end = output.find(_END, start)
    if end < 0:
        return None
    value = output[start + len(_START) : end].strip()
    return value or None


SLOW_PROBE_LIMIT = 300.0
"""Seconds a login shell that outlived its probe may still run before it is killed."""


def _reap_slow_probe(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.communicate(timeout=SLOW_PROBE_LIMIT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            if hasattr(os, "killpg"):
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        proc.communicate()


def probe_login_path(
    shell: str, env: Mapping[str, str], timeout: float = 5.0, windows: bool = False
) -> str | None:
    """Ask ``shell -lic`` for the login PATH; ``None`` (logged at debug level) on any failure.

    The probe runs in its own session without a terminal and stdin from ``/dev/null``;
    on timeout the caller stops waiting, the probe is left to finish (see below).
    """
    try:
        proc = subprocess.Popen(
            [shell, "-lic", probe_script(windows)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        log.debug("login PATH probe could not start %s: %s", shell, exc)
        return None
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Not killed: a login profile may hold a lock of its own (pyenv's rehash lock,
        # which a killed shell leaves behind for every later shell to wait on). It is
        # left to finish, reaped by a thread, and killed only if it never does.
        threading.Thread(target=_reap_slow_probe, args=(proc,), daemon=True).start()
        log.debug("login PATH probe of %s took longer than %ss", shell, timeout)
        return None
    value = parse_probe_output(out.decode(errors="replace"))
    if value is None:
        log.debug("login PATH probe of %s printed no PATH (exit %s)", shell, proc.returncode)
    return value
