"""Human units for settings: durations (``7d``, ``12h``, ``30m``, ``45s``) and sizes (``1G``)."""

from __future__ import annotations

import re

from .errors import InvalidInputError

_DURATION = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _parse(text: str, units: dict[str, int], what: str, example: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]?)i?[bB]?\s*", text)
    if not match or match.group(2).lower() not in units:
        raise InvalidInputError(
            f"{what} must be a number with an optional unit such as {example}, got {text!r}"
        )
    return float(match.group(1)) * units[match.group(2).lower()]


def parse_duration(text: str) -> float:
    """Seconds in ``text``: ``90``, ``45s``, ``30m``, ``12h``, ``7d``, ``2w``."""
    return _parse(text, _DURATION, "a duration", "45s, 30m, 12h or 7d")


def parse_size(text: str) -> int:
    """Bytes in ``text``: ``4096``, ``512K``, ``100M``, ``1G`` (``1GiB`` and ``1GB`` too; powers of 1024)."""
    return int(_parse(text, _SIZE, "a size", "512K, 100M or 1G"))
