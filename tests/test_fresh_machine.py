"""On a machine without zsh or tmux the README's test command passes: those tests skip
and name the package to install; CI's switch turns the skips into failures (issue 14 §5)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO

SELECTED = [
    "tests/test_foreground.py::test_zsh_via_wave_shell",
    "tests/test_terminal.py::test_ctrl_b_backgrounds_the_running_command",
]


def _run_without_zsh_and_tmux(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"  # a PATH with what a bare machine has, minus zsh and tmux
    bin_dir.mkdir()
    for tool in ("bash", "sh", "ps", "env", "cat", "sleep", "true"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    environ = {  # (not this worker's own variables: the run below is one of its own)
        k: v for k, v in os.environ.items() if not k.startswith(("WAVE_", "PYTEST_"))
    }
    environ.update(PATH=str(bin_dir), **env)
    return subprocess.run(  # (`-n 0`: in one process, not two more workers inside a worker)
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", "-rs",
         *SELECTED],
        cwd=REPO, env=environ, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_missing_tools_skip_and_name_the_package(tmp_path: Path) -> None:
    r = _run_without_zsh_and_tmux(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 skipped" in r.stdout, r.stdout
    assert "needs `zsh`: install the zsh package (apt-get install zsh)" in r.stdout
    assert "needs `tmux`: install the tmux package (apt-get install tmux)" in r.stdout


def test_ci_switch_turns_the_skips_into_failures(tmp_path: Path) -> None:
    r = _run_without_zsh_and_tmux(tmp_path, WAVE_TEST_REQUIRE_ALL="1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "nothing may be skipped" in r.stdout
