"""wave-bash's contract and client: constants, tool definitions, models, protocol, Client.

>>> from wave_bash.api import Client
>>> Client().bash("echo hello").stdout
'hello'

Names are imported on first use (PEP 562): a part of the package (the CLI's hot path)
can be imported without the models and pydantic.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "BashInput": "models",
    "BashResult": "models",
    "CallScope": "calls",
    "Client": "client",
    "DEFAULT_SESSION": "constants",
    "DEFAULT_TASK_OUTPUT_TIMEOUT_MS": "constants",
    "DEFAULT_TIMEOUT_MS": "constants",
    "InvalidInputError": "errors",
    "BusyError": "errors",
    "CallAbandonedError": "errors",
    "ForbiddenError": "errors",
    "InternalError": "errors",
    "SupervisorNotAnsweringError": "errors",
    "SupervisorRefusedError": "errors",
    "MAX_OUTPUT_CHARS": "constants",
    "MAX_TIMEOUT_MS": "constants",
    "Notice": "models",
    "PROGRESS_INTERVAL_MS": "constants",
    "PROTOCOL_VERSION": "wire",
    "Progress": "models",
    "ProtocolError": "errors",
    "SHORT_RESULT_LINES": "constants",
    "ShellNotFoundError": "errors",
    "SpawnError": "errors",
    "SandboxUnavailableError": "errors",
    "RuleSet": "permissions",
    "ParsedCommand": "permissions",
    "Decision": "permissions",
    "StateDirError": "errors",
    "StorageError": "errors",
    "SupervisorStatus": "models",
    "SupervisorUnavailableError": "errors",
    "TaskNotFoundError": "errors",
    "TaskNotRunningError": "errors",
    "TaskOutputResult": "models",
    "TaskRecord": "models",
    "WaveError": "errors",
    "inject_login_path": "client",
    "tool_definitions": "tools",
}
"""Each public name and the module that defines it."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the CLI's start-up 2 ms
    from typing import Any

    from .calls import CallScope
    from .client import Client, inject_login_path
    from .constants import (
        DEFAULT_SESSION,
        DEFAULT_TASK_OUTPUT_TIMEOUT_MS,
        DEFAULT_TIMEOUT_MS,
        MAX_OUTPUT_CHARS,
        MAX_TIMEOUT_MS,
        PROGRESS_INTERVAL_MS,
        SHORT_RESULT_LINES,
    )
    from .errors import (
        BusyError,
        CallAbandonedError,
        ForbiddenError,
        InternalError,
        InvalidInputError,
        ProtocolError,
        SandboxUnavailableError,
        ShellNotFoundError,
        SpawnError,
        StateDirError,
        StorageError,
        SupervisorNotAnsweringError,
        SupervisorRefusedError,
        SupervisorUnavailableError,
        TaskNotFoundError,
        TaskNotRunningError,
        WaveError,
    )
    from .models import (
        BashInput,
        BashResult,
        Notice,
        Progress,
        SupervisorStatus,
        TaskOutputResult,
        TaskRecord,
    )
    from .permissions import Decision, ParsedCommand, RuleSet
    from .tools import tool_definitions
    from .wire import PROTOCOL_VERSION


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "DEFAULT_SESSION",
    "DEFAULT_TASK_OUTPUT_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "MAX_OUTPUT_CHARS",
    "MAX_TIMEOUT_MS",
    "PROGRESS_INTERVAL_MS",
    "PROTOCOL_VERSION",
    "SHORT_RESULT_LINES",
    "BashInput",
    "BashResult",
    "BusyError",
    "CallAbandonedError",
    "CallScope",
    "Client",
    "Decision",
    "ForbiddenError",
    "InternalError",
    "InvalidInputError",
    "Notice",
    "ParsedCommand",
    "Progress",
    "ProtocolError",
    "RuleSet",
    "SandboxUnavailableError",
    "ShellNotFoundError",
    "SpawnError",
    "StateDirError",
    "StorageError",
    "SupervisorNotAnsweringError",
    "SupervisorRefusedError",
    "SupervisorStatus",
    "SupervisorUnavailableError",
    "TaskNotFoundError",
    "TaskNotRunningError",
    "TaskOutputResult",
    "TaskRecord",
    "WaveError",
    "inject_login_path",
    "tool_definitions",
]
