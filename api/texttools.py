"""Text tools whose scripts run commands (SPEC PM1c): GNU sed's ``e`` command and ``s///e``
flag, awk's ``system()``, pipes (``print | "cmd"``, ``"cmd" | getline``) and gawk's
``@load``. An allow rule for ``sed`` or ``awk`` is taken for text processing: a command
such a script runs is checked as a command of its own, or asks.

sed compiles its whole script before it runs any of it, so a script it would refuse runs
nothing: the reading here need only be exact for scripts sed accepts, and reads any text
it is unsure of as asking."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .runners import short_options

SEDS = frozenset({"sed", "gsed"})
AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "original-awk", "busybox-awk"})


@dataclass
class ScriptCode:
    """What a text tool's script runs: shell commands given in its text (checked as
    commands), and why it asks when that is not known (``problem``)."""

    commands: list[str] = field(default_factory=list)
    problem: str | None = None
    writes: list[tuple[str | None, str]] = field(default_factory=list)
    """Files it writes (None: named as it runs), each as written: ``sed -i``'s operands, a
    ``w FILE``'s."""


class _Unsure(Exception):
    """A script read here otherwise than sed might read it: it asks."""


_SED_LONG = {
    "binary": False, "debug": False, "expression": True, "file": True,
    "follow-symlinks": False, "help": False, "in-place": False, "line-length": True,
    "null-data": False, "zero-terminated": False, "quiet": False, "posix": False,
    "regexp-extended": False, "sandbox": False, "separate": False, "silent": False,
    "unbuffered": False, "version": False,
}  # fmt: skip
"""GNU sed's long options, and whether each takes a value (``--in-place=SUFFIX`` only
attached)."""
_SED_VALUED = "efl"


def _long_option(word: str, options: dict[str, bool]) -> str | None:
    """The long option ``word`` names (getopt takes any unambiguous prefix), or None."""
    flag = word[2:].split("=", 1)[0]
    if flag in options:
        return flag
    matches = [o for o in options if o.startswith(flag)]
    return matches[0] if len(matches) == 1 and flag else None


def script_code(name: str, rest: Sequence[str | None], shown: Sequence[str]) -> ScriptCode | None:
    """What ``sed`` or ``awk`` (``name``, any path) runs given the words ``rest`` (None:
    computed at run time; ``shown``: as written); None for another program."""
    base = os.path.basename(name)
    if base in SEDS:
        return _sed(base, rest, shown)
    if base in AWKS:
        return _awk(base, rest)
    return None


_NO_OPTION = re.compile(r"""["']*[\w./]""")
"""A word as written whose value cannot start with ``-`` (``./"$f"``, ``src/*.txt``),
unless an expansion outside double quotes splits it (``./$f``: see :func:`_splits`)."""


def _splits(shown: str) -> bool:
    """Whether a word as written has an expansion outside quotes (split into words)."""
    quote = ""
    at = 0
    while at < len(shown):
        char = shown[at]
        if char == "\\" and quote != "'":
            at += 2
            continue
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char in ("'", '"') and not quote:
            quote = char
        elif char == '"' and quote == '"':
            quote = ""
        elif char in ("$", "`") and not quote:
            return True
        at += 1
    return False


