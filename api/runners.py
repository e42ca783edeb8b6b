"""Commands that run other commands: which of their words are that command.

Wrappers (``timeout 5 git push``) are transparent: the command after them is what rules
match. Runners (``sudo``, ``xargs``, ``find -exec``, ``uv run``, ``npx``, ``strace``…) are
not: an allow rule must match the whole, and the command they run is a variant that deny
and ask rules also catch. Options are read as each program reads them where its grammar
is known; for the others, every word that could start the command is taken as its start.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

WRAPPERS = frozenset({
    "timeout", "time", "nice", "nohup", "stdbuf", "command", "env", "exec", "coproc", "builtin",
    "setsid", "ionice",
})  # fmt: skip
"""Commands that run the rest of their words as the command."""
RUNNERS = frozenset({"sudo", "doas", "xargs", "watch", "find", "busybox"})
"""Commands that run another command given in their words: it is a variant, checked by
deny and ask rules (an allow rule must match the whole, ``sudo …`` included)."""
XARGS_OPTIONS_WITH_VALUE = frozenset({
    "-a", "-d", "-E", "-e", "-I", "-L", "-l", "-n", "-P", "-s", "--arg-file", "--delimiter",
    "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars",
    "--process-slot-var",
})  # fmt: skip
WATCH_OPTIONS_WITH_VALUE = frozenset({"-n", "--interval", "-q", "--equexit"})
SUDO_OPTIONS_WITH_VALUE = frozenset({
    "-u", "-g", "-h", "-p", "-C", "-D", "-R", "-T", "-U", "--user", "--group", "--host",
    "--prompt", "--close-from", "--chdir", "--chroot", "--command-timeout", "--other-user",
})  # fmt: skip


RUNNER_OPTIONS_WITH_VALUE = {"xargs": XARGS_OPTIONS_WITH_VALUE, "watch": WATCH_OPTIONS_WITH_VALUE}
"""A runner's options that take the next word (sudo's and doas's otherwise)."""


def runner_commands(
    name: str, rest: Sequence[str | None], shown: Sequence[str]
) -> list[tuple[list[str | None], list[str], bool]]:
    """The commands a runner (``sudo``, ``xargs``, ``find -exec``, …) runs: their words
    (None: known only at run time, such as ``{}``, which ``find`` and ``xargs -I`` fill
    in) and whether the runner appends more words (``xargs``)."""
    if name not in RUNNERS:
        return []
    if name == "find":
        found = []
        for i, word in enumerate(rest):
            if word in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(rest)) if rest[j] in (";", "+")), len(rest))
                words = [None if w is None or "{}" in w else w for w in rest[i + 1 : end]]
                if words:
                    found.append((words, list(shown[i + 1 : end]), False))
        return found
    takes_value = RUNNER_OPTIONS_WITH_VALUE.get(name, SUDO_OPTIONS_WITH_VALUE)
    i, placeholder = 0, None
    while i < len(rest) and (word := rest[i]) is not None and word.startswith("-"):
        if word == "--":
            i += 1
            break
        flag = word.split("=", 1)[0]
        if name == "xargs":  # -I R, -IR, -i[R], --replace[=R]: R in a word is filled in
            if word.startswith("-I"):
                given = word[2:] or (rest[i + 1] if i + 1 < len(rest) else "{}")
                placeholder = given if given is not None else ""  # computed: any word
            elif word.startswith("-i"):
                placeholder = word[2:] or "{}"
            elif flag == "--replace":
                placeholder = word.split("=", 1)[1] if "=" in word else "{}"
        letters = "".join(o[1] for o in takes_value if len(o) == 2)
        if word.startswith("--"):
            i += 1 if ("=" in word or flag not in takes_value) else 2
        else:  # grouped short options: `-rn 1`, `-Eu root`, `-uroot`
            i += 2 if _takes_next_word(word, letters) else 1
    if i < len(rest) and rest[i] is None:  # a runner option computed at run time
        return [([None, *rest[i + 1 :]], list(shown[i:]), name == "xargs")]
    if i >= len(shown):
        return []
    words = [None if w is None or (placeholder and placeholder in w) else w for w in rest[i:]]
    return [(words, list(shown[i:]), name == "xargs")]


