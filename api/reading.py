"""What a command runs and writes, read as bash would (SPEC PM1): the simple commands of
its text with their wrappers, what runners and programs run (``sudo``, ``xargs``,
``bash -c``, ``eval``, ``git rebase -x``), the files its redirections write and the
``cd``s that may come before them, and the problems that make it uncheckable (asked,
never allowed unseen). :func:`parse_command` is the entry point; ``api.permissions``
matches what it finds against rules."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .bashgrammar import (
    BRACES,
    GLOB,
    MAX_DEPTH,
    TILDE,
    bash_parser,
    brace_expands,
    continued_line,
    deeper_than,
    grammar_misreads,
    joined_lines,
    literal_assignment,
    name_word,
    node_text,
    squeeze,
    unchecked_heredoc,
    unquoted_text,
    unread_expansion,
    word_value,
)
from .programs import (
    GIT_OPTIONS_WITH_VALUE,
    Unseen,
    abbreviates,
    code_arguments,
    git_code,
    git_options,
    git_runs,
    is_shell,
    long_value,
    may_be_option,
    nested_script,
    nested_shell_problem,
    option_from_a_word,
    reads_input,
    rejoined,
    split_string,
)
from .runners import (
    QUIET_PROGRAMS,
    RG_CONFIG,
    RUNNERS,
    SEARCHERS,
    SUDO_OPTIONS_WITH_VALUE,
    WRAPPERS,
    Place,
    command_runner,
    may_vanish,
    read_runner,
    runner_commands,
    search_actions,
    short_options,
    takes_long_value,
    takes_next_word,
    wrapper_arguments,
)
from .shellwords import LineChosen, LineMade, LineSplit, ansi_c_value
from .texttools import script_code
from .writes import (
    PatchInput,
    PatchRead,
    files_written,
    git_apply_inputs,
    git_place,
    glob_folder,
    makes_links,
    patch_input,
    placed_by_git,
)

DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})


WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


LOOSE_RUNS = 8
"""Words of an unknown program's read as the start of a command it may run, at most."""


def _runs_commands(name: str) -> bool:
    """Whether the program ``name`` runs commands its words give (see :meth:`_Walker._loose_runs`)."""
    return (
        is_shell(name) or name in ("eval", "git", "env") or name in WRAPPERS
        or name in RUNNERS or name in SEARCHERS or command_runner(name) is not None
    )  # fmt: skip


PUSHES = frozenset({
    ("send-pack",), ("http-push",), ("subtree", "push"), ("lfs", "push"), ("svn", "dcommit"),
    ("p4", "submit"),
})  # fmt: skip
"""git's plumbing, and its commands, that push as ``git push`` does: a variant ``git
push`` (with its words after), which deny and ask rules on ``git push`` match too (`git
subtree push` pushed past an ask on it: a review)."""

UNPARSED_PROBLEM = (
    "it does not parse as bash as the checker reads it (a syntax error, or bash beyond its "
    "grammar such as a brace expansion in a command's name: write the command plainly)"
)


@dataclass(frozen=True)
class SimpleCommand:
    """One command that would run. ``text`` is what an allow rule must match: its words
    unquoted (``"rm"`` is ``rm``), transparent wrappers stripped, assignments that are not
    known to be harmless kept in front (``GIT_CONFIG_…=… git status`` is not ``git
    status``). ``variants`` are other readings a deny or ask rule also catches: without
    the assignments, by the program's base name (``/bin/rm``), the command run by
    ``sudo``/``doas``/``xargs``/``find -exec``/``watch``."""

    text: str
    wrappers: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    open_prefixes: tuple[str, ...] = ()
    """Readings whose words after this prefix are only known at run time (``git $X``,
    ``git $(…)``, what ``xargs git`` appends): a deny or ask rule that some command
    starting so could match catches them (``Bash(git push *)`` asks for ``git $X``)."""
    guards: tuple[Guard, ...] = ()
    """What an allow rule matching ``text`` does not cover unless it names it: ``find``'s
    ``-exec`` and ``-delete`` (also in what a runner runs: ``sudo find …``)."""
    loose: tuple[tuple[str | None, str], ...] = ()
    """The words (literal value or None, as matched) after the program where no reading
    of it is known (not a runner, a wrapper, a shell, a search tool, nor one of
    :data:`~api.runners.QUIET_PROGRAMS`): it may run them as a command (``logsave LOG
    rm x``), so a deny or ask rule that they match from a program's name on asks."""
    loose_runs: tuple[SimpleCommand, ...] = ()
    """What those words run read as a command from a word naming a program that runs
    commands (``logsave LOG sh -c 'curl x'``): a deny or ask rule one of them meets asks."""

    @property
    def name(self) -> str:
        words = self.text.split(" ")
        return next((w for w in words if "=" not in w), words[0])


@dataclass(frozen=True)
class Guard:
    """An action of a command (``find -exec``, ``-delete``, ``-fprint``) that an allow
    rule for the command approves only where its pattern names the option as a word
    (``Bash(find * -delete)``), or for ``-exec`` and the like, where the rules allow each
    command it runs on its own (``find . -exec grep -l x {} +`` with ``Bash(grep *)``):
    a ``Bash(find *)`` is read as a rule for searching, as Claude Code reads it."""

    option: str | None
    """The option; None: a word known only as the command runs, which may be any."""
    runs: tuple[SimpleCommand, ...] = ()


@dataclass(frozen=True)
class ParsedCommand:
    """What a command line would do, as the grammar sees it."""

    source: str
    commands: tuple[SimpleCommand, ...]
    writes: tuple[str, ...] = ()
    """Files its redirections write (as written; a computed target as its text)."""
    problems: tuple[str, ...] = ()
    """Why (part of) it cannot be checked; any problem makes it ``ask`` at best."""
    moves: bool = False
    """Whether it may change directory anywhere in it (a sourced file, a ``BASH_ENV``):
    its relative write targets are then in a directory known only as it runs."""
    sets_home: bool = False
    """Whether it may change ``HOME`` as it runs: it names ``HOME`` anywhere in its text,
    or sets a variable whose name is only known then (``declare "${a}OME=/etc"``,
    ``read -r HOM\\E``, ``printf -v "$v"``), or sources a file. Its ``~/`` write targets
    are then known only as it runs."""
    computed_writes: tuple[str, ...] = ()
    """Those of ``writes`` expanded as it runs (``$dir/f``, ``{/etc/passwd,}``, a glob)."""
    reads: tuple[str | None, ...] = ()
    """Files its redirections open for reading (``3< f``, ``< f``; None: known only as it
    runs, a sourced file's too): a write to a descriptor's path (``/dev/fd/3``,
    ``/dev/stdin``) opens such a file again, for writing."""
    moved_by: tuple[tuple[str, tuple[str | None, ...]], ...] = ()
    """For a write target, the directories the ``cd``s that may run before it go to, in
    order (as written; None: known only as it runs): one in a loop, a function, a nested
    shell or ``eval``, ``cd "$d"``, ``cd -``, ``popd``, ``env -C``…, or a relative one
    when the text names ``CDPATH``. Its relative target is checked in each directory the
    command may then be in."""
    sets: tuple[tuple[str | None, str], ...] = ()
    """Variables its plain statements set for the commands after them (``HOME=/x; git
    status``, ``read``, ``printf -v``, ``for``; not ``export`` or ``declare``: commands a
    rule allows whole): the name (None: computed) and the setting as a rule matches it
    (``HOME=/x``; ``NAME=…`` where the value is read as it runs). One in those commands'
    environment changes what they do, as the same assignment in front of one of them
    would (see ``RuleSet.decide``)."""
    exports_all: bool = False
    """It turns on ``allexport`` (``set -a``): every variable it sets is exported."""
    tree_writes: tuple[tuple[str, bool], ...] = ()
    """Directories a program writes in, what lands there known only as it runs: whole
    (True: ``cp -r``, ``mv``, a name known only as it runs copied into one), or files
    of a glob's names, none a dotfile (``cp -r tmpl/* .``)."""
    named_writes: tuple[tuple[str, str], ...] = ()
    """Words naming files by a glob that a program writes (``sed -i … src/*.py``), each
    with its directory: checked as the files the glob names there as it is checked."""
    into_directories: tuple[str, ...] = ()
    """Those of ``writes`` that are a last operand (``cp a dst``): written as a file, or,
    a directory already, written into (``dst/a``, a target of its own)."""
    linked: tuple[tuple[str, str, int], ...] = ()
    """What link makers write (``writes.makes_links``), each with its ``writes.Kind``
    and which of them wrote it (a number of its own): a name that may be a link, leading
    anywhere, once it ran."""
    unlinked_writes: tuple[str, ...] = ()
    """Those of ``writes`` that no link maker made: written through what ``linked`` names
    (a name, or a folder on its way), they go where its link leads, unknown before it
    runs."""
    removes: bool = False
    """It runs ``rm``, ``rmdir``, ``unlink`` or ``find -delete``: a folder there as it is
    checked may be gone, and a link made in its place, as it runs."""
    unlinked_trees: tuple[str, ...] = ()
    """Those of ``tree_writes`` that no link maker made (the same, for what lands in them)."""
    changed_only: tuple[str, ...] = ()
    """Those of ``writes`` only removed, made or overwritten with nothing of the
    command's (``writes.Kind``'s ``changed``: ``rm``, ``chmod``, ``gzip``): Write rules
    hold them, but they put no commands where something runs them."""
    changed_trees: tuple[str, ...] = ()
    """Directories changed whole (``rm -r``, ``chmod -R``): Write rules that may match in
    them ask."""
    git_dirs: tuple[str | None, ...] = ()
    """The git directories its git commands are told to use (``--git-dir``, ``GIT_DIR``),
    as written, after git's ``-C`` (None: known only as it runs)."""
    diffs: tuple[PatchRead, ...] = ()
    """The diffs ``patch`` reads to write the files they name (``writes.diff_targets``)."""


MAX_NESTING = 8
"""How deep ``bash -c 'bash -c …'`` is followed before it counts as unknowable."""


MAX_RUNNER_READINGS = 64
"""Readings of the commands runners run, at most, in one command (see ``_Walker``)."""


MAX_CHECKED_CHARS = 256 * 1024
"""A longer command is not parsed: it cannot be checked (ask)."""


SAFE_ASSIGNMENTS = frozenset({
    "CI", "NODE_ENV", "RUST_BACKTRACE", "RUST_LOG", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
    "NO_COLOR", "FORCE_COLOR", "TERM", "LANG", "LC_ALL", "TZ", "COLUMNS", "LINES", "DEBUG",
    "VERBOSE",
})  # fmt: skip
"""Variables that only change how a program talks, stripped before matching with literal
values (``LC_*`` too). Any other (``GIT_CONFIG_*``, ``LD_PRELOAD``, ``BASH_ENV``,
``PATH``) changes what runs: it stays part of the command's text."""


_HOME_READ = re.compile(r"\$HOME\b|\$\{HOME\}")
"""``HOME`` read as it is (``"$HOME/.local/bin"``), which sets nothing."""


SOURCED_VARIABLES = frozenset({"BASH_ENV", "ENV"})
"""Variables naming a file the shells a command starts run first."""


ALIAS_PROBLEM = "an alias changes what its word runs"


MISREAD_NAMES = frozenset({
    "!", "{", "}", "if", "then", "else", "elif", "fi", "while", "until", "for", "do", "done",
    "case", "esac", "select", "function", "in", "[[", "]]", "coproc", "time",
})  # fmt: skip
"""Reserved words the grammar takes for a command's name after ``!`` or ``time`` (bash
runs what follows them as the compound command it is)."""


APPENDED = LineSplit("<appended>")
"""How the words ``xargs`` appends to the command it runs are shown: any, several
(``echo --to-command=CMD | xargs tar -xf a.tar`` ran CMD, a review)."""

MOVED_PROBLEM = "`{}`'s words computed at run time may be more or fewer: what it runs may move"