def _sed(name: str, rest: Sequence[str | None], shown: Sequence[str]) -> ScriptCode:
    """What sed runs and writes (``-i``: its operands after the script; a trial's `sed -i
    … .git/config` set what the next `git status` ran)."""
    scripts: list[str] = []
    given = in_place = False  # (-e or -f: every operand is a file)
    suffix = ""  # (-i's: a backup of each file, where its `*` names it)
    operand: str | None = ""
    operand_at = -1
    files: list[int] = []  # (the indices of its file operands)
    i = 0
    while i < len(rest):  # GNU getopt: options anywhere before `--`
        word = rest[i]
        i += 1
        if word is None:
            if (
                (given or operand != "")
                and _NO_OPTION.match(shown[i - 1])
                and not _splits(shown[i - 1])
            ):
                files.append(i - 1)
                continue  # (`sed -i 's/a/b/' src/*.txt`: files)
            if given or operand != "":  # (`"$f"`, `*.txt`: a file named `-e1e CMD` too)
                return ScriptCode(
                    problem=f"`{name}` may take a word known only as it runs for an option "
                    "(`--expression=…`): put `--` before the file names, or `./` in front"
                )
            return ScriptCode(problem=f"`{name}` runs a script computed at run time")
        if word == "--":
            if not given and operand == "" and i < len(rest):
                operand, operand_at, i = rest[i], i, i + 1
            files += range(i, len(rest))
            break
        if word.startswith("--"):
            option = _long_option(word, _SED_LONG)
            if option is None:
                return ScriptCode(problem=f"`{name}` is given an option read here as none")
            value: str | None = word.split("=", 1)[1] if "=" in word else None
            if _SED_LONG[option] and value is None:
                value = rest[i] if i < len(rest) else ""
                i += 1
            if option == "in-place":
                in_place, suffix = True, value or ""
            if option == "sandbox":
                return ScriptCode()  # (e, r and w refused: nothing runs)
            if option in ("expression", "file"):
                given = True
                if option == "file" or value is None:
                    return _sed_file(name, value)
                scripts.append(value)
            continue
        if word.startswith("-") and len(word) > 1:
            letters = short_options(word, _SED_VALUED + "i")
            last = letters[-1][1]
            if last == "i":  # (`-i.bak`, `-i'.git/*'`: the rest of the word)
                in_place, suffix = True, word[len(letters) + 1 :]
            if last in _SED_VALUED:
                attached = word[len(letters) + 1 :]
                value = attached if attached else (rest[i] if i < len(rest) else "")
                i += 0 if attached else 1
                if last in "ef":
                    given = True
                    if last == "f" or value is None:
                        return _sed_file(name, value)
                    scripts.append(value)
            continue
        if operand == "" and not given:
            operand, operand_at = word, i - 1
        else:
            files.append(i - 1)
    if not given:
        if operand is None:
            return ScriptCode(problem=f"`{name}` runs a script computed at run time")
        scripts = [operand]
    elif operand != "":  # (`sed 1d -e p f`: an operand before -e is a file too)
        files.insert(0, operand_at)
    read = _sed_script(name, "\n".join(scripts))
    edited = [(rest[k], shown[k] if k < len(shown) else "") for k in files] if in_place else []
    backups = [_backup(path, text, suffix) for path, text in edited] if suffix else []
    read.writes = [*edited, *backups, *read.writes]
    return read


def _backup(path: str | None, text: str, suffix: str) -> tuple[str | None, str]:
    """Where ``sed -i SUFFIX`` keeps a file's backup (and it as written): each ``*`` in
    the suffix is the file as named, its directory included (`sed -i'.git/*' … config`
    put it at `.git/config`, `-i'.git/*' … hooks/pre-commit` at a hook: two reviews),
    else the suffix follows the file's name."""
    if "*" in suffix:
        return (None if path is None else suffix.replace("*", path)), suffix.replace("*", text)
    return (None if path is None else path + suffix), text + suffix


def _sed_file(name: str, path: str | None) -> ScriptCode:
    if path is None:
        return ScriptCode(problem=f"`{name}` runs a script computed at run time")
    return ScriptCode(problem=f"`{name}` runs a script file, which may run commands (`e`)")


def _sed_script(name: str, script: str) -> ScriptCode:
    """What the script runs as sed 4.9 reads it (and BSD sed: a regex's bracket expression
    holds its delimiter as a character, `s/[/]/x/`), and as older GNU seds read it,
    where that is a script they accept."""
    try:
        reader = _SedReader(script, brackets=True)
        commands = reader.commands()
    except _Unsure:
        return ScriptCode(problem=f"`{name}`'s script is read here otherwise than {name} may")
    writes = reader.written
    with contextlib.suppress(_Unsure):  # (one they refuse runs nothing)
        older = _SedReader(script, brackets=False)
        commands += older.commands()
        writes += older.written
    if None in commands:
        return ScriptCode(problem=f"`{name}` runs text it reads as commands (`e`, `s///e`)")
    if any("\\" in c for c in commands if c is not None):  # (`e echo a\nrm x`: two lines)
        return ScriptCode(problem=f"`{name}` runs a command whose escapes it rewrites first")
    return ScriptCode(
        list(dict.fromkeys(c for c in commands if c is not None)),
        writes=[(w, w or "") for w in dict.fromkeys(writes)],
    )


_SED_SPECIAL_FILES = frozenset({"/dev/stdout", "/dev/stderr"})
"""What sed's ``w`` writes without opening a file of that name."""


