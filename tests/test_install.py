"""A non-editable install in a fresh venv: only ``wave_bash.*`` names, beside PyPI's
``supervisor`` (supervisord), and ``wave-bash run`` works (issue 14 §1)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import REPO, needs, reap, supervisor_pids


def _run(*argv: str | Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [str(a) for a in argv], check=True, capture_output=True, text=True, **kwargs
    )


@pytest.mark.timeout(400)
def test_wheel_installs_beside_pypi_supervisor(tmp_path: Path) -> None:
    wheels = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, REPO, timeout=240)
    (wheel,) = wheels.glob("wave_bash-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"wave_bash", wheel.name.split("-py3")[0] + ".dist-info"}, tops
    assert not any(n.startswith("wave_bash/__init__") for n in zipfile.ZipFile(wheel).namelist())

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    site = _run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout
    # wave-bash's dependencies come from this test environment (fast), after the venv's own dir.
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site.strip(), "zz_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps"]
    # supervisord (PyPI `supervisor`) first, then the wheel: nothing of it is overwritten.
    got = subprocess.run(
        [*map(str, pip), "supervisor"], capture_output=True, text=True, timeout=240
    )
    needs(
        got.returncode == 0,
        "PyPI's supervisor package",
        f"a reachable package index ({got.stderr[-300:]})",
    )
    _run(*pip, wheel, timeout=120)

    assert _run(env_dir / "bin" / "supervisord", "--version").stdout.strip()
    where = _run(
        py, "-c",
        "import supervisor, supervisor.supervisord, wave_bash.supervisor, wave_bash.api,"
        " wave_bash.worker; print(supervisor.__file__); print(wave_bash.supervisor.__file__)",
        cwd=tmp_path,
    ).stdout.split()  # fmt: skip
    assert where == [
        str(Path(site.strip(), "supervisor", "__init__.py")),
        str(Path(site.strip(), "wave_bash", "supervisor", "__init__.py")),
    ]
    for generic in ("api", "worker"):
        missing = subprocess.run([py, "-c", f"import {generic}"], capture_output=True, cwd=tmp_path)
        assert missing.returncode == 1, f"a top-level {generic!r} is installed"

    state = tmp_path / "st"
    env = {**os.environ, "WAVE_STATE_DIR": str(state)}
    try:
        r = subprocess.run(
            [env_dir / "bin" / "wave-bash", "run", "--", "echo hello"],
            env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
        assert (r.returncode, r.stdout) == (0, "hello\n"), r.stderr
        assert supervisor_pids(state), "no `python -m wave_bash.supervisor` serves the state dir"
        # The editor that fails at once is the installed program (executable in the wheel)
        editor = subprocess.run(
            [env_dir / "bin" / "wave-bash", "run", "--", 'echo "$EDITOR"; "$EDITOR" f'],
            env={k: v for k, v in env.items() if k not in ("EDITOR", "VISUAL")},
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
        assert editor.returncode == 1, editor
        assert editor.stdout.startswith(f"{site.strip()}/wave_bash/worker/wave-bash-no-editor\n")
        assert "no editor can open here" in editor.stdout
    finally:
        reap(state)
