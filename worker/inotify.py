"""Names made (and files written) in directories, told as it happens (Linux inotify,
through ctypes: the standard library has no binding). One instance serves every
directory watched, each added and removed as tasks come and go, and watched through a
descriptor opened through no link; watchfiles (the log tail's) watches a fixed set of
paths, made anew to change it, and looks each path up again."""

from __future__ import annotations

import ctypes
import os
import struct

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
"""A watch the kernel removed (its directory deleted, its filesystem unmounted)."""
IN_ONLYDIR = 0x01000000
IN_MASK_ADD = 0x20000000
MADE = IN_CREATE | IN_MOVED_TO
"""Names made in the directory (created, linked, moved in)."""
WRITTEN = IN_MODIFY | IN_CLOSE_WRITE
"""Files in the directory written."""
_EVENT = struct.Struct("iIII")
"""``struct inotify_event`` before its name: wd, mask, cookie, len."""
OVERFLOW = -1
"""The watch of an event that stands for any name of any directory: the kernel's queue
overflowed and events were lost."""


class NameWatch:
    """One inotify instance: directories watched for names created or moved into them.

    Raises:
        OSError: no inotify here (another OS, a seccomp filter), or no instance left.
    """

    def __init__(self) -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._add = libc.inotify_add_watch
            self._remove = libc.inotify_rm_watch
            init = libc.inotify_init1
        except (AttributeError, OSError, TypeError):  # (no such symbol; Windows: no libc)
            raise OSError("inotify is not available here") from None
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._remove.argtypes = [ctypes.c_int, ctypes.c_int]
        self.fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))

    def add(self, directory: int, events: int = MADE) -> int:
        """Watch the directory open at descriptor ``directory`` (opened through no link:
        its path is not looked up again) for ``events``, added to those watched already;
        returns the watch (the same for the same directory)."""
        path = f"/proc/self/fd/{directory}".encode()
        wd = int(self._add(self.fd, path, events | IN_ONLYDIR | IN_MASK_ADD))
        if wd < 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))
        return wd

    def remove(self, wd: int) -> None:
        self._remove(self.fd, wd)  # (one the kernel dropped already: EINVAL, no matter)

    def read(self) -> list[tuple[int, int, str]]:
        """The (watch, event mask, name) of each event since the last read;
        (:data:`OVERFLOW`, 0, "") where some were lost."""
        events: list[tuple[int, int, str]] = []
        while True:
            try:
                data = os.read(self.fd, 65536)
            except (BlockingIOError, InterruptedError):
                return events
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, offset)
                raw = data[offset + _EVENT.size : offset + _EVENT.size + size]
                offset += _EVENT.size + size
                if mask & IN_Q_OVERFLOW:
                    events.append((OVERFLOW, 0, ""))
                else:
                    events.append((wd, mask, os.fsdecode(raw.rstrip(b"\0"))))

    def close(self) -> None:
        os.close(self.fd)
