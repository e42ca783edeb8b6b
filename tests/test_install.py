"""A non-editable install in a fresh venv runs ``wave-bash run`` (the README's first command)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from conftest import REPO, reap


@pytest.mark.timeout(300)
def test_fresh_venv_install_runs(tmp_path: Path) -> None:
    wheels = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
        check=True, timeout=240, capture_output=True,
    )  # fmt: skip
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # Dependencies come from this test environment (offline, fast), after the venv's own dir.
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "zz_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    (wheel,) = wheels.glob("wave_bash-*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", site, str(wheel)],
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    where = subprocess.run(
        [str(py), "-c", "import api, supervisor, worker; print(api.__file__, supervisor.__file__, worker.__file__)"],
        check=True, capture_output=True, text=True, cwd=tmp_path,
    ).stdout  # fmt: skip
    assert all(p.startswith(site) for p in where.split()), where
    state = tmp_path / "st"
    env = {
        **os.environ,
        "WAVE_STATE_DIR": str(state),
        "PATH": f"{env_dir / 'bin'}:{os.environ['PATH']}",
    }
    script = env_dir / "bin" / "wave-bash"
    script.write_text(f"#!{py}\nimport sys\nfrom api.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    try:
        r = subprocess.run(
            ["wave-bash", "run", "--", "echo hello"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert (r.returncode, r.stdout) == (0, "hello\n"), r.stderr
    finally:
        reap(state)
