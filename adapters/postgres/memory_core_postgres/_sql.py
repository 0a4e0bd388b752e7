"""Normalised queries -> one SQL statement and its bound parameters.

Every filter, count, order, window and keyset position is answered by
PostgreSQL, each composite read in one statement (one round trip, one
snapshot). Only fixed column names and operators are formatted into SQL;
ids, values, times and the metadata filter are bound parameters, so
injection-shaped keys and values are data, never SQL text.

R-META: each row carries ``meta``, a ``jsonb`` projection of its metadata
made by :func:`meta_document`: only the top-level keys a filter can name
(``^[A-Za-z_][A-Za-z0-9_]{0,127}$``) whose values are scalars, with

- numbers written as their exact decimal value (a float's full binary
  expansion, ``Decimal(x)``), so ``jsonb``'s numeric equality is Python's
  exact int/float equality (5 matches 5.0; 2**53+1 never matches the float
  2**53);
- strings with NUL escaped reversibly (``\\x01`` -> ``\\x01\\x01``, NUL ->
  ``\\x01\\x02``; ``jsonb`` cannot hold ``\\u0000``);
- ``true``/``false``/``null`` as themselves (never a number; null only when
  the key is present).

A filter is the same projection of its conditions, matched with one
containment test ``meta @> $n`` (GIN-indexed), which is exactly "present,
same JSON type, equal" for each key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from memory_core import codec
from memory_core.clock import from_us
from memory_core.lineage import CopyPlan
from memory_core.plan import ReadPlan
from memory_core.query import NO_MESSAGE_ASC_US, NO_MESSAGE_DESC_US, MessageQuery, MetaCondition, ThreadQuery

__all__ = [
    "MESSAGE_COLUMNS",
    "RESOURCE_COLUMNS",
    "THREAD_COLUMNS",
    "LAST_MESSAGE_AT",
    "Params",
    "bump_sql",
    "copy_thread",
    "meta_document",
    "message_windows",
    "page_messages",
    "page_threads",
    "read_plan",
    "read_state",
    "resource_ids",
]

LAST_MESSAGE_AT = "(SELECT max(m.created_at) FROM messages m WHERE m.thread_id = threads.id)"
"""A thread's ``last_message_at`` (R-LAST), computed when read: exact after
every write, one backward probe of the ``messages_thread_order`` index."""
THREAD_COLUMNS = f"id, resource_id, title, metadata, created_at, updated_at, {LAST_MESSAGE_AT} AS last_message_at"
MESSAGE_COLUMNS = "id, thread_id, resource_id, role, type, content, metadata, created_at, seq"
RESOURCE_COLUMNS = "id, working_memory, metadata, created_at, updated_at"

_FILTER_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


class Params(list[Any]):
    """Bound parameters; :meth:`add` returns the placeholder of a new one."""

    def add(self, value: Any, cast: str = "") -> str:
        self.append(value)
        return f"${len(self)}{cast}"


def _scalar(value: Any) -> str | None:
    """The ``meta`` JSON text of one scalar, or None for a list/dict."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(Decimal(value), "f")  # exact: the float's binary value in decimal
    if isinstance(value, str):
        return codec.dumps(value.replace("\x01", "\x01\x01").replace("\x00", "\x01\x02"))
    return None


def meta_document(metadata: Mapping[str, Any]) -> str:
    """The ``meta`` projection of a metadata object, as JSON text (see the
    module docstring)."""
    members = []
    for key, value in metadata.items():
        if _FILTER_KEY.fullmatch(key):
            text = _scalar(value)
            if text is not None:
                members.append(f"{codec.dumps(key)}:{text}")
    return "{" + ",".join(members) + "}"


def _filter_document(conditions: tuple[MetaCondition, ...]) -> str:
    return meta_document({c.key: c.value for c in conditions})


def _where(clauses: list[str]) -> str:
    return f" WHERE {' AND '.join(clauses)}" if clauses else ""


def _thread_filter(query: ThreadQuery, params: Params) -> list[str]:
    clauses = []
    if query.resource_id is not None:
        clauses.append(f"resource_id = {params.add(query.resource_id)}")
    if query.metadata:
        clauses.append(f"meta @> {params.add(_filter_document(query.metadata), '::jsonb')}")
    return clauses


