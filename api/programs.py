"""Programs that run code their words give (SPEC PM1): shells (``-c TEXT``, a script read
from input), ``eval``, ``trap``, ``env -S``; git (settings and options that name a
program, ``rebase -x``, ``bisect run``, ``submodule foreach``); tar (``--to-command``,
``-I``); sort (``--compress-program``). ``api.reading`` checks that code as a command of its own, or asks."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from typing import Literal

from .linkpaths import PER_PROCESS, links_followed, normal_path
from .runners import TIME_OPTIONS_WITH_VALUE, short_options, takes_next_word
from .shellwords import LineChosen, LineSplit, literal_start, made_by_the_line

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
"""``SHELL -c TEXT`` runs TEXT: it is parsed and checked instead."""


_SHELL_NAME = re.compile(r"(?:(?:ba|rba|z|rz|da|k|rk|mk|pdk|a|c|tc|ya|po)?sh|fish|ksh93)[-._0-9]*")
"""A shell's base name, versioned too (``zsh5``, ``bash-5.2``): ``ssh`` is none."""


def is_shell(name: str) -> bool:
    return _SHELL_NAME.fullmatch(os.path.basename(name)) is not None


SHELL_OPTIONS_WITH_VALUE = frozenset({
    "-o", "+o", "-O", "+O", "--rcfile", "--init-file", "--emulate",
})  # fmt: skip


STDIN_PATHS = re.compile(r"-|/dev/stdin|/dev/fd/\d+|/proc/(self|thread-self|\d+)/fd/\d+")
"""A script path that is the shell's own input (a pipe, a here-string, a heredoc)."""


def reads_input(path: str) -> bool:
    """Whether a script path is the shell's input, however spelled (``//dev/stdin``,
    ``/dev/./stdin``), or something of its own process (``/proc/net/../fd/0``)."""
    if path == "-":
        return True
    absolute = os.path.join("/", path) if path.startswith("/") else None
    if absolute is None:
        return False
    normal = normal_path(absolute)
    return (
        STDIN_PATHS.fullmatch(normal) is not None
        or PER_PROCESS.search(absolute) is not None
        or links_followed(absolute) is None
    )


def abbreviates(word: str | None, option: str) -> bool:
    """Whether ``word`` is the long ``option``, or a prefix of it getopt takes for it
    (``--c`` for ``--chdir``; ``--split=TEXT``): one of another option too is refused by
    getopt, and runs nothing (`cp --t=/etc x` wrote there: a review)."""
    flag = (word or "").split("=", 1)[0]
    return len(flag) > 2 and flag.startswith("--") and option.startswith(flag)


GIT_OPTIONS_WITH_VALUE = frozenset({
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
    "--attr-source",
})  # fmt: skip
"""(``--attr-source TREE``: git 2.42's; its value was taken for the subcommand, which hid
``push`` and the ``-c`` settings after it, a trial.)"""


def git_options(rest: Sequence[str | None]) -> int:
    """How many of git's words are its own options, before its subcommand (``git -C dir
    --no-pager push`` runs ``git push``)."""
    i = 0
    while i < len(rest) and (word := rest[i]) is not None and word.startswith("-"):
        i += 2 if word in GIT_OPTIONS_WITH_VALUE else 1
    return min(i, len(rest))


def split_string(words: Sequence[str | None]) -> str | None:
    """The command line ``env -S TEXT WORDS…`` runs (``-vS``, ``-STEXT``,
    ``--split-string=TEXT`` too), or None when a word of it is known only as it runs."""
    for index, word in enumerate(words):
        if word is None:
            return None
        options = short_options(word, "uCSP")
        if abbreviates(word, "--split-string") or options[-1:] == ["-S"]:
            if word.startswith("--"):
                attached = word.split("=", 1)[1] if "=" in word else ""
            else:
                attached = word[len(options) + 1 :]  # (`-vSrm`)
            line: list[str | None] = [attached] if attached else []
            line += words[index + 1 :]  # (the text, unless attached, and the words after)
            if not line or any(w is None for w in line):
                return None
            text, *after = [w or "" for w in line]  # (the text split as env splits it; the
            return " ".join([text, *map(shlex.quote, after)])  # words after as they are)
    return None


GIT_RUNS = {
    "rebase": ("-x", "--exec"), "difftool": ("-x", "--extcmd"), "bisect": ("run",),
    "submodule": ("foreach",), "filter-branch": ("",), "filter-repo": ("",),
    "fetch": ("--upload-pack",), "pull": ("--upload-pack",), "ls-remote": ("--upload-pack",),
    "clone": ("-u", "--upload-pack"), "archive": ("--exec",), "grep": ("-O",
    "--open-files-in-pager"), "push": ("--receive-pack", "--exec"),
    "send-pack": ("--receive-pack", "--exec"), "fetch-pack": ("--upload-pack", "--exec"),
    "send-email": ("--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd", "--smtp-server"),
    "instaweb": ("-d", "--httpd", "-b", "--browser"), "daemon": ("--access-hook",),
}  # fmt: skip
"""git subcommands (and their words) that run a command given to them (``send-email
--sendmail-cmd CMD``, ``instaweb --httpd CMD``: a trial; ``--smtp-server /path`` runs
the program, a host name does not: it asks either way)."""
GIT_EXACT_OPTIONS = {"send-email": frozenset({"--to", "--cc"})}
"""Options of those that are no abbreviation of one that runs a command (``--to`` is not
``--to-cmd``: git takes an exact name first)."""


GIT_TRANSFERS = frozenset({"fetch", "pull", "push", "clone", "ls-remote", "grep"})
"""Of those, the ones whose words known only as run are not taken for such an option
(`git push origin "$BRANCH"`: far too common to ask)."""


SAFE_GIT_SETTINGS = re.compile(
    r"(user|color|advice|i18n|column|status|rerere)\.[\w.-]+|init\.defaultbranch"
    r"|diff\.(noprefix|algorithm|renames|colormoved|mnemonicprefix)|core\.(quotepath|autocrlf"
    r"|filemode|ignorecase|longpaths|eol|safecrlf|symlinks|compression|precomposeunicode"
    r"|whitespace|abbrev)|push\.(default|autosetupremote|followtags)|safe\.directory"
    r"|http\.(sslverify|version|postbuffer|extraheader)|protocol\.version|transfer\.fsckobjects"
    r"|pull\.(rebase|ff)|fetch\.prune|rebase\.(autosquash|autostash)|merge\.ff"
    r"|log\.(date|decorate|abbrevcommit)|format\.pretty|gc\.auto|maintenance\.auto",
    re.IGNORECASE,
)
"""Settings that change no program git runs (``-c user.name=…``); any other may
(``alias.p``, ``core.fsmonitor``, ``core.pager``, ``*.command``, ``include.path``)."""


_SETTINGS_WITH_PROGRAMS = re.compile(
    r".*\.(cmd|command|program|path|helper|tool|driver|editor|textconv|clean|smudge|process"
    r"|pager|sshcommand|askpass|fsmonitor|hookspath|templatedir)$",
    re.IGNORECASE,
)


def _git_setting_runs(key: str | None) -> bool:
    """Whether setting ``key`` may make git run a program (an unknown key may)."""
    if key is None:
        return True
    return not SAFE_GIT_SETTINGS.fullmatch(key) or bool(_SETTINGS_WITH_PROGRAMS.match(key))


TAR_VALUED = "bCfFgHIKLNTVX"
"""tar's old-style letters that take a value (``tar cIf CMD out.tgz dir``)."""


TAR_LONG_VALUED = ("--file", "--directory", "--exclude", "--exclude-from", "--files-from",
                   "--transform", "--xform", "--owner", "--group", "--mode", "--mtime",
                   "--newer", "--after-date", "--newer-mtime", "--label", "--format",
                   "--blocking-factor", "--record-size", "--tape-length", "--suffix",
                   "--strip-components", "--listed-incremental", "--index-file",
                   "--volno-file", "--level", "--sort", "--use-compress-program",
                   "--to-command", "--rsh-command", "--rmt-command", "--info-script",
                   "--new-volume-script", "--checkpoint-action", "--starting-file")  # fmt: skip
"""tar's long options whose value may be the next word."""


def _tar_values(words: Sequence[str | None]) -> set[int]:
    """The indices of tar's words that are an option's value (``-f "$f"``; old style,
    ``xf "$f"``): no option, whatever they hold."""
    return _tar_words(words)[2]


TAR_COMMANDS = ("--to-command", "--use-compress-program", "--rsh-command", "--rmt-command",
                "--info-script", "--new-volume-script", "--checkpoint-action")  # fmt: skip


_LITERAL_START = re.compile(r"[-\w]*")


def may_be_option(shown: str, options: Sequence[str], letters: str = "", valued: str = "") -> bool:
    """Whether a word known only as it runs may be one of the long ``options`` (or a
    short option group holding one of ``letters``), by its start as written:
    ``--to-command="$C"``, ``"--co$X"``, ``-$X``, ``-c$X`` (what it expands to may add
    any letter, unless one of ``valued`` came first: the rest is its value). A word
    wholly computed (``"$f"``) is taken for none, as a file name is far likelier, unless
    the command line makes it (:func:`made_by_the_line`). A quoted start once passed for
    a computed one (``"--to-command=$C"`` got its command past the rules: a review)."""
    if made_by_the_line(shown):
        return True
    start = literal_start(shown)
    flag = _flag(start)
    if flag.startswith("--"):
        return any(option.startswith(flag) or flag.startswith(option) for option in options)
    if not flag.startswith("-"):
        return False
    if start == "-" and options:  # (`"-$X"` with `X=-filter=…` is `--filter=…`: a review)
        return True
    if not letters:
        return False
    for letter in flag[1:]:
        if letter in letters:
            return True
        if letter in valued:
            return False
    return flag == start


def _flag(start: str) -> str:
    """An option's name at the start of a word's literal start (``--to-command`` of
    ``--to-command=x``)."""
    match = _LITERAL_START.match(start)
    return match.group(0) if match else ""


