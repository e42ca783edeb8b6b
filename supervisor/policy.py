"""The permission check before a command runs (SPEC PM): one place, used by every door
(library, CLI, MCP, the remote bridge all send ``run`` here), before anything is spawned
or journaled. The rules travel with the request (each caller has its own), the caller's
hook answer too; the strictest verdict wins, and a person's approval turns only an
``ask`` into an allow."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from wave_bash.api.permissions import Decision, RuleSet, parse_command, strictest
from wave_bash.api.protocol import RulesSpec, RunParams
from wave_bash.api.texts import short_command
from wave_bash.worker import NoShellError, resolve_shell

log = logging.getLogger(__name__)


@lru_cache(maxsize=32)
def _rules(spec: str) -> RuleSet:
    data = json.loads(spec)
    origin = data.pop("origin", "the rules")
    return RuleSet.from_mapping(data, origin)


def rule_set(spec: RulesSpec) -> RuleSet:
    """The rules of a request, compiled once per distinct set.

    Raises:
        InvalidInputError: a rule that is not Bash(…) or Write(…).
    """
    return _rules(json.dumps(spec.model_dump(), sort_keys=True))


CHECKS = ThreadPoolExecutor(1, thread_name_prefix="permissions")
"""Where commands are parsed and matched: off the event loop (a long command takes a
while to parse), one at a time (a tree-sitter parser is not shared between threads)."""


async def check(
    p: RunParams, view: Callable[[str], str] | None = None, kept: tuple[str, ...] = ()
) -> Decision:
    """:func:`decide`, in the checks thread."""
    if p.rules is None and p.hook is None:
        return decide(p)
    return await asyncio.get_running_loop().run_in_executor(CHECKS, decide, p, view, kept)


def decide(
    p: RunParams, view: Callable[[str], str] | None = None, kept: tuple[str, ...] = ()
) -> Decision:
    """Whether ``p``'s command may run: ``none`` when no rules and no hook were given;
    ``view``: where its paths are here, when it runs in a sandbox (its own ``/tmp``);
    ``kept``: directories a write into asks for (the state dir: ``RuleSet.kept``)."""
    if p.rules is None and p.hook is None:
        return Decision("allow", "no permission rules were given", None, "none")
    decisions = []
    if p.rules is not None:
        decisions.append(
            dataclasses.replace(rule_set(p.rules), kept=kept).decide(
                parse_command(p.command, zsh=_shell_kind(p) == "zsh", interactive=p.interactive),
                p.cwd,
                p.env.get("HOME"),
                p.env,
                view,
            )
        )
    if p.hook is not None:
        reason = p.hook.reason or f"the permission hook answered {p.hook.verdict}"
        decisions.append(Decision(p.hook.verdict, reason, None, "hook"))
    decision = strictest(decisions)
    if decision.verdict == "ask" and p.approved:
        return Decision("allow", f"approved by the user ({decision.reason})", decision.rule, "user")
    return decision


def _shell_kind(p: RunParams) -> str:
    """The shell that will run ``p``'s command (SH1), as its task will find it."""
    env = {name: p.env.get(name, "") for name in ("WAVE_SHELL", "SHELL", "PATH")}
    try:
        return resolve_shell(env).kind
    except NoShellError:  # (none: the command will not run anyway)
        return "bash"


def refusal_text(decision: Decision, p: RunParams) -> str:
    """What the model reads when its command was not run."""
    if decision.verdict == "deny":
        return f"Permission denied: {decision.reason}. Nothing was run."
    where = p.rules.origin if p.rules is not None else "the permission rules"
    text = (
        f"This command needs approval: {decision.reason}. Nothing was run. "
        "A person can allow it when asked"
    )
    if decision.source != "rules":  # the caller's hook asked
        return f"{text}."
    if decision.rule is not None:  # an ask rule decided (or a rule it may match)
        return f"{text}; no allow rule can: ask and deny rules in {where} come first."
    if decision.subject is None:  # it cannot be checked
        return (
            f"{text}; a command that cannot be checked is allowed by no rule but Bash(*), "
            "and only where no rule denies or asks."
        )
    rules = decision.suggested
    if not rules:  # (only a person can: the command is not fully known before it runs)
        return f"{text}."
    such = (
        f"an allow rule such as {rules[0]}"
        if len(rules) == 1
        else ("allow rules such as " + ", ".join(rules))
    )
    return f"{text}, or with {such} in {where}."


def audit_refusal(decision: Decision, p: RunParams) -> None:
    """A refused command leaves no task: the supervisor log keeps it (no environment)."""
    log.warning(
        "permission %s (session %s, %s): %s — %s", decision.verdict, p.session,
        decision.source, short_command(p.command), decision.reason,
    )  # fmt: skip
