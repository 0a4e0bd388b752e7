"""The conformance suite bites: every deliberately broken adapter fails it.

Runs the whole suite (``quick`` Hypothesis profile) in a separate pytest
process over a generated module with one ``StorageConformance`` subclass per
adapter in tests/broken_adapters.py, plus a control subclass on the correct
reference store. A small plugin stops each class at its first failure (the
rest of that class is skipped), so the run stays short. The kill rate
(broken adapters failing at least one test) must be 100%, and the control
must pass everything.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _broken_names() -> list[str]:
    spec = importlib.util.spec_from_file_location("_broken_adapters_names", HERE / "broken_adapters.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.BROKEN)


_PLUGIN = """
import importlib.util
import json
import os

import pytest

_first_failure: dict[str, str] = {}
_stats: dict[str, dict[str, object]] = {}


def _owner(item):
    return item.cls.__name__ if item.cls is not None else item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    owner = _owner(item)
    if owner in _first_failure:
        pytest.skip(f"already killed by {_first_failure[owner]}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    stats = _stats.setdefault(_owner(item), {"passed": 0, "failed": [], "skipped": 0})
    if report.failed:
        stats["failed"].append(item.name)
        _first_failure.setdefault(_owner(item), item.name)
    elif report.when == "call" and report.passed:
        stats["passed"] += 1
    elif report.skipped:
        stats["skipped"] += 1


def pytest_sessionfinish(session):
    with open(os.environ["MEMORY_CORE_KILL_RESULTS"], "w", encoding="utf-8") as out:
        json.dump(_stats, out)
"""

_MODULE = """
import importlib.util
import sys

import pytest

from memory_core import InMemoryStorage
from memory_core_conformance import StorageConformance

_spec = importlib.util.spec_from_file_location("broken_adapters", {path!r})
_broken = importlib.util.module_from_spec(_spec)
sys.modules["broken_adapters"] = _broken
_spec.loader.exec_module(_broken)


def _factory_fixture(cls):
    @pytest.fixture
    def storage_factory(self):
        return lambda clock=None: cls(clock=clock)

    return storage_factory


class TestControl(StorageConformance):
    storage_factory = _factory_fixture(InMemoryStorage)


for _name, _cls in _broken.BROKEN.items():
    globals()[f"TestKill_{{_name}}"] = type(
        f"TestKill_{{_name}}", (StorageConformance,), {{"storage_factory": _factory_fixture(_cls)}}
    )
"""


@pytest.mark.heavy  # the whole suite, 23 times, in one test: run first (root conftest.py)
def test_every_broken_adapter_fails_the_suite(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(_PLUGIN), encoding="utf-8")
    (tmp_path / "test_generated_kills.py").write_text(
        _MODULE.format(path=str(HERE / "broken_adapters.py")), encoding="utf-8"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --import-mode=importlib\n", encoding="utf-8")
    results = tmp_path / "results.json"
    env = dict(os.environ, MEMORY_CORE_HYPOTHESIS_PROFILE="kill", MEMORY_CORE_KILL_RESULTS=str(results))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(tmp_path),
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            str(tmp_path / "pytest.ini"),
            "-W",
            "ignore::pytest.PytestUnraisableExceptionWarning",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert results.exists(), f"the generated suite did not run:\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    stats = json.loads(results.read_text(encoding="utf-8"))

    control = stats.get("TestControl", {})
    assert control.get("failed") == [], f"the suite fails the correct reference store: {control}"
    assert int(control.get("passed", 0)) >= 150, f"the control ran too few tests: {control}"

    names = _broken_names()
    killed = {name: stats.get(f"TestKill_{name}", {}).get("failed", []) for name in names}
    survivors = sorted(name for name, failures in killed.items() if not failures)
    rate = (len(names) - len(survivors)) / len(names)
    report = "\n".join(
        f"  {name:30} killed by {failures[0] if failures else '-- SURVIVED --'}" for name, failures in killed.items()
    )
    print(f"conformance kill rate: {rate:.0%} ({len(names) - len(survivors)}/{len(names)})\n{report}")
    assert len(names) >= 10
    assert not survivors, f"broken adapters that pass the suite: {survivors}\n{report}"
