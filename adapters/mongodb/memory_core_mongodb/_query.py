"""Normalised queries (:mod:`memory_core.query`) -> MongoDB filters, sorts, hints.

Each function returns a :class:`Plan`: the filter document, the sort, and the
index to ``hint``. Hints pin every query to the index built for its shape
(:mod:`memory_core_mongodb._schema`), so no listing or count ever falls back
to a collection scan, whatever the server's planner would pick.

R-META translation (``MetaCondition`` -> ``{"meta": {"$elemMatch": ...}}``):
the condition must hold for *one* entry: ``k`` equals the key and ``v``
equals the value. BSON comparison gives exactly R-META's typing: numbers
compare numerically across int32/int64/double (5 matches 5.0, exact for
64-bit ints), bool never equals a number, a string never equals a number.
``None`` is ``{"v": {"$type": "null"}}``, which matches a stored explicit
null only: ``{"v": None}`` would also match entries that have no ``v``
(list/dict values), and at the top level a missing key never matches since
no entry has that ``k``. Filter keys and values arrive validated by the core
(``^[A-Za-z_][A-Za-z0-9_]*$`` keys, scalar values), and are only ever used
as values here, never as field names or operators.

Keyset cursors (R-CURSOR) become a range bound on the leading order field
plus a ``$nor`` for the tie at the boundary, which keeps index bounds tight
(the cost does not grow with depth).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_core.query import MessageQuery, MetaCondition, ThreadQuery
from memory_core_mongodb._layout import LAST_ASC, LAST_DESC, us
from memory_core_mongodb._schema import (
    MESSAGES_RESOURCE_ORDER,
    MESSAGES_THREAD_META,
    MESSAGES_THREAD_ORDER,
    THREADS_CREATED,
    THREADS_LAST_ASC,
    THREADS_LAST_DESC,
    THREADS_RESOURCE_CREATED,
    THREADS_RESOURCE_LAST_ASC,
    THREADS_RESOURCE_LAST_DESC,
    THREADS_RESOURCE_META,
    THREADS_RESOURCE_UPDATED,
    THREADS_UPDATED,
)

__all__ = [
    "MESSAGE_ORDER_ASC",
    "Plan",
    "message_count_plan",
    "message_list_plan",
    "meta_condition",
    "thread_count_plan",
    "thread_list_plan",
]

Sort = list[tuple[str, int]]

MESSAGE_ORDER_ASC: Sort = [("created_at", 1), ("seq", 1)]
"""R-ORDER ascending."""


@dataclass(frozen=True, slots=True)
class Plan:
    """One query: ``find(filter).sort(sort).hint(hint)`` (sort empty for counts)."""

    filter: dict[str, Any]
    hint: str
    sort: Sort = field(default_factory=list)


def meta_condition(condition: MetaCondition) -> dict[str, Any]:
    """One R-META condition as a filter clause on the entry array ``meta``."""
    value: Any = {"$type": "null"} if condition.kind == "null" else condition.value
    return {"meta": {"$elemMatch": {"k": condition.key, "v": value}}}


def _with_meta(base: dict[str, Any], conditions: tuple[MetaCondition, ...]) -> dict[str, Any]:
    if conditions:
        base["$and"] = [meta_condition(c) for c in conditions]
    return base


def _range(lower: int | None, upper: int | None) -> dict[str, Any] | None:
    bound: dict[str, Any] = {}
    if lower is not None:
        bound["$gte"] = us(lower)
    if upper is not None:
        bound["$lte"] = us(upper)
    return bound or None


# ---------------------------------------------------------------- messages


def _message_scope(query: MessageQuery) -> dict[str, Any]:
    scope: dict[str, Any] = {}
    if query.thread_ids is not None:
        ids = list(query.thread_ids)
        scope["thread_id"] = ids[0] if len(ids) == 1 else {"$in": ids}
    if query.resource_id is not None:
        # Also the shard key's prefix: with it a sharded query is targeted.
        scope["resource_id"] = query.resource_id
    return scope


def message_list_plan(query: MessageQuery) -> Plan:
    """Filter, R-ORDER sort and index for :meth:`_list_messages` (offset and
    limit are applied by the caller)."""
    found = _message_scope(query)
    lower, upper = query.created_from_us, query.created_to_us
    tie: dict[str, Any] | None = None
    if query.after is not None:
        at, seq = query.after
        if query.descending:
            upper = at if upper is None else min(upper, at)
            tie = {"created_at": us(at), "seq": {"$gte": us(seq)}}
        else:
            lower = at if lower is None else max(lower, at)
            tie = {"created_at": us(at), "seq": {"$lte": us(seq)}}
    created = _range(lower, upper)
    if created is not None:
        found["created_at"] = created
    if tie is not None:
        found["$nor"] = [tie]
    _with_meta(found, query.metadata)
    direction = -1 if query.descending else 1
    hint = MESSAGES_THREAD_ORDER if query.thread_ids is not None else MESSAGES_RESOURCE_ORDER
    return Plan(found, hint, [("created_at", direction), ("seq", direction)])


def message_count_plan(query: MessageQuery) -> Plan:
    """Filter and index for :meth:`_count_messages` (paging ignored). With
    metadata conditions on threads, the multikey metadata index bounds the
    scan to entries with that key and value."""
    found = _message_scope(query)
    created = _range(query.created_from_us, query.created_to_us)
    if created is not None:
        found["created_at"] = created
    _with_meta(found, query.metadata)
    if query.thread_ids is None:
        hint = MESSAGES_RESOURCE_ORDER
    elif query.metadata and created is None:
        hint = MESSAGES_THREAD_META
    else:
        hint = MESSAGES_THREAD_ORDER
    return Plan(found, hint)


# ---------------------------------------------------------------- threads


def _thread_sort_field(query: ThreadQuery) -> str:
    """The document field ``query`` orders by (``last_message_at``: the
    direction's sort key, see :data:`~memory_core_mongodb._layout.LAST_ASC`)."""
    if query.order_field == "last_message_at":
        return LAST_DESC if query.descending else LAST_ASC
    return query.order_field


_THREAD_INDEXES = {
    # (by resource, field) -> index
    (True, "created_at"): THREADS_RESOURCE_CREATED,
    (True, "updated_at"): THREADS_RESOURCE_UPDATED,
    (True, LAST_ASC): THREADS_RESOURCE_LAST_ASC,
    (True, LAST_DESC): THREADS_RESOURCE_LAST_DESC,
    (False, "created_at"): THREADS_CREATED,
    (False, "updated_at"): THREADS_UPDATED,
    (False, LAST_ASC): THREADS_LAST_ASC,
    (False, LAST_DESC): THREADS_LAST_DESC,
}


def _thread_order_index(query: ThreadQuery) -> str:
    return _THREAD_INDEXES[(query.resource_id is not None, _thread_sort_field(query))]


def _thread_scope(query: ThreadQuery) -> dict[str, Any]:
    return {} if query.resource_id is None else {"resource_id": query.resource_id}


def thread_list_plan(query: ThreadQuery) -> Plan:
    """Filter, (order field, id) sort and index for :meth:`_list_threads`."""
    found = _thread_scope(query)
    name = _thread_sort_field(query)
    if query.after is not None:
        at, thread_id = query.after
        if query.descending:
            found[name] = {"$lte": us(at)}
            found["$nor"] = [{name: us(at), "_id": {"$gte": thread_id}}]
        else:
            found[name] = {"$gte": us(at)}
            found["$nor"] = [{name: us(at), "_id": {"$lte": thread_id}}]
    _with_meta(found, query.metadata)
    direction = -1 if query.descending else 1
    return Plan(found, _thread_order_index(query), [(name, direction), ("_id", direction)])


def thread_count_plan(query: ThreadQuery) -> Plan:
    """Filter and index for :meth:`_count_threads`."""
    found = _with_meta(_thread_scope(query), query.metadata)
    if query.resource_id is not None and query.metadata:
        return Plan(found, THREADS_RESOURCE_META)
    return Plan(found, _thread_order_index(query))
