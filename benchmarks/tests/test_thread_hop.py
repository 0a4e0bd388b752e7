"""The thread-hop probe runs and reports every arrangement (in a subprocess:
it pins its own process to one CPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_the_probe_times_every_arrangement_and_job() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memory_core_bench.thread_hop", "--ops", "20"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert done.returncode == 0, done.stderr
    pinned = hasattr(os, "sched_setaffinity")
    for arrangement in ("aiosqlite", "executor", "to_thread", "inline"):
        for job in ("empty job", "one-row SELECT"):
            row = re.search(rf"{arrangement}\s*│\s*{job}\s*│([^\n]*)", done.stdout)
            assert row is not None, (arrangement, job, done.stdout)
            numbers = re.findall(r"\d+\.\d", row.group(1))
            assert len(numbers) == (2 if pinned else 1) and all(float(n) >= 0 for n in numbers)


def test_a_bad_ops_count_is_refused() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memory_core_bench.thread_hop", "--ops", "0"], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--ops must be >= 1" in done.stderr
