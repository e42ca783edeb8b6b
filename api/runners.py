"""Commands that run other commands: which of their words are that command.

Wrappers (``timeout 5 git push``) are transparent: the command after them is what rules
match. Runners (``sudo``, ``xargs``, ``find -exec``, ``uv run``, ``npx``, ``strace``…) are
not: an allow rule must match the whole, and the command they run is a variant that deny
and ask rules also catch. Options are read as each program reads them where its grammar
is known; for the others, every word that could start the command is taken as its start.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

WRAPPERS = frozenset({
    "timeout", "time", "nice", "nohup", "stdbuf", "command", "env", "exec", "coproc", "builtin",
    "setsid", "ionice",
})  # fmt: skip
"""Commands that run the rest of their words as the command."""
RUNNERS = frozenset({"sudo", "doas", "xargs", "find", "busybox"})
"""Commands that run another command given in their words: it is a variant, checked by
deny and ask rules (an allow rule must match the whole, ``sudo …`` included)."""
XARGS_OPTIONS_WITH_VALUE = frozenset({
    "-a", "-d", "-E", "-e", "-I", "-L", "-l", "-n", "-P", "-s", "--arg-file", "--delimiter",
    "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars",
    "--process-slot-var",
})  # fmt: skip
SUDO_OPTIONS_WITH_VALUE = frozenset({
    "-u", "-g", "-h", "-p", "-C", "-D", "-R", "-T", "-U", "--user", "--group", "--host",
    "--prompt", "--close-from", "--chdir", "--chroot", "--command-timeout", "--other-user",
})  # fmt: skip


RUNNER_OPTIONS_WITH_VALUE = {"xargs": XARGS_OPTIONS_WITH_VALUE}
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


Place = Literal["kept", "moved", "root"]


@dataclass(frozen=True)
class Runner:
    """How a program runs a command given in its words (``uv run --with x pytest``)."""

    paths: tuple[tuple[str, ...], ...] = ((),)
    """The subcommands that run it (``("run",)``; ``()``: the program itself)."""
    operands: int = 0
    """Operands that come first (``flock FILE``, ``direnv exec DIR``)."""
    optional: int = 0
    """Operands that may come first too (``mise exec node@20``, ``nix develop .#dev``)."""
    flags: frozenset[str] = frozenset()
    """Options known to take no value (``--frozen``): the next word is no value."""
    valued: frozenset[str] = frozenset()
    """Options known to take the next word (``--with``, ``-p``)."""
    texts: frozenset[str] = frozenset()
    """Options whose value is shell code the program runs (``su -c``, ``npx --call``)."""
    shell_flags: frozenset[str] = frozenset()
    """Options that make it run its command words through a shell (``pnpm exec -c``)."""
    shell: bool = False
    """It always joins its command words and runs them through a shell (``sg``, ``watch``)."""
    each: bool = False
    """Each of its words is a command of its own, run by a shell (``hyperfine A B``)."""
    assignments: bool = False
    """``NAME=value`` words may come first (``cross-env A=1 CMD``)."""
    marker: frozenset[str] = frozenset()
    """Words after which the command comes, as after ``--`` (``gdb --args``)."""
    keeps_place: bool = False
    """The command runs in the same directory with the same ``HOME``: writes inside it are
    checked as written (``flock``, ``strace``); else only absolute ones are."""
    root: bool = False
    """The command may see another root: no write inside it is known (``chroot``)."""
    anywhere: bool = False
    """Its code options may follow the command's start (``runuser USER -c CODE``)."""

    @property
    def place(self) -> Place:
        """Where its command runs: the same directory, ``HOME`` and root (``kept``),
        maybe another directory or ``HOME`` (``moved``), maybe another root."""
        return "root" if self.root else "kept" if self.keeps_place else "moved"

    @property
    def letters(self) -> str:
        """Short options that take a value (attached, or the next word)."""
        return "".join(o[1] for o in self.valued | self.texts if len(o) == 2)


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
    keeps_place=True,
)
_RUN = Runner(paths=(("run",),))
_EXEC = Runner(paths=(("exec",),))
_SHELL_TEXT = Runner(texts=_options("-c --command --session-command"), anywhere=True)
_IN_PLACE = Runner(keeps_place=True)
_ELSEWHERE = Runner(root=True)

