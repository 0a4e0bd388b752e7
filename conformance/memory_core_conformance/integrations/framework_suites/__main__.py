"""Command line: see the package docstring (``python -m
memory_core_conformance.integrations.framework_suites --help``)."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Outcome", "download_sdist", "main", "run_suite", "table"]

_PACKAGE = "memory_core_conformance.integrations.framework_suites"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One test case's result.

    Attributes:
        case: the pytest node id relative to the suite's folder.
        result: ``"passed"``, ``"failed"`` (failures and errors) or ``"skipped"``.
        internal: why the case tests the framework's reference itself (``""``:
            it tests the seam).
    """

    case: str
    result: str
    internal: str = ""


def download_sdist(distribution: str, version: str, into: Path) -> Path:
    """Download ``distribution==version``'s source distribution into ``into``
    (``pip download --no-binary :all: --no-deps``) and unpack it.

    Returns:
        The unpacked folder (the archive's single top folder).

    Raises:
        RuntimeError: pip failed (no index, no such version) or the archive
            is not a ``.tar.gz`` with one top folder.
    """
    command = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps"]
    done = subprocess.run(
        [*command, "-q", "-d", str(into), f"{distribution}=={version}"], capture_output=True, text=True, check=False
    )
    archives = sorted(into.glob("*.tar.gz"))
    if done.returncode != 0 or len(archives) != 1:
        raise RuntimeError(f"pip download {distribution}=={version} failed: {(done.stderr or done.stdout).strip()}")
    with tarfile.open(archives[0]) as archive:
        tops = {name.split("/", 1)[0] for name in archive.getnames()}
        if len(tops) != 1:
            raise RuntimeError(f"{archives[0].name}: expected one top folder, found {sorted(tops)}")
        archive.extractall(into, filter="data")
    return into / tops.pop()


def run_suite(
    root: Path, files: Sequence[str], plugin: str, internal: Mapping[str, str], extra: Sequence[str] = ()
) -> list[Outcome]:
    """Run ``files`` (paths inside ``root``) with pytest in ``root`` (the
    framework's own configuration and conftest files apply) and the seam
    ``plugin`` loaded; returns every case's outcome, cases whose test
    function is a key of ``internal`` marked with its reason.

    Raises:
        RuntimeError: pytest produced no report (it could not start).
    """
    report = root / "memory-core-report.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-q", "-p", plugin, "-p", "no:cacheprovider", f"--junitxml={report}"]
    done = subprocess.run([*command, *extra, *files], cwd=root, env=env, capture_output=True, text=True, check=False)
    if not report.exists():
        raise RuntimeError(f"pytest did not run the suite:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    outcomes = []
    for case in ET.parse(report).getroot().iter("testcase"):
        result = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            result = "failed"
        elif case.find("skipped") is not None:
            result = "skipped"
        name = case.get("name", "")
        node = f"{case.get('classname', '').replace('.', '/')}.py::{name}"
        outcomes.append(Outcome(node, result, internal.get(name.split("[", 1)[0], "")))
    return outcomes


def table(outcomes: Sequence[Outcome]) -> tuple[str, bool]:
    """The pass/fail table (seam cases first, then the reference-internal
    ones with their reasons) and whether every seam case passed (skips
    count as passed, as in the framework's own run)."""
    seam = [o for o in outcomes if not o.internal]
    internal = [o for o in outcomes if o.internal]
    lines = [f"{'result':8} case"]
    lines += [f"{o.result:8} {o.case}" for o in seam]
    passed = sum(o.result == "passed" for o in seam)
    lines.append(f"seam cases: {passed} passed, {sum(o.result == 'failed' for o in seam)} failed of {len(seam)}")
    if internal:
        lines.append("")
        lines.append("reference-internal cases (they test the framework's own implementation; not counted):")
        lines += [f"{o.result:8} {o.case}\n         why: {o.internal}" for o in internal]
    return "\n".join(lines), all(o.result != "failed" for o in seam)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one framework's session suite on memory-core's seam and print the
    table. Returns 0 (every seam case passed), 1 (some failed) or 2 (the
    suite could not be fetched or run)."""
    parser = argparse.ArgumentParser(prog=f"python -m {_PACKAGE}", description=(__doc__ or "").splitlines()[0])
    which = parser.add_subparsers(dest="framework", required=True)
    openai = which.add_parser("openai-agents", help="the OpenAI Agents SDK's sdist session tests")
    openai.add_argument("--version", help="openai-agents version (default: the installed one)")
    openai.add_argument("--keep", type=Path, help="download and run in this folder (kept) instead of a temporary one")
    adk = which.add_parser("google-adk", help="ADK's session-service tests from a checkout of its repository")
    adk.add_argument("--checkout", type=Path, required=True, help="a checkout of github.com/google/adk-python")
    args = parser.parse_args(argv)
    try:
        if args.framework == "openai-agents":
            outcomes = _openai_agents(args.version or importlib.metadata.version("openai-agents"), args.keep)
        else:
            outcomes = _google_adk(args.checkout)
    except (RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text, ok = table(outcomes)
    print(text)
    return 0 if ok else 1


def _openai_agents(version: str, keep: Path | None) -> list[Outcome]:
    from .openai_agents import REFERENCE_INTERNAL, SUITE_FILES

    with tempfile.TemporaryDirectory(prefix="mc-openai-agents-") as temporary:
        folder = keep if keep is not None else Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        root = download_sdist("openai-agents", version, folder)
        return run_suite(root, SUITE_FILES, f"{_PACKAGE}.openai_agents", REFERENCE_INTERNAL)


def _google_adk(checkout: Path) -> list[Outcome]:
    from .google_adk import REFERENCE_INTERNAL, SUITE_FILES

    if not (checkout / SUITE_FILES[0]).is_file():
        raise RuntimeError(f"{checkout} is not a checkout of google/adk-python (no {SUITE_FILES[0]})")
    return run_suite(checkout, SUITE_FILES, f"{_PACKAGE}.google_adk", REFERENCE_INTERNAL, ["-k", "DATABASE"])


if __name__ == "__main__":
    sys.exit(main())
