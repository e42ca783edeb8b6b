"""wave-bash benchmarks: each figure beside a baseline measured in the same run.

    python tests/bench/run.py [--quick] [--state-dir EMPTY_DIR]

Not part of the test run. Uses a private temporary state dir and kills everything it
started, also when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import REPO, reap, start_supervisor

from wave_bash.api import Client
from wave_bash.worker import read_excerpt
from wave_bash.worker.output import clean_bytes

Row = tuple[str, str, str, str, str]


def percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def interleaved_round_trips(client: Client, n: int) -> tuple[list[float], list[float]]:
    """``n`` round trips of ``bash -c`` and of ``client``, one for one so that machine
    noise hits both alike, after a warm-up of both; returns (baseline, ours) seconds."""
    for _ in range(20):
        client.bash("echo hello")
        subprocess.run(["bash", "-c", "echo hello"], capture_output=True)
    base, ours = [], []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(["bash", "-c", "echo hello"], capture_output=True)
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        r = client.bash("echo hello")
        ours.append(time.perf_counter() - t)
        assert r.stdout == "hello"
    return base, ours


def bench_round_trip(client: Client, n: int) -> list[Row]:
    base, ours = interleaved_round_trips(client, n)
    rows = []
    for label, p in (("p50", 50), ("p90", 90)):
        b, o = percentile(base, p) * 1000, percentile(ours, p) * 1000
        target = "≤ 1.6×" if p == 50 else "-"
        rows.append(
            (f"foreground echo round trip {label}", f"{o:.2f} ms", f"{b:.2f} ms (bash -c)",
             f"{o / b:.2f}×", target)
        )  # fmt: skip
    # Back to back, with no pause for the standby monitor to finish starting.
    burst_base = [
        timed(lambda: subprocess.run(["bash", "-c", "echo hello"], capture_output=True))
        for _ in range(n)
    ]
    burst = [timed(lambda: client.bash("echo hello")) for _ in range(n)]
    b, o = percentile(burst_base, 50) * 1000, percentile(burst, 50) * 1000
    rows.append(
        ("  the same, calls back to back (p50)", f"{o:.2f} ms", f"{b:.2f} ms (bash -c)",
         f"{o / b:.2f}×", "-")
    )  # fmt: skip
    return rows


def busy_seconds() -> float:
    """CPU time the whole machine has spent so far, all processes and the kernel (Linux:
    ``/proc/stat``, idle and I/O wait left out; 0 elsewhere)."""
    try:
        with open("/proc/stat") as fh:
            ticks = [int(x) for x in fh.readline().split()[1:]]
    except OSError:
        return 0.0
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def timed(call: Callable[[], object]) -> float:
    t = time.perf_counter()
    call()
    return time.perf_counter() - t


def bench_process_tracking(tmp: Path, n: int, starts: int) -> list[Row]:
    """The round trip and background starts where no cgroup tracks tasks (a user without
    a delegated cgroup, a container): its monitors are child subreapers (``worker.spawner``)."""
    state = tmp / "process-tracking"
    try:
        start_supervisor(state, WAVE_TRACKING="process")
        client = Client(state_dir=state, session="bench")
        assert "process" in (client.status().tracking or "")
        base, ours = interleaved_round_trips(client, n)
        b, o = percentile(base, 50) * 1000, percentile(ours, 50) * 1000
        t = time.perf_counter()
        ids = [
            client.bash("sleep 600", run_in_background=True).background_task_id or ""
            for _ in range(starts)
        ]
        per_start = (time.perf_counter() - t) / starts * 1000
        client.task_stop_many(ids)
    finally:
        reap(state)
    return [
        ("foreground echo round trip p50 (process table)", f"{o:.2f} ms", f"{b:.2f} ms (bash -c)",
         f"{o / b:.2f}×", "-"),
        (f"background start, mean of {starts} (process table)", f"{per_start:.2f} ms", "-", "-", "-"),
    ]  # fmt: skip


def bench_cold_start(tmp: Path) -> Row:
    state = tmp / "cold"
    base = timed(lambda: subprocess.run([sys.executable, "-P", "-c", "pass"], check=True))
    t = time.perf_counter()
    r = Client(state_dir=state).bash("echo hello")
    took = time.perf_counter() - t
    assert r.stdout == "hello"
    reap(state)
    return (
        "cold start → first result", f"{took * 1000:.0f} ms",
        f"{base * 1000:.0f} ms (python -c pass)", f"{took / base:.1f}×", "< 500 ms",
    )  # fmt: skip


def bench_big_result(tmp: Path, size: int) -> Row:
    block = b"".join(
        b"\x1b[32mPASS\x1b[0m tests/test_%05d.py::case ... ok (%d ms)\n" % (i, i % 97)
        for i in range(20_000)
    )[: 1 << 20]  # 1 MiB of coloured test-runner lines
    path = tmp / "big.log"
    with open(path, "wb") as fh:
        for _ in range(size // len(block)):
            fh.write(block)
    small = tmp / "small.log"
    small.write_bytes(block)
    read_excerpt(small, 30_000)  # warm up (imports, regex compilation)
    base = statistics.median(timed(lambda: read_excerpt(small, 30_000)) for _ in range(5)) * 1000
    took = statistics.median(timed(lambda: read_excerpt(path, 30_000)) for _ in range(5)) * 1000
    tracemalloc.start()
    read_excerpt(path, 30_000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (
        f"result for a {size >> 30} GiB log",
        f"{took:.1f} ms, peak {peak / 1e6:.1f} MB",
        f"{base:.1f} ms (1 MiB log)",
        f"{took / base:.2f}×",
        "< 50 ms, memory flat",
    )


def bench_terminal_lines() -> Row:
    """Cleaning an interactive task's output, whose lines end in CRLF on its terminal,
    against the same lines ending in LF (each line was rendered as an overwrite before)."""
    lines = b"".join(b"line %07d of a test run ... ok\n" % i for i in range(200_000))
    crlf = lines.replace(b"\n", b"\r\n")
    clean_bytes(lines)  # warm up
    base = statistics.median(timed(lambda: clean_bytes(lines)) for _ in range(5)) * 1000
    took = statistics.median(timed(lambda: clean_bytes(crlf)) for _ in range(5)) * 1000
    return (
        f"cleaning {len(crlf) >> 20} MiB of terminal (CRLF) lines",
        f"{took:.1f} ms", f"{base:.1f} ms (LF lines)", f"{took / base:.2f}×", "-",
    )  # fmt: skip


def bench_completion_latency(client: Client, tmp: Path, n: int) -> list[Row]:
    lat, base = [], []
    for i in range(n):
        # Each writes a file of its own: one written over (the baseline's) costs ext4 a
        # truncation and a flush as it is closed (auto_da_alloc), 0.3 ms the baseline
        # never paid.
        stamps = [tmp / f"exit-{i}", tmp / f"exit-{i}-ours"]
        command = "sleep 0.05; printf %s $EPOCHREALTIME >| {}"
        subprocess.Popen(["bash", "-c", command.format(stamps[0])]).wait()  # a bare waitpid
        base.append(time.time() - float(stamps[0].read_text()))
        tid = client.bash(command.format(stamps[1]), run_in_background=True).background_task_id
        client.wait(tid or "", timeout=10_000)
        lat.append(time.time() - float(stamps[1].read_text()))
    return [
        (
            f"completion → wait returns {label}",
            f"{percentile(lat, p) * 1000:.2f} ms",
            f"{percentile(base, p) * 1000:.2f} ms (Popen.wait)",
            f"{percentile(lat, p) / percentile(base, p):.1f}×",
            target,
        )
        for label, p, target in (("p50", 50, "≤ 2×, < 10 ms"), ("p99", 99, "< 50 ms"))
    ]


BARE: list[subprocess.Popen[bytes]] = []
"""Baseline processes, killed in ``main``'s ``finally`` whatever happens."""


