"""What a word of bash text is before it runs: ``$'…'`` decoded, the start that stays the
same whatever the word expands to, and a mark for words the command line itself makes."""

from __future__ import annotations

import re

_ANSI_C = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x\{([0-9A-Fa-f]*)\}?|x([0-9A-Fa-f]{1,2})"
    r"|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(\\\\|.)|(.))",
    re.DOTALL,
)
r"""A backslash escape of ``$'…'``: bash's ``ansicstr`` (``\x{HEX}``, and ``\c\\`` that
takes both backslashes, bash 5's)."""
_ANSI_C_LETTERS = dict(zip("abeEfnrtv", "\a\b\x1b\x1b\f\n\r\t\v", strict=True))


def _ansi_c_escape(match: re.Match[str]) -> str:
    letter, octal, braced, hexa, short, long, control, other = match.groups()
    if letter is not None:
        return _ANSI_C_LETTERS.get(letter, letter)
    if octal or hexa or braced is not None:
        code = int(octal, 8) if octal else int(hexa or braced or "0", 16)
        code &= 0xFF
        return chr(code) if code < 0x80 else chr(0xDC00 + code)  # (a byte, as surrogateescape)
    if short or long:
        code = int(short or long, 16)
        return chr(code) if code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"
    if control is not None:
        return "\x7f" if control == "?" else chr(ord(control[0].upper()) & 0x1F)
    return "\\" + other  # (`\z`, `\x` with no digit: kept, backslash and all)


def ansi_c_value(text: str) -> str:
    r"""The value of ``$'…'`` (as written, quotes included), decoded as bash decodes it,
    up to a NUL (the word goes on after it): a literal word (read as computed, ``tar
    $'--to-command=rm x'`` passed for a file name and got its option past the rules).
    Its bytes are read as UTF-8, what is none becoming U+FFFD, as anywhere in a checked
    command (``reading.parse_command``: a lone surrogate, ``$'\xff'``, failed the rules'
    matching, a review)."""
    value = _ANSI_C.sub(_ansi_c_escape, text[2:-1]).split("\0", 1)[0]
    value = _NO_BYTE.sub("\ufffd", value)  # (only the bytes' surrogates are left)
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


_NO_BYTE = re.compile("[\ud800-\udc7f\udd00-\udfff]")
"""Surrogates that stand for no byte (``surrogateescape``'s are U+DC80–U+DCFF)."""


_ANSI_C_END = re.compile(r"(?:[^'\\]|\\.)*'", re.DOTALL)
"""The rest of a ``$'…'`` after its opening quote, up to its closing one."""


def literal_start(shown: str) -> str:
    """A word's value up to its first expansion, from its text as written (quotes
    removed, ``$'…'`` decoded, a backslash's character kept): the start it has whatever
    it expands to (``"--to-command=$C"``, ``\\--to-command="$C"`` and
    ``'--to-command='"$C"`` start ``--to-command=``; ``"$f"`` starts with nothing). A
    glob, a brace or a leading tilde ends it too (what it becomes may start otherwise)."""
    out: list[str] = []
    i, n = 0, len(shown)
    while i < n:
        char = shown[i]
        if char == "\\":
            if i + 1 == n:
                break
            out.append(shown[i + 1])
            i += 2
        elif char == "'":
            end = shown.find("'", i + 1)
            if end < 0:
                break
            out.append(shown[i + 1 : end])
            i = end + 1
        elif shown.startswith("$'", i):
            match = _ANSI_C_END.match(shown, i + 2)
            if match is None:
                break
            out.append(ansi_c_value(shown[i : match.end()]))
            i = match.end()
        elif char == '"' or shown.startswith('$"', i):
            i += 1 if char == '"' else 2
            while i < n and shown[i] != '"':
                if shown[i] in "$`":
                    return "".join(out)
                if shown[i] == "\\" and i + 1 < n and shown[i + 1] in '$`"\\':
                    i += 1
                out.append(shown[i])
                i += 1
            i += 1
        elif char in "$`*?[{" or (char == "~" and i == 0):
            break
        else:
            out.append(char)
            i += 1
    return "".join(out)


class LineChosen(str):
    """A word as written whose value the command line itself chooses, a plain word
    (``X=rebase; git $X -x CMD``): no option, but any subcommand."""


class LineMade(LineChosen):
    """A word as written whose value the command line itself makes: the output of a
    command substitution (``"$(echo --eval=x)"``), what a ``${…}`` operator gives
    (``${X:---eval=x}``), a positional parameter (``set --``, a function's words) or a
    variable the line sets (``X=--eval=x; make "$X"``). It may be any option; a word
    known only as it runs otherwise (``"$f"``, from the environment) is taken for a file
    name, as it far likelier is."""


class LineSplit(LineMade):
    """A :class:`LineMade` word that may also be split into several (``f$X``, ``"f$@"``):
    the words after its first may be any, whatever its start."""


def made_by_the_line(shown: str) -> bool:
    """Whether a word as written is a :class:`LineMade` one with no literal start (one
    with a start, ``--co$X``, ``src/*``, is judged by it), or a :class:`LineSplit` one."""
    return isinstance(shown, LineSplit) or (
        isinstance(shown, LineMade) and not literal_start(shown)
    )