NETWORK_FILES = ("/dev/tcp/", "/dev/udp/")
"""Names bash opens as network connections, not files (as written: ``/dev//tcp`` is a file)."""
NETWORK_PROBLEM = (
    "a redirection opens a network connection (`/dev/tcp/…`, `/dev/udp/…`), as `curl` would"
)


COMPUTED_WRITE_PROBLEM = (
    "it writes to `{}`, a path known only as it runs, which may be a file rules protect"
)

COMPUTED_TARGET_PROBLEM = (
    "a redirection to `{}`, a path known only as it runs, may open a network connection "
    "(`/dev/tcp/…`) or a file rules protect (a glob: `.git/conf[i]g`)"
)


_ASSIGNING_EXPANSION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?=")
"""``${NAME:=value}``, ``${NAME=value}``: sets ``NAME`` (when unset, or empty too)."""


ASSIGNING_COMMANDS = frozenset({"command", "declaration_command"})
"""Where an assignment is part of a command that a rule matches whole (``HOME=/x git
status``, ``export HOME=/x``): not a setting of its own (see ``ParsedCommand.sets``)."""
VARIABLE_SETTERS = frozenset({
    "declare", "typeset", "local", "export", "readonly", "unset", "read", "printf", "mapfile",
    "readarray", "getopts", "wait", "let",
})  # fmt: skip
"""Builtins that set (or unset) variables named by their words: one given ``HOME``, or a
word computed at run time, may move ``~`` (``wait -p``, ``printf -v``, ``let``)."""


ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


NUMERIC_SPECIALS = frozenset({"?", "#", "$", "!"})


ARITHMETIC_PROBLEM = (
    "arithmetic on a variable, whose value could hide a command (`a='x[$(cmd)]'; ((a))`)"
)


_NUMERIC_WORD = re.compile(r"\d+|0[xX][0-9a-fA-F]+|\d+#[0-9A-Za-z@_]+")
"""A number as arithmetic reads one (decimal, hexadecimal, ``BASE#DIGITS``)."""


BRACKET_PROBLEM = "a `[ … > … ]` test: bash reads its `>` or `<` as a redirection"


def _redirects_in_brackets(node: Any) -> bool:
    """Whether a ``[ … ]`` test (not ``[[ … ]]``) holds an unquoted ``>`` or ``<``: the
    grammar reads a comparison, bash a redirection (``[ x > /etc/passwd ]`` writes it)."""
    if not node.children or node.children[0].type != "[":
        return False
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if not child.is_named and child.type in (">", ">>", "<", ">|", "&>", "&>>", "<>"):
            return True
        if child.type not in ("string", "raw_string", "command_substitution"):
            stack += child.children
    return False


HEREDOC_PROBLEM = "a here-document whose expansions cannot be checked (`` `cmd` `` in it)"


CONTINUED_PROBLEM = "a comment or quoted here-document line ending in a backslash"


PROMPTS = frozenset({"PS0", "PS1", "PS2", "PS4", "PROMPT_COMMAND"})
"""Variables whose value bash expands as it prints a prompt or a trace (``set -x``)."""


SUBSCRIPT_PROBLEM = "an array subscript that bash may run as code (`test -v 'x[$(cmd)]'`)"


TABLES = frozenset({"BASH_CMDS", "BASH_ALIASES"})


ZSH_CODE_VARIABLES = frozenset({
    "functions", "commands", "aliases", "galiases", "saliases", "dis_functions", "PROMPT",
    "PROMPT2", "PROMPT3", "PROMPT4", "RPROMPT", "RPROMPT2", "RPS1", "RPS2", "precmd_functions",
    "preexec_functions", "chpwd_functions", "periodic_functions", "zshaddhistory_functions",
    "zshexit_functions", "NULLCMD", "READNULLCMD", "path", "fpath", "module_path",
})  # fmt: skip
"""zsh's tables of what names run and its prompts (``functions+=(git 'rm x')``); what a
redirection with no command runs (``READNULLCMD=sh; < script``: a review); ``path``
(tied to ``PATH``: ``path=(/dir); ls``), ``fpath`` and ``module_path`` (where functions
and modules load from)."""


COMMAND_VARIABLES = frozenset({
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH",
    "GIT_ALLOW_PROTOCOL", "EDITOR", "VISUAL", "PAGER", "SSH_ASKPASS", "TAR_OPTIONS",
    "RIPGREP_CONFIG_PATH", "MAKEFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "GOFLAGS",
    "NODE_OPTIONS", "LESS", "LESSOPEN", "LESSCLOSE", "LESSKEYIN", "LESSKEY", "LESSKEY_CONTENT",
    "LESSKEYIN_SYSTEM", "LESSKEY_SYSTEM", "LESSEDIT", "MANPAGER", "MANOPT", "BROWSER",
    "SUDO_ASKPASS", "GIT_TEMPLATE_DIR",
})  # fmt: skip
"""Variables naming a command git (or tar, ``TAR_OPTIONS``; rg, a file of options that
may be ``--pre=PROG``; make, its options, ``--eval`` or ``SHELL=`` among them; go's
``-exec``; node's ``--require``; less's input filter; the hooks of ``git init``'s
template) runs (``GIT_CONFIG_*`` set git's configuration, and ``npm_config_*``, any
case, npm's and pnpm's: ``script-shell``)."""
"""bash's tables of what a command's name runs (``BASH_CMDS[ls]=/bin/rm``)."""


_SUBSCRIPTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[(.*)\]", re.DOTALL)


_DESCRIPTOR_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:\[(.*)\])?\}", re.DOTALL)
"""The word of ``{NAME}>f`` or ``{NAME[sub]}>f``, right before its redirection."""


_LISTING = re.compile(r"\$\{![A-Za-z_][A-Za-z0-9_]*(?:\[[@*]\]|[@*])\}")


_PATTERN_CODE = re.compile(r"`|\$[({\[]|[<>]\(")
"""What expands in a ``=~`` regex or a ``case`` pattern, which the grammar leaves as one
piece of text: a command or arithmetic in it would run unchecked."""


_ARRAY_KEY = re.compile(r"\[([^\]]*)\]\+?=")


SOURCED_INPUT = "`{}` names a script computed or read from input (`<(…)`) the shells run"


NAME_OPTIONS = {"read": "adinNptu", "mapfile": "dnOsuCc", "readarray": "dnOsuCc"}
"""Builtins whose operands name variables, and their options that take a value."""