class _SedReader:
    """GNU sed's script grammar, as far as finding what runs: ``e COMMAND`` (its text, as
    :meth:`read_text` reads it), ``e`` alone and ``s///e`` (the pattern space: known only
    as it runs); with ``brackets``, a regex's bracket expression holds its delimiter."""

    def __init__(self, text: str, brackets: bool) -> None:
        self.text, self.at, self.brackets = text, 0, brackets
        self.found: list[str | None] = []
        self.written: list[str | None] = []
        """The files its ``w``, ``W`` and ``s///w`` write (a review's `sed -n 'w
        .git/config'`)."""

    def write_file(self) -> None:
        """The file name of a ``w``: the rest of the line, after blanks."""
        self.blanks()
        name = self.rest_of_line()
        if name not in _SED_SPECIAL_FILES:
            self.written.append(name)

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def blanks(self) -> None:
        while self.peek() in (" ", "\t") and self.peek():
            self.at += 1

    def rest_of_line(self) -> str:
        end = self.text.find("\n", self.at)
        end = len(self.text) if end < 0 else end
        line, self.at = self.text[self.at : end], end
        return line

    def commands(self) -> list[str | None]:
        while True:
            while self.peek() in (" ", "\t", "\n", ";") and self.peek():
                self.at += 1
            if not self.peek():
                return self.found
            if self.peek() == "#":
                self.rest_of_line()
                continue
            self.addresses()
            self.command()

    def addresses(self) -> None:
        if self.address():
            self.blanks()
            if self.peek() == ",":
                self.at += 1
                self.blanks()
                if self.peek() in ("+", "~"):
                    self.at += 1
                if not self.address():
                    raise _Unsure
        self.blanks()
        while self.peek() == "!":
            self.at += 1
            self.blanks()

    def address(self) -> bool:
        start = self.at
        char = self.peek()
        if char.isdigit():
            while self.peek().isdigit():
                self.at += 1
            if self.peek() == "~":
                self.at += 1
                while self.peek().isdigit():
                    self.at += 1
        elif char == "$":
            self.at += 1
        elif char in ("/", "\\"):
            if char == "\\":
                self.at += 1
            delimiter = self.peek()
            if delimiter in ("", "\n", "\\"):
                raise _Unsure
            self.at += 1
            self.delimited(delimiter, regex=True)
            while self.peek() in ("I", "M") and self.peek():
                self.at += 1
        return self.at > start

    def delimited(self, delimiter: str, regex: bool) -> None:
        """Skip to after the closing ``delimiter`` (a regex's bracket expressions hold it
        as a character where ``brackets``)."""
        while True:
            char = self.peek()
            if not char or char == "\n":
                raise _Unsure  # (sed refuses it; read as unsure all the same)
            self.at += 1
            if char == "\\":
                self.at += 1
            elif char == delimiter:
                return
            elif char == "[" and regex and self.brackets:
                end = _bracket_end(self.text, self.at)
                if end is None:
                    raise _Unsure
                self.at = end

    def read_text(self) -> str:
        """The text of `a`, `i`, `c` and `e`, as GNU sed's read_text reads it: a `\\`
        first takes the character after it as it is (a newline: the text is on the next
        line); then a backslash takes the one after it (a newline too: the text goes on)
        up to a newline. (The text as written: sed rewrites its escapes.)"""
        start = self.at
        if self.peek() == "\\":
            self.at += 2
        while self.peek() not in ("", "\n"):
            self.at += 2 if self.peek() == "\\" else 1
        return self.text[start : self.at]

    def end_of_command(self) -> None:
        self.blanks()
        if self.peek() in (";", "\n"):
            self.at += 1
        elif self.peek() not in ("", "}", "#"):
            raise _Unsure

    def command(self) -> None:
        char = self.peek()
        self.at += 1
        if char == "{":
            return
        if char in "}=dDgGhHnNpPxzF" and char:
            self.end_of_command()
        elif char in "aic" and char:
            self.blanks()
            self.read_text()
        elif char in ":bTtv" and char:
            # A label ends at a blank or `;` in GNU sed 4.9 (at the line's end in older
            # ones), and needs no `;` after it: what follows is read as commands, the
            # reading that finds more.
            self.blanks()
            while self.peek() not in ("", "\n", ";", " ", "\t", "}", "#"):
                self.at += 1
        elif char in "wW" and char:
            self.write_file()
        elif char in "rR" and char:
            self.rest_of_line()
        elif char == "e":
            self.blanks()
            if self.peek() in ("", "\n"):
                self.found.append(None)  # (the pattern space)
            else:
                self.found.append(self.read_text())
        elif char in "lLqQ" and char:
            self.blanks()
            while self.peek().isdigit():
                self.at += 1
            self.end_of_command()
        elif char in ("s", "y"):
            delimiter = self.peek()
            if delimiter in ("", "\n", "\\"):
                raise _Unsure
            self.at += 1
            self.delimited(delimiter, regex=char == "s")
            self.delimited(delimiter, regex=False)
            if char == "s":
                self.flags()
            self.end_of_command()
        else:
            raise _Unsure

    def flags(self) -> None:
        while True:
            char = self.peek()
            if char in (" ", "\t") and char:
                self.at += 1
            elif char == "e":
                self.at += 1
                self.found.append(None)
            elif char == "w":
                self.at += 1
                self.write_file()
            elif char and (char in "gpiImM" or char.isdigit()):
                self.at += 1
            else:
                return


