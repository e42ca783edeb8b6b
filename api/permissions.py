"""Permission rules (SPEC PM): a command is parsed with a real bash grammar
(tree-sitter-bash) into the simple commands it would run and the files it would write,
and checked against ``allow``/``ask``/``deny`` rules in Claude Code's syntax.

Every simple command counts on its own: those joined by ``&&``, ``||``, ``;``, ``|``,
``&`` or newlines, inside subshells, ``$(…)``, ``<(…)``, loops, conditionals, function
bodies and the literal text of ``bash -c``/``sh -c``/``eval``. Wrappers (``timeout``,
``time``, ``nice``, ``nohup``, ``stdbuf``, ``command``, ``env VAR=…``, ``exec``) and
leading assignments are stripped before matching, so ``timeout 5 git push`` is checked as
``git push``. What runners run (``sudo``, ``xargs``, ``uv run``, ``npx``, ``su -c``, see
``api.runners``) is checked by deny and ask rules too. A command that cannot be checked (a
parse error, a command name computed at run time, a ``bash -c`` of a computed string) is
``ask``: never allowed unseen.

Rules: ``Bash`` or ``Bash(*)`` match every command; ``Bash(git push *)`` is a glob over
the command's text (``*`` any characters; a trailing `` *`` also matches the bare
``git push``; ``Bash(ls *)`` does not match ``lsof``); ``Bash(npm run test:*)`` is the
older prefix form: any command that starts with ``npm run test`` (``test:unit`` too);
``Write(/etc/**)`` matches a
file a redirection writes (``*`` within a path segment, ``**`` across them; relative
paths are resolved against the command's directory, and each directory its ``cd``s may
take it to). Deny wins over ask, ask over allow;
a simple command no rule allows is ``ask``.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import stat
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from .errors import InvalidInputError
from .runners import (
    COMMAND_RUNNERS,
    RUNNERS,
    WRAPPERS,
    Place,
    may_vanish,
    read_runner,
    runner_commands,
    short_options,
    takes_next_word,
    wrapper_arguments,
)

Verdict = Literal["allow", "ask", "deny"]
VERDICTS: tuple[Verdict, ...] = ("allow", "ask", "deny")
_RANK = {"allow": 0, "ask": 1, "deny": 2}

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "fish"})
"""``SHELL -c TEXT`` runs TEXT: it is parsed and checked instead."""
_SHELL_NAME = re.compile(r"(?:(?:ba|rba|z|rz|da|k|rk|mk|pdk|a|c|tc|ya|po)?sh|fish|ksh93)[-._0-9]*")
"""A shell's base name, versioned too (``zsh5``, ``bash-5.2``): ``ssh`` is none."""


def _is_shell(name: str) -> bool:
    return _SHELL_NAME.fullmatch(os.path.basename(name)) is not None


DIRECTORY_CHANGES = frozenset({"cd", "pushd", "popd"})
WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


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

    @property
    def name(self) -> str:
        words = self.text.split(" ")
        return next((w for w in words if "=" not in w), words[0])


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


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str
    rule: str | None = None
    """The rule that decided (for deny and ask), or the rules that allowed."""
    source: str = "rules"
    """``rules``, ``hook``, ``user`` (a person approved it) or ``none`` (no rules)."""
    subject: str | None = None
    """The simple command (or written file) that decided, when one did."""

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.verdict, "reason": self.reason, "rule": self.rule,
                "source": self.source}  # fmt: skip


# --- parsing --------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError as exc:  # pragma: no cover - a dependency
        raise InvalidInputError(
            f"permission rules need tree-sitter-bash ({exc}): pip install tree-sitter-bash"
        ) from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


MAX_NESTING = 8
"""How deep ``bash -c 'bash -c …'`` is followed before it counts as unknowable."""
MAX_RUNNER_READINGS = 64
"""Readings of the commands runners run, at most, in one command (see ``_Walker``)."""
MAX_CHECKED_CHARS = 256 * 1024
"""A longer command is not parsed: it cannot be checked (ask)."""
MAX_DEPTH = 500
"""Levels of syntax (``$(``, ``(``, ``if``…) a command may nest to be checked (ask)."""


def _deeper_than(root: Any, limit: int) -> bool:
    """Whether the syntax tree under ``root`` is more than ``limit`` nodes deep."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack += [(child, depth + 1) for child in node.children]
    return False


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
MOVED_PROBLEM = "`{}`'s words computed at run time may be more or fewer: what it runs may move"
VARIABLE_SETTERS = frozenset({
    "declare", "typeset", "local", "export", "readonly", "unset", "read", "printf", "mapfile",
    "readarray", "getopts", "wait", "let",
})  # fmt: skip
"""Builtins that set (or unset) variables named by their words: one given ``HOME``, or a
word computed at run time, may move ``~`` (``wait -p``, ``printf -v``, ``let``)."""
ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
NUMERIC_SPECIALS = frozenset({"?", "#", "$", "!"})
ARITHMETIC_PROBLEM = (
    "arithmetic on a variable the command does not set to a number itself, whose value "
    "could hide a command (`a='x[$(cmd)]'; ((a))`)"
)
BASH_SET_VARIABLES = frozenset({
    "_", "REPLY", "OPTARG", "OPTIND", "MAPFILE", "PWD", "OLDPWD", "DIRSTACK", "COPROC",
    "COMPREPLY", "READLINE_LINE", "READLINE_POINT", "READLINE_MARK", "FUNCNAME", "GROUPS",
    "HOSTNAME", "SHELLOPTS",
})  # fmt: skip
"""Variables bash sets itself, from what a command reads or does (``read``'s ``REPLY``,
``$_``: the last word of the command before), with ``BASH_*`` and ``COMP_*``: never
taken for numbers the command set."""
ARITHMETIC_ASSIGNMENTS = frozenset({
    "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", "++", "--",
})  # fmt: skip
_NUMBER = re.compile(r"[+-]?\d*")
"""A literal value that is a number to arithmetic (empty: 0)."""
_NUMERIC_WORD = re.compile(r"\d+|0[xX][0-9a-fA-F]+|\d+#[0-9A-Za-z@_]+")
"""A number as arithmetic reads one (decimal, hexadecimal, ``BASE#DIGITS``)."""
_LET_EXPRESSION = re.compile(r"[\w\s+\-*/%=<>!&|^~?:(),]*")
"""A ``let`` expression of names, numbers and operators only (no subscript, no quote)."""
_LET_TARGET = re.compile(
    r"(?<![\w#])([A-Za-z_]\w*)(?=\s*(?:(?:<<|>>|[-+*/%&|^])?=(?!=)|\+\+|--))"
    r"|(?:\+\+|--)\s*([A-Za-z_]\w*)"
)
_DECLARED_NUMBER = re.compile(r"[-+][grxv]+")
"""Options of ``declare``/``local``/``export``/``readonly``/``unset`` that leave a number
one (global, read-only, exported)."""


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
    "zshexit_functions",
})  # fmt: skip
"""zsh's tables of what names run and its prompts (``functions+=(git 'rm x')``)."""
COMMAND_VARIABLES = frozenset({
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_PROXY_COMMAND", "GIT_EXEC_PATH",
    "GIT_ALLOW_PROTOCOL", "EDITOR", "VISUAL", "PAGER", "SSH_ASKPASS", "TAR_OPTIONS",
})  # fmt: skip
"""Variables naming a command git (or tar, ``TAR_OPTIONS``) runs (``GIT_CONFIG_*`` set
git's configuration)."""
"""bash's tables of what a command's name runs (``BASH_CMDS[ls]=/bin/rm``)."""
_SUBSCRIPTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[(.*)\]", re.DOTALL)
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
_EXPANDING = re.compile(r"(\\*)(`|\$\(|\$\[|\$\{)")
"""Where a here-document body expands: `` ` ``, ``$(``, ``$[`` (an odd run of
backslashes before one makes it plain text)."""


def _unchecked_heredoc(node: Any, data: bytes) -> bool:
    """Whether an unquoted here-document's body expands something the grammar did not
    read as an expansion (it misses backquotes, and ``$(…)`` after ``<<-``'s tabs): bash
    runs those too."""
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if start is None or body is None:
        return False
    if any(q in _text(start, data) for q in "'\"\\"):  # quoted: the body is plain text,
        return any(_continued(line) for line in _text(body, data).split("\n"))  # not joined
    return _unread(body, data, body.start_byte)


