"""Read plans (:class:`memory_core.plan.ReadPlan`) as one MongoDB ``aggregate``.

Every part of a plan becomes one *branch*: a pipeline on one collection whose
output documents carry the branch's tag in the field ``_part``. The first
branch is the aggregate's own pipeline (on its collection, with its index
``hint``); every other branch joins it with ``$unionWith``. So a whole
operation's reads (ownership threads, resources, a page with its count,
include windows) are one command, one round trip: :func:`read_aggregate`
builds it, :func:`read_parts` splits the answer into
:class:`~memory_core.plan.ReadParts`.

Branches (``tag``: collection, pipeline):

- ``t``: threads, ``$match`` on ``_id``; ``o``: the owners of those threads
  (``$lookup`` of ``resources`` by ``resource_id``, unwound); ``r``:
  resources, ``$match`` on ``_id``.
- ``m`` / ``mc``: the message page (``$match``, ``$sort``, ``$skip``,
  ``$limit``) and its total: for an unfiltered query the counters the writes
  keep (:mod:`memory_core_mongodb._counters`: the queried threads'
  ``message_count`` summed, or those of all the resource's threads), else a count of the
  matches (``$match``, ``$group`` with ``$sum: 1``: exact); none when the
  query asks for no total (``query.count`` False).
  ``tp`` / ``tc``: the same for a thread page. Filters, sorts and indexes are
  those of :mod:`memory_core_mongodb._query`.
- ``w<i>`` for include window ``i``: the target by ``_id``, and for each side
  the target's ``$lookup`` of its neighbours in its own thread and resource
  (range on ``created_at`` plus the ``seq`` tie, sorted, limited), unwound.
  A ``$lookup`` followed by ``$unwind`` is one stage on MongoDB, so no
  intermediate document holds the whole side (16 MiB limit).

Index use. The first branch is hinted like the primitive queries (the page
when there is one: it is the part whose cost depends on using the order
index). ``$unionWith`` and ``$lookup`` sub-pipelines take no ``hint`` on
MongoDB: their leading ``$match`` (+ ``$sort``) is planned by the server's
planner, which picks the index with the equality prefix and the order
(``tests/test_mongodb_indexes.py`` explains them on a real server).

Order. The tags, not the position in the stream, say which branch a
document came from; pages and windows are sorted again here by their sort
key (a page's worth of documents), since MongoDB documents no order for
``$unionWith`` output.

Counts use ``$group`` rather than ``$count``: secantusdb refuses ``$count``
inside a ``$unionWith`` (README, "secantusdb differences").
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from memory_core.models import Message, Thread
from memory_core.plan import ReadParts, ReadPlan
from memory_core.query import MessageQuery
from memory_core_mongodb._layout import MESSAGE_COUNT, message_from_doc, resource_from_doc, thread_from_doc
from memory_core_mongodb._query import (
    Plan,
    message_count_plan,
    message_list_plan,
    thread_count_plan,
    thread_list_plan,
)
from memory_core_mongodb._schema import MESSAGES, RESOURCES, THREADS, THREADS_RESOURCE_CREATED

__all__ = [
    "Aggregate",
    "Doomed",
    "counter_aggregate",
    "doomed_aggregate",
    "doomed_parts",
    "message_total",
    "read_aggregate",
    "read_parts",
    "state_aggregate",
    "state_parts",
]

Doc = dict[str, Any]

PART = "_part"
"""The field naming a result document's branch."""


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One ``aggregate`` command: ``db[collection].aggregate(pipeline, hint=hint,
    batchSize=batch)``.

    Attributes:
        collection: the collection of the first branch.
        pipeline: the first branch, then one ``$unionWith`` per other branch.
        hint: index of the first branch's ``$match`` (None: the server's choice,
            e.g. a lookup by ``_id``).
        batch: documents the whole answer can hold at most (the first batch is
            sized to it, so no ``getMore`` follows), or None when a part is
            unbounded (a listing without a limit: the server's batching).
    """

    collection: str
    pipeline: list[Doc]
    hint: str | None
    batch: int | None


@dataclass(frozen=True, slots=True)
class _Branch:
    collection: str
    pipeline: list[Doc]
    hint: str | None
    size: int | None  # most documents it returns; None: unbounded


def _tagged(pipeline: list[Doc], tag: str) -> list[Doc]:
    return [*pipeline, {"$set": {PART: tag}}]


def _by_ids(collection: str, ids: tuple[str, ...] | list[str], tag: str) -> _Branch:
    return _Branch(collection, _tagged([{"$match": {"_id": {"$in": list(ids)}}}], tag), None, len(ids))


def _page(collection: str, plan: Plan, offset: int, limit: int | None, tag: str) -> _Branch:
    pipeline: list[Doc] = [{"$match": plan.filter}, {"$sort": dict(plan.sort)}]
    if offset:
        pipeline.append({"$skip": offset})
    if limit is not None:
        pipeline.append({"$limit": limit})
    return _Branch(collection, _tagged(pipeline, tag), plan.hint, limit)


def _count(collection: str, plan: Plan, tag: str) -> _Branch:
    pipeline: list[Doc] = [{"$match": plan.filter}, {"$group": {"_id": None, "n": {"$sum": 1}}}]
    return _Branch(collection, _tagged(pipeline, tag), plan.hint, 1)


def _counters(query: MessageQuery, tag: str) -> _Branch | None:
    """The total of an unfiltered query from the counters (one document), or
    None when the query is filtered (its matches must be counted)."""
    if not query.unfiltered:
        return None
    found: Doc = {}
    if query.thread_ids is not None:
        # A thread of another resource than the query's adds 0: the filter drops it.
        found["_id"] = {"$in": list(query.thread_ids)}
    if query.resource_id is not None:
        # A resource's messages are those of its threads (R-OWN): the sum of
        # their counters, found by the threads' resource_id index.
        found["resource_id"] = query.resource_id
    if not found:
        return None
    pipeline: list[Doc] = [{"$match": found}, {"$group": {"_id": None, "n": {"$sum": "$" + MESSAGE_COUNT}}}]
    hint = THREADS_RESOURCE_CREATED if query.thread_ids is None else None  # else the _id index
    return _Branch(THREADS, _tagged(pipeline, tag), hint, 1)


def _message_total(query: MessageQuery, tag: str) -> _Branch:
    """The branch answering a message query's total: the counters, or a count."""
    return _counters(query, tag) or _count(MESSAGES, message_count_plan(query), tag)


def counter_aggregate(query: MessageQuery) -> Aggregate | None:
    """The one command reading an unfiltered query's total from the counters
    (:meth:`_count_messages`), or None when the query must be counted."""
    branch = _counters(query, "mc")
    return None if branch is None else _aggregate([branch])


def message_total(docs: list[Doc]) -> int:
    """The total in the answer of :func:`counter_aggregate`."""
    return _total(docs)


def _side(message_id: str, limit: int, descending: bool, tag: str) -> _Branch:
    """Up to ``limit`` neighbours of a message before (``descending``) or after it."""
    bound, tie, direction = ("$lte", "$lt", -1) if descending else ("$gte", "$gt", 1)
    neighbours = [
        {"$match": {"$expr": {"$and": [{"$eq": ["$resource_id", "$$r"]}, {bound: ["$created_at", "$$at"]}]}}},
        {"$match": {"$expr": {"$or": [{tie: ["$created_at", "$$at"]}, {tie: ["$seq", "$$s"]}]}}},
        {"$sort": {"created_at": direction, "seq": direction}},
        {"$limit": limit},
    ]
    # The thread equality as localField/foreignField (MongoDB 5.0+): MongoDB
    # bounds the index with it; secantusdb answers it about 4x faster than
    # the same equality in $expr (3000 messages).
    lookup = {
        "from": MESSAGES,
        "localField": "thread_id",
        "foreignField": "thread_id",
        "let": {"r": "$resource_id", "at": "$created_at", "s": "$seq"},
        "pipeline": neighbours,
        "as": "n",
    }
    pipeline: list[Doc] = [
        {"$match": {"_id": message_id}},
        {"$lookup": lookup},
        {"$unwind": "$n"},
        {"$replaceWith": "$n"},
    ]
    return _Branch(MESSAGES, _tagged(pipeline, tag), None, limit)


def _branches(plan: ReadPlan) -> list[_Branch]:
    branches: list[_Branch] = []
    if plan.messages is not None:
        query = plan.messages
        if query.limit != 0:
            branches.append(_page(MESSAGES, message_list_plan(query), query.offset, query.limit, "m"))
        if query.count:
            branches.append(_message_total(query, "mc"))
    if plan.thread_page is not None:
        page = plan.thread_page
        if page.limit != 0:
            branches.append(_page(THREADS, thread_list_plan(page), page.offset, page.limit, "tp"))
        branches.append(_count(THREADS, thread_count_plan(page), "tc"))
    if plan.threads:
        branches.append(_by_ids(THREADS, plan.threads, "t"))
        if plan.owner_resources:
            owners: list[Doc] = [
                {"$match": {"_id": {"$in": list(plan.threads)}}},
                {"$lookup": {"from": RESOURCES, "localField": "resource_id", "foreignField": "_id", "as": "o"}},
                {"$unwind": "$o"},
                {"$replaceWith": "$o"},
            ]
            branches.append(_Branch(THREADS, _tagged(owners, "o"), None, len(plan.threads)))
    if plan.resources:
        branches.append(_by_ids(RESOURCES, plan.resources, "r"))
    for index, (message_id, before, after) in enumerate(plan.windows):
        tag = f"w{index}"
        branches.append(_by_ids(MESSAGES, [message_id], tag))
        if before > 0:
            branches.append(_side(message_id, before, True, tag))
        if after > 0:
            branches.append(_side(message_id, after, False, tag))
    return branches


def _aggregate(branches: list[_Branch]) -> Aggregate:
    first, *others = branches
    pipeline = [
        *first.pipeline,
        *({"$unionWith": {"coll": b.collection, "pipeline": b.pipeline}} for b in others),
    ]
    sizes = [b.size for b in branches]
    batch = None if None in sizes else sum(s for s in sizes if s is not None)
    return Aggregate(first.collection, pipeline, first.hint, batch)


def read_aggregate(plan: ReadPlan) -> Aggregate | None:
    """The one command answering ``plan``; None when the plan reads nothing."""
    branches = _branches(plan)
    return _aggregate(branches) if branches else None


def _split(docs: list[Doc]) -> dict[str, list[Doc]]:
    parts: dict[str, list[Doc]] = {}
    for doc in docs:
        parts.setdefault(doc.pop(PART), []).append(doc)
    return parts


_MESSAGE_ORDER = itemgetter("created_at", "seq")


def _total(docs: list[Doc] | None) -> int:
    # A sum over no thread: no document, 0.
    return int(docs[0].get("n") or 0) if docs else 0


def read_parts(plan: ReadPlan, docs: list[Doc]) -> ReadParts:
    """The answer of :func:`read_aggregate` (all its documents) as
    :class:`~memory_core.plan.ReadParts`."""
    parts = _split(docs)
    threads = {doc["_id"]: thread_from_doc(doc) for doc in parts.get("t", ())}
    resources = {doc["_id"]: resource_from_doc(doc) for tag in ("r", "o") for doc in parts.get(tag, ())}
    messages: list[Message] = []
    if plan.messages is not None:
        page = sorted(parts.get("m", ()), key=_MESSAGE_ORDER, reverse=plan.messages.descending)
        messages = [message_from_doc(doc) for doc in page]
    thread_items: list[Thread] = []
    if plan.thread_page is not None:
        (name, direction), tie = thread_list_plan(plan.thread_page).sort
        order = itemgetter(name, tie[0])
        thread_items = [thread_from_doc(d) for d in sorted(parts.get("tp", ()), key=order, reverse=direction < 0)]
    windows = [
        [message_from_doc(doc) for doc in sorted(parts.get(f"w{index}", ()), key=_MESSAGE_ORDER)]
        for index in range(len(plan.windows))
    ]
    return ReadParts(
        threads, resources, _total(parts.get("mc")), messages, _total(parts.get("tc")), thread_items, windows
    )


def state_aggregate(thread_ids: list[str], message_ids: list[str]) -> Aggregate:
    """One command reading the threads and the messages among these ids (a
    write's checks: ``_read_state`` / ``_save_checked``).

    The messages are the aggregate's own pipeline, the threads (a few ids)
    the ``$unionWith`` branch: secantusdb runs a ``$unionWith`` branch as a
    scan of its whole collection testing each document against the ``$in``
    list (README, "secantusdb differences"), so a save of 1,000 messages
    into a 10^4-message collection took it over a minute (the client's
    ``timeoutMS``) with the messages there; MongoDB plans either on the
    ``_id`` index."""
    return _aggregate([_by_ids(MESSAGES, message_ids, "s"), _by_ids(THREADS, thread_ids, "t")])


def state_parts(docs: list[Doc]) -> tuple[dict[str, Thread], list[Message]]:
    """The answer of :func:`state_aggregate`: (threads by id, stored messages)."""
    parts = _split(docs)
    threads = {doc["_id"]: thread_from_doc(doc) for doc in parts.get("t", ())}
    return threads, [message_from_doc(doc) for doc in parts.get("s", ())]


@dataclass(frozen=True, slots=True)
class Doomed:
    """The stored messages of one thread among the ids a delete names.

    Attributes:
        resource_id: the thread's (and its messages') resource.
        ids: those messages' ids.
        newest_us: ``created_at`` (µs) of the thread's newest message outside
            them, its ``last_message_at`` after the delete (None: no message left).
    """

    resource_id: str
    ids: list[str]
    newest_us: int | None


def doomed_aggregate(message_ids: list[str]) -> Aggregate:
    """One command reading, for a delete of these ids, the stored messages
    grouped by thread, with each thread's newest message outside the group
    (a ``$lookup`` on the thread-order index's ``thread_id`` prefix, newest
    first, skipping the group's ids)."""
    newest: list[Doc] = [
        {"$match": {"$expr": {"$not": [{"$in": ["$_id", "$$gone"]}]}}},
        {"$sort": {"created_at": -1}},
        {"$limit": 1},
        {"$project": {"_id": 0, "created_at": 1}},
    ]
    pipeline: list[Doc] = [
        {"$match": {"_id": {"$in": message_ids}}},
        {"$group": {"_id": "$thread_id", "resource_id": {"$first": "$resource_id"}, "ids": {"$push": "$_id"}}},
        {
            "$lookup": {
                "from": MESSAGES,
                "localField": "_id",
                "foreignField": "thread_id",
                "let": {"gone": "$ids"},
                "pipeline": newest,
                "as": "newest",
            }
        },
    ]
    return Aggregate(MESSAGES, pipeline, None, len(message_ids))


def doomed_parts(docs: list[Doc]) -> dict[str, Doomed]:
    """The answer of :func:`doomed_aggregate`: thread id -> its :class:`Doomed`."""
    return {
        doc["_id"]: Doomed(
            doc["resource_id"], list(doc["ids"]), int(doc["newest"][0]["created_at"]) if doc["newest"] else None
        )
        for doc in docs
    }
