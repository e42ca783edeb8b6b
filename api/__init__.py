"""wave-bash's contract and client: constants, tool definitions, models, protocol, Client.

>>> from wave_bash.api import Client
>>> Client().bash("echo hello").stdout
'hello'
"""

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
    InvalidInputError,
    ProtocolError,
    ShellNotFoundError,
    SpawnError,
    StateDirError,
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
from .tools import tool_definitions
from .wire import PROTOCOL_VERSION

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
    "Client",
    "InvalidInputError",
    "Notice",
    "Progress",
    "ProtocolError",
    "ShellNotFoundError",
    "SpawnError",
    "StateDirError",
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