def _continued(line: str) -> bool:
    """Whether a line ends in a backslash that is not itself escaped."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _unread(node: Any, data: bytes, after: int) -> bool:
    """Whether ``node``'s text (from byte ``after``) expands something the grammar did
    not read as an expansion: a backquote or ``$(`` outside every command substitution
    it found (it misses backquotes in ``${…}`` and in here-documents), ``$((`` outside
    every arithmetic expansion (in a here-document it reads ``$( (a) )``)."""
    read: list[tuple[int, int, str]] = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if child.type in ("command_substitution", "arithmetic_expansion", "expansion"):
            read.append((child.start_byte, child.end_byte, child.type))
        stack += child.children
    text = data[after : node.end_byte].decode("utf-8", "surrogateescape")
    for match in _EXPANDING.finditer(text):
        if len(match[1]) % 2:
            continue
        at = after + len(text[: match.start(2)].encode("utf-8", "surrogateescape"))
        arithmetic = text.startswith("$((", match.start(2))
        kinds = ("arithmetic_expansion",) if arithmetic else ("command_substitution",)
        if match[2] == "${":  # (`${a@P}` in a `<<-` body: the grammar reads no expansion)
            kinds = ("expansion",)
        if not any(begin <= at < end and kind in kinds for begin, end, kind in read):
            return True
    return False


_BLANKS = re.compile(rb"(?:[ \t\n]|\\\n)*")
"""What bash skips between words: blanks, newlines and line continuations."""
_CONTENT = frozenset({
    "word", "string", "raw_string", "ansi_c_string", "translated_string", "heredoc_body",
    "comment", "arithmetic_expansion", "expansion", "regex", "extglob_pattern",
})  # fmt: skip
"""Nodes whose text is all theirs (quoted text, a body, arithmetic): not looked into."""
_TIGHT = frozenset({"simple_expansion", "variable_assignment", "concatenation", "command_name"})
"""Nodes that are one word to bash: nothing may come between their parts."""
_DELIMITER = re.compile(r"-?\s*(?:\\?[A-Za-z0-9_.-]+|'[^']+'|\"[A-Za-z0-9_.-]+\")")
"""A here-document delimiter read alike by the grammar and bash (one quoted in part,
``E'O'F``, ends at ``EOF`` for bash and at ``E'O'F`` for the grammar)."""
_WORD_ENDS = b" \t\n;&|()<>"
_DASH = re.compile(rb"[ \t]+-[ \t]+")


WORDS_RUN = frozenset({
    "eval", "exec", "source", ".", "trap", "alias", "command", "builtin", "git", "watch", "env",
    "mapfile", "readarray", "printf", "read", "declare", "typeset", "local", "export",
    "readonly", "unset", "test", "[", "let", "hash", "enable", "fc", "getopts", "wait",
    "emulate", "print", "zargs", "noglob", "nocorrect", "repeat", "-", "coproc", "time",
})  # fmt: skip
"""Builtins and programs whose words say what runs (a command, code, a variable name)."""


def _splits_what_runs(command: Any, index: int, data: bytes) -> bool:
    """Whether words the grammar split at ``command``'s child ``index`` (bash reads one)
    may change what the check reads as running: its name or what comes before, or any
    word of a command whose words name what runs (``sudo``, ``bash -c``, ``git``, a
    wrapper). ``cp $a/$b.c x`` (the grammar splits after ``$a/$``) runs ``cp`` either
    way, with whichever words: its split changes no check."""
    names = [i for i, c in enumerate(command.children) if c.type == "command_name"]
    if not names or index <= names[0]:
        return True
    named = command.children[names[0]]
    name = _literal(named.children[0] if named.children else named, data)
    base = os.path.basename(name or "").lstrip("=")  # (zsh's `=env`)
    return (
        name is None or "/" in name or base in WORDS_RUN or base in WRAPPERS or base in RUNNERS
        or base in COMMAND_RUNNERS or _is_shell(base)
    )  # fmt: skip


def _misread(root: Any, data: bytes) -> str | None:
    """Why the grammar may have read ``data`` otherwise than bash, which then runs what
    the check did not see; None when nothing says so. The grammar skips as blanks what
    bash reads as part of a word (``\\r``, ``\\v``, Unicode spaces, an escaped blank
    before ``#``), joins lines bash ends (``git status ==⏎rm -f x``), splits words bash
    joins (``x=]\\; rm -f x``), and reads some here-document delimiters and nested
    backquotes otherwise: each leaves text between its tokens that bash would not skip,
    or none where bash needs some."""
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind == "heredoc_start" and not _DELIMITER.fullmatch(_text(node, data)):
            return "a here-document delimiter quoted in part"
        if kind == "comment" and node.start_byte and data[node.start_byte - 1] not in _WORD_ENDS:
            return "a `#` inside a word"
        backquoted = kind == "command_substitution" and data[node.start_byte] == ord("`")
        if backquoted and b"\\`" in data[node.start_byte : node.end_byte]:
            return "backquotes nested in backquotes"
        if kind in _CONTENT:
            continue
        at = node.start_byte
        for index, child in enumerate(node.children):
            gap = data[at : child.start_byte]
            if gap and kind in _TIGHT:
                return "a blank inside one word"
            if not _BLANKS.fullmatch(gap) and not (
                child.type.endswith("redirect") and _DASH.fullmatch(gap)  # (`python - <<EOF`:
            ):  # the grammar drops a `-` before a redirection, a word bash passes on)
                return "characters it skips that bash does not"
            if kind == "command" and index > 0:
                if b"\n" in gap.replace(b"\\\n", b""):
                    return "one command over lines bash ends"
                joined = child.is_named and node.children[index - 1].is_named  # (not `$"…"`)
                split = not gap and joined and not child.type.endswith("redirect")
                if split and _splits_what_runs(node, index, data):
                    return "two words where bash reads one"
            at = max(at, child.end_byte)
            stack.append(child)
        if node.children and not _BLANKS.fullmatch(data[at : node.end_byte]):
            return "characters it skips that bash does not"
    return None


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_ZSH_EQUALS = re.compile(r"=[A-Za-z0-9_.+-]")
_GLOB_SUBST = re.compile(r"glob_?subst", re.IGNORECASE)
"""zsh's option that globs variables' values: a qualifier in one runs code."""
_QUOTED = re.compile(r"'[^']*'|\"(?:\\.|[^\"\\])*\"")
"""Quoted text, where zsh expands no glob qualifier."""
ZSH_MODIFIERS = frozenset({"noglob", "nocorrect", "-"})
"""zsh's precommand modifiers: what follows is the command (``repeat N`` too)."""
_ZSH_CODE = re.compile(r"[*?\]]\((?:#q)?[^()]*?(?:e[^\w\s)]|\+[A-Za-z_])|\$\{\([^)]*[e%]")
"""zsh's glob qualifiers that run code (``*(e:'cmd':)``, ``*(+func)``) and parameter
expansion flags (``${(e)x}`` evaluates the value)."""


def parse_command(source: str, zsh: bool = False) -> ParsedCommand:
    """The simple commands and written files of ``source`` (never raises on bad text).
    ``zsh``: zsh runs it, read by the same grammar (bash's), with zsh's precommand
    modifiers and ``=cmd`` read as zsh reads them and its code-running glob qualifiers
    and parameter flags asking."""
    walker = _Walker()
    walker.zsh = zsh
    if len(source) > MAX_CHECKED_CHARS:
        walker.problems.append(f"it is longer than {MAX_CHECKED_CHARS} characters")
    else:
        walker.parse(source, 0)
        walker.settle()
        if zsh and (_ZSH_CODE.search(_QUOTED.sub("", source)) or _GLOB_SUBST.search(source)):
            walker.problems.append("zsh glob qualifiers or parameter flags may run code")
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
    )


def _joined_lines(source: str) -> str:
    """``source`` with its line continuations removed, as bash reads them outside quotes
    (``git pu\\⏎sh`` is ``git push``; the grammar would see two words). A backslash
    that is itself escaped continues nothing. Bash continues no comment, nor a line in
    single quotes or a quoted here-document: the text is checked as the grammar reads it
    too (``_Walker.parse``), so that a command either reading finds is checked."""
    return re.sub(r"(\\+)\n", lambda m: m[1][:-1] if len(m[1]) % 2 else m[0], source)


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


def _within(node: Any, ancestor: Any) -> bool:
    while node is not None and node != ancestor:
        node = node.parent
    return node is not None


def _searched(directory: str) -> bool:
    """Whether ``cd DIR`` looks for DIR in ``CDPATH`` first."""
    return not directory.startswith(("/", "./", "../", "~")) and directory not in (".", "..")


class _Walker:
    def __init__(self, readings: list[int] | None = None) -> None:
        self.readings = [0] if readings is None else readings
        """Runners' commands read so far, shared with the walkers reading them: each way
        a runner's options can be read is a reading, and nested runners multiply them."""
        self.commands: list[SimpleCommand] = []
        self.writes: list[str] = []
        self.computed_writes: list[str] = []
        self.problems: list[str] = []
        self.moves = False
        self.sets_home = False
        self.sets_cdpath = False
        self.cds: list[tuple[_Site, str | None]] = []
        """Directory changes: where, and to which directory (None: known as it runs)."""
        self.write_sites: list[tuple[str, _Site]] = []
        self._trees = 0
        self._site = _Site(None, 0, True)
        """Where the command being read is (a node of a parsed tree)."""
        self.reads: list[str | None] = []
        self.zsh = False
        """zsh runs it (see :func:`parse_command`)."""
        self._scope = self._scopes = 0
        """The text being read (each ``parse``, an ``eval``'s or ``bash -c``'s own)."""
        self._numbers: set[tuple[int, str]] = set()
        """Variables a text sets to a number (a literal one, ``$((…))``, arithmetic)."""
        self._not_numbers: set[str] = set()
        """Variables set otherwise, by any text of the command."""
        self._any_set = False
        """Something sets variables the check cannot name (a sourced file, a name
        computed at run time)."""
        self._arithmetic_uses: list[tuple[int, str]] = []
        """Variables whose values arithmetic evaluates, by text: see :meth:`settle`."""

    def parse(self, source: str, depth: int) -> None:
        if depth > MAX_NESTING:
            self.problems.append("shells nested too deep to check")
            return
        outer, outer_scope = self._site, self._scope
        self._scopes += 1
        self._scope = self._scopes
        for text in dict.fromkeys((_joined_lines(source), source)):
            data = text.encode("utf-8", "surrogateescape")
            tree = _parser().parse(data)
            if _deeper_than(tree.root_node, MAX_DEPTH):  # (checking it took time and
                self.problems.append(f"it nests more than {MAX_DEPTH} deep")  # memory
                continue  # quadratic in its depth: 44 s for a page of `$(`, a review)
            if tree.root_node.has_error:
                self.problems.append("it does not parse as bash")
            misread = _misread(tree.root_node, data)
            if misread is not None:
                self.problems.append(f"the grammar may read it otherwise than bash ({misread})")
            self._trees += 1
            self._site = _Site(tree.root_node, self._trees, depth > 0)
            self.walk(tree.root_node, data, depth)
        self._site, self._scope = outer, outer_scope

    def settle(self) -> None:
        """Once the whole command is read: arithmetic on a variable asks unless that text
        sets it, and only to numbers (``n=0; ((n++))``, ``for ((i=0; …))``), and nothing
        else sets it anywhere (``read n``, ``eval 'n=…'``, a sourced file, ``${n:=…}``).
        A value from the caller's environment, used before the command's own assignment,
        is the user's own. zsh's arithmetic is not followed: there it always asks."""
        for scope, name in self._arithmetic_uses:
            if (
                self.zsh
                or self._any_set
                or name in self._not_numbers
                or (scope, name) not in self._numbers
                or name in BASH_SET_VARIABLES
                or name.startswith(("BASH", "COMP_"))
            ):
                self.problems.append(ARITHMETIC_PROBLEM)
                break
        self._arithmetic_uses = []

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
            elif kind == "expansion" and self._evaluating_expansion(node, data):
                self.problems.append("an expansion that evaluates a variable's value as code")
            elif kind in ("regex", "extglob_pattern") and _PATTERN_CODE.search(_text(node, data)):
                self.problems.append("an expansion in a pattern the grammar reads as text")
            elif kind == "array":  # `z=([d]=1)`: an indexed array evaluates `d`
                for element in node.children:
                    key = _ARRAY_KEY.match(_text(element, data))
                    if key and not key[1].isdigit():
                        self.problems.append(SUBSCRIPT_PROBLEM)
            elif kind == "unary_expression" and _text(node.children[0], data) == "-v":
                self._names([_name(c, data) for c in node.children[1:2]])  # `[[ -v NAME ]]`
            elif kind == "test_command" and _redirects_in_brackets(node):
                self.problems.append(BRACKET_PROBLEM)
            elif kind == "heredoc_redirect" and _unchecked_heredoc(node, data):
                self.problems.append(HEREDOC_PROBLEM)
            elif kind in ("word", "raw_string", "string", "concatenation"):
                value = _literal(node, data)
                if value is not None and _EVALUATED_SUBSCRIPT.match(value):
                    self.problems.append(SUBSCRIPT_PROBLEM)
            elif kind == "ansi_c_string":  # `$'x[\x24(cmd)]'`: escapes make the text
                text = _text(node, data)
                if "[" in text and any(c in text for c in "$`\\"):
                    self.problems.append(SUBSCRIPT_PROBLEM)
            elif kind == "comment" and _continued(_text(node, data)):
                self.problems.append(CONTINUED_PROBLEM)  # (read two ways: see parse)
            elif kind == "variable_assignment":
                assigned = _text(node, data).split("=", 1)[0].split("[", 1)[0].rstrip("+")
                if assigned in PROMPTS:
                    self.problems.append("a prompt variable runs the `$(…)` in its value")
                elif assigned in SOURCED_VARIABLES:  # (`BASH_ENV=f bash -c …`: that shell
                    self._sources_a_file()  # runs f first)
                    value = node.child_by_field_name("value")
                    named = None if value is None else _literal(value, data)
                    if value is not None and (named is None or _reads_input(named)):
                        self.problems.append(SOURCED_INPUT.format(assigned))
                in_for = node.parent is not None and node.parent.type == "c_style_for_statement"
                number = in_for or _numeric_value(node.child_by_field_name("value"), data)
                self._setting([assigned], numbers={assigned} if number else ())  # (`eval
                # 'HO''ME=x'`, `HO\⏎ME=x`)
            elif kind == "for_statement":  # (`for HOME in …`, `select CDPATH in …`)
                variable = node.child_by_field_name("variable")
                name = None if variable is None else _text(variable, data)
                values = node.children_by_field_name("value")
                counting = _text(node.children[0], data) == "for" and all(
                    _counted(v, data) for v in values
                )  # (`for i in 1 2 {3..9}`; `select` sets REPLY too, from input)
                self._setting([name], numbers={name} if counting and values and name else ())
            elif kind == "expansion" and any(c.type in ("=", ":=") for c in node.children):
                self._not_numbers.add(_expansion_name(node, data))  # `${n:=text}` sets n
            if kind == "expansion" and _unread(node, data, node.start_byte + 2):
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
                c.type == "test_operator" and _text(c, data) in ARITHMETIC_TESTS
                for c in node.children
            )
        return False

    def _arithmetic(self, node: Any, data: bytes) -> None:
        """A node of an arithmetic expression: a variable whose value it evaluates (kept
        for :meth:`settle`), a value it cannot follow (a positional parameter, a
        transformed expansion, a substitution's output: asks now), or one it sets to a
        number (``n=…``, ``n+=…``, ``n++``)."""
        use = _arithmetic_use(node, data)
        if use is True:
            self.problems.append(ARITHMETIC_PROBLEM)
        elif use:
            self._arithmetic_uses.append((self._scope, use))
        operators = [c for c in node.children if _text(c, data) in ARITHMETIC_ASSIGNMENTS]
        if operators and node.type in (
            "binary_expression",
            "postfix_expression",
            "unary_expression",
        ):
            target = node.children[-1] if node.type == "unary_expression" else node.children[0]
            name = _text(target, data)
            if target.type in ("variable_name", "word") and _IDENTIFIER.fullmatch(name):
                self._numbers.add((self._scope, name))

    @staticmethod
    def _evaluating_expansion(node: Any, data: bytes) -> bool:
        """``${x@P}`` (runs the value's command substitutions) or ``${!x}`` (indirect:
        the value may be ``a[$(cmd)]``)."""
        text = _text(node, data)
        listing = _LISTING.fullmatch(text)  # (`${!map[@]}`, `${!prefix@}`: names, no value)
        return (text.startswith("${!") and not listing) or "@P" in text or "@A" in text

    def declaration(self, node: Any, data: bytes) -> None:
        text = _squeeze(_text(node, data))
        words = text.split()
        if any(w.startswith("-") and "i" in w[1:] for w in words[1:]):  # declare -i: arithmetic
            self.problems.append(ARITHMETIC_PROBLEM)
        nameref = words[0] in ("declare", "typeset", "local") and any(
            w.startswith("-") and "n" in w[1:] for w in words[1:]
        )  # (`export -n`: no nameref)
        if nameref:  # (what it names is set later, by any spelling: `declare -n r; r=PS4`)
            self.problems.append("a nameref: the variable it names may be one that runs code")
        arguments: list[str | None] = []
        numbers: set[str] = set()  # (set to a number, or left one: `local i`, `export n`)
        keeps_numbers = all(_DECLARED_NUMBER.fullmatch(w) for w in words[1:] if w[0] in "-+")
        for child in node.children[1:]:
            if child.type == "variable_assignment":  # its name is plain text; with `-n`
                parts = [c for c in child.children if c.is_named]  # its value is a name
                assigned = _text(parts[0], data)
                arguments.append(assigned)
                value = child.child_by_field_name("value")
                if keeps_numbers and (value is None or _numeric_value(value, data)):
                    numbers.add(assigned.split("[", 1)[0].rstrip("+"))
                if nameref and len(parts) > 1:
                    arguments.append(_literal(parts[-1], data))
                    if arguments[-1] is None:
                        self.problems.append("a nameref to a variable named as it runs")
            elif child.is_named:  # (`local i`: a name; `HO''ME` is not two words)
                following = child.next_sibling
                plain = child.type == "variable_name" and (
                    following is None or following.start_byte > child.end_byte
                )
                arguments.append(_text(child, data) if plain else _literal(child, data))
                if keeps_numbers and arguments[-1] and _IDENTIFIER.fullmatch(arguments[-1]):
                    numbers.add(arguments[-1])
                if words[0] != "export":  # (export takes no subscript: bash evaluates none)
                    self._names([_name(child, data)])
        self._setting(arguments, numbers)
        if any(a is not None and a.split("=", 1)[0] in SOURCED_VARIABLES for a in arguments):
            self._sources_a_file()  # (`export BASH_ENV=f; bash -c …`)
        self.commands.append(SimpleCommand(text))

    def _sources_a_file(self) -> None:
        """The command runs a file's code (``source``, a ``BASH_ENV``): it may set
        ``HOME``, change directory and open descriptors, as it runs."""
        self.sets_home = self.moves = self._any_set = True
        self.reads.append(None)

    def _setting(self, words: Sequence[str | None], numbers: Collection[str] = ()) -> None:
        """Note a variable setter's words (literal, or None when computed): one that
        names ``HOME`` as bash reads it (``HO"ME"``), or is computed, may move ``~``; one
        naming a prompt (``printf -v PS4 …``, ``read PS4``, a nameref's target: ``set -x``
        runs its ``$(…)``) or one of bash's command tables changes what runs.
        ``numbers``: the names it sets to a number (see :meth:`settle`)."""
        for word in words:
            name = (word or "").split("=", 1)[0].split("[", 1)[0].rstrip("+")
            if word is None:
                self._any_set = True
            elif name in numbers:
                self._numbers.add((self._scope, name))
            else:
                self._not_numbers.add(name)
            if name in PROMPTS:
                self.problems.append("a prompt variable runs the `$(…)` in its value")
            elif name in TABLES or (self.zsh and name in ZSH_CODE_VARIABLES):
                self.problems.append(f"`{name}` changes what a command's name runs")
            elif name.startswith("GIT_CONFIG") or name in COMMAND_VARIABLES:
                self.problems.append(f"`{name}` names a command a program runs")
        if any(w is None or "HOME" in w for w in words):
            self.sets_home = True
        if any(w is None or "CDPATH" in w.upper() for w in words):  # (zsh: `cdpath`)
            self.sets_cdpath = True

    def _let(self, expressions: Sequence[str | None]) -> None:
        """``let``'s words are arithmetic: the variables they name are used (and those
        they assign set to numbers); one with more than names, numbers and operators
        (a subscript, a computed word) asks."""
        if any(e is None or not _LET_EXPRESSION.fullmatch(e) for e in expressions):
            self.problems.append(ARITHMETIC_PROBLEM)
            self._setting([None])
            return
        for expression in expressions:
            assert expression is not None
            targets = [a or b for a, b in _LET_TARGET.findall(expression)]
            self._setting(targets, set(targets))
            uses = re.findall(r"(?<![\w#])[A-Za-z_]\w*", expression)
            self._arithmetic_uses += [(self._scope, use) for use in uses]

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

    def redirect(self, node: Any, data: bytes) -> None:
        operator = next((c.type for c in node.children if not c.is_named), "")
        targets = node.children_by_field_name("destination")
        if len(targets) > 1:  # `> f word`: bash gives `word` to the command
            self.problems.append("words after a redirection are not read as bash reads them")
        target = targets[0] if targets else None
        here = _Site(node, self._site.tree, self._site.nested)
        if operator == "<":
            self.reads.append(None if target is None else _literal(target, data))
            if self.reads[-1] is not None:  # (reopened for writing by `> /dev/fd/3`)
                self.write_sites.append((self.reads[-1], here))
        if operator not in WRITE_OPERATORS or target is None:
            return
        if target.type == "number" and operator == ">&":  # a descriptor (`>&2`), not a file
            return
        value = _literal(target, data)
        if value is not None and value.startswith("~") and not _TILDE.match(_text(target, data)):
            value = "./" + value  # (a quoted `~` is a name: `'~/f'` is in the directory)
        if value is None:
            self.writes.append(_text(target, data))
            self.computed_writes.append(self.writes[-1])
        else:
            self.writes.append(value)
        self.write_sites.append((self.writes[-1], here))

    def command(self, node: Any, data: bytes, depth: int) -> None:
        assignments = [
            _literal_assignment(c, data) for c in node.children if c.type == "variable_assignment"
        ]
        words = [c for c in node.children if c.is_named and c.type not in (
            "variable_assignment", "file_redirect", "heredoc_redirect", "herestring_redirect")]  # fmt: skip
        if words and words[0].type == "command_name":
            words[0] = words[0].children[0] if words[0].children else words[0]
        values = [_literal(w, data) for w in words]
        shown = [
            v if v is not None else _squeeze(_text(w, data))
            for v, w in zip(values, words, strict=True)
        ]
        outer = self._site
        self._site = _Site(node, outer.tree, outer.nested)
        try:
            self.simple(values, shown, assignments, depth)
        finally:
            self._site = outer

    def simple(
        self,
        values: list[str | None],
        shown: list[str],
        assignments: list[str | None],
        depth: int,
    ) -> None:
        """One simple command from its words (``values``: literal or None; ``shown``: as
        matched) and the assignments before it."""
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
            span = range(start + 1, min(len(values), start + 1 + (skip or len(values))))
            if wrapper == "env" and any(  # (`env FOO=$BAR make`: an assignment, no option)
                (values[k] is None and not _ASSIGNMENT.match(shown[k]))
                or _abbreviates(values[k], "--split-string")
                or "-S" in short_options(values[k] or "", "uCS")
                for k in span
            ):
                self.problems.append("`env -S` runs a command line given as text")
                line = _split_string(values[start + 1 :])
                if line is not None:  # (checked as the command it is too: a deny rule holds)
                    self.parse(line, depth + 1)
            if skip is None:  # `command -v x`, `env` alone: the wrapper is the command
                break
            if any(may_vanish(values[k], shown[k]) for k in range(start + 1, start + 1 + skip)):
                self.problems.append(MOVED_PROBLEM.format(wrapper))  # `timeout $(f) 5 rm`
            if wrapper == "env":
                options = values[start + 1 : start + 1 + skip]
                assignments += [v for v in options if v is None or "=" in v]
                self._setting(options)  # (`env HO''ME=/etc sh -c …`, `env -u HOME`)
                if any(v is None or v.split("=", 1)[0] in SOURCED_VARIABLES for v in options):
                    self._sources_a_file()  # (the shells it starts run that file first)
                for value, text in zip(options, shown[start + 1 : start + 1 + skip], strict=True):
                    variable, _, named = (value or text).partition("=")
                    if variable in SOURCED_VARIABLES and (value is None or _reads_input(named)):
                        self.problems.append(SOURCED_INPUT.format(variable))
            wrappers.append(wrapper)
            start += 1 + skip
        if any(a is not None and a.startswith("BASH_FUNC_") for a in assignments):
            self.problems.append("a BASH_FUNC_ variable defines functions in the shells it starts")
        kept = [a if a is not None else "<computed assignment>" for a in assignments]
        kept = [a for a in kept if not _harmless(a)]
        if start >= len(values):
            if wrappers:
                self.commands.append(SimpleCommand(" ".join(kept + shown), ()))
            return
        name = values[start]
        if name in MISREAD_NAMES:  # (`! ! rm x`, `time { rm x; }`: bash runs them)
            self.problems.append(f"the grammar misreads `{name}` as a command's name")
        if name is None:
            self.problems.append(f"the command name `{shown[start]}` is computed at run time")
            self.commands.append(SimpleCommand(" ".join(kept + shown[start:]), tuple(wrappers)))
            return
        rest = values[start + 1 :]
        if "/" in name and os.path.basename(name) in WRAPPERS and not _wrapper(name):
            base = os.path.basename(name)  # (`./env rm x`: maybe a copy of env; a deny rule
            self.parse(_rejoined([base, *rest], [base, *shown[start + 1 :]]), depth + 1)
        if _changes_directory(name, wrappers, values[: start + 1], rest):
            site = self._site
            known = None if wrappers or site.nested or site.repeated() else _directory(name, rest)
            self.cds.append((site, known))
        if name == "printf":  # only `printf -v NAME` sets one (a computed first word may be it)
            self._setting([*_named_variables(name, rest), *([None] if rest[:1] == [None] else [])])
        elif name == "let":
            self._let(rest)
        elif name in VARIABLE_SETTERS:
            self._setting(rest)
        self._names(_named_variables(name, rest))
        if name in ("source", "."):  # the file may set anything
            self._sources_a_file()
        if name == "alias" and any(w is None or "=" in w for w in rest):
            self.problems.append(ALIAS_PROBLEM)
        script = rest[1:] if rest[:1] == ["--"] else rest
        if name in ("source", ".") and script and (script[0] is None or _reads_input(script[0])):
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
        codes = _code_arguments(name, rest)
        nested = _nested_script(name, rest)
        changing = [a for a in kept if a.split("=", 1)[0] not in SOURCED_VARIABLES]
        if changing and (codes or nested is not None):  # (checked alone, it ran with them)
            self.problems.append(f"assignments before `{name}` change what the code it runs does")
        if _is_shell(name) and any(
            w in ("--rcfile", "--init-file") and (v is None or _reads_input(v))
            for w, v in itertools.pairwise([*rest, None])
        ):
            self.problems.append(f"`{name}` runs a start-up file it reads from input")
        for code in codes:
            if code is None:
                self.problems.append(f"`{name}` runs text computed at run time")
            else:
                self.parse(code, depth + 1)
        if nested == "":
            self.problems.append(f"`{name}` runs text computed at run time")
            return
        if nested == "-":  # a heredoc, a pipe, a file: what it runs is not in the text
            self.problems.append(f"`{name}` runs a script it reads from its input")
        elif nested is not None:
            self.parse(nested, depth + 1)
            return
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
        if base == "git" and (skip := _git_options(values[start + 1 :])):
            variants.append(" ".join(["git", *shown[start + 1 + skip :]]))  # `git -C x push`
        if base == "git":
            given = _git_code(values[start + 1 + _git_options(values[start + 1 :]) :])
            for code in given or ():  # (`git rebase -x 'npm test'`: checked as a command)
                self.parse(code, depth + 1)
            if problem := _git_runs(values[start + 1 :], subcommand=given is None):
                self.problems.append(problem)
        after, after_shown = values[start + 1 :], shown[start + 1 :]
        chroot = base in ("sudo", "doas") and any(
            w is not None and (w.startswith("--chroot") or "-R" in short_options(w, "ughpCDRTU"))
            for w in after
        )  # (`sudo -R DIR`: another root)
        for words, texts, appended in runner_commands(base, after, after_shown):
            own = range(len(after) - len(words)) if base != "find" else range(0)
            if any(may_vanish(after[k], after_shown[k]) for k in own):
                self.problems.append(MOVED_PROBLEM.format(base))  # `sudo -u $(f) root rm`
            inner = self._inner(depth)  # `sudo …`, `xargs …`: read as a command of its own
            if inner is None:
                break
            inner.simple(words, texts, [], depth + 1)
            self._take_runner(inner, "root" if chroot else "kept", variants, opens, appended)
        runner = COMMAND_RUNNERS.get(base)
        read = read_runner(base, after, after_shown)
        if read.unclear is not None:
            self.problems.append(read.unclear)
        place: Place = runner.place if runner else "moved"
        for index in read.starts:  # `uv run …`, `npx …`, `strace …`
            inner = self._inner(depth)
            if inner is None:
                break
            inner.simple(list(after[index:]), list(after_shown[index:]), [], depth + 1)
            self._take_runner(inner, place, variants, opens)
        for code in read.scripts:  # `su -c TEXT`, `sg GROUP TEXT`, `npx -c TEXT`
            inner = self._inner(depth) if code is not None else None
            if code is None:
                self.problems.append(f"`{base}` runs text computed at run time")
            elif inner is not None:
                inner.parse(code, depth + 1)
                self._take_runner(inner, place, variants, opens)
        self.commands.append(
            SimpleCommand(text, tuple(wrappers), tuple(variants), tuple(dict.fromkeys(opens)))
        )

    def moved_by(self, names_cdpath: bool) -> tuple[tuple[str, tuple[str | None, ...]], ...]:
        """:attr:`ParsedCommand.moved_by`: for each write target, the ``cd``s that may run
        before it (``names_cdpath``: the text names ``CDPATH``, which may take a relative
        ``cd`` elsewhere)."""
        searched = names_cdpath or self.sets_cdpath
        found: dict[str, list[str | None]] = {}
        if len(self.cds) > MAX_PLACES:  # (each pair is checked: computed, past a limit)
            return tuple((t, (None,)) for t in dict.fromkeys(t for t, _ in self.write_sites))
        for target, write in self.write_sites:
            moves = found.setdefault(target, [])
            for move, directory in self.cds:
                if not move.precedes(write):
                    continue
                if directory is not None and searched and _searched(directory):
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
        return _Walker(self.readings)

    def _take_runner(
        self,
        inner: _Walker,
        place: Place,
        variants: list[str],
        opens: list[str],
        appended: bool = False,
    ) -> None:
        """Take in what a runner runs, read by ``inner``: its commands are variants of the
        runner's (with an open end where the runner appends words: ``xargs``); its writes
        count as written where the runner keeps the directory, ``HOME`` and root
        (``sudo``, ``flock``), only absolute ones where it may move the first two (``uv
        run``, ``su``, ``direnv exec``), none where it may change the root (``chroot``)."""
        inner.settle()
        self.problems += inner.problems
        self.reads += inner.reads
        self.computed_writes += inner.computed_writes
        for target in inner.writes:
            self.writes.append(target)
            if place == "root" or (place == "moved" and not target.startswith("/")):
                self.computed_writes.append(target)
        self.write_sites += [(t, _Site(None, 0, True)) for t, _ in inner.write_sites]
        if place == "kept":
            self.moves = self.moves or inner.moves
            self.sets_home = self.sets_home or inner.sets_home
            self.sets_cdpath = self.sets_cdpath or inner.sets_cdpath
            self.cds += [(_Site(None, 0, True), None) for _ in inner.cds]
        for command in inner.commands:
            variants += [command.text, *command.variants]
            opens += [*command.open_prefixes, *([command.text + " "] if appended else [])]


SYSTEM_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"})


def _wrapper(word: str | None) -> bool:
    """A wrapper's name, or its path in a system directory (``./nice`` is a script)."""
    if word is None or "/" not in word:
        return word in WRAPPERS
    folder = os.path.normpath(os.path.dirname(word))  # (`/usr/bin/../bin/env`)
    return folder.replace("//", "/") in SYSTEM_DIRS and os.path.basename(word) in WRAPPERS


def _named_variables(name: str, rest: Sequence[str | None]) -> list[str | None]:
    """The words of a builtin that name variables (see ``_Walker._names``)."""
    if name in ("test", "[", "printf", "wait"):  # after `-v` (`wait -p`), or attached
        flag = "-p" if name == "wait" else "-v"
        given = [rest[i + 1] for i, w in enumerate(rest[:-1]) if w == flag]
        attached = name in ("printf", "wait")  # (`printf -vNAME`)
        return given + [w[2:] for w in rest if attached and w and w.startswith(flag) and w != flag]
    if name == "getopts":
        return list(rest[1:2])
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


_PLAIN_ELEMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[A-Za-z0-9_@*]*\]")
"""``a[0]``, ``a[b]`` unquoted: a name and its subscript, not a glob."""


