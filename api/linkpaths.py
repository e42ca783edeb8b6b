"""Paths as the kernel resolves them for a command's process: normalised, links followed,
and the paths that are the process's own (``/proc/self``, ``/dev/fd/N``), which no other
process can resolve for it (the permission check, ``api.permissions``, asks for them)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable


def normal_path(path: str) -> str:
    """``path`` with ``..`` resolved and repeated slashes as one (``//etc`` is ``/etc``)."""
    path = os.path.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("/") else path


def has_other_names(path: str) -> bool:
    """Whether ``path`` is a file with hard links elsewhere (``ln /etc/passwd x``): one
    of its names may be one a rule protects, and only the kernel knows them."""
    try:
        found = os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(found.st_mode) and found.st_nlink > 1


MAX_LINKS = 40
"""Links followed in one path before it counts as a loop (the kernel's limit)."""


UNREAD = "\ufffd"
"""What a byte that is no UTF-8 reads as (``reading.utf8_text``): a path holding one is
known only as it runs, as no name here can be looked up for it (another, really named
so, may stand in its place: a review wrote through a link `d\\xff` checked as `d\\uFFFD`)."""


def links_followed(path: str, view: Callable[[str], str] | None = None) -> str | None:
    """Absolute ``path`` with each link followed as the kernel does (each before the
    ``..`` after it); None when it reaches, at any step, something of the process that
    opens it (``/proc/self``, ``/proc/PID``: through ``..`` or a link such as
    ``/proc/net`` or ``/dev/stdout``; the command's, not this process's), or links loop,
    or it holds what a byte that is no UTF-8 reads as (U+FFFD: its name here unknown).
    What does not exist is taken as written. ``view``: where a path of the command's
    (a sandbox's) is on this machine, for its links to be read there."""
    if UNREAD in path:
        return None
    done = "/"
    left = [part for part in path.split("/") if part]
    links = 0
    while left:
        if IN_PROCESS.match(done):  # (reached through `..` or a link: `/proc/net`)
            return None
        part = left.pop(0)
        if part == ".":
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, part)
        try:
            target = os.readlink(view(here) if view else here)
        except (OSError, ValueError):  # not a link, or nothing there (yet)
            done = here
            continue
        links += 1
        if links > MAX_LINKS:
            return None
        if target.startswith("/"):
            done = "/"
        left[:0] = [p for p in target.split("/") if p]
    return None if IN_PROCESS.match(done) else done


IN_PROCESS = re.compile(r"/proc/(self|thread-self|\d+)(/|$)")
"""A resolved path in the process that opens it (or another's): not this process's."""


DESCRIPTOR = re.compile(r"/+(dev/+(fd/+\d+|stdin|stdout|stderr)|proc/+(self|thread-self)/+fd/+\d+)")
"""A descriptor's own path (``fullmatch``, normalized): opening it opens what the
descriptor is, again (on Linux, not a copy of the descriptor)."""


PER_PROCESS = re.compile(
    r"(^|/)(proc/+(\./+)*(self|thread-self|\d+)(/|$)"
    r"|dev/+(\./+)*(fd/+[^/]+|stdin|stdout|stderr)/)"
)
"""Paths through something of the process that opens them (``/proc/self/cwd``, the
directory ``/dev/fd/3/``), anywhere in the path (``/tmp/../proc/self``): followed here
they would be the supervisor's. (``/dev/stderr`` itself is a descriptor, no place.)"""
