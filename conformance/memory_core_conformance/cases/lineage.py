"""Clones, branches and lineage (R-LINEAGE), the same on every backend.

Written from the behaviour memory_core.lineage states (Mastra's
storage-level ``cloneThread`` and its clone-metadata calls, extended with
branches, cross-resource copies and erasure)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import anyio
import pytest

from memory_core import lineage
from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.lineage import Lineage
from memory_core.models import DateRange, Message, OrderBy, Thread
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase, ids, paired_stores, unchanged_after
from memory_core_conformance.cases.operations import chunk_sizes
from memory_core_conformance.harness import StorageFactory, at, message, open_store, thread

__all__ = ["LineageRules"]


async def _source(store: BaseStorage) -> list[str]:
    """t1 of r1 with m1..m6 at T0+1s..T0+6s (m3 and m4 share a time, saved
    in that order), k1 of r2 with one message. Returns t1's ids."""
    await store.save_thread(thread("t1", title="plan", metadata={"topic": "x"}, created_at=at(0)))
    await store.save_thread(thread("k1", "r2", created_at=at(0)))
    times = [1, 2, 3, 3, 5, 6]
    await store.save_messages([message(f"m{i + 1}", created_at=at(s)) for i, s in enumerate(times)])
    await store.save_messages([message("k", "k1", created_at=at(1))])
    return [f"m{i}" for i in range(1, 7)]


def _contents(messages: Sequence[Message]) -> list[Any]:
    return [m.content for m in messages]


async def _copies(store: BaseStorage, made: lineage.Clone) -> list[Message]:
    """The clone's messages as stored, in R-ORDER."""
    return (await store.list_messages(made.thread.id, per_page=False)).items


def _is_uuid7(value: str) -> bool:
    try:
        return uuid.UUID(value).version == 7 and len(value) == 36
    except ValueError:
        return False


