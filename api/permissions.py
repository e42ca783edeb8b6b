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
older form of ``Bash(npm run test *)``: ``npm run test`` alone or followed by a blank and
anything (not ``npm run testing``, as in Claude Code);
``Write(/etc/**)`` matches a
file a redirection writes (``*`` within a path segment, ``**`` across them; relative
paths are resolved against the command's directory, and each directory its ``cd``s may
take it to). Deny wins over ask, ask over allow;
a simple command no rule allows is ``ask``.

This module holds the rules; how a command is read is ``api.reading`` (with
``api.bashgrammar``, ``api.programs``, ``api.writes`` and ``api.linkpaths``).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from .bashgrammar import GLOB, squeeze
from .errors import InvalidInputError, error_text
from .linkpaths import (
    DESCRIPTOR,
    PER_PROCESS,
    UNREAD,
    has_other_names,
    links_followed,
    normal_path,
)
from .reading import (
    MAX_PLACES,
    Guard,
    ParsedCommand,
    SimpleCommand,
    cdpath_searched,
    harmless_assignment,
    parse_command,
    utf8_text,
)
from .runners import SEARCHERS
from .writes import DIFF_READ_LIMIT, PatchRead, diff_targets

__all__ = [
    "Decision",
    "Hook",
    "ParsedCommand",
    "Rule",
    "RuleSet",
    "SimpleCommand",
    "Verdict",
    "hook_decision",
    "parse_command",
    "strictest",
]


Verdict = Literal["allow", "ask", "deny"]


VERDICTS: tuple[Verdict, ...] = ("allow", "ask", "deny")


_RANK = {"allow": 0, "ask": 1, "deny": 2}


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
    unallowed: tuple[str, ...] = ()
    """An ask's simple commands that no rule allows."""
    suggested: tuple[str, ...] = ()
    """Allow rules that would let an ask's commands run (a refusal names them)."""

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.verdict, "reason": self.reason, "rule": self.rule,
                "source": self.source}  # fmt: skip


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
            squeezed = squeeze(pattern)
            return cls(text, kind, _compile(_command_regex(squeezed)), squeezed)
        spellings = _write_patterns(pattern.strip())
        regex = "|".join(f"(?:{_path_regex(spelled.rstrip('/'))})" for spelled in spellings)
        return cls(text, kind, _compile(f"(?:{regex})(?:/[\\s\\S]*)?"), pattern)

    def matches(self, value: str) -> bool:
        return self.regex.fullmatch(utf8_text(value)) is not None

    def may_match_under(self, tree: str) -> bool:
        """Whether this Write rule may match a path in the directory ``tree`` (a slight
        overestimate: its literal folder, before its first wildcard, and the tree are
        one inside the other; a relative rule matches at any depth)."""
        if self.kind != "Write":
            return False
        inside = tree.rstrip("/") + "/"
        for spelled in _write_patterns(self.pattern):
            wild = min((i for i, c in enumerate(spelled) if c in "*?"), default=None)
            if wild is None:  # (a path: that directory's whole tree, or a file)
                folder = spelled.rstrip("/") + "/"
            else:
                folder = spelled[: spelled.rfind("/", 0, wild) + 1] or "/"
            if inside.startswith(folder) or folder.startswith(inside):
                return True
        return False

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

    return re2.compile(utf8_text(pattern))  # (a rule naming such a byte: a traceback)


def _command_regex(pattern: str) -> str:
    tail = ""
    if pattern.endswith(":*"):  # the older form: the prefix, alone or before a blank (a
        # review: as a plain prefix, `Bash(ls:*)` allowed `lsof`, `Bash(sh:*)` `shred`)
        return re.escape(pattern[:-2]) + r"(?: [\s\S]*)?"  # (a space, as ` *`: a review)
    if pattern.endswith(" *"):  # `git push *` matches `git push` too
        pattern, tail = pattern[:-2], r"(?: [\s\S]*)?"
    parts = [re.escape(part) for part in pattern.split("*")]
    return r"[\s\S]*".join(parts) + tail


def _write_patterns(pattern: str) -> list[str]:
    """The absolute path globs a ``Write(…)`` pattern stands for: ``~/…`` in the home
    directory; a relative one (``.env``, ``./config/*.yml``) at any depth, as in a
    ``.gitignore`` (the commands' directories vary; a directory it matches takes in
    all below it, as there: ``Write(/etc)`` and ``Write(d/*)`` hold ``/etc/passwd`` and
    ``d/sub/x``, which they let through, a trial); and, where the directory before its
    first wildcard leads through a link, that directory as the link leads too
    (``Write(/bin/**)`` is ``/usr/bin/**`` where ``/bin`` is a link to it): a written
    path is matched with its links followed. Each was a rule that never matched (a
    review)."""
    if pattern == "~" or pattern.startswith("~/"):
        pattern = os.path.expanduser("~") + pattern[1:]
    elif not pattern.startswith("/"):
        pattern = "/**/" + pattern.removeprefix("./")
    pattern = normal_path(pattern) + ("/" if pattern.endswith("/") and pattern != "/" else "")
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


CLAUDE_SETTINGS = frozenset(
    {"defaultMode", "additionalDirectories", "disableBypassPermissionsMode"}
)
"""Keys of Claude Code's ``permissions`` that hold no rule, passed over in its settings
shape: a mode for what no rule decides (here: ask, the stricter reading), and the file
tools' directories."""
CLAUDE_TOOLS = frozenset({
    "Read", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS",
    "WebFetch", "WebSearch", "Task", "Agent", "TodoWrite", "TodoRead", "ExitPlanMode",
    "SlashCommand", "Skill", "BashOutput", "KillShell", "KillBash", "TaskOutput",
    "TaskStop", "PowerShell",
})  # fmt: skip
"""Claude Code's other tools, whose rules (``Read(~/.zshrc)``, ``Edit(src/**)``,
``WebFetch(domain:x)``, and ``mcp__server__tool``) its settings shape passes over: Claude
Code's own Bash checks none of them either, and a settings file pasted whole was refused
at its first such rule (a trial). Any other name stays an error: a deny rule of a tool
misspelled (``Shell(rm *)``) would be a rule that looks right and does nothing."""
_OTHER_TOOL = re.compile(r"(mcp__[\w.-]+|[A-Z][A-Za-z]*)(?:\([^()\n]*\))?")
"""Such a rule: its body on one line, with no parenthesis (a greedy body took in
`Read(./.env), Bash(rm *)` whole, and its deny rule was passed over: a review)."""


_PLAIN_DIRECTORY = re.compile(r"[A-Za-z0-9._+/@%,=-]+")
"""A `cd` operand that is a path as written: no expansion, quote, option nor glob."""


def _stays_below(command: SimpleCommand, cwd: str) -> bool:
    """Whether ``command`` is a `cd` or `pushd` to a directory that is ``cwd`` or below it,
    links followed (as Claude Code lets one run without a rule: `cd src && ls` asked for
    `cd src`, a trial). It changes nothing itself; what runs after it is checked as
    always (a relative write target where it leads)."""
    words = command.text.split(" ")
    if command.wrappers or len(words) != 2 or words[0] not in ("cd", "pushd"):
        return False
    target = words[1]
    if target.startswith("-") or _PLAIN_DIRECTORY.fullmatch(target) is None:
        return False
    root = os.path.realpath(cwd)
    there = os.path.realpath(os.path.join(root, target))
    return there == root or there.startswith(root.rstrip("/") + "/")


def _other_tools_rule(text: str) -> bool:
    match = _OTHER_TOOL.fullmatch(text.strip())
    return match is not None and (match[1].startswith("mcp__") or match[1] in CLAUDE_TOOLS)


@dataclass(frozen=True)
class RuleSet:
    """``allow``, ``ask`` and ``deny`` rules."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    origin: str = "the rules"
    """Where they came from (a file), named in messages."""
    kept: tuple[str, ...] = ()
    """Directories a write into asks for unless a Write rule allows it, as one into a file
    something runs commands from: the supervisor's state dir, whose records (the tasks'
    exit codes, the journal, the sandbox's filter) it trusts (`echo … > STATE/journal.db`
    under `Bash(echo *)`: a review)."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], origin: str = "the rules") -> RuleSet:
        """From ``{"allow": [...], "ask": [...], "deny": [...]}``, also nested under
        ``permissions`` (Claude Code's settings.json shape)."""
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"{origin}: permission rules must be an object")
        settings: frozenset[str] = frozenset()
        if "permissions" in data and isinstance(data["permissions"], Mapping):
            beside = sorted(set(data) & set(VERDICTS))
            if beside:  # (passed over: a deny rule there did nothing, a review)
                raise InvalidInputError(
                    f"{origin}: {', '.join(beside)} beside permissions: put the rules in "
                    "permissions, or leave permissions out"
                )
            data, settings = data["permissions"], CLAUDE_SETTINGS
        unknown = set(data) - set(VERDICTS) - settings
        if unknown:
            raise InvalidInputError(
                f"{origin}: unknown key(s) {sorted(unknown)}; use allow, ask and deny"
            )
        lists: dict[str, tuple[Rule, ...]] = {}
        bad: list[str] = []  # (each said at once: one a run, fixed one by one, a trial)
        for verdict in VERDICTS:
            items = data.get(verdict, [])
            if not isinstance(items, list):
                raise InvalidInputError(f"{origin}: {verdict} must be a list of rules")
            rules = []
            for item in items:
                if settings and isinstance(item, str) and _other_tools_rule(item):
                    continue
                try:
                    rules.append(Rule.parse(item))
                except InvalidInputError as exc:
                    bad.append(str(exc))
            lists[verdict] = tuple(rules)
        if bad:
            raise InvalidInputError(f"{origin}: {'; '.join(bad)}")
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
        view: Callable[[str], str] | None = None,
    ) -> Decision:
        """The verdict for a parsed command: deny if any part is denied, else ask if any
        part asks or is allowed by no rule (or cannot be checked), else allow. ``home``:
        the command's ``HOME``, for its ``~/`` targets (else this process's); ``env``:
        its environment, for a ``CDPATH`` where a ``cd`` may look first and a ``BASH_ENV``
        file its shell runs first (which may change directory or ``HOME``); ``view``:
        where a path of the command's is on this machine (a sandbox's own ``/tmp``), for
        the links on its write targets' way."""
        env = env or {}
        if env.get("BASH_ENV"):
            parsed = replace(parsed, moves=True, sets_home=True, reads=(*parsed.reads, None))
        cdpath = env.get("CDPATH")
        verdicts: list[Decision] = []
        for command in parsed.commands:
            verdicts.append(self._command(command, None if cdpath or parsed.moves else cwd))
        for setting in _environment_settings(parsed, env):  # (`HOME=/x; git status`)
            verdicts.append(_setting_decision(self._command(SimpleCommand(setting)), setting))
        writes_ruled = any(r.kind == "Write" for r in (*self.deny, *self.ask))

        moved_by = dict(parsed.moved_by)

        def paths_of(
            target: str | None, reopens: bool = False, written: str | None = None
        ) -> list[str] | None:
            """Where ``target`` is, after the directory changes before it was ``written``
            (a glob's folder: as the glob is, `cd d && sed -i … src/*` wrote `d/src`, a
            review)."""
            paths = _paths_of(target, reopens, written)
            own = os.path.expanduser("~")  # (`Write(~/…)` rules are in it)
            if paths is None or not home or home.rstrip("/") == own.rstrip("/"):
                return paths
            inside = [own + p[len(home.rstrip("/")) :] for p in paths if _inside(p, home)]
            return list(dict.fromkeys([*paths, *inside]))  # (the command's own `~` too)

        def _paths_of(
            target: str | None, reopens: bool = False, written: str | None = None
        ) -> list[str] | None:
            if target is None or target in parsed.computed_writes:
                return None  # (one holding UNREAD: :func:`_write_paths` and :func:`_places`)
            if target.startswith("~") and parsed.sets_home:
                return None  # (a `~/` one of a command that may set HOME)
            if target.startswith(("/", "~")):
                return _write_paths(target, cwd, home, reopens, view)
            moves = moved_by.get(written or target, ())
            places = None if parsed.moves else _places(cwd, moves, cdpath)
            if places is None:  # (after a `cd` to a directory known only as it runs)
                return None
            found = [_write_paths(target, place, home, reopens, view) for place in places]
            if any(paths is None for paths in found):
                return None
            return list(dict.fromkeys(p for paths in found for p in paths or ()))

        # Writing a descriptor's path opens what it is again: one of the files opened for
        # reading, which must then be one a Write rule lets it write.
        reopens = any(
            (paths := paths_of(read)) is None or self._write(paths) is not None
            for read in parsed.reads
        )

        def into(target: str, paths: Sequence[str]) -> bool:
            """A last operand that is a directory already: what lands in it is checked
            as its own target (`cp -r ../src .` in a repository asked: a review)."""
            return target in parsed.into_directories and all(map(os.path.isdir, paths))

        early = {target: paths_of(target, reopens) for target in parsed.writes}
        rewritten = {  # (what may put another diff there: not a removal, `&& rm fix.diff`)
            p for t, ps in early.items() if t not in parsed.changed_only for p in ps or ()
        }
        patched, unread = _patched(parsed.diffs, cwd, rewritten)
        if unread is not None and writes_ruled:  # (none: as any program's unnamed writes)
            why = f"it writes the files {unread} names, which cannot be read as it is checked"
            verdicts.append(Decision("ask", why))
        targets = list(dict.fromkeys([*parsed.writes, *patched]))
        paths_written = {t: early[t] if t in early else paths_of(t, reopens) for t in targets}
        written = {path for paths in paths_written.values() for path in paths or ()}
        for target in targets:
            paths = paths_written[target]
            if paths is not None and into(target, paths):
                continue
            if paths is None:
                named = any(target == word for word, _ in parsed.named_writes)  # (below)
                if writes_ruled and not named:
                    verdicts.append(Decision("ask", f"it writes to a computed path `{target}`"))
                continue
            decided = self._write(paths)
            if decided is not None:
                verdicts.append(decided)
            elif not self.allows_anything() and (
                found := self._code_file(paths, written, target in parsed.changed_only)
            ):
                code, runner, how = found
                allowing = f"a `Write({code})` allow rule lets it"
                why = (
                    f"it writes {code}, from which {runner} runs commands ({how}; {allowing})"
                    if runner else f"it writes {code}, {how} ({allowing})"
                )  # fmt: skip
                verdicts.append(Decision("ask", why))
        # What lands in a directory as it runs (`cp -r x/. /etc`, `cp -r x/.ssh ~`: a
        # review), and the files a glob names (`sed -i … src/*.py`), as they are now.
        for target, whole in parsed.tree_writes:
            tree = paths_of(target)
            if tree is not None and into(target, tree):
                continue
            decided = (
                Decision("ask", f"it writes in `{target}`, a directory known only as it runs")
                if tree is None
                else self._tree_write(tree, home, whole)
            )
            if decided is not None:
                verdicts.append(decided)
        for git_dir in parsed.git_dirs:
            folders = None if git_dir is None else paths_of(git_dir)
            if folders is None or any(_foreign_config(f, written) for f in folders):
                told = (
                    "a git directory known only as it runs" if git_dir is None
                    else f"`{git_dir}` as its git directory, whose config is no repository's"
                )  # fmt: skip
                verdicts.append(Decision("ask", f"git is told to use {told} (git runs what "
                                         "its config says: aliases, `core.fsmonitor`)"))  # fmt: skip
        for changed in parsed.changed_trees if writes_ruled else ():  # (`rm -r`: rules alone)
            folders = paths_of(changed)
            decided = (
                Decision("ask", f"it changes `{changed}`, a directory known only as it runs")
                if folders is None
                else self._write(folders) or self._changed_tree(folders)
            )
            if decided is not None:
                verdicts.append(decided)
        if writes_ruled and (through := _through_a_link(parsed, paths_of)) is not None:
            verdicts.append(Decision(
                "ask", f"it writes to `{through[0]}` through `{through[1]}`, which it links or "
                "moves itself (where a link leads is known only as it runs)",
            ))  # fmt: skip
        dotfiles = _dotfiles(parsed, env)
        budget = [GLOBBED_MAX]  # (across the command's globs: each is read from the disk)
        for word, folder in parsed.named_writes:
            folders = paths_of(folder, written=word)
            globbed = (
                None
                if folders is None or dotfiles is None
                else _globbed(folders, word, dotfiles, budget)
            )
            if globbed is None:
                verdicts.append(Decision("ask", f"it writes to `{word}`, which names files "
                                         "known only as it runs"))  # fmt: skip
                continue
            if not globbed:  # (it names none now: a new name in that folder, as it runs)
                if (verdict := self._tree_write(folders or [], home, False)) is not None:
                    verdicts.append(verdict)
                continue
            for path in globbed:
                resolved = _write_paths(path, "/", home, False, view)
                verdict = (
                    Decision("ask", f"it writes to `{path}` (of `{word}`), a link known only "
                             "as it runs") if resolved is None else self._write(resolved)
                )  # fmt: skip
                if verdict is None and resolved and all(map(os.path.isdir, resolved)):
                    verdict = self._tree_write(resolved, home, True)  # (`cp x d/*`: into)
                runs = (
                    None if verdict or self.allows_anything() else self._code_file(resolved or [])
                )
                if runs is not None:
                    verdict = Decision("ask", f"it writes {runs[0]} (of `{word}`), " + (
                        f"from which {runs[1]} runs commands" if runs[1] else runs[2]
                    ))  # fmt: skip
                if verdict is not None:
                    verdicts.append(verdict)
                    break
        if parsed.problems and not self.allows_anything():
            verdicts.append(Decision("ask", f"it cannot be checked: {parsed.problems[0]}"))
        if not verdicts:
            return Decision("allow", "it runs no command")
        # The strictest; among asks, the one that says most: a rule's, then why the
        # command cannot be checked, then that no rule allows it.
        worst = max(verdicts, key=lambda d: (_RANK[d.verdict], 2 if d.rule else d.subject is None))
        if worst.verdict == "allow":
            rules = sorted({d.rule for d in verdicts if d.rule})
            if not rules:  # (a `cd` below where it starts: no rule needed)
                return Decision("allow", "; ".join(dict.fromkeys(d.reason for d in verdicts)))
            return Decision("allow", "allowed by " + ", ".join(rules), ", ".join(rules))
        if worst.verdict == "ask":  # every part that asks: a person approves all of them
            asks = [worst, *(d for d in verdicts if d.verdict == "ask" and d is not worst)]
            reasons = dict.fromkeys(d.reason for d in asks)
            unallowed = [d for d in asks if d.rule is None and d.subject is not None]
            complete = len(unallowed) == len(asks) and all(d.suggested for d in unallowed)
            return replace(  # (suggested: rules that allow all of it, or none at all)
                worst,
                reason="; ".join(reasons),
                unallowed=tuple(dict.fromkeys(d.subject for d in unallowed if d.subject)),
                suggested=tuple(dict.fromkeys(r for d in unallowed for r in d.suggested))
                if complete
                else (),
            )
        return worst

    def allows_anything(self) -> bool:
        """``Bash(*)`` allowed with no rule to deny or ask: nothing to check for (with a
        Write rule, a command that cannot be checked may write anywhere)."""
        everything = any(r.kind == "Bash" and r.matches_everything for r in self.allow)
        return everything and not (self.deny or self.ask)

    def _command(self, command: SimpleCommand, cwd: str | None = None) -> Decision:
        """``cwd``: where the command starts, for a `cd` that stays below it (none: no
        such `cd` is allowed without a rule, as where a ``CDPATH`` may lead elsewhere)."""
        readings = (command.text, *command.variants)
        loose = _Loose(command)
        for run in command.loose_runs:
            decided = self._command(run)
            if decided.verdict == "deny" or (decided.verdict == "ask" and decided.rule):
                reason = f"`{command.name}` may run its words as a command: {decided.reason}"
                return Decision("ask", reason, decided.rule, subject=command.text)
        for verdict in ("deny", "ask"):
            for rule in getattr(self, verdict):
                for text in readings:
                    if rule.kind == "Bash" and rule.matches(text):
                        return Decision(verdict, f"`{text}` matches {verdict} rule {rule.text}",
                                        rule.text, subject=text)  # fmt: skip
        for verdict in ("deny", "ask"):
            for rule in getattr(self, verdict):
                if rule.kind == "Bash" and (reading := loose.reading(rule)) is not None:
                    reason = (
                        f"`{command.name}` may run its words as a command: `{reading}` matches "
                        f"{verdict} rule {rule.text}"
                    )
                    return Decision("ask", reason, rule.text, subject=command.text)
                for prefix in command.open_prefixes:
                    if rule.may_match_after(prefix):
                        reason = (
                            f"`{command.text}` could match {verdict} rule {rule.text}: its "
                            f"words after `{prefix.rstrip()}` are only known when it runs"
                        )
                        return Decision("ask", reason, rule.text, subject=command.text)
        held: Decision | None = None
        for rule in self.allow:
            if rule.kind == "Bash" and rule.matches(command.text):
                unnamed = [g for g in command.guards if not self._approves(rule, g)]
                if not unnamed:
                    return Decision("allow", f"`{command.text}` matches allow rule {rule.text}",
                                    rule.text, subject=command.text)  # fmt: skip
                held = held or Decision(
                    "ask",
                    f"`{command.text}` {_guarded(unnamed[0], self)}: allow rule {rule.text} "
                    "does not name it",
                    subject=command.text,
                    suggested=self._rules_for(command, rule),
                )
        if held is None and cwd is not None and _stays_below(command, cwd):
            return Decision("allow", f"`{command.text}` stays in {cwd}", subject=command.text)
        return held or Decision(
            "ask",
            f"no rule allows `{command.text}`",
            subject=command.text,
            suggested=self._rules_for(command, Rule.parse(suggested_rule(command.text))),
        )

    def _approves(self, rule: Rule, guard: Guard) -> bool:
        """Whether ``rule``, which matches a command, covers its ``guard`` too: it allows
        everything, or names the option, or (``-exec``) the rules allow what it runs."""
        if rule.matches_everything:
            return True
        if guard.option is not None and any(  # (a word of the pattern, or of its parts
            guard.option in word.split("*")
            for word in rule.pattern.split(" ")  # `-delete*`)
        ):
            return True
        return bool(guard.runs) and all(self._command(run).verdict == "allow" for run in guard.runs)

    def _rules_for(self, command: SimpleCommand, rule: Rule) -> tuple[str, ...]:
        """Allow rules that, added, would let ``command`` run: ``rule`` (which matches
        it), or one that names the options it does not (``Bash(find *-delete *)``), and
        rules for what its ``-exec`` runs; none where only a person can tell."""
        unnamed = [g for g in command.guards if not self._approves(rule, g)]
        options = [g.option for g in unnamed if g.option and not g.runs]
        runs = [r for g in unnamed for r in g.runs if self._command(r).verdict != "allow"]
        if any(g.option is None for g in unnamed) or any(_computed_name(r.text) for r in runs):
            return ()  # (no rule can tell what a word known only as it runs will be)
        if options:
            words = command.text.split(" ")
            named = next((i for i, w in enumerate(words) if os.path.basename(w) in SEARCHERS), 0)
            named_all = "* ".join(options)  # (each named, in their order, next to one another,
            rule = Rule.parse(f"Bash({' '.join(words[: named + 1])} *{named_all} *)")  # first)
        return (rule.text, *(suggested_rule(run.text) for run in runs))

    def _code_file(
        self, paths: Sequence[str], written: Collection[str] = (), changed: bool = False
    ) -> tuple[str, str, str] | None:
        """The first of ``paths`` that something runs commands from (:data:`_CODE_FILES`;
        a ``HEAD`` that makes its folder a git directory whose ``config`` is there already
        or among what the command writes, ``written``) and no Write allow rule allows: the
        path, what runs them, how."""
        allowed = [r for r in self.allow if r.kind == "Write"]
        for path in paths:
            if any(r.matches(path) for r in allowed):
                continue
            if changed:  # (removed, made, its mode changed: only making a git directory)
                if _makes_a_git_directory(path, written):
                    return path, "", _MAKES_A_GIT_DIRECTORY
                continue
            if any(path == kept or path.startswith(kept.rstrip("/") + "/") for kept in self.kept):
                return path, "", _KEPT_TEXT
            for pattern, runner, how in _CODE_FILES:
                if pattern.fullmatch(path):
                    return path, runner, how
            if _in_a_git_directory(path):
                return path, "git", "a repository's config or hooks, wherever it is"
            if _makes_a_git_directory(path, written):
                return path, "", _MAKES_A_GIT_DIRECTORY
        return None

    def _changed_tree(self, trees: Sequence[str]) -> Decision | None:
        """A directory removed or changed whole (``rm -r``, ``chmod -R``): what it holds as
        the command is checked, each file against the Write rules, links not followed (at
        most ``CHANGED_WALK_MAX`` of them; past that, a rule that may match in it asks): a
        relative rule, `Write(.env)`, may match anywhere, and `rm -rf build` asked for
        every build (a review), though nothing lands there as it runs."""
        budget = [CHANGED_WALK_MAX]
        for tree in trees:
            found = _tree_files(tree, budget)
            if found is None:
                return self._ruled_tree([tree])
            found.append(f"{tree.rstrip('/')}/{_ANY_NAME}")  # (a rule on all it holds)
            for verdict in ("deny", "ask"):
                for rule in getattr(self, verdict):
                    hit = next((p for p in found if rule.kind == "Write" and rule.matches(p)), None)
                    if hit is not None:
                        what = f"what {tree} holds" if hit.endswith(_ANY_NAME) else f"{hit}"
                        return Decision(verdict, f"changing {what} (it removes or changes "
                                        f"{tree} whole) matches {verdict} rule {rule.text}",
                                        rule.text, subject=hit)  # fmt: skip
        return None

    def _ruled_tree(self, trees: Sequence[str]) -> Decision | None:
        """A directory written whole, where a Write deny or ask rule may match in it."""
        for verdict in ("deny", "ask"):
            for rule in getattr(self, verdict):
                for tree in trees:
                    if rule.may_match_under(tree):
                        return Decision("ask", f"it may write in {tree} (what, known only "
                                        f"as it runs), which {verdict} rule {rule.text} may match",
                                        rule.text, subject=tree)  # fmt: skip
        return None

    def _tree_write(self, trees: Sequence[str], home: str | None, whole: bool) -> Decision | None:
        """A directory a program writes in, what lands there known only as it runs
        (``whole``: ``cp -r``, ``mv``; else a glob's names, no dotfile): a deny or ask Write
        rule that may match in it asks, and so does a directory that holds files git, ssh
        or a shell runs commands from (a glob's names: one that is such a directory,
        ``.git/hooks``; unless a Write allow rule takes in that directory's)."""
        if (ruled := self._ruled_tree(trees)) is not None:
            return ruled
        if self.allows_anything():
            return None
        allowed = [r for r in self.allow if r.kind == "Write"]
        for tree in trees:
            holds = _holds_code(tree, home) if whole else _is_code_directory(tree)
            if holds and not any(r.matches(f"{tree}/.git/config") for r in allowed):
                return Decision("ask", f"it may write in {tree} (what, known only as it "
                                "runs), which holds files git, ssh or a shell runs commands from "
                                f"(a `Write({tree.rstrip('/')}/**)` allow rule lets it)")  # fmt: skip
        return None

    def _write(self, paths: Sequence[str]) -> Decision | None:
        for verdict in ("deny", "ask"):
            for rule in getattr(self, verdict):
                for path in paths:
                    if rule.kind == "Write" and rule.matches(path):
                        return Decision(verdict, f"writing {path} matches {verdict} rule "
                                        f"{rule.text}", rule.text, subject=path)  # fmt: skip
        return None