SINGLE_STOPS = 30
"""Tasks stopped one by one among the live ones, for the single-stop latency."""


def on_cpu(pid: int) -> float:
    """Seconds a single-threaded process has run on a CPU (``/proc/PID/schedstat``:
    nanoseconds, where ``cpu_times`` counts 10 ms ticks); 0 where it cannot be read."""
    try:
        with open(f"/proc/{pid}/schedstat") as fh:
            return int(fh.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def cpu_seconds(process: Any) -> float:
    """User and system time of a process, all its threads (a ``psutil.Process``)."""
    times = process.cpu_times()
    return float(times.user + times.system)


def bare_many(tmp: Path, n: int) -> tuple[float, float, float, float, float, float, float]:
    """The baseline of many background tasks: a bare ``subprocess.Popen`` loop, each in its
    own session with output to a file; returns (start s, the machine's CPU s for them, USS
    per task in bytes, stop s of the rest, p50 s of one ``killpg`` + wait among them, this
    process's CPU s per start, a task's own CPU s: `bash -c` that execs `sleep`). Its
    logs stay until the end of the run: on this disk (ext4 with no journal) a file created
    within seconds of many deletions costs up to 30 times as much (the allocator skips
    each recently deleted inode), and ours would pay for the baseline's."""
    import psutil

    logs = tmp / "bare-logs"
    logs.mkdir()
    me = psutil.Process()
    t, busy, mine = time.perf_counter(), busy_seconds(), cpu_seconds(me)
    for i in range(n):
        with open(logs / f"{i}.log", "ab") as log:
            BARE.append(
                subprocess.Popen(["bash", "-c", "sleep 600"], stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, start_new_session=True)
            )  # fmt: skip
    started, used = time.perf_counter() - t, busy_seconds() - busy
    popen = (cpu_seconds(me) - mine) / n
    uss = statistics.mean(psutil.Process(p.pid).memory_full_info().uss for p in BARE[:50])
    task_cpu = statistics.mean(on_cpu(p.pid) for p in BARE[:50])
    single = []
    for p in BARE[:SINGLE_STOPS]:
        t = time.perf_counter()
        os.killpg(p.pid, signal.SIGTERM)
        p.wait()
        single.append(time.perf_counter() - t)
    t = time.perf_counter()
    for p in BARE[SINGLE_STOPS:]:
        os.killpg(p.pid, signal.SIGTERM)
    for p in BARE[SINGLE_STOPS:]:
        p.wait()
    stopped = time.perf_counter() - t
    BARE.clear()
    return started, used, uss, stopped, statistics.median(single), popen, task_cpu


def bench_many_tasks(client: Client, tmp: Path, n: int) -> list[Row]:
    import psutil

    bare_start, bare_used, bare_uss, bare_stop, bare_single, popen, bare_task = bare_many(tmp, n)
    sup = psutil.Process(client.status().pid or 0)
    me = psutil.Process()
    rss_before = sup.memory_info().rss
    t, busy = time.perf_counter(), busy_seconds()
    sup_cpu, my_cpu = cpu_seconds(sup), cpu_seconds(me)
    ids = [
        client.bash("sleep 600", run_in_background=True).background_task_id or "" for _ in range(n)
    ]
    started, used = time.perf_counter() - t, busy_seconds() - busy
    sup_cpu, my_cpu = (cpu_seconds(sup) - sup_cpu) / n, (cpu_seconds(me) - my_cpu) / n
    rss = sup.memory_info().rss
    monitors = [psutil.Process(r.pid) for r in client.tasks() if r.pid and r.status == "running"]
    uss, monitor_cpu, job_cpu = [], [], []
    for m in monitors[:50]:  # a sample: monitor + command processes of a task
        procs = [m, *m.children(recursive=True)]
        uss.append(sum(p.memory_full_info().uss for p in procs))
        monitor_cpu.append(on_cpu(m.pid))
        job_cpu.append(sum(on_cpu(p.pid) for p in procs[1:]))
    single = []
    for task_id in ids[:SINGLE_STOPS]:  # one TaskStop among n live tasks, as an agent does
        t = time.perf_counter()
        assert client.task_stop(task_id).status == "killed"
        single.append(time.perf_counter() - t)
    t = time.perf_counter()
    records = client.task_stop_many(ids[SINGLE_STOPS:])
    stopped = time.perf_counter() - t
    assert all(r.status == "killed" for r in records)
    per_task = statistics.mean(uss)
    one = statistics.median(single)
    tracking = "cgroup" if "cgroup" in (client.status().tracking or "") else "process table"
    rest = n - SINGLE_STOPS
    return [
        (f"{n} background tasks: all started", f"{started:.2f} s",
         f"{bare_start:.2f} s (Popen loop)", f"{started / bare_start:.1f}×", "≤ 1.5×, < 5 s"),
        ("  the machine's CPU per start", f"{used / n * 1000:.2f} ms",
         f"{bare_used / n * 1000:.2f} ms (Popen loop)", f"{used / bare_used:.1f}×" if bare_used else "-", "-"),
        ("  of it: supervisor, client, monitor, job",
         " + ".join(f"{x * 1000:.2f}" for x in (sup_cpu, my_cpu, statistics.mean(monitor_cpu),
                                                statistics.mean(job_cpu))) + " ms",
         f"{popen * 1000:.2f} + {bare_task * 1000:.2f} ms (Popen, bash→sleep)", "-", "-"),
        (f"{n} background tasks: supervisor RSS",
         f"{rss / 1e6:.0f} MB (+{(rss - rss_before) / 1e6:.0f})", "-", "-", "< 150 MB"),
        (f"{n} background tasks: per-task USS", f"{per_task / 1e6:.2f} MB",
         f"{bare_uss / 1e6:.2f} MB (bare)", f"{per_task / bare_uss:.1f}×", "< 2 MB"),
        (f"one TaskStop among {n} live tasks p50 ({tracking})", f"{one * 1000:.1f} ms",
         f"{bare_single * 1000:.2f} ms (killpg + wait)", f"{one / bare_single:.0f}×", "≤ 10 ms"),
        (f"{n} background tasks: stop all ({rest})", f"{stopped:.2f} s",
         f"{bare_stop:.2f} s (killpg + wait)", f"{stopped / bare_stop:.1f}×", "≤ 0.5 s"),
    ]  # fmt: skip


def bench_cli_round_trip(state: Path, n: int) -> list[Row]:
    """The installed ``wave-bash`` script against a bare Python doing the same work, both
    with their bytecode compiled (as an install does; this machine sets
    ``PYTHONDONTWRITEBYTECODE``, so nothing would be cached otherwise)."""
    import compileall

    for package in ("api", "supervisor", "worker"):
        compileall.compile_dir(str(REPO / package), quiet=1)
    env = {**os.environ, "WAVE_STATE_DIR": str(state)}
    script = Path(sys.executable).with_name("wave-bash")
    cli = [str(script), "run", "--", "echo hello"]
    # The baseline: a bare Python process doing the same work with subprocess.run.
    bare = [sys.executable, "-c",
            "import subprocess; subprocess.run(['bash', '-c', 'echo hello'])"]  # fmt: skip
    base, ours = [], []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(bare, capture_output=True)
        base.append(time.perf_counter() - t)
        t = time.perf_counter()
        out = subprocess.run(cli, capture_output=True, env=env, text=True).stdout
        ours.append(time.perf_counter() - t)
        assert out == "hello\n", out
    rows = []
    for label, p in (("p50", 50), ("p90", 90)):
        b, o = percentile(base, p) * 1000, percentile(ours, p) * 1000
        rows.append(
            (f"CLI `wave-bash run` round trip {label}", f"{o:.1f} ms",
             f"{b:.1f} ms (python + subprocess.run)", f"{o / b:.2f}×",
             "≤ 1.5×" if p == 50 else "-")
        )  # fmt: skip
    return rows


def bench_throughput(client: Client, tmp: Path, size: int) -> list[Row]:
    import psutil

    sup = psutil.Process(client.status().pid or 0)
    peak = [sup.memory_info().rss]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], sup.memory_info().rss)

    bare_out = tmp / "bare.out"
    t = time.perf_counter()
    subprocess.run(["bash", "-c", f"head -c {size} /dev/zero > {bare_out}"], check=True)
    base = time.perf_counter() - t
    bare_out.unlink()
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    t = time.perf_counter()
    r = client.bash(f"head -c {size} /dev/zero", timeout=600_000)
    ours = time.perf_counter() - t
    done.set()
    watcher.join()
    assert r.exit_code == 0 and Path(r.output_path or "").stat().st_size == size
    Path(r.output_path or "").unlink()
    mib = size / (1 << 20)
    return [
        (
            f"command writing {mib / 1024:g} GiB",
            f"{ours:.2f} s ({mib / ours:.0f} MiB/s)",
            f"{base:.2f} s (bash > file)",
            f"{ours / base:.2f}×",
            "≤ 1.2×",
        ),
        ("  supervisor RSS meanwhile (peak)", f"{peak[0] / 1e6:.0f} MB", "-", "-", "< 100 MB"),
    ]


