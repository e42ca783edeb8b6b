"""The gitlinks a git index holds: where its submodules are checked out.

`git status` goes into each gitlink's repository, at any depth, and runs what its config
says (a ``core.fsmonitor``): the sandbox judges those repositories as it judges the
nested ones it finds by walking (``worker.planted``). Read here, never by running git,
whose config and fsmonitor are what is being judged. Versions 2 to 4 of the format
(``Documentation/gitformat-index.txt``), SHA-1 and SHA-256 repositories.
"""

from __future__ import annotations

import os
import struct

GITLINK = 0o160000
"""The mode of a gitlink entry."""
MAX_INDEX_BYTES = 64 << 20
"""Index bytes read for one look, at most (a repository of ~500,000 files; each look is
made as a sandboxed command starts and ends, on the supervisor's loop: a command's 43 MB
indexes, hard links of one file, held every caller 5 s each, helper 221). Past it the
look is unfinished, which the caller says."""
MAX_GITLINKS = 8192
"""Gitlinks one index gives at most (past it: unfinished)."""

_CACHE: dict[tuple[int, int, int, int], _Read] = {}
"""Parsed indexes by device, inode, change time and size (hard links of one file hit it)."""
_CACHE_ENTRIES = 64


def gitlinks(index: str, hash_size: int = 20, budget: list[int] | None = None) -> list[str] | None:
    """The paths (relative to the work tree) of the gitlinks in the index file ``index``,
    each once: none where there is no index; None where it cannot be read (larger than
    :data:`MAX_INDEX_BYTES`, damaged, a version not known), which the caller says.
    ``hash_size``: 20 (SHA-1) or 32 (SHA-256). A split index (``git update-index
    --split-index``) keeps most entries in the shared index its ``link`` extension
    names: its gitlinks are taken too (those the split one deletes as well: more looked
    at), and every path of it where a gitlink of the split one replaces an entry there
    (such an entry has no name of its own). ``budget``: index bytes that may still be
    read, across calls (:data:`MAX_INDEX_BYTES` by default); one past it is None."""
    budget = [MAX_INDEX_BYTES] if budget is None else budget
    read = _read_index(index, hash_size, budget)
    if read is None:
        return None
    paths, shared, replaces = read
    if shared is None:
        return paths
    more = _read_index(os.path.join(os.path.dirname(index), f"sharedindex.{shared}"),
                       hash_size, budget, every=replaces)  # fmt: skip
    if more is None:
        return None
    paths = list(dict.fromkeys(p for p in [*paths, *more[0]] if p))
    return paths if len(paths) <= MAX_GITLINKS else None


_Read = tuple[list[str], str | None, bool]
"""The gitlinks' paths (all paths, with ``every``), the shared index named, and whether a
gitlink replaces an entry of it."""


def _read_index(index: str, hash_size: int, budget: list[int], every: bool = False) -> _Read | None:
    """:func:`gitlinks` of one file (``every``: all its paths, not kept)."""
    try:
        fd = os.open(index, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return [], None, False
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        key = (found.st_dev, found.st_ino, found.st_ctime_ns, found.st_size)
        if key in _CACHE and not every:
            return _CACHE[key]
        if found.st_size > budget[0]:
            return None
        budget[0] -= found.st_size
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
    parsed = _parse(data, hash_size, every)
    if parsed is not None and len(parsed[0]) > MAX_GITLINKS and not every:
        return None
    if parsed is not None and not every:
        if len(_CACHE) >= _CACHE_ENTRIES:
            _CACHE.clear()
        _CACHE[key] = parsed
    return parsed


def _parse(data: bytes, hash_size: int, every: bool) -> _Read | None:
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        return None
    fixed = 40 + hash_size + 2  # (the stat fields, the object name, the flags)
    pos, previous, found, replaces = 12, b"", [], False
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
            if every or mode == GITLINK:
                found.append(os.fsdecode(path))
            replaces = replaces or (mode == GITLINK and not path)
        shared = None
        while pos + 8 <= len(data) - hash_size:  # (the extensions, then the checksum)
            signature, size = data[pos : pos + 4], struct.unpack_from(">I", data, pos + 4)[0]
            if signature == b"link":
                shared = data[pos + 8 : pos + 8 + hash_size].hex()
            pos += 8 + size
    except (ValueError, IndexError, struct.error):
        return None
    return found, shared, replaces


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
