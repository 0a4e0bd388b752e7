"""Differential test: seeded random operation batches against MongoStorage and
the reference InMemoryStorage must give the same answers, step by step.

Both stores get identical manual clocks moved in lock-step, so every assigned
and bumped time matches. Sequence numbers are per store (MongoDB reserves a
block per batch), so cursors are compared by presence and then followed on
each store separately.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memory_core_mongodb import MongoStorage

from memory_core.clock import ManualClock
from memory_core.errors import MemoryCoreError
from memory_core.models import DateRange, Include, Message, MessageFilter, Page, Thread, ThreadFilter
from memory_core.reference import InMemoryStorage
from memory_core.storage import BaseStorage

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
THREADS = {"t0": "r0", "t1": "r0", "t2": "r1", "t3": "r1"}
MESSAGE_IDS = [f"{prefix}{i}" for prefix in "ab" for i in range(8)]
POOLS = {"r0": MESSAGE_IDS[:8], "r1": MESSAGE_IDS[8:]}
"""Message ids by resource; an id from the other pool is a cross-resource ConflictError."""


def _message_id(rng: random.Random, thread_id: str) -> str:
    return rng.choice(MESSAGE_IDS if rng.random() < 0.05 else POOLS[THREADS[thread_id]])


META_VALUES: list[Any] = [5, 5.0, "5", True, False, 0, None, 1.5, "x", [1], {"a": None}, 2**63 - 1]
META_KEYS = ["a", "b", "c"]
StoreFactory = Callable[..., MongoStorage]
STEPS = 120
CONTENTS: list[str | dict[str, Any]] = ["hi", {"parts": [1], "n": 1}, ""]
Op = Callable[..., Awaitable[Any]]
"""``op(store, **extra)``: one public call; listings accept ``cursor=`` and ``page=`` overrides."""


WEIGHTS = {
    "save_messages": 8,
    "list_messages": 6,
    "by_resource": 2,
    "list_threads": 3,
    "update_messages": 2,
    "update_thread": 2,
    "save_thread": 1,
    "delete_thread": 0.4,
    "delete_messages": 1,
    "update_resource": 1,
    "get_messages": 1,
    "get_thread": 1,
    "get_resource": 1,
}
"""Relative frequency of each kind of call."""


def _meta(rng: random.Random) -> dict[str, Any]:
    return {k: rng.choice(META_VALUES) for k in rng.sample(META_KEYS, rng.randint(0, 3))}


def _scalar_filter(rng: random.Random) -> dict[str, Any]:
    scalars = [v for v in META_VALUES if not isinstance(v, list | dict)]
    return {k: rng.choice(scalars) for k in rng.sample(META_KEYS, rng.randint(0, 2))}


def _time(rng: random.Random) -> datetime | None:
    return None if rng.random() < 0.3 else T0 + timedelta(seconds=rng.randint(0, 4))


def _order(rng: random.Random, fields: tuple[str, ...]) -> dict[str, str] | None:
    if rng.random() < 0.3:
        return None
    return {"field": rng.choice(fields), "direction": rng.choice(["ASC", "DESC", "asc"])}


def _paging(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.2:
        return {"per_page": False}
    if rng.random() < 0.5:
        return {"per_page": rng.randint(1, 3)}  # page 0: its next_cursor gets walked
    return {"page": rng.randint(0, 2), "per_page": rng.randint(0, 4)}


def random_op(rng: random.Random) -> tuple[str, Op]:
    """One random public call (as a description and a function of the store)."""
    kind = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
    thread_id = rng.choice(list(THREADS))
    if kind == "save_thread":
        owner = THREADS[thread_id] if rng.random() < 0.9 else "r9"
        thread = Thread(thread_id, owner, rng.choice(["", "title"]), _meta(rng), _time(rng), _time(rng))
        return f"save_thread({thread})", lambda s: s.save_thread(thread)
    if kind == "update_thread":
        title = rng.choice([None, "new"])
        meta = rng.choice([None, _meta(rng)])
        return f"update_thread({thread_id}, {title}, {meta})", lambda s: s.update_thread(
            thread_id, title=title, metadata=meta
        )
    if kind == "delete_thread":
        return f"delete_thread({thread_id})", lambda s: s.delete_thread(thread_id)
    if kind == "save_messages":
        batch = []
        for _ in range(rng.randint(1, 4)):
            target = thread_id if rng.random() < 0.8 else rng.choice(list(THREADS))
            batch.append(
                Message(
                    _message_id(rng, target),
                    target,
                    rng.choice(["user", "assistant"]),
                    rng.choice(CONTENTS),
                    metadata=_meta(rng),
                    created_at=_time(rng),
                )
            )
        return f"save_messages({batch})", lambda s: s.save_messages(batch)
    if kind == "update_messages":
        updates = []
        for _ in range(rng.randint(1, 3)):
            update: dict[str, Any] = {"id": _message_id(rng, thread_id)}
            if rng.random() < 0.5:
                update["metadata"] = _meta(rng)
            if rng.random() < 0.4:
                update["content"] = rng.choice(["edited", {"n": 2, "extra": [None]}])
            if rng.random() < 0.2:  # a move: mostly within the resource
                update["thread_id"] = rng.choice(
                    [t for t in THREADS if THREADS[t] == THREADS[thread_id]] * 9 + list(THREADS)
                )
            if rng.random() < 0.2:
                update["role"] = "tool"
            updates.append(update)
        return f"update_messages({updates})", lambda s: s.update_messages(updates)
    if kind == "delete_messages":
        ids = rng.sample(MESSAGE_IDS, rng.randint(1, 3))
        return f"delete_messages({ids})", lambda s: s.delete_messages(ids)
    if kind == "update_resource":
        resource_id = rng.choice(["r0", "r1"])
        memory = rng.choice([None, "", "wm"]) if rng.random() < 0.6 else ...
        meta = rng.choice([None, _meta(rng)])
        if memory is ...:
            return f"update_resource({resource_id}, meta={meta})", lambda s: s.update_resource(
                resource_id, metadata=meta
            )
        return f"update_resource({resource_id}, {memory!r}, {meta})", lambda s: s.update_resource(
            resource_id, working_memory=memory, metadata=meta
        )
    if kind == "get_messages":
        ids = rng.sample(MESSAGE_IDS, rng.randint(1, 5))
        return f"get_messages({ids})", lambda s: s.get_messages(ids)
    if kind in ("list_messages", "by_resource"):
        start, end = _time(rng), _time(rng)
        dates = DateRange(start, end, rng.random() < 0.3, rng.random() < 0.3) if rng.random() < 0.3 else None
        flt = MessageFilter(dates, _scalar_filter(rng) if rng.random() < 0.5 else None)
        include = (
            [Include(rng.choice(MESSAGE_IDS), rng.randint(0, 2), rng.randint(0, 2))] if rng.random() < 0.3 else None
        )
        paging = _paging(rng)
        order = _order(rng, ("created_at",))
        if kind == "by_resource":
            resource_id = rng.choice(["r0", "r1"])
            args = {"include": include, "filter": flt, "order_by": order, **paging}
            return f"by_resource({resource_id}, {args})", lambda s, **extra: s.list_messages_by_resource(
                resource_id, **{**args, **extra}
            )
        threads: str | list[str] = thread_id if rng.random() < 0.7 else rng.sample(list(THREADS), 2)
        resource = rng.choice([None, None, "r0", "r1"])
        args = {"include": include, "filter": flt, "order_by": order, **paging}
        return f"list_messages({threads}, {resource}, {args})", lambda s, **extra: s.list_messages(
            threads, resource, **{**args, **extra}
        )
    if kind == "list_threads":
        tflt = ThreadFilter(rng.choice([None, "r0", "r1"]), _scalar_filter(rng) if rng.random() < 0.5 else None)
        paging = _paging(rng)
        order = _order(rng, ("created_at", "updated_at"))
        targs = {"filter": tflt, "order_by": order, **paging}
        return f"list_threads({targs})", lambda s, **extra: s.list_threads(**{**targs, **extra})
    if kind == "get_thread":
        asked: str | None = rng.choice([None, "r0", "r1"])
        return f"get_thread({thread_id}, {asked})", lambda s: s.get_thread(thread_id, asked)
    resource_id = rng.choice(["r0", "r1", "r2"])
    return f"get_resource({resource_id})", lambda s: s.get_resource(resource_id)


async def outcome(store: BaseStorage, op: Op) -> tuple[str, Any]:
    try:
        return "ok", await op(store)
    except MemoryCoreError as exc:
        if type(exc).__name__ == "BackendError":
            raise
        return "error", type(exc).__name__


def same_page(ref: Page[Any], got: Page[Any], where: str) -> None:
    assert (got.items, got.total, got.page, got.per_page, got.has_more) == (
        ref.items,
        ref.total,
        ref.page,
        ref.per_page,
        ref.has_more,
    ), where
    assert (got.next_cursor is None) == (ref.next_cursor is None), where


async def follow_cursors(
    reference: BaseStorage, store: BaseStorage, op: Op, ref: Page[Any], got: Page[Any], where: str
) -> None:
    """Walk every next page by cursor on both stores; the walks must agree."""
    while ref.next_cursor is not None and got.next_cursor is not None:
        ref = await op(reference, cursor=ref.next_cursor, page=0)
        got = await op(store, cursor=got.next_cursor, page=0)
        same_page(ref, got, where + " (cursor walk)")


@pytest.mark.parametrize(
    ("seed", "transactions"),
    [(0, None), (1, None), (2, None), (3, False), (4, False)],
    ids=["0-auto", "1-auto", "2-auto", "3-ordered-plan", "4-ordered-plan"],
)
async def test_random_operations_match_the_reference(
    store_factory: StoreFactory, seed: int, transactions: bool | None
) -> None:
    rng = random.Random(seed)
    ref_clock, mongo_clock = ManualClock(T0), ManualClock(T0)
    reference = InMemoryStorage(clock=ref_clock)
    store = store_factory(mongo_clock, transactions=transactions)
    await store.open()
    try:
        for thread_id, owner in THREADS.items():
            for target in (reference, store):
                await target.save_thread(Thread(thread_id, owner, created_at=T0, updated_at=T0))
        for step in range(STEPS):
            tick = rng.choice([0, 0, 1, 2_000_000])
            for clock in (ref_clock, mongo_clock):
                clock.advance(tick / 1e6)
            description, op = random_op(rng)
            where = f"seed {seed} step {step}: {description}"
            ref_kind, ref_value = await outcome(reference, op)
            got_kind, got_value = await outcome(store, op)
            assert (got_kind, type(got_value)) == (ref_kind, type(ref_value)), where
            if isinstance(ref_value, Page):
                same_page(ref_value, got_value, where)
                await follow_cursors(reference, store, op, ref_value, got_value, where)
            else:
                assert got_value == ref_value, where
        for thread_id in THREADS:
            everything = [await s.list_messages(thread_id, per_page=False) for s in (reference, store)]
            assert everything[1].items == everything[0].items, f"seed {seed} final {thread_id}"
        ref_threads = await reference.list_threads(per_page=False)
        got_threads = await store.list_threads(per_page=False)
        assert got_threads.items == ref_threads.items
    finally:
        await store.destroy()