def _name(node: Any, data: bytes) -> str | None:
    """A word naming a variable as bash reads it (``x``, ``'a[1]'``; a subscript the
    grammar read is its text: its expressions are checked as arithmetic), or None."""
    text = _text(node, data)
    if node.type in ("variable_name", "subscript") or _PLAIN_ELEMENT.fullmatch(text):
        return text
    return _literal(node, data)


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_BODIES = frozenset({"do_group", "compound_statement"})


def _arithmetic_use(node: Any, data: bytes) -> str | bool:
    """What a node of an arithmetic expression evaluates: the name of a variable (whose
    value bash evaluates as arithmetic in turn), True for a value that cannot be followed
    (a positional parameter, an expansion that transforms a value, a substitution's
    output, text with letters), False for none (a number, ``$?``, a length, a part
    whose own nodes say)."""
    kind = node.type
    text = _text(node, data)
    if kind in ("variable_name", "word"):
        expanded = node.parent is not None and node.parent.type in ("simple_expansion", "expansion")
        if (not expanded and _NUMERIC_WORD.fullmatch(text)) or text in ("@", "*"):
            return False  # (`${a[@]}` is every element: no arithmetic)
        return text if _IDENTIFIER.fullmatch(text) else True
    if kind == "simple_expansion":  # (its variable_name says which)
        special = [c for c in node.children if c.type == "special_variable_name"]
        return bool(special) and _text(special[0], data) not in NUMERIC_SPECIALS
    if kind == "expansion":  # `${n}` (its variable_name says), `${#n}`: a number
        inner = [c.type for c in node.children[1:-1]]
        return inner not in (["variable_name"], ["#", "variable_name"], ["#", "subscript"])
    if kind in _SUBSTITUTIONS:  # its output is evaluated (`$(( $(cat f) ))`)
        return True
    if kind == "string":  # `"$n"`: its expansions say; text in it is evaluated
        return any(
            c.type == "string_content" and re.search(r"[A-Za-z_]", _text(c, data))
            for c in node.children
        )
    if kind == "raw_string":  # (`z["d"]`: a name, for an indexed array)
        return bool(re.search(r"[A-Za-z_]", text))
    return False