def _tar_command(
    words: Sequence[str | None], index: int, shown: Sequence[str] | None = None
) -> str | None:
    """The command ``tar``'s word ``index`` gives it to run ("" for none; None when it
    is computed): ``--to-command=CMD``, ``-I CMD``, ``--checkpoint-action=exec=CMD``."""
    word = words[index]
    if word is None:
        text = shown[index] if shown is not None and index < len(shown) else ""
        if index == 0 and not literal_start(text).startswith("-"):  # (old style: its
            text = "-" + text  # letters are options, `tar "x$X" out CMD` with `X=fI`)
        return None if may_be_option(text, TAR_COMMANDS, "IF", TAR_VALUED) else ""
    value: str | None = ""
    if index == 0 and not word.startswith("-"):  # old style, `tar cIf CMD out f`: each
        taken = 0  # letter that takes a value takes the next word, in order
        for letter in word:
            taken += letter in TAR_VALUED
            if letter in "IF":
                return words[taken] if taken < len(words) else ""
        return ""
    if word.startswith("--") and any(abbreviates(word, o) for o in TAR_COMMANDS):
        value = long_value(words, index)
        if value is not None and abbreviates(word, "--checkpoint-action"):
            value = value[len("exec=") :] if value.startswith("exec=") else ""
    elif word.startswith("-") and not word.startswith("--") and ("I" in word or "F" in word):
        at = word.index("I") if "I" in word else word.index("F")
        value = word[at + 1 :] or (words[index + 1] if index + 1 < len(words) else "")
    return value


def long_value(words: Sequence[str | None], index: int) -> str | None:
    """The value of the long option that is word ``index``: after its ``=``, else the
    next word ("" for none; None when it is computed)."""
    word = words[index] or ""
    if "=" in word:
        return word.split("=", 1)[1]
    return words[index + 1] if index + 1 < len(words) else ""


SORT_VALUED = "koStT"
"""GNU sort's short options that take a value (``-o FILE``, ``-T DIR``)."""
SORT_LONG_VALUED = ("--key", "--output", "--buffer-size", "--field-separator",
                    "--temporary-directory", "--batch-size", "--files0-from",
                    "--random-source", "--sort", "--parallel")  # fmt: skip
"""Its long ones besides ``--compress-program``."""


TIME_LONG_VALUED = tuple(o for o in TIME_OPTIONS_WITH_VALUE if o.startswith("--"))
TIME_VALUED = "".join(o[1] for o in TIME_OPTIONS_WITH_VALUE if len(o) == 2)
"""GNU time's options that take a value, long and short (``-o FILE`` is a write)."""
SHUF_LONG_VALUED = ("--input-range", "--head-count", "--output", "--random-source")
"""GNU shuf's long options that take a value (its short ones: ``-i``, ``-n``, ``-o``)."""


def _sort_options(
    words: Sequence[str | None],
    shown: Sequence[str],
    short_valued: str = SORT_VALUED,
    long_valued: Sequence[str] = SORT_LONG_VALUED,
) -> tuple[list[str | None], list[tuple[int, str]]]:
    """What GNU ``sort``'s words name, up to ``--`` (not an option's value: ``sort -o --
    --compress-program=PROG`` writes a file named ``--``): the programs
    ``--compress-program=PROG`` runs on its temporary files (as it spills a large input
    to them), and where the files ``-o FILE`` (``--output``, abbreviated too) writes are
    named, each the index of the word that holds or may hold one with what comes before
    the file in it (``-uo`` of ``-uoFILE``, ``--output=``)."""
    programs: list[str | None] = []
    outputs: list[tuple[int, str]] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            break
        if word is None:
            if may_be_option(shown[index - 1], ["--compress-program"]):
                programs.append(None)
            if may_be_option(shown[index - 1], ["--output"], "o", short_valued):
                outputs.append((index - 1, ""))
        elif abbreviates(word, "--compress-program"):
            programs.append(long_value(words, index - 1))
            index += "=" not in word
        elif word.startswith("--"):
            valued = "=" not in word and any(abbreviates(word, o) for o in long_valued)
            if _long_prefix(word, "--output"):
                outputs.append((index, "") if valued else (index - 1, word.split("=", 1)[0] + "="))
            index += valued
        elif word.startswith("-") and len(word) > 1:
            letters = word[1:]  # (a group: `-no FILE`, `-oFILE`)
            at = next((i for i, letter in enumerate(letters) if letter in short_valued), None)
            if at is not None and letters[at] == "o":
                attached = at + 1 < len(letters)
                outputs.append((index - 1, word[: at + 2]) if attached else (index, ""))
            index += at is not None and at == len(letters) - 1  # (its value: the next word)
    return programs, outputs


def _positional(
    words: Sequence[str | None], short_valued: str, long_valued: Sequence[str] = ()
) -> list[int]:
    """The indices of a program's words that are no option nor an option's value (or
    are computed)."""
    return _scan(words, short_valued, long_valued)[0]


def _scan(
    words: Sequence[str | None], short_valued: str, long_valued: Sequence[str] = ()
) -> tuple[list[int], list[int]]:
    """The indices of a program's operands (words that are no option nor an option's
    value, or are computed), and of its options (not their values: `cp -S -t a x`'s `-t`
    is a suffix, a review)."""
    operands: list[int] = []
    options: list[int] = []
    index, before = 0, True
    while index < len(words):
        word = words[index]
        index += 1
        if before and word == "--":
            before = False
        elif not before or word is None or word == "-" or not word.startswith("-"):
            operands.append(index - 1)
        else:
            options.append(index - 1)
            if word.startswith("--"):
                index += "=" not in word and any(abbreviates(word, o) for o in long_valued)
            else:
                index += takes_next_word(word, short_valued)
    return operands, options


def _value_at(words: Sequence[str | None], index: int, option: str) -> str | None:
    """The file named at word ``index``: after ``option`` where the word starts with it
    (``-oFILE``, ``--output=FILE``, ``of=FILE``), else the whole word."""
    word = words[index] if index < len(words) else ""
    if word is None:
        return None
    return word[len(option) :] if option and word.startswith(option) else word


_COPIERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cp": ("St", ("--target-directory", "--suffix", "--no-preserve", "--sparse")),
    "mv": ("St", ("--target-directory", "--suffix")),
    "ln": ("St", ("--target-directory", "--suffix")),
    "link": ("", ()),
    "install": ("gmoSt", ("--target-directory", "--suffix", "--group", "--mode", "--owner",
                          "--strip-program")),
}  # fmt: skip
"""Programs that write their last operand, or into it (a directory), or into ``-t DIR``:
their options that take the next word (short letters, long names)."""

_ARCHIVERS: dict[str, tuple[str, tuple[str, ...], int, Kind, tuple[str, ...]]] = {
    "zip": ("bntOPZsIXi", ("--temp-path", "--suffixes", "--output-file", "--password",
                           "--compression-method", "--split-size"), 0, "file",
            ("-O", "--output-file")),
    "split": ("abCdlnt", ("--suffix-length", "--bytes", "--line-bytes", "--lines", "--number",
                          "--separator", "--additional-suffix", "--filter"), 1, "file", ()),
    "rsync": ("eBfTMp", ("--rsh", "--rsync-path", "--filter", "--exclude", "--include",
                         "--exclude-from", "--include-from", "--files-from", "--temp-dir",
                         "--compare-dest", "--copy-dest", "--link-dest", "--backup-dir",
                         "--suffix", "--chmod", "--chown", "--usermap", "--groupmap",
                         "--timeout", "--contimeout", "--port", "--log-file",
                         "--log-file-format", "--out-format", "--password-file", "--bwlimit",
                         "--partial-dir", "--max-size", "--min-size", "--block-size",
                         "--checksum-choice", "--compress-choice", "--compress-level",
                         "--skip-compress", "--iconv", "--info", "--debug", "--write-batch",
                         "--only-write-batch", "--read-batch", "--protocol", "--sockopts",
                         "--max-delete", "--modify-window", "--remote-option", "--outbuf",
                         "--address", "--config", "--dparam"), -1, "tree",
              ("--log-file", "--write-batch", "--only-write-batch")),
}  # fmt: skip
"""Programs that write where an operand says (its options with a value, short and long;
which operand: the first, the second, the last; how) and files options name: ``zip
OUT.zip``, ``split IN PREFIX`` (its pieces, ``PREFIXaa``…), ``rsync SRC… DEST`` (a
directory written whole, unless on another host: ``host:path``) and ``--log-file``
(``unzip``: :func:`_unzip_writes`)."""
_REMOTE = re.compile(r"[^/]*:|rsync://")
"""An rsync operand on another host (``host:path``, ``user@host:``, ``rsync://``)."""


_TAR_MODES = {"--create": "c", "--append": "r", "--update": "u", "--catenate": "A",
              "--concatenate": "A", "--extract": "x", "--get": "x"}  # fmt: skip
_TAR_NAMED = {"--file": "f", "--directory": "C", "--listed-incremental": "g",
              "--index-file": "i", "--one-top-level": "1", "--volno-file": "v",
              "--files-from": "T"}  # fmt: skip


