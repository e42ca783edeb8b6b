"""The supervisor daemon: one per state dir, owner of every task and of the journal.

Started by clients as a process (``python -m wave_bash.supervisor --state-dir DIR``); never
imported by ``api``.
"""

from .daemon import main, serve
from .journal import Journal, TaskRow
from .tasks import LiveTask, TaskManager

__all__ = ["Journal", "LiveTask", "TaskManager", "TaskRow", "main", "serve"]