def _numeric_value(node: Any, data: bytes) -> bool:
    """Whether an assigned value is a number (a literal one, ``$((…))``, ``$?``, ``$#``,
    a length, or ``"$((…))"``); no value (``n=``) is 0."""
    if node is None:
        return True
    kind = node.type
    if kind == "string":
        parts = [c for c in node.children if c.is_named]
        return len(parts) == 1 and _numeric_value(parts[0], data)
    if kind == "arithmetic_expansion":
        return True
    if kind == "simple_expansion":
        special = [c for c in node.children if c.type == "special_variable_name"]
        return bool(special) and _text(special[0], data) in NUMERIC_SPECIALS
    if kind == "expansion":  # a length
        return len(node.children) > 2 and node.children[1].type == "#"
    literal = _literal(node, data)
    return literal is not None and bool(_NUMBER.fullmatch(literal))


def _counted(node: Any, data: bytes) -> bool:
    """A word of ``for``'s list that is a number, or a brace expansion of numbers."""
    if node.type == "brace_expression":
        return all(c.type in ("{", "}", "..", "number") for c in node.children)
    return bool(_NUMBER.fullmatch(_literal(node, data) or "x"))


def _expansion_name(node: Any, data: bytes) -> str:
    names = [c for c in node.children if c.type in ("variable_name", "subscript")]
    return _text(names[0], data).split("[", 1)[0] if names else ""


