"""Opens that fail, and a store closed before it opened (LIFECYCLE).

A failed open must be typed (``BackendError`` naming the backend and the
operation ``open``, or ``ValidationError`` naming the field), must not leave
the store half-open (it neither answers nor remembers being open, and
``close`` still works), and must not spoil the next open of a good store.
The target that cannot be opened is the adapter's to name: the optional
fixture ``unopenable_storage_factory`` (a folder that is a file, a file that
is not a database, a closed port); without it the case is skipped.
"""

from __future__ import annotations

import pytest

from memory_core.errors import AdapterClosedError, BackendError, ValidationError
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase
from memory_core_conformance.harness import StorageFactory, open_store, thread

__all__ = ["NO_UNOPENABLE_TARGET", "OpeningCases"]

NO_UNOPENABLE_TARGET = (
    "the test class defines no unopenable_storage_factory fixture (stores on a target that cannot be opened)"
)
"""Skip reason of the failed-open case without that fixture."""


def _assert_typed_open_failure(error: BaseException, store: BaseStorage) -> None:
    """``error`` is a ``BackendError`` of ``store``'s backend and the operation
    ``open``, or a ``ValidationError`` naming a field."""
    if isinstance(error, BackendError):
        assert (error.backend, error.operation) == (store.backend_name, "open"), (
            f"a failed open must name the backend {store.backend_name!r} and the operation 'open': {error!r}"
        )
    else:
        assert isinstance(error, ValidationError) and error.field, f"a failed open must name what is wrong: {error!r}"


class OpeningCases(SuiteBase):
    """Failed opens and early closes."""

    @pytest.fixture
    def unopenable_storage_factory(self) -> StorageFactory | None:
        """Override to run the failed-open case: return ``factory(clock=None)``
        building new, unopened stores whose target cannot be opened (its
        ``open`` raises). Default None: the case is skipped."""
        return None

    async def test_lifecycle_failed_open_is_typed_and_leaves_nothing_half_open(
        self, unopenable_storage_factory: StorageFactory | None, storage_factory: StorageFactory
    ) -> None:
        if unopenable_storage_factory is None:
            pytest.skip(NO_UNOPENABLE_TARGET)
        store = unopenable_storage_factory(None)
        for _ in range(2):  # a failed open is not remembered: the next one tries again and fails alike
            with pytest.raises((BackendError, ValidationError)) as raised:
                await store.open()
            _assert_typed_open_failure(raised.value, store)
        with pytest.raises((BackendError, ValidationError)) as raised:
            await store.get_thread("t1")  # the lazy open fails too: no half-open store answers
        _assert_typed_open_failure(raised.value, store)
        await store.close()
        await store.close()
        with pytest.raises(AdapterClosedError):
            await store.open()
        async with open_store(storage_factory) as good:
            await good.save_thread(thread("t1"))
            assert await good.get_thread("t1") is not None

    async def test_lifecycle_close_before_open_ends_the_store(self, storage_factory: StorageFactory) -> None:
        store = storage_factory(None)
        await store.close()
        await store.close()
        with pytest.raises(AdapterClosedError):
            await store.open()
        with pytest.raises(AdapterClosedError):
            await store.get_thread("t1")
        with pytest.raises(AdapterClosedError):
            await store.save_thread(thread("t1"))