def bench_readoption(tmp: Path, n: int, settle: float) -> list[Row]:
    state = tmp / "readopt"
    client = Client(state_dir=state, session="bench")
    ids = [
        client.bash(f"sleep {settle}; echo done", run_in_background=True).background_task_id or ""
        for _ in range(n)
    ]
    (pid,) = [int(client.status().pid or 0)]
    os.kill(pid, signal.SIGKILL)
    t = time.perf_counter()
    tasks = client.tasks()  # starts a new supervisor, which re-adopts every live task
    took = time.perf_counter() - t
    adopted = sum(1 for task in tasks if task.status == "running")
    lost = 0
    for task_id in ids:
        record = client.wait(task_id, timeout=60_000)
        lost += record.status != "completed" or Path(record.output_path).read_text() != "done\n"
    reap(state)
    return [
        (
            f"kill -9 with {n} live tasks → next call",
            f"{took * 1000:.0f} ms, {adopted}/{n} re-adopted",
            "-",
            "-",
            "< 2 s, all",
        ),
        ("  output lost after re-adoption", f"{lost} of {n} tasks", "-", "-", "0"),
    ]


def disk_overhead(state: Path) -> list[Row]:
    con = sqlite3.connect(state / "journal.db")
    count = con.execute("SELECT count(*) FROM tasks").fetchone()[0]
    con.close()
    db = (state / "journal.db").stat().st_size
    wal = sum(p.stat().st_size for p in state.glob("journal.db-wal"))
    files = [p for p in (state / "tasks").iterdir() if not p.name.endswith(".log")]
    other = sum(p.stat().st_size for p in files)
    return [
        (
            f"journal size ({count} tasks)",
            f"{db / 1024:.0f} KiB ({db / max(count, 1):.0f} B/task) + WAL {wal / 1024:.0f} KiB",
            "-",
            "-",
            "-",
        ),
        (
            "per-task files besides the log",
            f"{len(files) / max(count, 1):.1f} files, {other / max(count, 1):.0f} B",
            "-",
            "-",
            "-",
        ),
    ]