def _literal_assignment(node: Any, data: bytes) -> str | None:
    """``NAME=value`` when the value is literal (quotes removed), else None."""
    parts = [c for c in node.children if c.is_named]
    if not parts:
        return None
    name = _text(parts[0], data)
    if len(parts) == 1:
        return f"{name}="
    value = _literal(parts[-1], data)
    return None if value is None else f"{name}={value}"


def _harmless(assignment: str) -> bool:
    name = assignment.split("=", 1)[0]
    return name in SAFE_ASSIGNMENTS or name.startswith("LC_")


def _text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")


def _squeeze(text: str) -> str:
    return " ".join(text.split())


_PLAIN_WORD = re.compile(r"[^\s$`\\'\"*?\[\]{}~]*")
_PATTERN = re.compile(r"(?<!\\)[*?\[]")
"""An unescaped glob character: the word becomes the names it matches."""
_BRACES = re.compile(r"(?<!\\)\{[^{}]*(?:,|\.\.)[^{}]*\}")
"""A brace expansion (quotes may be inside: `{"/etc/passwd",}`; a quoted comma makes
none, which counts as one all the same)."""
_TILDE = re.compile(r"~[A-Za-z0-9._+-]*(/|$)")
"""A word that starts with a tilde bash expands: its prefix up to the first slash
unquoted."""