def resource_ids(after: str | None, limit: int | None) -> tuple[str, Params]:
    """The ids of resources with a record or a thread, ascending ("C": code
    point order), strictly after ``after`` (ids are never empty, so ``""``
    starts at the first), at most ``limit`` (None: all). Each side walks an
    index in order and stops at the limit (the resources key, an index
    led by ``threads.resource_id``); ``UNION`` merges them, each id once,
    sorting at most two limits' worth of ids."""
    params = Params()
    start, count = params.add("" if after is None else after), params.add(limit)
    sql = (
        f"(SELECT id FROM resources WHERE id > {start} ORDER BY id LIMIT {count})"
        f" UNION (SELECT DISTINCT resource_id FROM threads WHERE resource_id > {start}"
        f" ORDER BY resource_id LIMIT {count}) ORDER BY 1 LIMIT {count}"
    )
    return sql, params


def page_threads(query: ThreadQuery, params: Params | None = None) -> tuple[str, Params]:
    """(count under the filter, the window) in one statement. Rows: ``total``
    then the thread columns (all NULL when the window is empty); the window's
    order is restored by the caller. ``params``: a statement's parameters to
    add to (a part of a larger statement), or None for new ones."""
    params = Params() if params is None else params
    clauses = _thread_filter(query, params)
    count = f"SELECT count(*) AS total FROM threads{_where(clauses)}"
    if query.limit == 0:
        return f"SELECT total FROM ({count}) c", params
    window = list(clauses)
    if query.order_field == "last_message_at":
        # Ordered in µs with the core's "no message" sentinel (last either way),
        # which lies beyond what a Python datetime can bind.
        sentinel = NO_MESSAGE_DESC_US if query.descending else NO_MESSAGE_ASC_US
        column = f"COALESCE((extract(epoch FROM {LAST_MESSAGE_AT}) * 1000000)::bigint, {sentinel})"
    else:
        column = query.order_field
    if query.after is not None:
        first = query.after[0] if query.order_field == "last_message_at" else from_us(query.after[0])
        position = f"({params.add(first)}, {params.add(query.after[1])})"
        window.append(f"({column}, id) {'<' if query.descending else '>'} {position}")
    direction = "DESC" if query.descending else "ASC"
    paging = f" LIMIT {params.add(query.limit, '::bigint')} OFFSET {params.add(query.offset, '::bigint')}"
    sql = (
        f"SELECT c.total, w.* FROM ({count}) c LEFT JOIN LATERAL (SELECT {THREAD_COLUMNS} FROM threads"
        f"{_where(window)} ORDER BY {column} {direction}, id {direction}{paging}) w ON true"
    )
    return sql, params


_INT64_MAX = 2**63 - 1


def _message_filter(query: MessageQuery, params: Params) -> list[str]:
    """The date and metadata conditions (what makes a query filtered)."""
    clauses = []
    if query.created_from_us is not None:
        clauses.append(f"created_at >= {params.add(from_us(query.created_from_us))}")
    if query.created_to_us is not None:
        clauses.append(f"created_at <= {params.add(from_us(query.created_to_us))}")
    if query.metadata:
        clauses.append(f"meta @> {params.add(_filter_document(query.metadata), '::jsonb')}")
    return clauses


def _owned(query: MessageQuery, threads: str, params: Params) -> str:
    """The SQL array of the queried threads (placeholder ``threads``) that
    belong to ``query.resource_id`` (all of them without one)."""
    if query.resource_id is None:
        return threads
    return f"ARRAY(SELECT id FROM threads WHERE id = ANY({threads}) AND resource_id = {params.add(query.resource_id)})"


