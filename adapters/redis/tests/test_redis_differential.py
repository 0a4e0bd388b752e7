"""Differential test: seeded random batches of operations run against the
Redis adapter and the reference store (``InMemoryStorage``) with identical
clocks; every answer (value or error type) must be the same.

Sequence numbers are per store (the Redis store leaves harmless gaps), so
cursors are compared by following them on each store, not by their text.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memory_core import BaseStorage, InMemoryStorage, ManualClock, MemoryCoreError, Page

from memory_core_redis import RedisStorage

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
THREADS = [f"t{i}" for i in range(6)]
RESOURCES = ["r0", "r1", "r2"]
MESSAGES = [f"m{i}" for i in range(40)]
SCALARS: list[Any] = [0, 1, 5, 5.0, 1.5, "5", "a", True, False, None, -2, 2**62]
TIMES = [T0 + timedelta(seconds=s) for s in (0, 0, 1, 2, 2, 3, 10)] + [datetime(1960, 5, 5, tzinfo=UTC)]


def _metadata(rng: random.Random) -> dict[str, Any]:
    meta: dict[str, Any] = {k: rng.choice(SCALARS) for k in rng.sample(["a", "b", "c"], rng.randint(0, 3))}
    if rng.random() < 0.2:
        meta["nested"] = {"x": [1, 2.0, {"y": None}]}
    return meta


def _filter(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.4:
        return None
    out: dict[str, Any] = {}
    if rng.random() < 0.6:
        out["metadata"] = {rng.choice(["a", "b", "c"]): rng.choice(SCALARS)}
    if rng.random() < 0.4:
        out["date_range"] = {
            "start": rng.choice([None, *TIMES]),
            "end": rng.choice([None, *TIMES]),
            "start_exclusive": rng.random() < 0.5,
            "end_exclusive": rng.random() < 0.5,
        }
    return out


def _order(rng: random.Random, fields: list[str]) -> dict[str, str] | None:
    if rng.random() < 0.3:
        return None
    return {"field": rng.choice(fields), "direction": rng.choice(["ASC", "DESC", "desc"])}


def _paging(rng: random.Random) -> dict[str, Any]:
    per_page = rng.choice([False, 0, 1, 2, 3, 5, 40])
    page = 0 if per_page is False else rng.choice([0, 0, 1, 2, 5])
    return {"page": page, "per_page": per_page}


def _operation(rng: random.Random) -> tuple[str, dict[str, Any]]:
    kind = rng.choices(
        [
            "save_thread",
            "update_thread",
            "delete_thread",
            "save_messages",
            "update_messages",
            "delete_messages",
            "get_messages",
            "list_messages",
            "list_by_resource",
            "list_threads",
            "get_thread",
            "update_resource",
            "save_resource",
            "get_resource",
        ],
        weights=[6, 3, 1, 10, 4, 2, 2, 8, 3, 6, 2, 2, 1, 1],
    )[0]
    if kind == "save_thread":
        return kind, {
            "thread": {
                "id": rng.choice(THREADS),
                "resource_id": rng.choice(RESOURCES),
                "title": rng.choice(["", "x"]),
                "metadata": _metadata(rng),
                "created_at": rng.choice([None, *TIMES]),
                "updated_at": rng.choice([None, *TIMES]),
            }
        }
    if kind == "update_thread":
        return kind, {
            "thread_id": rng.choice(THREADS),
            "title": rng.choice([None, "new"]),
            "metadata": rng.choice([None, _metadata(rng)]),
        }
    if kind == "delete_thread":
        return kind, {"thread_id": rng.choice(THREADS)}
    if kind == "save_messages":
        batch = []
        for _ in range(rng.randint(1, 5)):
            message: dict[str, Any] = {
                "id": rng.choice(MESSAGES),
                "thread_id": rng.choice(THREADS),
                "role": rng.choice(["user", "tool"]),
                "content": rng.choice(["hi", {"format": 2, "parts": [], "n": 1.0}]),
                "metadata": _metadata(rng),
                "created_at": rng.choice([None, None, *TIMES]),
            }
            batch.append(message)
        return kind, {"messages": batch}
    if kind == "update_messages":
        updates = []
        for _ in range(rng.randint(1, 3)):
            update: dict[str, Any] = {"id": rng.choice(MESSAGES)}
            if rng.random() < 0.5:
                update["content"] = rng.choice(["edited", {"n": 2, "extra": [1]}])
            if rng.random() < 0.5:
                update["metadata"] = _metadata(rng)
            if rng.random() < 0.2:
                update["thread_id"] = rng.choice(THREADS)
            if rng.random() < 0.2:
                update["role"] = "assistant"
            updates.append(update)
        return kind, {"updates": updates}
    if kind in ("delete_messages", "get_messages"):
        return kind, {"ids": rng.sample(MESSAGES, rng.randint(1, 4))}
    if kind == "list_messages":
        threads: Any = rng.choice(THREADS) if rng.random() < 0.6 else rng.sample(THREADS, rng.randint(1, 4))
        include = [
            {"id": rng.choice(MESSAGES), "with_previous": rng.randint(0, 2), "with_next": rng.randint(0, 2)}
            for _ in range(rng.choice([0, 0, 1, 2]))
        ]
        return kind, {
            "thread_id": threads,
            "resource_id": rng.choice([None, *RESOURCES]),
            "include": include,
            "filter": _filter(rng),
            "order_by": _order(rng, ["created_at"]),
            **_paging(rng),
        }
    if kind == "list_by_resource":
        return kind, {
            "resource_id": rng.choice(RESOURCES),
            "filter": _filter(rng),
            "order_by": _order(rng, ["created_at"]),
            **_paging(rng),
        }
    if kind == "list_threads":
        flt: dict[str, Any] = {}
        if rng.random() < 0.6:
            flt["resource_id"] = rng.choice(RESOURCES)
        if rng.random() < 0.4:
            flt["metadata"] = {rng.choice(["a", "b"]): rng.choice(SCALARS)}
        return kind, {"filter": flt, "order_by": _order(rng, ["created_at", "updated_at"]), **_paging(rng)}
    if kind == "get_thread":
        return kind, {"thread_id": rng.choice(THREADS), "resource_id": rng.choice([None, *RESOURCES])}
    if kind == "update_resource":
        args: dict[str, Any] = {"resource_id": rng.choice(RESOURCES), "metadata": rng.choice([None, _metadata(rng)])}
        if rng.random() < 0.6:
            args["working_memory"] = rng.choice([None, "", "notes"])
        return kind, args
    if kind == "save_resource":
        return kind, {
            "resource": {
                "id": rng.choice(RESOURCES),
                "working_memory": rng.choice([None, "w"]),
                "metadata": _metadata(rng),
            }
        }
    return kind, {"resource_id": rng.choice(RESOURCES)}


def _strip(value: Any) -> Any:
    """Comparable form: pages without cursor text (sequence numbers differ
    between stores), messages with their R-ORDER fields."""
    if isinstance(value, Page):
        return (
            "page",
            _strip(value.items),
            value.total,
            value.page,
            value.per_page,
            value.has_more,
            value.next_cursor is None,
        )
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


async def _call(store: BaseStorage, kind: str, args: dict[str, Any]) -> Any:
    method = {"list_by_resource": "list_messages_by_resource"}.get(kind, kind)
    try:
        result = await getattr(store, method)(**args)
    except MemoryCoreError as exc:
        return ("error", type(exc).__name__)
    if isinstance(result, Page) and result.next_cursor is not None:
        follow = await getattr(store, method)(**{**args, "page": 0, "cursor": result.next_cursor})
        return (_strip(result), _strip(follow))
    return _strip(result)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_operations_match_the_reference(make_store: Callable[..., RedisStorage], seed: int) -> None:
    rng = random.Random(seed)
    redis_clock, reference_clock = ManualClock(T0), ManualClock(T0)
    store = make_store(clock=redis_clock)
    reference = InMemoryStorage(clock=reference_clock)
    async with store, reference:
        for step in range(150):
            kind, args = _operation(rng)
            got = await _call(store, kind, args)
            want = await _call(reference, kind, args)
            assert got == want, f"step {step}: {kind}({args})"
            if rng.random() < 0.5:
                seconds = rng.choice([0, 0.000001, 1, 3])
                redis_clock.advance(seconds)
                reference_clock.advance(seconds)
        # final state, every listing at once
        for resource in RESOURCES:
            for method in ("list_threads", "list_messages_by_resource"):
                kwargs: dict[str, Any] = (
                    {"filter": {"resource_id": resource}} if method == "list_threads" else {"resource_id": resource}
                )
                assert _strip(await getattr(store, method)(per_page=False, **kwargs)) == _strip(
                    await getattr(reference, method)(per_page=False, **kwargs)
                )
        await store.destroy()