def _literal(node: Any, data: bytes) -> str | None:
    """A word's value when it has no expansion (quotes removed), else None."""
    kind = node.type
    text = _text(node, data)
    if kind in ("word", "number"):
        if _PLAIN_WORD.fullmatch(text):
            return text
        if "$" in text or "`" in text or _PATTERN.search(text):
            return None  # expanded or matched against file names when it runs
        return re.sub(r"\\(.)", r"\1", text)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        parts = [c for c in node.children if c.is_named]
        if any(c.type != "string_content" for c in parts):
            return None
        return re.sub(r'\\([$`"\\\n])', r"\1", text[1:-1])
    if kind == "concatenation":
        if _BRACES.search(text):  # `{push,}`, `{a..c}`: brace expansion
            return None
        values = [_literal(c, data) for c in node.children]
        return None if any(v is None for v in values) else "".join(v or "" for v in values)
    return None


SHELL_OPTIONS_WITH_VALUE = frozenset({
    "-o", "+o", "-O", "+O", "--rcfile", "--init-file", "--emulate",
})  # fmt: skip
STDIN_PATHS = re.compile(r"-|/dev/stdin|/dev/fd/\d+|/proc/(self|thread-self|\d+)/fd/\d+")
"""A script path that is the shell's own input (a pipe, a here-string, a heredoc)."""


def _reads_input(path: str) -> bool:
    """Whether a script path is the shell's input, however spelled (``//dev/stdin``,
    ``/dev/./stdin``), or something of its own process (``/proc/net/../fd/0``)."""
    if path == "-":
        return True
    absolute = os.path.join("/", path) if path.startswith("/") else None
    if absolute is None:
        return False
    normal = _normalized(absolute)
    return (
        STDIN_PATHS.fullmatch(normal) is not None
        or _PER_PROCESS.search(absolute) is not None
        or _followed(absolute) is None
    )


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
    if _BRACES.search(words[0]):  # (`cd {../etc,}` is `cd ../etc`)
        return None
    return words[0]


def _abbreviates(word: str | None, option: str) -> bool:
    """Whether ``word`` is the long ``option``, or a prefix of it getopt takes for it
    (``--ch`` for ``--chdir``; ``--split=TEXT``)."""
    flag = (word or "").split("=", 1)[0]
    return len(flag) > 3 and flag.startswith("--") and option.startswith(flag)


def _changes_directory(
    name: str, wrappers: Sequence[str], before: Sequence[str | None], rest: Sequence[str | None]
) -> bool:
    """Whether a command runs (what follows) in another directory: ``cd``, ``pushd``,
    ``popd``, ``env -C``, ``sudo -D``, ``find -execdir``."""
    if name in DIRECTORY_CHANGES:
        return True
    words = [*before, *rest]
    chdir = any(w is not None and (_abbreviates(w, "--chdir") or "-C" in short_options(w, "uCS"))
                for w in words)  # fmt: skip
    if chdir and ("env" in wrappers or name == "env"):
        return True
    if name in ("sudo", "doas") and any(w is not None and (w.startswith("-D") or _abbreviates(w, "--chdir"))
                                        for w in rest):  # fmt: skip
        return True
    return name == "find" and any(w in ("-execdir", "-okdir") for w in rest)


GIT_OPTIONS_WITH_VALUE = frozenset({
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
})  # fmt: skip


def _git_options(rest: Sequence[str | None]) -> int:
    """How many of git's words are its own options, before its subcommand (``git -C dir
    --no-pager push`` runs ``git push``)."""
    i = 0
    while i < len(rest) and (word := rest[i]) is not None and word.startswith("-"):
        i += 2 if word in GIT_OPTIONS_WITH_VALUE else 1
    return min(i, len(rest))


def _split_string(words: Sequence[str | None]) -> str | None:
    """The command line ``env -S TEXT WORDS…`` runs (``-vS``, ``-STEXT``,
    ``--split-string=TEXT`` too), or None when a word of it is known only as it runs."""
    for index, word in enumerate(words):
        if word is None:
            return None
        options = short_options(word, "uCSP")
        if _abbreviates(word, "--split-string") or options[-1:] == ["-S"]:
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
}  # fmt: skip
"""git subcommands (and their words) that run a command given to them."""
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
TAR_COMMANDS = ("--to-command", "--use-compress-program", "--rsh-command", "--info-script",
                "--new-volume-script", "--checkpoint-action")  # fmt: skip


def _tar_command(words: Sequence[str | None], index: int) -> str | None:
    """The command ``tar``'s word ``index`` gives it to run ("" for none; None when it
    is computed): ``--to-command=CMD``, ``-I CMD``, ``--checkpoint-action=exec=CMD``."""
    word = words[index]
    if word is None:
        return ""
    value: str | None = ""
    if index == 0 and not word.startswith("-"):  # old style, `tar cIf CMD out f`: each
        taken = 0  # letter that takes a value takes the next word, in order
        for letter in word:
            taken += letter in TAR_VALUED
            if letter in "IF":
                return words[taken] if taken < len(words) else ""
        return ""
    if word.startswith("--") and any(_abbreviates(word, o) for o in TAR_COMMANDS):
        value = (
            word.split("=", 1)[1]
            if "=" in word
            else words[index + 1]
            if index + 1 < len(words)
            else ""
        )
        if value is not None and _abbreviates(word, "--checkpoint-action"):
            value = value[len("exec=") :] if value.startswith("exec=") else ""
    elif word.startswith("-") and not word.startswith("--") and ("I" in word or "F" in word):
        at = word.index("I") if "I" in word else word.index("F")
        value = word[at + 1 :] or (words[index + 1] if index + 1 < len(words) else "")
    return value


def _rejoined(values: Sequence[str | None], shown: Sequence[str]) -> str:
    """Words as a command line again: literal ones quoted, computed ones as written."""
    return " ".join(shown[i] if v is None else shlex.quote(v) for i, v in enumerate(values))


def _git_code(words: Sequence[str | None]) -> list[str] | None:
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


def _git_runs(rest: Sequence[str | None], subcommand: bool = True) -> str | None:
    """Why ``git REST`` may run a command its words do not name: configuration given
    on its command line that may name one (``-c alias.p=push``, ``-c
    core.fsmonitor=CMD``, ``help.autocorrect``; ``-c user.name=…`` is fine), another
    ``--exec-path``, such configuration set for later (``git config alias.p push``), or a
    subcommand that runs one (``rebase -x CMD``, ``fetch --upload-pack=CMD``)."""
    skip = _git_options(rest)
    for index, word in enumerate(rest[:skip]):
        flag = (word or "").split("=", 1)[0]
        if flag == "-c" or flag == "--config-env":
            setting = rest[index + 1] if "=" not in (word or "") else (word or "").split("=", 1)[1]
            if _git_setting_runs(None if setting is None else setting.split("=", 1)[0]):
                return "git runs what configuration given to it may name (`-c alias.p=push`)"
        elif flag == "--exec-path" and "=" in (word or ""):
            return "git runs its commands from another `--exec-path`"
    words = list(rest[skip:])
    if words[:1] == ["clone"]:  # (`git clone -c core.sshCommand=CMD`: set, then used)
        for index, word in enumerate(words[1:], 1):
            if _abbreviates(word, "--template"):  # (its hooks run at the checkout)
                return "git runs hooks from the template directory given to it"
            if word == "-c" or (_abbreviates(word, "--config") and "=" not in (word or "")):
                given = words[index + 1] if index + 1 < len(words) else ""
            elif word is not None and (word.startswith("-c") or _abbreviates(word, "--config")):
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
        return None  # (a subcommand's command checked as one: see _git_code)
    signs = [s for s in GIT_RUNS[words[0] or ""] if s]
    for word in words[1:]:
        if word is None:  # (`git rebase $X CMD`: `$X` may be `-x`)
            if words[0] not in GIT_TRANSFERS:
                return f"`git {words[0]}` runs a command given to it"
            continue
        flag = word.split("=", 1)[0]
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


def _code_arguments(name: str, rest: Sequence[str | None]) -> list[str | None]:
    """Shell code a builtin takes as an argument and runs later (None: computed at run
    time): ``trap CODE SIGNAL…``, ``mapfile -C CODE``, ``alias NAME=CODE``."""
    words = list(rest)
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
    if name == "tar":  # the commands its options name (`--to-command`, `-I zstd`)
        return [code for i, word in enumerate(words) if (code := _tar_command(words, i)) != ""]
    if name in ("compgen", "complete"):  # `-C CODE`: run to find the words
        found = []
        for i, word in enumerate(words):
            if word is None or (word.startswith("-") and "C" in word[1:]):
                after = None if word is None else word[word.index("C") + 1 :]
                found.append(after or (words[i + 1] if i + 1 < len(words) else None))
        return found
    return []


