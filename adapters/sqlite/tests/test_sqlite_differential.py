"""Differential check: random operation sequences give the same answers on
``SQLiteStorage`` and the reference ``InMemoryStorage``.

A quick, seeded complement of the shared conformance suite: every public
call is made on both stores (clocks moved in lockstep) and the results, or
the error types, must be equal. ``Message.sequence`` takes no part in
equality, and only the presence of ``next_cursor`` is compared (cursors
carry store-local sequence numbers); cursors are walked on each store.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from memory_core import InMemoryStorage, ManualClock, Page
from memory_core.errors import MemoryCoreError
from memory_core.storage import BaseStorage

from memory_core_sqlite import SQLiteStorage

T0 = datetime(2025, 1, 1, tzinfo=UTC)
THREADS = [f"t{n}" for n in range(5)]
RESOURCES = ["r0", "r1", "r2"]
HOME = {"t0": "r0", "t1": "r0", "t2": "r1", "t3": "r1", "t4": "r2"}
MESSAGES = [f"m{n}" for n in range(60)]
PER_RESOURCE = 20
KEYS = ["k0", "k1", "k2"]
SCALARS: list[Any] = [5, 5.0, "5", True, False, 1, 0, 1.0, None, "x", "x\x00y", "", 1.5, -0.0, 2**63 - 1, "é", "1"]
WORDS = ["hi", "yo", "héllo 👋", "tab\there"]
VALUES: list[Any] = [*SCALARS, [1, "a"], {"k0": 5}, {"nested": {"deep": None}}]


def _time(rng: random.Random) -> datetime | None:
    if rng.random() < 0.3:
        return None
    return T0 + timedelta(seconds=rng.choice([0, 0, 1, 2, 3]), microseconds=rng.choice([0, 0, 1, 999_999]))


SEEN: list[tuple[str, Any]] = []
"""(key, scalar) pairs generated as metadata so far: filters mostly ask for
these, or for a look-alike of another JSON type (5 -> 5.0, 1 -> True ...)."""
LOOK_ALIKES: dict[Any, list[Any]] = {5: [5.0, "5"], 1: [True, 1.0, "1"], 0: [False, 0.0, None], "x": ["x\x00y", "X"]}


def _metadata(rng: random.Random) -> dict[str, Any]:
    found = {key: rng.choice(VALUES) for key in rng.sample(KEYS, rng.randint(0, 3))}
    SEEN.extend((key, value) for key, value in found.items() if not isinstance(value, list | dict))
    return found


def _filter(rng: random.Random) -> dict[str, Any]:
    wanted: dict[str, Any] = {}
    for _ in range(rng.choice([0, 0, 0, 1, 1, 2])):
        if SEEN and rng.random() < 0.7:
            key, value = rng.choice(SEEN)
            if rng.random() < 0.4:
                value = rng.choice(LOOK_ALIKES.get(value, [value]))
        else:
            key, value = rng.choice(KEYS), rng.choice(SCALARS)
        wanted[key] = value
    return wanted


def _content(rng: random.Random, message_id: str) -> Any:
    if rng.random() < 0.6:
        return f"{message_id} says {rng.choice(WORDS)}"
    return {"format": 2, "parts": [{"type": "text", "text": message_id}], rng.choice(KEYS): rng.choice(VALUES)}


def _page_args(rng: random.Random) -> dict[str, Any]:
    per_page = rng.choice([False, 0, 1, 2, 3, 5, 40])
    page = 0 if per_page is False else rng.choice([0, 0, 0, 1, 2, 7])
    return {"page": page, "per_page": per_page}


def _operation(rng: random.Random, warm_up: bool = False) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """One random public call: (method name, args, kwargs); saves only while
    ``warm_up``."""
    kind = (
        "save_messages"
        if warm_up
        else rng.choices(
            [
                "save_thread",
                "save_messages",
                "update_messages",
                "delete_messages",
                "delete_thread",
                "update_thread",
                "update_resource",
                "save_resource",
                "list_messages",
                "list_by_resource",
                "list_threads",
                "get_messages",
                "get_thread",
            ],
            weights=[3, 16, 5, 3, 1, 3, 2, 1, 14, 5, 8, 3, 2],
        )[0]
    )
    if kind == "save_thread":
        thread_id = rng.choice(THREADS)
        thread = {
            "id": thread_id,
            "resource_id": HOME[thread_id] if rng.random() < 0.9 else rng.choice(RESOURCES),
            "title": rng.choice(["", "a", "🧵"]),
            "metadata": _metadata(rng),
            "created_at": _time(rng),
            "updated_at": _time(rng),
        }
        return kind, (thread,), {}
    if kind == "save_messages":
        batch = []
        home = rng.choice(THREADS)
        own = RESOURCES.index(HOME[home]) * PER_RESOURCE  # mostly ids of the thread's resource (few conflicts)
        for _ in range(rng.randint(1, 4)):
            message_id = MESSAGES[own + rng.randrange(PER_RESOURCE)] if rng.random() < 0.9 else rng.choice(MESSAGES)
            batch.append(
                {
                    "id": message_id,
                    "thread_id": home if rng.random() < 0.8 else rng.choice(THREADS),
                    "role": rng.choice(["user", "assistant", "tool"]),
                    "content": _content(rng, message_id),
                    "metadata": _metadata(rng),
                    "created_at": _time(rng),
                }
            )
        return kind, (batch,), {}
    if kind == "update_messages":
        updates = []
        for _ in range(rng.randint(1, 3)):
            update: dict[str, Any] = {"id": rng.choice(MESSAGES)}
            if rng.random() < 0.5:
                update["content"] = _content(rng, update["id"])
            if rng.random() < 0.5:
                update["metadata"] = _metadata(rng)
            if rng.random() < 0.2:
                update["thread_id"] = rng.choice(THREADS)
            if rng.random() < 0.2:
                update["role"] = "system"
            updates.append(update)
        return kind, (updates,), {}
    if kind == "delete_messages":
        return kind, (rng.sample(MESSAGES, rng.randint(1, 2)),), {}
    if kind in ("delete_thread", "get_thread"):
        return kind, (rng.choice(THREADS),), {}
    if kind == "update_thread":
        options: dict[str, Any] = {}
        if rng.random() < 0.5:
            options["title"] = rng.choice(["new", ""])
        if rng.random() < 0.7:
            options["metadata"] = _metadata(rng)
        return kind, (rng.choice(THREADS),), options
    if kind == "update_resource":
        options = {}
        if rng.random() < 0.6:
            options["working_memory"] = rng.choice(["", "# wm", None])
        if rng.random() < 0.6:
            options["metadata"] = _metadata(rng)
        return kind, (rng.choice(RESOURCES),), options
    if kind == "save_resource":
        resource = {"id": rng.choice(RESOURCES), "working_memory": rng.choice([None, "w"]), "metadata": _metadata(rng)}
        return kind, (resource,), {}
    if kind == "get_messages":
        return kind, (rng.sample(MESSAGES, rng.randint(1, 6)),), {}
    if kind == "list_threads":
        thread_filter: dict[str, Any] = {"metadata": _filter(rng)}
        if rng.random() < 0.7:
            thread_filter["resource_id"] = rng.choice(RESOURCES)
        order = {"field": rng.choice(["created_at", "updated_at"]), "direction": rng.choice(["ASC", "DESC"])}
        return kind, (), {"filter": thread_filter, "order_by": order, **_page_args(rng)}
    if kind == "list_by_resource":
        return "list_messages_by_resource", (rng.choice(RESOURCES),), _message_options(rng)
    threads: Any = rng.choice(THREADS) if rng.random() < 0.6 else rng.sample(THREADS, rng.randint(1, 3))
    first = threads if isinstance(threads, str) else threads[0]
    owner = rng.choice([None, HOME[first], HOME[first], rng.choice(RESOURCES)])
    return "list_messages", (threads, owner), _message_options(rng)


def _message_options(rng: random.Random) -> dict[str, Any]:
    message_filter: dict[str, Any] = {"metadata": _filter(rng)}
    if rng.random() < 0.3:
        start, end = _time(rng), _time(rng)
        message_filter["date_range"] = {"start": start, "end": end, "start_exclusive": rng.random() < 0.5}
    options = {"filter": message_filter, "order_by": {"direction": rng.choice(["ASC", "DESC"])}, **_page_args(rng)}
    if rng.random() < 0.3:
        options["include"] = [
            {"id": rng.choice(MESSAGES), "with_previous": rng.randint(0, 2), "with_next": rng.randint(0, 2)}
        ]
    return options


async def _call(store: BaseStorage, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        result = await getattr(store, name)(*args, **kwargs)
    except MemoryCoreError as exc:
        return ("error", type(exc).__name__)
    if isinstance(result, Page):
        walked = None
        if result.next_cursor is not None and "page" in kwargs:
            walked = await _walk(store, name, args, {**kwargs, "page": 0}, result.next_cursor)
        return (result.items, result.total, result.page, result.per_page, result.has_more, walked)
    return result


async def _walk(store: BaseStorage, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], cursor: str) -> Any:
    items = []
    for _ in range(50):
        options = {**kwargs, "cursor": cursor}
        options.pop("include", None)
        page = await getattr(store, name)(*args, **options)
        items.extend(page.items)
        if page.next_cursor is None:
            return items
        cursor = page.next_cursor
    raise AssertionError("cursor walk did not end")


async def _state(store: BaseStorage) -> Any:
    threads = (await store.list_threads(per_page=False)).items
    messages = (await store.list_messages(THREADS, per_page=False)).items
    resources = [await store.get_resource(r) for r in RESOURCES]
    return threads, messages, resources


@pytest.mark.anyio
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_operations_match_the_reference(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    SEEN.clear()
    reference_clock, sqlite_clock = ManualClock(T0), ManualClock(T0)
    reference = InMemoryStorage(clock=reference_clock)
    sqlite = SQLiteStorage(tmp_path / "diff.db", namespace=f"seed{seed}", clock=sqlite_clock)
    await reference.open()
    await sqlite.open()
    try:
        for thread_id, resource_id in HOME.items():
            for store in (reference, sqlite):
                await store.save_thread({"id": thread_id, "resource_id": resource_id})
        for step in range(300):
            seconds = rng.choice([0.0, 0.0, 0.000001, 1.0])
            reference_clock.advance(seconds)
            sqlite_clock.advance(seconds)
            name, args, kwargs = _operation(rng, warm_up=step < 40)
            expected = await _call(reference, name, args, kwargs)
            found = await _call(sqlite, name, args, kwargs)
            assert found == expected, f"step {step}: {name}{args} {kwargs}"
            if step % 25 == 0:
                assert await _state(sqlite) == await _state(reference), f"state after step {step}"
        assert await _state(sqlite) == await _state(reference)
    finally:
        await reference.close()
        await sqlite.destroy()