def _message_total(query: MessageQuery, params: Params) -> str:
    """The page's ``total`` as one row: 0 when not wanted, the counters the
    writes keep when unfiltered (R-PAGE: no row is counted), else a count of
    the matches."""
    if not query.count:
        return "SELECT 0::bigint AS total"
    if query.thread_ids is None:
        resource = params.add(query.resource_id)
        if query.unfiltered:
            counter = f"SELECT messages FROM resource_counters WHERE resource_id = {resource}"
            return f"SELECT COALESCE(({counter}), 0) AS total"
        scope = f"resource_id = {resource}"
    else:
        threads = params.add(list(dict.fromkeys(query.thread_ids)), "::text[]")
        if query.unfiltered:
            owner = "" if query.resource_id is None else f" AND resource_id = {params.add(query.resource_id)}"
            return (
                f"SELECT COALESCE(sum(message_count), 0)::bigint AS total FROM threads WHERE id = ANY({threads}){owner}"
            )
        scope = f"thread_id = ANY({_owned(query, threads, params)})"
    return f"SELECT count(*) AS total FROM messages{_where([scope, *_message_filter(query, params)])}"


_MIN_SEQ, _MAX_SEQ = "'-9223372036854775808'::bigint", "'9223372036854775807'::bigint"
_FIRST_KEY = f"'-infinity'::timestamptz, {_MIN_SEQ}"
"""(created_at, seq) before every message's; ``_LAST_KEY`` after."""
_LAST_KEY = f"'infinity'::timestamptz, {_MAX_SEQ}"


def _key_range(column: str, value: str, query: MessageQuery, params: Params, alias: str = "") -> tuple[list[str], str]:
    """The rows of one thread (``column`` thread_id) or resource
    (resource_id) whose key is ``value``, as bounds on the order index's key
    ``(column, created_at, seq)``, date bounds and keyset position included,
    and the ORDER BY that walks that index in the query's direction.

    A range of the key, not ``column = value``: with no statistics (a fresh
    bulk load) the planner guesses an equality matches 0.5% of the table
    (two rows of a 1,000-row table), and for so few rows prefers a bitmap
    scan of the whole thread and a sort. A range is guessed at a ninth of
    the table with no statistics and, with them, at no less than the key's
    share of it, so the index walk that stops at the limit wins."""
    key = f"({alias}{column}, {alias}created_at, {alias}seq)"
    low, high = _FIRST_KEY, _LAST_KEY
    if query.created_from_us is not None:  # R-DATE bounds are inclusive: every seq at that instant
        low = f"{params.add(from_us(query.created_from_us))}, {_MIN_SEQ}"
    if query.created_to_us is not None:
        high = f"{params.add(from_us(query.created_to_us))}, {_MAX_SEQ}"
    clauses = [f"{key} >= ({value}, {low})", f"{key} <= ({value}, {high})"]
    if query.after is not None:
        position = f"{params.add(from_us(query.after[0]))}, {params.add(query.after[1], '::bigint')}"
        clauses.append(f"{key} {'<' if query.descending else '>'} ({value}, {position})")
    if query.metadata:
        clauses.append(f"{alias}meta @> {params.add(_filter_document(query.metadata), '::jsonb')}")
    direction = " DESC" if query.descending else ""
    order = f"{alias}{column}{direction}, {alias}created_at{direction}, {alias}seq{direction}"
    return clauses, order


