"""The core's part of the resource listing (R-RESOURCES): inputs refused
before any I/O, and no default primitive to inherit (one that saw thread
owners only missed every record without a thread)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import InMemoryStorage, ValidationError
from memory_core.storage import ComposedStorage

pytestmark = pytest.mark.anyio


class _NoIO(InMemoryStorage):
    """A store whose listing primitive must never be reached."""

    async def _list_resource_ids(self, after: str | None, limit: int | None) -> list[str]:
        raise AssertionError("the primitive ran")


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


def test_the_listing_primitive_has_no_default() -> None:
    """A composed adapter must write it: the plan read answers resource ids
    from it, and a default could not see records without threads."""
    assert "_list_resource_ids" in ComposedStorage.__abstractmethods__
