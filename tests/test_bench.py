"""The benchmark's own bad input (issue 6): it refuses a state dir holding tasks, and it
leaves no process or file behind, also when interrupted."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import journal_rows, start_bg, supervisor_pids, wait_until

from wave_bash.api import Client

BENCH = Path(__file__).parent / "bench" / "run.py"

pytestmark = pytest.mark.xdist_group("bench")
"""One test worker runs these, one after the other."""


@pytest.fixture
def bench_tmp() -> Iterator[Path]:
    """A parent of its own for the benchmark's temp dirs (``WAVE_BENCH_TMP``): what a run
    left is looked for there, not in ``/tmp``, where any other benchmark run's are (one
    found a dir another process had made there, a CI run). Short: the socket path fits."""
    path = Path(tempfile.mkdtemp(prefix="wb-bt-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def bench_leftovers(parent: Path) -> list[str]:
    """Temp dirs a benchmark run left in ``parent``, and processes still using one."""
    left = sorted(glob.glob(f"{parent}/wb-bench-*"))
    for proc in psutil.process_iter(["cmdline", "environ"]):
        text = " ".join(proc.info["cmdline"] or []) + str(proc.info["environ"] or "")
        if f"{parent}/wb-bench-" in text:
            left.append(f"{proc.pid} {text[:120]}")
    return left


def test_refuses_a_state_dir_that_holds_tasks(
    client: Client, state_dir: Path, bench_tmp: Path
) -> None:
    task_id = start_bg(client, "sleep 300")
    run = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--state-dir", str(state_dir)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "WAVE_BENCH_TMP": str(bench_tmp)},
    )  # fmt: skip
    assert run.returncode != 0 and "refusing to benchmark" in run.stderr
    assert [r["id"] for r in journal_rows(state_dir)] == [task_id]  # nothing touched
    assert client.tasks()[0].status == "running"
    assert bench_leftovers(bench_tmp) == []  # and it created nothing of its own


@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_leaves_nothing_behind(sig: signal.Signals, bench_tmp: Path) -> None:
    bench = subprocess.Popen(
        [sys.executable, str(BENCH), "--quick"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "WAVE_BENCH_TMP": str(bench_tmp)},
    )  # fmt: skip
    try:
        # Interrupt it while it runs commands through its own supervisor.
        state = wait_until(
            lambda: [Path(d) / "state" for d in glob.glob(f"{bench_tmp}/wb-bench-*")]
        )
        wait_until(lambda: supervisor_pids(state[0]), timeout=30)  # type: ignore[index]
        bench.send_signal(sig)
        bench.wait(timeout=60)
        wait_until(lambda: bench_leftovers(bench_tmp) == [], timeout=15)
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
