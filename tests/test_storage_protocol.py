"""Every store satisfies the ``Storage`` protocol that callers type against.

Statically: mypy checks the return statements below (a ``BaseStorage`` is a
``Storage``, so every adapter subclass is; so is the reference store).
At run time: every registered storage class (the ``memory_core.storage``
entry points: the reference store and each installed adapter) has every
protocol member, as a coroutine function with the protocol's parameters.
"""

from __future__ import annotations

import inspect
from importlib.metadata import entry_points

import pytest

from memory_core import BaseStorage, InMemoryStorage, MessagePageRequest, Storage
from memory_core.errors import ValidationError
from memory_core.registry import STORAGE_GROUP


def base_storage_is_a_storage(store: BaseStorage) -> Storage:
    return store  # mypy: BaseStorage (so every adapter) matches the protocol


def reference_is_a_storage(store: InMemoryStorage) -> Storage:
    return store


PROTOCOL_MEMBERS = {name: value for name, value in vars(Storage).items() if inspect.iscoroutinefunction(value)}


def _parameters(function: object) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]  # type: ignore[arg-type]


def test_the_protocol_lists_every_public_coroutine_of_base_storage() -> None:
    """Callers typed against ``Storage`` (``Memory``, ``connect()``'s users)
    reach everything a store offers: open, close, destroy, page_messages ..."""
    public = {
        name
        for name in dir(BaseStorage)
        if inspect.iscoroutinefunction(getattr(BaseStorage, name)) and not (name.startswith("_") and name[1] != "_")
    }
    assert set(PROTOCOL_MEMBERS) == public
    assert {"open", "close", "destroy", "page_messages", "__aenter__", "__aexit__"} <= public


STORAGE_CLASSES = sorted(((ep.name, ep.load()) for ep in entry_points(group=STORAGE_GROUP)), key=lambda p: p[0])


@pytest.mark.parametrize(("scheme", "cls"), STORAGE_CLASSES, ids=[name for name, _ in STORAGE_CLASSES])
def test_every_registered_storage_has_every_protocol_member(scheme: str, cls: type[BaseStorage]) -> None:
    missing = [name for name in PROTOCOL_MEMBERS if not inspect.iscoroutinefunction(getattr(cls, name, None))]
    assert missing == [], f"{scheme}: {cls.__name__} lacks {missing}"
    different = [
        name for name, member in PROTOCOL_MEMBERS.items() if _parameters(getattr(cls, name)) != _parameters(member)
    ]
    assert different == [], f"{scheme}: {cls.__name__} takes other parameters in {different}"


def test_reference_store_is_a_runtime_storage() -> None:
    assert isinstance(InMemoryStorage(), Storage)
    assert not isinstance(object(), Storage)


@pytest.mark.anyio
async def test_page_messages_takes_one_request_object() -> None:
    async with InMemoryStorage() as store:
        await store.save_thread({"id": "t1", "resource_id": "r1"})
        await store.save_messages(
            [{"id": f"m{n}", "thread_id": "t1", "role": "user", "content": "x"} for n in range(5)]
        )
        page = await store.page_messages(MessagePageRequest(thread_ids=["t1"], per_page=2, newest=True))
        assert [m.id for m in page.items] == ["m3", "m4"] and page.total == 5 and page.has_more
        by_resource = await store.page_messages(MessagePageRequest(resource_id="r1", per_page=False))
        assert [m.id for m in by_resource.items] == ["m0", "m1", "m2", "m3", "m4"]
        with pytest.raises(ValidationError, match="request"):
            await store.page_messages(("t1",))  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="thread_ids"):
            await store.page_messages(MessagePageRequest())
        with pytest.raises(ValidationError, match="thread_id"):
            await store.page_messages(MessagePageRequest(thread_ids=[]))
        with pytest.raises(ValidationError, match="thread_id"):
            await store.page_messages(MessagePageRequest(thread_ids="t1"))