LOOSE_STARTS = 64
"""Words of a command that name a rule's program looked at, at most (each a reading)."""


class _Loose:
    """``command``'s loose words (:attr:`SimpleCommand.loose`), indexed once for all the
    rules: by the programs they name (a path's by its base name, `/bin/rm`; a word with a
    `/` otherwise is no program's, `docker pull curlimages/curl`: a review's false ask)."""

    def __init__(self, command: SimpleCommand) -> None:
        self.command = command
        self.starts: dict[str, list[int]] | None = None

    def reading(self, rule: Rule) -> str | None:
        """The reading from a word naming ``rule``'s program on that ``rule`` matches."""
        program = rule.pattern.removesuffix(":*").split(" ", 1)[0]
        if not program or "*" in program or not self.command.loose:
            return None
        if self.starts is None:
            self._index()
        for start in (self.starts or {}).get(program, ()):
            reading = program + self.joined[self.ends[start] - 1 :]
            if rule.matches(reading):
                return reading
        return None

    def _index(self) -> None:
        words = [shown for _, shown in self.command.loose]
        self.joined = " ".join(words)
        self.ends = list(itertools.accumulate(len(word) + 1 for word in words))  # (past each
        self.starts = {}  # and a blank)
        for i, (value, _) in enumerate(self.command.loose):
            if value is None or ("/" in value and not value.startswith(("/", "./", "../"))):
                continue
            named = self.starts.setdefault(os.path.basename(value), [])
            if len(named) < LOOSE_STARTS:
                named.append(i)


