"""Checks of read requests: pages (R-PAGE), orders (R-SORT), metadata and
date filters (R-META, R-DATE), includes (R-INCLUDE), a message page
request, and one semantic recall's arguments (R-RECALL, R-BUDGET), each
checked once into the typed query objects of :mod:`memory_core.query`.
:mod:`memory_core.validation` re-exports them.

Each function raises :class:`~memory_core.errors.ValidationError` naming the
field and the rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal, cast

from memory_core.clock import to_us
from memory_core.errors import ValidationError
from memory_core.models import DateRange, Include, MessageFilter, MessagePageRequest, OrderBy, PerPage, ThreadFilter
from memory_core.query import MessagePage, MetaCondition, MetaKind, ThreadOrderField
from memory_core.value_checks import (
    INT64_MAX,
    INT64_MIN,
    check_bool,
    check_datetime,
    check_id,
    check_id_list,
    check_list,
    check_non_negative_int,
    check_text,
    check_unicode,
    coerce_model,
    replace_fields,
)

__all__ = [
    "MAX_PER_PAGE",
    "MAX_SEARCH_CHARS",
    "MAX_TOP_K",
    "MESSAGE_ORDER_DEFAULT",
    "MinScore",
    "check_date_range",
    "check_includes",
    "check_message_filter",
    "check_message_page",
    "check_meta_filter",
    "check_min_score",
    "check_order",
    "check_page",
    "check_page_request",
    "check_per_page",
    "check_recall",
    "check_search_text",
    "check_thread_filter",
    "check_thread_ids",
    "check_thread_order",
]

MAX_PER_PAGE = 2**31 - 1
"""R-PAGE: the largest int ``per_page`` (2,147,483,647). Larger page sizes are
an error (use ``per_page=False`` for "all"): every backend can then add to it
without leaving 64-bit (or a driver's 32-bit) integers."""
MAX_SEARCH_CHARS = 1 << 20
"""R-RECALL: the longest ``vector_search_string`` (1,048,576 characters, the
order of a large message's text). Embedding it is CPU work of about 0.3 s with
the lexical embedder, done off the event loop."""
MAX_TOP_K = 1000
"""R-RECALL: the most vector hits one semantic recall may ask for; each hit
becomes an include window, that is one more query."""
META_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
META_KEY_MAX = 128
META_KEY_FORBIDDEN = frozenset({"__proto__", "constructor", "prototype"})


MinScore = float | None | Literal["auto"]
"""A relevance floor: a cosine similarity from -1 to 1, None for no floor, or
``"auto"``: the floor declared for the embedder in use
(:func:`~memory_core.embedders.relevance_floor`)."""


def check_min_score(value: Any, field: str, rule: str = "R-RECALL") -> MinScore:
    """A relevance floor: None (no floor), ``"auto"`` (the floor the
    embedder in use declares, :func:`~memory_core.embedders.relevance_floor`;
    none for an embedder that declares none) or a finite real number from -1
    to 1, a cosine similarity (bool refused). A number is returned as a plain
    float.

    Raises:
        ValidationError: ``field``, rule ``rule``: anything else, naming the
            three forms.
    """
    if value is None or value == "auto":
        return None if value is None else "auto"
    wanted = f'must be a number from -1 to 1 (cosine similarity), "auto" or None, got {value!r}'
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValidationError(field, wanted, rule)
    score = float(value)
    if not math.isfinite(score) or not -1.0 <= score <= 1.0:
        raise ValidationError(field, wanted, rule)
    return score


def check_page(page: Any, per_page: Any) -> tuple[int, PerPage, int]:
    """R-PAGE: returns ``(page, per_page, offset)``.

    ``page``: int >= 0. ``per_page``: int from 0 to :data:`MAX_PER_PAGE`
    (2**31-1), or ``False`` (all; then page must be 0). bools (other than
    ``per_page=False``), floats, strings and negatives are errors;
    ``page * per_page`` must fit signed 64-bit.
    """
    if isinstance(page, bool) or not isinstance(page, int):
        raise ValidationError("page", f"must be an int >= 0, got {type(page).__name__}", "R-PAGE")
    page = int(page)  # an int subclass (IntEnum) becomes a plain int
    if page < 0:
        raise ValidationError("page", f"must be >= 0, got {page}", "R-PAGE")
    if per_page is False:
        if page != 0:
            raise ValidationError("page", "must be 0 when per_page is False (all)", "R-PAGE")
        return 0, False, 0
    per_page = check_per_page(per_page, "per_page")
    offset = page * per_page
    if offset > INT64_MAX:
        raise ValidationError("page", "page * per_page must fit in signed 64-bit", "R-PAGE")
    return page, per_page, offset


def check_per_page(value: Any, field: str) -> int:
    """R-PAGE: an int page size from 0 to :data:`MAX_PER_PAGE` (``False``, "all",
    is the caller's to handle). bools, floats, strings and negatives refused."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an int >= 0 or False, got {value!r}", "R-PAGE")
    number = int(value)  # an int subclass (IntEnum) becomes a plain int
    if number < 0:
        raise ValidationError(field, f"must be >= 0, got {number}", "R-PAGE")
    if number > MAX_PER_PAGE:
        raise ValidationError(
            field, f"must be at most {MAX_PER_PAGE} (2**31-1), got {number}; use False for all", "R-PAGE"
        )
    return number


def check_search_text(value: Any, field: str = "vector_search_string") -> str:
    """R-RECALL: the text a semantic recall embeds: a str of valid Unicode of at
    most :data:`MAX_SEARCH_CHARS` characters."""
    text = check_text(value, field)
    if len(text) > MAX_SEARCH_CHARS:
        raise ValidationError(field, f"is {len(text)} characters, over the limit of {MAX_SEARCH_CHARS}", "R-RECALL")
    return text


_ORDER_FIELDS = {
    "created_at": "created_at",
    "createdAt": "created_at",
    "updated_at": "updated_at",
    "updatedAt": "updated_at",
    "last_message_at": "last_message_at",
    "lastMessageAt": "last_message_at",
}


def check_order(order_by: Any, allowed: Iterable[str], default: OrderBy) -> tuple[str, bool]:
    """R-SORT: returns ``(field, descending)``. ``order_by`` is an OrderBy, a
    mapping ``{"field", "direction"}``, or None for ``default``. The field must
    be one of ``allowed`` (camelCase accepted); direction ASC/DESC in any
    case, or None (omitted) for ``default``'s direction, the listing kind's
    default (threads DESC, messages ASC)."""
    order = default if order_by is None else coerce_model(order_by, OrderBy, "order_by", "R-SORT")
    name = _ORDER_FIELDS.get(order.field) if isinstance(order.field, str) else None
    allowed_set = set(allowed)
    if name is None or name not in allowed_set:
        raise ValidationError("order_by.field", f"must be one of {sorted(allowed_set)}, got {order.field!r}", "R-SORT")
    if order.direction is None:
        return name, default.direction == "DESC"
    direction = order.direction.upper() if isinstance(order.direction, str) else None
    if direction not in ("ASC", "DESC"):
        raise ValidationError("order_by.direction", f"must be ASC or DESC, got {order.direction!r}", "R-SORT")
    return name, direction == "DESC"


def check_thread_order(order_by: Any) -> tuple[ThreadOrderField, bool]:
    """R-SORT for threads: created_at/updated_at/last_message_at, default
    created_at DESC (a field without a direction: DESC)."""
    name, descending = check_order(
        order_by, ("created_at", "updated_at", "last_message_at"), OrderBy("created_at", "DESC")
    )
    return cast(ThreadOrderField, name), descending


def check_meta_filter(value: Any, field: str) -> tuple[MetaCondition, ...]:
    """R-META: ``{key: scalar}`` -> typed conditions, ANDed. ``None``/``{}``: no
    filter. Keys ``^[A-Za-z_][A-Za-z0-9_]*$``, <= 128 characters, not
    ``__proto__``/``constructor``/``prototype``. Values str, int (int64),
    finite float, bool or None; dicts, lists and operator objects refused."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a dict of key -> scalar, got {type(value).__name__}", "R-META")
    conditions = []
    for key, item in value.items():
        if not isinstance(key, str) or not META_KEY.fullmatch(key) or len(key) > META_KEY_MAX:
            raise ValidationError(
                f"{field} key {key!r}", "must match ^[A-Za-z_][A-Za-z0-9_]*$ and be <= 128 characters", "R-META"
            )
        if key in META_KEY_FORBIDDEN:
            raise ValidationError(f"{field} key {key!r}", "is a reserved name", "R-META")
        kind: MetaKind
        if item is None:
            kind = "null"
        elif type(item) is bool:
            kind = "bool"
        elif type(item) is int:
            if not INT64_MIN <= item <= INT64_MAX:
                raise ValidationError(f"{field}[{key!r}]", "int outside signed 64-bit", "R-META")
            kind = "number"
        elif type(item) is float:
            if not math.isfinite(item):
                raise ValidationError(f"{field}[{key!r}]", "NaN and infinity are not allowed", "R-META")
            kind = "number"
        elif type(item) is str:
            check_unicode(item, f"{field}[{key!r}]", "R-META")
            kind = "str"
        else:
            raise ValidationError(
                f"{field}[{key!r}]", f"must be a str, int, float, bool or None, got {type(item).__name__}", "R-META"
            )
        conditions.append(MetaCondition(key, kind, item))
    return tuple(conditions)


