"""Normalised queries -> SQL text and bound parameters.

Every filter, count, order, window and keyset position is answered by
SQLite. Only fixed column names and operators are ever formatted into SQL;
ids, values and JSON paths are bound parameters.

R-META on the JSON ``metadata`` column, per condition kind (the path
``$."key"`` is bound; keys are validated identifiers):

- ``str``: ``metadata -> path = <the value encoded by memory_core.codec>``.
  ``->`` returns the stored JSON text of the value verbatim, so this
  compares strings exactly (embedded NUL included, which ``json_extract``
  would truncate) and only ever matches a JSON string.
- ``number``: ``json_type`` is ``integer`` or ``real`` and ``json_extract``
  equals the bound int/float (SQLite compares int and real exactly and
  numerically, so 5 matches 5.0).
- ``bool``: ``json_type`` is ``true`` / ``false`` (never a number).
- ``null``: ``json_type`` is ``null`` (a missing key gives SQL NULL).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_core import codec
from memory_core.plan import ReadPlan
from memory_core.query import NO_MESSAGE_ASC_US, NO_MESSAGE_DESC_US, MessageQuery, MetaCondition, ThreadQuery

__all__ = [
    "MESSAGE_COLUMNS",
    "THREAD_COLUMNS",
    "count_messages",
    "count_threads",
    "id_list",
    "list_messages",
    "list_threads",
    "meta_clause",
    "message_window",
    "read_plan",
    "resource_ids",
    "write_state",
]

LAST_MESSAGE_AT = "(SELECT MAX(created_at) FROM messages WHERE messages.thread_id = threads.id)"
"""A thread's ``last_message_at``, computed when read (exact after every
write; one probe of the ``messages_thread_order`` index per thread)."""
THREAD_COLUMNS = f"id, resource_id, title, metadata, created_at, updated_at, {LAST_MESSAGE_AT}"
MESSAGE_COLUMNS = "id, thread_id, resource_id, role, type, content, metadata, created_at, seq"
RESOURCE_COLUMNS = "id, working_memory, metadata, created_at, updated_at"
BY_IDS = "IN (SELECT value FROM json_each(?))"

_THREAD_ORDER = {"created_at": "created_at", "updated_at": "updated_at"}
# last_message_at orders with the core's sentinel for "no message" (last in
# either direction); the sentinels are the core's int constants, not input.
_LAST_ORDER = {
    False: f"COALESCE({LAST_MESSAGE_AT}, {NO_MESSAGE_ASC_US})",
    True: f"COALESCE({LAST_MESSAGE_AT}, {NO_MESSAGE_DESC_US})",
}

Params = list[Any]


def id_list(ids: Any) -> str:
    """Bind a list of ids as one JSON array (read with ``json_each``)."""
    return codec.dumps(list(ids))


def meta_clause(condition: MetaCondition) -> tuple[str, Params]:
    """SQL for one R-META condition on the ``metadata`` column."""
    path = f'$."{condition.key}"'
    if condition.kind == "str":
        return "metadata -> ? = ?", [path, codec.dumps(condition.value)]
    if condition.kind == "number":
        return "(json_type(metadata, ?) IN ('integer', 'real') AND json_extract(metadata, ?) = ?)", [
            path,
            path,
            condition.value,
        ]
    if condition.kind == "bool":
        return "json_type(metadata, ?) = ?", [path, "true" if condition.value else "false"]
    return "json_type(metadata, ?) = 'null'", [path]


def _where(clauses: list[str]) -> str:
    return f" WHERE {' AND '.join(clauses)}" if clauses else ""


def _paging(offset: int, limit: int | None) -> tuple[str, Params]:
    return " LIMIT ? OFFSET ?", [-1 if limit is None else limit, offset]


def _thread_filter(query: ThreadQuery) -> tuple[list[str], Params]:
    clauses: list[str] = []
    params: Params = []
    if query.resource_id is not None:
        clauses.append("resource_id = ?")
        params.append(query.resource_id)
    for condition in query.metadata:
        clause, values = meta_clause(condition)
        clauses.append(clause)
        params.extend(values)
    return clauses, params


def resource_ids(after: str | None, limit: int | None) -> tuple[str, Params]:
    """The ids of resources with a record or a thread, ascending, strictly
    after ``after`` (ids are never empty, so ``""`` starts at the first),
    at most ``limit``; ``UNION`` makes each id appear once."""
    start = "" if after is None else after
    return (
        "SELECT id FROM resources WHERE id > ? UNION SELECT resource_id FROM threads WHERE resource_id > ?"
        " ORDER BY 1 LIMIT ?",
        [start, start, -1 if limit is None else limit],
    )


def count_threads(query: ThreadQuery) -> tuple[str, Params]:
    """``SELECT COUNT(*)`` of the threads matching ``query``'s filter."""
    clauses, params = _thread_filter(query)
    return f"SELECT COUNT(*) FROM threads{_where(clauses)}", params


