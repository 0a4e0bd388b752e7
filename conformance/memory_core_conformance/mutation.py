"""Mutation testing of an adapter against the shared suite alone (not CI).

Samples mutants of an adapter's modules with Cosmic Ray (each mutant is one
plausible bug: an operator, a comparison, a constant, a removed statement)
and runs a test command (the adapter's conformance module) against each. A
mutant the tests pass with *survived*: the suite cannot tell that adapter
from the reference. Run it from a repository root::

    pip install 'memory-core-conformance[mutation]'
    python -m memory_core_conformance.mutation \\
        adapters/postgres/memory_core_postgres/storage.py \\
        --tests adapters/postgres/tests/test_postgres_conformance.py \\
        --sample 40 --seed 28 --confirm 3

It works on a scratch copy of the root (the files in place are never
mutated), draws ``--sample`` mutants with ``--seed`` (the same seed and
sources give the same sample), runs the tests once per mutant with
``pytest -x`` (the first failure kills it), then runs every killed mutant
again until it has run ``--confirm`` times, so a kill that depends on
timing shows as ``killed 2/3``. Mutants inside type annotations of a
module with ``from __future__ import annotations`` are left out of the draw
(never evaluated: equivalent by construction). A drawn mutant whose code
does not compile (Cosmic Ray edits some tokens, such as the ``**`` of
``{**a, **b}``, into invalid syntax) is reported ``incompetent`` without a
test run: every test command fails on it, which is no kill. A mutant
whose test run outlasts ``--timeout`` is reported ``timeout``: neither
killed nor survived (Cosmic Ray counts it killed, but a hang, or a machine
too slow for the limit, is not a failed assertion), left out of the kill
rate and listed with its diff to judge by hand; a confirming run that
times out is no kill either. It prints one line per mutant (survivors and
timeouts with their diff), the kill rate over killed and survived mutants,
and the counts of timeouts and incompetent mutants, and writes the same
as JSON with ``--json``. Decide by reading each survivor's diff whether it is
equivalent (no behaviour can tell it apart: a log message, a cache size)
before counting it against the suite.

Exit code: 0 when it ran (whatever the kill rate), 2 when Cosmic Ray is not
installed or a step of it failed.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cosmic_ray.work_item import WorkItem

__all__ = [
    "MutantResult",
    "annotation_spans",
    "compiles",
    "drawn",
    "main",
    "mutated_source",
    "outcome_of",
    "run",
    "summary",
]

_IGNORED = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", "*.sqlite"
)


@dataclass(frozen=True, slots=True)
class MutantResult:
    """One sampled mutant and what the tests did to it.

    Attributes:
        job_id: Cosmic Ray's id of the mutant.
        module: the mutated file, relative to the root.
        line: the mutated line (1-based).
        operator: Cosmic Ray's operator name.
        occurrence: which occurrence of the operator in the file.
        outcome: ``killed``, ``survived``, ``timeout`` (the first test run
            outlasted the timeout: neither killed nor survived, not
            confirmed, left out of the kill rate) or ``incompetent`` (the
            mutant does not compile, and was not run; or the run crashed).
        kills: of ``runs`` runs, how many failed the tests (a run that timed
            out is no kill).
        runs: how many times the tests ran against it.
        diff: the mutation as a unified diff.
    """

    job_id: str
    module: str
    line: int
    operator: str
    occurrence: int
    outcome: str
    kills: int
    runs: int
    diff: str


Position = tuple[int, int]
"""(line 1-based, column 0-based), as Cosmic Ray and :mod:`ast` count."""


def annotation_spans(source: str) -> list[tuple[Position, Position]]:
    """The (start, end) of every type annotation in ``source`` (arguments,
    returns, annotated assignments) when the module has ``from __future__
    import annotations``, else none.

    Under that import annotations are never evaluated, so a mutant inside
    one (``str | None`` made ``str ** None``) is equivalent by construction:
    :func:`run` leaves such mutants out of the draw instead of spending a
    whole test run on each.
    """
    tree = ast.parse(source)
    future = any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    if not future:
        return []
    found: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return [
        ((n.lineno, n.col_offset), (n.end_lineno or n.lineno, n.end_col_offset or n.col_offset))
        for n in found
        if n is not None
    ]


def _in_annotation(module: Path, start: Position, spans: dict[Path, list[tuple[Position, Position]]]) -> bool:
    if module not in spans:
        spans[module] = annotation_spans(module.read_text("utf-8"))
    return any(low <= start < high for low, high in spans[module])


def mutated_source(source: str, operator: str, occurrence: int) -> str | None:
    """``source`` with Cosmic Ray's ``operator`` (its plugin name, such as
    ``core/NumberReplacer``) applied at ``occurrence``; None when the
    operator has no such occurrence in it."""
    import cosmic_ray.plugins
    from cosmic_ray.mutating import mutate_code

    mutated: str | None = mutate_code(source, cosmic_ray.plugins.get_operator(operator)(), occurrence)
    return mutated


def drawn(items: Sequence[WorkItem], sample: int, seed: int) -> set[str]:
    """The job ids of ``sample`` of ``items`` (Cosmic Ray work items) drawn
    with ``seed``; all of them when fewer exist.

    The draw depends only on the mutations, never on the order Cosmic Ray
    lists its items in (random job ids: two ``init`` runs of the same
    sources list them in different orders), so the same seed and sources
    give the same sample on every run and machine.
    """

    def key(item: WorkItem) -> list[tuple[str, tuple[int, int], tuple[int, int], str, int]]:
        return [
            (m.module_path.as_posix(), tuple(m.start_pos), tuple(m.end_pos), m.operator_name, m.occurrence)
            for m in item.mutations
        ]

    ordered = sorted(items, key=key)
    return {item.job_id for item in random.Random(seed).sample(ordered, min(sample, len(ordered)))}


def compiles(source: str) -> bool:
    """Whether ``source`` is valid Python (a mutant that is not can only be
    incompetent: it fails any test command at import)."""
    try:
        compile(source, "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def outcome_of(test_outcome: str, output: str | None) -> str:
    """The outcome of one test run, from Cosmic Ray's ``TestOutcome`` value
    (``killed``, ``survived``, ``incompetent``) and its output: ``timeout``
    for a run Cosmic Ray stopped at the time limit (which it reports as
    killed, with the output ``"timeout"``), else the value as given."""
    if test_outcome == "killed" and output == "timeout":
        return "timeout"
    return test_outcome


def summary(results: Sequence[MutantResult], seed: int) -> str:
    """The closing line of the report: the kill rate over the mutants the
    tests judged (killed or survived; timeouts and incompetent mutants are
    counted apart, never in the rate), and how many kills held on every run."""
    killed = [r for r in results if r.outcome == "killed"]
    judged = len(killed) + sum(r.outcome == "survived" for r in results)
    steady = [r for r in killed if r.kills == r.runs]
    timeouts = sum(r.outcome == "timeout" for r in results)
    incompetent = sum(r.outcome == "incompetent" for r in results)
    return (
        f"sampled {len(results)} (seed {seed}); killed {len(killed)}/{judged}"
        f" ({100 * len(killed) / max(1, judged):.0f}%), every run {len(steady)}/{len(killed)};"
        f" timeout {timeouts} (not in the rate); incompetent {incompetent}"
    )


def _diff(module: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{module}", f"b/{module}")
    return "--- mutation diff ---\n" + "".join(lines)


def _python_path(root: Path) -> str:
    """The copy's root, each adapter folder, conformance and benchmarks."""
    parts = [root, *sorted(p for p in (root / "adapters").glob("*") if p.is_dir())]
    parts += [root / "conformance", root / "benchmarks"]
    return os.pathsep.join(str(p) for p in parts if p.is_dir())


