"""Shell resolution order (SPEC SH1) with injected lookups, and the monitor choice."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from wave_bash.api import Client
from wave_bash.worker import NoShellError, Shell, resolve_monitor_bash, resolve_shell, shell_kind


def fs(*executables: str):  # type: ignore[no-untyped-def]
    """Fake lookups over a set of executable paths."""
    exe = set(executables)

    def which(name: str, path: str | None) -> str | None:
        for d in (path or "").split(":"):
            if f"{d}/{name}" in exe:
                return f"{d}/{name}"
        return None

    return {"which": which, "is_executable": exe.__contains__}


ALL = fs("/opt/bash5", "/usr/bin/bash", "/usr/bin/zsh", "/bin/bash", "/bin/sh", "/opt/zsh")


def test_wave_shell_first() -> None:
    env = {"WAVE_SHELL": "/opt/zsh", "SHELL": "/usr/bin/bash", "PATH": "/usr/bin"}
    assert resolve_shell(env, **ALL) == Shell("/opt/zsh", "zsh")


def test_wave_shell_by_name() -> None:
    env = {"WAVE_SHELL": "zsh", "PATH": "/usr/bin"}
    assert resolve_shell(env, **ALL) == Shell("/usr/bin/zsh", "zsh")


def test_wave_shell_that_names_no_bash_or_zsh_is_an_error() -> None:
    """A misspelt or missing WAVE_SHELL ran bash without a word (a trial): the setting
    says which shell the person wants, so it is said, as WAVE_GIT_BASH_PATH is."""
    for bad in ("/bin/sh", "/opt/fish", "/missing/bash", "zhs", "fish", "zsh5"):
        env = {"WAVE_SHELL": bad, "SHELL": "/usr/bin/zsh", "PATH": "/usr/bin"}
        with pytest.raises(NoShellError, match=f"WAVE_SHELL is set to {bad}, which is not"):
            resolve_shell(env, **ALL)
    unset = {"WAVE_SHELL": "", "PATH": "/usr/bin"}  # (empty: not set)
    assert resolve_shell(unset, **ALL) == Shell("/usr/bin/bash", "bash")


def test_dollar_shell_zsh_preferred_over_bash_on_path() -> None:
    env = {"SHELL": "/usr/bin/zsh", "PATH": "/usr/bin"}
    assert resolve_shell(env, **ALL) == Shell("/usr/bin/zsh", "zsh")


def test_dollar_shell_bash() -> None:
    env = {"SHELL": "/opt/bash5", "PATH": "/usr/bin"}
    assert resolve_shell(env, **ALL).path == "/opt/bash5"


def test_dollar_shell_sh_or_fish_is_skipped() -> None:
    for sh in ("/bin/sh", "/usr/bin/fish", "/bin/dash"):
        env = {"SHELL": sh, "PATH": "/usr/bin"}
        assert resolve_shell(env, **ALL) == Shell("/usr/bin/bash", "bash")


def test_bin_bash_when_not_on_path() -> None:
    env = {"PATH": "/nowhere"}
    assert resolve_shell(env, **fs("/bin/bash", "/bin/sh")) == Shell("/bin/bash", "bash")


def test_zsh_last() -> None:
    env = {"PATH": "/usr/bin"}
    assert resolve_shell(env, **fs("/usr/bin/zsh", "/bin/sh")) == Shell("/usr/bin/zsh", "zsh")


def test_nothing_found_never_falls_back_to_sh() -> None:
    with pytest.raises(NoShellError) as err:
        resolve_shell({"SHELL": "/bin/sh", "PATH": "/bin"}, **fs("/bin/sh", "/bin/dash"))
    message = str(err.value)
    assert "install bash" in message.lower() and "WAVE_SHELL" in message
    assert "/bin/sh" in message  # says it will not use it


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/bin/bash", "bash"),
        ("/usr/local/bin/zsh-5.9", "zsh"),
        ("C:\\Git\\bin\\bash.exe", "bash"),
        ("/bin/sh", None),
        ("/bin/bashful", None),
        ("/usr/bin/fish", None),
    ],
)
def test_shell_kind(path: str, kind: str | None) -> None:
    assert shell_kind(path) == kind


def test_monitor_is_the_same_bash_or_any_bash_for_zsh() -> None:
    env = {"PATH": "/usr/bin"}
    assert resolve_monitor_bash(Shell("/opt/bash5", "bash"), env, **ALL) == "/opt/bash5"
    assert resolve_monitor_bash(Shell("/usr/bin/zsh", "zsh"), env, **ALL) == "/usr/bin/bash"
    assert resolve_monitor_bash(Shell("/usr/bin/zsh", "zsh"), env, **fs("/usr/bin/zsh")) is None


def test_relative_path_entries_are_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative PATH entry names a directory a command may write (a sandboxed one
    too): a `bash` there would run the monitor, outside any sandbox."""
    planted = tmp_path / "node_modules" / ".bin" / "bash"
    planted.parent.mkdir(parents=True)
    planted.write_text("#!/bin/sh\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    real = shutil.which("bash")
    assert real is not None
    env = {"PATH": f"node_modules/.bin:.:{os.path.dirname(real)}"}
    assert resolve_shell(env).path == real
    assert resolve_monitor_bash(Shell("/usr/bin/zsh", "zsh"), env) == real


@pytest.mark.parametrize("kind", ["bash", "zsh"])
def test_a_shell_that_is_no_bash_or_zsh_is_refused_and_runs_nothing(
    state_dir: Path, tmp_path: Path, kind: str
) -> None:
    """A script named `bash` first on PATH ran as the monitor: it printed its own words
    and the task "completed" with exit 0, its command never run (a trial); the next call
    failed with "[Errno 32] Broken pipe". A shell that does not say its version is
    refused, naming it, and nothing is recorded; real shells run on as before."""
    fake = tmp_path / "bin" / kind
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho i am no {kind}; exit 0\n")
    fake.chmod(0o755)
    real_bash = shutil.which("bash")
    assert real_bash is not None
    env = {**os.environ, "PATH": f"{fake.parent}:{os.path.dirname(real_bash)}:/usr/bin:/bin",
           "SHELL": str(fake)}  # fmt: skip
    impostor = Client(state_dir=state_dir, env=env, cwd=tmp_path)
    for _ in range(2):  # (the second found a broken standby)
        r = impostor.bash("echo ran > ran.txt")
        assert (r.success, r.exit_code) == (False, None), r
        assert f"{fake} is named {kind} but is no working {kind}" in (r.error or ""), r
    assert not (tmp_path / "ran.txt").exists()
    assert impostor.tasks(all=True) == []
    assert Client(state_dir=state_dir).bash("echo fine").stdout == "fine"
    # Mended in place (a wrapper of the real one now): asked again, no restart needed.
    real = shutil.which(kind)
    assert real is not None
    fake.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    assert impostor.bash("echo ran > ran.txt").exit_code == 0
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
