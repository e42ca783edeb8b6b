"""The gitlinks a git index holds: where its submodules are checked out.

`git status` goes into each gitlink's repository, at any depth, and runs what its config
says (a ``core.fsmonitor``): the sandbox judges those repositories as it judges the
nested ones it finds by walking (``worker.sandbox``). Read here, never by running git,
whose config and fsmonitor are what is being judged. Versions 2 to 4 of the format
(``Documentation/gitformat-index.txt``), SHA-1 and SHA-256 repositories.
"""

from __future__ import annotations

import os
import struct

GITLINK = 0o160000
"""The mode of a gitlink entry."""
MAX_INDEX_BYTES = 256 << 20
"""Indexes larger than this are not read (a repository of ~2 million files)."""

_CACHE: dict[tuple[str, int, int, int, int], list[str]] = {}
_CACHE_ENTRIES = 64


def gitlinks(index: str, hash_size: int = 20) -> list[str] | None:
    """The paths (relative to the work tree) of the gitlinks in the index file ``index``:
    none where there is no index; None where it cannot be read (larger than
    :data:`MAX_INDEX_BYTES`, damaged, a version not known), which the caller says.
    ``hash_size``: 20 (SHA-1) or 32 (SHA-256)."""
    try:
        fd = os.open(index, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        key = (index, found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size)
        if key in _CACHE:
            return _CACHE[key]
        if found.st_size > MAX_INDEX_BYTES:
            return None
        data = b""
        while len(data) < found.st_size:
            chunk = os.read(fd, found.st_size - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    paths = _parse(data, hash_size)
    if paths is not None:
        if len(_CACHE) >= _CACHE_ENTRIES:
            _CACHE.clear()
        _CACHE[key] = paths
    return paths


def _parse(data: bytes, hash_size: int) -> list[str] | None:
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        return None
    fixed = 40 + hash_size + 2  # (the stat fields, the object name, the flags)
    pos, previous, found = 12, b"", []
    try:
        for _ in range(count):
            if pos + fixed > len(data):
                return None
            mode = struct.unpack_from(">I", data, pos + 24)[0]
            flags = struct.unpack_from(">H", data, pos + 40 + hash_size)[0]
            at = pos + fixed + (2 if version >= 3 and flags & 0x4000 else 0)
            if version == 4:  # (the name: what to drop of the previous one's, then the rest)
                strip, at = _offset(data, at)
                end = data.index(b"\0", at)
                if strip > len(previous):
                    return None
                path = previous[: len(previous) - strip] + data[at:end]
                pos = end + 1
            else:  # (padded with 1 to 8 NULs to a multiple of 8 bytes)
                end = data.index(b"\0", at)
                path = data[at:end]
                pos += (end - pos + 8) // 8 * 8
            previous = path
            if mode == GITLINK:
                found.append(os.fsdecode(path))
    except (ValueError, IndexError, struct.error):
        return None
    return found


def _offset(data: bytes, at: int) -> tuple[int, int]:
    """git's variable-length number (``varint.c``) at ``at``, and where it ends."""
    byte = data[at]
    value = byte & 0x7F
    at += 1
    while byte & 0x80:
        byte = data[at]
        value = ((value + 1) << 7) | (byte & 0x7F)
        at += 1
    return value, at