def check_date_range(value: Any, field: str = "filter.date_range") -> tuple[int | None, int | None]:
    """R-DATE: -> inclusive ``(from_us, to_us)`` bounds (None = open).
    Exclusive bounds are moved 1 µs inwards."""
    if value is None:
        return None, None
    dr = coerce_model(value, DateRange, field)
    start_excl = check_bool(dr.start_exclusive, f"{field}.start_exclusive")
    end_excl = check_bool(dr.end_exclusive, f"{field}.end_exclusive")
    lo = None if dr.start is None else to_us(check_datetime(dr.start, f"{field}.start")) + int(start_excl)
    hi = None if dr.end is None else to_us(check_datetime(dr.end, f"{field}.end")) - int(end_excl)
    return lo, hi


def check_message_filter(value: Any) -> tuple[int | None, int | None, tuple[MetaCondition, ...]]:
    """A MessageFilter (or mapping) -> ``(from_us, to_us, conditions)``."""
    if value is None:
        return None, None, ()
    flt = coerce_model(value, MessageFilter, "filter")
    lo, hi = check_date_range(flt.date_range)
    return lo, hi, check_meta_filter(flt.metadata, "filter.metadata")


def check_thread_filter(value: Any) -> tuple[str | None, tuple[MetaCondition, ...]]:
    """A ThreadFilter (or mapping) -> ``(resource_id, conditions)``."""
    if value is None:
        return None, ()
    flt = coerce_model(value, ThreadFilter, "filter")
    resource_id = None if flt.resource_id is None else check_id(flt.resource_id, "filter.resource_id")
    return resource_id, check_meta_filter(flt.metadata, "filter.metadata")