def suggested_rule(command: str) -> str:
    """An allow rule for commands like this one: its first words (``git push *``)."""
    words = command.split(None, 2)[:2]
    if len(words) == 2 and (
        words[1].startswith("-") or any(c in words[1] for c in ("/", "$", "{}"))
    ):
        words = words[:1]
    return f"Bash({' '.join(words)} *)" if words else "Bash(…)"


def _computed_name(text: str) -> bool:
    """Whether a command's name (as shown) is known only as it runs (``"$P"``)."""
    return any(c in text.split(" ", 1)[0] for c in "$`")


def _guarded(guard: Guard, rules: RuleSet) -> str:
    """What a command does, by ``guard``, that an allow rule must name."""
    if guard.option is None:
        return "has words known only as it runs, which may make it run commands or delete files"
    runs = [run for run in guard.runs if rules._command(run).verdict != "allow"]
    if runs:
        return f"runs {'; '.join(f'`{run.text}`' for run in runs)} with `{guard.option}`"
    return f"uses `{guard.option}`"


def _places(cwd: str, directories: Sequence[str | None], cdpath: str | None) -> list[str] | None:
    """Each directory a command may be in after ``cd``s to ``directories`` (each may
    fail, or not run: ``cd a || cd b``); None when one is known only as it runs: as
    written there, or one ``CDPATH`` may find
    elsewhere, or one that does not exist as a directory now (made as the command runs,
    perhaps as a link), or one that a physical ``cd`` (``cd -P``, ``set -P``, bash's
    fallback when the path as written does not exist) would find elsewhere (``link/..``)."""
    places = [cwd]
    for directory in directories:
        if directory is None or (cdpath and cdpath_searched(directory)) or UNREAD in directory:
            return None  # (UNREAD: a `d\uFFFD` made beside a link `d\xff` was checked, and
            # the command wrote where the link led; a review)
        moved = []
        for place in places:
            logical = normal_path(os.path.join(place, directory))
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


