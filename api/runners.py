"""Commands that run other commands: which of their words are that command.

Wrappers (``timeout 5 git push``) are transparent: the command after them is what rules
match. Runners (``sudo``, ``xargs``, ``find -exec``, ``uv run``, ``npx``, ``strace``…) are
not: an allow rule must match the whole, and the command they run is a variant that deny
and ask rules also catch. Options are read as each program reads them where its grammar
is known; for the others, every word that could start the command is taken as its start.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from .shellwords import LineMade

WRAPPERS = frozenset({
    "timeout", "time", "nice", "nohup", "stdbuf", "command", "env", "exec", "coproc", "builtin",
    "setsid", "ionice",
})  # fmt: skip
"""Commands that run the rest of their words as the command."""
RUNNERS = frozenset({"sudo", "doas", "xargs", "busybox", "toybox"})
"""Commands that run another command given in their words: it is a variant, checked by
deny and ask rules (an allow rule must match the whole, ``sudo …`` included); search
tools (:data:`SEARCHERS`) too, by their actions."""
XARGS_OPTIONS_WITH_VALUE = frozenset({
    "-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter", "--max-args",
    "--max-procs", "--max-chars", "--process-slot-var",
})  # fmt: skip
"""(``-e``, ``-l``, ``-i``, ``--eof``, ``--max-lines``, ``--replace`` take a value only
attached: ``-l1``, ``--eof=x``.)"""
SUDO_OPTIONS_WITH_VALUE = frozenset({
    "-a", "-u", "-g", "-h", "-p", "-C", "-D", "-R", "-T", "-U", "--user", "--group", "--host",
    "--prompt", "--close-from", "--chdir", "--chroot", "--command-timeout", "--other-user",
    "-r", "-t", "--role", "--type",
})  # fmt: skip
"""(``-r ROLE``, ``-t TYPE``: SELinux's, where sudo is built with it; `sudo -r R -t T rm x`
was taken for the command `T rm x`, a trial.)"""
TIME_OPTIONS_WITH_VALUE = frozenset({"-f", "--format", "-o", "--output"})
"""GNU time's (``/usr/bin/time -o FILE rm x``: the value was taken for the command, a
trial); bash's keyword takes ``-p`` alone, and runs a word such as ``-o`` as the command."""


RUNNER_OPTIONS_WITH_VALUE = {"xargs": XARGS_OPTIONS_WITH_VALUE}
"""A runner's options that take the next word (sudo's and doas's otherwise)."""


def runner_commands(
    name: str, rest: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[list[str | None], list[str], bool]]:
    """The commands a runner (``sudo``, ``xargs``, …) runs: their words (None: known only
    at run time, such as what ``xargs -I`` fills in) and whether the runner appends more
    words (``xargs``). Search tools' are their actions' (:func:`search_actions`)."""
    if name not in RUNNERS:
        return []
    takes_value = RUNNER_OPTIONS_WITH_VALUE.get(name, SUDO_OPTIONS_WITH_VALUE)
    i, placeholder = 0, None
    while i < len(rest) and (word := rest[i]) is not None and word.startswith("-"):
        if word == "--":
            i += 1
            break
        flag = word.split("=", 1)[0]
        letters = "".join(o[1] for o in takes_value if len(o) == 2)
        if name == "xargs":  # -I R, -IR, -i[R], --replace[=R]: R in a word is filled in,
            # grouped too (`-rI R`, `-0iR`: taken for plain words, a trial)
            grouped = short_options(word, letters + "eil")  # (-e, -i, -l: values attached)
            last, attached = grouped[-1:], word[len(grouped) + 1 :]
            if last == ["-I"]:
                given = attached or (rest[i + 1] if i + 1 < len(rest) else "{}")
                placeholder = given if given is not None else ""  # computed: any word
            elif last == ["-i"]:
                placeholder = attached or "{}"
            elif len(flag) > 3 and "--replace".startswith(flag):  # (`--rep`)
                placeholder = word.split("=", 1)[1] if "=" in word else "{}"
            # A later -L, -l or -n N (N not 1) ends -I: xargs appends again (`xargs -i -n2
            # cp /dev/null` wrote where its input said, a review; GNU's -n1 keeps it).
            short = last[0] if last else ""
            long = flag if flag.startswith("--") and len(flag) > 3 else ""
            if short in ("-L", "-l") or (long and "--max-lines".startswith(long)):
                placeholder = None
            elif short == "-n" or (long and "--max-args".startswith(long)):
                count = word.split("=", 1)[1] if long and "=" in word else attached
                if (count or _next_word(rest, i)) != "1":
                    placeholder = None
        if word.startswith("--"):
            i += 1 if ("=" in word or not takes_long_value(flag, takes_value)) else 2
        else:  # grouped short options: `-rn 1`, `-Eu root`, `-uroot`
            i += 2 if takes_next_word(word, letters) else 1
    if i < len(rest) and rest[i] is None:  # a runner option computed at run time
        return [([None, *rest[i + 1 :]], list(shown[i:]), name == "xargs")]
    if i >= len(shown):  # (no command, unless a value may be several words: `-u $U`)
        split = next((k for k in range(len(rest)) if may_vanish(rest[k], shown[k])), None)
        return [] if split is None else [([None], [shown[split]], name == "xargs")]
    # (a computed placeholder, "", may be in any word; xargs -I fills it in, appending none)
    filled = [placeholder is not None and w is not None and placeholder in w for w in rest[i:]]
    words = [None if w is None or f else w for w, f in zip(rest[i:], filled, strict=True)]
    texts = [LineMade(t) if f else t for t, f in zip(shown[i:], filled, strict=True)]  # (a
    # line of its input: any word, `--to-command=…`, a review)
    return [(words, texts, name == "xargs" and placeholder is None)]


FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
"""``find`` options whose words up to ``;`` or ``+`` are a command it runs."""
FIND_WRITES = frozenset({"-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
"""``find`` actions that delete or write files."""
_FIND_VALUES = {"-fprintf": 2, "-fprint": 1, "-fprint0": 1, "-fls": 1, **dict.fromkeys((
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-lname", "-ilname", "-type", "-xtype", "-newer", "-anewer", "-cnewer", "-mtime", "-atime",
    "-ctime", "-mmin", "-amin", "-cmin", "-size", "-perm", "-user", "-group", "-uid", "-gid",
    "-links", "-inum", "-samefile", "-maxdepth", "-mindepth", "-fstype", "-used", "-context",
    "-printf", "-regextype", "-files0-from", "-D",
), 1)}  # fmt: skip
"""``find`` words that take the next words as their values (never an action)."""
FD_RUNS = frozenset({"-x", "--exec", "-X", "--exec-batch"})
"""``fd`` options whose words up to ``;`` (or the last) are a command it runs."""
_FD_SHORT_VALUED = "dEteSoxXcj"  # (fd 8.6 `--help`: -s is a flag)
_FD_VALUES = frozenset({
    "-d", "--max-depth", "-t", "--type", "-e", "--extension", "-E", "--exclude", "-c",
    "--color", "-j", "--threads", "-S", "--size", "-o", "--owner", "--changed-within",
    "--changed-before", "--change-newer-than", "--change-older-than", "--newer", "--older",
    "--max-results", "--base-directory", "--path-separator", "--search-path", "--ignore-file",
    "--batch-size", "--format", "--min-depth", "--exact-depth", "--max-buffer-time",
})  # fmt: skip
_RG_SHORT_VALUED = "ABCEfgMmerjtTd"
RG_CONFIG = "RIPGREP_CONFIG_PATH"
"""The file of options rg reads first (one may be ``--pre=PROG``)."""
RG_RUNS = frozenset({"--pre", "--hostname-bin"})
"""``rg`` options whose value is a program it runs (on each file, for ``--pre``)."""
_RG_VALUES = frozenset({
    "-e", "--regexp", "-f", "--file", "-g", "--glob", "--iglob", "-t", "--type", "-T",
    "--type-not", "--type-add", "--type-clear", "-m", "--max-count", "-A", "--after-context",
    "-B", "--before-context", "-C", "--context", "-M", "--max-columns", "-d", "--max-depth",
    "-E", "--encoding", "-r", "--replace", "-j", "--threads", "--pre-glob", "--colors",
    "--color", "--sort", "--sortr", "--path-separator", "--max-filesize", "--context-separator",
    "--field-match-separator", "--field-context-separator", "--engine", "--dfa-size-limit",
    "--regex-size-limit", "--ignore-file", "--hyperlink-format", "-V",
})  # fmt: skip
QUIET_PROGRAMS = frozenset({
    "echo", "printf", "cat", "tac", "ls", "grep", "egrep", "fgrep", "zgrep", "head", "tail",
    "wc", "cut", "tr", "uniq", "sort", "diff", "cmp", "comm", "paste", "tee", "file", "stat",
    "du", "df", "mkdir", "rmdir", "rm", "cp", "mv", "ln", "touch", "chmod", "chown", "chgrp",
    "readlink", "realpath", "basename", "dirname", "which", "whereis", "type", "hash", "man",
    "info", "help", "whatis", "apropos", "tldr", "pkill", "pgrep", "killall", "pidof", "kill",
    "ps", "test", "[", "true", "false", "git", "declare", "typeset", "local", "export",
    "readonly", "unset", "read", "shift", "set", "complete", "compgen", "dpkg", "apt",
    "apt-get", "apt-cache", "dnf", "yum", "pacman", "brew", "pip", "pip3", "pipx", "apk", "gem",
    "cargo", "pytest", "aws", "gsutil", "gcloud", "az", "helm",
})  # fmt: skip
"""Programs known never to run their words as a command: a word of theirs that names a
program is data (`man rm`, `pkill -f touch`, `git rm`). Another program's may run it, as
an unlisted wrapper does (`logsave LOG CMD`, `choom -n 0 -- CMD`: a review ran a denied
command through each): a deny or ask rule that its words from such a word on match asks
(:attr:`~api.reading.SimpleCommand.loose`)."""


SEARCHERS = frozenset({"find", "fd", "fdfind", "rg"})
"""Search tools: an allow rule for one is for searching; what runs a command, deletes or
writes needs a rule that names it (:func:`search_actions`)."""


@dataclass(frozen=True)
class Action:
    """What a search tool does beside searching: ``option`` (None: a word known only as
    it runs that may be such an option) and the words of the command it runs (None:
    none; a word None in them: known only then, such as ``{}``)."""

    option: str | None
    words: tuple[str | None, ...] | None = None
    texts: tuple[str, ...] = ()


def search_actions(
    name: str,
    rest: Sequence[str | None],
    shown: Sequence[str],
    appended: bool = False,
    configured: bool = False,
) -> list[Action]:
    """What ``find``, ``fd`` or ``rg`` with the words ``rest`` (``shown``: as written) may
    run, delete or write, in order; a word ``xargs`` appends (``appended``) may be any
    of it, and so may the options of a config file the command names (``configured``:
    ``RIPGREP_CONFIG_PATH=FILE rg``). A computed word may be an option unless it is an
    option's value (``-name "$p"``) or starts as no option does (``./"$d"``)."""
    if name not in SEARCHERS:
        return []
    base = "fd" if name == "fdfind" else name
    found = {"find": _find_actions, "fd": _fd_actions, "rg": _rg_actions}[base](rest, shown)
    if configured:
        found.append(Action(None, (None,), (f"<what ${RG_CONFIG} holds>",)))
    return [*found, Action(None, (None,), ("<what xargs appends>",))] if appended else found


PATH_FILLED = "./{}"
"""How a ``{}`` that ``find -exec`` and ``fd -x`` fill in with a path is shown: a path
(``./x``, or a start path as given, which no option can be), never an option a command
such as ``rg`` could read (``{/}``, a bare name, may be one)."""


def _command_of(
    rest: Sequence[str | None], shown: Sequence[str], start: int, end: int, paths: bool = True
) -> tuple[tuple[str | None, ...], tuple[str, ...]]:
    """The words from ``start`` to ``end`` as a command's (a ``{…}`` filled in as it
    runs: None; ``paths``: ``{}`` is filled with a path, :data:`PATH_FILLED`)."""
    words = tuple(None if w is None or "{" in w else w for w in rest[start:end])
    texts = tuple(  # (a name, not a path: any word, `--to-command=…` from `-files0-from`)
        PATH_FILLED if w == "{}" and paths else LineMade(t) if w is not None and "{" in w else t
        for w, t in zip(rest[start:end], shown[start:end], strict=True)
    )
    return words, texts


def _may_split(word: str | None, text: str) -> bool:
    """A word known only as it runs that may be several words, or none (``$x``,
    ``"${a[@]}"``)."""
    return word is None and (may_vanish(None, text) or "@" in text or "[*]" in text)


def _early_end(
    scan: Callable[..., list[Action]],
    rest: Sequence[str | None],
    shown: Sequence[str],
    start: int,
    end: int,
    again: bool,
) -> list[Action]:
    """What runs if a computed word between ``start`` and ``end`` (a command's words)
    ends that command at run time (`;`, or `{}` before a `+`): the words after it are
    the search tool's again (``scan`` reads them, once: ``again``; a second time, any
    such word asks); one that may be several words may hold anything."""
    k = next((j for j in range(start, end) if rest[j] is None), None)
    if k is None:
        return []
    if not again or _may_split(rest[k], shown[k]):
        return [Action(None, (None,), (shown[k],))]
    return scan(rest[k + 1 : end], shown[k + 1 : end], again=False)


def _computed(rest: Sequence[str | None], shown: Sequence[str], index: int, end: int) -> Action:
    """What the computed word at ``index`` may be: several words (a command in it), or
    one: an option that runs the words after it, up to ``end`` (or its own: ``-xCMD``)."""
    words, texts = _command_of(rest, shown, index + 1, end)
    if may_vanish(None, shown[index]):
        return Action(None, (None, *words), (shown[index], *texts))
    return Action(None, words or None, texts)


_EXPANSIONS = re.compile(
    r"\$\{[^{}]*\}|\$\([^()]*\)|`[^`]*`|\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])"
)


TILDE_VARIABLE = re.compile(r"~([+-]\d*|\d+)(/|$)")
"""A tilde prefix bash reads from a variable (``PWD``, ``OLDPWD``) or the directory
stack, not from the password database: known only as the command runs."""
_QUOTED_PARTS = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')


def _never_an_option(text: str, slash: bool = False) -> bool:
    """Whether a word computed at run time, as written, can be no option: it starts with
    a character of its own other than ``-`` (``./"$d"``; not a brace expansion or a
    glob, ``{-delete,x}``, ``?delete``), or (``slash``: find's, where no option takes an
    attached value) holds a ``/`` of its own (``"$HOME/src"``); read conservatively."""
    if _QUOTED_PARTS.sub("", text).count("$") or "`" in _QUOTED_PARTS.sub("", text):
        return False  # (an expansion outside quotes splits: `$d/src` may be `-exec rm … x/src`)
    if "@" in text or "[*]" in text or TILDE_VARIABLE.match(text):  # (`"${a[@]}"`: a
        return False  # word for each element; `~-`: OLDPWD=-delete)
    unquoted = text.replace('"', "").replace("'", "").replace("\\", "")  # (`'-'"$x"`, `\-`)
    literal = _EXPANSIONS.sub("\0", unquoted)
    if "$" in literal or "`" in literal:  # (nested: not read)
        return False
    if literal[:1] in ("\0", "-", "", "{", "*", "?", "["):  # (its start known only then)
        return slash and "/" in literal and not any(c in literal for c in "{*?[")
    return True


def _named_files(text: str) -> bool:
    """A glob for files of one kind (``*.py``, ``test_*.rs``): no expansion, and a
    literal ``.`` after its last wildcard. It matches no `--pre=rm` or `-xrm` a hostile
    file could be named (the program it named would end so too, as no program on PATH
    does); ``*``, ``?x`` or ``{-x,rm}`` may."""
    if "$" in text or "`" in text or any(c in text for c in "\"'\\"):
        return False
    last = max(text.rfind(c) for c in "*?]}")
    return last >= 0 and "." in text[last + 1 :] and "{" not in text


def _ends(rest: Sequence[str | None], find: bool) -> list[int]:
    """For each word, where a command starting after it ends (one pass: a long command
    is read in linear time): at the next ``;``, or for ``find`` at a ``+`` right after
    ``{}`` (GNU find: any other ``+`` is a word of the command); else at the last word."""
    ends, end = [len(rest)] * len(rest), len(rest)
    for j in range(len(rest) - 1, -1, -1):
        ends[j] = end
        if rest[j] == ";" or (find and rest[j] == "+" and j > 0 and rest[j - 1] == "{}"):
            end = j
    return ends


def _find_actions(
    rest: Sequence[str | None], shown: Sequence[str], again: bool = True
) -> list[Action]:
    found: list[Action] = []
    paths = "-files0-from" not in rest  # (else `{}` is a name from a file: `--pre=rm`)
    ends = _ends(rest, find=True)
    i = 0
    while i < len(rest) and len(found) < MAX_ACTIONS:
        word = rest[i]
        end = ends[i]
        if word in FIND_RUNS:
            found.append(Action(word, *_command_of(rest, shown, i + 1, end, paths)))
            found += _early_end(_find_actions, rest, shown, i + 1, end, again)
            i = end
        elif word is None and not _never_an_option(shown[i], slash=True):  # (-delete?)
            found.append(_computed(rest, shown, i, end if end < len(rest) else i + 1))
        elif word in FIND_WRITES:
            found.append(Action(word))
        values = _FIND_VALUES.get(word, 1 if word.startswith("-newer") else 0) if word else 0
        found += _split_values(rest, shown, i, values)
        i += 1 + values
    return _bounded(found)


MAX_ACTIONS = 64
"""Actions of one search tool read, at most (each a reading of what may run, which a
crafted command could multiply): past it, what the rest does is not known."""


def _bounded(found: list[Action]) -> list[Action]:
    return found if len(found) < MAX_ACTIONS else [*found, Action(None, (None,), ("…",))]


def _split_values(
    rest: Sequence[str | None], shown: Sequence[str], index: int, count: int
) -> list[Action]:
    """An option's ``count`` values after ``index`` that may be several words each
    (``-name "${a[@]}"``): the words after the first may be options, anything."""
    values = range(index + 1, min(index + 1 + count, len(rest)))
    return [Action(None, (None,), (shown[k],)) for k in values if _may_split(rest[k], shown[k])]


def _fd_actions(
    rest: Sequence[str | None], shown: Sequence[str], again: bool = True
) -> list[Action]:
    found: list[Action] = []
    paths = not any(w is not None and w.startswith("--strip-cwd-prefix") for w in rest)
    ends = _ends(rest, find=False)
    i, options = 0, True
    while i < len(rest) and len(found) < MAX_ACTIONS:
        word = rest[i]
        end = ends[i]
        if word is None:  # (one word may be `-xrm`: rm runs, the words after are paths)
            if options and not _never_an_option(shown[i]) and not _named_files(shown[i]):
                words, texts = _command_of(rest, shown, i + 1, end)
                found.append(Action(None, (None, *words), (shown[i], *texts)))
            i += 1
            continue
        flag, attached = (
            word.split("=", 1) if word.startswith("--") and "=" in word else (word, None)
        )
        if not options or word == "--" or not word.startswith("-") or word == "-":
            options = options and word != "--"  # (after `--`: patterns and paths)
            i += 1
            continue
        if word.startswith("--"):
            letters = [flag]
        else:  # grouped short options: `-Hx CMD`, `-xCMD`
            letters = short_options(word, _FD_SHORT_VALUED)
            last = letters[-1] if letters else ""
            rest_of_word = word[1 + len(letters) :]
            attached = rest_of_word or None
            flag = last
        if flag in FD_RUNS and attached is not None:  # (`-xCMD`, `-x=CMD`, `--exec=CMD`:
            program = attached[1:] if attached[:1] == "=" and word[1] != "-" else attached
            filled = PATH_FILLED if paths else "{}"  # (that word alone, and the path)
            found.append(Action(flag, (program, None), (program, filled)))
            i += 1
            continue
        if flag in FD_RUNS:  # (with no `{…}` in it, fd appends the path)
            words, texts = _command_of(rest, shown, i + 1, end, paths)
            if not any(w is not None and "{" in w for w in rest[i + 1 : end]):
                words, texts = (*words, None), (*texts, PATH_FILLED if paths else "{}")
            found.append(Action(flag, words, texts))
            found += _early_end(_fd_actions, rest, shown, i + 1, end, again)
            i = end + 1
            continue
        valued = flag in _FD_VALUES and attached is None  # (fd refuses a `-…` value)
        found += _split_values(rest, shown, i, 1 if valued else 0)
        i += 2 if valued else 1
    return _bounded(found)


def _option_next(rest: Sequence[str | None], index: int) -> bool:
    """Whether the word after rg's ``--engine`` may be read as an option of its own (a
    computed one, or one starting with ``-``: rg 13 reads `--engine --pre X` so, where
    its other options take such a word as their value, `-r --`, or refuse it)."""
    after = rest[index + 1] if index + 1 < len(rest) else ""
    return after is None or after.startswith("-")


def _rg_actions(rest: Sequence[str | None], shown: Sequence[str]) -> list[Action]:
    found: list[Action] = []
    i, options = 0, True
    while i < len(rest) and len(found) < MAX_ACTIONS:
        word = rest[i]
        if word is None:  # (`--pre=PROG` itself; after `--`, a pattern or a path)
            if options and not _never_an_option(shown[i]) and not _named_files(shown[i]):
                found.append(Action(None, (None,), (shown[i],)))
            i += 1
            continue
        if not options or word == "--" or not word.startswith("-") or word == "-":
            options = options and word != "--"  # (after `--`: patterns and paths)
            i += 1
            continue
        if word.startswith("--"):
            flag, attached = word.split("=", 1) if "=" in word else (word, None)
        else:  # grouped short options: `-nr TEXT`, `-rTEXT`
            letters = short_options(word, _RG_SHORT_VALUED)
            flag = letters[-1] if letters else word
            attached = word[1 + len(letters) :] or None
        if flag in RG_RUNS:
            program = (
                attached if attached is not None else (rest[i + 1] if i + 1 < len(rest) else "")
            )
            text = attached if attached is not None else (shown[i + 1] if i + 1 < len(rest) else "")
            if program != "":
                found.append(Action(flag, (program, None), (text or "", "{}")))
            i += 1 if attached is not None else 2
            continue
        valued = flag in _RG_VALUES and attached is None
        valued = valued and not (flag == "--engine" and _option_next(rest, i))
        found += _split_values(rest, shown, i, 1 if valued else 0)
        i += 2 if valued else 1
    return _bounded(found)


def wrapper_arguments(wrapper: str, rest: Sequence[str | None]) -> int | None:
    """How many words after ``wrapper`` belong to it (the command follows), or None when
    it runs no command of its own (``command -v``, a bare ``env``)."""
    i = 0

    def option_value(options_with_value: Iterable[str]) -> None:
        nonlocal i
        takes_value = frozenset(options_with_value)
        letters = "".join(o[1] for o in takes_value if len(o) == 2)
        while i < len(rest) and (word := rest[i]) is not None and word.startswith("-"):
            if word == "--":
                i += 1
                return
            if word.startswith("--"):
                i += 2 if takes_long_value(word, takes_value) and "=" not in word else 1
            else:  # grouped short options: `timeout -vs KILL 5`, `env -iu HOME`
                i += 2 if takes_next_word(word, letters) else 1

    match wrapper:
        case "timeout":
            option_value({"-s", "--signal", "-k", "--kill-after"})
            i += 1  # the duration
        case "time":
            option_value(TIME_OPTIONS_WITH_VALUE)
        case "nice":
            option_value({"-n", "--adjustment"})
        case "stdbuf":
            option_value({"-i", "-o", "-e", "--input", "--output", "--error"})
        case "nohup" | "exec" | "coproc" | "builtin":
            option_value({"-a"})
        case "setsid":
            option_value(())
        case "ionice":  # (its options only: it stops at its first operand, and `ionice
            option_value({"-c", "--class", "-n", "--classdata"})  # bash -c CODE -p` ran
            if any(  # CODE unchecked, a review)
                (w or "").startswith(("--p", "--u"))
                or {"-p", "-P", "-u"} & set(short_options(w or "", "cn"))
                for w in rest[:i]
            ):
                return None  # `ionice -p PID`: it runs no command
        case "command":
            if i < len(rest) and rest[i] in ("-v", "-V"):
                return None
            option_value(())
        case "env":  # (`-a NAME`, `--argv0`: coreutils 9.5's, a trial)
            option_value(
                {"-u", "--unset", "-C", "--chdir", "-S", "--split-string", "-P", "-a", "--argv0"}
            )
            while i < len(rest) and ((word := rest[i]) is None or "=" in word):
                i += 1
        case _:
            return None
    return i if i < len(rest) else None


def takes_long_value(word: str, takes_value: Iterable[str]) -> bool:
    """Whether a long option takes the next word: one of ``takes_value``, or a prefix
    of one (``--sig KILL``: getopt takes any prefix that is not ambiguous)."""
    flag = word.split("=", 1)[0]
    return any(
        o == flag or (len(flag) > 2 and o.startswith(flag))
        for o in takes_value
        if o.startswith("--")
    )


def _next_word(words: Sequence[str | None], index: int) -> str:
    """The word after ``index`` (``""``: none, or known only as it runs)."""
    return (words[index + 1] or "") if index + 1 < len(words) else ""


def short_options(word: str, with_value: str) -> list[str]:
    """The options of a word of grouped short options (``-rn`` is ``-r -n``), up to the
    first that takes a value (the rest of the word, or the next one); none for another
    word (``--long``, an operand)."""
    if not word.startswith("-") or word.startswith("--") or len(word) < 2:
        return []
    found = []
    for letter in word[1:]:
        found.append(f"-{letter}")
        if letter in with_value:
            break
    return found


def takes_next_word(word: str, with_value: str) -> bool:
    """Whether a word of grouped short options ends with one that takes the next word."""
    options = short_options(word, with_value)  # (`-oo`: the value `o` is attached)
    return bool(options) and options[-1][1] in with_value and len(options) == len(word) - 1


Place = Literal["kept", "moved", "root"]
_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Runner:
    """How a program runs a command given in its words (``uv run --with x pytest``)."""

    paths: tuple[tuple[str, ...], ...] = ((),)
    """The subcommands that run it (``("run",)``; ``()``: the program itself; none: it
    runs only the code of its options)."""
    operands: int = 0
    """Operands that come first (``flock FILE``, ``direnv exec DIR``)."""
    path_operands: tuple[tuple[tuple[str, ...], int], ...] = ()
    """More of them after some subcommand (``npm explore PKG -- CMD``)."""
    optional: int = 0
    """Operands that may come first too (``mise exec node@20``), none after ``--``."""
    flags: frozenset[str] = _NONE
    """Options known to take no value (``--frozen``)."""
    valued: frozenset[str] = _NONE
    """Options known to take the next word (``--with``, ``-p``)."""
    pairs: frozenset[str] = _NONE
    """Options that take the next two words (``nix --option NAME VALUE``)."""
    texts: frozenset[str] = _NONE
    """Options whose value is shell code it runs (``su -c``, ``npx --call``)."""
    global_texts: frozenset[str] = _NONE
    """The same, before its subcommand only (``tmux -c CODE``)."""
    prefixed: tuple[tuple[str, str], ...] = ()
    """(option, prefix): a value starting so runs the rest as code (``strace -o '|CMD'``)."""
    programs: frozenset[str] = _NONE
    """Options whose value is a program it runs with the words after (``su -s PROG``)."""
    shell_flags: frozenset[str] = _NONE
    """Options that make it run its command words through a shell (``pnpm exec -c``)."""
    no_command: frozenset[str] = _NONE
    """Options with which it runs no command (``taskset -p``)."""
    argv_options: frozenset[str] = _NONE
    """Options after which its code options are read only before the command
    (``runuser -u USER CMD -c …``: that ``-c`` is the command's)."""
    placeholders: frozenset[str] = _NONE
    """Options that fill values into its commands' ``{…}`` (``hyperfine -L``)."""
    shell: bool = False
    """It joins its command words and runs them through a shell (``sg``, ``watch``)."""
    each: bool = False
    """Each of its words that is no option is a command of its own, run by a shell
    (``hyperfine A B``), but for words starting with one of :attr:`shortcuts`."""
    shortcuts: tuple[str, ...] = ()
    sequences: bool = False
    r"""A ``;`` word starts another of its commands (``tmux new \; run CODE``)."""
    assignments: bool = False
    """``NAME=value`` words may come first (``cross-env A=1 CMD``)."""
    marker: frozenset[str] = _NONE
    """Words after which the command comes, as after ``--`` (``gdb --args``)."""
    keeps_place: bool = False
    """The command runs in the same directory with the same ``HOME``: writes inside it are
    checked as written (``flock``, ``strace``); else only absolute ones are."""
    root: bool = False
    """The command may see another root: no write inside it is known (``chroot``)."""
    anywhere: bool = False
    """Its code options may come after the command's start (``su USER -c CODE``)."""

    @property
    def place(self) -> Place:
        """Where its command runs: the same directory, ``HOME`` and root (``kept``),
        maybe another directory or ``HOME`` (``moved``), maybe another root."""
        return "root" if self.root else "kept" if self.keeps_place else "moved"

    @property
    def letters(self) -> str:
        """Short options that take a value (attached, or the next word)."""
        options = self.valued | self.texts | self.programs | {o for o, _ in self.prefixed}
        return "".join(o[1] for o in options if len(o) == 2)


def _options(text: str) -> frozenset[str]:
    return frozenset(text.split())


_QUIET = _options("-q --quiet -v --verbose -h --help")
_UV = Runner(
    paths=(("run",), ("tool", "run")),
    flags=_QUIET
    | _options("""
        --frozen --locked --no-sync --all-extras --no-dev --dev --isolated --active
        --no-project --offline --no-cache --refresh --exact --inexact --no-config
        --native-tls --preview --all-packages --all-groups --no-default-groups --only-dev
        --no-editable --no-build --no-binary --reinstall --compile-bytecode --script -s
        --module -m --gui-script --no-progress --no-env-file --upgrade -U --no-python-downloads
    """),
    valued=_options("""
        --with --with-editable --with-requirements --python -p --package --extra --no-extra
        --group --no-group --only-group --env-file --directory --project --index
        --default-index --index-url --extra-index-url -i --find-links -f --cache-dir
        --config-file --color --from --python-platform --index-strategy --keyring-provider
        --resolution --prerelease --exclude-newer --link-mode --config-setting -C
        --refresh-package --reinstall-package --upgrade-package -P --allow-insecure-host
    """),
)
_NPX = Runner(
    flags=_QUIET | _options("-y --yes --no --silent --ws --workspaces --include-workspace-root"),
    valued=_options("-p --package -w --workspace --prefix --registry --cache --userconfig"),
    texts=_options("-c --call"),
)
_STRACE = Runner(
    flags=_options("""
        -f -ff -c -C -w -T -t -tt -ttt -r -y -yy -k -q -qq -v -V -x -xx -Z -z -n -i -D -DD
        -F --follow-forks --summary-only --summary --quiet --no-abbrev
    """),
    valued=_options("""
        -e -o -s -p -u -a -b -E -I -O -P -S -X -U --trace --signal --status --output
        --string-limit --attach --user --env --trace-path
    """),
    prefixed=(("-o", "|"), ("-o", "!"), ("--output", "|"), ("--output", "!")),
    no_command=_options("-p --attach"),
    keeps_place=True,
)
_RUN = Runner(paths=(("run",),))
_EXEC = Runner(paths=(("exec",),))
_SHELL_CODE = _options("-c --command --session-command")
_IN_PLACE = Runner(keeps_place=True)
_ELSEWHERE = Runner(root=True)
_TMUX_RUNNING = (
    "new-session new new-window neww split-window splitw respawn-pane respawnp respawn-window "
    "respawnw run-shell run if-shell if display-popup popup pipe-pane pipep send-keys send"
)
_BWRAP_PAIRS = _options("""
    --bind --ro-bind --dev-bind --bind-try --ro-bind-try --dev-bind-try --symlink --setenv
    --file --bind-data --ro-bind-data --chmod
""")
_BWRAP_VALUED = _options("""
    --proc --dev --tmpfs --dir --chdir --unsetenv --uid --gid --hostname --remount-ro --seccomp
    --lock-file --sync-fd --info-fd --block-fd --userns-block-fd --argv0 --cap-add --cap-drop
    --exec-label --file-label --perms --size --args --userns --userns2 --pidns
""")

COMMAND_RUNNERS: dict[str, Runner] = {
    # project and environment runners, by the subcommand that runs a command
    "uv": _UV,
    "uvx": Runner(flags=_UV.flags, valued=_UV.valued),
    **dict.fromkeys(("npx", "pnpx"), _NPX),
    "npm": Runner(
        paths=(("exec",), ("exe",), ("x",), ("explore",)),
        path_operands=((("explore",), 1),),
        flags=_NPX.flags,
        valued=_NPX.valued,
        texts=_NPX.texts,
    ),
    "pnpm": Runner(
        paths=(("exec",), ("dlx",)),
        valued=_options("-C --dir --filter -F"),
        flags=_options("-r --recursive --parallel --silent -s --no-bail -w --workspace-root"),
        shell_flags=_options("-c --shell-mode"),
    ),
    "yarn": Runner(paths=(("exec",), ("dlx",)), shell=True),
    "bun": Runner(paths=(("x",), ("exec",)), shell=True),  # (`exec`: its own shell)
    "bunx": Runner(flags=_options("--bun"), valued=_options("-p --package")),
    "bundle": Runner(paths=(("exec",), ("exe",), ("ex",), ("e",))),
    **dict.fromkeys(("pipenv", "pdm", "rye", "op"), _RUN),
    "poetry": Runner(paths=(("run",),), valued=_options("-C --directory -P --project")),
    "hatch": Runner(paths=(("run",), ("env", "run"))),
    "pixi": Runner(paths=(("run",), ("exec",), ("x",)), shell=True),  # (`run`: its task shell)
    "devbox": Runner(paths=(("run",),), shell=True),
    "doppler": Runner(paths=(("run",),), texts=_options("--command"), anywhere=True),
    "infisical": Runner(paths=(("run",),), texts=_options("--command"), anywhere=True),
    "dotenv": Runner(paths=(("run",), ()), valued=_options("-e -f -v -c")),
    "dotenvx": Runner(paths=(("run",),), valued=_options("-f --env-file -e --env")),
    "env-cmd": Runner(valued=_options("-f --file -e --environments -r --rc-file")),
    "cross-env": Runner(assignments=True),
    "cross-env-shell": Runner(assignments=True, shell=True),
    **dict.fromkeys(
        ("conda", "mamba", "micromamba"),
        Runner(
            paths=(("run",),),
            valued=_options("-n --name -p --prefix --cwd"),
            flags=_options("--no-capture-output --live-stream -v --debug-wrapper-scripts"),
        ),
    ),
    **dict.fromkeys(("asdf", "pyenv", "rbenv", "nodenv"), _EXEC),
    "mise": Runner(paths=(("exec",), ("x",)), optional=64, texts=_options("-c --command")),
    "nvm": Runner(paths=(("exec",), ("run",)), optional=1),
    "fnm": Runner(paths=(("exec",),), valued=_options("--using")),
    "volta": Runner(paths=(("run",),), valued=_options("--node --npm --yarn --pnpm --env")),
    "rustup": Runner(paths=(("run",),), operands=1),
    "tox": Runner(paths=(("exec",),), valued=_options("-e")),
    "direnv": Runner(paths=(("exec",),), operands=1),
    "aws-vault": Runner(paths=(("exec",),), operands=1),
    "nix": Runner(paths=(("develop",), ("shell",)), optional=64, pairs=_options("--option")),
    "nix-shell": Runner(paths=(), texts=_options("--run --command"), anywhere=True),
    # wrappers: their words after their options (and operands) are the command
    "strace": _STRACE,
    **dict.fromkeys(
        _options(
            "valgrind unbuffer xvfb-run catchsegv eatmydata nocache torsocks proxychains "
            "proxychains4 dbus-run-session numactl prlimit chronic ifne dumb-init tini "
            "caffeinate arch fakeroot cgexec setpriv linux32 linux64 i386 x86_64 ssh-agent "
            "catatonit ccache distcc icecc sccache trickle cpulimit fakechroot rlwrap "
            "dbus-launch"
        ),
        _IN_PLACE,
    ),  # (a review ran a denied `rm` through each of the last line's under `Bash(*)`)
    "runcon": Runner(optional=1, keeps_place=True, valued=_options("-u -r -t -l")),
    **dict.fromkeys(  # terminals: what follows `-e` (`xterm -e rm x`: a review)
        _options("xterm uxterm x-terminal-emulator urxvt rxvt alacritty"),
        Runner(marker=_options("-e"), keeps_place=True),
    ),
    # privilege drops of containers' entry points: a user (and group) spec, then the
    # command, in another HOME (`gosu app rm x` was a command of its own, a trial)
    **dict.fromkeys(
        _options("gosu su-exec s6-setuidgid s6-envuidgid setuidgid envuidgid envdir"),
        Runner(operands=1),
    ),  # (and daemontools', which runit's chpst is too by those names: a review)
    "chpst": Runner(valued=_options("-u -U -b -e -/ -n -l -L -m -d -o -p -f -c -r -t")),
    "softlimit": Runner(valued=_options("-m -a -d -s -l -f -c -o -p -t -r")),
    "setlock": Runner(operands=1, flags=_options("-n -N -x -X")),
    "s6-applyuidgid": Runner(valued=_options("-u -g -G"), flags=_options("-U -z")),
    "ltrace": Runner(
        valued=_options("-o -p -e -s -n -u -a -A -D -F -l"),
        keeps_place=True,
        no_command=_options("-p"),
    ),
    "taskset": Runner(
        operands=1,
        keeps_place=True,
        flags=_options("-a -c --all-tasks --cpu-list"),
        no_command=_options("-p --pid"),
    ),
    **dict.fromkeys(("chrt", "faketime", "setarch"), Runner(operands=1, keeps_place=True)),
    "systemd-inhibit": Runner(valued=_options("--what --who --why --mode"), keeps_place=True),
    "flock": Runner(
        operands=1,
        valued=_options("-w --timeout -E --conflict-exit-code"),
        texts=_options("-c --command"),
        keeps_place=True,
    ),
    "rr": Runner(paths=(("record",),), keeps_place=True),
    "perf": Runner(
        paths=(("stat",), ("record",), ("trace",), ("ftrace",)),
        keeps_place=True,
        valued=_options("-p --pid -o --output -e --event -t --tid -C --cpu"),
        no_command=_options("-p --pid -t --tid -a --all-cpus"),
    ),
    "ip": Runner(paths=(("netns", "exec"),), optional=1, keeps_place=True),
    "gdb": Runner(
        marker=_options("--args"),
        valued=_options(
            "-ex --eval-command -iex --init-eval-command -x --command -p --pid "
            "-cd --directory -d -s --symbols -e --exec -c --core"
        ),
        prefixed=tuple(
            (o, p)
            for o in ("-ex", "--eval-command", "-iex", "--init-eval-command")
            for p in ("shell ", "!", "pipe ")
        ),
        no_command=_options("-p --pid"),
        keeps_place=True,
    ),
    "lldb": Runner(keeps_place=True, valued=_options("-p --attach-pid -o --one-line")),
    **dict.fromkeys(
        _options("pkexec run0 systemd-run unshare nsenter firejail proot flatpak-spawn"),
        _ELSEWHERE,
    ),
    "sandbox-exec": Runner(valued=_options("-p -f -n -D"), root=True),
    "bwrap": Runner(pairs=_BWRAP_PAIRS, valued=_BWRAP_VALUED, root=True),
    **dict.fromkeys(("chroot", "arch-chroot"), Runner(operands=1, root=True)),
    "systemd-nspawn": Runner(valued=_options("-D --directory -M --machine -u --user"), root=True),
    "toolbox": Runner(paths=(("run",),), root=True),
    "distrobox": Runner(paths=(("enter",),), optional=1, root=True),
    "runuser": Runner(
        texts=_SHELL_CODE,
        valued=_options("-u --user -g -G -s -w"),
        programs=_options("-s --shell"),
        argv_options=_options("-u --user"),
        anywhere=True,
    ),
    "su": Runner(
        paths=(),
        texts=_SHELL_CODE,
        valued=_options("-g -G -w"),
        programs=_options("-s --shell"),
        anywhere=True,
    ),
    "script": Runner(
        optional=1,
        texts=_options("-c --command"),
        anywhere=True,
        valued=_options("-E -I -O -B -T -m -o --echo --log-in --log-out"),
    ),
    "scriptlive": Runner(  # (a review's: it replays a typescript in `-c CODE`'s shell)
        paths=(),
        texts=_options("-c --command"),
        anywhere=True,
        valued=_options(
            "-t --timing -T --log-timing -I --log-in -B --log-io -d --divisor -m --maxdelay"
        ),
    ),
    "sg": Runner(operands=1, shell=True, texts=_options("-c"), flags=_options("-"), anywhere=True),
    # what helper 215 ran a denied `touch` through under `Bash(*)`: capsh's words after
    # `--` are bash's (`capsh -- -c CODE`, or `--shell=PROG`'s), start-stop-daemon runs
    # `--exec PROG` with the words after `--` (it asks: see _read), and wave-bash's own
    # `run` starts a task of its own
    "capsh": Runner(texts=_options("-c"), programs=_options("--shell"), anywhere=True),
    "start-stop-daemon": Runner(paths=()),  # (read as unclear: see _read)
    "wave-bash": Runner(
        paths=(("run",),),
        shell=True,
        valued=_options("""
            --state-dir --session --remote --timeout --cwd --description --size --rules
            --sandbox --workspace
        """),  # (--ssh-option and --remote-command ask: see _wave_bash_unread)
        flags=_options("--background --json --raw -i --interactive --allow-network"),
    ),
    # programs that run their words through a shell
    "watch": Runner(
        shell=True,
        valued=_options("-n --interval -q --equexit"),
        flags=_options("-d -x --exec -t -b -e -g -c -p -w"),
    ),
    "watchexec": Runner(shell=True, valued=_options("-w --watch -e --exts -i --ignore")),
    "parallel": Runner(shell=True, valued=_options("-j --jobs -S --sshlogin")),
    "entr": Runner(texts=_options("-s")),
    "nodemon": Runner(paths=(), texts=_options("-x --exec"), anywhere=True),
    "hyperfine": Runner(
        each=True,
        anywhere=True,
        texts=_options("-p --prepare -c --cleanup -s --setup --conclude --reference -S --shell"),
        valued=_options(
            "-w --warmup -r --runs -m --min-runs -M --max-runs -n --command-name "
            "--export-json --export-markdown --export-csv --export-asciidoc "
            "--export-orgmode -u --time-unit --output --input"
        ),
        placeholders=_options("-L --parameter-list -P --parameter-scan"),
    ),
    "concurrently": Runner(
        each=True,
        anywhere=True,
        valued=_options("-n --names -c --prefix-colors -p --prefix"),
        placeholders=_options("-P --passthrough-arguments"),
        shortcuts=("npm:", "yarn:", "pnpm:", "bun:"),
    ),
    "tmux": Runner(
        paths=tuple((p,) for p in _TMUX_RUNNING.split()),
        shell=True,
        sequences=True,
        valued=_options("-s -n -c -t -x -y -F -e -l -p -L -S -T"),
        global_texts=_options("-c"),
    ),
    "screen": Runner(valued=_options("-S -c -h -e -p -T -X -t")),
}
"""Programs that run a command given in their words (``api/CONTRACT.md`` PM1a): what they
run is a variant of theirs, which deny and ask rules catch. Options not listed are read
both ways: a word after one may be its value or the command, and both are taken."""
MAX_READINGS = 16
"""Possible starts of a runner's command read at most; more make the command ask."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_ONE_WORD = re.compile(r'"[^"@*]*"|\'[^\']*\'')
"""A word computed at run time that is exactly one word: quoted, no ``"$@"``."""


@dataclass
class Readings:
    """What a runner may run, read from its words."""

    starts: list[int]
    """Where its command (argv) may start in the words after its name."""
    scripts: list[str | None]
    """Shell code it runs (None: computed at run time)."""
    unclear: str | None = None
    """Why what it runs cannot be told (too many readings, a computed subcommand)."""


@dataclass
class _Words:
    """A runner's words: their values (None: computed) and their text as written."""

    values: Sequence[str | None]
    texts: Sequence[str]

    def option(self, index: int) -> str | None:
        """The word as an option (``-c"$X"`` is one, with a computed value), or None."""
        value, text = self.values[index], self.texts[index]
        word = text if value is None else value
        return word if word.startswith("-") and len(word) > 1 and word != "--" else None

    def may_vanish(self, index: int) -> bool:
        return may_vanish(self.values[index], self.texts[index])


def may_vanish(value: str | None, text: str) -> bool:
    """Whether a word computed at run time (``value`` None; ``text``: as written) may be
    no word at all (``$(true)``, ``"$@"``), or several: it is not one quoted word."""
    return value is None and _ONE_WORD.fullmatch(text) is None


def _option_kind(runner: Runner, word: str) -> str:
    """``flag``, ``valued`` (the next word is its value), ``pair`` (the next two) or
    ``unknown`` (no value, or the next word)."""
    if word in runner.flags or "=" in word:
        return "flag"
    if word in runner.pairs:
        return "pair"
    if word in runner.valued | runner.texts | runner.programs | {o for o, _ in runner.prefixed}:
        return "valued"
    if not word.startswith("--") and len(word) > 2:  # grouped short options (`-fo out`)
        letters = runner.letters
        options = short_options(word, letters)
        if options[-1][1] in letters:  # (`-oo`: the value `o` is attached)
            return "valued" if len(options) == len(word) - 1 else "flag"
        if all(o in runner.flags for o in options):
            return "flag"
    return "unknown"


def command_starts(
    runner: Runner, words: _Words, first: int, operands: int = 0
) -> tuple[list[int], int]:
    """Where the command a runner runs may start among ``words``, from ``first``: at the
    first word that is no option, no option's value and no operand; and where its own
    words end, at most. Where that is unclear (an option not listed, optional operands, a
    computed word that may be no word or several) each reading is followed; a word
    computed at run time is read as the command wherever it may be one."""
    rest = words.values
    starts: set[int] = set()
    end = first
    seen: set[tuple[int, int, int, str]] = set()
    todo = [(first, runner.operands + operands, runner.optional, "none")]  # (word, left, after)
    while todo:
        state = todo.pop()
        index, required, optional, after = state
        if state in seen or index >= len(rest):
            continue
        seen.add(state)
        word = rest[index]
        if words.may_vanish(index):  # (no word, or several: the command may start in it)
            todo.append((index + 1, required, optional, after))
            starts.add(index)
        if after in ("valued", "pair"):
            end = max(end, index + 1)
            todo.append((index + 1, required, optional, "valued" if after == "pair" else "none"))
            continue
        if word == "--" or (word is not None and word in runner.marker):
            end = max(end, index + 1)
            todo.append((index + 1, required, 0, "end"))  # the command follows its operands
            continue
        option = words.option(index) if after != "end" else None
        if option is not None or (word is not None and word in runner.flags):
            end = max(end, index + 1)
            kind = "unknown" if word is None else _option_kind(runner, option or word)
            todo.append((index + 1, required, optional, kind))
            continue
        if runner.assignments and word is not None and _ASSIGNMENT.match(word):
            todo.append((index + 1, required, optional, after))
            continue
        ended = "end" if after == "end" else "none"
        if required:
            end = max(end, index + 1)
            todo.append((index + 1, required - 1, optional, ended))
            if after == "unknown":
                todo.append((index + 1, required, optional, "none"))
            continue
        starts.add(index)
        if after == "unknown":
            end = max(end, index + 1)
            todo.append((index + 1, 0, optional, "none"))
        if optional:
            end = max(end, index + 1)
            todo.append((index + 1, 0, optional - 1, ended))
    return sorted(starts), end


LOADER = Runner(
    flags=_options("--list --verify --inhibit-cache --list-tunables --list-diagnostics"),
    valued=_options("""
        --library-path --inhibit-rpath --audit --preload --argv0 --glibc-hwcaps-prefix
        --glibc-hwcaps-mask
    """),
    keeps_place=True,
)
"""The dynamic loader run as a program (``/lib64/ld-linux-x86-64.so.2 PROGRAM``) runs
its first word that is no option: a wrapper as ``busybox`` is (a deny rule on ``touch``
let the loader run it: a trial)."""
_LOADER_NAME = re.compile(r"ld(?:-linux(?:-[\w-]+)?|-musl-[\w-]+|64)?\.so(?:\.\d+)*")
"""glibc's loaders (``ld-linux-x86-64.so.2``, ``ld-linux-aarch64.so.1``, ``ld64.so.2``,
``ld.so``) and musl's (``ld-musl-x86_64.so.1``)."""


def command_runner(name: str) -> Runner | None:
    """The runner a program's base name is, if any (:data:`COMMAND_RUNNERS`, a loader)."""
    return COMMAND_RUNNERS.get(name) or (LOADER if _LOADER_NAME.fullmatch(name) else None)


def read_runner(
    name: str, rest: Sequence[str | None], texts: Sequence[str] | None = None
) -> Readings:
    """What the program ``name`` runs, from its words ``rest`` (None: computed at run
    time; ``texts``: the words as written): the starts of the command it runs (``uv run
    --with x pytest``: ``pytest``) and the shell code it runs (``su -c TEXT``, ``sg GROUP
    TEXT``, each word of ``hyperfine``)."""
    runner = command_runner(name)
    if runner is None:
        return Readings([], [])
    words = _Words(rest, [w or "" for w in rest] if texts is None else texts)
    if not runner.sequences:
        return _read(name, runner, words)
    readings = Readings([], [])
    begin = 0
    for index in [*(i for i, w in enumerate(rest) if w == ";"), len(rest)]:
        part = _Words(rest[begin:index], words.texts[begin:index])
        found = _read(name, runner, part)
        readings.starts += [begin + i for i in found.starts]
        readings.scripts += found.scripts
        readings.unclear = readings.unclear or found.unclear
        begin = index + 1
    return readings


def _read(name: str, runner: Runner, words: _Words) -> Readings:
    """:func:`read_runner` for one of its commands (``tmux … \\; …``: each)."""
    rest = words.values
    if name == "start-stop-daemon":  # (however spelt: `-Sx PROG`, `--exe PROG`, `-aPROG`)
        return Readings([], [], "`start-stop-daemon` runs a program its options name, with "
                        "the words after `--`")  # fmt: skip
    if name == "wave-bash" and (unread := _wave_bash_unread(runner, rest)) is not None:
        return Readings([], [], unread)
    own = Runner(flags=runner.flags, valued=runner.valued, pairs=runner.pairs)
    found: set[int] = set()
    ends = [0]
    scripts: list[str | None] = []
    subcommands, own_end = command_starts(own, words, 0)  # (where a subcommand may be)
    if runner.global_texts:  # (`tmux -c CODE`: before its subcommand)
        scripts += _option_scripts(Runner(texts=runner.global_texts), words, range(own_end))
    path_operands = dict(runner.path_operands)
    for path in runner.paths:
        at = subcommands if path else [0]
        if path and any(rest[i] is None for i in at):
            return Readings([], [], f"`{name}`'s subcommand is computed at run time")
        for index in at:
            after = _after_path(words, index, path)
            if after is None:
                continue
            more = path_operands.get(path, 0)
            starts, end = command_starts(runner, words, after, more)
            found.update(starts)
            ends.append(end)
    if len(found) > MAX_READINGS:
        return Readings([], [], f"`{name}`'s options leave too many readings of its command")
    starts = sorted(found)
    argv = any(words.option(i) in runner.argv_options for i in range(max(ends)))
    region = range(len(rest) if runner.anywhere and not argv else max(ends))
    options = {o for i in region for o in _named(runner, words.option(i))}
    scripts += _option_scripts(runner, words, region)
    if options & runner.no_command:
        starts = []
    starts += [i + 1 for i in region if words.option(i) in runner.programs and i + 1 < len(rest)]
    attached = next((w for i in region if (w := rest[i]) is not None and "=" in w
                     and w.split("=", 1)[0] in runner.programs), None)  # fmt: skip
    if attached is not None:  # (`--exec=/usr/bin/rm`: a program no word of its own holds)
        return Readings([], [], f"`{name}` runs the program its option `{attached}` names")

    if runner.each:
        filled = bool(options & runner.placeholders)
        scripts += _each(runner, words, starts, filled)
        starts = []
    elif runner.shell or options & runner.shell_flags:
        scripts += [_joined(rest[i:]) for i in starts]
        starts = []
    return Readings(starts, scripts)


WAVE_BASH_UNREAD = frozenset({"bridge", "mcp", "input", "attach"})
"""wave-bash's subcommands that run what they are sent or typed (a review ran a denied
command through `bridge`'s stdin)."""


def _wave_bash_unread(runner: Runner, rest: Sequence[str | None]) -> str | None:
    """Why what ``wave-bash`` runs cannot be read from its words (up to ``--``, after
    which ``run``'s command is read as its own): its ssh options and remote command, any
    prefix argparse takes for them, before or after the subcommand
    (``--ssh-option='-o ProxyCommand=…'`` ran here, ``tasks --ssh-opt=…`` too: reviews),
    or a subcommand of :data:`WAVE_BASH_UNREAD` (any word that is one: an option's value
    taken for the subcommand hid `input`, a review); None for the others."""
    running = ("--ssh-option", "--remote-command")
    known = runner.valued | runner.flags
    for word in rest:
        if word is None:
            return "`wave-bash`'s words are known only as it runs"
        if word == "--":
            return None
        flag = word.split("=", 1)[0]
        if flag not in known and len(flag) > 2 and any(o.startswith(flag) for o in running):
            return f"`wave-bash {flag}` runs what it says through ssh, which no rule sees"
        if word in WAVE_BASH_UNREAD:
            return f"`wave-bash {word}` runs what it is sent or typed, which no rule sees"
    return None


def _named(runner: Runner, word: str | None) -> list[str]:
    """The options a word names: ``--name`` (without ``=value``), or each of its grouped
    short ones (``-pc``: ``-p``, ``-c``)."""
    if word is None:
        return []
    if word.startswith("--"):
        return [word.split("=", 1)[0]]
    return [word, *short_options(word, runner.letters)]


def _after_path(words: _Words, index: int, path: tuple[str, ...]) -> int | None:
    """Where the words after subcommand ``path`` start, when it begins at ``index``
    (options may come between its words: ``uv tool -q run``); None when it does not."""
    for part in path:
        while index < len(words.values) and words.option(index) is not None:
            index += 1
        if index >= len(words.values) or words.values[index] != part:
            return None
        index += 1
    return index


def _joined(words: Sequence[str | None]) -> str | None:
    """Words a program joins with spaces and hands a shell (None: one is computed)."""
    return None if None in words else " ".join(w or "" for w in words)


def _each(runner: Runner, words: _Words, starts: list[int], filled: bool) -> list[str | None]:
    """The commands of a runner whose every word is one (``hyperfine A B``), from its first
    start: not its options, their values or its shortcuts (``npm:watch``); one with a
    ``{…}`` its options fill in is computed."""
    found: list[str | None] = []
    index = min(starts, default=len(words.values))
    while index < len(words.values):
        word, option = words.values[index], words.option(index)
        index += 1
        if option is not None:
            kind = _option_kind(runner, option)
            index += 2 if kind == "pair" else 1 if kind == "valued" else 0
        elif word is None or not word.startswith(runner.shortcuts or ("\0",)):
            found.append(None if word is None or (filled and "{" in word) else word)
    return found


def _option_scripts(runner: Runner, words: _Words, region: Iterable[int]) -> list[str | None]:
    """The code a runner's options among the words at ``region`` give it (``-c TEXT``,
    ``-cTEXT``, ``-qc TEXT``, ``--command=TEXT``, ``--comm TEXT``: a long option may be
    shortened; ``strace -o '|CMD'``); None for code computed at run time."""
    found: list[str | None] = []
    longs = [o for o in runner.texts if o.startswith("--")]
    letters = runner.letters
    prefixes = [o for o in dict.fromkeys(o for o, _ in runner.prefixed) if o.startswith("-")]
    for index in region:
        word = words.option(index)
        if word is None:
            continue
        following = words.values[index + 1] if index + 1 < len(words.values) else ""
        computed = words.values[index] is None  # (`-c"$X"`: its value is computed)
        flag, equals, value = word.partition("=")
        given: str | None
        if word in runner.texts or word in prefixes or (flag.startswith("--") and equals):
            option, given = flag, (None if computed else value) if equals else following
        elif flag.startswith("--"):
            option, given = flag, following
        else:  # grouped short options
            options = short_options(word, letters)
            if not options:
                continue
            option = options[-1]
            attached = word[len(options) + 1 :]
            given = (None if computed else attached) if attached else following
        if option.startswith("--") and option not in runner.flags | runner.valued:
            option = next((o for o in [*longs, *prefixes] if o.startswith(option)), option)
        if option in runner.texts:  # (a long option may be shortened: `--comm`)
            found.append(given)
        elif option in prefixes:
            if given is not None:
                found += [given[len(p) :] for o, p in runner.prefixed
                          if o == option and given.startswith(p)]  # fmt: skip
            elif index + 1 >= len(words.values) or _may_start_with_any(words.texts[index + 1]):
                found.append(None)
    return found


def _may_start_with_any(text: str) -> bool:
    """Whether a word computed at run time may start with anything (``"$LOG"``), as
    opposed to a literal start (``"trace-$$.txt"``, ``log-$(date)``)."""
    return text.lstrip("\"'")[:1] in ("", "$", "`", "\\", "~", "{", "*", "?", "[")