def _tar_words(
    words: Sequence[str | None],
) -> tuple[set[str], list[tuple[str, int, str]], set[int]]:
    """tar's words as it reads them: the letters of its modes and options; each option
    that names a file or directory (its letter, the index of the word holding the value,
    what comes before the value there); the indices of words that are an option's value.
    Old style first (``tar cf OUT …``: each letter that takes a value takes the next
    word), then ``-xf FILE`` and ``--file=FILE`` up to ``--``."""
    modes: set[str] = set()
    named: list[tuple[str, int, str]] = []
    values: set[int] = set()
    index = 0
    if words and words[0] is not None and not words[0].startswith("-"):
        modes.update(words[0])
        valued = [letter for letter in words[0] if letter in TAR_VALUED]
        named += [(letter, at, "") for at, letter in enumerate(valued, 1)]
        values.update(range(1, min(1 + len(valued), len(words))))
        index = 1 + len(valued)
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            break
        if word is None or not word.startswith("-") or word == "-":
            continue
        if word.startswith("--"):
            modes.update(m for option, m in _TAR_MODES.items() if abbreviates(word, option))
            if abbreviates(word, "--absolute-names"):
                modes.add("P")
            attached, flag = "=" in word, word.split("=", 1)[0]
            given = [o for o in _TAR_NAMED if abbreviates(word, o)]  # (`--file` is itself,
            for option in [o for o in given if o == flag] or given:  # no `--files-from`)
                letter = _TAR_NAMED[option]
                if attached or letter != "1":  # (`--one-top-level`'s value: attached only)
                    named.append((letter, index - 1, flag + "=") if attached
                                 else (letter, index, ""))  # fmt: skip
            if not attached and any(abbreviates(word, o) for o in TAR_LONG_VALUED):
                values.add(index)
                index += 1
            continue
        for at, letter in enumerate(word[1:], 1):
            modes.add(letter)
            if letter in TAR_VALUED:  # (its value: the rest, or the next word)
                if at + 1 < len(word):
                    named.append((letter, index - 1, word[: at + 1]))
                else:
                    named.append((letter, index, ""))
                    values.add(index)
                    index += 1
                break
    return modes, named, values