def _through_a_link(
    parsed: ParsedCommand, paths_of: Callable[[str | None], list[str] | None]
) -> tuple[str, str] | None:
    """A write (and the name on its way) that goes through a name a link maker of the
    same command writes (``ln``, ``mv``, ``cp -s/-l/-a/-r…``: ``ParsedCommand.linked``),
    which may then be a link leading anywhere: checked where it is now, the write went
    where the link led (a trial wrote under a denied folder by `ln -s protected l; echo
    > l/x`); another link maker's too (`ln -s protected l; cp -r x l/`). A last operand
    that is a directory already is written into, not replaced."""
    links = []
    for name, kind, maker in parsed.linked:
        paths = paths_of(name) or []
        into = kind.startswith("last") and not parsed.removes
        if not (into and paths and all(map(os.path.isdir, paths))):
            links += [(name, maker, path) for path in paths]
    writes: list[tuple[str, int | None]] = [
        *((target, None) for target in (*parsed.unlinked_writes, *parsed.unlinked_trees)),
        *((name, maker) for name, _, maker in parsed.linked),
    ]
    for target, writer in dict.fromkeys(writes):
        for path in paths_of(target) or []:
            for name, maker, link in links:
                if maker != writer and _inside(path, link):
                    return target, name
    return None


def _inside(path: str, folder: str) -> bool:
    return path == folder.rstrip("/") or path.startswith(folder.rstrip("/") + "/")


