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
from memory_core.validation import check_page_request


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


@pytest.mark.anyio
async def test_the_default_read_plan_runs_on_simple_primitives() -> None:
    """The reference store implements only the simple primitives: the core's
    default ``_read`` answers every part of a plan from them."""
    async with InMemoryStorage() as store:
        await store.save_thread({"id": "t1", "resource_id": "r1"})
        await store.save_thread({"id": "t2", "resource_id": "r2"})
        await store.update_resource("r1", working_memory="notes")
        await store.save_messages(
            [{"id": f"m{n}", "thread_id": "t1", "role": "user", "content": "x"} for n in range(5)]
        )
        parts = await store.message_parts(
            MessagePageRequest(thread_ids=["t1"], per_page=2, include=[{"id": "m0", "with_next": 1}]),
            threads=["t1", "t2", "gone"],
        )
        assert set(parts.threads) == {"t1", "t2"} and parts.total == 5
        assert [m.id for m in parts.main] == ["m0", "m1"] and [[m.id for m in w] for w in parts.windows] == [
            ["m0", "m1"]
        ]
        thread, owner = await store.get_thread_with_owner("t1")
        assert thread is not None and owner is not None and owner.working_memory == "notes"
        assert await store.get_thread_with_owner("t2") == (await store.get_thread("t2"), None)
        assert await store.get_thread_with_owner("gone") == (None, None)
        with pytest.raises(ValidationError, match="threads"):
            await store.message_parts(MessagePageRequest(thread_ids=["t1"]), threads=[""])


class _UncountedDeletes(InMemoryStorage):
    """A third-party adapter written before ``_delete_thread`` counted."""

    async def _delete_thread(self, thread_id: str) -> None:  # type: ignore[override]
        await super()._delete_thread(thread_id)


@pytest.mark.anyio
@pytest.mark.parametrize("cls", [InMemoryStorage, _UncountedDeletes])
async def test_the_default_erasure_counts_what_its_thread_deletes_removed(cls: type[InMemoryStorage]) -> None:
    """``_delete_resource``'s default sums what each ``_delete_thread``
    deleted; with an adapter whose ``_delete_thread`` returns None it
    reports the count it read first."""
    async with cls() as store:
        for tid, n in (("t1", 2), ("t2", 3)):
            await store.save_thread({"id": tid, "resource_id": "r1"})
            await store.save_messages(
                [{"id": f"{tid}-{k}", "thread_id": tid, "role": "user", "content": "x"} for k in range(n)]
            )
        erased = await store.delete_resource("r1")
        assert erased.messages == 5 and erased.thread_ids == ["t1", "t2"]
        assert (await store.list_messages_by_resource("r1")).total == 0


@pytest.mark.anyio
async def test_a_checked_read_answers_as_message_parts_and_public_reads_still_check() -> None:
    """``read_message_parts`` (the core's read of a request it checked once)
    answers exactly as ``message_parts``; it refuses anything but a checked
    page, and the public reads keep checking what a caller passes."""
    async with InMemoryStorage() as store:
        await store.save_thread({"id": "t1", "resource_id": "r1"})
        await store.save_messages(
            [{"id": f"m{n}", "thread_id": "t1", "role": "user", "content": "x", "resource_id": "r1"} for n in range(5)]
        )
        request = MessagePageRequest(thread_ids=["t1"], per_page=2, include=[{"id": "m0", "with_next": 1}])
        page, includes, threads = check_page_request(request, ["t1"])
        checked = await store.read_message_parts(page, includes, threads)
        assert checked == await store.message_parts(request, threads=["t1"])
        assert checked.next_cursor is not None
        with pytest.raises(ValidationError, match="request"):
            await store.read_message_parts(request, includes, threads)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="cursor"):
            bad = check_page_request(MessagePageRequest(thread_ids=["t1"], cursor="nope"), ())[0]
            await store.read_message_parts(bad)
        with pytest.raises(ValidationError, match="thread_id"):
            await store.get_thread(123)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="per_page"):
            await store.message_parts(MessagePageRequest(thread_ids=["t1"], per_page=-1))
