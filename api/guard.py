"""What a caller asks the supervisor to check and confine its commands with, as the run
request carries it: permission rules (SPEC PM1) and a sandbox (SPEC SB1). Light enough
for the CLI's hot path (no pydantic; the supervisor validates)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .errors import InvalidInputError
from .permissions import RuleSet

SANDBOX_MODES = ("read-only", "workspace-write")


def rules_spec(
    rules: str | os.PathLike[str] | Mapping[str, Any] | RuleSet | None,
) -> dict[str, Any] | None:
    """The rules as a request carries them, checked now (a bad file fails here, with
    its name), or None when none are given."""
    if rules is None or rules == "":
        return None
    if isinstance(rules, RuleSet):
        rule_set = rules
    elif isinstance(rules, Mapping):
        rule_set = RuleSet.from_mapping(rules)
    else:
        rule_set = RuleSet.load(rules)
    return {**rule_set.to_json(), "origin": rule_set.origin}


def project_root(cwd: str) -> str:
    """The nearest ancestor of ``cwd`` (itself included) holding ``.git``, else ``cwd``;
    by its links' targets, as git finds its repository: a caller in ``mono/vendor/x``,
    a link to ``ext/x``, had ``mono`` for its sandbox's workspace (a review)."""
    current = os.path.realpath(cwd)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return os.path.realpath(cwd)
        current = parent


def nearest_existing_dir(path: str) -> str:
    """``path`` itself or its nearest ancestor that is a directory (``/`` at worst)."""
    current = os.path.normpath(path)
    while not os.path.isdir(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def default_workspace(cwd: str) -> str:
    """The writable workspace of a sandbox given none: the project root of ``cwd``.

    Raises:
        InvalidInputError: that would be ``/`` or the home directory (or above it): too
        wide to mean anything, so it must be given.
    """
    root = os.path.realpath(project_root(cwd))
    home = os.path.realpath(os.path.expanduser("~"))
    if root == "/" or home == root or home.startswith(root.rstrip("/") + "/"):
        raise InvalidInputError(
            f"the sandbox's writable workspace would be {root} (no .git above {cwd}): "
            "give it with --workspace DIR (or WAVE_SANDBOX_WORKSPACE, workspace=)"
        )
    return root


def workspace_for(mode: str, cwd: str) -> str:
    """The workspace of a sandbox given none, for a caller in ``cwd``: its project root
    (for ``workspace-write`` never ``/`` or the home directory: :func:`default_workspace`).

    Raises:
        InvalidInputError: ``workspace-write``'s would be too wide.
    """
    return default_workspace(cwd) if mode == "workspace-write" else project_root(cwd)


def sandbox_spec(
    mode: str | None, network: bool = False, workspace: str | os.PathLike[str] | None = None
) -> dict[str, Any] | None:
    """The sandbox as a request carries it, or None for ``off``/not given."""
    if mode in (None, "", "off"):
        return None
    if mode not in SANDBOX_MODES:
        raise InvalidInputError(f"sandbox must be read-only, workspace-write or off, not {mode!r}")
    where = os.path.abspath(os.fspath(workspace)) if workspace else None
    return {"mode": mode, "network": network, "workspace": where}


def from_environment(
    rules: str | os.PathLike[str] | Mapping[str, Any] | RuleSet | None = None,
    sandbox: str | None = None,
    allow_network: bool | None = None,
    workspace: str | None = None,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Rules and sandbox from arguments, else ``WAVE_RULES``, ``WAVE_SANDBOX``,
    ``WAVE_SANDBOX_NETWORK=1``, ``WAVE_SANDBOX_WORKSPACE`` (each file read once; given
    rules never read the environment's)."""
    env = os.environ
    network = allow_network if allow_network is not None else env.get("WAVE_SANDBOX_NETWORK") == "1"
    return (
        rules_spec(rules if rules is not None else env.get("WAVE_RULES")),
        sandbox_spec(
            sandbox if sandbox is not None else env.get("WAVE_SANDBOX"),
            network,
            workspace if workspace is not None else env.get("WAVE_SANDBOX_WORKSPACE"),
        ),
    )