def _write_paths(
    target: str | None,
    cwd: str,
    home: str | None = None,
    reopens: bool = False,
    view: Callable[[str], str] | None = None,
) -> list[str] | None:
    """The paths a written target names: as written (resolved against ``cwd``, ``~/``
    against ``home``) and with its links followed as this machine has them (each before
    the ``..`` after it, as the kernel reads ``link/..``); None when it is computed at
    run time (``/proc/self/…`` and ``/dev/fd/N/…`` included, and links to them: they are
    the command's). A descriptor's own path (``/dev/stderr``, ``/dev/fd/3``) is the
    command's log, ``/dev/null`` or terminal; with ``reopens`` (the command opens files
    for reading on descriptors, ``3< /etc/passwd``) it is computed: writing it opens that
    file again, for writing."""
    if target is None or "$" in target or "`" in target or GLOB.search(target):
        return None  # (a glob in a target is expanded as it runs: `> /etc/pass?d`)
    if UNREAD in target:  # (a byte that is no UTF-8, as read: its name here unknown, a
        return None  # link `l\xff` to a denied folder was never followed; a review)
    if target.startswith(("~+", "~-")) or (target.startswith("~") and target[1:2].isdigit()):
        return None  # ($PWD, $OLDPWD and the directory stack)
    if home is not None and (target == "~" or target.startswith("~/")):
        target = home + target[1:]
    elif target.startswith("~"):
        target = os.path.expanduser(target)
    path = os.path.join(cwd, target)
    written = normal_path(path)
    if DESCRIPTOR.fullmatch(written):
        return None if reopens else [written]
    if PER_PROCESS.search(path):
        return None  # (the command's own descriptors and directories, not ours)
    real = links_followed(path, view)
    if real is None or has_other_names(real):
        return None
    return list(dict.fromkeys([written, normal_path(real)]))


