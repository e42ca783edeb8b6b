"""How tree-sitter-bash reads a command's text, and where that reading may differ from
bash's (:func:`grammar_misreads`): ``api.reading`` trusts a tree only where bash would
run what the tree shows. The node helpers give a word's value as bash would see it, or
None when it is known only as the command runs."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

from .errors import InvalidInputError
from .programs import is_shell
from .runners import (
    RUNNERS,
    SEARCHERS,
    WRAPPERS,
    command_runner,
)
from .shellwords import ansi_c_value


@lru_cache(maxsize=1)
def bash_parser() -> Any:
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError as exc:  # pragma: no cover - a dependency
        raise InvalidInputError(
            f"permission rules need tree-sitter-bash ({exc}): pip install tree-sitter-bash"
        ) from None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


MAX_DEPTH = 500
"""Levels of syntax (``$(``, ``(``, ``if``…) a command may nest to be checked (ask)."""


def deeper_than(root: Any, limit: int) -> bool:
    """Whether the syntax tree under ``root`` is more than ``limit`` nodes deep."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack += [(child, depth + 1) for child in node.children]
    return False


_EXPANDING = re.compile(r"(\\*)(`|\$\(|\$\[|\$\{)")
"""Where a here-document body expands: `` ` ``, ``$(``, ``$[`` (an odd run of
backslashes before one makes it plain text)."""


def unchecked_heredoc(node: Any, data: bytes) -> bool:
    """Whether an unquoted here-document's body expands something the grammar did not
    read as an expansion (it misses backquotes, and ``$(…)`` after ``<<-``'s tabs): bash
    runs those too."""
    start = next((c for c in node.children if c.type == "heredoc_start"), None)
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if start is None or body is None:
        return False
    if any(q in node_text(start, data) for q in "'\"\\"):  # quoted: the body is plain text,
        return any(continued_line(line) for line in node_text(body, data).split("\n"))  # not joined
    return unread_expansion(body, data, body.start_byte)


def continued_line(line: str) -> bool:
    """Whether a line ends in a backslash that is not itself escaped."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def unread_expansion(node: Any, data: bytes, after: int) -> bool:
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
    name = word_value(named.children[0] if named.children else named, data)
    base = os.path.basename(name or "").lstrip("=")  # (zsh's `=env`)
    return (
        name is None or "/" in name or base in WORDS_RUN or base in WRAPPERS or base in RUNNERS
        or base in SEARCHERS or command_runner(base) is not None or is_shell(base)
    )  # fmt: skip


def grammar_misreads(root: Any, data: bytes) -> str | None:
    """Why the grammar may have read ``data`` otherwise than bash, which then runs what
    the check did not see; None when nothing says so. The grammar skips as blanks what
    bash reads as part of a word (``\\r``, ``\\v``, Unicode spaces, an escaped blank
    before ``#``), joins lines bash ends (``git status ==⏎rm -f x``), splits words bash
    joins (``x=]\\; rm -f x``), and reads some here-document delimiters and nested
    backquotes otherwise: each leaves text between its tokens that bash would not skip,
    or none where bash needs some. Single quotes in a ``${…}`` within double quotes are
    quotes or plain text by its operator and bash's version (``"${x/'/'/}"`` ends at the
    first ``}`` for bash 5.2; the grammar read a quoted string on to a later ``'``, and
    every command between: a trial)."""
    stack = [root]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind == "heredoc_start" and not _DELIMITER.fullmatch(node_text(node, data)):
            return "a here-document delimiter quoted in part"
        if kind == "heredoc_redirect" and _read_past_its_end(node, data):
            return "a here-document the grammar reads past its end"
        if kind == "comment" and node.start_byte and data[node.start_byte - 1] not in _WORD_ENDS:
            return "a `#` inside a word"
        backquoted = kind == "command_substitution" and data[node.start_byte] == ord("`")
        if backquoted and b"\\`" in data[node.start_byte : node.end_byte]:
            return "backquotes nested in backquotes"
        if kind in ("string", "heredoc_body") and _quote_in_expansion(node, data):
            return "a single quote in a double-quoted `${…}`"
        if kind in _CONTENT:  # (what runs in it is read as any command: `"$(…)"`)
            stack += _substitutions(node) if kind in ("string", "heredoc_body") else []
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
                if split and (  # (`make --file=<(…)`: a word bash reads whole, the
                    child.type == "process_substitution"  # grammar as two, a review)
                    or _splits_what_runs(node, index, data)
                ):
                    return "two words where bash reads one"
            at = max(at, child.end_byte)
            stack.append(child)
        if node.children and not _BLANKS.fullmatch(data[at : node.end_byte]):
            return "characters it skips that bash does not"
    return None


def _substitutions(node: Any) -> list[Any]:
    """The command and process substitutions in ``node`` (not those nested in them)."""
    found, stack = [], list(node.children)
    while stack:
        child = stack.pop()
        if child.type in ("command_substitution", "process_substitution"):
            found.append(child)
        else:
            stack += child.children
    return found


def _read_past_its_end(heredoc: Any, data: bytes) -> bool:
    """Whether the grammar read a here-document on past the line that ends it for bash
    (a quote in `${…}` or `$(…)` of its body: `<<E⏎${x/'/'/}⏎E⏎rm x⏎echo '}'` hid the
    `rm`, a review), or ended it elsewhere."""
    start = next((c for c in heredoc.children if c.type == "heredoc_start"), None)
    body = next((c for c in heredoc.children if c.type == "heredoc_body"), None)
    end = next((c for c in heredoc.children if c.type == "heredoc_end"), None)
    if start is None or body is None:
        return False
    written = node_text(start, data)
    delimiter = re.sub(r"[\\'\"]", "", written.lstrip("-").strip())
    tabs = written.startswith("-") or node_text(heredoc, data).startswith("<<-")
    lines = node_text(body, data).split("\n")
    if any((line.lstrip("\t") if tabs else line) == delimiter for line in lines[1:]):
        return True
    return end is not None and node_text(end, data).lstrip("\t") != delimiter


def _quote_in_expansion(string: Any, data: bytes) -> bool:
    """Whether a double-quoted ``string`` holds a ``${…}`` with a single quote in it (not
    within a ``$(…)``, where quoting starts again)."""
    stack = list(string.children)
    while stack:
        node = stack.pop()
        if node.type == "expansion" and b"'" in data[node.start_byte : node.end_byte]:
            return True
        if node.type not in ("command_substitution", "process_substitution"):
            stack += node.children
    return False


def joined_lines(source: str) -> str:
    """``source`` with its line continuations removed, as bash reads them outside quotes
    (``git pu\\⏎sh`` is ``git push``; the grammar would see two words). A backslash
    that is itself escaped continues nothing. Bash continues no comment, nor a line in
    single quotes or a quoted here-document: the text is checked as the grammar reads it
    too (``api.reading``), so that a command either reading finds is checked."""
    return re.sub(r"(\\+)\n", lambda m: m[1][:-1] if len(m[1]) % 2 else m[0], source)


_PLAIN_ELEMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[A-Za-z0-9_@*]*\]")
"""``a[0]``, ``a[b]`` unquoted: a name and its subscript, not a glob."""


def name_word(node: Any, data: bytes) -> str | None:
    """A word naming a variable as bash reads it (``x``, ``'a[1]'``; a subscript the
    grammar read is its text: its expressions are checked as arithmetic), or None."""
    text = node_text(node, data)
    if node.type in ("variable_name", "subscript") or _PLAIN_ELEMENT.fullmatch(text):
        return text
    return word_value(node, data)


def literal_assignment(node: Any, data: bytes) -> str | None:
    """``NAME=value`` when the value is literal (quotes removed), else None."""
    parts = [c for c in node.children if c.is_named]
    if not parts:
        return None
    name = node_text(parts[0], data)
    if len(parts) == 1:
        return f"{name}="
    value = word_value(parts[-1], data)
    return None if value is None else f"{name}={value}"


def node_text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")


def squeeze(text: str) -> str:
    return " ".join(text.split())


_PLAIN_WORD = re.compile(r"[^\s$`\\'\"*?\[\]{}~]*")


GLOB = re.compile(r"(?<!\\)[*?\[]")
"""An unescaped glob character: the word becomes the names it matches."""


BRACES = re.compile(r"(?<!\\)\{[^{}]*(?:,|\.\.)[^{}]*\}")
"""A brace expansion (quotes may be inside: `{"/etc/passwd",}`; a quoted comma makes
none, which counts as one all the same)."""


TILDE = re.compile(r"~[A-Za-z0-9._+-]*(/|$)")
"""A word that starts with a tilde bash expands: its prefix up to the first slash
unquoted."""


_LOOSE_BRACES = re.compile(r"\{.*?(?:,|\.\.).*?\}", re.DOTALL)


def brace_expands(unquoted: str) -> bool:
    r"""Whether bash may brace-expand a word, given its text outside quotes: a ``{``, then
    a ``,`` or ``..``, then a ``}``, none of them escaped. Read loosely, as bash goes on
    past a ``}`` until it has seen a comma (``{a}b,c}`` is ``a}b c``) and a ``\{`` in it
    is no brace of its own (``{rm,x\{}`` is ``rm x{``): a word that does not expand is
    at worst read as computed (a review found both forms read as one literal word)."""
    return _LOOSE_BRACES.search(re.sub(r"\\.", "_", unquoted)) is not None


def unquoted_text(node: Any, data: bytes) -> str:
    """A word's text outside quotes and expansions (each of those as ``''``): where bash
    expands braces and globs."""
    if node.type in ("word", "number"):
        return node_text(node, data)
    if node.type == "concatenation":
        return "".join(unquoted_text(c, data) if c.type in ("word", "number") else "''"
                       for c in node.children)  # fmt: skip
    return "''"


def word_value(node: Any, data: bytes) -> str | None:
    """A word's value when it has no expansion (quotes removed), else None."""
    kind = node.type
    text = node_text(node, data)
    if kind in ("word", "number"):
        if _PLAIN_WORD.fullmatch(text):
            return text
        if "$" in text or "`" in text or GLOB.search(text) or brace_expands(text):
            return None  # expanded or matched against file names when it runs
        return re.sub(r"\\(.)", r"\1", text)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "ansi_c_string":
        return ansi_c_value(text)
    if kind == "string":
        parts = [c for c in node.children if c.is_named]
        if any(c.type != "string_content" for c in parts):
            return None
        return re.sub(r'\\([$`"\\\n])', r"\1", text[1:-1])
    if kind == "concatenation":
        # `{push,}`, `{a..c}`: brace expansion, read with its quoted parts left out (a
        # quoted `{` or `}` in it hid it: `{rm,'x{}'}` is `rm x{}`, a review)
        if brace_expands(unquoted_text(node, data)):
            return None
        values = [word_value(c, data) for c in node.children]
        return None if any(v is None for v in values) else "".join(v or "" for v in values)
    return None
