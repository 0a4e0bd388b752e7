"""Run order of the repository's suite: the heaviest tests first.

The README's test command runs the suite in two worker processes
(``pytest -n 2 --dist loadgroup``): pytest-xdist hands out one unit at a
time, in collection order, to whichever worker is about to run out. A unit
is one test, or a whole module marked ``xdist_group`` (a module whose
module-scoped fixture loads a long thread or runs a benchmark: it runs on
one worker, once; xdist hands out the larger units first). A test is never
split, so a heavy test near the end of the collection keeps one worker busy
while the other has nothing left. Tests marked ``heavy`` (one test costing
tens of seconds of CPU: a whole suite in a subprocess, a state machine, the
LoCoMo data), the conformance state machines (``conformance_stateful``) and
property tests (``conformance_property``) therefore come first, and the
many short tests fill the end, so both workers finish within a short test
of each other. The order depends only on the collected items, so both
workers collect the same list (pytest-xdist requires that); without
pytest-xdist it changes only when each test runs.

Each process also runs its BLAS and OpenMP pools on one thread (unless the
environment already says otherwise): the two workers already fill the two
cores, and an OpenBLAS pool that spins waiting for work on a busy machine
burns ten times the CPU of the work itself (1,000 MiniLM turns through
the numpy pass: 130 CPU s with the default pool at load 25, 12 s with one
thread). Set here, before the workers start, so they and every process
they start inherit it.
"""

from __future__ import annotations

import os

import pytest

for _pool in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")

RANKS = {"heavy": 0, "conformance_stateful": 0, "conformance_property": 1}
"""Marker -> rank: rank 0 runs first (single tests of about a minute of CPU
or more: the ``ci`` state machine on the reference store took 63 s, the
broken-adapter run 104 s), then rank 1 (tens of Hypothesis examples each),
then every other test."""


def _rank(item: pytest.Item) -> int:
    return min((rank for name, rank in RANKS.items() if item.get_closest_marker(name)), default=max(RANKS.values()) + 1)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the tests by :data:`RANKS`: a stable sort, so each rank keeps
    its collection order (after pytest's own grouping by fixture
    parameters, hence ``trylast``)."""
    items.sort(key=_rank)


@pytest.fixture(autouse=True)
def _sigint_restored() -> object:
    """Each test leaves SIGINT as it found it: a command run in-process
    (typer's ``CliRunner``) ends with ``work_complete``, which ignores
    SIGINT in the main thread, and every process a later test starts would
    inherit that (a command started with SIGINT ignored keeps it ignored,
    so the Ctrl-C tests would see no interruption)."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)