def list_threads(query: ThreadQuery) -> tuple[str, Params]:
    """The window of threads: filter, (field, id) keyset, order, offset, limit."""
    clauses, params = _thread_filter(query)
    if query.order_field == "last_message_at":
        column = _LAST_ORDER[query.descending]
    else:
        column = _THREAD_ORDER[query.order_field]
    if query.after is not None:
        clauses.append(f"({column}, id) {'<' if query.descending else '>'} (?, ?)")
        params.extend(query.after)
    direction = "DESC" if query.descending else "ASC"
    paging, values = _paging(query.offset, query.limit)
    sql = f"SELECT {THREAD_COLUMNS} FROM threads{_where(clauses)} ORDER BY {column} {direction}, id {direction}{paging}"
    return sql, params + values


def _message_filter(query: MessageQuery) -> tuple[list[str], Params]:
    clauses: list[str] = []
    params: Params = []
    if query.thread_ids is not None:
        threads, params = _by_id(query.thread_ids)
        if query.resource_id is None:
            clauses.append(f"thread_id {threads}")
        else:
            # A stored message's resource is its thread's: ownership is one
            # probe of the thread row, not a test of every message row (which
            # would walk a whole thread of another resource to return nothing).
            operator = "=" if len(query.thread_ids) == 1 else "IN"
            clauses.append(f"thread_id {operator} (SELECT id FROM threads WHERE id {threads} AND resource_id = ?)")
            params.append(query.resource_id)
    elif query.resource_id is not None:
        clauses.append("resource_id = ?")
        params.append(query.resource_id)
    if query.created_from_us is not None:
        clauses.append("created_at >= ?")
        params.append(query.created_from_us)
    if query.created_to_us is not None:
        clauses.append("created_at <= ?")
        params.append(query.created_to_us)
    for condition in query.metadata:
        clause, values = meta_clause(condition)
        clauses.append(clause)
        params.extend(values)
    return clauses, params


def count_messages(query: MessageQuery) -> tuple[str, Params]:
    """How many messages match ``query``'s filter: an unfiltered query of
    threads or of a resource reads the counters the writes keep (R-PAGE: no
    row is counted); a date or metadata filter counts the matching rows."""
    if query.unfiltered and query.thread_ids is not None:
        threads, params = _by_id(query.thread_ids)
        sql = f"SELECT COALESCE(SUM(message_count), 0) FROM threads WHERE id {threads}"
        if query.resource_id is None:
            return sql, params
        return sql + " AND resource_id = ?", [*params, query.resource_id]  # another resource's thread adds 0
    if query.unfiltered and query.resource_id is not None:
        counter = "SELECT message_count FROM resource_message_counts WHERE resource_id = ?"
        return f"SELECT COALESCE(({counter}), 0)", [query.resource_id]
    clauses, params = _message_filter(query)
    return f"SELECT COUNT(*) FROM messages{_where(clauses)}", params


def list_messages(query: MessageQuery, tag: int | None = None) -> tuple[str, Params]:
    """The window of messages: filter, (created_at, seq) keyset, order,
    offset, limit; with ``tag``, that number as a last column (a read plan's
    row tag)."""
    clauses, params = _message_filter(query)
    if query.after is not None:
        clauses.append(f"(created_at, seq) {'<' if query.descending else '>'} (?, ?)")
        params.extend(query.after)
    direction = "DESC" if query.descending else "ASC"
    paging, values = _paging(query.offset, query.limit)
    columns = MESSAGE_COLUMNS if tag is None else f"{MESSAGE_COLUMNS}, {tag}"
    sql = f"SELECT {columns} FROM messages{_where(clauses)} ORDER BY created_at {direction}, seq {direction}{paging}"
    return sql, params + values


def message_window(message_id: str, before: int, after: int) -> tuple[str, Params]:
    """One statement (one snapshot) for R-INCLUDE: up to ``before`` messages
    preceding ``message_id`` in its thread, the message, and up to ``after``
    following it. Rows come back unordered; sort by (created_at, seq)."""
    thread = "thread_id = (SELECT thread_id FROM messages WHERE id = ?)"
    position = "(SELECT created_at, seq FROM messages WHERE id = ?)"
    sql = (
        f"SELECT * FROM (SELECT {MESSAGE_COLUMNS} FROM messages WHERE {thread} AND (created_at, seq) < {position}"
        " ORDER BY created_at DESC, seq DESC LIMIT ?)"
        f" UNION ALL SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?"
        f" UNION ALL SELECT * FROM (SELECT {MESSAGE_COLUMNS} FROM messages"
        f" WHERE {thread} AND (created_at, seq) > {position}"
        " ORDER BY created_at ASC, seq ASC LIMIT ?)"
    )
    return sql, [message_id, message_id, before, message_id, message_id, message_id, after]