def _test_command(tests: Sequence[str], select: str | None) -> str:
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    if select:
        command += ["-k", select]
    return shlex.join(command)


def _cosmic(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "cosmic_ray.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"cosmic-ray {args[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def run(
    root: Path,
    modules: Sequence[str],
    tests: Sequence[str],
    *,
    sample: int = 40,
    seed: int = 28,
    confirm: int = 3,
    timeout_s: float = 600.0,
    select: str | None = None,
    operators: Sequence[str] = (),
) -> list[MutantResult]:
    """Sample mutants of ``modules`` and run ``tests`` against each.

    Args:
        root: the repository root (copied to a scratch folder first).
        modules: the files to mutate, relative to ``root``.
        tests: pytest arguments naming the tests (relative to ``root``).
        sample: how many mutants to draw (all when fewer exist).
        seed: the random seed of the draw.
        confirm: how many runs a killed mutant gets in all (>= 1).
        timeout_s: seconds one test run may take before the mutant counts
            as ``timeout``.
        select: a pytest ``-k`` expression, or None for every test.
        operators: Cosmic Ray operator name prefixes to keep (empty: all).

    Returns:
        One :class:`MutantResult` per sampled mutant, in job order.

    Raises:
        RuntimeError: a Cosmic Ray step failed.
    """
    from attrs import evolve
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with tempfile.TemporaryDirectory(prefix="mc-mutation-") as scratch:
        copy = Path(scratch) / "root"
        shutil.copytree(root, copy, ignore=_IGNORED)
        env = {**os.environ, "PYTHONPATH": _python_path(copy)}
        os.environ["PYTHONPATH"] = env["PYTHONPATH"]  # the confirming runs' tests inherit it
        command = _test_command(tests, select)
        config = Path(scratch) / "cosmic-ray.toml"
        config.write_text(
            "[cosmic-ray]\n"
            f"module-path = {json.dumps(list(modules))}\n"
            f"timeout = {float(timeout_s)}\n"
            "excluded-modules = []\n"
            f"test-command = {json.dumps(command)}\n"
            "[cosmic-ray.distributor]\n"
            'name = "local"\n'
        )
        session = Path(scratch) / "session.sqlite"
        _cosmic(["init", str(config), str(session)], copy, env)
        with use_db(str(session), WorkDB.Mode.open) as db:
            spans: dict[Path, list[tuple[Position, Position]]] = {}
            items = [
                item
                for item in db.work_items
                if (not operators or any(m.operator_name.startswith(tuple(operators)) for m in item.mutations))
                and not any(_in_annotation(copy / m.module_path, m.start_pos, spans) for m in item.mutations)
            ]
            chosen = drawn(items, sample, seed)
            invalid: dict[str, str] = {}  # job id -> diff of a drawn mutant that does not compile
            for item in db.work_items:
                if item.job_id in chosen:
                    spec = item.mutations[0]
                    before = (copy / spec.module_path).read_text("utf-8")
                    after = mutated_source(before, spec.operator_name, spec.occurrence)
                    if after is not None and not compiles(after):
                        invalid[item.job_id] = _diff(str(spec.module_path), before, after)
            skipped = [item.job_id for item in db.work_items if item.job_id not in chosen or item.job_id in invalid]
            db.set_multiple_results(skipped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
        _cosmic(["exec", str(config), str(session)], copy, env)
        results: list[MutantResult] = []
        with use_db(str(session), WorkDB.Mode.open) as db:
            outcomes = dict(db.results)
            for item in db.work_items:
                if item.job_id not in chosen:
                    continue
                mutation = item.mutations[0]
                result = outcomes[item.job_id]
                if item.job_id in invalid or result.test_outcome is None:
                    outcome = "incompetent"
                else:
                    outcome = outcome_of(result.test_outcome.value, result.output)
                kills, runs = int(outcome == "killed"), int(item.job_id not in invalid)
                if outcome == "killed":
                    spec = evolve(mutation, module_path=copy / mutation.module_path)
                    for _ in range(confirm - 1):
                        again = mutate_and_test([spec], command, timeout_s)
                        ran = "incompetent" if again.test_outcome is None else again.test_outcome.value
                        kills += outcome_of(ran, again.output) == "killed"
                        runs += 1
                results.append(
                    MutantResult(
                        job_id=item.job_id,
                        module=str(mutation.module_path),
                        line=mutation.start_pos[0],
                        operator=mutation.operator_name,
                        occurrence=mutation.occurrence,
                        outcome=outcome,
                        kills=kills,
                        runs=runs,
                        diff=invalid.get(item.job_id) or result.diff or "",
                    )
                )
        return results


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring); the exit code."""
    parser = argparse.ArgumentParser(prog="python -m memory_core_conformance.mutation", description=__doc__)
    parser.add_argument("modules", nargs="+", help="files to mutate, relative to --root")
    parser.add_argument("--tests", action="append", required=True, help="pytest path(s) of the tests to run")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: here)")
    parser.add_argument("--sample", type=int, default=40, help="mutants to draw (default 40)")
    parser.add_argument("--seed", type=int, default=28, help="seed of the draw (default 28)")
    parser.add_argument("--confirm", type=int, default=3, help="runs per killed mutant (default 3)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test run (default 600)")
    parser.add_argument("-k", dest="select", default=None, help="pytest -k expression")
    parser.add_argument("--operator", action="append", default=[], help="operator name prefix to keep")
    parser.add_argument("--json", type=Path, default=None, help="write the results here as JSON")
    args = parser.parse_args(argv)
    try:
        import cosmic_ray  # noqa: F401
    except ImportError:
        print("Cosmic Ray is not installed: pip install 'memory-core-conformance[mutation]'", file=sys.stderr)
        return 2
    try:
        results = run(
            args.root,
            args.modules,
            args.tests,
            sample=args.sample,
            seed=args.seed,
            confirm=max(1, args.confirm),
            timeout_s=args.timeout,
            select=args.select,
            operators=args.operator,
        )
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    for r in results:
        print(f"{r.outcome:<11} {r.kills}/{r.runs}  {r.module}:{r.line}  {r.operator} #{r.occurrence}")
        if r.outcome in ("survived", "timeout"):
            print("    " + r.diff.strip().replace("\n", "\n    "))
    print(summary(results, args.seed))
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