_AWK_VALUED = "eEfFilvWZ"
"""gawk's short options that take a value (the rest of the word, or the next one)."""
_GAWK_FLAGS = "bcCghIkMnNOPrsStVY"
_GAWK_OPTIONAL = "dDLop"
"""gawk's short options whose value is the rest of their word, if any (``-pv`` profiles
into a file ``v``)."""
_PLAIN_AWK_OPTIONS = "Ffv"
"""The options every awk reads alike (mawk, busybox, the one-true-awk of BSD and macOS,
which ignores options it does not know, taking their whole word): any other asks."""
_AWK_LONG = {
    "assign": True, "field-separator": True, "file": True, "source": True,
    "include": True, "load": True, "exec": True, "sandbox": False, "bignum": False,
    "characters-as-bytes": False, "copyright": False, "csv": False, "debug": False,
    "dump-variables": False, "gen-pot": False, "help": False, "lint": False,
    "no-optimize": False, "non-decimal-data": False, "optimize": False, "persist": False,
    "posix": False, "pretty-print": False, "profile": False, "re-interval": False,
    "traditional": False, "use-lc-numeric": False, "version": False, "locale": True,
}  # fmt: skip
"""gawk's long options, and whether each takes the next word (the others take a value
only after `=`: ``--profile=FILE``)."""
_AWK_LETTERS = {
    "e": "source", "E": "exec", "f": "file", "F": "field-separator", "i": "include",
    "l": "load", "v": "assign", "W": "W", "Z": "locale",
}  # fmt: skip


def _awk_option(name: str, word: str) -> tuple[str | None, str | None, bool]:
    """(The option a word of short options ends with, its attached value, whether it
    takes the next word); the option "?" where this awk may read it otherwise."""
    if name != "gawk":
        if word[1] not in _PLAIN_AWK_OPTIONS:
            return "?", None, False
        attached = word[2:]
        return _AWK_LETTERS[word[1]], attached or None, not attached
    for at, letter in enumerate(word[1:], 2):
        if letter == "D":  # (the debugger: its `eval` runs code read from input)
            return "?", None, False
        if letter in _GAWK_OPTIONAL:
            return None, None, False
        if letter in _AWK_VALUED:
            attached = word[at:]
            return _AWK_LETTERS[letter], attached or None, not attached
        if letter not in _GAWK_FLAGS:
            return "?", None, False
    return None, None, False


