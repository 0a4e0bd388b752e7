"""The failed-open case bites: it fails adapters whose failed open is
untyped, silently "succeeds", or is remembered as open; and passes a correct
one. The case is called directly on stores of small toy variants."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from memory_core_conformance.cases.opening import OpeningCases
from memory_core_conformance.examples.toyfile import ToyFileStorage
from memory_core_conformance.harness import StorageFactory

from memory_core.clock import Clock
from memory_core.errors import ValidationError


class _SwallowsOpenErrors(ToyFileStorage):
    """An unreadable file is taken for an empty store (the error is lost)."""

    async def _open(self) -> None:
        try:
            await super()._open()
        except Exception:
            return


class _RemembersFailedOpen(ToyFileStorage):
    """Marks itself connected before reading, so a second open "succeeds"."""

    _tried = False

    async def _open(self) -> None:
        if self._tried:
            return
        self._tried = True
        await super()._open()


class _UntypedOpenError(ToyFileStorage):
    """Turns the failure into a ValidationError that names no field."""

    async def _open(self) -> None:
        try:
            await super()._open()
        except Exception as exc:
            raise ValidationError("", f"{exc}") from exc  # names no field


def _factories(tmp_path: Path, cls: type[ToyFileStorage]) -> tuple[StorageFactory, StorageFactory]:
    """(unopenable factory, good factory) of ``cls`` in ``tmp_path``."""
    numbers = itertools.count()

    def unopenable(clock: Clock | None = None) -> ToyFileStorage:
        namespace = f"garbage{next(numbers)}"
        (tmp_path / f"{namespace}.pickle").write_bytes(b"not a pickle")
        return cls(tmp_path, namespace=namespace, clock=clock)

    def good(clock: Clock | None = None) -> ToyFileStorage:
        return cls(tmp_path, namespace=f"good{next(numbers)}", clock=clock)

    return unopenable, good


async def _run_case(tmp_path: Path, cls: type[ToyFileStorage]) -> None:
    unopenable, good = _factories(tmp_path, cls)
    await OpeningCases().test_lifecycle_failed_open_is_typed_and_leaves_nothing_half_open(unopenable, good)


@pytest.mark.anyio
async def test_the_failed_open_case_passes_a_correct_adapter(tmp_path: Path) -> None:
    await _run_case(tmp_path, ToyFileStorage)


@pytest.mark.anyio
@pytest.mark.parametrize("broken", [_SwallowsOpenErrors, _RemembersFailedOpen, _UntypedOpenError])
async def test_the_failed_open_case_fails_a_broken_adapter(tmp_path: Path, broken: type[ToyFileStorage]) -> None:
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        await _run_case(tmp_path, broken)


@pytest.mark.anyio
async def test_the_failed_open_case_is_skipped_without_a_target(tmp_path: Path) -> None:
    _, good = _factories(tmp_path, ToyFileStorage)
    with pytest.raises(pytest.skip.Exception):
        await OpeningCases().test_lifecycle_failed_open_is_typed_and_leaves_nothing_half_open(None, good)