Hook = Callable[[ParsedCommand], Any]
"""``Client(permission=hook)``: receives the parsed command, returns ``"allow"``,
``"ask"`` or ``"deny"``, or ``(verdict, reason)``, or a :class:`Decision`."""


def hook_decision(hook: Hook, parsed: ParsedCommand) -> Decision:
    """Run a permission hook; what it returns becomes a decision (a bad answer denies, and
    so does a hook that raises: its error is the reason, the call still gets a result)."""
    try:
        answer = hook(parsed)
    except Exception as exc:
        return Decision("deny", f"the permission hook failed: {error_text(exc)}", None, "hook")
    if isinstance(answer, Decision):
        return Decision(answer.verdict, answer.reason, answer.rule, "hook")
    reason = ""
    if isinstance(answer, tuple) and len(answer) == 2:
        answer, reason = answer
    if answer not in VERDICTS:
        return Decision("deny", f"the permission hook answered {answer!r}", None, "hook")
    return Decision(answer, str(reason or f"the permission hook answered {answer}"), None, "hook")


_GIT_CODE = re.compile(
    r".*/(?:\.husky/.+|\.git/(?:modules/.+/)?(?:hooks/.+|config|config\.worktree|commondir|worktrees/"
    r"[^/]+/(?:config\.worktree|commondir))|\.git|\.gitconfig|\.config/git/config|"
    r"etc/gitconfig)"
)


_SHELL_CODE = re.compile(
    r".*/(?:\.(?:bashrc|bash_profile|bash_login|bash_logout|bash_aliases|profile|zshrc|zshenv|"
    r"zprofile|zlogin|zlogout|kshrc|mkshrc)|\.(?:bashrc|profile|zshrc)\.d/[^/]+|"
    r"\.config/fish/(?:config\.fish|fish_variables|(?:conf\.d|functions|completions)/[^/]+)|"
    r"\.ssh/rc|"
    r"etc/(?:profile|profile\.d/[^/]+|bash\.bashrc|bashrc|zsh/[^/]+|zshenv|zshrc|zprofile|"
    r"environment|fish/.+)|share/fish/vendor_(?:conf|functions|completions)\.d/[^/]+)"
)


_LOGIN_CODE = re.compile(
    r".*/(?:\.ssh/(?:config|config\.d/[^/]+|authorized_keys2?|environment)|"
    r"\.config/(?:autostart/[^/]+|systemd/user(?:\.control)?/.+|environment\.d/[^/]+)|"
    r"\.local/share/systemd/user/.+|\.pam_environment)"
)


