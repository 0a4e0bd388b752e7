"""Adapters are told what their undeclared capabilities skipped, and what
the probes saw: at the end of a pytest run (the plugin's terminal summary)
and in ``memory-core check``'s report."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest
from memory_core_conformance.check import run_check
from memory_core_conformance.undeclared import TITLE
from rich.console import Console

CAPABILITY_TESTS = "cap_ or c12"
"""``-k``: every capability test and probe (C12 needs SHARED_NAMESPACE)."""

_MODULE = """
import itertools

import pytest

from memory_core.capabilities import Capability
from memory_core.reference import InMemoryStorage
from memory_core_conformance import StorageConformance
from memory_core_conformance.examples.toyfile import ToyFileStorage
from memory_core_conformance.examples.toyfile_conformance import TestToyFileConformance


class UnderDeclaredToyFile(ToyFileStorage):
    capabilities = frozenset()  # it is persistent, but does not say so


class TestUnderDeclared(TestToyFileConformance):
    @pytest.fixture
    def storage_factory(self, tmp_path):
        numbers = itertools.count()
        return lambda clock=None: UnderDeclaredToyFile(tmp_path, namespace=f"n{next(numbers)}", clock=clock)

    @pytest.fixture
    def storage_reopener(self):
        return lambda store, clock=None: UnderDeclaredToyFile(store.folder, namespace=store.namespace, clock=clock)


class _Namespaces:
    stores = {}


class SharedMemory(InMemoryStorage):
    \"\"\"In-process namespaces every instance of one name shares (a toy server).\"\"\"

    capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED_NAMESPACE})

    def __init__(self, namespace, *, clock=None):
        super().__init__(clock=clock)
        self.namespace = namespace

    async def _open(self):
        state = _Namespaces.stores.setdefault(
            self.namespace, (self._threads, self._messages, self._resources, self._sequence)
        )
        self._threads, self._messages, self._resources, self._sequence = state


class TestDeclaresEverything(StorageConformance):
    @pytest.fixture
    def storage_factory(self):
        numbers = itertools.count()
        return lambda clock=None: SharedMemory(f"ns{id(self)}-{next(numbers)}", clock=clock)

    @pytest.fixture
    def storage_reopener(self):
        return lambda store, clock=None: SharedMemory(store.namespace, clock=clock)


class TestHonestInMemory(StorageConformance):
    @pytest.fixture
    def storage_factory(self):
        return lambda clock=None: InMemoryStorage(clock=clock)
"""


def _summary(tmp_path: Path, capsys: pytest.CaptureFixture[str], test_class: str) -> tuple[int, str]:
    """Run the capability tests of one class of :data:`_MODULE` in this
    process; returns pytest's exit code and the undeclared-capabilities
    section of its terminal output ("" when there is none)."""
    module = tmp_path / f"test_declarations_{test_class.lower()}.py"  # in-process runs keep modules by name
    module.write_text(textwrap.dedent(_MODULE), encoding="utf-8")
    code = pytest.main(
        [f"{module}::{test_class}", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-k", CAPABILITY_TESTS]
    )
    _, found, section = capsys.readouterr().out.partition(TITLE)
    return int(code), section.split("=====", 1)[0] if found else ""


def test_an_under_declaring_adapter_is_told_what_it_skipped_and_what_it_seems_to_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, section = _summary(tmp_path, capsys, "TestUnderDeclared")
    assert code == 0, section
    persistent, shared = [line.strip() for line in section.splitlines() if line.startswith("  ")]
    assert persistent.startswith("persistent: not declared, 2 tests skipped; declaring it needs: add Capability")
    assert "Probe: your store seems to have persistent (a new instance read back what a closed one saved)" in persistent
    assert persistent.endswith("declare it to run 2 more tests.")
    assert shared.startswith("shared_namespace: not declared, 3 tests skipped")
    assert "Probe: no sign of shared_namespace (a second open instance did not see" in shared


def test_an_adapter_declaring_every_capability_gets_no_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, section = _summary(tmp_path, capsys, "TestDeclaresEverything")
    assert code == 0
    assert section == ""


def test_an_honest_in_memory_adapter_gets_the_skip_list_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, section = _summary(tmp_path, capsys, "TestHonestInMemory")
    assert code == 0, section
    lines = [line.strip() for line in section.splitlines() if line.startswith("  ")]
    assert [line.split(";")[0] for line in lines] == [
        "persistent: not declared, 2 tests skipped",
        "shared_namespace: not declared, 3 tests skipped",
    ]
    assert all(line.endswith("Not probed: the test class defines no storage_reopener fixture.") for line in lines)


def test_check_reports_undeclared_capabilities_after_its_table() -> None:
    out = io.StringIO()
    code = run_check(
        "memory://",
        profile="quick",
        console=Console(file=out, width=400, color_system=None),
        keyword=CAPABILITY_TESTS,
    )
    text = out.getvalue()
    assert code == 0, text
    table, found, summary = text.partition(TITLE)
    assert found and "CAP:persistent" in table
    assert "persistent: not declared, 2 tests skipped" in summary
    assert "Probe: no sign of persistent (a new instance did not see what a closed one saved)" in summary
    assert "shared_namespace: not declared, 3 tests skipped" in summary
