"""The core's part of the resource listing (R-RESOURCES): inputs refused
before any I/O, and the default primitive a third-party adapter inherits
(thread owners only)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import IdPage, InMemoryStorage, Thread, ValidationError
from memory_core.storage import BaseStorage

pytestmark = pytest.mark.anyio


class _NoIO(InMemoryStorage):
    """A store whose listing primitive must never be reached."""

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        raise AssertionError("the primitive ran")


class _Inherited(InMemoryStorage):
    """An adapter that does not implement the listing primitive."""

    _list_resource_ids = BaseStorage._list_resource_ids


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"per_page": True}, "per_page"),
        ({"per_page": -1}, "per_page"),
        ({"per_page": 2**31}, "per_page"),
        ({"per_page": "1"}, "per_page"),
        ({"cursor": ""}, "cursor"),
        ({"cursor": "x" * 9000}, "cursor"),
        ({"cursor": 3}, "cursor"),
    ],
)
async def test_bad_input_is_refused_before_any_io(kwargs: dict[str, Any], field: str) -> None:
    store = _NoIO()
    with pytest.raises(ValidationError) as raised:
        await store.list_resource_ids(**kwargs)
    assert raised.value.field == field
    await store.close()  # never opened: nothing to release
    with pytest.raises(ValidationError):  # refused even on a closed store: no I/O was attempted
        await store.list_resource_ids(**kwargs)


async def test_the_default_lists_thread_owners_and_misses_records_without_threads() -> None:
    async with _Inherited() as store:
        await store.update_resource("record-only", working_memory="wm")
        for index, rid in enumerate(["c", "a", "b", "a"]):
            await store.save_thread(Thread(f"t{index}", rid))
        assert (await store.list_resource_ids()).items == ["a", "b", "c"]
        first = await store.list_resource_ids(per_page=2)
        assert first.items == ["a", "b"] and first.has_more
        assert await store.list_resource_ids(cursor=first.next_cursor) == IdPage(["c"], 100, False, None)