GLOBBED_MAX = 4096
"""Files a glob in a written word may name for them to be checked one by one (more:
it asks)."""


def _globbed(
    folders: Sequence[str], word: str, dotfiles: bool, budget: list[int]
) -> list[str] | None:
    """The paths ``word``'s glob names in each of ``folders`` as it is checked (as bash
    would: dotfiles only where ``dotglob`` may be on; none, and the word itself is a name
    in that folder), or None past the command's ``budget`` (a one-item list, spent). A
    link among them is followed where the path is checked (`cp x d/*` with `d/l -> /etc`
    wrote there: a review)."""
    import glob

    pattern = word.rpartition("/")[2]
    if UNREAD in pattern or any(UNREAD in folder for folder in folders):
        return None  # (a name here is not the name it stands for)
    found: list[str] = []
    for folder in dict.fromkeys(folders):
        names = glob.iglob(glob.escape(folder) + "/" + pattern, include_hidden=dotfiles)
        found += itertools.islice(names, budget[0] + 1 - len(found))
        if len(found) > budget[0]:
            return None
    budget[0] -= len(found)
    return found


def _dotfiles(parsed: ParsedCommand, env: Mapping[str, str]) -> bool | None:
    """Whether a glob of the command may name dotfiles: the caller's `BASHOPTS` has
    `dotglob`, the command sets `GLOBIGNORE` or a variable named as it runs (`eval
    'GLOB''IGNORE=x'`), or names `dotglob` (a review); None where its globs may not be
    read as the check reads them at all: it runs `shopt` (`shopt -s "dot"glob`,
    `nocaseglob`, `extglob`), or `BASHOPTS` turns on `nocaseglob` or `extglob`."""
    options = env.get("BASHOPTS", "").split(":")
    if any(c.name == "shopt" for c in parsed.commands) or {"nocaseglob", "extglob"} & {*options}:
        return None
    named = {name for name, _ in parsed.sets}
    return (
        None in named or "GLOBIGNORE" in named or "dotglob" in parsed.source
        or "dotglob" in options
    )  # fmt: skip


def _is_code_directory(tree: str) -> bool:
    """Whether files of any name in ``tree`` may be run (``.git/hooks``, a git directory,
    ``~/.config/systemd/user``)."""
    return bool(_CODE_TREE.fullmatch(tree)) or _in_a_git_directory(f"{tree}/config")


def _in_a_git_directory(path: str) -> bool:
    """Whether ``path`` is a ``config`` or a hook of a repository's git directory that is
    not named ``.git`` (a bare one, `--separate-git-dir`: `sed -i … b/config` after `git
    init --bare b` ran its `core.fsmonitor`, a review), as the disk has it now."""
    folder, name = os.path.split(path)
    if os.path.basename(folder) == "hooks":
        folder = os.path.dirname(folder)
    elif name not in ("config", "config.worktree", "commondir"):
        return False
    return all(
        check(os.path.join(folder, part))
        for check, part in ((os.path.isfile, "HEAD"), (os.path.isdir, "objects"))
    )


def _patched(
    diffs: Sequence[PatchRead], cwd: str, written: Collection[str]
) -> tuple[list[str], str | None]:
    """The files the diffs ``patch`` reads name (``writes.diff_targets``), as they are
    when the command is checked, relative to ``cwd`` (or its ``-d DIR``), with the backups
    ``-B``, ``-Y`` and ``-z`` name; and what names the first diff that cannot be read so
    (None: all could): known only as it runs, not there, or one the command ``written``
    itself before (`cp fix.diff ok.diff; patch -p1 < ok.diff`, a review)."""
    found: list[str] = []
    for diff in diffs:
        text = diff.text
        if diff.path is not None:
            path = os.path.normpath(os.path.join(cwd, os.path.expanduser(diff.path)))
            if path not in written:
                text = _read_regular(path, DIFF_READ_LIMIT)
        targets = (
            None if text is None else diff_targets(text, diff.words.strip, diff.words.whole_names)
        )
        if targets is None:
            return found, "the diff on its input" if diff.path is None else f"diff `{diff.path}`"
        folder = diff.words.directory or ""
        prefix, base_prefix, suffix = diff.words.backups
        for target in (os.path.join(folder, t) for t in targets):
            head, tail = os.path.split(target)
            found += [target, f"{prefix}{target}" if prefix else target,
                      os.path.join(head, f"{base_prefix}{tail}") if base_prefix else target,
                      f"{target}{suffix}" if suffix else target]  # fmt: skip
    return list(dict.fromkeys(found)), None