def check_includes(value: Any) -> list[Include]:
    """R-INCLUDE: a list of Include (or mappings, Mastra's
    ``withPreviousMessages``/``withNextMessages`` accepted)."""
    if value is None:
        return []
    value = check_list(value, "include", "Include", '[Include(id="<message id>", before=2, after=2), ...]')
    result = []
    for index, item in enumerate(value):
        inc = coerce_model(item, Include, f"include[{index}]")
        check_id(inc.id, f"include[{index}].id")
        if inc.thread_id is not None:
            check_id(inc.thread_id, f"include[{index}].thread_id")
        before = check_non_negative_int(inc.with_previous, f"include[{index}].with_previous", "R-INCLUDE")
        after = check_non_negative_int(inc.with_next, f"include[{index}].with_next", "R-INCLUDE")
        # pass on the checked plain ints: an IntEnum would reach the backend as itself
        result.append(replace_fields(inc, with_previous=before, with_next=after))
    return result


MESSAGE_ORDER_DEFAULT = OrderBy("created_at", "ASC")
"""A message listing's order when ``order_by`` is None (R-ORDER)."""


def check_message_page(
    thread_ids: tuple[str, ...] | None,
    resource_id: str | None,
    include: Any,
    filter: Any,
    page: Any,
    per_page: Any,
    order_by: Any,
    cursor: Any,
    total: Any,
    newest: bool,
) -> tuple[MessagePage, list[Include]]:
    """A message page request whose ids are checked, checked (filter, page
    bounds, includes, ``total``, order: R-DATE, R-META, R-PAGE, R-INCLUDE,
    R-SORT) into ``(page, includes)``; ``newest`` without ``order_by`` reads
    the newest first (R-RECALL step 3). The read checks the cursor.

    Raises:
        ValidationError: the first bad argument, named.
    """
    created_from, created_to, conditions = check_message_filter(filter)
    page, per_page, offset = check_page(page, per_page)
    includes = check_includes(include)
    wants_total = check_bool(total, "total")
    if newest and order_by is None:
        descending, output_descending = True, False
    else:
        _, descending = check_order(order_by, ("created_at",), MESSAGE_ORDER_DEFAULT)
        output_descending = descending
    checked = MessagePage(
        thread_ids,
        resource_id,
        created_from,
        created_to,
        conditions,
        page,
        per_page,
        offset,
        descending,
        output_descending,
        cursor,
        wants_total,
    )
    return checked, includes