def wrapper_arguments(wrapper: str, rest: Sequence[str | None]) -> int | None:
    """How many words after ``wrapper`` belong to it (the command follows), or None when
    it runs no command of its own (``command -v``, a bare ``env``)."""
    i = 0

    def option_value(options_with_value: Iterable[str]) -> None:
        nonlocal i
        while i < len(rest) and (word := rest[i]) is not None and word.startswith("-"):
            if word == "--":
                i += 1
                return
            flag = word.split("=", 1)[0]
            i += 2 if flag in options_with_value and "=" not in word else 1

    match wrapper:
        case "timeout":
            option_value({"-s", "--signal", "-k", "--kill-after"})
            i += 1  # the duration
        case "time":
            option_value(())
        case "nice":
            option_value({"-n", "--adjustment"})
        case "stdbuf":
            option_value({"-i", "-o", "-e", "--input", "--output", "--error"})
        case "nohup" | "exec" | "coproc" | "builtin":
            option_value({"-a"})
        case "setsid":
            option_value(())
        case "ionice":
            if any(w is None or w.startswith(("-p", "-P", "-u", "--pid")) for w in rest):
                return None  # `ionice -p PID`: it runs no command
            option_value({"-c", "--class", "-n", "--classdata"})
        case "command":
            if i < len(rest) and rest[i] in ("-v", "-V"):
                return None
            option_value(())
        case "env":
            option_value({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"})
            while i < len(rest) and ((word := rest[i]) is None or "=" in word):
                i += 1
        case _:
            return None
    return i if i < len(rest) else None


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


def _takes_next_word(word: str, with_value: str) -> bool:
    """Whether a word of grouped short options ends with one that takes the next word."""
    options = short_options(word, with_value)
    return bool(options) and options[-1][1] in with_value and word.endswith(options[-1][1])


def _subcommands(
    program: str, *paths: str, operands: int = 0
) -> dict[str, dict[tuple[str, ...], int]]:
    return {program: {tuple(path.split()): operands for path in paths}}


_RUN_SUBCOMMAND = (
    "poetry", "pipenv", "pdm", "hatch", "rye", "pixi", "devbox", "conda", "mamba", "micromamba",
    "op", "doppler", "dotenv", "infisical",
)  # fmt: skip
_EXEC_SUBCOMMAND = ("bundle", "asdf", "pyenv", "rbenv", "nodenv")
_WHOLE = (
    "uvx", "npx", "pnpx", "bunx", "strace", "ltrace", "valgrind", "unbuffer", "xvfb-run",
    "catchsegv", "eatmydata", "nocache", "torsocks", "proxychains", "proxychains4",
    "dbus-run-session", "numactl", "prlimit", "setpriv", "unshare", "nsenter", "firejail",
    "proot", "systemd-run", "fakeroot", "pkexec", "run0", "runuser", "cgexec", "chronic",
)  # fmt: skip
_AFTER_ONE_OPERAND = ("flock", "chroot", "taskset", "chrt", "faketime", "sg")

COMMAND_RUNNERS: dict[str, dict[tuple[str, ...], int]] = {
    **{name: {("run",): 0} for name in _RUN_SUBCOMMAND},
    **{name: {("exec",): 0} for name in _EXEC_SUBCOMMAND},
    **_subcommands("uv", "run", "tool run"),
    **_subcommands("npm", "exec", "x"),
    **_subcommands("pnpm", "exec", "dlx"),
    **_subcommands("yarn", "exec", "dlx"),
    **_subcommands("bun", "x"),
    **_subcommands("mise", "exec", "x", operands=8),  # tool versions, then `--` or not
    **_subcommands("direnv", "exec", operands=1),  # its directory
    **_subcommands("aws-vault", "exec", operands=1),  # the profile
    **_subcommands("nix", "develop", "shell", operands=8),  # the installables, then `-c`
    **_subcommands("ip", "netns exec", operands=1),
    **_subcommands("perf", "stat", "record", "trace"),
    **{name: {(): 0} for name in _WHOLE},
    **{name: {(): 1} for name in _AFTER_ONE_OPERAND},
}
"""Programs that run the command in their later words: by the subcommand that does
(none: the program itself) and how many operands may come first (``direnv exec DIR``,
``flock FILE``, ``taskset MASK``). Their options are not read one by one: a word after
an option may be its value or the command, and both are taken."""
TEXT_OPTIONS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("su", "runuser"), frozenset({"-c", "--command", "--session-command"})),
    **dict.fromkeys(("script", "flock"), frozenset({"-c", "--command"})),
    "sg": frozenset({"-c"}),
    "nix-shell": frozenset({"--run", "--command"}),
}
"""Options whose value is shell code the program runs (``su -c TEXT``)."""
ROOT_CHANGERS = frozenset({"chroot", "unshare", "nsenter", "firejail", "proot", "systemd-run"})
"""Runners whose command may see other files at the same absolute paths."""
MAX_READINGS = 16
"""Possible starts of a runner's command read at most; more make the command ask."""


