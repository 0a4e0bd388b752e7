"""No bare ``assert`` on a request path: ``python -O`` strips them, so an
invariant they state would pass unchecked. Library code raises the typed
error the invariant deserves (:mod:`memory_core.errors`) instead.

The scan walks every module of the library distributions with :mod:`ast`.
Left out are the conformance suite's own checks (its cases, state machines
and assertion helpers, whose ``assert`` is how pytest reports a difference)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = [
    ROOT / "memory_core",
    *sorted(ROOT.glob("adapters/*/memory_core_*")),
    ROOT / "conformance" / "memory_core_conformance",
    ROOT / "benchmarks" / "memory_core_bench",
]
CHECKS = {
    "conformance/memory_core_conformance/cases": "the suite's test cases",
    "conformance/memory_core_conformance/integrations": "the seams' state machines",
    "conformance/memory_core_conformance/stateful.py": "the storage state machine",
    "conformance/memory_core_conformance/vector.py": "the vector-store cases",
    "conformance/memory_core_conformance/hybrid.py": "the lexical and hybrid recall cases (R-HYBRID)",
    "conformance/memory_core_conformance/vector_store.py": "the vector-store state machine",
    "conformance/memory_core_conformance/harness.py": "assert_counters, documented to raise AssertionError",
    "conformance/memory_core_conformance/plans.py": "assert_flat, documented to raise AssertionError",
}
"""Paths (relative to the repository) whose asserts are test checks, and why."""


def _is_check(path: Path) -> bool:
    relative = path.relative_to(ROOT).as_posix()
    return any(relative == check or relative.startswith(check + "/") for check in CHECKS)


def bare_asserts() -> list[str]:
    """``file:line`` of every assert statement in library code."""
    found: list[tuple[str, int]] = []
    for root in LIBRARY:
        for path in sorted(root.rglob("*.py")):
            if _is_check(path):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            relative = path.relative_to(ROOT).as_posix()
            found += [(relative, node.lineno) for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    return [f"{relative}:{line}" for relative, line in sorted(found)]


def test_the_scan_reaches_every_library_package() -> None:
    assert all(root.is_dir() for root in LIBRARY) and len(LIBRARY) >= 8
    assert all((ROOT / check).exists() for check in CHECKS), "an exempt path moved: update CHECKS"


def test_library_code_has_no_bare_assert() -> None:
    found = bare_asserts()
    assert not found, "bare assert in library code (raise a memory_core.errors type instead):\n" + "\n".join(found)
