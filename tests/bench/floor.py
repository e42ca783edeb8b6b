"""The CPU a task's processes cost, by shape: how low the machine's CPU per background start
can go while every task has a monitor of its own (issue 15's 1000 starts).

    python tests/bench/floor.py [--tasks N]

Each shape runs ``sleep 0`` N times and reports the CPU its processes used, per task
(``RUSAGE_CHILDREN``: every process here is waited for by its parent, so each one counts):

- ``bash -c``: the baseline's task, a bash that execs the program (the ``Popen`` loop's).
- monitor exec'd: a bash started per task that forks a job, which execs the program, and
  waits for it: a wave-bash task's processes today, without the monitor's own script.
- monitor forked: the same monitor forked from a long-lived bash instead of exec'd. It is
  cheaper, but not an option as such: a command runs in its monitor's subshell, where
  ``$$`` is the long-lived bash's pid, the same for every task (``/tmp/out.$$`` would
  collide), unless its job exec'd a bash of its own: the exec saved, paid again.

The supervisor and the client come on top of the monitor's shape (the full benchmark's
"of it" row). Not part of the test run; it leaves no process behind.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
from collections.abc import Callable

MONITOR = "set -m; (exec sleep 0) & wait $!"
"""A monitor's shape once it has its instructions: it forks its job in a process group of
its own, which execs the program, and waits for it."""


def children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def per_task(run: Callable[[int], None], tasks: int) -> float:
    """Milliseconds of CPU per task that ``run(tasks)`` spent in processes it waited for."""
    before = children_cpu()
    run(tasks)
    return (children_cpu() - before) / tasks * 1000


def bare(tasks: int) -> None:
    for _ in range(tasks):
        subprocess.run(["bash", "-c", "sleep 0"], check=True)


def exec_monitors(tasks: int) -> None:
    for _ in range(tasks):
        subprocess.run(  # (it reads its instructions first)
            ["bash", "-c", f"IFS= read -r _; {MONITOR}"], input=b"go\n",
            stderr=subprocess.DEVNULL, check=True,
        )  # fmt: skip


def forked_monitors(tasks: int) -> None:
    """One bash reads each task's instructions and forks its monitor, and answers once that
    has ended."""
    loop = f"while IFS= read -r _; do ({MONITOR}); echo; done"
    with subprocess.Popen(
        ["bash", "-c", loop], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as zygote:  # fmt: skip
        assert zygote.stdin is not None and zygote.stdout is not None
        for _ in range(tasks):
            zygote.stdin.write(b"go\n")
            zygote.stdin.flush()
            zygote.stdout.readline()
        zygote.stdin.close()
        if zygote.wait(timeout=30) != 0:
            raise RuntimeError("the long-lived bash failed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=300)
    tasks = parser.parse_args().tasks
    rows = [
        ("bash -c (the baseline's task)", per_task(bare, tasks)),
        ("monitor exec'd + job (today's shape)", per_task(exec_monitors, tasks)),
        ("monitor forked from a long-lived bash + job", per_task(forked_monitors, tasks)),
    ]
    base = rows[0][1]
    for name, cpu in rows:
        print(f"{name:<46} {cpu:5.2f} ms CPU per task  {cpu / base:4.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