class LineageRules(SuiteBase):
    """R-LINEAGE: clone options, branches, lineage calls, ownership, deletes."""

    async def test_r_lineage_clone_selects_by_ids_dates_and_newest(self, store: BaseStorage) -> None:
        source = await _source(store)
        whole = await lineage.clone_thread(store, "t1", "all")
        copied = await _copies(store, whole)
        assert _contents(copied) == [f"{m} text" for m in source]
        assert [m.created_at for m in copied] == [at(s) for s in (1, 2, 3, 3, 5, 6)]
        assert list(whole.message_ids) == source and all(_is_uuid7(c) for c in whole.message_ids.values())
        assert ids(copied) == list(whole.message_ids.values())  # ties keep their order
        picked = await lineage.clone_thread(store, "t1", "ids", message_ids=["m5", "m2", "k", "nope"])
        assert list(picked.message_ids) == ["m2", "m5"]  # R-ORDER; other threads' and unknown ids skipped
        dated = await lineage.clone_thread(
            store, "t1", "dated", date_range=DateRange(at(2), at(5), start_exclusive=True, end_exclusive=False)
        )
        assert list(dated.message_ids) == ["m3", "m4", "m5"]
        newest = await lineage.clone_thread(store, "t1", "newest", message_limit=2, date_range={"end": at(5)})
        assert list(newest.message_ids) == ["m4", "m5"]
        both = await lineage.clone_thread(store, "t1", "both", message_ids=["m1", "m2", "m6"], message_limit=2)
        assert list(both.message_ids) == ["m2", "m6"]
        assert await _copies(store, await lineage.clone_thread(store, "t1", "none", message_limit=0)) == []
        assert (await lineage.clone_thread(store, "t1", "more", message_limit=99)).message_ids.keys() == set(source)
        for empty_range in ({"start": at(5), "end": at(2)}, DateRange(at(3), at(3), start_exclusive=True)):
            # a range holding no instant is a mistake: refused before anything is written
            clone = partial(lineage.clone_thread, store, "t1", "reversed", date_range=empty_range)
            error = await unchanged_after(store, clone)
            assert isinstance(error, ValidationError) and error.field == "date_range", error
        assert ids(await store.list_messages("t1", per_page=False)) == source  # the source is untouched

    async def test_r_lineage_clone_date_bounds_hold_to_the_microsecond(self, store: BaseStorage) -> None:
        """Messages one microsecond apart around each bound of a clone's
        ``date_range``: an inclusive end keeps its own instant and drops the
        next microsecond, an exclusive one drops its own; a start alike."""
        await store.save_thread(thread("t1"))
        await store.save_messages([message(f"u{i}", created_at=at(5, us=i)) for i in range(-2, 3)])
        cases = [
            (DateRange(end=at(5)), ["u-2", "u-1", "u0"]),
            (DateRange(end=at(5), end_exclusive=True), ["u-2", "u-1"]),
            (DateRange(start=at(5)), ["u0", "u1", "u2"]),
            (DateRange(start=at(5), start_exclusive=True), ["u1", "u2"]),
        ]
        for index, (dates, want) in enumerate(cases):
            made = await lineage.clone_thread(store, "t1", f"c{index}", date_range=dates)
            assert list(made.message_ids) == want, f"{dates}: copied {list(made.message_ids)}"

    async def test_r_lineage_clone_records_its_source_and_overrides(self, store: BaseStorage) -> None:
        await _source(store)
        made = await lineage.clone_thread(store, "t1", "c1", date_range={"end": at(2)})
        assert made.thread.title == "Clone of plan" and made.thread.resource_id == "r1"
        assert made.thread.metadata == {
            "topic": "x",
            "cloned_from": "t1",
            "cloned_from_resource": "r1",
            "cloned_last_message_id": "m2",
            "cloned_from_created_at": "2025-01-01T00:00:00.000000+00:00",
        }
        assert await lineage.get_lineage(store, "c1") == Lineage("t1", "r1", made.thread.created_at, "m2", at(0))
        named = await lineage.clone_thread(store, "t1", "c2", title="", metadata={"topic": "y", "n": 1})
        assert named.thread.title == "" and named.thread.metadata["topic"] == "y" and named.thread.metadata["n"] == 1
        empty = await lineage.clone_thread(store, "t1", "c3", message_ids=[])
        assert empty.thread.metadata["cloned_last_message_id"] is None and await _copies(store, empty) == []
        for bad in ({"cloned_from": "x"}, {"cloned_last_message_id": None}, {"cloned_from_resource": "r9"}):
            error = await unchanged_after(store, partial(lineage.clone_thread, store, "t1", "c4", metadata=bad))
            assert isinstance(error, ValidationError) and error.field == "metadata" and error.rule == "R-LINEAGE"
        await unchanged_after(store, lambda: lineage.clone_thread(store, "t1", "c1"), ConflictError)
        await unchanged_after(store, lambda: lineage.clone_thread(store, "t1", "k1"), ConflictError)
        await unchanged_after(store, lambda: lineage.clone_thread(store, "nope", "c5"), NotFoundError)
        await unchanged_after(store, lambda: lineage.clone_thread(store, "t1", "t1"))
        await unchanged_after(store, lambda: lineage.clone_thread(store, "t1", "c5", message_ids="m1"))
        default_id = await lineage.clone_thread(store, "t1", message_limit=1)
        assert _is_uuid7(default_id.thread.id)

    async def test_r_lineage_clone_into_another_resource_needs_the_source_owner(self, store: BaseStorage) -> None:
        source = await _source(store)
        await unchanged_after(store, lambda: lineage.clone_thread(store, "t1", "x", resource_id="r2"), OwnershipError)
        wrong = lambda: lineage.clone_thread(store, "t1", "x", resource_id="r2", source_resource_id="r2")  # noqa: E731
        await unchanged_after(store, wrong, OwnershipError)
        await unchanged_after(
            store, lambda: lineage.clone_thread(store, "t1", "x", source_resource_id="r9"), OwnershipError
        )
        made = await lineage.clone_thread(store, "t1", "x", resource_id="r2", source_resource_id="r1")
        assert made.thread.resource_id == "r2" and {m.resource_id for m in await _copies(store, made)} == {"r2"}
        assert ids(await store.list_messages_by_resource("r2", per_page=False)) == ["k", *made.message_ids.values()]
        assert list(made.message_ids) == source
        # the clone's owner sees its lineage, but never the other resource's thread
        assert (await lineage.get_lineage(store, "x", "r2")) == Lineage("t1", "r1", made.thread.created_at, "m6", at(0))
        assert await lineage.source_thread(store, "x", "r2") is None
        assert await lineage.source_thread(store, "x") is None
        assert [t.id for t in await lineage.clone_history(store, "x", "r2")] == ["x"]
        assert ids(await lineage.list_clones(store, "t1", "r1")) == []
        assert ids(await lineage.list_clones(store, "t1", "r2")) == ["x"]
        assert await lineage.get_lineage(store, "x", "r1") is None

    async def test_r_lineage_branch_holds_the_prefix_through_the_message(self, store: BaseStorage) -> None:
        source = await _source(store)
        made = await lineage.branch_thread(store, "t1", "m3", "b1")
        assert list(made.message_ids) == ["m1", "m2", "m3"]  # m4 shares m3's time but comes after it
        assert made.thread.title == "Branch of plan" and made.thread.metadata["cloned_last_message_id"] == "m3"
        await store.save_messages([message("own", "b1", created_at=at(9))])
        assert _contents((await store.list_messages("b1", per_page=False)).items) == [
            "m1 text",
            "m2 text",
            "m3 text",
            "own text",
        ]
        assert ids(await store.list_messages("t1", per_page=False)) == source
        last = await lineage.branch_thread(store, "t1", "m6", "b2", title="t", metadata={"k": 1})
        assert list(last.message_ids) == source and last.thread.title == "t"
        for at_id in ("k", "nope"):  # another thread's message, an unknown one
            await unchanged_after(store, partial(lineage.branch_thread, store, "t1", at_id, "b3"), NotFoundError)
        into = await lineage.branch_thread(store, "t1", "m1", "b4", resource_id="r2", source_resource_id="r1")
        assert into.thread.resource_id == "r2" and ids(await _copies(store, into)) == list(into.message_ids.values())
        await unchanged_after(
            store, lambda: lineage.branch_thread(store, "t1", "m1", "b5", resource_id="r2"), OwnershipError
        )

    async def test_r_lineage_copies_sort_before_messages_saved_after_them(
        self, storage_factory: StorageFactory
    ) -> None:
        """R-ORDER through a copy: a clone's or branch's messages take their
        sequences when it is made, before any message saved later, so a
        message saved afterwards at the same ``created_at`` as the copies
        sorts after every one of them: in a page, a cursor walk, descending
        order and the resource's listing, as the reference store answers."""
        async with paired_stores(storage_factory) as (sut, reference, _):
            answers: list[dict[str, list[Any]]] = []
            for store in (sut, reference):
                await store.save_thread(thread("t1", created_at=at(0)))
                await store.save_messages([message(f"s{i}", created_at=at(1)) for i in range(1, 4)])
                # each copy followed at once by a message at the copies' time
                await lineage.clone_thread(store, "t1", "c1")
                await store.save_messages([message("later-c1", "c1", created_at=at(1))])
                await lineage.branch_thread(store, "t1", "s2", "b1")
                await store.save_messages([message("later-b1", "b1", created_at=at(1))])
                walked: list[Any] = []
                cursor = None
                while True:
                    page = await store.list_messages("c1", per_page=1, cursor=cursor)
                    walked += _contents(page.items)
                    if (cursor := page.next_cursor) is None:
                        break
                answers.append(
                    {
                        "c1": _contents((await store.list_messages("c1", per_page=False)).items),
                        "c1 by cursor": walked,
                        "c1 DESC": _contents(
                            (
                                await store.list_messages("c1", per_page=False, order_by=OrderBy("created_at", "DESC"))
                            ).items
                        ),
                        "b1": _contents((await store.list_messages("b1", per_page=False)).items),
                        "r1": _contents((await store.list_messages_by_resource("r1", per_page=False)).items),
                    }
                )
            assert answers[1]["c1"] == ["s1 text", "s2 text", "s3 text", "later-c1 text"]
            assert answers[0] == answers[1], f"adapter: {answers[0]}\nreference: {answers[1]}"

    async def test_r_lineage_calls_walk_the_tree_within_one_resource(self, store: BaseStorage) -> None:
        await _source(store)
        await lineage.clone_thread(store, "t1", "a", message_limit=2)
        await lineage.branch_thread(store, "a", (await store.list_messages("a")).items[0].id, "a1")
        await lineage.clone_thread(store, "a1", "a2")
        for i in range(5):
            await lineage.clone_thread(store, "t1", f"c{i}", message_limit=0)
        await lineage.clone_thread(store, "t1", "other", resource_id="r2", source_resource_id="r1")
        assert await lineage.get_lineage(store, "t1") is None and await lineage.get_lineage(store, "nope") is None
        source = await lineage.source_thread(store, "a2")
        assert isinstance(source, Thread) and source.id == "a1"
        assert [t.id for t in await lineage.clone_history(store, "a2")] == ["t1", "a", "a1", "a2"]
        assert [t.id for t in await lineage.clone_history(store, "a2", "r1")] == ["t1", "a", "a1", "a2"]
        assert await lineage.clone_history(store, "a2", "r2") == []
        assert [t.id for t in await lineage.clone_history(store, "t1")] == ["t1"]
        first = await lineage.list_clones(
            store, "t1", "r1", per_page=4, order_by={"field": "created_at", "direction": "ASC"}
        )
        assert ids(first) == ["a", "c0", "c1", "c2"] and first.total == 6 and first.has_more
        rest = await lineage.list_clones(
            store,
            "t1",
            "r1",
            per_page=4,
            order_by={"field": "created_at", "direction": "ASC"},
            cursor=first.next_cursor,
        )
        assert ids(rest) == ["c3", "c4"] and rest.next_cursor is None
        for other in (("t1", "r2"), ("a", "r1")):  # a cursor pages only the listing it came from
            with pytest.raises(ValidationError):
                await lineage.list_clones(
                    store,
                    *other,
                    per_page=4,
                    order_by={"field": "created_at", "direction": "ASC"},
                    cursor=first.next_cursor,
                )
        assert ids(await lineage.list_clones(store, "a", "r1")) == ["a1"]
        assert ids(await lineage.list_clones(store, "t1", "r2")) == ["other"]
        with pytest.raises(ValidationError):
            await lineage.list_clones(store, "t1", "")

    async def test_r_lineage_deleted_source_leaves_readable_clones(self, store: BaseStorage) -> None:
        await _source(store)
        made = await lineage.clone_thread(store, "t1", "c1")
        await store.delete_thread("t1")
        assert ids(await store.list_messages("c1", per_page=False)) == list(made.message_ids.values())
        assert await lineage.get_lineage(store, "c1") == Lineage("t1", "r1", made.thread.created_at, "m6", at(0))
        assert await lineage.source_thread(store, "c1") is None  # the id no longer resolves
        assert [t.id for t in await lineage.clone_history(store, "c1")] == ["c1"]
        assert ids(await lineage.list_clones(store, "t1", "r1")) == ["c1"]

    async def test_r_lineage_a_thread_created_again_under_a_source_id_is_not_the_source(
        self, store: BaseStorage
    ) -> None:
        """A conversation deleted and started again under its id (a session
        name reused) is a new thread: the old clone's lineage keeps naming
        the id and the deleted source's ``created_at``, and neither
        ``source_thread`` nor ``clone_history`` leads to the new thread."""
        await _source(store)
        made = await lineage.clone_thread(store, "t1", "c1")
        branch = await lineage.branch_thread(store, "c1", made.message_ids["m3"], "b1")
        await store.delete_thread("t1")
        await store.save_thread(thread("t1", title="new", created_at=at(60)))
        record = await lineage.get_lineage(store, "c1")
        assert record is not None and record.source_created_at == at(0)
        assert await lineage.source_thread(store, "c1") is None
        assert [t.id for t in await lineage.clone_history(store, "b1")] == ["c1", "b1"]
        again = await lineage.clone_thread(store, "t1", "c2")  # a clone of the new thread is its clone
        source = await lineage.source_thread(store, "c2")
        assert source is not None and source.title == "new"
        assert [t.id for t in await lineage.clone_history(store, "c2")] == ["t1", "c2"]
        assert (await lineage.get_lineage(store, "c2")) == Lineage("t1", "r1", again.thread.created_at, None, at(60))
        made_at = made.thread.created_at
        assert made_at is not None
        assert branch.thread.metadata["cloned_from_created_at"] == made_at.isoformat(timespec="microseconds")

    async def test_r_lineage_erasing_a_resource_removes_lineage_naming_it(self, store: BaseStorage) -> None:
        await _source(store)
        await lineage.clone_thread(store, "t1", "x", resource_id="r2", source_resource_id="r1")
        await lineage.clone_thread(store, "k1", "y", resource_id="r1", source_resource_id="r2")
        await store.delete_resource("r1")
        assert await lineage.get_lineage(store, "x") is None
        assert len((await store.list_messages("x", per_page=False)).items) == 6  # the copy stays
        assert ids(await lineage.list_clones(store, "t1", "r2")) == []
        assert await store.get_thread("y") is None

    async def test_r_lineage_reads_clones_written_before_lineage(self, store: BaseStorage) -> None:
        await _source(store)
        with lineage.writing_lineage():  # as a store written before (or its import) holds it
            await store.save_thread(thread("old", metadata={"cloned_from": "t1"}, created_at=at(7)))
        assert await lineage.get_lineage(store, "old") == Lineage("t1", None, at(7), None)
        assert ids(await lineage.list_clones(store, "t1", "r1")) == ["old"]
        source = await lineage.source_thread(store, "old")
        assert source is not None and source.id == "t1"

    async def test_r_lineage_cannot_be_set_by_hand_through_metadata(self, store: BaseStorage) -> None:
        """Only a real clone or branch makes a thread a clone: a lineage key
        given a value by hand (a new thread, a replaced one, a metadata
        patch) is a ValidationError naming ``metadata.<key>``, nothing
        written; a clone saved back unchanged keeps its lineage; a clone's
        key set to None by hand is refused too (lineage is all or nothing),
        while None on a thread that is no clone changes nothing."""
        await _source(store)
        made = await lineage.clone_thread(store, "t1", "c1")
        forged = {
            "cloned_from": "t1",
            "cloned_from_resource": "r1",
            "cloned_last_message_id": "m6",
            "cloned_from_created_at": "2025-01-01T00:00:00.000000+00:00",
        }
        for key, value in forged.items():
            changed = {key: "k1" if key == "cloned_from" else "other"}
            calls = [
                partial(store.save_thread, thread("fake", metadata={key: value})),
                partial(store.insert_thread, thread("fake", metadata={key: value})),
            ]
            for target in ("t1", "c1"):  # an ordinary thread; a clone re-pointed
                stored = await store.get_thread(target)
                assert stored is not None
                calls.append(partial(store.update_thread, target, metadata=changed))
                calls.append(partial(store.save_thread, replace(stored, metadata={**stored.metadata, **changed})))
            for call in calls:
                raised = await unchanged_after(store, call)
                assert isinstance(raised, ValidationError)
                assert (raised.field, raised.rule) == (f"metadata.{key}", "R-LINEAGE"), raised
        assert await lineage.get_lineage(store, "fake") is None and await lineage.get_lineage(store, "t1") is None
        assert ids(await lineage.list_clones(store, "t1", "r1")) == ["c1"]
        again = await store.save_thread(replace(made.thread, title="renamed"))  # read, changed, saved back
        await store.update_thread("c1", metadata={"cloned_from": "t1", "topic": "y"})  # the same value: no change
        await store.save_thread(thread("plain", metadata=dict.fromkeys(forged)))  # None: no lineage
        assert again.title == "renamed"
        assert await lineage.get_lineage(store, "c1") == Lineage("t1", "r1", made.thread.created_at, "m6", at(0))
        assert await lineage.get_lineage(store, "plain") is None
        for key in forged:  # lineage is all or nothing: no key of a clone is nulled by hand
            stored = await store.get_thread("c1")
            assert stored is not None
            for call in (
                partial(store.update_thread, "c1", metadata={key: None}),
                partial(store.save_thread, replace(stored, metadata={**stored.metadata, key: None})),
            ):
                raised = await unchanged_after(store, call)
                assert isinstance(raised, ValidationError) and raised.field == f"metadata.{key}", raised
        await store.update_thread("plain", metadata=dict.fromkeys(forged))  # None where None is held: no change
        assert await lineage.get_lineage(store, "c1") == Lineage("t1", "r1", made.thread.created_at, "m6", at(0))

    async def test_ops_race_clone_holds_a_consistent_prefix(self, storage_factory: StorageFactory) -> None:
        """A clone racing appends to its source holds exactly a prefix of the
        source's final messages (no gap, nothing out of order). The appends
        are one writer's, in order: batches of racing writers may commit in
        any order (a later batch first), and a clone between those commits
        rightly holds a set that is no prefix of the final order."""
        async with open_store(storage_factory) as store:
            await store.save_thread(thread("t1"))
            await store.save_messages([message(f"a{i:03}", created_at=at(i)) for i in range(12)])
            made: list[lineage.Clone] = []

            async def clone(i: int) -> None:
                made.append(await lineage.clone_thread(store, "t1", f"c{i}"))

            async def append() -> None:
                for i in range(4):
                    await store.save_messages([message(f"b{i}{k}", created_at=at(100 + i * 5 + k)) for k in range(5)])

            async with anyio.create_task_group() as group:
                group.start_soon(append)
                for i in range(4):
                    group.start_soon(clone, i)
            final = ids(await store.list_messages("t1", per_page=False))
            for one in made:
                copied = list(one.message_ids)
                assert copied == final[: len(copied)] and len(copied) >= 12
                assert ids(await store.list_messages(one.thread.id, per_page=False)) == list(one.message_ids.values())

    async def test_ops_clone_and_branch_cross_every_chunk_limit(self, store: BaseStorage) -> None:
        """Clones and branches at sizes one below, at and one above each
        declared chunk limit copy every message, in order."""
        for n in chunk_sizes(store):
            await store.save_thread(thread(f"t{n}"))
            await store.save_messages([message(f"m{n}-{i}", f"t{n}", created_at=at(1)) for i in range(n)])
            made = await lineage.clone_thread(store, f"t{n}", f"c{n}")
            assert len(made.message_ids) == n and (await store.list_messages(f"c{n}", per_page=0)).total == n
            assert ids(await store.list_messages(f"c{n}", per_page=False)) == list(made.message_ids.values())
            cut = max(n - 2, 0)
            branch = await lineage.branch_thread(store, f"t{n}", f"m{n}-{cut}", f"b{n}")
            assert list(branch.message_ids) == [f"m{n}-{i}" for i in range(cut + 1)]
            await store.delete_resource("r1")