def command_starts(rest: Sequence[str | None], first: int, operands: int) -> list[int]:
    """Where in ``rest`` the command a runner runs may start, from ``first``: at a word
    that is no option, whether or not it is the value of the option before it (or one of
    up to ``operands`` operands): both readings are followed. A word computed at run time
    starts it only where it can be nothing else; after ``--``, the next word does."""
    starts: set[int] = set()
    seen: set[tuple[int, int, bool]] = set()
    todo = [(first, operands, False)]  # (word, operands left, after an option)
    while todo:
        state = todo.pop()
        index, left, after_option = state
        if state in seen or index >= len(rest):
            continue
        seen.add(state)
        word = rest[index]
        if word == "--":  # the command follows
            starts.update(range(index + 1, min(index + 2, len(rest))))
            continue
        if word is not None and word.startswith("-") and len(word) > 1:
            todo.append((index + 1, left, "=" not in word))
            continue
        if word is not None or not (after_option or left):
            starts.add(index)
        if after_option:
            todo.append((index + 1, left, False))
        if left:
            todo.append((index + 1, left - 1, False))
    return sorted(starts)


def program_commands(name: str, rest: Sequence[str | None]) -> list[int] | None:
    """Where the command a program runner or wrapper in :data:`COMMAND_RUNNERS` runs may
    start in its words ``rest`` (``uv run --with x pytest``: at ``x`` or ``pytest``);
    None when there are more readings than :data:`MAX_READINGS`."""
    paths = COMMAND_RUNNERS.get(name)
    if not paths:
        return []
    found: set[int] = set()
    for path, operands in paths.items():
        at = command_starts(rest, 0, 0) if path else [0]
        for index in at:
            if path and tuple(rest[index : index + len(path)]) != path:
                continue
            found.update(command_starts(rest, index + len(path), operands))
    return sorted(found) if len(found) <= MAX_READINGS else None


def program_scripts(name: str, rest: Sequence[str | None], before: int) -> list[str | None]:
    """Shell code a program runs as the value of one of its options (``su -c TEXT``,
    ``flock FILE -c TEXT``, ``nix-shell --run TEXT``), among its first ``before`` words
    (None: computed at run time)."""
    options = TEXT_OPTIONS.get(name)
    if not options:
        return []
    letters = "".join(o[1] for o in options if len(o) == 2)
    found: list[str | None] = []
    for index, word in enumerate(rest[:before]):
        if word is None:
            continue
        flag, equals, value = word.partition("=")
        if word.startswith("--") and equals and flag in options:
            found.append(value)
        elif word in options or (letters and _takes_next_word(word, letters)):
            found.append(rest[index + 1] if index + 1 < len(rest) else "")
    return found