# Row tags of a read plan's statement (see read_plan); windows are WINDOW + i.
THREAD, RESOURCE, MESSAGE_TOTAL, MESSAGE, THREAD_TOTAL, THREAD_ITEM, WINDOW = range(7)
TAG_AT = 9
"""The tag's column in a plan's (and a write state's) rows: the last, after
the 9 columns the row decoders read in place."""
MAX_ARMS = 400
"""Arms per compound statement: below SQLite's default limit of 500
(SQLITE_MAX_COMPOUND_SELECT); a plan with more include windows takes
several statements in one snapshot."""


def read_plan(plan: ReadPlan) -> list[tuple[str, Params]]:
    """A read plan as compound ``SELECT`` statements (usually one): a single
    statement is one snapshot by itself, so the common read is one statement
    in one aiosqlite job.

    Each row is 9 columns and a tag (column 9, last, so the row decoders read
    the columns in place): THREAD (thread columns), RESOURCE (resource
    columns), MESSAGE_TOTAL and THREAD_TOTAL (the count in column 0), MESSAGE
    and THREAD_ITEM (page rows, in the page's order), WINDOW + i (include
    window i, unordered).
    """
    arms: list[tuple[str, Params]] = []
    if plan.threads:
        where, params = _by_id(plan.threads)
        arms.append((f"SELECT {THREAD_COLUMNS}, NULL, NULL, {THREAD} FROM threads WHERE id {where}", params))
    if plan.resources or (plan.owner_resources and plan.threads):
        where, params = _by_id(plan.resources)
        if plan.owner_resources:
            owners, values = _by_id(plan.threads)
            where += f" OR id IN (SELECT resource_id FROM threads WHERE id {owners})"
            params += values
        arms.append((f"SELECT {RESOURCE_COLUMNS}, NULL, NULL, NULL, NULL, {RESOURCE} FROM resources WHERE id {where}",
                     params))  # fmt: skip
    if plan.messages is not None:
        if plan.messages.count:  # without it the core reads a row past the page instead
            count, params = count_messages(plan.messages)  # the filter only: paging ignored
            arms.append((f"SELECT ({count}){', NULL' * 8}, {MESSAGE_TOTAL}", params))
        if plan.messages.limit != 0:
            page, params = list_messages(plan.messages, MESSAGE)
            # A page alone is its own statement: wrapping it for a compound costs SQLite a co-routine.
            alone = not arms and plan.thread_page is None and not plan.windows
            arms.append((page if alone else f"SELECT * FROM ({page})", params))
    if plan.thread_page is not None:
        count, params = count_threads(plan.thread_page)  # the filter only: paging ignored
        arms.append((f"SELECT ({count}){', NULL' * 8}, {THREAD_TOTAL}", params))
        if plan.thread_page.limit != 0:
            page, params = list_threads(plan.thread_page)
            arms.append((f"SELECT *, NULL, NULL, {THREAD_ITEM} FROM ({page})", params))
    for i, target in enumerate(plan.windows):
        window, params = message_window(*target)
        arms.append((f"SELECT *, {WINDOW + i} FROM ({window})", params))
    statements = []
    for start in range(0, len(arms), MAX_ARMS):
        chunk = arms[start : start + MAX_ARMS]
        statements.append((" UNION ALL ".join(sql for sql, _ in chunk), [p for _, ps in chunk for p in ps]))
    return statements


def write_state(thread_ids: Sequence[str], message_ids: Sequence[str]) -> tuple[str, Params]:
    """One compound ``SELECT`` (one snapshot) of the threads and the stored
    messages among these ids, for a write's checks: thread rows tagged
    THREAD (thread columns), message rows tagged MESSAGE (message columns),
    the tag in column 9 as in :func:`read_plan`."""
    threads, params = _by_id(thread_ids)
    messages, values = _by_id(message_ids)
    sql = (
        f"SELECT {THREAD_COLUMNS}, NULL, NULL, {THREAD} FROM threads WHERE id {threads}"
        f" UNION ALL SELECT {MESSAGE_COLUMNS}, {MESSAGE} FROM messages WHERE id {messages}"
    )
    return sql, params + values


def _by_id(ids: Sequence[str]) -> tuple[str, Params]:
    """``= ?`` for one id (a plain index probe), the JSON-array list otherwise."""
    if len(ids) == 1:
        return "= ?", [ids[0]]
    return BY_IDS, [id_list(ids)]