def page_messages(query: MessageQuery, params: Params | None = None) -> tuple[str, Params]:
    """(the total, the window) in one statement, as :func:`page_threads`
    (message columns). The window walks an order index in key order and
    stops at its limit: ``(thread_id, created_at, seq)`` for a thread,
    ``(resource_id, created_at, seq)`` for a resource (see
    :func:`_key_range`). Ownership is checked once on the thread row (a
    message's resource is always its thread's), not on every message row,
    which would invite the planner to combine both indexes and sort the
    thread. Several threads: each one's first ``offset + limit`` rows,
    merged.

    The limit and offset reach the window as columns of the total's row, so
    the planner does not see their values: for a known ``OFFSET 5000`` beyond
    its guess of the thread's size it would rather read the thread through a
    bitmap and sort it; for a limit it cannot see, it plans a fraction of the
    rows, which the ordered index walk serves (``test_postgres_plans``, with
    and without statistics)."""
    params = Params() if params is None else params
    count = _message_total(query, params)
    if query.limit == 0:
        return f"SELECT total FROM ({count}) c", params
    reach = None if query.limit is None else min(query.offset + query.limit, _INT64_MAX)
    bounds = (
        f"SELECT t.total, {params.add(query.limit, '::bigint')} AS lim, {params.add(query.offset, '::bigint')} AS off,"
        f" {params.add(reach, '::bigint')} AS reach FROM ({count}) t OFFSET 0"  # OFFSET 0: not folded into the window
    )
    thread_ids = None if query.thread_ids is None else list(dict.fromkeys(query.thread_ids))
    if thread_ids is not None and len(thread_ids) > 1:
        clauses, order = _key_range("thread_id", "q.tid", query, params)
        each = f"SELECT {MESSAGE_COLUMNS} FROM messages{_where(clauses)} ORDER BY {order} LIMIT c.reach"
        owned = _owned(query, params.add(thread_ids, "::text[]"), params)
        merged = "created_at DESC, seq DESC" if query.descending else "created_at, seq"
        window = (
            f"SELECT x.* FROM unnest({owned}) AS q(tid) CROSS JOIN LATERAL ({each}) x"
            f" ORDER BY {merged} LIMIT c.lim OFFSET c.off"
        )
    else:
        if thread_ids is None:
            clauses, order = _key_range("resource_id", params.add(query.resource_id), query, params)
        else:
            tid = params.add(thread_ids[0])
            clauses, order = _key_range("thread_id", tid, query, params)
            if query.resource_id is not None:  # uncorrelated: one check of the thread row, before any message
                owner = params.add(query.resource_id)
                clauses.append(f"EXISTS (SELECT 1 FROM threads WHERE id = {tid} AND resource_id = {owner})")
        window = f"SELECT {MESSAGE_COLUMNS} FROM messages{_where(clauses)} ORDER BY {order} LIMIT c.lim OFFSET c.off"
    return f"SELECT c.total, w.* FROM ({bounds}) c LEFT JOIN LATERAL ({window}) w ON true", params


def message_windows(
    ids: list[str], before: list[int], after: list[int], params: Params | None = None
) -> tuple[str, Params]:
    """R-INCLUDE for many targets in one statement: for target number ``ord``
    (1-based), its message and up to ``before``/``after`` neighbours in its
    thread, each side one walk of the ``(thread_id, created_at, seq)`` index
    from the target's key, bounded by the thread's first or last key (a
    range, as in :func:`_key_range`), with a limit (int64: a window may ask
    for up to 2^63 - 1). Rows: ``ord`` then the message columns, unordered.
    ``params`` as :func:`page_threads`."""
    params = Params() if params is None else params
    columns = ", ".join(f"x.{c.strip()}" for c in MESSAGE_COLUMNS.split(","))
    key, target = "(x.thread_id, x.created_at, x.seq)", "(a.thread_id, a.created_at, a.seq)"
    sql = (
        f"SELECT t.ord, w.* FROM unnest({params.add(ids, '::text[]')}, {params.add(before, '::bigint[]')},"
        f" {params.add(after, '::bigint[]')}) WITH ORDINALITY AS t(id, before, after, ord)"
        " JOIN messages a ON a.id = t.id"
        " CROSS JOIN LATERAL ("
        f"(SELECT {columns} FROM messages x WHERE {key} < {target} AND {key} >= (a.thread_id, {_FIRST_KEY})"
        " ORDER BY x.thread_id DESC, x.created_at DESC, x.seq DESC LIMIT t.before)"
        f" UNION ALL SELECT {columns} FROM messages x WHERE x.id = a.id"
        f" UNION ALL (SELECT {columns} FROM messages x WHERE {key} > {target} AND {key} <= (a.thread_id, {_LAST_KEY})"
        " ORDER BY x.thread_id, x.created_at, x.seq LIMIT t.after)"
        ") w"
    )
    return sql, params


# A read plan's rows (read_plan): kind, ord, total, then the message, thread
# and resource columns at fixed offsets, NULL where the row is not of that kind.
THREAD, RESOURCE, MESSAGE_PAGE, THREAD_PAGE, WINDOW = range(5)
PLAN_MESSAGE_AT, PLAN_THREAD_AT, PLAN_RESOURCE_AT = 3, 12, 19


def _nulls(*types: str) -> str:
    return ", ".join(f"NULL::{t}" for t in types)


_NO_MESSAGE = _nulls("text", "text", "text", "text", "json", "json", "json", "timestamptz", "bigint")
_NO_THREAD = _nulls("text", "text", "json", "json", "timestamptz", "timestamptz", "timestamptz")
_NO_RESOURCE = _nulls("text", "json", "json", "timestamptz", "timestamptz")
_THREAD_NAMES = "id, resource_id, title, metadata, created_at, updated_at, last_message_at"