_EVALUATED_SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[.*[$`].*\]", re.DOTALL)
"""A variable name with a subscript holding an expansion: ``test -v``, ``printf -v``,
``read``, ``unset`` and others evaluate it, running its ``$(…)``."""


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


_ZSH_EQUALS = re.compile(r"=[A-Za-z0-9_.+-]")


_GLOB_SUBST = re.compile(r"g_*l_*o_*b_*s_*u_*b_*s_*t", re.IGNORECASE)
"""zsh's option that globs variables' values: a qualifier in one runs code."""


_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
"""Quoted text, where zsh expands no glob qualifier."""


ZSH_MODIFIERS = frozenset({"noglob", "nocorrect", "-"})
"""zsh's precommand modifiers: what follows is the command (``repeat N`` too)."""


ZSH_CODE_PROBLEM = "zsh glob qualifiers or parameter flags may run code"


def _zsh_code(source: str) -> bool:
    """Whether zsh text may run code through glob qualifiers, parameter flags or
    ``globsubst`` (any spelling: zsh ignores case and underscores in option names)."""
    return bool(_ZSH_CODE.search(_QUOTED.sub("", source)) or _GLOB_SUBST.search(source))


_ZSH_NAMED_DIRECTORY = re.compile(r"~[A-Za-z_][A-Za-z0-9_]*(/|$)")
"""A zsh word whose ``~name`` may be a named directory: the value of a variable ``name``
holding a path (``p=/protected; echo x > ~p/f`` got past a ``Write`` deny rule: a
review), as much as a user's home."""
_ZSH_CODE = re.compile(r"[*?\]]\((?:#q)?[^()]*?(?:e[^\w\s)]|\+[A-Za-z_])|\$\{\([^)]*[e%]")
"""zsh's glob qualifiers that run code (``*(e:'cmd':)``, ``*(+func)``) and parameter
expansion flags (``${(e)x}`` evaluates the value)."""


INTERACTIVE_PROBLEM = (
    "it runs interactively: what is typed into it later (TaskInput) is read by the program, "
    "which may run it (a pager's !cmd, an editor's :!cmd, a shell), and no rule sees that"
)


_TILDE_WORD = re.compile(r"(?:^|[\s=:;&|()])~")
"""A `~` bash expands: at a word's start, or after `=` or `:` (``a=~/x``, ``PATH=~:…``)."""
_TILDE_DIRECTORY = re.compile(r"(?:^|[\s=:;&|()])~(?:[+-]\d*|\d+)(?=[/:;&|()\s]|$)")
"""``~+``, ``~-``, ``~N``: ``PWD``, ``OLDPWD``, the directory stack (``DIRSTACK``)."""


def _tilde_problem(walker: _Walker, source: str) -> str | None:
    """Why a `~` word of the command is known only as it runs: it sets ``HOME`` (or
    ``PWD``, ``OLDPWD``, ``DIRSTACK`` for ``~+``, ``~-``, ``~N``) anywhere in it (a loop's
    next pass, a function or a trap may run the word after a setting later in the text:
    ``for i in 1 2; do find ~; HOME=-delete; done``; ``OLDPWD=-delete; find ~-``). A
    ``cd`` sets them to absolute paths, no option; a sourced file is not looked into."""
    names = walker.set_names  # (its text whole, `env BASH_ENV=~- bash -c …`; and the code
    texts = [source, *(t for c in walker.commands for t in (c.text, *c.variants))]  # run
    if ("HOME" in names or "" in names) and any(_TILDE_WORD.search(t) for t in texts):
        return "`~` is a `HOME` the command sets as it runs"  # (of a trap, `bash -c`: its own)
    if (names & {"PWD", "OLDPWD", "DIRSTACK", ""}) and any(
        _TILDE_DIRECTORY.search(t) for t in texts
    ):
        return "`~+`, `~-` or `~N` names a directory the command sets as it runs"
    return None


_PLAIN_OUTPUT = re.compile(
    r"(?:\$\(|`)\s*(?:nproc|whoami|hostname|id\s+-un?|git\s+(?:rev-parse|merge-base)"
    r"(?:\s+(?:-q|--(?:quiet|verify|short|all|fork-point|octopus)|[\w.@^~:/{}][\w.@^~:/{}-]*))*)"
    r"\s*(?:\)|`)"
)
"""A command substitution whose output is no option, nor splits into one, whatever the
files and refs hold: ``$(nproc)``, ``$(whoami)``, ``$(git merge-base HEAD main)``,
``$(git rev-parse --short HEAD)`` (a number, a name, hashes, and its literal words echoed,
none led by ``-``, with no blank; not a branch's name: ``git update-ref`` makes one led
by ``-``)."""
_PATH_OUTPUT = re.compile(
    r"(?:\$\(|`)\s*(?:pwd(?:\s+-[LP])?|git\s+rev-parse\s+--(?:show-toplevel|"
    r"absolute-git-dir))\s*(?:\)|`)"
)
"""A command substitution that gives a directory's absolute path: no option, but split
where it holds a blank (a directory the line made, `cd 'd --x'`), so plain only quoted
(a review; not `--git-dir`, which prints `GIT_DIR` as given: `--to-command=…`)."""


def _plain_text(value: str) -> bool:
    """Whether a variable's literal value is no option, nor splits into one, nor into the
    names of a glob, nor is a make variable's setting: ``build``, ``src/a.c``; not ``-x``,
    ``a -b``, ``' '`` (the text after ``$X`` a word of its own: a review), ``*``,
    ``CC=rm``."""
    return re.fullmatch(r"(?:[\w./:@%+,^~][\w./:@%+,^~-]*)?", value) is not None


def _kept_value(operation: Sequence[Any], data: bytes) -> bool:
    """Whether a ``${NAME…}`` operation keeps the variable's plainness: none, a suffix
    taken off (``${f%.c}``), a plain default or alternative (``${T:-all}``); not a prefix
    taken off (``${X#a}``: ``a-x`` becomes ``-x``), a replacement, a case change."""
    if not operation:
        return True
    operator = operation[0].type
    if operator in ("%", "%%"):
        return True
    return operator in (":-", "-", ":=", "=", ":+", "+", ":?", "?") and all(
        _plain_value(value, data) for value in operation[1:]
    )


def _plain_value(node: Any, data: bytes) -> bool:
    """Whether a value as written (an assignment's, a loop's word) is plain (see
    :func:`_plain_text`), or the output of a :data:`_PLAIN_OUTPUT` substitution."""
    value = word_value(node, data)
    if value is not None:
        return _plain_text(value)
    if node.type == "string" and len(parts := [c for c in node.children if c.is_named]) == 1:
        node = parts[0]
    return node.type == "command_substitution" and bool(
        _PLAIN_OUTPUT.fullmatch(node_text(node, data))
    )


_LITERAL_PARTS = frozenset({"word", "number", "string_content", "raw_string", "ansi_c_string"})
"""Parts of a word that are text as written."""


def _holds_text(part: Any, data: bytes) -> bool:
    """Whether a literal part of a word gives it a character (``''`` and ``$'\0'`` do
    not: a word's start is after them)."""
    text = node_text(part, data)
    if part.type == "ansi_c_string":
        return bool(ansi_c_value(text))
    return len(text) > 2 if part.type == "raw_string" else bool(text)


SET_BY_BASH = frozenset({
    "REPLY", "MAPFILE", "OPTARG", "BASH_REMATCH", "BASH_COMMAND", "FUNCNAME", "BASH_ARGV",
    "BASH_EXECUTION_STRING", "READLINE_LINE", "COMP_WORDS", "COMPREPLY",
    "reply", "match", "MATCH", "argv",  # (zsh's)
})  # fmt: skip
"""Variables bash (or zsh) sets from what the command line gives it: ``read`` and
``select`` with no name, ``mapfile``, ``getopts``, ``[[ =~ ]]``, its own text."""
_UNSET_HERE = re.compile(r"[A-Za-z_][A-Za-z0-9_]+|[A-Za-z]|[?$!#-]")
"""Parameters a command line gets from outside unless it sets them: a variable's name
(not ``$_``, the last word of the line's command before), the status, pids, the option
flags, the count of positional parameters (those are the line's own: ``set --``, a
function's words)."""


def utf8_text(text: str) -> str:
    """``text`` as UTF-8 carries it: each byte that is no UTF-8 (a path's ``\\udcff``, from
    the bytes of a CLI argument) one U+FFFD, as a rule it is matched against reads it too
    (three, and a deny rule naming such a directory never matched a write there: a
    review); another lone surrogate (JSON's ``\\ud800``) its own U+FFFDs."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        try:
            raw = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw = text.encode("utf-8", "surrogatepass")
        return raw.decode("utf-8", "replace")
    return text


def parse_command(source: str, zsh: bool = False, interactive: bool = False) -> ParsedCommand:
    """The simple commands and written files of ``source`` (never raises on bad text).
    ``zsh``: zsh runs it, read by the same grammar (bash's), with zsh's precommand
    modifiers and ``=cmd`` read as zsh reads them and its code-running glob qualifiers
    and parameter flags asking. ``interactive``: it runs on a terminal that TaskInput
    types into (SPEC P1), which cannot be checked (:data:`INTERACTIVE_PROBLEM`)."""
    source = utf8_text(source)
    walker = _walked(source, zsh, interactive)
    made = walker.made_names | ({""} if "IFS" in walker.set_names else set())
    if zsh:  # (its modifiers and subscripts the grammar reads as text: `$X:s/a/-/`)
        made |= walker.set_names
    if walker.cds:  # (`cd 'd --x'`: its `$PWD` holds a blank)
        made |= {"PWD", "OLDPWD", "DIRSTACK"}
    if (walker.set_names or made) and "$" in source:  # (read again, knowing what it
        # sets: a word of one is the line's; with no `$`, no word names one)
        walker = _walked(source, zsh, interactive, frozenset(made), frozenset(walker.set_names))
    if problem := _tilde_problem(walker, source):
        walker.problems.append(problem)
    return ParsedCommand(
        source,
        tuple(dict.fromkeys(walker.commands)),
        tuple(dict.fromkeys(walker.writes)),
        tuple(dict.fromkeys(walker.problems)),
        walker.moves,
        walker.sets_home or "HOME" in _HOME_READ.sub("", source),
        tuple(dict.fromkeys(walker.computed_writes)),
        tuple(dict.fromkeys(walker.reads)),
        walker.moved_by("cdpath" in source.lower()),
        tuple(dict.fromkeys(walker.sets)),
        walker.exports_all,
        tree_writes=tuple(dict.fromkeys(walker.tree_writes)),
        named_writes=tuple(dict.fromkeys(walker.named_writes)),
        diffs=tuple(dict.fromkeys(walker.diffs)),
        changed_only=_only_changed(walker.writes, walker.changes),
        changed_trees=tuple(dict.fromkeys(walker.changed_trees)),
        git_dirs=tuple(dict.fromkeys(walker.git_dirs)),
        into_directories=tuple(dict.fromkeys(walker.into_directories)),
        linked=tuple(dict.fromkeys(walker.linked)),
        removes=walker.removes,
        unlinked_writes=_others(walker.writes, [target for target, _, _ in walker.linked]),
        unlinked_trees=_others(
            [target for target, _ in walker.tree_writes],
            [target for target, _, _ in walker.linked],
        ),
    )


def _walked(
    source: str,
    zsh: bool,
    interactive: bool,
    line_made: frozenset[str] = frozenset(),
    line_set: frozenset[str] = frozenset(),
) -> _Walker:
    walker = _Walker(line_made=line_made, line_set=line_set)
    walker.zsh = zsh
    if interactive:
        walker.problems.append(INTERACTIVE_PROBLEM)
    if len(source) > MAX_CHECKED_CHARS:
        walker.problems.append(f"it is longer than {MAX_CHECKED_CHARS} characters")
    else:
        walker.parse(source, 0)
        if zsh and _zsh_code(source):
            walker.problems.append(ZSH_CODE_PROBLEM)
    return walker


_REMOVERS = frozenset({"rm", "rmdir", "unlink"})
"""Programs that take a name away (a folder there now may be a link made after them)."""
_LINKERS = itertools.count()
"""Numbers that tell the link makers of a command apart (``ParsedCommand.linked``)."""


def _others(writes: list[str], linked: list[str]) -> tuple[str, ...]:
    """The writes left when those of the link makers are taken away, once each (`cp -l
    f g; echo > g` writes `g` twice: once by `cp`, once through what it made; what a
    `cp -r` makes, its copy and what lands in it, is none through the other)."""
    left = list(writes)
    for target in linked:
        if target in left:
            left.remove(target)
    return tuple(dict.fromkeys(left))


_SCOPES = frozenset({"subshell", "command_substitution", "process_substitution"})


_GROUPS = frozenset({
    "command", "compound_statement", "subshell", "if_statement", "case_statement",
    "for_statement", "c_style_for_statement", "while_statement",
})  # fmt: skip
"""Statements whose redirections bash opens before any of their commands runs."""


_REPEATS = frozenset({"for_statement", "c_style_for_statement", "while_statement",
                      "function_definition"})  # fmt: skip


@dataclass(frozen=True)
class _Site:
    """Where in a command something is: a node of the tree of one reading of its text
    (``tree``), or nested (in a shell it starts, ``eval``'s or a trap's text, or read by
    a runner's walker): then it may come before or after anything."""

    node: Any
    tree: int
    nested: bool

    def repeated(self) -> bool:
        """Whether it may run more than once, or elsewhere than it is written: in a loop
        or a function body."""
        node = self.node.parent if self.node is not None else None
        while node is not None:
            if node.type in _REPEATS:
                return True
            node = node.parent
        return False

    def precedes(self, later: _Site) -> bool:
        """Whether a directory change here may act on ``later`` (a redirection): it comes
        first in the same shell, or either is nested or may run again (in a loop or a
        function body). ``(cd x; …) > f``, ``echo > f; cd x``, ``cd x 2> f``: no."""
        if self.nested or later.nested or self.node is None or later.node is None:
            return True
        if later.repeated():
            return True
        if self.tree != later.tree or self.node.start_byte >= later.node.start_byte:
            return False
        statement = later.node.parent  # (its redirections open before its commands run;
        body = statement.child_by_field_name("body")  # the grammar gives `a && b > f`'s
        if body is not None and body.type in _GROUPS and _within(self.node, statement):
            return False  # to the list, bash to `b`)
        scope = self.node.parent
        while scope is not None and scope.type not in _SCOPES:
            scope = scope.parent
        return scope is None or _within(later.node, scope)


@dataclass(frozen=True)
class _OwnMove:
    """A command's own directory change (``env -C DIR``, ``git -C DIR``, ``sudo -D DIR``,
    ``find -execdir``): it acts on what that command writes by its words and on what it
    runs (the write sites ``first`` to ``end`` of its walker), not on its redirections,
    which its shell opens, nor on later commands (``env -C d touch x`` wrote ``d/x``,
    checked as ``./x``; ``env -C d true && touch x`` asked: a trial)."""

    first: int
    end: int

    def acts_on(self, index: int) -> bool:
        return self.first <= index < self.end


def _only_changed(writes: list[str], changes: list[str]) -> tuple[str, ...]:
    """Those of ``changes`` that no other write of the command writes too."""
    return tuple(t for t in dict.fromkeys(changes) if writes.count(t) == changes.count(t))


def _redirections(command: Any) -> list[Any]:
    """A command's redirections, its own and those the grammar hangs on the statement
    around it: after the last command of a list or a pipeline (`a && b < f` is `b < f`
    to bash, a statement's to the grammar)."""
    found = list(command.children)
    node = command
    while node.parent is not None and node.parent.type in ("list", "pipeline"):
        named = [c for c in node.parent.children if c.is_named]
        if named[-1:] != [node]:
            return found
        node = node.parent
    if node.parent is not None and node.parent.type == "redirected_statement":
        found += node.parent.children
    return found


def _descriptor_word(node: Any, redirection: Any) -> bool:
    """Whether ``node``, a command's word, is the descriptor of the redirection right
    after it (`patch 0< f`: the grammar reads `0` as a word, `<` as the redirection)."""
    return bool(node.type == "number" and node.end_byte == redirection.start_byte)


def _input_file(command: Any, data: bytes) -> str | bytes | None:
    """What a command reads as its input: the file its ``< FILE`` (or ``0< FILE``) opens,
    its own or its statement's; a here-document's text, where it is literal (bytes); ""
    for none (a pipe's, the caller's); None where it is known only as it runs."""
    found: str | bytes | None = ""
    nodes = _redirections(command)
    for before, node in zip([None, *nodes], nodes, strict=False):
        operator = next((c.type for c in node.children if not c.is_named), "")
        descriptor = next((c for c in node.children if c.type == "file_descriptor"), None)
        fd = node_text(descriptor, data) if descriptor is not None else (
            node_text(before, data) if before is not None and _descriptor_word(before, node) else "0"
        )  # fmt: skip
        if fd != "0":
            continue
        if node.type == "file_redirect" and operator == "<":
            targets = node.children_by_field_name("destination")
            found = word_value(targets[0], data) if targets else None
        elif node.type == "heredoc_redirect" and operator in ("<<", "<<-"):
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            start = next((c for c in node.children if c.type == "heredoc_start"), None)
            text = b"" if body is None else data[body.start_byte : body.end_byte]
            quoted = start is not None and re.search(r"['\"\\]", node_text(start, data))
            found = text if quoted or not re.search(rb"[$`\\]", text) else None
        elif node.type == "herestring_redirect":
            found = None
    return found


def _within(node: Any, ancestor: Any) -> bool:
    while node is not None and node != ancestor:
        node = node.parent
    return node is not None


def cdpath_searched(directory: str) -> bool:
    """Whether ``cd DIR`` looks for DIR in ``CDPATH`` first."""
    return not directory.startswith(("/", "./", "../", "~")) and directory not in (".", "..")


class _Walker:
    def __init__(
        self,
        readings: list[int] | None = None,
        line_made: frozenset[str] = frozenset(),
        line_set: frozenset[str] = frozenset(),
    ) -> None:
        self.readings = [0] if readings is None else readings
        """Runners' commands read so far, shared with the walkers reading them: each way
        a runner's options can be read is a reading, and nested runners multiply them."""
        self.commands: list[SimpleCommand] = []
        self.writes: list[str] = []
        self.computed_writes: list[str] = []
        self.tree_writes: list[tuple[str, bool]] = []
        self.named_writes: list[tuple[str, str]] = []
        self.diffs: list[PatchRead] = []
        self.changes: list[str] = []
        self.git_dirs: list[str | None] = []
        self.changed_trees: list[str] = []
        self.stdin: str | bytes | None = ""
        """What the command being read has as its input (``< FILE``; a literal
        here-document's text, bytes; "": none, a pipe's or the caller's; None: known only
        as it runs)."""
        self.into_directories: list[str] = []
        self.linked: list[tuple[str, str, int]] = []
        self.removes = False
        self.problems: list[str] = []
        self.moves = False
        self.sets_home = False
        self.set_names: set[str] = set()
        """The variables it sets anywhere, by name ("": one computed)."""
        self.made_names: set[str] = set()
        """The variables it may set to a value that is, or splits into, an option: one
        not plainly a word (``X=--eval``, ``X='a -b'``, ``X=$(cmd)``, ``read X``, a loop
        over a glob); not ``X=build``, ``for t in a b``, ``X=$(git merge-base …)`` ("":
        any, one set by a name computed, a file sourced, ``IFS`` set)."""
        self.line_made = line_made
        """The whole line's :attr:`made_names`, read before: a word of one is
        :class:`LineMade`."""
        self.line_set = line_set
        """The whole line's :attr:`set_names`, read before: a word of one is
        :class:`LineChosen` at least."""
        self.sets_cdpath = False
        self.sets: list[tuple[str | None, str]] = []
        self.exports_all = False
        self.cds: list[tuple[_Site | _OwnMove, str | None]] = []
        """Directory changes: where, and to which directory (None: known as it runs)."""
        self.write_sites: list[tuple[str, _Site]] = []
        self._trees = 0
        self._site = _Site(None, 0, True)
        """Where the command being read is (a node of a parsed tree)."""
        self.reads: list[str | None] = []
        self.zsh = False
        """zsh runs it (see :func:`parse_command`)."""
        self.appended = False
        """What it reads is run by a runner that appends words (``xargs``): a text tool's
        options may be among them (see :func:`script_code`)."""

    def parse(self, source: str, depth: int) -> None:
        if depth > MAX_NESTING:
            self.problems.append("shells nested too deep to check")
            return
        outer = self._site
        for text in dict.fromkeys((joined_lines(source), source)):
            data = text.encode("utf-8", "surrogateescape")
            tree = bash_parser().parse(data)
            if deeper_than(tree.root_node, MAX_DEPTH):  # (checking it took time and
                self.problems.append(f"it nests more than {MAX_DEPTH} deep")  # memory
                continue  # quadratic in its depth: 44 s for a page of `$(`, a review)
            if tree.root_node.has_error:  # (`{to,}uch x` is bash the grammar cannot read:
                self.problems.append(UNPARSED_PROBLEM)  # its reason misled a model, a trial)
            misread = grammar_misreads(tree.root_node, data)
            if misread is not None:
                self.problems.append(f"the grammar may read it otherwise than bash ({misread})")
            self._trees += 1
            self._site = _Site(tree.root_node, self._trees, depth > 0)
            self.walk(tree.root_node, data, depth)
        self._site = outer

    def walk(self, root: Any, data: bytes, depth: int) -> None:
        """Every node once, iteratively (a deeply nested command cannot exhaust the
        stack); ``arithmetic``: inside an expression bash evaluates as arithmetic."""
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            node, arithmetic = stack.pop()
            kind = node.type
            if kind == "command":
                self.command(node, data, depth)
            elif kind in ("declaration_command", "unset_command"):
                self.declaration(node, data)
            elif kind == "file_redirect":
                self.redirect(node, data)
                self._descriptor_variable(node, data)
            elif kind in ("heredoc_redirect", "herestring_redirect"):
                self._descriptor_variable(node, data)
                if kind == "heredoc_redirect" and unchecked_heredoc(node, data):
                    self.problems.append(HEREDOC_PROBLEM)
            elif kind == "expansion" and self._evaluating_expansion(node, data):
                self.problems.append("an expansion that evaluates a variable's value as code")
            elif kind in ("regex", "extglob_pattern") and _PATTERN_CODE.search(
                node_text(node, data)
            ):
                self.problems.append("an expansion in a pattern the grammar reads as text")
            elif kind == "array":  # `z=([d]=1)`: an indexed array evaluates `d`
                for element in node.children:
                    key = _ARRAY_KEY.match(node_text(element, data))
                    if key and not key[1].isdigit():
                        self.problems.append(SUBSCRIPT_PROBLEM)
            elif kind == "unary_expression" and node_text(node.children[0], data) == "-v":
                self._names([name_word(c, data) for c in node.children[1:2]])  # `[[ -v NAME ]]`
            elif kind == "test_command" and _redirects_in_brackets(node):
                self.problems.append(BRACKET_PROBLEM)
            elif kind in ("word", "raw_string", "string", "concatenation"):
                value = word_value(node, data)
                if value is not None and _EVALUATED_SUBSCRIPT.match(value):
                    self.problems.append(SUBSCRIPT_PROBLEM)
            elif kind == "ansi_c_string":  # `$'x[\x24(cmd)]'`: escapes make the text
                text = node_text(node, data)
                if "[" in text and any(c in text for c in "$`\\"):
                    self.problems.append(SUBSCRIPT_PROBLEM)
            elif kind == "comment" and continued_line(node_text(node, data)):
                self.problems.append(CONTINUED_PROBLEM)  # (read two ways: see parse)
            elif kind == "variable_assignment":
                assigned = node_text(node, data).split("=", 1)[0].split("[", 1)[0].rstrip("+")
                if assigned in PROMPTS:
                    self.problems.append("a prompt variable runs the `$(…)` in its value")
                elif assigned in SOURCED_VARIABLES:  # (`BASH_ENV=f bash -c …`: that shell
                    self._sources_a_file()  # runs f first)
                    value = node.child_by_field_name("value")
                    named = None if value is None else word_value(value, data)
                    if value is not None and (named is None or reads_input(named)):
                        self.problems.append(SOURCED_INPUT.format(assigned))
                value = node.child_by_field_name("value")
                literal = None if value is None else word_value(value, data)
                self._setting(  # (`eval 'HO''ME=x'`, `HO\⏎ME=x`; a literal value: `LESS=-R`)
                    [assigned if literal is None else f"{assigned}={literal}"]
                )
                if (value is not None and not _plain_value(value, data)) or "[" in node_text(
                    node, data
                ).split("=", 1)[0]:
                    self.made_names.add(assigned)
                if node.parent is not None and node.parent.type not in ASSIGNING_COMMANDS:
                    self.sets.append((assigned, squeeze(node_text(node, data))))
            elif kind == "for_statement":  # (`for HOME in …`, `select CDPATH in …`)
                variable = node.child_by_field_name("variable")
                named = None if variable is None else node_text(variable, data)
                self._setting([named])
                items = node.children_by_field_name("value")
                plain = node.children[0].type == "for" and any(
                    c.type == "in" for c in node.children
                )
                plain = plain and all(_plain_value(item, data) for item in items)
                self._sets_as_it_runs([named], made=not plain)  # (`for t in a b`: plain)
            if kind == "expansion" and (
                setting := _ASSIGNING_EXPANSION.match(node_text(node, data))
            ):
                self._sets_as_it_runs([setting[1]])  # (`${HOME:=/x}`)
            if kind == "expansion" and unread_expansion(node, data, node.start_byte + 2):
                self.problems.append(HEREDOC_PROBLEM.replace("here-document", "`${…}`"))
            if arithmetic:
                self._arithmetic(node, data)
            children = node.children
            inner = arithmetic or self._starts_arithmetic(node, data)
            if kind in _SUBSTITUTIONS or (
                kind == "expansion" and len(children) > 1 and children[1].type == "#"
            ):  # (a length is a number; a substitution's commands are commands)
                inner = False
            offset = kind == "expansion" and any(c.type == ":" for c in children)
            for index, child in enumerate(reversed(children)):
                position = len(children) - 1 - index
                if kind == "subscript" and position == 0:  # the array's own name
                    stack.append((child, arithmetic))
                elif offset:  # ${x:OFFSET:LENGTH}: both arithmetic
                    after = any(c.type == ":" for c in children[:position])
                    stack.append((child, arithmetic or after))
                elif kind == "c_style_for_statement" and child.type in _BODIES:
                    stack.append((child, arithmetic))  # (its body is commands)
                else:
                    stack.append((child, inner))

    @staticmethod
    def _starts_arithmetic(node: Any, data: bytes) -> bool:
        kind = node.type
        if kind in ("arithmetic_expansion", "c_style_for_statement", "subscript"):
            return True
        if kind == "compound_statement":
            return bool(node.children) and node.children[0].type == "(("
        if kind == "binary_expression":  # (in `[[ … ]]`: `[`/`test` compare numbers only)
            test = node.parent
            while test is not None and test.type != "test_command":
                test = test.parent
            single = test is not None and bool(test.children) and test.children[0].type == "["
            return not single and any(
                c.type == "test_operator" and node_text(c, data) in ARITHMETIC_TESTS
                for c in node.children
            )
        return False

    def _arithmetic(self, node: Any, data: bytes) -> None:
        """A node of an arithmetic expression: a variable whose value it evaluates, or a
        value it cannot follow (a positional parameter, a transformed expansion, a
        substitution's output), asks. (Following which variables surely hold numbers
        the command gave them was tried and broken twice by reviews: traps, ``enable``,
        functions named like builtins, here-documents the grammar ends early and words
        expanded before their statement's assignments all change what runs first.)"""
        parent = node.parent
        if (
            parent is not None
            and parent.type == "variable_assignment"
            and node == parent.children[0]
        ):
            return  # (`for ((i=0; …))`: the name assigned, not a use)
        if _evaluates_a_value(node, data):
            self.problems.append(ARITHMETIC_PROBLEM)

    @staticmethod
    def _evaluating_expansion(node: Any, data: bytes) -> bool:
        """``${x@P}`` (runs the value's command substitutions) or ``${!x}`` (indirect:
        the value may be ``a[$(cmd)]``)."""
        text = node_text(node, data)
        listing = _LISTING.fullmatch(text)  # (`${!map[@]}`, `${!prefix@}`: names, no value)
        return (text.startswith("${!") and not listing) or "@P" in text or "@A" in text

    def declaration(self, node: Any, data: bytes) -> None:
        text = squeeze(node_text(node, data))
        builtin = text.split(maxsplit=1)[0]
        options = [  # (as bash reads them: `"-i"`, `\-i` are options too; None: computed)
            value
            for c in node.children[1:]
            if c.is_named and c.type not in ("variable_assignment", "variable_name")
            if (value := word_value(c, data)) is None or value[:1] in ("-", "+")
        ]
        flags = "".join(o[1:] for o in options if o)
        attributes = builtin in ("declare", "typeset", "local")  # (what may say -i or -n)
        if "i" in flags or (attributes and None in options):  # -i: arithmetic (or computed)
            self.problems.append(ARITHMETIC_PROBLEM)
        nameref = attributes and ("n" in flags or None in options)
        if nameref:  # (what it names is set later, by any spelling: `declare -n r; r=PS4`)
            self.problems.append("a nameref: the variable it names may be one that runs code")
        arguments: list[str | None] = []
        for child in node.children[1:]:
            if child.type == "variable_assignment":  # its name is plain text; with `-n`
                parts = [c for c in child.children if c.is_named]  # its value is a name
                assigned = node_text(parts[0], data)
                arguments.append(assigned)
                value = word_value(parts[-1], data) if len(parts) > 1 else ""
                # (`declare -a a='($(cmd))'`, `local -a b="$a"`: bash reads a quoted or
                # computed `(…)` again as code, for an array; `-a` unseen, it may be one)
                arrays = "a" in flags or "A" in flags or None in options
                reread = (value is None and arrays) or (
                    value is not None and _QUOTED_COMPOUND.match(f"={value}") is not None
                )
                if reread and (attributes or builtin == "readonly") and parts[-1].type != "array":
                    self.problems.append(COMPOUND_PROBLEM)
                if nameref and len(parts) > 1:
                    arguments.append(word_value(parts[-1], data))
                    if arguments[-1] is None:
                        self.problems.append("a nameref to a variable named as it runs")
            elif child.is_named:  # (`local i`: a name; `HO''ME` is not two words)
                following = child.next_sibling
                plain = child.type == "variable_name" and (
                    following is None or following.start_byte > child.end_byte
                )
                arguments.append(node_text(child, data) if plain else word_value(child, data))
                if builtin != "export":  # (export takes no subscript: bash evaluates none)
                    self._names([name_word(child, data)])
                word = arguments[-1]  # (`declare -a 'a=($(cmd))'`: one word, read again)
                if (attributes or builtin == "readonly") and (
                    (word is None and "=" in node_text(child, data))
                    or (word is not None and _QUOTED_COMPOUND.match(word))
                ):
                    self.problems.append(COMPOUND_PROBLEM)
        self._setting(arguments)
        if builtin == "unset" and "f" not in flags:  # (`unset PATH`: the directory, then)
            self._sets_as_it_runs(arguments)
        if any(a is not None and a.split("=", 1)[0] in SOURCED_VARIABLES for a in arguments):
            self._sources_a_file()  # (`export BASH_ENV=f; bash -c …`)
        self.commands.append(SimpleCommand(text))

    def _sources_a_file(self) -> None:
        """The command runs a file's code (``source``, a ``BASH_ENV``): it may set
        ``HOME``, change directory and open descriptors, as it runs."""
        self.sets_home = self.moves = True
        self.reads.append(None)
        self.made_names.add("")

    def _setting(self, words: Sequence[str | None]) -> None:
        """Note a variable setter's words (literal, or None when computed): one that
        names ``HOME`` as bash reads it (``HO"ME"``), or is computed, may move ``~``; one
        naming a prompt (``printf -v PS4 …``, ``read PS4``, a nameref's target: ``set -x``
        runs its ``$(…)``) or one of bash's command tables changes what runs."""
        for word in words:
            name = (word or "").split("=", 1)[0].split("[", 1)[0].rstrip("+")
            self.set_names.add(name)
            if word is None or ("=" in word and not _plain_text(word.split("=", 1)[1])):
                self.made_names.add(name)
            if name in PROMPTS:
                self.problems.append("a prompt variable runs the `$(…)` in its value")
            elif name in TABLES or (self.zsh and name in ZSH_CODE_VARIABLES):
                self.problems.append(f"`{name}` changes what a command's name runs")
            elif (
                name.startswith("GIT_CONFIG")
                or name in COMMAND_VARIABLES
                or name.lower().startswith("npm_config_")
            ) and not _plain_less_options(word):
                self.problems.append(f"`{name}` names a command a program runs")
        if any(w is None or "HOME" in w for w in words):
            self.sets_home = True
        if any(w is None or "CDPATH" in w.upper() for w in words):  # (zsh: `cdpath`)
            self.sets_cdpath = True

    def _sets_as_it_runs(self, names: Sequence[str | None], made: bool = True) -> None:
        """Variables a plain statement sets to a value known only as it runs (``read``,
        ``for``, ``printf -v``, ``${NAME:=…}``; None: a name computed too), each as the
        setting a rule matches (``NAME=…``): see ``ParsedCommand.sets``."""
        self.sets += [(name, f"{name or '<computed>'}=…") for name in names]
        self.set_names.update(name or "" for name in names)
        if made:  # (its value is known only as it runs: see `made_names`)
            self.made_names.update(name or "" for name in names)

    def _names(self, words: Sequence[str | None]) -> None:
        """Words a builtin takes as variable names (``test -v``, ``printf -v``, ``read``):
        bash evaluates a subscript in one (``x[$(cmd)]``, or ``x[b]`` whose ``b`` holds
        that), so one known only as it runs, or with a subscript other than a number,
        ``@`` or ``*``, may run a command."""
        for word in words:
            match = None if word is None else _SUBSCRIPTED.match(word.split("=", 1)[0])
            if word is None or (match and not re.fullmatch(r"\d+|[@*]", match[1])):
                self.problems.append(SUBSCRIPT_PROBLEM)
                return

    def _descriptor_variable(self, node: Any, data: bytes) -> None:
        """``{NAME}>f`` (the word right before a redirection, the grammar's argument):
        bash opens a descriptor and sets ``NAME`` to its number, evaluating a subscript
        as arithmetic, which runs the ``$(…)`` a variable in it holds (``{a[b]}>f`` with
        ``b='x[$(cmd)]'`` ran ``cmd``: a review); a subscript other than a number asks."""
        start = node.start_byte
        if data[start - 1 : start] != b"}":
            return
        root = node
        while root.parent is not None:
            root = root.parent
        word = root.descendant_for_byte_range(start - 1, start)
        while word.parent is not None and word.parent.end_byte == start and word.parent.type in (
            "word", "concatenation", "command_name",
        ):  # fmt: skip
            word = word.parent
        named = _DESCRIPTOR_VARIABLE.fullmatch(node_text(word, data))
        if named is None:
            return
        if named[2] is not None and not re.fullmatch(r"\d+|[@*]", named[2]):
            self.problems.append(SUBSCRIPT_PROBLEM)
        else:
            self._sets_as_it_runs([named[1]])

    def redirect(self, node: Any, data: bytes) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        targets = node.children_by_field_name("destination")
        if len(targets) > 1:  # `> f word`: bash gives `word` to the command
            self.problems.append("words after a redirection are not read as bash reads them")
        target = targets[0] if targets else None
        here = _Site(node, self._site.tree, self._site.nested)
        opened = None if target is None else word_value(target, data)
        if opened is not None and opened.startswith(NETWORK_FILES) and not self.zsh:
            self.problems.append(NETWORK_PROBLEM)
        elif (
            target is not None
            and target.type not in ("number", "process_substitution")
            and (opened is None or GLOB.search(_QUOTED.sub("", node_text(target, data))))
        ):  # (a glob unquoted: `> 'f[1].txt'` names one file)
            self.problems.append(COMPUTED_TARGET_PROBLEM.format(squeeze(node_text(target, data))))
        if operator == "<":
            self.reads.append(None if target is None else word_value(target, data))
            if self.reads[-1] is not None:  # (reopened for writing by `> /dev/fd/3`)
                self.write_sites.append((self.reads[-1], here))
        if operator not in WRITE_OPERATORS or target is None:
            return
        if target.type == "number" and operator == ">&":  # a descriptor (`>&2`), not a file
            return
        value = word_value(target, data)
        if value is not None and value.startswith("~") and not TILDE.match(node_text(target, data)):
            value = "./" + value  # (a quoted `~` is a name: `'~/f'` is in the directory)
        elif value is not None and self.zsh and _ZSH_NAMED_DIRECTORY.match(value):
            value = None  # (zsh: `~p/f` is in the directory a variable `p` holds)
        if value is None:
            self.writes.append(node_text(target, data))
            self.computed_writes.append(self.writes[-1])
        else:
            self.writes.append(value)
        self.write_sites.append((self.writes[-1], here))

    def command(self, node: Any, data: bytes, depth: int) -> None:
        assignments = [
            literal_assignment(c, data) for c in node.children if c.type == "variable_assignment"
        ]
        words = [c for c in node.children if c.is_named and c.type not in (
            "variable_assignment", "file_redirect", "heredoc_redirect", "herestring_redirect")]  # fmt: skip
        redirections = [r for r in _redirections(node) if r.type.endswith("redirect")]
        words = [w for w in words if not any(_descriptor_word(w, r) for r in redirections)]
        if words and words[0].type == "command_name":
            words[0] = words[0].children[0] if words[0].children else words[0]
        values = [word_value(w, data) for w in words]
        shown = [
            v if v is not None else self._as_written(w, data)
            for v, w in zip(values, words, strict=True)
        ]
        outer, outer_stdin = self._site, self.stdin
        self._site = _Site(node, outer.tree, outer.nested)
        self.stdin = _input_file(node, data)
        try:
            self.simple(values, shown, assignments, depth)
        finally:
            self._site, self.stdin = outer, outer_stdin

    def _as_written(self, word: Any, data: bytes) -> str:
        """A computed word as written; a :class:`LineMade` one where the command line makes
        its value (a command substitution, a ``${…}`` with an operator, ``${X:-…}``,
        ``${X/…/…}``, ``${!X}``, a positional parameter, ``$_``, an array's element, a
        variable the line sets, :attr:`line_made`, or bash sets from it, ``REPLY``), or
        writes it (a brace expansion), or where files may name it (a glob: a file named
        ``--to-command=…``); a :class:`LineSplit` one where such a value may also be
        split into more words (unquoted, ``"$@"``, ``"${a[@]}"``: ``f$X`` with ``X=' -x'``
        is ``f -x``). Made after the word's first literal character, a value is no start
        of it (``"$API/$(date +%s)"`` starts as ``$API`` does), but may still split."""
        text = squeeze(node_text(word, data))
        unquoted = unquoted_text(word, data)
        braced = bool(brace_expands(unquoted) or GLOB.search(unquoted))
        made = splits = chosen = started = False
        stack: list[tuple[Any, bool]] = [(word, False)]
        while stack:  # (left to right: what comes before its first literal character)
            node, quoted = stack.pop()
            if node.type in _LITERAL_PARTS and _holds_text(node, data):
                started = True
            elif node.type == "command_substitution":
                substituted = node_text(node, data)  # (a path may hold a blank: quoted)
                if _PLAIN_OUTPUT.fullmatch(substituted) or (
                    quoted and _PATH_OUTPUT.fullmatch(substituted)
                ):
                    chosen = True  # (a plain word, as a variable the line sets to one)
                else:
                    made, splits = made or not started, splits or not quoted
            elif node.type in ("simple_expansion", "expansion"):
                parts = [c for c in node.children if c.type not in ("$", "${", "}")]
                name = node_text(parts[0], data) if parts else ""
                if parts and parts[0].type == "subscript":  # (an array's: bash passes none on)
                    made, splits = made or not started, splits or not quoted or "[@]" in name
                elif (
                    not _kept_value(parts[1:], data)
                    or not _UNSET_HERE.fullmatch(name)
                    or name in SET_BY_BASH
                    or name in self.line_made
                    or "" in self.line_made
                ):
                    made, splits = made or not started, splits or not quoted or name == "@"
                chosen = chosen or name in self.line_set
            elif node.type not in ("process_substitution", "arithmetic_expansion"):
                # (not those: a path, `/dev/fd/N`; a number)
                stack += [(c, quoted or node.type == "string") for c in reversed(node.children)]
        if splits:
            return LineSplit(text)
        return LineMade(text) if made or braced else LineChosen(text) if chosen else text

    def simple(
        self,
        values: list[str | None],
        shown: list[str],
        assignments: list[str | None],
        depth: int,
    ) -> None:
        """One simple command from its words (``values``: literal or None; ``shown``: as
        matched) and the assignments before it."""
        first = len(self.write_sites)
        moved = self._command(values, shown, assignments, depth)
        if moved is not False and len(self.write_sites) > first:
            self.cds.append((_OwnMove(first, len(self.write_sites)), moved))

    def _command(
        self,
        values: list[str | None],
        shown: list[str],
        assignments: list[str | None],
        depth: int,
    ) -> str | Literal[False] | None:
        """:meth:`simple`; the directory of its own the command runs in (None: known only
        as it runs; False: none)."""
        wrappers: list[str] = []
        start = 0
        while self.zsh and start < len(values) and values[start] in (*ZSH_MODIFIERS, "repeat"):
            start += 2 if values[start] == "repeat" else 1  # (`noglob rm x`, `repeat 3 rm x`)
        if self.zsh:  # `=rm`: the rm found on PATH, wherever a command's name may be
            equals = [i for i, v in enumerate(values) if v and _ZSH_EQUALS.match(v)]
            values, shown = list(values), list(shown)
            for i in equals:
                values[i], shown[i] = (values[i] or "")[1:], shown[i][1:]
        while start < len(values) and _wrapper(values[start]):
            wrapper = os.path.basename(values[start] or "")  # (`/usr/bin/env rm`: env)
            skip = wrapper_arguments(wrapper, values[start + 1 :])
            span = range(
                start + 1, min(len(values), start + 1 + (len(values) if skip is None else skip))
            )
            if wrapper == "env" and any(  # (`env FOO=$BAR make`: an assignment, no option)
                (values[k] is None and not _ASSIGNMENT.match(shown[k]))
                or abbreviates(values[k], "--split-string")
                or "-S" in short_options(values[k] or "", "uCS")
                for k in span
            ):
                self.problems.append("`env -S` runs a command line given as text")
                line = split_string(values[start + 1 :])
                if line is not None:  # (checked as the command it is too: a deny rule holds)
                    self.parse(line, depth + 1)
            if skip is None:  # `command -v x`, `env` alone: the wrapper is the command
                if any(may_vanish(values[k], shown[k]) for k in span):
                    self.problems.append(MOVED_PROBLEM.format(wrapper))  # (`timeout $X`:
                break  # X="5 rm x" runs rm)
            if any(may_vanish(values[k], shown[k]) for k in range(start + 1, start + 1 + skip)):
                self.problems.append(MOVED_PROBLEM.format(wrapper))  # `timeout $(f) 5 rm`
            for target, written, kind in files_written(  # (`time -o FILE`)
                wrapper, values[start + 1 : start + 1 + skip], shown[start + 1 : start + 1 + skip]
            ):
                self._program_writes(target, written, kind)
            if wrapper == "env":
                options = values[start + 1 : start + 1 + skip]
                assignments += [v for v in options if v is None or "=" in v]
                self._setting(options)  # (`env HO''ME=/etc sh -c …`, `env -u HOME`)
                if any(v is None or v.split("=", 1)[0] in SOURCED_VARIABLES for v in options):
                    self._sources_a_file()  # (the shells it starts run that file first)
                for value, text in zip(options, shown[start + 1 : start + 1 + skip], strict=True):
                    variable, _, named = (value or text).partition("=")
                    if variable in SOURCED_VARIABLES and (value is None or reads_input(named)):
                        self.problems.append(SOURCED_INPUT.format(variable))
            wrappers.append(wrapper)
            start += 1 + skip
        if any(a is not None and a.startswith("BASH_FUNC_") for a in assignments):
            self.problems.append("a BASH_FUNC_ variable defines functions in the shells it starts")
        kept = [a if a is not None else "<computed assignment>" for a in assignments]
        kept = [a for a in kept if not harmless_assignment(a)]
        if start >= len(values):
            if wrappers:
                self.commands.append(SimpleCommand(" ".join(kept + shown), ()))
            return False
        name = values[start]
        if name in MISREAD_NAMES:  # (`! ! rm x`, `time { rm x; }`: bash runs them)
            self.problems.append(f"the grammar misreads `{name}` as a command's name")
        if name is None:
            self.problems.append(f"the command name `{shown[start]}` is computed at run time")
            self.commands.append(SimpleCommand(" ".join(kept + shown[start:]), tuple(wrappers)))
            return False
        rest = values[start + 1 :]
        if "/" in name and os.path.basename(name) in WRAPPERS and not _wrapper(name):
            base = os.path.basename(name)  # (`./env rm x`: maybe a copy of env; a deny rule
            self.parse(rejoined([base, *rest], [base, *shown[start + 1 :]]), depth + 1)
        elsewhere = _runs_elsewhere(name, wrappers, values[: start + 1], rest)
        if name in DIRECTORY_CHANGES:  # (`cd`, `builtin cd`: the shell's own)
            site = self._site
            known = None if wrappers or site.nested or site.repeated() else _directory(name, rest)
            self.cds.append((site, known))
        if name == "printf":  # only `printf -v NAME` sets one (a computed first word may be it)
            variables = [*_named_variables(name, rest), *([None] if rest[:1] == [None] else [])]
            self._setting(variables)
            self._sets_as_it_runs(variables)
        elif name in VARIABLE_SETTERS:
            self._setting(rest)
            if name in (*NAME_OPTIONS, "unset", "wait", "getopts"):  # (`read PATH`, `unset
                variables = _named_variables(name, rest)  # PATH`: the directory, then)
                self._sets_as_it_runs(variables)
        turned_on = _set_options(name, rest)
        if turned_on is None or {"allexport", "a"} & turned_on:
            self.exports_all = True  # (`set -a`, `set -o allexport`: every setting exported)
        if turned_on is None or {"keyword", "k"} & turned_on:  # (`set -k; git status X=…`)
            self.problems.append(KEYWORD_PROBLEM)
        if name == "jobs" and any(w is None or (w[:1] == "-" and "x" in w) for w in rest):
            self.problems.append("`jobs -x` runs a command")  # (`jobs -r -x cmd` too)
        if name == "let" and any(w is None or re.search(r"[A-Za-z_]", w) for w in rest):
            self.problems.append(ARITHMETIC_PROBLEM)
        if name in ("declare", "typeset", "local"):  # (`builtin declare -i n`: a plain
            flags = "".join((w or "-?")[1:] for w in rest if w is None or w[:1] in ("-", "+"))
            if "i" in flags or "?" in flags:  # command here; `?`: a computed word)
                self.problems.append(ARITHMETIC_PROBLEM)
            if "n" in flags or "?" in flags:
                self.problems.append("a nameref: the variable it names may be one that runs code")
        self._names(_named_variables(name, rest))
        if name in ("source", "."):  # the file may set anything
            self._sources_a_file()
        if name == "alias" and any(w is None or "=" in w for w in rest):
            self.problems.append(ALIAS_PROBLEM)
        script = rest[1:] if rest[:1] == ["--"] else rest
        if name in ("source", ".") and script and (script[0] is None or reads_input(script[0])):
            self.problems.append(f"`{name}` runs a script it reads from its input")
        elif name == "hash" and any(w is None or "-p" in short_options(w, "pt") for w in rest):
            self.problems.append("`hash -p` makes a name run another program")
        elif name == "enable" and any(w is None or "-f" in short_options(w, "f") for w in rest):
            self.problems.append("`enable -f` loads a builtin from a file")
        elif name == "hash" and any(w is None or "=" in w for w in rest):
            self.problems.append("`hash NAME=PATH` makes a name run another program")
        elif self.zsh and name in ("print", "zargs", "zpty", "emulate"):
            if name in ("zargs", "zpty", "emulate") or any(
                w is None or "-P" in short_options(w, "CRuxf") for w in rest
            ):  # (`emulate sh` turns on globsubst: a value's glob qualifiers run)
                self.problems.append(f"zsh's `{name}` runs code its words hold")
        elif name == "fc":
            self.problems.append("`fc` runs commands from the history (`history -s` adds them)")
        if option_from_a_word(os.path.basename(name), rest, shown[start + 1 :]):
            self.problems.append(
                f"`{name}` may take a word known only as it runs for an option (`-t DIR`): "
                "put `--` before the file names, or `./` in front"
            )
        base = os.path.basename(name)
        linker = next(_LINKERS) if makes_links(base, rest) else None
        # (one that may run twice, in a loop, a function, writes through its own links of
        # the first time: `for i in 1 2; do ln -sf ../protected l; done`, a review)
        again = next(_LINKERS) if linker is not None and self._site.repeated() else None
        self.removes = self.removes or base in _REMOVERS or (base == "find" and "-delete" in rest)
        if base == "patch":
            self._patch(rest)
        elif base == "git":
            self._git_dirs(rest, shown[start + 1 :], kept)
            sub = git_options(rest)
            if rest[sub : sub + 1] == ["apply"]:
                self._git_apply(rest[sub + 1 :], git_place(rest[:sub]) != "")
        for target, written, kind in files_written(
            os.path.basename(name), rest, shown[start + 1 :]
        ):
            self._program_writes(target, written, kind)
            if linker is not None and target is not None:  # (`ln` replaces a last operand
                # that is a link to a folder with `-n`, and one a removal took away: a review)
                self.linked.append((target, "file" if base == "ln" else kind, linker))
                if again is not None:
                    self.linked.append((target, "file", again))
        codes = code_arguments(name, rest, shown[start + 1 :])
        scripted = script_code(name, rest, shown[start + 1 :])  # (`xargs sed …`: with what
        # it appends, a computed word)
        if scripted is not None:
            codes += scripted.commands
            if scripted.problem:
                self.problems.append(scripted.problem)
            for target, written in scripted.writes:  # (`sed -i`, `w FILE`)
                self._program_writes(target, written)
        nested = nested_script(name, rest)
        changing = [a for a in kept if a.split("=", 1)[0] not in SOURCED_VARIABLES]
        if changing and (codes or nested is not None):  # (checked alone, it ran with them)
            self.problems.append(f"assignments before `{name}` change what the code it runs does")
        if is_shell(name) and any(
            w in ("--rcfile", "--init-file") and (v is None or reads_input(v))
            for w, v in itertools.pairwise([*rest, None])
        ):
            self.problems.append(f"`{name}` runs a start-up file it reads from input")
        for code in codes:
            if isinstance(code, Unseen):
                self.problems.append(code)
            elif code is None:  # (`tar -xf a.tar *`: a file may be named `--to-command=…`)
                self.problems.append(
                    f"`{name}` may run a command a word known only as it runs names (as an "
                    "option): put `./` in front of a glob, quotes around a variable, `--` "
                    "before file names"
                )
            else:
                self.parse(code, depth + 1)
        if nested == "":
            self.problems.append(f"`{name}` runs text computed at run time")
            return elsewhere
        if nested == "-":  # a heredoc, a pipe, a file: what it runs is not in the text
            self.problems.append(f"`{name}` runs a script it reads from its input")
        elif nested is not None:
            if problem := nested_shell_problem(name, rest, nested):
                self.problems.append(problem)
            if is_shell(name) and any(a.split("=", 1)[0] in SOURCED_VARIABLES for a in kept):
                self.problems.append(f"`{name}` runs the file a `BASH_ENV` or `ENV` names first")
            outer_zsh = self.zsh  # (`zsh -c` from bash: its text read with zsh's checks)
            self.zsh = outer_zsh or os.path.basename(name).startswith(("zsh", "rzsh"))
            try:
                self.parse(nested, depth + 1)
                if self.zsh and _zsh_code(nested):
                    self.problems.append(ZSH_CODE_PROBLEM)
            finally:
                self.zsh = outer_zsh
            return elsewhere
        text = " ".join(kept + shown[start:])
        variants, opens = [], []
        base = os.path.basename(name)
        computed = next((i for i in range(start + 1, len(values)) if values[i] is None), None)
        if computed is not None:
            opens.append(" ".join(kept + shown[start:computed]) + " ")
            opens.append(" ".join([base, *shown[start + 1 : computed]]) + " ")
        if kept:
            variants.append(" ".join(shown[start:]))
        if base != name:
            variants.append(" ".join([base, *shown[start + 1 :]]))
        if base == "git" and (skip := git_options(values[start + 1 :])):
            variants.append(" ".join(["git", *shown[start + 1 + skip :]]))  # `git -C x push`
        if base == "git":
            at = start + 1 + git_options(values[start + 1 :])
            for first, *then in PUSHES:  # (`git send-pack` pushed past an ask on it; the
                if at >= len(values) or values[at] != first:  # second word anywhere after
                    continue  # the first: `git subtree -P x push`, `git svn -q dcommit`)
                pushed = (
                    at
                    if not then
                    else next((i for i in range(at + 1, len(values)) if values[i] == then[0]), None)
                )
                if pushed is not None:
                    variants.append(" ".join(["git", "push", *shown[pushed + 1 :]]))
            given = git_code(values[start + 1 + git_options(values[start + 1 :]) :])
            for code in given or ():  # (`git rebase -x 'npm test'`: checked as a command)
                self.parse(code, depth + 1)
            if problem := git_runs(values[start + 1 :], shown[start + 1 :], given is None):
                self.problems.append(problem)
        after, after_shown = values[start + 1 :], shown[start + 1 :]
        chroot = base in ("sudo", "doas") and any(
            w is not None and (w.startswith("--chroot") or "-R" in short_options(w, "ughpCDRTU"))
            for w in after
        )  # (`sudo -R DIR`: another root)
        guards: list[Guard] = []
        runs: list[tuple[SimpleCommand, ...]] = []  # (what each `find -exec` runs)
        configured = base == "rg" and (  # (a config file it reads may hold `--pre=rm`)
            any(a.startswith((f"{RG_CONFIG}=", "<computed")) for a in kept)
            or any(name in (RG_CONFIG, None) for name, _ in self.sets)
        )
        actions = search_actions(base, after, after_shown, self.appended, configured)
        found = [(list(a.words), list(a.texts), False) for a in actions if a.words] or (
            runner_commands(base, after, after_shown)
        )
        for words, texts, appended in found:
            own = range(len(after) - len(words)) if base not in SEARCHERS else range(0)
            if any(may_vanish(after[k], after_shown[k]) for k in own):
                self.problems.append(MOVED_PROBLEM.format(base))  # `sudo -u $(f) root rm`
            inner = self._inner(depth)  # `sudo …`, `xargs …`: read as a command of its own
            if inner is None:
                break
            inner.appended = appended or self.appended  # (`xargs sudo sed …`)
            if appended:  # what `xargs` appends: words known as it runs, read as any word
                words, texts = [*words, None], [*texts, APPENDED]  # is (`xargs env`, `xargs
            inner.simple(words, texts, [], depth + 1)  # timeout 5`: they are the command)
            runs.append(tuple(inner.commands))
            many = base in SEARCHERS or base == "xargs"  # (their command runs once per input)
            self._take_runner(inner, "root" if chroot else "kept", variants, opens, guards, many)
        for action in actions:  # (what each runs, as read above: none past the limit)
            guards.append(Guard(action.option, runs.pop(0) if action.words and runs else ()))
        runner = command_runner(base)
        read = read_runner(base, after, after_shown)
        if read.unclear is not None:
            self.problems.append(read.unclear)
        place: Place = runner.place if runner else "moved"
        for index in read.starts:  # `uv run …`, `npx …`, `strace …`
            inner = self._inner(depth)
            if inner is None:
                break
            inner.appended = self.appended  # (`xargs strace sed …`)
            inner.simple(list(after[index:]), list(after_shown[index:]), [], depth + 1)
            self._take_runner(inner, place, variants, opens, guards, base == "watch")
        for code in read.scripts:  # `su -c TEXT`, `sg GROUP TEXT`, `npx -c TEXT`
            inner = self._inner(depth) if code is not None else None
            if code is None:
                self.problems.append(f"`{base}` runs text computed at run time")
            elif inner is not None:
                inner.parse(code, depth + 1)
                self._take_runner(inner, place, variants, opens, guards)
        understood = bool(
            found or read.starts or read.scripts or runner is not None or base in RUNNERS
            or base in WRAPPERS or base in SEARCHERS or base in QUIET_PROGRAMS or is_shell(base)
        )  # fmt: skip
        loose = () if understood else tuple(zip(after, after_shown, strict=True))
        loose_runs = () if understood else self._loose_runs(after, after_shown, depth)
        self.commands.append(
            SimpleCommand(
                text,
                tuple(wrappers),
                tuple(variants),
                tuple(dict.fromkeys(opens)),
                tuple(guards),
                loose,
                loose_runs,
            )
        )
        return elsewhere

    def _loose_runs(
        self, after: Sequence[str | None], shown: Sequence[str], depth: int
    ) -> tuple[SimpleCommand, ...]:
        """What an unknown program's words would run, were it a wrapper, from each word
        naming a program that runs commands of its own (a shell, `eval`, `env`, `git`, a
        runner or a wrapper: `logsave LOG sh -c 'curl x'` passed a deny rule on `curl`,
        a review), read as a command of its own (the first :data:`LOOSE_RUNS`)."""
        starts = [
            k for k, value in enumerate(after)
            if value is not None and _runs_commands(os.path.basename(value))
        ][:LOOSE_RUNS]  # fmt: skip
        found: list[SimpleCommand] = []
        for k in starts:
            inner = self._inner(depth)
            if inner is None:
                break
            inner.simple(list(after[k:]), list(shown[k:]), [], depth + 1)
            found += inner.commands
        return tuple(found)

    def _git_dirs(
        self, rest: Sequence[str | None], shown: Sequence[str], kept: Sequence[str]
    ) -> None:
        """The git directories git is told to use (``--git-dir``, after its ``-C``s;
        ``GIT_DIR=…`` in front), whose config it reads whatever the folder holds (`git
        --git-dir=plain x` ran the alias a plain folder's config set, a review): checked
        as the disk has them (``RuleSet.decide``); None where known only as it runs."""
        own = rest[: git_options(rest)]
        place = None if self.cds else git_place(own)
        i = 0
        while i <= len(own) and i < len(rest):
            word = rest[i]
            if word is None and may_be_option(shown[i], ["--git-dir"]):
                self.git_dirs.append(None)  # (`"--git-dir=$D"`)
            elif word is not None and abbreviates(word, "--git-dir"):
                self.git_dirs.append(placed_by_git(place, long_value(rest, i)))
            elif word is None or not word.startswith("-"):
                break  # (its subcommand)
            i += 1 + (word in GIT_OPTIONS_WITH_VALUE)
        for assignment in kept:
            if assignment.startswith(("GIT_DIR=", "<computed")):
                value = assignment.partition("=")[2] if "=" in assignment else None
                self.git_dirs.append(None if self.cds or not value else value)
        if "GIT_DIR" in self.set_names:  # (`export GIT_DIR=b; git st`: a review)
            self.git_dirs.append(None)

    def _git_apply(self, rest: Sequence[str | None], moved: bool) -> None:
        """The patches ``git apply`` reads, whose names it writes in the work tree (as
        :meth:`_patch`'s; `git apply fix.diff` went past a Write deny rule, a review;
        ``moved``: by git's ``-C``, to where they are known only as it runs)."""
        inputs = None if moved else git_apply_inputs(rest)
        for read in [PatchInput(None, 1, "", "")] if inputs is None else inputs:
            self._reads_diff(read, inputs is not None)

    def _patch(self, rest: Sequence[str | None]) -> None:
        """The diff ``patch`` reads, whose names it writes (a `Write` deny rule's files
        went past it, a review): read as the command is checked, where its words and
        redirections name it and no ``cd`` came first; else known only as it runs."""
        read = patch_input(rest)
        if read.output != "" or read.named or read.dry_run:
            return  # (one file, named: ``writes.files_written``; or none)
        self._reads_diff(read, not read.computed and read.directory is not None)

    def _reads_diff(self, read: PatchInput, known: bool) -> None:
        """Note the diff a program reads, as its words (``read``) name it, else its input
        (a file, or a literal here-document's text); none known where ``known`` says so
        (a word known only as it runs), or after a ``cd``."""
        diff = read.diff if read.diff != "" else self.stdin
        known = known and diff not in (None, "", "-") and not self.cds
        path = diff if known and isinstance(diff, str) else None
        self.diffs.append(
            PatchRead(path, diff if known and isinstance(diff, bytes) else None, read)
        )

    def _program_writes(self, target: str | None, written: str, kind: str = "file") -> None:
        """A file a program writes by its words (``written``: as written; ``kind``, see
        ``writes.Kind``), checked as a redirection's target; one known only as it runs
        asks, as a redirection's (`cp k "$HOME/.ssh/authorized_keys"` went through where
        `cp k ~/.ssh/authorized_keys` asked: a review)."""
        if target is not None and self.zsh and _ZSH_NAMED_DIRECTORY.match(target):
            target = None  # (`tee ~p/f`: as a redirection's, see there)
        self.writes.append(written if target is None else target)
        changed = kind.startswith("changed")  # (`rm`, `chmod`: under Write rules only)
        if changed:
            self.changes.append(self.writes[-1])
        if target is None:
            self.computed_writes.append(written)
            folder = None if self.zsh else glob_folder(written)  # (zsh's qualifiers)
            if changed:
                pass  # (asked for where Write rules are: see RuleSet.decide)
            elif folder is None:
                self.problems.append(COMPUTED_WRITE_PROBLEM.format(squeeze(written)))
            else:  # (`sed -i … src/*.py`: a file of that directory, none of its dotfiles)
                self.named_writes.append((written, folder))
        else:
            if changed and kind.endswith("tree"):
                self.changed_trees.append(target)
            elif kind.endswith("tree") or kind == "names":
                self.tree_writes.append((target, kind != "names"))
            if kind.startswith("last"):
                self.into_directories.append(target)
        self.write_sites.append((self.writes[-1], self._site))

    def moved_by(self, names_cdpath: bool) -> tuple[tuple[str, tuple[str | None, ...]], ...]:
        """:attr:`ParsedCommand.moved_by`: for each write target, the ``cd``s that may run
        before it (``names_cdpath``: the text names ``CDPATH``, which may take a relative
        ``cd`` elsewhere)."""
        searched = names_cdpath or self.sets_cdpath
        found: dict[str, list[str | None]] = {}
        if len(self.cds) > MAX_PLACES:  # (each pair is checked: computed, past a limit)
            return tuple((t, (None,)) for t in dict.fromkeys(t for t, _ in self.write_sites))
        for index, (target, write) in enumerate(self.write_sites):
            moves = found.setdefault(target, [])
            for move, directory in self.cds:
                if not (
                    move.acts_on(index) if isinstance(move, _OwnMove) else move.precedes(write)
                ):
                    continue
                if directory is not None and searched and cdpath_searched(directory):
                    directory = None
                moves.append(directory)
        return tuple((t, tuple(m)) for t, m in found.items() if m)

    def _inner(self, depth: int) -> _Walker | None:
        """A walker for what a runner runs, sharing this one's count of readings; None
        (and a problem) past :data:`MAX_RUNNER_READINGS` or :data:`MAX_NESTING`."""
        self.readings[0] += 1
        if self.readings[0] > MAX_RUNNER_READINGS or depth >= MAX_NESTING:
            self.problems.append("runners nested too deep or in too many ways to check")
            return None
        inner = _Walker(self.readings, self.line_made, self.line_set)
        inner.stdin = self.stdin  # (`sudo patch -p1 < d.diff`: its input is the runner's)
        return inner

    def _take_runner(
        self,
        inner: _Walker,
        place: Place,
        variants: list[str],
        opens: list[str],
        guards: list[Guard],
        many: bool = False,
    ) -> None:
        """Take in what a runner runs, read by ``inner``: its commands are variants of the
        runner's (with their open ends: what ``xargs`` appends is a computed word); its writes
        count as written where the runner keeps the directory, ``HOME`` and root
        (``sudo``, ``flock``), only absolute ones where it may move the first two (``uv
        run``, ``su``, ``direnv exec``), none where it may change the root (``chroot``)."""
        self.problems += inner.problems
        self.reads += inner.reads
        self.computed_writes += inner.computed_writes
        self.tree_writes += inner.tree_writes
        self.named_writes += inner.named_writes
        self.diffs += inner.diffs
        self.changes += inner.changes
        self.git_dirs += inner.git_dirs
        self.changed_trees += inner.changed_trees
        self.into_directories += inner.into_directories
        self.linked += inner.linked
        if many or self._site.repeated():  # (it may run twice: through its own links, as
            # in a loop; `xargs -I{} ln -sf /etc l` wrote `/etc/etc`, a review)
            self.linked += [(target, "file", next(_LINKERS)) for target, _, _ in inner.linked]
        self.removes = self.removes or inner.removes
        for target in inner.writes:
            self.writes.append(target)
            if place == "root" or (place == "moved" and not target.startswith("/")):
                self.computed_writes.append(target)
        offset = len(self.write_sites)
        self.write_sites += [(t, _Site(None, 0, True)) for t, _ in inner.write_sites]
        if place == "kept":
            self.moves = self.moves or inner.moves
            self.sets_home = self.sets_home or inner.sets_home
            self.sets_cdpath = self.sets_cdpath or inner.sets_cdpath
            self.cds += [
                (_OwnMove(offset + move.first, offset + move.end), None)
                if isinstance(move, _OwnMove)
                else (_Site(None, 0, True), None)
                for move, _ in inner.cds
            ]
        self.sets += inner.sets  # (in its shell, before its own commands)
        self.set_names |= inner.set_names
        self.made_names |= inner.made_names
        self.exports_all = self.exports_all or inner.exports_all
        for command in inner.commands:
            guards += command.guards  # (`sudo find . -delete`)
            variants += [command.text, *command.variants]
            opens += command.open_prefixes


SYSTEM_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"})


def _wrapper(word: str | None) -> bool:
    """A wrapper's name, or its path in a system directory (``./nice`` is a script)."""
    if word is None or "/" not in word:
        return word in WRAPPERS
    folder = os.path.normpath(os.path.dirname(word))  # (`/usr/bin/../bin/env`)
    return folder.replace("//", "/") in SYSTEM_DIRS and os.path.basename(word) in WRAPPERS


COMPOUND_PROBLEM = "a quoted or computed array value, which bash reads again as code"
_QUOTED_COMPOUND = re.compile(r"[^=]*=\(.*[$`<>]", re.DOTALL)
KEYWORD_PROBLEM = (
    "`set -k` (keyword) makes assignments after a command's name part of its environment"
)


def _set_options(name: str, rest: Sequence[str | None]) -> frozenset[str] | None:
    """The shell options ``set`` (letters, and ``-o`` names), ``shopt -so``, zsh's
    ``setopt`` (and ``unsetopt NO_…``) turn on, long names as zsh reads them (case and
    underscores ignored: ``ALL_EXPORT``); None where a word that may be one is computed."""
    found: set[str] = set()
    if name in ("shopt", "setopt", "unsetopt"):
        if None in rest:
            return None
        named = [_option_name(w) for w in rest if w and not w.startswith(("-", "+"))]
        flags = "".join(w[1:] for w in rest if w and w.startswith(("-", "+")))
        if name == "shopt":
            return frozenset(named if "o" in flags and "u" not in flags else ())  # (`-so x`)
        if "m" in flags:  # (`setopt -m 'all*'`: names by pattern)
            return None
        # (zsh's `no` prefix and `+` flags turn options the other way: each is taken as
        # turned on, `setopt noallexport` too; `setopt -a` as `set -a`.)
        found.update(n[2:] if n.startswith("no") else n for n in named)
        return frozenset(found | set(flags.replace("o", "")))
    if name != "set":
        return frozenset()
    words = iter(rest)
    for word in words:
        if word is None:
            return None
        if word in ("-", "--") or word[:1] not in ("-", "+"):
            break  # (the positional parameters)
        if "o" in word[1:]:
            option = next(words, "")
            if option is None:
                return None
            option_name = _option_name(option)  # (`+o noallexport` turns it on, in zsh)
            if word[0] == "-" or option_name.startswith("no"):
                found.add(option_name[2:] if word[0] == "+" else option_name)
        if word[0] == "-":
            found.update(word[1:])
    return frozenset(found)


def _option_name(word: str) -> str:
    """A long option's name as zsh compares them (bash's are a subset)."""
    return word.lower().replace("_", "")


def _named_variables(name: str, rest: Sequence[str | None]) -> list[str | None]:
    """The words of a builtin that name variables (see ``_Walker._names``)."""
    if name == "wait":  # `wait -p NAME`, grouped (`-fp NAME`) or attached (`-pNAME`)
        found: list[str | None] = []
        for i, w in enumerate(rest):
            if w is not None and w[:1] == "-" and "p" in w:
                after = w[w.index("p") + 1 :]
                found.append(after or (rest[i + 1] if i + 1 < len(rest) else ""))
        return found
    if name in ("test", "[", "printf"):  # after `-v`, or attached (`printf -vNAME`)
        given = [rest[i + 1] for i, w in enumerate(rest[:-1]) if w == "-v"]
        attached = name == "printf"
        return given + [w[2:] for w in rest if attached and w and w.startswith("-v") and w != "-v"]
    if name == "getopts":
        return list((rest[1:] if rest[:1] == ["--"] else rest)[1:2])
    if name == "unset":
        return [w for w in rest if w is None or not w.startswith("-")]
    if name not in NAME_OPTIONS:
        return []
    names: list[str | None] = []
    words = iter(rest)
    for word in words:
        if word is None or not word.startswith("-") or word == "-":
            names.append(word)
        elif takes_next_word(word, NAME_OPTIONS[name]):
            value = next(words, "")
            if word.endswith("a"):  # `read -a NAME`
                names.append(value)
    return names


_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})


_BODIES = frozenset({"do_group", "compound_statement"})


def _evaluates_a_value(node: Any, data: bytes) -> bool:
    """Whether a node of an arithmetic expression has bash evaluate a value the text does
    not show, which may hide a command (``x[$(cmd)]``): a variable's (bash evaluates it
    as arithmetic in turn), a positional parameter's, a transformed expansion's, a
    substitution's output, text with letters. A number, ``$?``, a length, or a part
    whose own nodes say, does not."""
    kind = node.type
    text = node_text(node, data)
    if kind in ("variable_name", "word"):
        expanded = node.parent is not None and node.parent.type in ("simple_expansion", "expansion")
        number = not expanded and _NUMERIC_WORD.fullmatch(text)
        return not (number or text in ("@", "*"))  # (`${a[@]}` is every element)
    if kind == "simple_expansion":  # (its variable_name says which)
        special = [c for c in node.children if c.type == "special_variable_name"]
        return bool(special) and node_text(special[0], data) not in NUMERIC_SPECIALS
    if kind == "expansion":  # `${n}` (its variable_name says), `${#n}`: a number
        inner = [c.type for c in node.children[1:-1]]
        return inner not in (["variable_name"], ["#", "variable_name"], ["#", "subscript"])
    if kind in _SUBSTITUTIONS:  # its output is evaluated (`$(( $(cat f) ))`)
        return True
    if kind == "string":  # `"$n"`: its expansions say; text in it is evaluated
        return any(
            c.type == "string_content" and re.search(r"[A-Za-z_]", node_text(c, data))
            for c in node.children
        )
    if kind in ("raw_string", "ansi_c_string", "translated_string"):  # (`z["d"]`: a name,
        return bool(re.search(r"[A-Za-z_]", text[1:]))  # for an indexed array; `$'n'` too)
    return False


_LESS_LETTERS = re.compile(r"LESS=-?[A-Za-jl-z]+")
"""``LESS`` set to option letters alone, none of them ``-k`` (a lesskey file, which may
set the ``LESSOPEN`` less runs): ``LESS=-R`` asked (helper 221)."""


def _plain_less_options(word: str | None) -> bool:
    return word is not None and _LESS_LETTERS.fullmatch(word) is not None


def harmless_assignment(assignment: str) -> bool:
    name = assignment.split("=", 1)[0]
    return name in SAFE_ASSIGNMENTS or name.startswith("LC_")


def _directory(name: str, rest: Sequence[str | None]) -> str | None:
    """The directory ``cd DIR`` or ``pushd DIR`` goes to, as written; None when it is
    known only as it runs (``cd "$d"``, ``cd -``, ``cd ~/x``, ``cd`` alone: ``HOME``,
    ``pushd +1``, ``popd``)."""
    if name not in ("cd", "pushd"):
        return None
    words = list(rest)
    while words and words[0] is not None and words[0][:1] == "-" and words[0] != "-":
        if words.pop(0) == "--":
            break
    if len(words) != 1 or words[0] is None or words[0][:1] in ("", "+", "-", "~"):
        return None  # (`~` as written may be quoted: `cd '~'` is no HOME)
    if BRACES.search(words[0]):  # (`cd {../etc,}` is `cd ../etc`)
        return None
    return words[0]


def _runs_elsewhere(
    name: str, wrappers: Sequence[str], before: Sequence[str | None], rest: Sequence[str | None]
) -> str | Literal[False] | None:
    """The directory of its own a command runs in, its shell's staying (``env -C``,
    ``sudo -D``, ``sudo -i``, ``gdb --cd``, ``find -execdir``: None, known only as it
    runs; git's ``-C DIR``: DIR, where its ``init --bare`` makes its ``HEAD`` and its
    ``rebase -x`` code runs); False: none."""
    words = [*before, *rest]
    chdir = any(w is not None and (abbreviates(w, "--chdir") or "-C" in short_options(w, "uCS"))
                for w in words)  # fmt: skip
    base = os.path.basename(name)
    unknown = (
        (chdir and ("env" in wrappers or name == "env"))
        or (
            base in ("sudo", "doas")
            and any(
                w is None
                or abbreviates(w, "--chdir")
                or abbreviates(w, "--login")
                or {"-D", "-i"} & set(short_options(w, "ughpCDRTU"))
                for w in _leading_options(rest, SUDO_OPTIONS_WITH_VALUE)
            )  # (`sudo -i`: in the target user's home)
        )
        or (  # (`--cd=DIR`, or its own `cd` before the `shell` code it runs)
            base == "gdb"
            and any(
                w is None or w.startswith(("-cd", "--cd")) or w.lstrip().startswith("cd")
                for w in rest
            )
        )
        or (base == "find" and any(w in ("-execdir", "-okdir") for w in rest))
    )
    if unknown:
        return None
    own = rest[: git_options(rest)]
    if base == "git" and "-C" in own:
        place = git_place(own)
        return False if place == "" else place
    return False


def _leading_options(words: Sequence[str | None], with_value: frozenset[str]) -> list[str | None]:
    """A program's own options, before its first operand (``sudo -u bob sed -i``: ``-u``),
    those in ``with_value`` taking the next word; a computed word ends them (itself
    included: it may be any option)."""
    letters = "".join(o[1] for o in with_value if len(o) == 2)
    found: list[str | None] = []
    taken = False
    for word in words:
        if taken:  # (an option's value, computed or not)
            taken = False
            continue
        if word is None:
            found.append(word)
            break
        if word == "--" or not word.startswith("-"):
            break
        found.append(word)
        if word.startswith("--"):
            taken = "=" not in word and takes_long_value(word, with_value)
        else:
            taken = takes_next_word(word, letters)
    return found


MAX_PLACES = 64
"""Directories a command's ``cd``s may leave it in, at most, for its writes to be checked."""