def _unzip_writes(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """Where ``unzip`` extracts: ``-d DIR`` (``-dDIR``), written whole, else where it runs
    (the archive's names); anywhere with ``-:``, which keeps ``../`` in names."""
    found: list[tuple[str | None, str, Kind]] = [
        ((w or "")[2:] or _next(words, i), shown[i], "tree")
        for i, w in enumerate(words)
        if (w or "").startswith("-d")
    ] or [(".", "unzip", "names")]
    if any(w is not None and w.startswith("-") and ":" in w for w in words):
        found.append((None, "-:", "tree"))
    return [(value, text, kind) for value, text, kind in found if value != ""]


def _tar_writes(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """What ``tar`` writes: the archive ``-f FILE`` it creates or adds to (``-c``, ``-r``,
    ``-u``, ``-A``; old style, ``cf FILE``), the directory ``-C DIR`` it extracts into
    (whole), or where it runs (the archive's names), anywhere with ``-P`` or a ``-T``
    list (whose lines may say ``-C DIR``), its ``-g`` snapshot, ``--index-file``,
    ``--one-top-level=DIR`` and ``--volno-file`` (reviews wrote by each under a deny
    rule)."""
    modes, named, _ = _tar_words(words)
    kinds: dict[str, Kind] = {"g": "file", "i": "file", "v": "file"}
    if modes & set("cruA"):
        kinds["f"] = "file"
    if "x" in modes:
        kinds["C"] = kinds["1"] = "tree"  # (`--one-top-level=DIR`)
    found: list[tuple[str | None, str, Kind]] = [
        (_value_at(words, i, before), shown[i], kinds[letter])
        for letter, i, before in named
        if letter in kinds and i < len(words)
    ]
    letters = {letter for letter, _, _ in named}
    if "x" in modes and "C" not in letters:
        found.append((".", "tar -x", "names"))  # (where it runs)
    if "x" in modes and ("P" in modes or "T" in letters):
        found.append((None, "tar -x", "tree"))  # (anywhere, known only as it runs)
    return [(value, text, kind) for value, text, kind in found if value not in ("", "-")]


_SUDO_VALUED = ("ugCDhprtTU", ("--user", "--group", "--close-from", "--chdir", "--host",
                               "--prompt", "--role", "--type", "--other-user",
                               "--command-timeout"))  # fmt: skip
"""sudo's options that take the next word."""


def _edits(words: Sequence[str | None]) -> bool:
    """Whether ``sudo``'s own options, before its command, say ``-e``/``--edit``: it
    writes the files that follow, as ``sudoedit`` does (a review)."""
    operands, options = _scan(words, *_SUDO_VALUED)
    first = operands[0] if operands else len(words)
    return any(
        abbreviates(words[i], "--edit") or "-e" in short_options(words[i] or "", _SUDO_VALUED[0])
        for i in options
        if i < first
    )


_TOUCHERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "touch": ("drt", ("--date", "--reference")),
    "truncate": ("sr", ("--size", "--reference")),
}
"""Programs that write each of their operands."""


def files_written(
    name: str, rest: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """The files a program writes by its words, as a redirection would (each with its
    word as written, None where it is known only as it runs, and how, :data:`Kind`):
    ``tee FILE…``, ``sort -o FILE``, ``time -o FILE`` (a wrapper: given its own words),
    ``uniq IN OUT``, ``xxd IN OUT``, ``tree -o FILE``, ``dd of=FILE``, git's
    ``--output FILE``, ``history -w FILE``, what ``cp``, ``mv``, ``ln`` and ``install``
    write to, ``touch`` and ``truncate`` operands, what ``curl`` and ``wget`` download to
    (sed's: ``texttools.script_code``).
    Write rules and the files git or a shell runs commands from apply to them (`sort -o .git/config` with
    `Bash(sort *)` set a `core.fsmonitor` the next `git status` ran: a review; so did
    `sed -i … .git/config` and `cp x .git/config`, a trial)."""
    words = list(rest)
    at: list[tuple[int, str]] = []
    made: list[tuple[str | None, str, Kind]] = []  # (directories git makes)
    if name in _COPIERS:
        return _copied_to(name, words, shown)
    if name in _DOWNLOADS:
        return _downloaded_to(name, words, shown)
    if name == "tar":
        return _tar_writes(words, shown)
    if name == "unzip":
        return _unzip_writes(words, shown)
    if name in _ARCHIVERS:  # (`zip OUT.zip …`, `split IN PREFIX`, `rsync SRC… DEST`)
        short, long, place, kind, files = _ARCHIVERS[name]
        operands = _positional(words, short, long)
        if name == "rsync" and len(operands) < 2:
            operands = []  # (one operand: it lists, writes nothing)
        picked = operands[place : place + 1] if place >= 0 else operands[place:]
        named = [(words[i], shown[i], kind) for i in picked
                 if words[i] is None or not _REMOTE.match(words[i] or "")]  # fmt: skip
        if name == "split":  # (its pieces, `PREFIXaa`…; `xaa` where it runs: a prefix
            prefix = words[picked[0]] if picked else "x"  # `/etc/` writes `/etc/xaa`)
            text = shown[picked[0]] if picked else "split"
            named = [(None if prefix is None else f"{prefix}aa", text, "file")]
        for i, word in enumerate(words):
            given = next((o for o in files if abbreviates(word, o) or word == o), None)
            if given is not None:
                value = long_value(words, i) if given.startswith("--") else _next(words, i)
                named.append((value, shown[i], "file"))
        return [(value, text, kind) for value, text, kind in named if value not in ("", "-")]
    if name == "sudoedit" or (name == "sudo" and _edits(words)):  # (the files it edits)
        at = [(i, "") for i in _positional(words, *_SUDO_VALUED) if words[i] != "--"]
    elif name in _TOUCHERS:
        at = [(i, "") for i in _positional(words, *_TOUCHERS[name])]
    elif name == "tee":
        at = [(i, "") for i in _positional(words, "")]
    elif name == "sort":
        at = _sort_options(words, shown)[1]
    elif name == "shuf":  # (its `-o FILE` as sort's: a trial)
        at = _sort_options(words, shown, "ino", SHUF_LONG_VALUED)[1]
    elif name == "time":  # (GNU time's `-o FILE`, its own words only: a trial)
        at = _sort_options(words, shown, TIME_VALUED, TIME_LONG_VALUED)[1]
    elif name == "uniq":
        longs = ("--skip-fields", "--skip-chars", "--check-chars")
        at = [(i, "") for i in _positional(words, "fsw", longs)[1:2]]
    elif name == "xxd":
        at = [(i, "") for i in _xxd_files(words)[1:2]]
    elif name == "git":  # (`--output`; `archive -o FILE`, `-oFILE`: a trial)
        sub = git_options(words)
        made = _git_writes(words[sub:], shown[sub:], words[:sub])
        archive = sub < len(words) and words[sub] == "archive"
        outputs = sub >= len(words) or words[sub] not in _GIT_WITHOUT_OUTPUT
        ended = words.index("--", sub) if "--" in words[sub:] else len(words)
        for i, w in enumerate(words[:ended]):
            if w == "--output" or (archive and i > sub and w == "-o"):
                at.append((i + 1, ""))
            elif (
                w is None  # (git's own options' values, its subcommand: no `--output`
                and (outputs if i > sub else isinstance(shown[i], LineSplit))  # unless
                and may_be_option(shown[i], ["--output"], "o" if archive else "")  # split)
            ):
                at.append((i, ""))
            elif w is not None and w.startswith("--output="):
                at.append((i, "--output="))
            elif archive and i > sub and w is not None and w[:2] == "-o":
                at.append((i, "-o"))
    elif name == "tree":  # (`-o FILE`; grouped, each option of the group that takes a
        # value takes the next word in turn: `-Lo 1 FILE`, `-oL FILE 1`, a trial)
        for i, w in enumerate(words):
            if w is None and may_be_option(shown[i], [], "o", _TREE_VALUED):
                at.append((i, ""))
            elif w is not None and w[:1] == "-" and w[1:2] != "-" and "o" in w:
                valued = [letter for letter in w[1:] if letter in _TREE_VALUED]
                at.append((i + 1 + valued.index("o"), ""))
    elif name == "dd":  # (`of=FILE`; `"of=$F"` computed)
        at = [(i, "of=") for i, w in enumerate(words)
              if (w or re.sub(r"[\"']", "", shown[i])).startswith("of=")]  # fmt: skip
    elif name == "history":  # (`-w FILE`, `-w -- FILE`; no file: `$HISTFILE`, computed)
        for i, w in enumerate(words):
            if w is None or (w[:1] == "-" and set(w[1:]) & set("aw")):
                j = i + 1 + (_next(words, i) == "--")
                if j < len(words) or w is None:
                    at.append((j if w is not None else i, ""))
                else:
                    return [(None, "$HISTFILE", "file")]
    return [*made, *(
        (_value_at(words, i, option), shown[i] if i < len(shown) else "", "file")
        for i, option in at
        if i < len(words) and words[i] != "-"
    )]  # fmt: skip


_WORK_TREE_WRITERS = frozenset({
    "checkout", "switch", "reset", "restore", "stash", "merge", "pull", "rebase",
    "cherry-pick", "revert", "checkout-index", "read-tree", "apply", "am", "mv", "rm",
    "clean", "submodule", "sparse-checkout", "bisect",
})  # fmt: skip
"""git subcommands that write in the work tree: where ``--work-tree=DIR`` says, or,
with ``--git-dir`` alone, where git runs (`git -C /etc --git-dir=r checkout -- .`)."""
_GIT_OPTION_WRITES: dict[str, tuple[tuple[str, ...], Kind]] = {
    "bugreport": (("-o", "--output-directory"), "tree"),
    "diagnose": (("-o", "--output-directory"), "tree"),
    "mailsplit": (("-o",), "tree"),
    "fast-export": (("--export-marks",), "file"),
    "fast-import": (("--export-marks",), "file"),
    "credential-store": (("--file",), "file"),
    "format-patch": (("-o", "--output-directory"), "tree"),
}
"""git subcommands that write where an option says (a review wrote under a deny rule's
folder by each)."""
_GIT_MAKERS: dict[tuple[str, ...], tuple[str, tuple[str, ...], int, Kind]] = {
    # subcommand: short options with a value, long ones, the operand written, how
    ("init",): ("b", ("--template", "--separate-git-dir", "--object-format", "--initial-branch",
                      "--ref-format"), 0, "tree"),
    ("clone",): ("obcju", ("--origin", "--branch", "--config", "--jobs", "--upload-pack",
                           "--template", "--reference", "--reference-if-able", "--depth",
                           "--separate-git-dir", "--shallow-since", "--shallow-exclude",
                           "--filter", "--server-option", "--bundle-uri", "--ref-format"),
                  1, "tree"),
    ("worktree", "add"): ("bB", ("--reason",), 0, "tree"),
    ("worktree", "move"): ("", (), 1, "tree"),
    ("bundle", "create"): ("", ("--version",), 0, "file"),
}  # fmt: skip
"""git subcommands that write where an operand says: a repository, a work tree, a
bundle."""


def _git_writes(
    words: Sequence[str | None], shown: Sequence[str], own: Sequence[str | None] = ()
) -> list[tuple[str | None, str, Kind]]:
    """What a git subcommand writes besides ``--output`` (``words``: from the subcommand;
    ``own``: git's own options): a work tree, where an option says, what it makes (a
    review wrote under a ``Write`` deny rule's folder by each)."""
    if not words or words[0] is None:
        return []
    if words[0] in _WORK_TREE_WRITERS:
        found = _git_work_tree(words, shown, own)
    elif words[0] in _GIT_OPTION_WRITES:
        found = _git_option_writes(words, shown)
    else:
        found = _git_made(words, shown, own)
    return [(value, text, kind) for value, text, kind in found if value != ""]


def _git_work_tree(
    words: Sequence[str | None], shown: Sequence[str], own: Sequence[str | None]
) -> list[tuple[str | None, str, Kind]]:
    """The work tree ``--work-tree=DIR`` names (with ``--git-dir`` alone: where git runs,
    its names), and ``checkout-index --prefix=DIR/``."""
    trees = [long_value(own, i) for i, w in enumerate(own) if abbreviates(w, "--work-tree")]
    found: list[tuple[str | None, str, Kind]] = [(t, "--work-tree", "tree") for t in trees]
    if not trees and any(abbreviates(w, "--git-dir") for w in own):
        found.append((".", "--git-dir", "names"))
    for i, word in enumerate(words):
        if words[0] == "checkout-index" and abbreviates(word, "--prefix"):
            prefix = long_value(words, i)
            tree = prefix if prefix is None or prefix.endswith("/") else os.path.dirname(prefix)
            found.append((tree or ".", shown[i], "tree"))
    return found


def _git_option_writes(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """Where :data:`_GIT_OPTION_WRITES` options say (``format-patch`` with none: its
    patches where it runs)."""
    options, how = _GIT_OPTION_WRITES[words[0] or ""]
    found: list[tuple[str | None, str, Kind]] = []
    for i, word in enumerate(words[1:], 1):
        for option in options:
            if option.startswith("--") and abbreviates(word, option):
                found.append((long_value(words, i), shown[i], how))
            elif not option.startswith("--") and (word or "").startswith(option):
                found.append(((word or "")[2:] or _next(words, i), shown[i], how))
    if words[0] == "format-patch" and not found:
        found.append((".", "format-patch", "names"))
    return found


def _git_made(
    words: Sequence[str | None], shown: Sequence[str], own: Sequence[str | None]
) -> list[tuple[str | None, str, Kind]]:
    """What ``git init DIR``, ``git clone URL DIR`` (or the name its URL ends in), ``git
    worktree add DIR``/``move A DIR``, ``--separate-git-dir=DIR`` and ``git bundle
    create FILE`` make. A repository made afresh is named by its ``.git/description``
    (``git init`` alone: ``./.git``, or ``--git-dir=DIR``): it holds no code of the
    command's (`cd /etc && git init` wrote there under a deny rule)."""
    for path, (short, long, operand, kind) in _GIT_MAKERS.items():
        if tuple(words[: len(path)]) != path:
            continue
        rest, texts = words[len(path) :], shown[len(path) :]
        made: list[tuple[str | None, str, Kind]] = [
            (long_value(rest, i), texts[i], "tree")
            for i, word in enumerate(rest)
            if word is not None and abbreviates(word, "--separate-git-dir")
        ]
        operands = _positional(rest, short, long)
        if operand < len(operands):
            i = operands[operand]
            made.append((rest[i], texts[i], kind))
        if path == ("clone",) and len(operands) == 1:  # (into the name its URL gives)
            url = rest[operands[0]]
            named = None if url is None else re.sub(r"(?:/?\.git)?/*$", "", url)
            name = None if named is None else re.split(r"[/:]", named)[-1]
            made.append((name, texts[operands[0]], kind))
        if path == ("init",) and operands and made[-1][0] is not None:
            made[-1] = (f"{made[-1][0].rstrip('/')}/.git/description", made[-1][1], "file")
        if path == ("init",) and not operands:
            given = [long_value(own, i) for i, w in enumerate(own) if abbreviates(w, "--git-dir")]
            made += [(g, "--git-dir", "tree") for g in given] or [
                (".git/description", "init", "file")
            ]
        return made
    return []


_GIT_WITHOUT_OUTPUT = frozenset({
    "add", "branch", "checkout", "cherry-pick", "clean", "clone", "commit", "fetch", "init",
    "ls-files", "merge", "mv", "pull", "push", "rebase", "remote", "reset", "restore",
    "revert", "rev-parse", "rm", "status", "switch", "tag", "worktree",
})  # fmt: skip
"""git subcommands that take no ``--output``: a word of theirs known only as it runs
writes nothing (``git push "$(…)"``, ``git checkout "$b"`` in a loop)."""
_TREE_VALUED = "LPIHTo"
"""tree's options that take a value (its parser gives none attached: ``-oFILE`` is ``-o``,
``-F``, ``-I``, ``-L``, ``-E``)."""


Kind = Literal["file", "tree", "names", "last", "last tree"]
"""How a program writes a target: ``file``; ``tree``, a directory written whole (``cp
-r``, ``mv``, a name known only as it runs copied into one); ``names``, a directory a
glob's names land in (no dotfile); ``last``, a last operand
written as a file, or into, where it is a directory already (``cp a dst``); ``last
tree``, the same copied or moved whole."""


def option_from_a_word(name: str, words: Sequence[str | None], shown: Sequence[str]) -> bool:
    """Whether ``cp``, ``mv``, ``ln`` or ``install`` may take a word known only as it runs
    for an option, before any ``--``: ``*`` (a file named ``-t.git`` made `cp * d/` copy
    into ``.git``, a review), ``"$f"``; not ``./*``, ``src/*.txt``, ``~/$f``."""
    if name not in _COPIERS:
        return False
    ended = words.index("--") if "--" in words else len(words)
    starts = [(literal_start(shown[k]), shown[k]) for k in range(ended) if words[k] is None]
    return any(start[:1] == "-" or not (start or text.startswith("~")) for start, text in starts)


def glob_folder(written: str) -> str | None:
    """The directory of a written word whose name alone is a glob (``src/*.py``: ``src``;
    ``*.txt``: ``.``), or None when more of it is known only as it runs (``"$f"``, which
    may hold a ``/``, ``$D/x``, ``*/x``, a name a glob may start with a dot in)."""
    folder, _, name = written.rpartition("/")
    if re.search(r"[$`\\\"'{*?\[~<]", folder) or re.search(r"[$`<\\\"'(]|\[\^|\[\[", name):
        return None  # (quoted or escaped parts, `[^…]`, `[[:…:]]`, extglob's `@(…)`: bash
        # reads them otherwise than the check's glob does, a review)
    if not re.search(r"[*?\[]", name):  # (computed otherwise: `"$f"`, what xargs appends)
        return None
    if name.startswith("."):
        return None
    return (folder or "/") if written.startswith("/") else (folder or ".")


def _copied_to(
    name: str, words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """What ``cp``, ``mv``, ``ln`` or ``install`` writes: ``-t DIR``'s (or the last
    operand's, a directory when several come before it) ``DIR/NAME`` for each source
    operand (``DIR/SOURCE`` with ``--parents``); with one source, also the last operand
    itself (``last``: a file, or a directory it writes into); with ``-T``, that file
    alone; ``ln NAME`` alone links ``./NAME``; each with its backup beside it (``-b``,
    ``-S SUFFIX``: `cp -bSg x .git/confi` wrote `.git/config`, a review); ``mv``'s
    sources too, which it takes away; ``install -d``'s operands, made."""
    if option_from_a_word(name, words, shown):
        return []  # (it asks: see there)
    short, long = _COPIERS[name]
    operands, options = _scan(words, short, long)
    into: str | None = None
    target = file_only = parents = directories = False
    tree = name == "mv"
    suffixes: list[str | None] = []
    named = ""  # (-t's word as written)
    for index in options:
        word = words[index] or ""
        flag = word.split("=", 1)[0]
        value_at = index + ("=" not in word)  # (a long option's value: attached or next)
        if flag.startswith("--"):
            file_only = file_only or abbreviates(flag, "--no-target-directory")
            parents = parents or (name == "cp" and abbreviates(flag, "--parents"))
            tree = tree or (name == "cp" and any(
                abbreviates(flag, o) for o in ("--recursive", "--archive")))  # fmt: skip
            directories = directories or (name == "install" and abbreviates(flag, "--directory"))
            if abbreviates(flag, "--backup"):
                suffixes.append("~")
            if abbreviates(flag, "--suffix"):
                suffixes.append(_value_at(words, value_at, flag + "="))
            if abbreviates(flag, "--target-directory"):
                target, into = True, _value_at(words, value_at, flag + "=")
                named = shown[value_at] if value_at < len(shown) else ""
            continue
        letters = short_options(word, short)
        file_only = file_only or "-T" in letters
        tree = tree or (name == "cp" and bool({"-r", "-R", "-a"} & set(letters)))
        directories = directories or (name == "install" and "-d" in letters)
        if "-b" in letters:
            suffixes.append("~")
        if letters and letters[-1] in ("-t", "-S"):
            attached = word[len(letters) + 1 :]
            at = index + (not attached)
            value = attached or (_value_at(words, at, "") if at < len(words) else "")
            if letters[-1] == "-S":
                suffixes.append(value)
            else:
                target, into, named = True, value, shown[at] if at < len(shown) else ""
    if directories:  # (`install -d DIR…`: each made)
        return [(words[k], shown[k], "file") for k in operands]
    whole: Kind = "tree" if tree else "file"
    taken: list[tuple[str | None, str, Kind]] = []
    if name == "mv":  # (what it takes away)
        taken = [(words[k], shown[k], "tree") for k in operands[: None if target else -1]]
    if target:
        destination, sources = named, operands
    elif len(operands) >= 2:
        destination, sources = shown[operands[-1]], operands[:-1]
        into = words[operands[-1]]
    elif name == "ln" and len(operands) == 1:
        return [(_basename(words[operands[0]]), shown[operands[0]], "file")]
    else:
        return []
    made: list[tuple[str | None, Kind]] = []
    if into is None or (file_only and not target):
        made.append((into, whole))
    else:
        if not target and len(sources) == 1:
            made.append((into, "last tree" if tree else "last"))
        for source in sources:
            base = words[source] if parents else _basename(words[source])
            if base is None:  # (a name known as it runs: whatever lands in the directory;
                # a glob's, none of its dotfiles: `cp -r tmpl/* .`)
                made.append(
                    (f"{into.rstrip('/')}/.", "names" if glob_folder(shown[source]) else "tree")
                )
            else:
                made.append((f"{into.rstrip('/') or '/'}/{base.lstrip('/')}", whole))
    backups: list[tuple[str | None, Kind]] = [
        (m + s if m is not None and s is not None else None, "file")
        for m, _ in made
        for s in suffixes
    ]
    return [*((m, destination, kind) for m, kind in [*made, *backups]), *taken]


_LINKING = frozenset({"-s", "-l", "-d", "-P", "-a", "-r", "-R"})
_LINKING_LONG = ("--symbolic-link", "--link", "--no-dereference", "--archive", "--recursive")


def makes_links(name: str, words: Sequence[str | None]) -> bool:
    """Whether what ``name`` writes may be a link, leading anywhere: ``ln``'s, ``mv``'s (a
    link moved) and ``cp``'s with ``-s``, ``-l`` (a hard link), ``-d``, ``-P``, ``-a``,
    ``-r`` or ``-R`` (links copied as links). A write through such a name later in the
    command goes where the link leads, which no check made before it runs can see
    (`ln -s protected l; echo > l/x`, `cp -l protected/f g; echo > g`: a trial)."""
    if name in ("ln", "link", "mv"):
        return True
    if name != "cp":
        return False
    short, long = _COPIERS[name]
    for index in _scan(words, short, long)[1]:
        word = words[index] or ""
        flag = word.split("=", 1)[0]
        if flag.startswith("--"):
            if any(abbreviates(flag, option) for option in _LINKING_LONG):
                return True
        elif _LINKING & set(short_options(word, short)):
            return True
    return False


_CURL_VALUED = "AbcdDeEFHKmoQrTuUwxXyYzCPt"
"""curl's short options that take a value (``-o FILE``, grouped too: ``-sSLo FILE``)."""
_CURL_LONG_VALUED = ("--output", "--output-dir", "--config", "--data", "--header", "--user",
                     "--request", "--user-agent", "--cookie", "--cookie-jar", "--dump-header",
                     "--trace", "--trace-ascii", "--stderr", "--upload-file", "--form",
                     "--proxy", "--referer", "--max-time", "--retry", "--range", "--write-out",
                     "--libcurl", "--etag-save", "--hsts", "--alt-svc")  # fmt: skip
"""Its long ones (those of them that write files are :data:`_DOWNLOADS`'s)."""
_DOWNLOADS = {  # files (short, long), folders (short, long)
    "curl": ("ocD", ("--output", "--dump-header", "--trace", "--trace-ascii", "--cookie-jar",
                     "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc"),
             "", ("--output-dir",)),
    "wget": ("Ooa", ("--output-document", "--output-file", "--append-output", "--save-cookies",
                     "--warc-file", "--rejected-log", "--hsts-file"),
             "P", ("--directory-prefix",)),
}  # fmt: skip
"""The options of ``curl`` and ``wget`` that name a file they write, or their folder."""
_WGET_VALUED = "oaeiBtOTwQPlARDIXU"
_SET_ELSEWHERE = {  # short, long: what they write is set in a text or a file of its own
    "curl": ("K", ("--config",)),
    "wget": ("e", ("--execute", "--config")),
}
"""Options whose value may say where curl or wget write (`curl -K cfg` with `output =`,
`wget -e output_document=…`, a review): what they write is known only as they run."""
_WGETRC_WRITES = {
    "outputdocument": "file", "logfile": "file", "savecookies": "file", "warcfile": "file",
    "rejectedlog": "file", "hstsfile": "file", "dirprefix": "folder",
    "contentdisposition": "naming", "trustservernames": "naming", "dirstruct": "naming",
    "recursive": "naming", "mirror": "naming", "pagerequisites": "naming",
}  # fmt: skip
"""The wgetrc commands (``wget -e``) that say where it writes: a file, its folder, or
that the names in its folder come as it runs."""


def _wgetrc_write(command: str | None) -> tuple[str, str | None] | None:
    """What a wgetrc command given with ``wget -e`` says of where wget writes (see
    :data:`_WGETRC_WRITES`; a command known only as it runs may say any file), None
    where it says nothing of it (``robots=off``)."""
    if command is None:
        return ("file", None)
    key, _, value = command.partition("=")
    how = _WGETRC_WRITES.get(re.sub(r"[-_\s]", "", key).lower())
    return None if how is None else (how, value.strip())


_NAMED_ELSEWHERE = {  # short, long, flags: the server names the file, or a folder per URL
    "curl": ("J", ("--remote-header-name",)),
    "wget": (
        "xbrmp",
        (
            "--content-disposition",
            "--trust-server-names",
            "--force-directories",
            "--background",
            "--recursive",
            "--mirror",
            "--page-requisites",
        ),
    ),
}
"""Options under which the names written in the folder come as they run (`curl -OJ`,
`wget --content-disposition` wrote `.envrc`; `wget -x -nH` a path of the URL's; `-r`,
`-m`, a tree; `-b` its log)."""


def _downloaded_to(
    name: str, words: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[str | None, str, Kind]]:
    """Where ``curl`` and ``wget`` write (:data:`_DOWNLOADS`; a file named after its URL
    in the folder: ``curl -O``, ``wget`` without ``-O``; curl's ``-o`` in its
    ``--output-dir``): a trial's `curl -o` under a denied folder went unchecked. What they
    write is known only as they run under :data:`_SET_ELSEWHERE`, a URL glob (``{a,b}``,
    ``[1-3]``, a ``#1`` in ``-o``) and, in the folder, :data:`_NAMED_ELSEWHERE`."""
    files, long_files, folders, long_folders = _DOWNLOADS[name]
    valued = _CURL_VALUED if name == "curl" else _WGET_VALUED
    long_valued = _CURL_LONG_VALUED if name == "curl" else (*long_files, *long_folders)
    elsewhere, long_elsewhere = _SET_ELSEWHERE[name]
    naming, long_naming = _NAMED_ELSEWHERE[name]
    operands, options = _scan(words, valued, long_valued)
    found: list[tuple[str | None, str]] = []
    folder: tuple[str | None, str] | None = None
    named_by_url, named_as_it_runs, globbing = name == "wget", False, name == "curl"

    def set_elsewhere(value: str | None, said: str, wgetrc: bool) -> None:
        """An option of :data:`_SET_ELSEWHERE` (``wgetrc``: a wgetrc command, read)."""
        nonlocal folder, named_as_it_runs
        told = _wgetrc_write(value) if wgetrc else ("file", None)
        if told is not None and told[0] == "folder":
            folder = (told[1], said)
        elif told is not None:
            found.extend([(told[1], said)] if told[0] == "file" else [])
            named_as_it_runs |= told[0] == "naming"

    def writes_out(value: str | None) -> bool:  # (curl -w '%output{FILE}…'; `@FILE`, `@-`:
        return name == "curl" and (  # the format read from there, known only as it runs)
            "%output{" in (value or "%output{") or (value or "").startswith("@")
        )

    for index in options:
        word = words[index] or ""
        said_next = shown[index + 1] if index + 1 < len(shown) else ""
        if word.startswith("--"):
            flag, attached = word.split("=", 1)[0], "=" in word
            value = long_value(words, index) if attached else _next(words, index)
            said = word if attached else said_next
            if any(abbreviates(flag, option) for option in long_files):
                found.append((value, said))
                named_by_url = named_by_url and not abbreviates(flag, "--output-document")
            elif any(abbreviates(flag, option) for option in long_folders):
                folder = (value, said)
            elif any(abbreviates(flag, option) for option in long_elsewhere):
                set_elsewhere(value, said, name == "wget" and abbreviates(flag, "--execute"))
            named_by_url = named_by_url or (
                name == "curl" and _long_prefix(flag, "--remote-name-all")  # (`--remote-name`)
            )
            named_as_it_runs |= any(abbreviates(flag, option) for option in long_naming)
            globbing = globbing and not abbreviates(flag, "--globoff")
            if abbreviates(flag, "--write-out") and writes_out(value):
                found.append((None, said))
            continue
        letters = word[1:]
        at = next((i for i, letter in enumerate(letters) if letter in valued), len(letters))
        named_by_url = named_by_url or (name == "curl" and "O" in letters[:at])
        named_as_it_runs |= bool(set(letters[:at]) & set(naming))
        globbing = globbing and "g" not in letters[:at]
        if at == len(letters):
            continue
        value = letters[at + 1 :] or _next(words, index)
        said = word if letters[at + 1 :] else said_next
        if letters[at] in files:
            found.append((value, said))
            named_by_url = named_by_url and letters[at] != "O"
        elif letters[at] in folders:
            folder = (value, said)
        elif letters[at] in elsewhere:
            set_elsewhere(value, said, name == "wget")
        elif letters[at] == "w" and writes_out(value):
            found.append((None, said))
    for index in operands:  # (`--output-document="$F"`)
        if words[index] is None and may_be_option(
            shown[index], long_files, files + folders, valued
        ):
            found.append((None, shown[index]))
    urls = [words[i] for i in operands]
    globbed = globbing and any(u is None or re.search(r"[{\[]", u) for u in urls)
    if globbed:  # (`-o '#1.new'` names what a URL glob gives)
        found = [(None if f is None or "#" in f else f, said) for f, said in found]
    where, shown_where = folder or (".", ".")
    if name == "curl" and folder is not None:  # (its -o files are in its --output-dir)
        found = [(None if where is None or f is None else os.path.join(where, f), said)
                 for f, said in found]  # fmt: skip
    written: list[tuple[str | None, str, Kind]] = [(f, said, "file") for f, said in found]
    if not (named_by_url or named_as_it_runs):
        return written
    if named_as_it_runs or globbed or None in urls or "-i" in words or where is None:
        inside = None if where is None else f"{where.rstrip('/') or '/'}/."
        return [*written, (inside, shown_where, "tree")]  # (names, as it runs, deep too)
    for url in urls:  # (the name its URL gives, in its folder: `wget http://x/.bashrc`)
        written.append((os.path.join(where, _url_name(url or "")), shown_where, "file"))
    return written


def _url_name(url: str) -> str:
    """The file name ``wget`` and ``curl -O`` give what a URL names: its path's last
    part (wget: ``index.html`` for none)."""
    from urllib.parse import urlsplit

    return os.path.basename(urlsplit(url).path) or "index.html"


def _basename(path: str | None) -> str | None:
    """A source's name as copied into a directory (None: computed)."""
    return None if path is None else os.path.basename(path.rstrip("/")) or path


_XXD_LONG = {"c": ("ols",), "g": ("roupsize",), "l": ("en",), "n": ("ame",), "o": ("ffset",),
             "s": ("eek", "kip"), "R": ()}  # fmt: skip
"""xxd's options that take a value, with the rest of their long spellings (``-cols``)."""


def _xxd_files(words: Sequence[str | None]) -> list[int]:
    """The indices of xxd's file operands: xxd reads ``-cols``, ``-seek``, ``--c`` as its
    one-letter options (a review's `xxd -seek 0 IN OUT` wrote OUT unasked), each taking
    the next word unless its value is attached: any text after the letter that is no
    long spelling of it (``-c8``, ``-c8k``, ``-s1k``, ``-Ralways``: a review's `xxd
    -c8k IN OUT` wrote OUT unasked, the value taken for hex only)."""
    found: list[int] = []
    skip = False
    for index, word in enumerate(words):
        if skip:
            skip = False
        elif word is None or word == "-" or word[:1] != "-":
            found.append(index)
        else:
            letters = word.lstrip("-")
            tails = _XXD_LONG.get(letters[:1])
            rest = letters[1:]
            skip = tails is not None and (not rest or any(rest.startswith(t) for t in tails))
    return found


def rejoined(values: Sequence[str | None], shown: Sequence[str]) -> str:
    """Words as a command line again: literal ones quoted, computed ones as written."""
    return " ".join(shown[i] if v is None else shlex.quote(v) for i, v in enumerate(values))


def git_code(words: Sequence[str | None]) -> list[str] | None:
    """The commands ``git rebase -x CMD``, ``git bisect run CMD…`` and ``git submodule
    foreach CMD…`` run (``words``: after git's own options), checked as commands; None
    for another subcommand, or one whose command is known only as it runs."""
    if words[:2] in (["bisect", "run"], ["submodule", "foreach"]):
        rest = list(words[2:])
        while words[0] == "submodule" and rest and (rest[0] or "").startswith("-"):
            rest = rest[1:]  # (`--recursive`, `--quiet`)
        if not rest or None in rest:
            return None
        if words[0] == "submodule":  # (the first word is shell code, the rest its words)
            return [" ".join([rest[0] or "", *(shlex.quote(w or "") for w in rest[1:])])]
        return [shlex.join(w or "" for w in rest)]  # (words: run as they are)
    if words[:1] != ["rebase"]:
        return None
    codes: list[str] = []
    for index, word in enumerate(words[1:], 1):
        if word is None:
            return None  # (`git rebase $X CMD`: `$X` may be `-x`)
        value: str | None = ""
        if word.startswith("--exec="):
            value = word.split("=", 1)[1]
        elif word == "--exec" or (
            word.startswith("-") and not word.startswith("--") and word.endswith("x")
        ):
            value = words[index + 1] if index + 1 < len(words) else None
        elif word.startswith("--") and "--exec".startswith(word.split("=", 1)[0]) and len(word) > 3:
            return None  # (an abbreviation: left to ask)
        elif word.startswith("-") and not word.startswith("--") and "x" in word:
            value = word[word.index("x") + 1 :]  # (`-xCMD`)
        if value is None:
            return None
        if value:
            codes.append(value)
    return codes


def git_runs(
    rest: Sequence[str | None], shown: Sequence[str] = (), subcommand: bool = True
) -> str | None:
    """Why ``git REST`` may run a command its words do not name: configuration given
    on its command line that may name one (``-c alias.p=push``, ``-c
    core.fsmonitor=CMD``, ``help.autocorrect``; ``-c user.name=…`` is fine), another
    ``--exec-path``, such configuration set for later (``git config alias.p push``), or a
    subcommand that runs one (``rebase -x CMD``, ``fetch --upload-pack=CMD``)."""
    skip = git_options(rest)
    if skip < min(len(rest), len(shown)) and rest[skip] is None:
        if may_be_option(shown[skip], ["--config-env", "--exec-path"], "c", "C"):
            return "git may take a word known only as it runs for an option (`-c …`)"
        if isinstance(shown[skip], LineChosen):  # (`X=rebase; git $X -x CMD`)
            return "git's subcommand is a word the command sets: it may be one that runs a command"
    for index, word in enumerate(rest[:skip]):
        flag = (word or "").split("=", 1)[0]
        if flag == "-c" or flag == "--config-env":
            setting = rest[index + 1] if "=" not in (word or "") else (word or "").split("=", 1)[1]
            if _git_setting_runs(None if setting is None else setting.split("=", 1)[0]):
                return "git runs what configuration given to it may name (`-c alias.p=push`)"
        elif flag == "--exec-path" and "=" in (word or ""):
            return "git runs its commands from another `--exec-path`"
    words = list(rest[skip:])
    texts = [*shown[skip:], *[""] * len(words)][: len(words)]  # (as written)
    # (`git init --template=DIR`: its hooks are copied into the repository, and the next
    # `git commit` runs them)
    templated = [
        abbreviates(w, "--template") if w is not None else may_be_option(text, ["--template"])
        for w, text in zip(words[1:], texts[1:], strict=True)
    ]
    if words[:1] == ["init"] and any(templated):
        return "git runs hooks from the template directory given to it"
    if words[:1] == ["clone"]:  # (`git clone -c core.sshCommand=CMD`: set, then used)
        for index, word in enumerate(words[1:], 1):
            if abbreviates(word, "--template"):  # (its hooks run at the checkout)
                return "git runs hooks from the template directory given to it"
            if word == "-c" or (abbreviates(word, "--config") and "=" not in (word or "")):
                given = words[index + 1] if index + 1 < len(words) else ""
            elif word is not None and (word.startswith("-c") or abbreviates(word, "--config")):
                given = word.split("=", 1)[1] if word.startswith("--") else word[2:]
            else:
                continue
            if _git_setting_runs(None if given is None else given.split("=", 1)[0]):
                return "git runs what configuration given to it may name (`-c alias.p=push`)"
    if words[:1] == ["config"]:
        operands = [w for w in words[1:] if w is None or not w.startswith("-")]
        if len(operands) > 1 and _git_setting_runs(operands[0]):  # (`git config KEY VALUE`)
            return "git is set to run what a setting names (`git config alias.p push`)"
    if not subcommand or not words or words[0] not in GIT_RUNS:
        return None  # (a subcommand's command checked as one: see git_code)
    signs = [s for s in GIT_RUNS[words[0] or ""] if s]
    longs, letters = (
        [s for s in signs if s[:2] == "--"],
        "".join(s[1] for s in signs if len(s) == 2),
    )
    by_options = all(s.startswith("-") for s in signs)  # (not `bisect run`'s word)
    for index, word in enumerate(words[1:], 1):
        if word is None:  # (`git rebase $X CMD`: `$X` may be `-x` where the line makes it
            # or it is written so, `-$X`; `git fetch "$X"` with `X=--upload-pack=…`)
            text = texts[index] if index < len(texts) else ""
            unknown = not isinstance(text, LineChosen) and not literal_start(text)
            if (
                not by_options
                or may_be_option(text, longs, letters)
                or (unknown and words[0] not in GIT_TRANSFERS)  # (`git rebase $X CMD`
            ):  # with `X=-x` from outside: a review)
                current = " (`git push -u origin HEAD` names the current branch)" * (
                    words[0] in ("push", "pull")
                )
                return f"`git {words[0]}` may take a word known only as it runs for an option that runs a command{current}"
            continue
        flag = word.split("=", 1)[0]
        if flag in GIT_EXACT_OPTIONS.get(words[0] or "", ()):
            continue
        if any(
            s == word
            or (s.startswith("--") and len(flag) > 3 and s.startswith(flag))  # (`--exe`)
            or (len(s) == 2 and word.startswith("-") and not word.startswith("--") and s[1] in word)
            for s in signs  # (`-ix CMD`: grouped)
        ):
            return f"`git {words[0]}` runs a command given to it"
    return (
        f"`git {words[0]}` runs a command given to it" if "" in GIT_RUNS[words[0] or ""] else None
    )


OPTION_COMMANDS: dict[str, tuple[tuple[str, ...], str, bool]] = {
    "split": (("--filter",), "", True),
    "rsync": (("--rsh", "--rsync-path"), "e", True),
    "diff3": (("--diff-program",), "", False),
    "sdiff": (("--diff-program",), "", False),
    "zip": (("--unzip-command",), "", True),
    "wget": (("--use-askpass",), "", False),
    "scp": ((), "SD", False),
    "sftp": ((), "SD", False),
    "npm": (("--script-shell",), "", False),
    "yarn": (("--script-shell",), "", False),
    "pnpm": (("--script-shell",), "", False),
}
"""Programs that run a command an option names (a review ran a denied one through each
under an allow rule for the program): its long options, short letters, and whether the
value is shell code (else a program's name). ``zip -TT CMD`` too; ``ssh``, ``scp``,
``sftp`` and ``rsync -e ssh`` run an ``-o ProxyCommand=…`` or ``LocalCommand``."""
SSH_CODE_OPTIONS = re.compile(r"(?i)\s*(?:proxycommand|localcommand|knownhostscommand)\b")
SSH_LIBRARY_OPTIONS = re.compile(r"(?i)\s*(?:pkcs11provider|securitykeyprovider)\b")
"""ssh settings that load a library of the value's naming: what it runs is unknown."""


def _long_prefix(word: str, option: str) -> bool:
    """Whether ``word`` is the long ``option`` or any prefix of it GNU getopt may take
    (``--f`` for ``--filter``: a review; wider than :func:`abbreviates`)."""
    flag = word.split("=", 1)[0]
    return len(flag) >= 3 and flag.startswith("--") and option.startswith(flag)


def _option_commands(
    name: str, words: Sequence[str | None], shown: Sequence[str]
) -> list[str | None]:
    """The commands :data:`OPTION_COMMANDS` names (and ssh's ``-o ProxyCommand=…``) as
    checkable text: shell code as it is, a program quoted; None where a word that may be
    such an option is known only as it runs."""
    longs, letters, code = OPTION_COMMANDS.get(name, ((), "", False))
    ssh = name in ("ssh", "scp", "sftp")
    found: list[str | None] = []
    if name == "rsync" and any(
        abbreviates(w, "--daemon") if w is not None else may_be_option(text, ["--daemon"])
        for w, text in zip(words, shown, strict=False)
    ):
        found.append(None)  # (its config's `pre-xfer exec` runs at the next transfer)
    for index, word in enumerate(words):
        value: str | None = ""
        if word is None:
            text = shown[index] if index < len(shown) else ""
            value = None if may_be_option(text, longs, letters + ("o" if ssh else "")) else ""
        elif word == "--":
            break
        elif any(_long_prefix(word, o) for o in longs):
            value = long_value(words, index)
        elif name == "wget" and (word in ("-e", "--execute") or word.startswith("--execute=")):
            value = _askpass(long_value(words, index) if word != "-e" else _next(words, index))
        elif name == "zip" and word.startswith("-") and not word.startswith("--") and "TT" in word:
            after = word[word.index("TT") + 2 :].lstrip("=")  # (`-rTT CMD`, `-TTCMD`, `-TT=CMD`)
            value = after or _next(words, index)
        elif word.startswith("-") and not word.startswith("--") and len(word) > 1:
            given = short_options(word, letters + ("o" if ssh else ""))
            if given and given[-1][1] in letters + ("o" if ssh else ""):
                rest = word[len(given) + 1 :]
                value = rest or _next(words, index)
                if given[-1] == "-o":  # (ssh's settings: only those that run a command,
                    matched = None if value is None else SSH_CODE_OPTIONS.match(value)
                    if value is None or SSH_LIBRARY_OPTIONS.match(value):  # its shell runs
                        found.append(None)  # their text; or load a library)
                    elif matched:
                        command = value[matched.end() :].lstrip(" \t=")
                        if command.lower() != "none":
                            found.append(command)
                    continue
        if value != "":
            found.append(value if value is None or code else shlex.quote(value))
    return found


MAKE_VALUED = "CfIoWE"
"""make's short options that take a value (``-f FILE``, ``-E TEXT``)."""
MAKE_LONG_VALUED = ("--directory", "--file", "--makefile", "--include-dir", "--old-file",
                    "--assume-old", "--new-file", "--what-if", "--assume-new", "--eval")  # fmt: skip
MAKE_SHELL_VARIABLES = frozenset({"SHELL", "MAKESHELL"})
"""make variables naming the program that runs every recipe line."""
_MAKE_ASSIGNMENT = re.compile(r"([^\s=:+?!]+)\s*(?::{1,3}|[+?!])?=(.*)", re.DOTALL)
_SHELL_CODE = re.compile(r"[;&|`\n]|\$\(|[<>]\(")
"""Shell code in a value: what a recipe line using it runs beyond one program."""
MAKE_OPTION_VARIABLES = frozenset({"MAKEFLAGS", "GNUMAKEFLAGS", "MAKEFILES"})
"""make variables holding its options (``MAKEFLAGS=SHELL=PROG`` is read again) or
makefiles to read."""


def _make_code(words: Sequence[str | None], shown: Sequence[str]) -> list[str | None]:
    """What make runs that its words give, beyond its makefile (which an allow rule for
    make trusts, as one for ``npm test`` trusts ``package.json``): makefile text
    (``--eval TEXT``, ``-E TEXT``, a makefile read from input: its ``$(shell …)`` and
    recipes run; not shell text: None), the shell of its recipes (``SHELL=PROG``,
    ``.SHELLFLAGS``; its options again, ``MAKEFLAGS=…``), and a variable set to shell
    code or a program with words (``CC='x; rm y'``, ``CC='ccache gcc'``: a recipe line
    that uses it runs it; not ``CFLAGS='-O2 -g'``, nor one word, ``prefix=$HOME/.local``),
    checked as a command. A review ran a denied command through ``make
    --eval='$(shell …)'``, ``make SHELL=./evil``, ``make MAKEFLAGS=SHELL=./evil`` and
    ``make "-$X"`` (``X='E$(shell …)'``)."""
    found: list[str | None] = []
    operands = set(_scan(words, MAKE_VALUED, MAKE_LONG_VALUED)[0])  # (not `-C "$d"`'s value)
    for index, word in enumerate(words):
        if word is None:
            text = shown[index] if index < len(shown) else ""
            if index in operands and _computed_make_word(text):
                found.append(None)
            continue
        if abbreviates(word, "--eval"):
            found.append(None)
        elif abbreviates(word, "--file") or abbreviates(word, "--makefile"):
            value = long_value(words, index)
            if value is None or reads_input(value):
                found.append(None)
        elif (given := short_options(word, MAKE_VALUED)) and given[-1][1] in MAKE_VALUED:
            value = word[len(given) + 1 :] or _next(words, index)
            if given[-1] == "-E" or (given[-1] == "-f" and (value is None or reads_input(value))):
                found.append(None)
        elif not word.startswith("-") and (assigned := _MAKE_ASSIGNMENT.fullmatch(word)):
            name, value = assigned[1], assigned[2]
            if name == ".SHELLFLAGS" or name in MAKE_OPTION_VARIABLES:
                found.append(None)
            elif name in MAKE_SHELL_VARIABLES:
                found.append(shlex.quote(value))
            elif _SHELL_CODE.search(value) or (
                len(value.split()) > 1 and not value.lstrip().startswith("-")
            ):
                found.append(value)
    return found


_PACKAGE_MANAGER_CONFIG = ("--node-options", "--userconfig", "--globalconfig")
"""npm's options that load code (node's ``--require``) or settings files."""


def _package_manager_settings(
    words: Sequence[str | None], shown: Sequence[str]
) -> list[str | None]:
    """What an npm, pnpm or yarn call sets that names code its scripts run, asked (not
    shell text): ``--node-options``, a settings file (``--userconfig``), pnpm's
    ``--config.script-shell=…`` (any ``--config.``), and ``config set``/``set``, which
    every later call reads (a review: `npm config set script-shell ./evil`); a word known
    only as it runs where its start as written may be one of them."""
    found: list[str | None] = [
        None
        for w, text in zip(words, shown, strict=False)
        if (w is None and (may_be_option(text, [*_PACKAGE_MANAGER_CONFIG, "--config."])))
        or (w is not None and w.startswith("--config."))
        or any(abbreviates(w, option) for option in _PACKAGE_MANAGER_CONFIG)
    ]
    operands = [w for w in words if w is None or not w.startswith("-")]
    if operands[:1] in (["set"], [None]) or (
        operands[:1] == ["config"] and operands[1:2] in (["set"], [None])
    ):
        found.append(None)
    return found


_MAKE_PATH_VARIABLE = re.compile(r"(?i)[A-Za-z_]*(?:prefix|dir|path)")
"""make variables holding a directory (``prefix``, ``DESTDIR``, ``bindir``): set to a
computed value (``prefix=$HOME/.local``), no recipe runs it."""


def _computed_make_word(shown: str) -> bool:
    """Whether a make word known only as it runs may give it code: an option group whose
    written letters leave room for ``-E``/``-f`` (``-$X``, ``"-s$X"``; not ``-j$(nproc)``,
    whose ``j`` takes the rest), a long option that may be ``--eval``/``--file``, an
    assignment to any but a directory variable; a wholly computed word (``"$T"``) is
    taken for a target, as elsewhere for a file, unless the command line makes it
    (``for t in --eval=…; do make "$t"; done``)."""
    if made_by_the_line(shown):
        return True
    start = literal_start(shown)
    if start.startswith("-"):  # (`j`, `l`: their value is the rest, no option after it)
        return may_be_option(shown, ["--eval", "--file", "--makefile"], "Ef", MAKE_VALUED + "jl")
    if "=" in start:
        name = start.split("=", 1)[0].rstrip(":+?!")
        return not _MAKE_PATH_VARIABLE.fullmatch(name)
    return "=" in shown  # (an assignment whose name is known only as it runs: `"$N=x"`)


_GO_PROGRAMS = ("-exec", "-toolexec", "-vettool")
"""``go test``/``go run`` options naming a program it runs the built binary or each tool
with, and ``go vet``'s analysis tool (one dash or two; a command line, split as such)."""


def _go_code(words: Sequence[str | None], shown: Sequence[str]) -> list[str | None]:
    found: list[str | None] = []
    for index, word in enumerate(words):
        if word is None:  # (`-ex$X`: may be one)
            text = shown[index] if index < len(shown) else ""
            flag = _flag(literal_start(text))
            if made_by_the_line(text) or (
                flag.startswith("-")
                and any(o[1:].startswith(flag.lstrip("-")) for o in _GO_PROGRAMS)
            ):
                found.append(None)
        elif word.startswith("-") and "-" + word.lstrip("-").split("=", 1)[0] in _GO_PROGRAMS:
            found.append(long_value(words, index))
    return found


def _next(words: Sequence[str | None], index: int) -> str | None:
    """The word after word ``index`` ("" for none)."""
    return words[index + 1] if index + 1 < len(words) else ""


def _askpass(command: str | None) -> str | None:
    """The program a wget ``-e use_askpass=PROG`` (wgetrc's spelling: case, ``-`` and
    ``_`` ignored) runs; "" for another wgetrc command."""
    if command is None:
        return None
    key, _, value = command.partition("=")
    return value.strip() if re.sub(r"[-_\s]", "", key.lower()) == "useaskpass" else ""


def code_arguments(
    name: str, rest: Sequence[str | None], shown: Sequence[str] | None = None
) -> list[str | None]:
    """Shell code a builtin takes as an argument and runs later (None: computed at run
    time): ``trap CODE SIGNAL…``, ``mapfile -C CODE``, ``alias NAME=CODE``, the commands
    ``tar`` and ``sort`` run (``--to-command``, ``--compress-program``); ``shown``: the
    words as written."""
    words = list(rest)
    texts = list(shown) if shown is not None else ["" if w is None else w for w in words]
    if name == "trap":
        if words[:1] == ["--"]:
            words = words[1:]
        if len(words) < 2 or (words[0] is not None and words[0].startswith("-")):
            return []  # `trap SIG`, `trap - SIG`, `trap -p`: no code
        return [words[0]]
    if name in ("mapfile", "readarray"):
        found: list[str | None] = []
        for i, word in enumerate(words):
            if word is not None and short_options(word, "dnOsuCc")[-1:] == ["-C"]:
                value = word[word.index("C") + 1 :]
                if value or i + 1 < len(words):
                    found.append(value or words[i + 1])
        return found
    if name == "alias":
        return [None if w is None else w.split("=", 1)[1] for w in words if w is None or "=" in w]
    program = os.path.basename(name)  # (by its path too: `/usr/bin/make`, a review)
    if program == "tar":  # the commands its options name (`--to-command`, `-I zstd`)
        values = _tar_values(words)  # (`for f in *.tar; do tar -xf "$f"; done`)
        return [
            c
            for i in range(len(words))
            if i not in values and (c := _tar_command(words, i, texts)) != ""
        ]
    if program == "sort":  # (its words are no shell code: the program's name is the command)
        return [None if p is None else shlex.quote(p) for p in _sort_options(words, texts)[0]]
    if program in OPTION_COMMANDS or program in ("ssh", "sftp"):
        found = _option_commands(program, words, texts)
        if program in ("npm", "pnpm", "yarn"):
            found += _package_manager_settings(words, texts)
        return found
    if program in ("make", "gmake"):
        return _make_code(words, texts)
    if program == "go":
        found = _go_code(words, texts)
        operands = [w for w in words if w is None or not w.startswith("-")]
        if operands[:1] in (["env"], [None]) and any(w is None or w in ("-w", "-u") for w in words):
            found.append(None)  # (`go env -w GOFLAGS=-exec=PROG`: every later `go test`)
        return found
    if program == "cargo":  # (`--config 'target.X.runner="prog"'` names what runs the tests)
        return [
            None
            for w, text in zip(words, texts, strict=False)
            if (w is None and may_be_option(text, ["--config"])) or abbreviates(w, "--config")
        ]
    if name in ("compgen", "complete"):  # `-C CODE`: run to find the words; `-W LIST`:
        found = []  # expanded as a command's words are (`$(cmd)` in it runs)
        for i, word in enumerate(words):
            for letter, prefix in (("C", ""), ("W", "echo ")):
                if word is None or (word.startswith("-") and letter in word[1:]):
                    after = None if word is None else word[word.index(letter) + 1 :]
                    given = after or (words[i + 1] if i + 1 < len(words) else None)
                    if letter == "C" or given is None or re.search(r"[$`]|[<>]\(", given):
                        found.append(None if given is None else prefix + given)
                    break  # (a plain word list expands to itself: nothing runs)
        return found
    return []


_STARTING = frozenset({"--login", "--rcfile", "--init-file", "--interactive"})
"""Long options of a nested shell that have it run start-up files first."""
_STARTING_LETTERS = frozenset("ilka")
"""Its short ones that have it run start-up files (``-i``, ``-l``) or change what the
text's commands get in their environment (``-k`` keyword, ``-a`` allexport)."""
_OPTION_NAMES = frozenset({"allexport", "keyword", "loginshell", "globsubst", "interactive"})
"""Long option names (as zsh compares them: case and underscores ignored) that change
what a nested shell's text does beyond what it reads as."""


def nested_shell_problem(name: str, rest: Sequence[str | None], script: str) -> str | None:
    """Why a nested shell does not run ``script`` as bash reads its text: fish's quoting
    is its own; ``sh`` may be dash, which has no ``$'…'`` (a review's `sh -c "echo
    $'\\'' ' ; touch x ; ' #'"` is one `echo` to bash and runs `touch` in dash); options
    that run start-up files (``-i``, ``-l``, ``--rcfile``) or change the environment
    its commands get (``-k``, ``-a``, ``-o allexport``)."""
    base = os.path.basename(name)
    if not is_shell(name):
        return None
    if base.startswith("fish"):
        return "`fish` reads its text by quoting rules of its own"
    words = iter(rest)
    for word in words:
        if word is None or word == script or word == "--" or word[:1] not in ("-", "+"):
            break
        if word in ("-o", "-O", "+o", "+O"):  # (zsh's `+o no_allexport` turns it on)
            named = next(words, "")
            option = "" if named is None else named.lower().replace("_", "")
            if word[0] == "+":
                option = option[2:] if option.startswith("no") else ""
            if named is None or option in _OPTION_NAMES:
                return f"`{base} {word} {named or '…'}` changes what its commands get"
        elif word.startswith("--") and re.sub(r"[-_]", "", word[2:].lower()) in _OPTION_NAMES:
            return f"`{base} {word}` changes what its commands get"  # (zsh's `--globsubst`)
        elif word in _STARTING or (
            word[0] == "-" and word[1:].isalpha() and _STARTING_LETTERS & set(word[1:])
        ):
            return f"`{base} {word}` runs start-up files or changes what its commands get"
        elif word in SHELL_OPTIONS_WITH_VALUE:
            next(words, None)
    if not base.startswith(("bash", "rbash", "zsh", "ksh", "mksh")) and "$'" in script:
        return f"`{base}` may be dash, which reads `$'…'` otherwise than bash"
    return None


def nested_script(name: str, rest: Sequence[str | None]) -> str | None:
    """The script ``bash -c TEXT`` or ``eval TEXT…`` runs ("" when it is computed, "-"
    when the shell reads it from its input), or None when ``name`` runs no script text
    (``bash script.sh``: a command like any other)."""
    if name == "eval":
        rest = rest[1:] if rest[:1] == ["--"] else rest
        return "" if any(w is None for w in rest) else " ".join(w or "" for w in rest)
    if not is_shell(name):
        return None
    i = 0
    while i < len(rest):
        word = rest[i]
        if word is None:
            return ""
        if word in SHELL_OPTIONS_WITH_VALUE:
            i += 2
            continue
        if word == "-c" or (word.startswith("-") and "c" in word[1:] and word[1:].isalpha()):
            i += 1  # the script is the first word that is no option (`bash -c -e -- TEXT`)
            while i < len(rest) and (w := rest[i]) is not None and w.startswith(("-", "+")):
                i += 2 if w in SHELL_OPTIONS_WITH_VALUE else 1
                if w == "--":
                    break
            if i >= len(rest):
                return "-"
            return rest[i] if rest[i] is not None else ""
        if word == "-s" or (word.startswith("-") and "s" in word[1:] and word[1:].isalpha()):
            return "-"
        if word == "--":
            i += 1
            break
        if not word.startswith(("-", "+")):
            break
        i += 1
    if i >= len(rest) or (rest[i] is not None and reads_input(rest[i] or "")):
        return "-"  # no script file: the shell reads its input
    return "" if rest[i] is None else None