def _named(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


def read_plan(plan: ReadPlan) -> tuple[str, Params]:
    """Every part of a read plan in one statement (one round trip, one
    snapshot). Rows: ``kind`` (THREAD, RESOURCE, MESSAGE_PAGE, THREAD_PAGE,
    WINDOW), ``ord`` (a window's 1-based number), ``total`` (the page kinds:
    the count, on every row of the page, with NULL columns when the page is
    empty), then message columns at PLAN_MESSAGE_AT, thread columns at
    PLAN_THREAD_AT and resource columns at PLAN_RESOURCE_AT. Pages and
    windows come back unordered."""
    params = Params()
    arms: list[str] = []
    if plan.threads:
        ids = params.add(list(plan.threads), "::text[]")
        arms.append(
            f"SELECT {THREAD}, NULL::bigint, NULL::bigint, {_NO_MESSAGE}, {THREAD_COLUMNS}, {_NO_RESOURCE}"
            f" FROM threads WHERE id = ANY({ids})"
        )
    if plan.resources or (plan.owner_resources and plan.threads):
        where = f"id = ANY({params.add(list(plan.resources), '::text[]')})"
        if plan.owner_resources:
            owned = params.add(list(plan.threads), "::text[]")
            where += f" OR id IN (SELECT resource_id FROM threads WHERE id = ANY({owned}))"
        arms.append(
            f"SELECT {RESOURCE}, NULL::bigint, NULL::bigint, {_NO_MESSAGE}, {_NO_THREAD}, {RESOURCE_COLUMNS}"
            f" FROM resources WHERE {where}"
        )
    if plan.messages is not None:
        page, _ = page_messages(plan.messages, params)
        columns = _NO_MESSAGE if plan.messages.limit == 0 else _named("p", MESSAGE_COLUMNS)
        arms.append(
            f"SELECT {MESSAGE_PAGE}, NULL::bigint, p.total, {columns}, {_NO_THREAD}, {_NO_RESOURCE} FROM ({page}) p"
        )
    if plan.thread_page is not None:
        page, _ = page_threads(plan.thread_page, params)
        columns = _NO_THREAD if plan.thread_page.limit == 0 else _named("p", _THREAD_NAMES)
        arms.append(
            f"SELECT {THREAD_PAGE}, NULL::bigint, p.total, {_NO_MESSAGE}, {columns}, {_NO_RESOURCE} FROM ({page}) p"
        )
    if plan.windows:
        anchors, before, after = (list(part) for part in zip(*plan.windows, strict=True))
        windows, _ = message_windows(anchors, before, after, params)
        arms.append(
            f"SELECT {WINDOW}, w.ord, NULL::bigint, {_named('w', MESSAGE_COLUMNS)}, {_NO_THREAD}, {_NO_RESOURCE}"
            f" FROM ({windows}) w"
        )
    return " UNION ALL ".join(f"({arm})" for arm in arms), params


def read_state(thread_ids: list[str], message_ids: list[str]) -> tuple[str, Params]:
    """Threads and messages among these ids in one statement (one snapshot).
    Rows as a read plan's: ``kind`` (THREAD or WINDOW: a message), a message
    row's ``xmin`` (its version, for a compare-and-set write:
    ``patch_messages``), NULL, then message columns at PLAN_MESSAGE_AT and
    thread columns at PLAN_THREAD_AT."""
    params = Params()
    sql = (
        f"SELECT {THREAD}, NULL::xid, NULL::bigint, {_NO_MESSAGE}, {THREAD_COLUMNS}"
        f" FROM threads WHERE id = ANY({params.add(thread_ids, '::text[]')})"
        f" UNION ALL SELECT {WINDOW}, xmin, NULL::bigint, {MESSAGE_COLUMNS}, {_NO_THREAD}"
        f" FROM messages WHERE id = ANY({params.add(message_ids, '::text[]')})"
    )
    return sql, params


def bump_sql(placeholder_now: str, placeholder_max: str) -> str:
    """The R-BUMP expression for ``updated_at`` (clock.bump_us in SQL)."""
    return f"LEAST(GREATEST({placeholder_now}, updated_at + interval '1 microsecond'), {placeholder_max})"


_COPY_THREAD = """
WITH picked AS (
    SELECT id, row_number() OVER (ORDER BY created_at, seq) AS k FROM (
        SELECT id, created_at, seq FROM messages
        WHERE thread_id = $1
            AND ($2::timestamptz IS NULL OR created_at >= $2) AND ($3::timestamptz IS NULL OR created_at <= $3)
            AND ($4::timestamptz IS NULL OR (created_at, seq) <= ($4, $5::bigint))
            AND ($6::text[] IS NULL OR id = ANY($6::text[]))
        ORDER BY created_at DESC, seq DESC LIMIT $7::bigint
    ) newest
), chosen AS (
    SELECT p.id AS source, p.k, n.id AS new_id
    FROM picked p JOIN unnest($8::text[]) WITH ORDINALITY AS n(id, k) ON n.k = p.k
), over AS (
    SELECT m.id FROM chosen c JOIN messages m ON m.id = c.source
    WHERE octet_length(to_json(m.role)::text) + octet_length(m.type::text) + octet_length(m.content::text)
        + octet_length(m.metadata::text) > $9
    LIMIT 1
), thread AS (
    INSERT INTO threads (id, resource_id, title, metadata, meta, created_at, updated_at, message_count)
    SELECT $10::text, $11::text, $12::json, $13::json, $14::jsonb, $15::timestamptz,
        CASE WHEN EXISTS (SELECT 1 FROM chosen)
            THEN LEAST(GREATEST($17::timestamptz, $16::timestamptz + interval '1 microsecond'), $18::timestamptz)
            ELSE $16::timestamptz END,
        (SELECT count(*) FROM chosen)
    WHERE NOT EXISTS (SELECT 1 FROM over)
    ON CONFLICT (id) DO NOTHING RETURNING id
), copied AS (
    INSERT INTO messages (id, seq, thread_id, resource_id, role, type, content, metadata, meta, created_at, search)
    SELECT new_id, nextval('message_sequence'), $10, $11, role, type, content, metadata, meta, created_at, search
    FROM (
        SELECT c.k, c.new_id, m.role, m.type, m.content, m.metadata, m.meta, m.created_at, m.search
        FROM chosen c JOIN messages m ON m.id = c.source WHERE EXISTS (SELECT 1 FROM thread)
    ) rows ORDER BY k
    RETURNING 1
), counted AS (
    INSERT INTO resource_counters AS r (resource_id, messages)
    SELECT $11, count(*) FROM chosen HAVING count(*) > 0 AND EXISTS (SELECT 1 FROM thread)
    ON CONFLICT (resource_id) DO UPDATE SET messages = r.messages + excluded.messages
)
SELECT EXISTS (SELECT 1 FROM thread), (SELECT id FROM over),
    COALESCE((SELECT array_agg(source ORDER BY k) FROM chosen), '{}'), (SELECT count(*) FROM copied)
"""


def copy_thread(plan: CopyPlan, thread_args: tuple[Any, ...], now: datetime, max_at: datetime) -> tuple[str, list[Any]]:
    """One statement that inserts ``plan.thread`` and copies the plan's
    selection into it (INSERT ... SELECT: no body leaves the server), keeping
    the thread's and resource's counters and bumping the new thread when it
    gets messages. ``thread_args`` are the thread's seven column values
    (id, resource_id, title, metadata, meta, created_at, updated_at).

    The statement writes nothing when the id exists or a copy is over
    ``plan.size_limit``; it returns one row: (thread inserted, the id of an
    oversized source message or NULL, the selected source ids in R-ORDER,
    messages copied)."""

    def at(us: int | None) -> datetime | None:
        return None if us is None else from_us(us)

    until = plan.until
    params = [
        plan.source_id,
        at(plan.created_from_us),
        at(plan.created_to_us),
        None if until is None else from_us(until[0]),
        None if until is None else until[1],
        None if plan.message_ids is None else list(plan.message_ids),
        plan.newest,
        list(plan.new_ids),
        plan.size_limit,
        *thread_args,
        now,
        max_at,
    ]
    return _COPY_THREAD, params
