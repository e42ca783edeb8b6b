"""Programs that run code their words give (SPEC PM1): shells (``-c TEXT``, a script read
from input), ``eval``, ``trap``, ``env -S``; git (settings and options that name a
program, ``rebase -x``, ``bisect run``, ``submodule foreach``); tar (``--to-command``,
``-I``); sort (``--compress-program``). ``api.reading`` checks that code as a command of its own, or asks."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from .linkpaths import PER_PROCESS, links_followed, normal_path
from .runners import short_options, takes_next_word
from .shellwords import LineChosen, literal_start, made_by_the_line

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
    return tar_words(words)[2]


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


def sort_options(
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
            if long_prefix(word, "--output"):
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


def operands_and_options(
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


COPIERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cp": ("St", ("--target-directory", "--suffix", "--no-preserve", "--sparse")),
    "mv": ("St", ("--target-directory", "--suffix")),
    "ln": ("St", ("--target-directory", "--suffix")),
    "link": ("", ()),
    "install": ("gmoSt", ("--target-directory", "--suffix", "--group", "--mode", "--owner",
                          "--strip-program")),
}  # fmt: skip
"""Programs that write their last operand, or into it (a directory), or into ``-t DIR``:
their options that take the next word (short letters, long names)."""


_TAR_MODES = {"--create": "c", "--append": "r", "--update": "u", "--catenate": "A",
              "--concatenate": "A", "--extract": "x", "--get": "x"}  # fmt: skip
_TAR_NAMED = {"--file": "f", "--directory": "C", "--listed-incremental": "g",
              "--index-file": "i", "--one-top-level": "1", "--volno-file": "v",
              "--files-from": "T"}  # fmt: skip


def tar_words(
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


def option_from_a_word(name: str, words: Sequence[str | None], shown: Sequence[str]) -> bool:
    """Whether ``cp``, ``mv``, ``ln`` or ``install`` may take a word known only as it runs
    for an option, before any ``--``: ``*`` (a file named ``-t.git`` made `cp * d/` copy
    into ``.git``, a review), ``"$f"``; not ``./*``, ``src/*.txt``, ``~/$f``."""
    if name not in COPIERS:
        return False
    ended = words.index("--") if "--" in words else len(words)
    starts = [(literal_start(shown[k]), shown[k]) for k in range(ended) if words[k] is None]
    return any(start[:1] == "-" or not (start or text.startswith("~")) for start, text in starts)


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
    "mosh": (("--ssh",), "", True),
    "yarn": (("--script-shell",), "", False),
    "pnpm": (("--script-shell",), "", False),
    "man": (("--pager", "--html", "--config-file"), "PHC", True),
    "less": (("--lesskey-src", "--lesskey-file"), "k", False),
}
"""Programs that run a command an option names (a review ran a denied one through each
under an allow rule for the program): its long options, short letters, and whether the
value is shell code (else a program's name). ``zip -TT CMD`` too; ``ssh``, ``scp``,
``sftp`` and ``rsync -e ssh`` run an ``-o ProxyCommand=…`` or ``LocalCommand``; a
lesskey file of ``less -k FILE`` may set the ``LESSOPEN`` it runs (helper 218), a
config of ``man -C FILE`` its pager (helper 219): :data:`CONFIG_OPTIONS`."""
CONFIG_OPTIONS = frozenset({"--lesskey-src", "--lesskey-file", "-k", "--config-file", "-C"})
"""Options of those whose value is a file that says what runs (which no rule sees)."""
SSH_FAMILY = frozenset({"ssh", "scp", "sftp", "ssh-copy-id", "autossh", "sshfs"})
"""Programs that take ssh's ``-o`` settings and ``-F`` config (and pass them to ssh)."""
SSH_CODE_OPTIONS = re.compile(r"(?i)\s*(?:proxycommand|localcommand|knownhostscommand)\b")
SSH_LIBRARY_OPTIONS = re.compile(r"(?i)\s*(?:pkcs11provider|securitykeyprovider)\b")
"""ssh settings that load a library of the value's naming: what it runs is unknown."""


def long_prefix(word: str, option: str) -> bool:
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
    ssh = ("obF" if name == "sftp" else "oF") if name in SSH_FAMILY else ""
    found: list[str | None] = []
    if name == "rsync" and any(
        abbreviates(w, "--daemon") if w is not None else may_be_option(text, ["--daemon"])
        for w, text in zip(words, shown, strict=False)
    ):
        found.append(None)  # (its config's `pre-xfer exec` runs at the next transfer)
    for index, word in enumerate(words):
        value: str | None = ""
        option = ""
        if word is None:
            text = shown[index] if index < len(shown) else ""
            value = None if may_be_option(text, longs, letters + ssh) else ""
        elif word == "--":
            break
        elif any(long_prefix(word, o) for o in longs):
            value = long_value(words, index)
            option = next(o for o in longs if long_prefix(word, o))
        elif name == "wget" and (word in ("-e", "--execute") or word.startswith("--execute=")):
            value = _askpass(long_value(words, index) if word != "-e" else word_after(words, index))
        elif name == "zip" and word.startswith("-") and not word.startswith("--") and "TT" in word:
            after = word[word.index("TT") + 2 :].lstrip("=")  # (`-rTT CMD`, `-TTCMD`, `-TT=CMD`)
            value = after or word_after(words, index)
        elif word.startswith("-") and not word.startswith("--") and len(word) > 1:
            given = short_options(word, letters + ssh)
            if given and given[-1][1] in letters + ssh:
                rest = word[len(given) + 1 :]
                value = rest or word_after(words, index)
                option = given[-1]
                if given[-1] == "-F":  # (a config of its own: its `ProxyCommand` ran past a
                    if value not in ("none", "/dev/null"):  # deny rule, a review)
                        found.append(_unseen_config(name, value))
                    continue
                if given[-1] == "-b" and value != "/dev/null":  # (a batch's `!` lines run
                    found.append(Unseen(f"`sftp -b {value or '…'}` runs the `!` lines of "  # here)
                                        "that batch, which no rule sees"))  # fmt: skip
                    continue
                if given[-1] == "-o":  # (ssh's settings: only those that run a command,
                    matched = None if value is None else SSH_CODE_OPTIONS.match(value)
                    if value is None or SSH_LIBRARY_OPTIONS.match(value):  # its shell runs
                        found.append(None)  # their text; or load a library)
                    elif matched:
                        command = value[matched.end() :].lstrip(" \t=")
                        if command.lower() != "none":
                            found.append(command)
                    continue
        if value != "" and option in CONFIG_OPTIONS:
            found.append(Unseen(f"`{name} {option}` runs what the file {value or '…'} says "
                                "(a pager, an input filter), which no rule sees"))  # fmt: skip
        elif value != "":
            found.append(value if value is None or code else shlex.quote(value))
    return found


def _unseen_config(name: str, config: str | None) -> Unseen:
    return Unseen(
        f"`{name} -F {config or '…'}` runs what that config's `ProxyCommand`, "
        "`LocalCommand` or `Match exec` say, which no rule sees"
    )


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
    operands = set(
        operands_and_options(words, MAKE_VALUED, MAKE_LONG_VALUED)[0]
    )  # (not `-C "$d"`'s value)
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
            value = word[len(given) + 1 :] or word_after(words, index)
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


def word_after(words: Sequence[str | None], index: int) -> str | None:
    """The word after word ``index`` ("" for none)."""
    return words[index + 1] if index + 1 < len(words) else ""


def _askpass(command: str | None) -> str | None:
    """The program a wget ``-e use_askpass=PROG`` (wgetrc's spelling: case, ``-`` and
    ``_`` ignored) runs; "" for another wgetrc command."""
    if command is None:
        return None
    key, _, value = command.partition("=")
    return value.strip() if re.sub(r"[-_\s]", "", key.lower()) == "useaskpass" else ""


class Unseen(str):
    """What a program runs that no text of the command holds (a file it is told to read
    settings from): a problem to say, not code to check."""


def code_arguments(
    name: str, rest: Sequence[str | None], shown: Sequence[str] | None = None
) -> list[str | None]:
    """Shell code a builtin takes as an argument and runs later (None: computed at run
    time; an :class:`Unseen`: what it runs no text shows): ``trap CODE SIGNAL…``,
    ``mapfile -C CODE``, ``alias NAME=CODE``, the commands ``tar`` and ``sort`` run
    (``--to-command``, ``--compress-program``); ``shown``: the words as written."""
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
        return [None if p is None else shlex.quote(p) for p in sort_options(words, texts)[0]]
    if program in OPTION_COMMANDS or program in SSH_FAMILY:
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


_COMPUTED = "\0computed"
"""An option's value known only as the shell runs (a word the text computes)."""


def _shell_options(rest: Sequence[str | None]) -> tuple[list[tuple[str, str | None]], int]:
    """A shell's options as it reads them, and where its operands begin: each option as
    (its word's sign and letter, ``-o``; or a long word, ``--login``) with its value
    (``-o``, ``-O``, ``+o``, ``+O`` and ``--rcfile``, ``--init-file``, ``--emulate``
    take the next word; ``_COMPUTED`` for a word known only as it runs, None for none).
    Letters come apart from their group and each ``o`` or ``O`` in it takes a word of its
    own, as bash and zsh read them: ``-euo pipefail -c TEXT`` has TEXT as its script (the
    group was taken for one option, `pipefail` for a script file, and TEXT went unchecked:
    a review). Options end at ``--``, ``-``, or the first word that is none (its operands:
    the script of ``-c``, or a script file); a computed word ends them too, unread."""
    options: list[tuple[str, str | None]] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if word is None:
            break
        i += 1
        if word in ("--", "-"):
            break
        if word.startswith("--"):
            takes = word in SHELL_OPTIONS_WITH_VALUE
            value = (
                (rest[i] if rest[i] is not None else _COMPUTED) if takes and i < len(rest) else None
            )
            options.append((word, value))
            i += takes
            continue
        if word[:1] not in ("-", "+") or len(word) < 2:
            return options, i - 1
        for letter in word[1:]:
            value = None
            if letter in "oO":
                value = (rest[i] if rest[i] is not None else _COMPUTED) if i < len(rest) else None
                i += 1
            options.append((word[0] + letter, value))
    return options, i


def nested_shell_problem(name: str, rest: Sequence[str | None], script: str) -> str | None:
    """Why a nested shell does not run ``script`` as bash reads its text: fish's quoting
    is its own; ``sh`` may be dash, which has no ``$'…'`` (a review's `sh -c "echo
    $'\\'' ' ; touch x ; ' #'"` is one `echo` to bash and runs `touch` in dash); options
    that run start-up files (``-i``, ``-l``, ``--rcfile``) or change the environment
    its commands get (``-k``, ``-a``, ``-o allexport``, also in a group: ``-eao pipefail``)."""
    base = os.path.basename(name)
    if not is_shell(name):
        return None
    if base.startswith("fish"):
        return "`fish` reads its text by quoting rules of its own"
    for option, value in _shell_options(rest)[0]:
        if option in ("-o", "-O", "+o", "+O"):  # (zsh's `+o no_allexport` turns it on)
            named = "" if value in (None, _COMPUTED) else (value or "").lower().replace("_", "")
            if option[0] == "+":
                named = named[2:] if named.startswith("no") else ""
            if value == _COMPUTED or named in _OPTION_NAMES:
                shown = "…" if value in (None, _COMPUTED) else value
                return f"`{base} {option} {shown}` changes what its commands get"
        elif option.startswith("--"):
            if option in _STARTING:
                return f"`{base} {option}` runs start-up files or changes what its commands get"
            if re.sub(r"[-_]", "", option[2:].lower()) in _OPTION_NAMES:
                return f"`{base} {option}` changes what its commands get"  # (zsh's `--globsubst`)
        elif option[0] == "-" and option[1] in _STARTING_LETTERS:
            return f"`{base} {option}` runs start-up files or changes what its commands get"
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
    options, i = _shell_options(rest)
    letters = {option for option, _ in options}
    if (i < len(rest) and rest[i] is None) or any(v == _COMPUTED for _, v in options):
        return ""  # (an option or the script known only as it runs)
    if "-c" in letters:  # the script is the first word that is no option (`bash -c -e -- TEXT`)
        return "-" if i >= len(rest) else rest[i]
    if "-s" in letters or i >= len(rest) or reads_input(rest[i] or ""):
        return "-"  # no script file: the shell reads its input
    return None