def refuse_busy(state: Path) -> None:
    """The benchmark runs only against an empty state dir: it would disturb real tasks."""
    db = state / "journal.db"
    if db.exists():
        con = sqlite3.connect(db)
        count = con.execute("SELECT count(*) FROM tasks").fetchone()[0]
        con.close()
        if count:
            sys.exit(
                f"refusing to benchmark {state}: it holds {count} task(s); use an empty directory"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer samples (under a minute)")
    parser.add_argument("--state-dir", help="an empty state dir to use (default: a temporary one)")
    args = parser.parse_args()
    if args.state_dir:
        refuse_busy(Path(args.state_dir))  # before anything is created
    parent = os.environ.get("WAVE_BENCH_TMP", "/tmp")  # (its tests give it one of theirs)
    tmp = Path(tempfile.mkdtemp(prefix="wb-bench-", dir=parent))
    state = Path(args.state_dir).absolute() if args.state_dir else tmp / "state"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so `finally` cleans up
    quick = args.quick
    try:
        client = Client(state_dir=state, session="bench")
        sections: list[Callable[[], list[Row]]] = [
            lambda: bench_round_trip(client, 100 if quick else 500),
            lambda: bench_process_tracking(tmp, 100 if quick else 300, 200),
            lambda: bench_cli_round_trip(state, 20 if quick else 100),
            lambda: [bench_cold_start(tmp)],
            lambda: bench_throughput(client, tmp, (256 if quick else 1024) << 20),
            lambda: [bench_big_result(tmp, 1 << 30)],
            lambda: [bench_terminal_lines()],
            lambda: bench_completion_latency(client, tmp, 50 if quick else 200),
            lambda: bench_many_tasks(client, tmp, 1000),
            lambda: bench_readoption(tmp, 100 if quick else 500, 4 if quick else 8),
        ]
        rows = []
        for section in sections:
            # Each section starts with no pending writeback: left over from earlier work
            # (the 1 GiB test, a test run) it makes creating a file 3-5x slower here.
            os.sync()
            rows += section()
        rows += disk_overhead(state)
    finally:
        for proc in BARE:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        reap(state)
        reap(tmp / "readopt")
        reap(tmp / "process-tracking")
        shutil.rmtree(tmp, ignore_errors=True)
        if args.state_dir:
            shutil.rmtree(state / "tasks", ignore_errors=True)
    header = ("what", "wave-bash", "baseline", "ratio", "target")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    print(f"# {os.cpu_count()} cores, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}")
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
