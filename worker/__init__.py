"""Per-task mechanics: shell resolution, monitor, spawn, kill, output cleaning, login PATH.

``worker`` imports nothing from ``api`` or ``supervisor``; the supervisor hands it the
values it needs.
"""

from .cgroups import TRACKING_ENV, CgroupTracker, Usage, choose_tracker
from .cwd import final_cwd, removed_cwd
from .errors import BadEnvironmentError, NoShellError
from .files import TaskFiles, open_regular
from .kill import (
    ProcessTable,
    TaskTree,
    forked_by,
    interrupt_job,
    job_forked,
    last_pid,
    process_tag,
    snapshot,
    stop_trees,
    tagged_processes,
)
from .login_path import parse_probe_output, probe_login_path, probe_script
from .monitor import (
    BASH_MONITOR_SCRIPT,
    build_payload,
    monitor_argv,
    monitor_instructions,
    wrapped_command,
)
from .output import (
    Excerpt,
    clean_bytes,
    clean_text,
    excerpt_text,
    last_lines,
    read_excerpt,
    read_piece,
)
from .pymonitor import exit_status
from .sandbox import Sandbox, SandboxError, bwrap_argv
from .shell import Shell, refuse_impostors, resolve_monitor_bash, resolve_shell, shell_kind
from .spawn import (
    NON_INTERACTIVE_DEFAULTS,
    ExitRecord,
    Monitor,
    MonitorExit,
    mark_stopping,
    monitor_running,
    prepare_spawner,
    read_exit_record,
    reap_monitor,
    start_monitor,
    task_environment,
    tell_stopping,
    wait_monitor_exited,
    write_task_record,
)
from .windows import (
    find_git_bash,
    posix_to_windows_path,
    usual_git_bash_locations,
    windows_to_posix_path,
)

__all__ = [
    "BASH_MONITOR_SCRIPT",
    "NON_INTERACTIVE_DEFAULTS",
    "TRACKING_ENV",
    "BadEnvironmentError",
    "CgroupTracker",
    "Excerpt",
    "ExitRecord",
    "Monitor",
    "MonitorExit",
    "NoShellError",
    "ProcessTable",
    "Sandbox",
    "SandboxError",
    "Shell",
    "TaskFiles",
    "TaskTree",
    "Usage",
    "build_payload",
    "bwrap_argv",
    "choose_tracker",
    "clean_bytes",
    "clean_text",
    "excerpt_text",
    "exit_status",
    "final_cwd",
    "find_git_bash",
    "forked_by",
    "interrupt_job",
    "job_forked",
    "last_lines",
    "last_pid",
    "mark_stopping",
    "monitor_argv",
    "monitor_instructions",
    "monitor_running",
    "open_regular",
    "parse_probe_output",
    "posix_to_windows_path",
    "prepare_spawner",
    "probe_login_path",
    "probe_script",
    "process_tag",
    "read_excerpt",
    "read_exit_record",
    "read_piece",
    "reap_monitor",
    "refuse_impostors",
    "removed_cwd",
    "resolve_monitor_bash",
    "resolve_shell",
    "shell_kind",
    "snapshot",
    "start_monitor",
    "stop_trees",
    "tagged_processes",
    "task_environment",
    "tell_stopping",
    "usual_git_bash_locations",
    "wait_monitor_exited",
    "windows_to_posix_path",
    "wrapped_command",
    "write_task_record",
]
