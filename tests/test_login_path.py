"""Login PATH probe (SPEC E1): once per host, inherited by every command, never -l per command."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import pytest
from conftest import wait_until

import wave_bash.api.client
from wave_bash.api import Client, inject_login_path
from wave_bash.api.connection import with_own_entries
from wave_bash.worker import parse_probe_output, probe_login_path, probe_script


def test_parse_ignores_rc_noise() -> None:
    out = (
        "Welcome!\nfortune cookie\n"
        + "\n__WAVE_LOGIN_PATH_START__/a:/b__WAVE_LOGIN_PATH_END__\nbye\n"
    )
    assert parse_probe_output(out) == "/a:/b"
    assert parse_probe_output("no markers at all") is None
    assert parse_probe_output("__WAVE_LOGIN_PATH_START____WAVE_LOGIN_PATH_END__") is None


def test_windows_script_uses_cygpath() -> None:
    assert 'cygpath -pw "$PATH"' in probe_script(windows=True)
    assert "cygpath" not in probe_script()


def _fake_home(tmp_path: Path, profile: str) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bash_profile").write_text(profile)
    return home


def test_probe_reads_login_profile(tmp_path: Path) -> None:
    home = _fake_home(tmp_path, 'echo noise from profile\nexport PATH="/opt/login-only:$PATH"\n')
    path = probe_login_path("/bin/bash", {"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert path is not None and path.startswith("/opt/login-only:")


def test_probe_failures_are_silent(tmp_path: Path) -> None:
    assert probe_login_path("/nonexistent/bash", {"PATH": "/usr/bin"}) is None
    home = _fake_home(tmp_path, f"echo $$ > {tmp_path}/pid; sleep 30\n")
    assert (
        probe_login_path("/bin/bash", {"HOME": str(home), "PATH": "/usr/bin:/bin"}, timeout=0.3)
        is None
    )
    wait_until((tmp_path / "pid").exists)
    os.killpg(int((tmp_path / "pid").read_text()), signal.SIGKILL)  # reap what we started


def test_a_slow_profile_is_left_to_finish(tmp_path: Path) -> None:
    """A login profile that holds a lock (pyenv's rehash) must not be killed holding it:
    the probe stops waiting, the shell finishes and cleans up after itself."""
    lock, done = tmp_path / "lock", tmp_path / "done"
    home = _fake_home(tmp_path, f"touch {lock}; sleep 1; rm {lock}; touch {done}\n")
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    assert probe_login_path("/bin/bash", env, timeout=0.3) is None
    # (released by the shell itself, which ran to its end; on a loaded host it may take
    # the lock only after the probe gave up: a CI run looked for it too soon)
    wait_until(done.exists, timeout=10)
    assert not lock.exists()


def _counting_shell(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    profile: str = 'export PATH="/opt/from-login:$PATH"\n',
) -> Path:
    """The user's shell (``WAVE_SHELL``, ``HOME``) made a bash wrapper that counts its
    login invocations in the file it returns (and gives the PATH it was started with as
    ``STARTED_WITH``); its login profile ``profile``, by default one that puts
    ``/opt/from-login`` first on the PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    counter = tmp_path / "login-count"
    wrapper = bindir / "bash"
    wrapper.write_text(
        f'#!/bin/bash\ncase "$1" in -l*|--login) echo x >> {counter};; esac\n'
        'export STARTED_WITH=$PATH; exec /bin/bash "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    home = _fake_home(tmp_path, profile)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WAVE_SHELL", str(wrapper))
    monkeypatch.setenv("PATH", os.environ["PATH"])
    return counter


def test_injected_once_and_inherited_without_login_shells(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = _counting_shell(tmp_path, monkeypatch)
    monkeypatch.setattr(wave_bash.api.client, "_login_path_injected", False)
    client = Client(state_dir=state_dir)
    path = inject_login_path(client)
    assert path and "/opt/from-login" in path.split(os.pathsep)
    inject_login_path(client)  # a second call in the same host does not probe again
    for _ in range(3):
        r = client.bash("echo $PATH; shopt -q login_shell && echo login || echo plain")
        assert r.stdout.splitlines() == [path, "plain"]
    assert counter.read_text().count("x") == 1


def test_the_entries_its_starter_put_on_the_path_stay_first(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile that sets the PATH anew (Debian's `/etc/profile`) dropped what the host's
    starter had put first, an activated venv's `bin`: `python` was not found (a review).
    Those entries stay, before the login PATH."""
    _counting_shell(tmp_path, monkeypatch, profile="export PATH=/opt/reset:/usr/bin:/bin\n")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{venv}:/usr/bin:/bin")
    monkeypatch.setattr(wave_bash.api.client, "_login_path_injected", False)
    client = Client(state_dir=state_dir)
    assert inject_login_path(client) == f"{venv}:/opt/reset:/usr/bin:/bin"
    # (absolute entries only: a `.` first ran a workspace's `ls`; a review)
    assert with_own_entries("/usr/bin:/bin", ".:/usr/bin:bin::./n/.bin:/x") == "/x:/usr/bin:/bin"
    assert client.bash("echo $PATH").stdout == f"{venv}:/opt/reset:/usr/bin:/bin"


def test_a_login_path_is_probed_for_each_path_it_starts_from(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a login profile makes of the PATH depends on the PATH it starts from (Debian's
    `/etc/profile` finds `id` on it to choose root's): the first caller's was given to
    every later one, a remote bridge with a broken PATH leaving every healthy call
    without `/usr/sbin` (a trial). Each PATH gets its own probe, once."""
    profile = 'export PATH="${STARTED_WITH%%:*}:$PATH"\n'  # (/etc/profile resets PATH)
    counter = _counting_shell(tmp_path, monkeypatch, profile)
    client = Client(state_dir=state_dir)
    found, path = [], os.environ["PATH"]
    for first in ("/first", "/second", "/second"):
        monkeypatch.setenv("PATH", f"{first}:{path}")
        found.append(client.login_path())
    assert [(p or "").split(":")[0] for p in found] == ["/first", "/second", "/second"]
    assert counter.read_text().count("x") == 2
