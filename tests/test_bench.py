"""The benchmark's own bad input (issue 6): it refuses a state dir holding tasks, and it
leaves no process or file behind, also when interrupted."""

from __future__ import annotations

import glob
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import journal_rows, start_bg, supervisor_pids, wait_until

from wave_bash.api import Client

BENCH = Path(__file__).parent / "bench" / "run.py"

pytestmark = pytest.mark.xdist_group("bench")
"""One test worker runs these, one after the other: each looks for what any benchmark run
left in ``/tmp``, and would find another test's run under way."""


def bench_leftovers(before: set[str]) -> list[str]:
    """Temp dirs a benchmark run left, and processes still using a benchmark dir."""
    left = sorted(set(glob.glob("/tmp/wb-bench-*")) - before)
    for proc in psutil.process_iter(["cmdline", "environ"]):
        text = " ".join(proc.info["cmdline"] or []) + str(proc.info["environ"] or "")
        if "/tmp/wb-bench-" in text:
            left.append(f"{proc.pid} {text[:120]}")
    return left


def test_refuses_a_state_dir_that_holds_tasks(client: Client, state_dir: Path) -> None:
    task_id = start_bg(client, "sleep 300")
    before = set(glob.glob("/tmp/wb-bench-*"))
    run = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--state-dir", str(state_dir)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode != 0 and "refusing to benchmark" in run.stderr
    assert [r["id"] for r in journal_rows(state_dir)] == [task_id]  # nothing touched
    assert client.tasks()[0].status == "running"
    assert bench_leftovers(before) == []  # and it created nothing of its own


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_leaves_nothing_behind(sig: signal.Signals) -> None:
    before = set(glob.glob("/tmp/wb-bench-*"))
    bench = subprocess.Popen(
        [sys.executable, str(BENCH), "--quick"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # Interrupt it while it runs commands through its own supervisor.
        state = wait_until(
            lambda: [Path(d) / "state" for d in set(glob.glob("/tmp/wb-bench-*")) - before]
        )
        wait_until(lambda: supervisor_pids(state[0]), timeout=30)  # type: ignore[index]
        bench.send_signal(sig)
        bench.wait(timeout=60)
        wait_until(lambda: bench_leftovers(before) == [], timeout=15)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()


def test_the_process_floor_probe_measures_each_shape() -> None:
    """``tests/bench/floor.py`` (the CPU of a task's processes, by shape) runs each shape
    and leaves no process behind."""
    me = psutil.Process()
    run = subprocess.run(
        [sys.executable, str(BENCH.with_name("floor.py")), "--tasks", "3"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [line.split("  ")[0] for line in lines] == [
        "bash -c (the baseline's task)",
        "monitor exec'd + job (today's shape)",
        "monitor forked from a long-lived bash + job",
    ]
    assert all("ms CPU per task" in line for line in lines)
    assert me.children(recursive=True) == []
