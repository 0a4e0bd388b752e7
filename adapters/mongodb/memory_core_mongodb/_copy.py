"""Clones and branches inside MongoDB: the aggregation pipelines of
:meth:`MongoStorage._copy_thread <memory_core_mongodb.storage.MongoStorage._copy_thread>`.

``$merge`` (the only server-side insert from a query) may not run inside a
transaction, so a copy is staged, then committed:

1. ``$merge`` writes the copies under a staging id (:func:`staging_id`) as
   both their ``thread_id`` and ``resource_id``: it contains NUL, which
   R-ID refuses, so no read, count or erasure of any thread or resource
   ever meets a staged copy;
2. one transaction inserts the thread and moves the staged copies into it
   and its resource (one ``updateMany``), with the counters.

A copy that fails or dies between the two leaves only staged documents,
invisible to every read; the next copy in the store deletes those older
than :data:`STAGING_LEASE_US` (:func:`stale_staging`).
"""

from __future__ import annotations

from typing import Any

from bson.int64 import Int64
from uuid6 import UUID

from memory_core.ids import new_message_id
from memory_core.lineage import CopyPlan
from memory_core_mongodb._layout import us
from memory_core_mongodb._schema import MESSAGES

__all__ = ["OVERSIZE_RATIO", "STAGING_LEASE_US", "copy_pipeline", "stale_staging", "staging_id"]

Doc = dict[str, Any]

_STAGING = "\x00copy:"
STAGING_LEASE_US = 600_000_000
"""How long (µs, 10 minutes) staged copies are presumed to belong to a copy
still running; older ones are a dead copy's and removed."""
OVERSIZE_RATIO = 6
"""A document's JSON text (``memory_core.codec``) is at most this many times
its BSON size (a control character: 1 byte in BSON, ``\\u0001`` in JSON), so
only messages whose BSON size exceeds ``size_limit / OVERSIZE_RATIO`` can be
over the limit and are read to check (the rest never leave the server)."""


def staging_id() -> str:
    """A new staging id: NUL, ``copy:``, then a UUIDv7 (time-ordered, so
    :func:`stale_staging` finds the old ones by range)."""
    return _STAGING + new_message_id()


def stale_staging(now_us: int) -> Doc:
    """Filter of the staged copies older than :data:`STAGING_LEASE_US`
    (a range of the thread-order index)."""
    ms = (now_us - STAGING_LEASE_US) // 1000
    bound = str(UUID(int=max(ms, 0) << 80))  # the first UUIDv7 of that millisecond
    return {"thread_id": {"$gte": _STAGING, "$lt": _STAGING + bound}}


def _selection(plan: CopyPlan) -> list[Doc]:
    """``$match`` stages picking the source messages the plan may copy
    (source thread, ids, date range and the branch's cut), before ``newest``."""
    match: Doc = {"thread_id": plan.source_id}
    if plan.message_ids is not None:
        match["_id"] = {"$in": list(plan.message_ids)}
    created: Doc = {}
    if plan.created_from_us is not None:
        created["$gte"] = us(plan.created_from_us)
    if plan.created_to_us is not None:  # "$lt" next µs: secantusdb's index scans drop a "$lte" bound's own key
        created["$lt"] = us(plan.created_to_us + 1)
    if created:
        match["created_at"] = created
    stages: list[Doc] = [{"$match": match}]
    if plan.until is not None:
        at = us(plan.until[0])
        cut = {"$or": [{"created_at": {"$lt": at}}, {"created_at": at, "seq": {"$lt": us(plan.until[1] + 1)}}]}
        stages.append({"$match": cut})
    return stages


def copy_pipeline(plan: CopyPlan, stage: str, first: int) -> list[Doc]:
    """The staging pipeline (on the messages collection): the selection in
    R-ORDER, the newest ``plan.newest`` of it, at most ``len(plan.new_ids)``;
    the k-th (from 1) becomes ``_id = new_ids[k-1]``, ``seq = first + k - 1``,
    thread and resource ``stage``, ``source`` = its original id and ``big``
    = whether its BSON size exceeds ``plan.size_limit / OVERSIZE_RATIO`` (so
    it may be over the limit: see :data:`OVERSIZE_RATIO`); ``$merge`` inserts
    them (an id that exists fails the stage)."""
    order = {"created_at": 1, "seq": 1}
    pipeline = _selection(plan)
    if plan.newest is not None:
        pipeline += [{"$sort": {"created_at": -1, "seq": -1}}, {"$limit": plan.newest}]
    pipeline += [
        {"$sort": order},
        {"$limit": len(plan.new_ids)},
        {"$setWindowFields": {"sortBy": order, "output": {"_k": {"$documentNumber": {}}}}},
        {
            "$set": {
                "source": "$_id",
                "_id": {"$arrayElemAt": [list(plan.new_ids), {"$subtract": ["$_k", 1]}]},
                "thread_id": stage,
                "resource_id": stage,
                "seq": {"$add": [Int64(first - 1), "$_k"]},
                "big": {"$gt": [{"$bsonSize": "$$ROOT"}, plan.size_limit // OVERSIZE_RATIO]},
            }
        },
        {"$unset": "_k"},
        {"$merge": {"into": MESSAGES, "on": "_id", "whenMatched": "fail", "whenNotMatched": "insert"}},
    ]
    return pipeline
