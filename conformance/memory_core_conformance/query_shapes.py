"""The query shapes an adapter's indexes must serve, for its plan tests.

Each value is the primitive-level query (:class:`~memory_core.query.MessageQuery`
or :class:`~memory_core.query.ThreadQuery`) that some public listing, count or
cursor page sends to the adapter; an adapter's EXPLAIN test (see the SQLite
and PostgreSQL adapters' ``test_*_plans.py``) renders each with its own SQL
and checks that no full scan or sort serves it.
"""

from __future__ import annotations

from memory_core.query import MessageQuery, MetaCondition, ThreadQuery

__all__ = ["MESSAGE_QUERIES", "META", "THREAD_QUERIES"]

META = (MetaCondition("tag", "str", "x"), MetaCondition("n", "number", 5))
"""Two metadata conditions (a string and a number), as a filter sends them."""

MESSAGE_QUERIES: dict[str, MessageQuery] = {
    "thread": MessageQuery(("t1",)),
    "thread desc page": MessageQuery(("t1",), descending=True, offset=40, limit=20),
    "thread+resource": MessageQuery(("t1",), "r1", limit=10),
    "thread dates": MessageQuery(("t1",), created_from_us=10, created_to_us=99, limit=10),
    "thread meta": MessageQuery(("t1",), "r1", metadata=META, limit=10),
    "thread after asc": MessageQuery(("t1",), limit=10, after=(5, 7)),
    "thread after desc": MessageQuery(("t1",), descending=True, limit=10, after=(5, 7)),
    "resource": MessageQuery(None, "r1", limit=10),
    "resource desc after": MessageQuery(None, "r1", descending=True, limit=10, after=(5, 7)),
    "resource dates meta": MessageQuery(None, "r1", created_from_us=1, metadata=META, limit=10),
}
"""Message listings by name: a thread's or a resource's, by offset or cursor,
ascending or descending, with date bounds and metadata conditions."""

THREAD_QUERIES: dict[str, ThreadQuery] = {
    f"{scope} {field} {'desc' if descending else 'asc'}{' after' if after else ''}": ThreadQuery(
        resource,
        (),
        field,
        descending,
        0,
        10,
        (5, "t9") if after else None,  # type: ignore[arg-type]
    )
    for scope, resource in (("resource", "r1"), ("all", None))
    for field in ("created_at", "updated_at")
    for descending in (True, False)
    for after in (False, True)
}
"""Thread listings by name: one resource's or all, by ``created_at`` or
``updated_at``, both directions, first page and cursor page."""
