"""Interleaved A/B of the supervisor at another revision against the working tree.

    python tests/bench/ab.py REV [--calls N]

Runs in sequence cannot compare two versions here: the host's speed drifts within a minute
(two runs of one version differed by 30 %). So this runs one supervisor per version, REV's
from a temporary git worktree and the working tree's, driven by one client process that
alternates their calls one for one, each beside a ``bash -c`` baseline. Both are driven
by the working tree's client. Not part of the test run; it removes every process, file
and worktree it made, also when interrupted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conftest import REPO, reap
from run import timed

from wave_bash.api import Client

PACKAGES = ("api", "supervisor", "worker")


def code_tree(rev: str, tmp: Path) -> Path:
    """REV checked out in a worktree, and an import path whose ``wave_bash.*`` are its
    folders (as the install maps them, see pyproject's package-dir)."""
    worktree = tmp / "worktree"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(worktree), rev],
        check=True,
    )
    names = tmp / "path" / "wave_bash"
    names.mkdir(parents=True)
    for package in PACKAGES:
        (names / package).symlink_to(worktree / package)
    return names.parent


def client_for(state: Path, env: dict[str, str]) -> Client:
    """A client whose supervisor (started here) runs the code ``env``'s path names."""
    supervisor = [sys.executable, "-P", "-m", "wave_bash.supervisor", "--state-dir", str(state)]
    subprocess.run([*supervisor, "--detach"], env=env, check=True, capture_output=True)
    client = Client(state_dir=state, session="ab")
    client.bash("true")
    return client


def alternate(clients: list[Client], rounds: int, call: Callable[[Client], float]) -> list[float]:
    """The p50 in ms of ``call`` for each client, their calls alternating one for one (the
    first call of each round switching sides)."""
    times: list[list[float]] = [[] for _ in clients]
    for i in range(rounds):
        order = range(len(clients)) if i % 2 else reversed(range(len(clients)))
        for k in order:
            times[k].append(call(clients[k]))
    return [statistics.median(t) * 1000 for t in times]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("rev", help="the revision to compare the working tree with")
    parser.add_argument("--calls", type=int, default=400, help="calls per version and figure")
    args = parser.parse_args()
    known = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{args.rev}^{{commit}}"],
        capture_output=True,
    )
    if known.returncode != 0:
        sys.exit(f"not a revision of this repository: {args.rev}")
    tmp = Path(tempfile.mkdtemp(prefix="wb-ab-", dir="/tmp"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so `finally` cleans up
    states = [tmp / "a", tmp / "b"]
    try:
        old_path = code_tree(args.rev, tmp)
        old_env = {**os.environ, "PYTHONPATH": str(old_path)}
        clients = [client_for(states[0], old_env), client_for(states[1], dict(os.environ))]
        base: list[float] = []

        def round_trip(client: Client) -> float:
            base.append(
                timed(lambda: subprocess.run(["bash", "-c", "echo hi"], capture_output=True))
            )
            return timed(lambda: client.bash("echo hi"))

        def back_to_back(client: Client) -> float:
            return statistics.median(timed(lambda: client.bash("echo hi")) for _ in range(20))

        def completion(client: Client) -> float:
            stamp = tmp / "stamp"
            command = f"sleep 0.05; printf %s $EPOCHREALTIME >| {stamp}"
            task_id = client.bash(command, run_in_background=True).background_task_id or ""
            client.wait(task_id, timeout=10_000)
            return time.time() - float(stamp.read_text())

        def starts(client: Client) -> float:
            t = time.perf_counter()
            ids = [
                client.bash("sleep 600", run_in_background=True).background_task_id or ""
                for _ in range(50)
            ]
            took = time.perf_counter() - t
            client.task_stop_many(ids)
            return took / 50

        n = args.calls
        alternate(clients, 20, round_trip)  # warm up both
        print(f"# {args.rev} (A) against the working tree (B), calls alternating")
        for label, call, rounds in (
            ("round trip p50", round_trip, n),
            ("back to back p50", back_to_back, max(2, n // 20)),
            ("completion -> wait p50", completion, max(2, n // 4)),
            ("background start (mean of 50) p50", starts, max(2, n // 50)),
        ):
            base.clear()
            a, b = alternate(clients, rounds, call)
            extra = f"  (bash -c {statistics.median(base) * 1000:.3f})" if base else ""
            print(f"{label}: A {a:.3f} ms  B {b:.3f} ms  B/A {b / a:.2f}{extra}")
    finally:
        for state in states:
            reap(state)
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "remove", "--force", str(tmp / "worktree")],
            capture_output=True,
        )
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