def _nested_script(name: str, rest: Sequence[str | None]) -> str | None:
    """The script ``bash -c TEXT`` or ``eval TEXT…`` runs ("" when it is computed, "-"
    when the shell reads it from its input), or None when ``name`` runs no script text
    (``bash script.sh``: a command like any other)."""
    if name == "eval":
        rest = rest[1:] if rest[:1] == ["--"] else rest
        return "" if any(w is None for w in rest) else " ".join(w or "" for w in rest)
    if not _is_shell(name):
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
    if i >= len(rest) or (rest[i] is not None and _reads_input(rest[i] or "")):
        return "-"  # no script file: the shell reads its input
    return "" if rest[i] is None else None


# --- rules ----------------------------------------------------------------------------

_RULE = re.compile(r"^(Bash|Write)(?:\((.*)\))?$", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """One rule: ``Bash(pattern)`` (a command's text) or ``Write(path glob)``."""

    text: str
    kind: Literal["Bash", "Write"]
    regex: Any
    """A compiled RE2 pattern: linear time whatever the rule and the command."""
    pattern: str = "*"
    """The rule's pattern, as written (blanks squeezed)."""

    @classmethod
    def parse(cls, text: str) -> Rule:
        if not isinstance(text, str):
            raise InvalidInputError(f"a permission rule must be text, not {text!r}")
        match = _RULE.fullmatch(text.strip())
        if match is None:
            raise InvalidInputError(
                f"permission rule {text!r} is not Bash(…) or Write(…) (for example "
                "Bash(git push *), Bash(npm run test:*), Write(/etc/**))"
            )
        kind: Literal["Bash", "Write"] = "Bash" if match[1] == "Bash" else "Write"
        pattern = match[2]
        if pattern is None or pattern.strip() in ("", "*", "**"):
            return cls(text, kind, _compile(EVERYTHING))
        if kind == "Bash":
            squeezed = _squeeze(pattern)
            return cls(text, kind, _compile(_command_regex(squeezed)), squeezed)
        spellings = _write_patterns(pattern.strip())
        regex = "|".join(f"(?:{_path_regex(spelled)})" for spelled in spellings)
        return cls(text, kind, _compile(regex), pattern)

    def matches(self, value: str) -> bool:
        return self.regex.fullmatch(value) is not None

    def may_match_after(self, prefix: str) -> bool:
        """Whether a command starting with ``prefix`` and going on with words known only
        at run time could match this Bash rule (a slight overestimate: ``Bash(git push
        *)`` counts as ``git push*``)."""
        if self.kind != "Bash":
            return False
        if self.matches_everything:
            return True
        pattern = self.pattern
        if pattern.endswith((":*", " *")):
            pattern = pattern[:-2] + "*"
        if "*" not in pattern:  # the run-time words may also expand to nothing
            return pattern.startswith(prefix) or pattern == prefix.rstrip()
        head = pattern.split("*", 1)[0]
        return head.startswith(prefix) or prefix.startswith(head)

    @property
    def matches_everything(self) -> bool:
        return bool(self.regex.pattern == EVERYTHING)


EVERYTHING = r"[\s\S]*"


def _compile(pattern: str) -> Any:
    import re2  # google-re2: no backtracking, so no rule makes a check slow

    return re2.compile(pattern)


def _command_regex(pattern: str) -> str:
    if pattern.endswith(":*"):  # the older prefix form: any command starting so
        return re.escape(pattern[:-2]) + r"[\s\S]*"
    tail = ""
    if pattern.endswith(" *"):  # `git push *` matches `git push` too
        pattern, tail = pattern[:-2], r"(?: [\s\S]*)?"
    parts = [re.escape(part) for part in pattern.split("*")]
    return r"[\s\S]*".join(parts) + tail


def _write_patterns(pattern: str) -> list[str]:
    """The absolute path globs a ``Write(…)`` pattern stands for: ``~/…`` in the home
    directory; a relative one (``.env``, ``./config/*.yml``) at any depth, as in a
    ``.gitignore`` (the commands' directories vary); and, where the directory before its
    first wildcard leads through a link, that directory as the link leads too
    (``Write(/bin/**)`` is ``/usr/bin/**`` where ``/bin`` is a link to it): a written
    path is matched with its links followed. Each was a rule that never matched (a
    review)."""
    if pattern == "~" or pattern.startswith("~/"):
        pattern = os.path.expanduser("~") + pattern[1:]
    elif not pattern.startswith("/"):
        pattern = "/**/" + pattern.removeprefix("./")
    pattern = _normalized(pattern) + ("/" if pattern.endswith("/") and pattern != "/" else "")
    wild = min((i for i, c in enumerate(pattern) if c in "*?"), default=len(pattern))
    folder = pattern[: pattern.rfind("/", 0, wild) + 1] or "/"
    real = os.path.realpath(folder).rstrip("/") + "/"
    return [pattern] if real == folder else [pattern, real + pattern[len(folder) :]]


def _path_regex(pattern: str) -> str:
    out = []
    for token in re.split(r"(\*\*/?|\*|\?)", pattern):
        if token in ("**", "**/"):
            out.append(r"(?:[\s\S]*/)?" if token == "**/" else r"[\s\S]*")
        elif token == "*":
            out.append(r"[^/]*")
        elif token == "?":
            out.append(r"[^/]")
        else:
            out.append(re.escape(token))
    return "".join(out)


@dataclass(frozen=True)
class RuleSet:
    """``allow``, ``ask`` and ``deny`` rules."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    origin: str = "the rules"
    """Where they came from (a file), named in messages."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], origin: str = "the rules") -> RuleSet:
        """From ``{"allow": [...], "ask": [...], "deny": [...]}``, also nested under
        ``permissions`` (Claude Code's settings.json shape)."""
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"{origin}: permission rules must be an object")
        if "permissions" in data and isinstance(data["permissions"], Mapping):
            data = data["permissions"]
        unknown = set(data) - set(VERDICTS)
        if unknown:
            raise InvalidInputError(
                f"{origin}: unknown key(s) {sorted(unknown)}; use allow, ask and deny"
            )
        lists: dict[str, tuple[Rule, ...]] = {}
        for verdict in VERDICTS:
            items = data.get(verdict, [])
            if not isinstance(items, list):
                raise InvalidInputError(f"{origin}: {verdict} must be a list of rules")
            lists[verdict] = tuple(Rule.parse(item) for item in items)
        return cls(lists["allow"], lists["ask"], lists["deny"], origin)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RuleSet:
        """A TOML or JSON rules file (by its suffix; JSON if it starts with ``{``)."""
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"cannot read the rules file {file}: {exc}") from None
        try:
            if file.suffix == ".json" or text.lstrip().startswith("{"):
                data = json.loads(text)
            else:
                import tomllib

                data = tomllib.loads(text)
        except ValueError as exc:
            raise InvalidInputError(f"the rules file {file} is not valid: {exc}") from None
        return cls.from_mapping(data, str(file))

    def to_json(self) -> dict[str, list[str]]:
        return {v: [r.text for r in getattr(self, v)] for v in VERDICTS}

    def decide(
        self,
        parsed: ParsedCommand,
        cwd: str = "/",
        home: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Decision:
        """The verdict for a parsed command: deny if any part is denied, else ask if any
        part asks or is allowed by no rule (or cannot be checked), else allow. ``home``:
        the command's ``HOME``, for its ``~/`` targets (else this process's); ``env``:
        its environment, for a ``CDPATH`` where a ``cd`` may look first and a ``BASH_ENV``
        file its shell runs first (which may change directory or ``HOME``)."""
        env = env or {}
        if env.get("BASH_ENV"):
            parsed = replace(parsed, moves=True, sets_home=True, reads=(*parsed.reads, None))
        cdpath = env.get("CDPATH")
        verdicts: list[Decision] = []
        for command in parsed.commands:
            verdicts.append(self._command(command))
        writes_ruled = any(r.kind == "Write" for r in (*self.deny, *self.ask))

        moved_by = dict(parsed.moved_by)

        def paths_of(target: str | None, reopens: bool = False) -> list[str] | None:
            paths = _paths_of(target, reopens)
            own = os.path.expanduser("~")  # (`Write(~/…)` rules are in it)
            if paths is None or not home or home.rstrip("/") == own.rstrip("/"):
                return paths
            inside = [own + p[len(home.rstrip("/")) :] for p in paths if _inside(p, home)]
            return list(dict.fromkeys([*paths, *inside]))  # (the command's own `~` too)

        def _paths_of(target: str | None, reopens: bool = False) -> list[str] | None:
            if target is None or target in parsed.computed_writes:
                return None
            if target.startswith("~") and parsed.sets_home:
                return None  # (a `~/` one of a command that may set HOME)
            if target.startswith(("/", "~")):
                return _write_paths(target, cwd, home, reopens)
            places = None if parsed.moves else _places(cwd, moved_by.get(target, ()), cdpath)
            if places is None:  # (after a `cd` to a directory known only as it runs)
                return None
            found = [_write_paths(target, place, home, reopens) for place in places]
            if any(paths is None for paths in found):
                return None
            return list(dict.fromkeys(p for paths in found for p in paths or ()))

        # Writing a descriptor's path opens what it is again: one of the files opened for
        # reading, which must then be one a Write rule lets it write.
        reopens = any(
            (paths := paths_of(read)) is None or self._write(paths) is not None
            for read in parsed.reads
        )
        for target in parsed.writes:
            paths = paths_of(target, reopens)
            if paths is None:
                if writes_ruled:
                    verdicts.append(Decision("ask", f"it writes to a computed path `{target}`"))
                continue
            decided = self._write(paths)
            if decided is not None:
                verdicts.append(decided)
        if parsed.problems and not self._allows_anything():
            verdicts.append(Decision("ask", f"it cannot be checked: {parsed.problems[0]}"))
        if not verdicts:
            return Decision("allow", "it runs no command")
        # The strictest; among asks, the one that says most: a rule's, then why the
        # command cannot be checked, then that no rule allows it.
        worst = max(verdicts, key=lambda d: (_RANK[d.verdict], 2 if d.rule else d.subject is None))
        if worst.verdict == "allow":
            rules = sorted({d.rule for d in verdicts if d.rule})
            return Decision("allow", "allowed by " + ", ".join(rules), ", ".join(rules))
        return worst

    def _allows_anything(self) -> bool:
        """``Bash(*)`` allowed with no rule to deny or ask: nothing to check for (with a
        Write rule, a command that cannot be checked may write anywhere)."""
        everything = any(r.kind == "Bash" and r.matches_everything for r in self.allow)
        return everything and not (self.deny or self.ask)

    def _command(self, command: SimpleCommand) -> Decision:
        readings = (command.text, *command.variants)
        for verdict in ("deny", "ask"):
            for rule in getattr(self, verdict):
                for text in readings:
                    if rule.kind == "Bash" and rule.matches(text):
                        return Decision(verdict, f"`{text}` matches {verdict} rule {rule.text}",
                                        rule.text, subject=text)  # fmt: skip
        for verdict in ("deny", "ask"):
            for rule in getattr(self, verdict):
                for prefix in command.open_prefixes:
                    if rule.may_match_after(prefix):
                        reason = (
                            f"`{command.text}` could match {verdict} rule {rule.text}: its "
                            f"words after `{prefix.rstrip()}` are only known when it runs"
                        )
                        return Decision("ask", reason, rule.text, subject=command.text)
        for rule in self.allow:
            if rule.kind == "Bash" and rule.matches(command.text):
                return Decision("allow", f"`{command.text}` matches allow rule {rule.text}",
                                rule.text, subject=command.text)  # fmt: skip
        return Decision("ask", f"no rule allows `{command.text}`", subject=command.text)

    def _write(self, paths: Sequence[str]) -> Decision | None:
        for verdict in ("deny", "ask"):
            for rule in getattr(self, verdict):
                for path in paths:
                    if rule.kind == "Write" and rule.matches(path):
                        return Decision(verdict, f"writing {path} matches {verdict} rule "
                                        f"{rule.text}", rule.text, subject=path)  # fmt: skip
        return None


MAX_PLACES = 64
"""Directories a command's ``cd``s may leave it in, at most, for its writes to be checked."""


def _places(cwd: str, directories: Sequence[str | None], cdpath: str | None) -> list[str] | None:
    """Each directory a command may be in after ``cd``s to ``directories`` (each may
    fail, or not run: ``cd a || cd b``); None when one is known only as it runs: as
    written there, or one ``CDPATH`` may find
    elsewhere, or one that does not exist as a directory now (made as the command runs,
    perhaps as a link), or one that a physical ``cd`` (``cd -P``, ``set -P``, bash's
    fallback when the path as written does not exist) would find elsewhere (``link/..``)."""
    places = [cwd]
    for directory in directories:
        if directory is None or (cdpath and _searched(directory)):
            return None
        moved = []
        for place in places:
            logical = _normalized(os.path.join(place, directory))
            written = os.path.join(os.path.realpath(place), directory)  # (`a/link/..`)
            if not (os.path.isdir(logical) and os.path.isdir(written)):
                return None
            if os.path.realpath(logical) != os.path.realpath(written):
                return None
            moved.append(logical)
        places = list(dict.fromkeys([*places, *moved]))
        if len(places) > MAX_PLACES:
            return None
    return places


def _normalized(path: str) -> str:
    """``path`` with ``..`` resolved and repeated slashes as one (``//etc`` is ``/etc``)."""
    path = os.path.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("/") else path


def _inside(path: str, folder: str) -> bool:
    return path == folder.rstrip("/") or path.startswith(folder.rstrip("/") + "/")


def _write_paths(
    target: str | None, cwd: str, home: str | None = None, reopens: bool = False
) -> list[str] | None:
    """The paths a written target names: as written (resolved against ``cwd``, ``~/``
    against ``home``) and with its links followed as this machine has them (each before
    the ``..`` after it, as the kernel reads ``link/..``); None when it is computed at
    run time (``/proc/self/…`` and ``/dev/fd/N/…`` included, and links to them: they are
    the command's). A descriptor's own path (``/dev/stderr``, ``/dev/fd/3``) is the
    command's log, ``/dev/null`` or terminal; with ``reopens`` (the command opens files
    for reading on descriptors, ``3< /etc/passwd``) it is computed: writing it opens that
    file again, for writing."""
    if target is None or "$" in target or "`" in target or _PATTERN.search(target):
        return None  # (a glob in a target is expanded as it runs: `> /etc/pass?d`)
    if target.startswith(("~+", "~-")) or (target.startswith("~") and target[1:2].isdigit()):
        return None  # ($PWD, $OLDPWD and the directory stack)
    if home is not None and (target == "~" or target.startswith("~/")):
        target = home + target[1:]
    elif target.startswith("~"):
        target = os.path.expanduser(target)
    path = os.path.join(cwd, target)
    written = _normalized(path)
    if _DESCRIPTOR.fullmatch(written):
        return None if reopens else [written]
    if _PER_PROCESS.search(path):
        return None  # (the command's own descriptors and directories, not ours)
    real = _followed(path)
    if real is None or _has_other_names(real):
        return None
    return list(dict.fromkeys([written, _normalized(real)]))


def _has_other_names(path: str) -> bool:
    """Whether ``path`` is a file with hard links elsewhere (``ln /etc/passwd x``): one
    of its names may be one a rule protects, and only the kernel knows them."""
    try:
        found = os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(found.st_mode) and found.st_nlink > 1


MAX_LINKS = 40
"""Links followed in one path before it counts as a loop (the kernel's limit)."""


def _followed(path: str) -> str | None:
    """Absolute ``path`` with each link followed as the kernel does (each before the
    ``..`` after it); None when it reaches, at any step, something of the process that
    opens it (``/proc/self``, ``/proc/PID``: through ``..`` or a link such as
    ``/proc/net`` or ``/dev/stdout``; the command's, not this process's), or links loop.
    What does not exist is taken as written."""
    done = "/"
    left = [part for part in path.split("/") if part]
    links = 0
    while left:
        if _IN_PROCESS.match(done):  # (reached through `..` or a link: `/proc/net`)
            return None
        part = left.pop(0)
        if part == ".":
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, part)
        try:
            target = os.readlink(here)
        except (OSError, ValueError):  # not a link, or nothing there (yet)
            done = here
            continue
        links += 1
        if links > MAX_LINKS:
            return None
        if target.startswith("/"):
            done = "/"
        left[:0] = [p for p in target.split("/") if p]
    return None if _IN_PROCESS.match(done) else done


