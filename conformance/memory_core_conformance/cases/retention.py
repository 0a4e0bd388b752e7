"""Retention: ``prune`` by age (R-PRUNE), the same on every backend."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memory_core.clock import ManualClock
from memory_core.errors import ValidationError
from memory_core.retention import PruneBatch, PruneReport, RetentionPolicy
from memory_core.storage import BaseStorage
from memory_core_conformance.cases._base import SuiteBase, ids, unchanged_after
from memory_core_conformance.compare import describe_difference
from memory_core_conformance.harness import at, message, snapshot, thread

__all__ = ["RetentionRules"]


async def _two_tenants(store: BaseStorage) -> None:
    """t1, t2 of r1 and k1 of r2, each with messages at T0+1s..T0+9s."""
    await store.save_thread(thread("t1", created_at=at(0)))
    await store.save_thread(thread("t2", created_at=at(0)))
    await store.save_thread(thread("k1", "r2", created_at=at(0)))
    await store.save_messages(
        [
            message("a1", created_at=at(1)),
            message("a2", created_at=at(5)),  # exactly at the cutoff: stays
            message("a3", created_at=at(9)),
            message("b1", "t2", created_at=at(2)),
            message("b2", "t2", created_at=at(4, us=999_999)),
            message("k", "k1", created_at=at(3)),
        ]
    )


class RetentionRules(SuiteBase):
    """R-PRUNE: messages and threads by age, scope, dry run, batches, resumption."""

    async def test_r_prune_messages_removes_exactly_those_created_before_the_cutoff(self, store: BaseStorage) -> None:
        await _two_tenants(store)
        scoped = await store.prune(RetentionPolicy(before=at(5), resource_id="r1"))
        assert scoped == PruneReport("messages", at(5), "r1", False, (), {"t1": 1, "t2": 2})
        assert ids(await store.list_messages(["t1", "t2"])) == ["a2", "a3"]
        assert ids(await store.get_messages(["k"])) == ["k"]  # the other resource is out of scope
        # threads stay, even emptied; store-wide reaches every resource
        assert sorted(ids(await store.list_threads(per_page=False))) == ["k1", "t1", "t2"]
        wide = await store.prune(RetentionPolicy("messages", before=at(5)))
        assert wide.messages == {"k1": 1} and wide.message_count == 1 and wide.resource_id is None
        assert (await store.get_thread("t2")).last_message_at is None  # type: ignore[union-attr]
        again = await store.prune(RetentionPolicy(before=at(5)))
        assert again.messages == {} and again.threads == ()

    async def test_r_prune_threads_by_last_message_at_or_created_at(self, store: BaseStorage) -> None:
        await store.save_thread(thread("stale", created_at=at(1)))
        await store.save_thread(thread("active", created_at=at(1)))
        await store.save_thread(thread("quiet", created_at=at(1)))
        await store.save_thread(thread("fresh", created_at=at(7)))
        await store.save_thread(thread("renamed", created_at=at(1)))
        await store.save_thread(thread("other", "r2", created_at=at(1)))
        await store.save_messages(
            [
                message("s1", "stale", created_at=at(2)),
                message("s2", "stale", created_at=at(3)),
                message("x1", "active", created_at=at(2)),
                message("x2", "active", created_at=at(8)),
                message("n1", "renamed", created_at=at(2)),
                message("o1", "other", created_at=at(2)),
            ]
        )
        # a recent write to an old conversation does not keep it: updated_at is not its age
        await store.update_thread("renamed", title="new title")
        report = await store.prune(RetentionPolicy("threads", before=at(5), resource_id="r1"))
        assert report.threads == ("quiet", "renamed", "stale")  # created_at ASC, ties by id
        assert report.messages == {"stale": 2, "quiet": 0, "renamed": 1} and report.message_count == 3
        assert sorted(ids(await store.list_threads(per_page=False))) == ["active", "fresh", "other"]
        assert await store.get_messages(["s1", "s2", "n1"]) == []
        assert ids(await store.list_messages("active")) == ["x1", "x2"]  # a live thread keeps its old messages
        wide = await store.prune(RetentionPolicy("threads", before=at(5)))
        assert wide.threads == ("other",) and wide.messages == {"other": 1}

    async def test_r_prune_dry_run_reports_the_same_and_writes_nothing(self, store: BaseStorage) -> None:
        await _two_tenants(store)
        await store.save_thread(thread("empty", created_at=at(1)))
        for target in ("messages", "threads"):
            policy = RetentionPolicy(target, before=at(5), batch_size=1)  # type: ignore[arg-type]
            before = await snapshot(store, ("r1", "r2"))
            dry = await store.prune(policy, dry_run=True)
            changes = describe_difference(await snapshot(store, ("r1", "r2")), before, ("after", "before"))
            assert not changes, changes
            assert dry.dry_run
            real = await store.prune(policy)
            assert (real.threads, real.messages) == (dry.threads, dry.messages)

    async def test_r_prune_older_than_counts_from_the_store_clock(self, store: BaseStorage, clock: ManualClock) -> None:
        await _two_tenants(store)
        clock.set(at(3605))  # one hour after T0+5s
        report = await store.prune(RetentionPolicy(older_than=timedelta(hours=1)))
        assert report.cutoff == at(5)
        assert report.messages == {"t1": 1, "t2": 2, "k1": 1}
        # an age reaching past 1900 (R-TIME) finds nothing that old
        ancient = await store.prune(RetentionPolicy("threads", older_than=timedelta(days=365 * 400)))
        assert ancient.threads == () and ancient.messages == {}

    async def test_r_prune_batches_resume_after_an_interruption(self, store: BaseStorage) -> None:
        await store.save_thread(thread("t1", created_at=at(0)))
        await store.save_messages([message(f"m{i}", created_at=at(i)) for i in range(7)])
        seen: list[PruneBatch] = []

        async def interrupt(batch: PruneBatch) -> None:
            seen.append(batch)
            if len(seen) == 2:
                raise RuntimeError("cut off")

        policy = RetentionPolicy(before=at(6), batch_size=2)
        with pytest.raises(RuntimeError):
            await store.prune(policy, before_delete=interrupt)
        assert seen[0] == PruneBatch("t1", ("m0", "m1")) and ids(await store.list_messages("t1"))[0] == "m2"
        rest = await store.prune(RetentionPolicy(before=at(6), batch_size=2), before_delete=interrupt)
        assert rest.messages == {"t1": 4} and [b.message_ids for b in seen[2:]] == [("m2", "m3"), ("m4", "m5")]
        assert ids(await store.list_messages("t1")) == ["m6"]

    async def test_r_prune_refuses_bad_policies_before_io(self, store: BaseStorage) -> None:
        await _two_tenants(store)
        bad_policies = [
            {"target": "resources", "before": at(1)},
            {"older_than": timedelta(0)},
            {"older_than": timedelta(days=-1)},
            {"older_than": 30},
            {},
            {"older_than": timedelta(days=1), "before": at(1)},
            {"before": "yesterday"},
            {"before": at(1), "resource_id": ""},
            {"before": at(1), "batch_size": 0},
            {"before": at(1), "batch_size": True},
            {"before": at(1), "batch_size": 10_001},
        ]
        for fields in bad_policies:
            with pytest.raises(ValidationError) as raised:
                RetentionPolicy(**fields)  # type: ignore[arg-type]
            assert raised.value.field in ("target", "older_than", "before", "resource_id", "batch_size")
        await unchanged_after(store, lambda: store.prune({"before": at(9)}))  # type: ignore[arg-type]
        await unchanged_after(store, lambda: store.prune(RetentionPolicy(before=at(9)), dry_run="no"))  # type: ignore[arg-type]