def check_page_request(request: Any, threads: Any) -> tuple[MessagePage, list[Include], tuple[str, ...]]:
    """A :class:`~memory_core.models.MessagePageRequest` and the thread ids
    to read beside it (``message_parts(threads=...)``), checked:
    ``(page, includes, threads)``.

    Raises:
        ValidationError: ``request`` is not a MessagePageRequest; a bad id in
            ``threads``; ``thread_ids`` empty, a bare str or with a bad id;
            neither ``thread_ids`` nor ``resource_id``; then as
            :func:`check_message_page`.
    """
    if not isinstance(request, MessagePageRequest):
        raise ValidationError("request", f"must be a MessagePageRequest, got {type(request).__name__}")
    fetched = tuple(check_id_list(threads, "threads"))
    thread_ids = None if request.thread_ids is None else check_thread_ids(request.thread_ids)
    resource_id = request.resource_id
    if resource_id is not None:
        check_id(resource_id, "resource_id")
    elif thread_ids is None:
        raise ValidationError("thread_ids", "give thread_ids or resource_id", "R-OWN")
    page, includes = check_message_page(
        thread_ids,
        resource_id,
        request.include,
        request.filter,
        request.page,
        request.per_page,
        request.order_by,
        request.cursor,
        request.total,
        request.newest,
    )
    return page, includes, fetched


def check_thread_ids(value: Any) -> tuple[str, ...]:
    """A non-empty list of thread ids (R-ID), as a tuple (field ``thread_id``)."""
    thread_ids = tuple(check_id_list(value, "thread_id"))
    if not thread_ids:
        raise ValidationError("thread_id", "must name at least one thread", "R-ID")
    return thread_ids


def check_recall(
    thread_id: Any,
    resource_id: Any,
    search: Any,
    semantic_on: bool,
    has_vectors: bool,
    max_tokens: Any,
    include: Any,
    history: tuple[Any, Any, Any, Any, Any, Any],
) -> tuple[list[Include], int | None, MessagePage]:
    """Every argument of one ``Memory.recall``, checked once: ids (R-ID),
    the search text, ``max_tokens`` (R-BUDGET), the includes, then the
    history page's ``(filter, page, per_page, order_by, cursor, total)``
    (:func:`check_message_page`). ``semantic_on``: the call's config has
    semantic recall on; ``has_vectors``: the Memory can rank a search.

    Returns:
        ``(includes, max_tokens, history page)``.

    Raises:
        ValidationError: the first bad argument, named.
    """
    check_id(thread_id, "thread_id")
    if resource_id is not None:
        check_id(resource_id, "resource_id")
    if search is not None:
        check_search_text(search)
        if not semantic_on:
            raise ValidationError(
                "vector_search_string",
                "semantic recall is off: turn it on (MemoryConfig(semantic_recall=True) or thread_config), "
                "or pass no vector_search_string",
                "R-RECALL",
            )
    if max_tokens is not None:
        max_tokens = check_non_negative_int(max_tokens, "max_tokens", "R-BUDGET")
    includes = check_includes(include)
    if semantic_on and not has_vectors and search is not None and search.strip():
        raise ValidationError(
            "thread_config.semantic_recall", "semantic recall needs a vector store and Memory has none", "R-RECALL"
        )
    filter, page, per_page, order_by, cursor, total = history
    checked, _ = check_message_page(
        (thread_id,), resource_id, None, filter, page, per_page, order_by, cursor, total, True
    )
    return includes, max_tokens, checked