COMMAND_RUNNERS: dict[str, Runner] = {
    # project and environment runners, by the subcommand that runs a command
    "uv": _UV,
    "uvx": Runner(flags=_UV.flags, valued=_UV.valued),
    **dict.fromkeys(("npx", "pnpx"), _NPX),
    "npm": Runner(
        paths=(("exec",), ("exe",), ("x",)),
        flags=_NPX.flags,
        valued=_NPX.valued,
        texts=_NPX.texts,
    ),
    "pnpm": Runner(
        paths=(("exec",), ("dlx",)),
        valued=_options("-C --dir --filter -F --workspace-root -w"),
        flags=_options("-r --recursive --parallel --silent -s --no-bail"),
        shell_flags=_options("-c --shell-mode"),
    ),
    "yarn": Runner(paths=(("exec",), ("dlx",)), shell=True),
    "bun": Runner(paths=(("x",),)),
    "bunx": Runner(flags=_options("--bun"), valued=_options("-p --package")),
    "bundle": Runner(paths=(("exec",), ("exe",), ("ex",), ("e",))),
    **dict.fromkeys(("pipenv", "pdm", "rye", "op"), _RUN),
    "poetry": Runner(paths=(("run",),), valued=_options("-C --directory -P --project")),
    "hatch": Runner(paths=(("run",), ("env", "run"))),
    "pixi": Runner(paths=(("run",), ("exec",)), shell=True),  # (`run`: its task shell)
    "devbox": Runner(paths=(("run",),), shell=True),
    "doppler": Runner(paths=(("run",),), texts=_options("--command")),
    "infisical": Runner(paths=(("run",),), texts=_options("--command")),
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
    "mise": Runner(paths=(("exec",), ("x",)), optional=8, texts=_options("-c --command")),
    "nvm": Runner(paths=(("exec",), ("run",)), optional=1),
    "fnm": Runner(paths=(("exec",),), valued=_options("--using")),
    "volta": Runner(paths=(("run",),), valued=_options("--node --npm --yarn --pnpm --env")),
    "rustup": Runner(paths=(("run",),), operands=1),
    "tox": Runner(paths=(("exec",),), valued=_options("-e")),
    "direnv": Runner(paths=(("exec",),), operands=1),
    "aws-vault": Runner(paths=(("exec",),), operands=1),
    "nix": Runner(paths=(("develop",), ("shell",)), optional=8),
    "nix-shell": Runner(paths=(), texts=_options("--run --command"), anywhere=True),
    # wrappers: their words after their options (and operands) are the command
    "strace": _STRACE,
    **dict.fromkeys(
        _options(
            "ltrace valgrind unbuffer xvfb-run catchsegv eatmydata nocache torsocks proxychains "
            "proxychains4 dbus-run-session numactl prlimit chronic ifne dumb-init tini "
            "caffeinate arch fakeroot cgexec setpriv"
        ),
        _IN_PLACE,
    ),
    **dict.fromkeys(
        ("taskset", "chrt", "faketime", "setarch"), Runner(operands=1, keeps_place=True)
    ),
    "flock": Runner(
        operands=1,
        valued=_options("-w --timeout -E --conflict-exit-code"),
        texts=_options("-c --command"),
        keeps_place=True,
    ),
    "rr": Runner(paths=(("record",),), keeps_place=True),
    "perf": Runner(paths=(("stat",), ("record",), ("trace",), ("ftrace",)), keeps_place=True),
    "ip": Runner(paths=(("netns", "exec"),), operands=1, keeps_place=True),
    "gdb": Runner(marker=_options("--args"), keeps_place=True),
    "lldb": Runner(keeps_place=True),
    **dict.fromkeys(
        _options(
            "pkexec run0 systemd-run unshare nsenter firejail proot flatpak-spawn sandbox-exec"
        ),
        _ELSEWHERE,
    ),
    **dict.fromkeys(("chroot", "arch-chroot"), Runner(operands=1, root=True)),
    "systemd-nspawn": Runner(valued=_options("-D --directory -M --machine -u --user"), root=True),
    "toolbox": Runner(paths=(("run",),), root=True),
    "distrobox": Runner(paths=(("enter",),), optional=1, root=True),
    "runuser": Runner(texts=_SHELL_TEXT.texts, valued=_options("-u -g -G -s -w"), anywhere=True),
    "su": Runner(paths=(), texts=_SHELL_TEXT.texts, valued=_options("-g -G -s -w"), anywhere=True),
    "script": Runner(
        optional=1,
        texts=_options("-c --command"),
        anywhere=True,
        valued=_options("-E -I -O -B -T -m -o --echo --log-in --log-out"),
    ),
    "sg": Runner(operands=1, shell=True, texts=_options("-c"), anywhere=True),
    # programs that run their words through a shell
    "watch": Runner(shell=True, valued=_options("-n --interval -q --equexit -d")),
    "watchexec": Runner(shell=True, valued=_options("-w --watch -e --exts -i --ignore")),
    "entr": Runner(texts=_options("-s")),
    "nodemon": Runner(paths=(), texts=_options("-x --exec")),
    "hyperfine": Runner(
        each=True,
        texts=_options("-p --prepare -c --cleanup -s --setup"),
        valued=_options(
            "-w --warmup -r --runs -m --min-runs -M --max-runs "
            "-n --command-name --export-json --export-markdown "
            "--export-csv -S --shell -u --time-unit"
        ),
    ),
    "concurrently": Runner(each=True, valued=_options("-n --names -c --prefix-colors -p --prefix")),
    "tmux": Runner(
        paths=tuple(
            (p,)
            for p in (
                "new-session",
                "new",
                "new-window",
                "neww",
                "split-window",
                "splitw",
                "respawn-pane",
                "respawnp",
                "run-shell",
                "run",
            )
        ),
        shell=True,
        valued=_options("-s -n -c -t -x -y -F -e -f -l -p -L -S"),
    ),
    "screen": Runner(valued=_options("-S -c -h -e -p -T -X -t")),
}
"""Programs that run a command given in their words (``api/CONTRACT.md`` PM1a): what they
run is a variant of theirs, which deny and ask rules catch. Options not listed are read
both ways: a word after one may be its value or the command, and both are taken."""
MAX_READINGS = 16
"""Possible starts of a runner's command read at most; more make the command ask."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Readings:
    """What a runner may run, read from its words."""

    starts: list[int]
    """Where its command (argv) may start in the words after its name."""
    scripts: list[str | None]
    """Shell code it runs (None: computed at run time)."""
    unclear: str | None = None
    """Why what it runs cannot be told (too many readings, a computed subcommand)."""


def _option_kind(runner: Runner, word: str) -> str:
    """``flag``, ``valued`` (the next word is its value) or ``unknown`` (either)."""
    if word in runner.flags or "=" in word:
        return "flag"
    if word in runner.valued or word in runner.texts:
        return "valued"
    if not word.startswith("--") and len(word) > 2:  # grouped short options (`-fo out`)
        letters = runner.letters
        options = short_options(word, letters)
        if options[-1][1] in letters:
            return "valued" if word.endswith(options[-1][1]) else "flag"
        if all(o in runner.flags for o in options):
            return "flag"
    return "unknown"


def command_starts(runner: Runner, rest: Sequence[str | None], first: int) -> list[int]:
    """Where in ``rest`` the command a runner runs may start, from ``first``: at the first
    word that is no option, no option's value and no operand. Where that is unclear (an
    option not listed, optional operands) each reading is followed; a word computed at
    run time is read as the command wherever it may be one."""
    starts: set[int] = set()
    seen: set[tuple[int, int, int, str]] = set()
    todo = [(first, runner.operands, runner.optional, "none")]  # (word, operands, optional, after)
    while todo:
        state = todo.pop()
        index, required, optional, after = state
        if state in seen or index >= len(rest):
            continue
        seen.add(state)
        word = rest[index]
        if word == "--" or word in runner.marker:  # the command follows (operands first)
            todo.append((index + 1, required, optional, "end"))
            continue
        if after == "valued":
            todo.append((index + 1, required, optional, "none"))
            continue
        if after != "end" and word is not None and word.startswith("-") and len(word) > 1:
            todo.append((index + 1, required, optional, _option_kind(runner, word)))
            continue
        if runner.assignments and word is not None and _ASSIGNMENT.match(word):
            todo.append((index + 1, required, optional, after))
            continue
        if required:
            todo.append((index + 1, required - 1, optional, after if after == "end" else "none"))
            if after == "unknown":
                todo.append((index + 1, required, optional, "none"))
            continue
        starts.add(index)
        if after == "unknown":
            todo.append((index + 1, 0, optional, "none"))
        if optional:
            todo.append((index + 1, 0, optional - 1, after if after == "end" else "none"))
    return sorted(starts)


def read_runner(name: str, rest: Sequence[str | None]) -> Readings:
    """What the program ``name`` runs, from its words ``rest``: the starts of the command
    it runs (``uv run --with x pytest``: ``pytest``) and the shell code it runs (``su -c
    TEXT``, ``flock FILE -c TEXT``, ``sg GROUP TEXT``)."""
    runner = COMMAND_RUNNERS.get(name)
    if runner is None:
        return Readings([], [])
    found: set[int] = set()
    for path in runner.paths:
        at = [0]
        if path:
            at = command_starts(Runner(flags=runner.flags, valued=runner.valued), rest, 0)
            if any(rest[i] is None for i in at):
                return Readings([], [], f"`{name}`'s subcommand is computed at run time")
        for index in at:
            if tuple(rest[index : index + len(path)]) == path:
                found.update(command_starts(runner, rest, index + len(path)))
    if len(found) > MAX_READINGS:
        return Readings([], [], f"`{name}`'s options leave too many readings of its command")
    starts = sorted(found)
    before = len(rest) if runner.anywhere or not starts else max(starts)
    scripts = _option_scripts(runner, rest[:before], rest)
    shell = runner.shell or any(w in runner.shell_flags for w in rest[:before])
    if runner.each:
        scripts += [w for i in starts for w in rest[i:] if w is None or not w.startswith("-")]
    elif shell:
        for index in starts:
            words = rest[index:]
            scripts.append(None if None in words else " ".join(w or "" for w in words))
        starts = []
    return Readings(starts, scripts)


def _option_scripts(
    runner: Runner, words: Sequence[str | None], rest: Sequence[str | None]
) -> list[str | None]:
    """The values of a runner's code options among ``words`` (``-c TEXT``, ``-cTEXT``,
    ``-qc TEXT``, ``--command=TEXT``, ``--comm TEXT``: a long option may be shortened);
    ``strace -o '|CMD'`` too."""
    found: list[str | None] = []
    longs = [o for o in runner.texts if o.startswith("--")]
    letters = runner.letters
    for index, word in enumerate(words):
        following = rest[index + 1] if index + 1 < len(rest) else ""
        if word is None or not word.startswith("-"):
            continue
        flag, equals, value = word.partition("=")
        if flag.startswith("--"):
            named = flag in runner.texts or (
                len(flag) > 2 and flag not in runner.flags | runner.valued
                and any(o.startswith(flag) for o in longs)
            )  # fmt: skip
            if named:
                found.append(value if equals else following)
            elif runner is COMMAND_RUNNERS["strace"] and flag == "--output" and equals:
                found += _piped(value)
            continue
        options = short_options(word, letters)
        if not options or options[-1] not in runner.texts | {"-o"}:
            continue
        attached = word[word.index(options[-1][1], 1) + 1 :]
        given = attached if attached else following
        if options[-1] in runner.texts:
            found.append(given)
        elif runner is COMMAND_RUNNERS["strace"]:  # `-o |CMD`: its output is piped to CMD
            found += _piped(given)
    return found


def _piped(value: str | None) -> list[str | None]:
    if value is None:
        return [None]
    return [value[1:]] if value.startswith(("|", "!")) else []
