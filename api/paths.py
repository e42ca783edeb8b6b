"""Where a state directory keeps its things (SPEC §13), shared by client and supervisor."""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .errors import StateDirError

SOCKET_PATH_LIMIT = 100
"""Longest socket path used as is; ``sun_path`` holds 108 bytes on Linux, 104 on macOS."""


def resolve_state_dir(state_dir: str | os.PathLike[str] | None = None) -> Path:
    """The state dir: the argument, else ``WAVE_STATE_DIR``, else the platform's user state dir."""
    chosen = (
        state_dir or os.environ.get("WAVE_STATE_DIR") or platformdirs.user_state_dir("wave-bash")
    )
    return Path(chosen).expanduser().absolute()


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700) if needed and check it is ours and private (SPEC X1)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise StateDirError(f"state dir {path} belongs to another user (uid {st.st_uid})")
        if st.st_mode & 0o077:
            path.chmod(0o700)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-probe-"):
            pass  # a unique name: many starters (threads, processes) probe at once
    except PermissionError as exc:
        raise StateDirError(f"state dir {path} is not writable: {exc.strerror}") from None
    except OSError as exc:
        raise StateDirError(f"state dir {path} cannot be used: {exc}") from None
    return path


@dataclass(frozen=True)
class StateLayout:
    """The files of one state directory."""

    root: Path

    @property
    def journal(self) -> Path:
        return self.root / "journal.db"

    @property
    def lock(self) -> Path:
        return self.root / "supervisor.lock"

    @property
    def log(self) -> Path:
        return self.root / "supervisor.log"

    @property
    def tcp_endpoint(self) -> Path:
        """Port and token of a supervisor listening on loopback TCP (see api.transport)."""
        return self.root / "supervisor.tcp"

    @property
    def tasks(self) -> Path:
        return self.root / "tasks"

    @property
    def socket(self) -> Path:
        """The socket, or a short private fallback when the real path is too long for the OS."""
        real = self.root / "supervisor.sock"
        if len(os.fsencode(real)) <= SOCKET_PATH_LIMIT:
            return real
        digest = hashlib.sha256(os.fsencode(self.root)).hexdigest()[:16]
        owner = os.getuid() if hasattr(os, "getuid") else os.getlogin()
        return Path(tempfile.gettempdir()) / f"wave-bash-{owner}" / f"{digest}.sock"