_IN_PROCESS = re.compile(r"/proc/(self|thread-self|\d+)(/|$)")
"""A resolved path in the process that opens it (or another's): not this process's."""


_DESCRIPTOR = re.compile(
    r"/+(dev/+(fd/+\d+|stdin|stdout|stderr)|proc/+(self|thread-self)/+fd/+\d+)"
)
"""A descriptor's own path (``fullmatch``, normalized): opening it opens what the
descriptor is, again (on Linux, not a copy of the descriptor)."""
_PER_PROCESS = re.compile(
    r"(^|/)(proc/+(\./+)*(self|thread-self|\d+)(/|$)"
    r"|dev/+(\./+)*(fd/+[^/]+|stdin|stdout|stderr)/)"
)
"""Paths through something of the process that opens them (``/proc/self/cwd``, the
directory ``/dev/fd/3/``), anywhere in the path (``/tmp/../proc/self``): followed here
they would be the supervisor's. (``/dev/stderr`` itself is a descriptor, no place.)"""


Hook = Callable[[ParsedCommand], Any]
"""``Client(permission=hook)``: receives the parsed command, returns ``"allow"``,
``"ask"`` or ``"deny"``, or ``(verdict, reason)``, or a :class:`Decision`."""


def hook_decision(hook: Hook, parsed: ParsedCommand) -> Decision:
    """Run a permission hook; what it returns becomes a decision (a bad answer denies)."""
    answer = hook(parsed)
    if isinstance(answer, Decision):
        return Decision(answer.verdict, answer.reason, answer.rule, "hook")
    reason = ""
    if isinstance(answer, tuple) and len(answer) == 2:
        answer, reason = answer
    if answer not in VERDICTS:
        return Decision("deny", f"the permission hook answered {answer!r}", None, "hook")
    return Decision(answer, str(reason or f"the permission hook answered {answer}"), None, "hook")


def strictest(decisions: Iterator[Decision] | Sequence[Decision]) -> Decision:
    return max(decisions, key=lambda d: _RANK[d.verdict])
