"""What the worker layer raises; the supervisor maps these to the contract's errors once,
where a request reaches the worker (``supervisor.boundary``)."""

from __future__ import annotations


class NoShellError(Exception):
    """No shell to run commands with: neither bash nor zsh (nor Git Bash on Windows).
    ``str()`` tells the user what to install or set."""


class BadEnvironmentError(ValueError):
    """An environment no process can be given: a name with ``=`` or NUL, a lone surrogate."""
