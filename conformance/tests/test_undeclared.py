"""Adapters are told what their undeclared capabilities skipped, and what
the probes saw: at the end of a pytest run (the plugin's terminal summary)
and in ``memory-core check``'s report; and the probes see what a store has."""

from __future__ import annotations

import io
import itertools
import textwrap
from pathlib import Path

import pytest
from memory_core_conformance.check import run_check
from memory_core_conformance.examples.toyfile import ToyFileStorage
from memory_core_conformance.harness import StorageReopener
from memory_core_conformance.probes import probe_persistent, probe_shared_namespace
from memory_core_conformance.undeclared import TITLE
from rich.console import Console

from memory_core.clock import Clock
from memory_core.reference import InMemoryStorage
from memory_core.storage import BaseStorage

CAPABILITY_TESTS = "cap_ or c12"
"""``-k``: every capability test and probe (C12 needs SHARED_NAMESPACE)."""

_MODULE = """
import itertools

import pytest

from memory_core.capabilities import Capability
from memory_core.reference import InMemoryStorage
from memory_core.storage import no_store
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

    async def preflight(self, *, must_exist=False):
        if must_exist and self.namespace not in _Namespaces.stores:
            raise no_store("namespace", self.namespace, "no such namespace")


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
    assert persistent.startswith("persistent: not declared, 3 tests skipped; declaring it needs: add Capability")
    assert "Probe: your store seems to have persistent (a new instance read back what a closed one saved)" in persistent
    assert persistent.endswith("declare it to run 3 more tests.")
    assert shared.startswith("shared_namespace: not declared, 4 tests skipped")
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
        "persistent: not declared, 3 tests skipped",
        "shared_namespace: not declared, 4 tests skipped",
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
    assert "persistent: not declared, 3 tests skipped" in summary
    assert "Probe: no sign of persistent (a new instance did not see what a closed one saved)" in summary
    assert "shared_namespace: not declared, 4 tests skipped" in summary


def _twin(store: BaseStorage, clock: Clock | None = None) -> InMemoryStorage:
    """A second reference store on the same state as ``store`` (a toy shared namespace)."""
    assert isinstance(store, InMemoryStorage)
    twin = InMemoryStorage(clock=clock)
    twin._threads, twin._messages, twin._resources, twin._sequence = (
        store._threads,
        store._messages,
        store._resources,
        store._sequence,
    )
    return twin


def _fresh(clock: Clock | None = None) -> InMemoryStorage:
    return InMemoryStorage(clock=clock)


def _private(store: BaseStorage, clock: Clock | None = None) -> InMemoryStorage:
    return InMemoryStorage(clock=clock)


def _refuses(store: BaseStorage, clock: Clock | None = None) -> InMemoryStorage:
    raise AssertionError("not built by this factory")


@pytest.mark.anyio
async def test_probes_see_what_the_store_has(tmp_path: Path) -> None:
    numbers = itertools.count()

    def toy(clock: Clock | None = None) -> ToyFileStorage:
        return ToyFileStorage(tmp_path, namespace=f"n{next(numbers)}", clock=clock)

    def toy_again(store: BaseStorage, clock: Clock | None = None) -> ToyFileStorage:
        assert isinstance(store, ToyFileStorage)
        return ToyFileStorage(store.folder, namespace=store.namespace, clock=clock)

    assert (await probe_persistent(toy, toy_again)).seems_present is True
    assert (await probe_shared_namespace(toy, toy_again)).seems_present is False
    assert list(tmp_path.iterdir()) == [], "a probe left a namespace behind"  # noqa: ASYNC240
    shared = await probe_shared_namespace(_fresh, _twin)
    assert (shared.seems_present, shared.evidence) == (True, "a second open instance saw the first one's writes")


@pytest.mark.anyio
@pytest.mark.parametrize("reopener", [_private, _refuses])
async def test_probes_find_no_sign_in_private_stores_or_a_failing_reopener(reopener: StorageReopener) -> None:
    for probe in (probe_persistent, probe_shared_namespace):
        result = await probe(_fresh, reopener)
        assert result.seems_present is False
        assert ("raised AssertionError" in result.evidence) == (reopener is _refuses), result.evidence
