"""Many first calls at once on a fresh state dir, on a loaded machine: exactly one
supervisor is ever spawned and every call succeeds (issue 15)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, reap, supervisor_pids, wait_until

from wave_bash.api import Client

BURN = "while True: pass"


@pytest.mark.timeout(180)
def test_fifty_concurrent_starters_spawn_one_supervisor(tmp_path: Path) -> None:
    state = tmp_path / "state"
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    cli = [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state), "run", "--"]
    try:
        processes = [
            subprocess.Popen([*cli, f"echo p{i}"], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for i in range(25)
        ]  # fmt: skip
        answers: list[str] = []

        def call(i: int) -> None:
            answers.append(Client(state_dir=state, cwd=tmp_path).bash(f"echo t{i}").stdout)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(25)]
        for t in threads:
            t.start()
        outputs = [p.communicate(timeout=150) for p in processes]
        for t in threads:
            t.join(150)
        failed = [
            (p.returncode, err)
            for p, (_, err) in zip(processes, outputs, strict=True)
            if p.returncode
        ]
        assert failed == []
        assert sorted(out for out, _ in outputs) == sorted(f"p{i}\n" for i in range(25))
        assert sorted(answers) == sorted(f"t{i}" for i in range(25))
        log = (state / "supervisor.log").read_text()
        assert len(re.findall(r"supervisor \d+ serving", log)) == 1, log
        assert "another supervisor holds" not in log  # no second daemon was even started
        assert len(supervisor_pids(state)) == 1
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        reap(state)


def test_a_stalled_starter_delays_nobody_once_a_supervisor_serves(tmp_path: Path) -> None:
    """A starter stopped while it holds the start lock (Ctrl+Z): callers keep looking for
    a serving supervisor between short tries at the lock."""
    from filelock import FileLock

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    held = FileLock(str(state / "start.lock"))
    answers: list[str] = []
    try:
        with held:  # a starter that took the lock and stalled
            caller = threading.Thread(
                target=lambda: answers.append(
                    Client(state_dir=state, cwd=tmp_path).bash("echo hi").stdout
                )
            )
            caller.start()
            wait_until(lambda: (state / "start.lock").exists() and caller.is_alive())
            subprocess.run(  # meanwhile a supervisor comes up another way
                [sys.executable, "-P", "-m", "wave_bash.supervisor", "--state-dir", str(state),
                 "--detach"], check=True, timeout=60,
            )  # fmt: skip
            started = time.monotonic()
            caller.join(30)
            assert answers == ["hi"]
            assert time.monotonic() - started < 5  # not the lock's 15 s
    finally:
        reap(state)


def test_an_unusable_start_lock_is_a_clear_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "start.lock").symlink_to(tmp_path / "elsewhere")
    r = subprocess.run(
        [sys.executable, "-m", "wave_bash.api.cli", "--state-dir", str(state), "run", "--json",
         "--", "true"], capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "cannot use the start lock" in json.loads(r.stdout)["error"]
    assert not (tmp_path / "elsewhere").exists()