def _awk(name: str, rest: Sequence[str | None]) -> ScriptCode:
    texts: list[str] = []
    given = False  # (-f, -e/--source: the first operand is a file)
    i = 0
    while i < len(rest):  # options end at the program (its words are the program's)
        word = rest[i]
        if word is None:
            return ScriptCode(problem=f"`{name}`'s program or options are computed at run time")
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        i += 1
        value: str | None = None
        if word.startswith("--"):
            option = _long_option(word, _AWK_LONG) if name == "gawk" else "?"
            option = "?" if option == "debug" else option
            if option is None:
                return ScriptCode(problem=f"`{name}` is given an option read here as none")
            value = word.split("=", 1)[1] if "=" in word else None
            if option != "?" and _AWK_LONG[option] and value is None:
                value = rest[i] if i < len(rest) else ""
                i += 1
        else:
            option, value, takes_next = _awk_option(name, word)
            if takes_next:
                value = rest[i] if i < len(rest) else ""
                i += 1
        if option == "?":
            return ScriptCode(problem=f"`{name}` is given an option that awks read otherwise")
        if option == "sandbox":
            return ScriptCode()  # (gawk --sandbox: no system(), pipe or extension)
        if option == "W":
            return ScriptCode(problem=f"`{name} -W` may run a program file (`-W exec`)")
        if option in ("file", "exec", "include", "load"):
            return ScriptCode(problem=f"`{name}` runs a program it reads from a file")
        if option == "source":
            if value is None:
                return ScriptCode(problem=f"`{name}` runs a program computed at run time")
            texts.append(value)
            given = True
    if not given:
        if i >= len(rest):
            return ScriptCode()
        if rest[i] is None:
            return ScriptCode(problem=f"`{name}` runs a program computed at run time")
        texts.append(rest[i] or "")
    return _awk_program(name, "\n".join(texts))


_AWK_RUNS = re.compile(r"(?<![A-Za-z_])(?:system|PROCINFO)(?![A-Za-z0-9_])|@|\|+")
"""(A digit before a name is no part of it: `1system(…)` is `1` joined to a call.)"""


def _awk_program(name: str, program: str) -> ScriptCode:
    """Whether an awk program may run a command: ``system``, a pipe (any ``|`` but
    ``||``), ``@`` (gawk's ``@load``, ``@include``, an indirect call, which may name
    ``system``) or ``PROCINFO`` in its code (its whole text where that is unsure)."""
    text = _awk_code(program)
    for found in _AWK_RUNS.finditer(program if text is None else text):
        if found.group() != "||":
            return ScriptCode(
                problem=f"`{name}`'s program may run commands (`system`, a pipe, `@`): "
                f"`{found.group()}`"
            )
    return ScriptCode()


_REGEX_AFTER = frozenset("(,{};!~=|&}\n")
"""Where a ``/`` opens a regex literal in every awk (no operand comes before it); after
anything else it may be a division, which only awk's grammar tells (``a++ / 2``)."""


def _awk_code(program: str) -> str | None:
    """The program with its strings, regex literals and comments taken out, or None where
    awks may read it otherwise: a ``/`` that may be a division, a bracket expression
    holding ``/`` (the end of the regex in some), a string or regex not closed on its
    line (awk refuses it)."""
    if "\r" in program:  # (a blank to some awks, a character to others)
        return None
    out: list[str] = []
    at, last, end = 0, "\n", 0
    while at < len(program):
        char = program[at]
        if char == '"':
            end = at + 1
            while end < len(program) and program[end] not in ('"', "\n"):
                end += 2 if program[end] == "\\" else 1
            if end >= len(program) or program[end] != '"' or "\n" in program[at:end]:
                return None
            out.append('""')
        elif char == "/":
            if last not in _REGEX_AFTER:
                return None
            end = at + 1
            while end < len(program) and program[end] not in ("/", "\n"):
                if program[end] == "[":
                    close = _bracket_end(program, end + 1)
                    if close is None or "/" in program[end:close]:
                        return None
                    end = close
                else:
                    end += 2 if program[end] == "\\" else 1
            if end >= len(program) or program[end] != "/":
                return None
            out.append("//")
        elif char == "#":
            end = program.find("\n", at)
            at = len(program) if end < 0 else end
            continue
        elif program.startswith("\\\n", at):  # (a line continued: no new statement)
            at += 2
            continue
        else:
            out.append(char)
            last = char if char not in (" ", "\t") else last
            at += 1
            continue
        at, last = end + 1, '"'
    return "".join(out)


def _bracket_end(text: str, at: int) -> int | None:
    """Where a bracket expression whose ``[`` is just before ``at`` ends (after its
    ``]``; a ``]`` first, or after ``^``, is one of its characters), or None."""
    at += text[at : at + 1] == "^"
    at += text[at : at + 1] == "]"
    while at < len(text):
        char = text[at]
        if char == "]":
            return at + 1
        if char == "[" and text[at + 1 : at + 2] in (":", "=", "."):
            close = text.find(text[at + 1] + "]", at + 2)
            if close < 0:
                return None
            at = close + 2
            continue
        if char == "\n":
            return None
        at += 1
    return None
