"""Units: durations (``7d``, ``12h``, ``30m``, ``45s``) and sizes (``1G``) for settings, and
timeouts in milliseconds as the contract checks them (no models: the CLI uses these)."""

from __future__ import annotations

import math
import re

from .errors import InvalidInputError

TIMEOUT_ERROR = "timeout must be a non-negative number of milliseconds"

_JSON_KIND: dict[type, str] = {
    str: "a string",
    dict: "an object",
    list: "an array",
    tuple: "an array",
}


def json_kind(value: object) -> str:
    """What a JSON value is, in words, for an error that names what was sent."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return _JSON_KIND.get(type(value), "a value")


_DURATION = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _parse(text: str, units: dict[str, int], what: str, example: str, tail: str = "") -> float:
    """``tail``: what may follow a unit (a size's ``iB``; a duration's none: ``7db`` was
    read as seven days, a trial)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]?)" + tail + r"\s*", text)
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
    return int(_parse(text, _SIZE, "a size", "512K, 100M or 1G", tail="i?[bB]?"))


_TIMEOUT_UNITS = {"": 1, "ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
"""A bare number is milliseconds, as the tools' ``timeout``: ``--timeout 5`` meant five
seconds to a user of ``timeout(1)`` and moved an ``echo`` to the background (a trial),
so a unit says which."""


def parse_timeout_ms(text: str) -> int | float:
    """Milliseconds in a command line's timeout: ``5000``, ``500ms``, ``30s``, ``10m``,
    ``1h`` (a whole number stays one: ``--timeout -5`` was refused as ``got -5.0``)."""
    match = re.fullmatch(r"\s*([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(3).lower() if match else ""
    if not match or unit not in _TIMEOUT_UNITS:
        raise InvalidInputError(
            f"{TIMEOUT_ERROR} or a duration such as 500ms, 30s or 10m, got {text!r}"
        )
    sign = -1 if match.group(1) == "-" else 1
    number, scale = match.group(2), _TIMEOUT_UNITS[unit]
    if number.isdigit():
        return sign * int(number) * scale
    return sign * float(number) * scale


def check_timeout_ms(value: object) -> float | None:
    """Validate a timeout in milliseconds as the contract wants it (SPEC T4, T5).

    ``None`` means "not given". Any finite number ``>= 0`` is accepted as given, above
    the advertised ceiling included; strings (even ``"5000"``), booleans, containers,
    NaN/Infinity and negative numbers are rejected.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{TIMEOUT_ERROR}, got {json_kind(value)}")
    if isinstance(value, float) and math.isnan(value):
        raise InvalidInputError(f"{TIMEOUT_ERROR}, got NaN")
    if isinstance(value, float) and math.isinf(value):  # (JSON's `1e400` reads as infinity:
        # "got inf" named no number the caller sent, a trial; -1e400 is none too large)
        said = "a number too large" if value > 0 else "a negative number"
        raise InvalidInputError(f"{TIMEOUT_ERROR}, got {said}")
    if value < 0:
        raise InvalidInputError(f"{TIMEOUT_ERROR}, got {value}")
    try:
        return float(value)
    except OverflowError:  # an integer past any float (it raised, unanswered: a trial)
        raise InvalidInputError(f"{TIMEOUT_ERROR}, got a number too large") from None