def _read_regular(path: str, limit: int) -> bytes | None:
    """An ordinary file's bytes, at most ``limit`` of them (None: more, none there, or
    not an ordinary file: a FIFO's writer would hold the check)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= limit else None


_ANY_NAME = "\u2063"
"""A name no file has (an invisible separator): a rule matching it in a directory is one
on everything the directory holds (`Write(protected/**)` and `rm -rf protected`)."""
CHANGED_WALK_MAX = 50_000
"""Entries of the directories a command removes or changes whole that are read to check
them (more: a Write rule that may match in them asks)."""


def _tree_files(tree: str, budget: list[int]) -> list[str] | None:
    """The paths in ``tree`` (not through links), or None past the ``budget`` (a one-item
    list, spent) or where one cannot be read."""
    found: list[str] = []
    folders = [tree]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        return None
                    found.append(entry.path)
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                        found.append(os.path.join(entry.path, _ANY_NAME))
        except FileNotFoundError:
            continue  # (not there: nothing to change)
        except OSError:
            return None
    return found


_MAKES_A_GIT_DIRECTORY = (
    "which makes its folder a git directory: git then runs what its `config` says"
)
_GIT_DIRECTORY_PARTS = ("HEAD", "config", "commondir", "objects", "refs")


def _makes_a_git_directory(path: str, written: Collection[str]) -> bool:
    """Whether ``path`` is a part of a git directory (``HEAD``, ``config``,
    ``commondir``, ``objects``, ``refs``) written into a folder that then holds a
    ``HEAD`` and a ``config`` or ``commondir`` (on disk now, or among what the command
    ``written``): a config written into a plain folder was no repository's, and git ran
    its alias once a later `HEAD`, `git init --bare`, or `objects` made the folder one,
    in whatever order (two reviews)."""
    folder, name = os.path.split(path)
    if name not in _GIT_DIRECTORY_PARTS:
        return False
    head = os.path.join(folder, "HEAD")
    return (head in written or os.path.isfile(head)) and _holds_config(folder, written)


def _holds_config(folder: str, written: Collection[str]) -> bool:
    """Whether a folder holds a git ``config`` or ``commondir``, or the command writes one."""
    return any(
        os.path.join(folder, name) in written or os.path.isfile(os.path.join(folder, name))
        for name in ("config", "commondir")
    )


def _foreign_config(folder: str, written: Collection[str]) -> bool:
    """Whether git, told to use ``folder`` as its git directory, reads a config that no
    repository's rules protect: the folder holds one (or the command writes one) but is
    no git directory as the disk has it (whose config a write would have asked for)."""
    real = os.path.isfile(os.path.join(folder, "HEAD")) and os.path.isdir(
        os.path.join(folder, "objects")
    )
    return _holds_config(folder, written) and not (real and not _written_into(folder, written))


def _written_into(folder: str, written: Collection[str]) -> bool:
    return any(os.path.join(folder, n) in written for n in ("config", "commondir", "HEAD"))


_CODE_TREE = re.compile(
    r"(?:.*/)?(?:\.git|\.ssh|\.config|\.(?:bashrc|profile|zshrc)\.d)(?:/.*)?|/etc(?:/.*)?"
)
"""Directories that hold files something runs commands from (:data:`_CODE_FILES`)."""


def _holds_code(tree: str, home: str | None) -> bool:
    """Whether a directory written whole may receive a file git, ssh or a shell runs
    commands from: one of :data:`_CODE_TREE`, the home directory or one above it, or a
    directory holding a repository's ``.git`` or an ``.ssh`` (`cp -rT x .` in a
    repository writes its ``.git/config``)."""
    own = (home or os.path.expanduser("~")).rstrip("/") + "/"
    inside = tree.rstrip("/") + "/"
    if _CODE_TREE.fullmatch(tree) or own.startswith(inside):
        return True
    return any(os.path.isdir(os.path.join(tree, held)) for held in (".git", ".ssh", ".config"))


_TOOL_CODE = re.compile(
    r".*/(?:\.(?:wgetrc|curlrc|npmrc|yarnrc|yarnrc\.yml)|\.config/curlrc|\.cargo/config(?:\.toml)?|"
    r"etc/(?:wgetrc|npmrc))"
)


_KEPT_TEXT = (
    "in wave-bash's state dir, whose records (the tasks' exit codes, the journal) its "
    "supervisor trusts"
)


_CGROUP_FILES = re.compile(r"/sys/fs/cgroup/.+")
"""The kernel's control groups: a ``cgroup.procs`` written there (by root, or the user a
subtree is delegated to) takes processes out of their task's group, out of TaskStop's
reach (`echo $$ > /sys/fs/cgroup/cgroup.procs` with `Bash(echo *)`: a review)."""


_CODE_FILES = (
    (_CGROUP_FILES, "", "a control group's file: it can take processes out of their task, "
     "which TaskStop then does not stop"),
    (_GIT_CODE, "git", "as `git config` or a hook would set them"),
    (_SHELL_CODE, "a shell", "as its start-up file"),
    (_LOGIN_CODE, "ssh, a login or the desktop session",
     "a `ProxyCommand`, a key's `command=`, an autostart entry, a user service"),
    (_TOOL_CODE, "wget, curl, npm, yarn or cargo",
     "`use_askpass`, `output`, `script-shell`, `yarnPath`, a `runner`"),
)  # fmt: skip
"""Files something runs commands from, which a write asks for unless a Write rule allows
it: git's (a repository's ``config``: ``core.fsmonitor``, aliases, ``core.pager``…; its
hooks, its ``commondir``, its submodules', a ``.git`` file pointing git elsewhere, a
user's or the system's config; the sandbox keeps the workspace's read-only, SB1), a
shell's start-up files in any directory (`echo CMD >> ~/.bashrc` with `Bash(echo *)`
had the person's next shell run it: a review), ssh's and a login's (`~/.ssh/config`'s
`ProxyCommand` runs at the next `ssh`, `authorized_keys` lets a key in and runs its
`command=`; the desktop's autostart entries, systemd's user services: a trial), and the
settings files of programs whose command-line options that run or write something ask
(``~/.wgetrc``'s ``use_askpass``, ``.curlrc``'s ``output``, ``.npmrc``'s
``script-shell``, ``.yarnrc.yml``'s ``yarnPath``, ``.cargo/config.toml``'s runners: a
review)."""


SHELL_VARIABLES = frozenset({"PATH"})
"""Variables the shell itself reads to run what follows, exported or not."""


def _environment_settings(parsed: ParsedCommand, env: Mapping[str, str]) -> list[str]:
    """The settings of ``parsed``'s plain statements that reach the environment of the
    commands after them: a variable exported already (in ``env``), or by ``set -a``, one
    the shell reads itself (``PATH``), or one named as it runs. Each is checked as the
    command it is (``HOME=/x``), as it is in front of a command (``HOME=/x git status``,
    which no ``git status`` rule allows), where before it ran unchecked and changed what
    the commands after it ran (a ``HOME`` with a ``.gitconfig`` whose ``core.fsmonitor``
    runs anything: a review). Harmless ones (``LANG``, ``CI``) are not."""
    everything = parsed.exports_all or "allexport" in env.get("SHELLOPTS", "").split(":")
    return [
        text
        for name, text in parsed.sets
        if name is None
        or (
            not harmless_assignment(name) and (everything or name in env or name in SHELL_VARIABLES)
        )
    ]


def _setting_decision(decision: Decision, text: str) -> Decision:
    """A setting's verdict, its reason saying why a setting needs a rule."""
    if decision.verdict != "ask" or decision.rule is not None:
        return decision
    name = text.split("=", 1)[0]
    return replace(
        decision,
        reason=f"it sets `{name}`, which the commands after it get in their environment: "
        f"no rule allows `{text}` (`Bash({name}=*)` would)",
    )


def strictest(decisions: Iterator[Decision] | Sequence[Decision]) -> Decision:
    return max(decisions, key=lambda d: _RANK[d.verdict])
