"""The numbers of the contract (SPEC §1), defined once and imported everywhere."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

DEFAULT_TIMEOUT_MS: Final = 120_000
"""Foreground timeout when the caller gives none (2 minutes)."""

MAX_TIMEOUT_MS: Final = 600_000
"""The ceiling advertised to models (10 minutes). Advertised only: larger values run as given."""

MAX_REQUEST_BYTES: Final = 8 * 1024 * 1024
"""The longest request line a supervisor reads: a command and the caller's environment fit
many times; a client refuses a longer one before sending it."""
MAX_OUTPUT_CHARS: Final = 30_000
"""Above this many characters a result keeps the head and the tail of the output."""
RAW_PIECE_MAX: Final = 1 << 20
"""The most raw log bytes a ``terminal`` answer carries (``output --raw``; base64, 1.4 MB
of JSON)."""

START_CUT_EXIT: Final = 75
"""How a detached supervisor's starter exits when the supervisor ended as it started
without a word (killed: the OOM killer, a signal): a start to try again (EX_TEMPFAIL), not
a refusal (the call failed at once, where it would pass the next time: a trial)."""

PROGRESS_INTERVAL_MS: Final = 1_000
"""At most one progress update per this many milliseconds."""

SHORT_RESULT_LINES: Final = 3
"""Progress updates show this many last non-empty lines as ``shortResult``."""

DEFAULT_TASK_OUTPUT_TIMEOUT_MS: Final = 30_000
"""How long a blocking TaskOutput waits when the caller gives no timeout."""

DEFAULT_TASK_INPUT_TIMEOUT_MS: Final = 10_000
"""How long TaskInput waits for the command to wait for input again (or end)."""

TERMINAL_SIZE: Final = (80, 24)
"""Columns and rows of an interactive task's terminal unless the caller gives a size."""

MAX_INPUT_CHARS: Final = 65_536
"""Most characters one TaskInput types."""

STOP_GRACE_SECONDS: Final = 3.0
"""Time between SIGTERM and SIGKILL when a task is stopped."""

DEFAULT_SESSION: Final = "default"
"""Agent session used when neither the caller nor ``WAVE_SESSION`` names one."""

TERMINAL_SIDE_MAX: Final = 10_000
"""Columns (or rows) of an interactive task's terminal at most."""
