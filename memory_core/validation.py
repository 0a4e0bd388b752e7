"""Validation and normalisation of every public input, done once, in the core.

Each function raises :class:`~memory_core.errors.ValidationError` naming the
field and the rule before anything is written or queried: R-ID, R-TIME,
R-JSON, R-SIZE, R-PAGE, R-DATE, R-META, R-SORT, R-INCLUDE (each stated in
``memory_core_conformance.rules``). Mappings are accepted wherever a model is, with Mastra's camelCase
keys as aliases (``threadId`` ...).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, fields, is_dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar, cast

from memory_core import codec
from memory_core.clock import TIME_MAX, TIME_MIN, to_us
from memory_core.errors import ValidationError
from memory_core.models import (
    ROLES,
    DateRange,
    Include,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    PerPage,
    Resource,
    Thread,
    ThreadFilter,
)
from memory_core.query import MessagePage, MetaCondition, MetaKind, ThreadOrderField

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ID_LENGTH",
    "MESSAGE_ORDER_DEFAULT",
    "MAX_MESSAGE_BYTES",
    "MAX_PER_PAGE",
    "MAX_SEARCH_CHARS",
    "MAX_TOP_K",
    "CheckedMessages",
    "check_bool",
    "check_date_range",
    "check_datetime",
    "check_id",
    "check_id_list",
    "check_includes",
    "check_json_object",
    "check_json_value",
    "check_record_size",
    "check_message",
    "check_message_filter",
    "check_message_page",
    "check_page_request",
    "check_recall",
    "check_meta_filter",
    "check_non_negative_int",
    "check_order",
    "check_page",
    "check_per_page",
    "check_search_text",
    "check_resource",
    "check_text",
    "check_thread",
    "check_thread_filter",
    "check_thread_ids",
    "check_thread_order",
    "coerce_model",
    "config_field",
    "message_size",
    "unknown_field",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_ID_LENGTH = 256
MAX_MESSAGE_BYTES = 15 * 1024 * 1024
"""R-SIZE: a message serialises to at most 15 MiB (15,728,640 bytes)."""
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
JSON_MAX_DEPTH = 200

_ALIASES = {
    "threadId": "thread_id",
    "resourceId": "resource_id",
    "createdAt": "created_at",
    "updatedAt": "updated_at",
    "workingMemory": "working_memory",
    "withPreviousMessages": "with_previous",
    "withNextMessages": "with_next",
    "withPrevious": "with_previous",
    "withNext": "with_next",
    "dateRange": "date_range",
    "startExclusive": "start_exclusive",
    "endExclusive": "end_exclusive",
    "topK": "top_k",
    "messageRange": "message_range",
    "excludeRecent": "exclude_recent",
    "lastMessages": "last_messages",
    "semanticRecall": "semantic_recall",
    "generateTitle": "generate_title",
}

M = TypeVar("M")


def coerce_model(value: Any, model: type[M], field: str, rule: str = "") -> M:
    """Return ``value`` as an instance of the dataclass ``model``.

    Accepts the model itself or a mapping of its fields (snake_case, or the
    camelCase aliases listed in ``_ALIASES``). Unknown keys are an error, so a
    typo never silently drops data.
    """
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"expected {model.__name__} or a mapping, got {type(value).__name__}", rule)
    if not is_dataclass(model):
        raise ValidationError(field, f"{model.__name__} is not a dataclass model", rule)
    names = {f.name for f in fields(model)}
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        name = config_field(key)
        if name not in names:
            raise unknown_field(f"{field}.{key}", key, names, model.__name__, rule)
        if name in kwargs:
            raise ValidationError(f"{field}.{key}", "given twice (snake_case and camelCase)")
        kwargs[name] = item
    missing = [
        f.name for f in fields(model) if f.name not in kwargs and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        hint = ""
        if model is Message:
            hint = " (chat-format dicts: convert with memory_core.chat.from_openai_chat / from_responses_items)"
        raise ValidationError(field, f"{model.__name__} needs the field(s) {', '.join(missing)}{hint}", rule)
    try:
        return model(**kwargs)
    except TypeError as exc:
        raise ValidationError(field, f"missing or bad fields for {model.__name__}: {exc}") from None


def config_field(key: Any) -> Any:
    """The snake_case field a mapping key names (a camelCase alias resolved,
    anything else unchanged)."""
    return _ALIASES.get(key, key) if isinstance(key, str) else key


def unknown_field(field: str, key: Any, names: Iterable[str], model: str, rule: str = "") -> ValidationError:
    """The error for a mapping key ``key`` that names no field of ``model``
    (a dataclass given as a mapping): it names the closest field for a
    misspelling ("did you mean 'last_messages'?") and lists every field.

    Returns (does not raise) the :class:`ValidationError`, field ``field``.
    """
    known = sorted(names)
    close = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) else []
    hint = f"did you mean {close[0]!r}? " if close else ""
    return ValidationError(field, f"unknown field for {model}; {hint}{model} takes {known}", rule)


def check_id(value: Any, field: str) -> str:
    """R-ID: a str of 1-256 characters, not all whitespace, no NUL, no lone
    surrogate. Returned unchanged (ids compare exactly)."""
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a str, got {type(value).__name__}", "R-ID")
    if not value or len(value) > MAX_ID_LENGTH:
        raise ValidationError(field, f"must be 1-{MAX_ID_LENGTH} characters, got {len(value)}", "R-ID")
    if value.isspace():
        raise ValidationError(field, "must not be all whitespace", "R-ID")
    if "\x00" in value:
        raise ValidationError(field, "must not contain NUL", "R-ID")
    _check_text(value, field, "R-ID")
    return value


def _check_text(value: str, field: Any, rule: str) -> None:
    """No lone surrogate in ``value`` (an ASCII str has none: ``isascii`` is a
    flag check, no scan). ``field`` is a name or a JSON walk's path
    (:func:`_path_name`), turned into text only for the error."""
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(_path_name(field), "contains a lone surrogate (not valid Unicode text)", rule) from None


def _path_name(path: Any) -> str:
    """The field name of a position in a JSON walk: ``path`` is a name (str)
    or ``(parent path, key)`` with a list index or a dict key, named
    ``parent[0]`` / ``parent['key']``. The walk builds tuples and only an
    error pays for the text."""
    if type(path) is str:
        return path
    parent, key = path
    return f"{_path_name(parent)}[{key!r}]"


def check_text(value: Any, field: str) -> str:
    """A str that is valid Unicode (no lone surrogates)."""
    if type(value) is not str:
        raise ValidationError(field, f"must be a str, got {type(value).__name__}")
    _check_text(value, field, "R-JSON")
    return value


def check_bool(value: Any, field: str) -> bool:
    """A real bool (not 0/1)."""
    if not isinstance(value, bool):
        raise ValidationError(field, f"must be a bool, got {type(value).__name__}")
    return value


def check_non_negative_int(value: Any, field: str, rule: str = "") -> int:
    """An int >= 0 that fits signed 64-bit; bool is refused. Returned as a
    plain ``int`` (an ``IntEnum`` or other int subclass is normalised, so no
    backend ever sees its repr)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be an int >= 0, got {type(value).__name__}", rule)
    number = int(value)
    if number < 0 or number > INT64_MAX:
        raise ValidationError(field, f"must be an int from 0 to 2**63-1, got {number}", rule)
    return number


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


def check_datetime(value: Any, field: str) -> datetime:
    """R-TIME: a datetime or ISO-8601 string -> aware UTC datetime, µs kept.

    Naive values are read as UTC; aware ones are converted. The result lies in
    1900-01-01 .. 2199-12-31 UTC, else ValidationError.
    """
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)  # 3.11+: also "Z" and offsets
        except ValueError:
            example = "2024-02-01 or 2024-02-01T09:30:00+01:00"
            raise ValidationError(field, f"not an ISO-8601 datetime: {value!r} (e.g. {example})", "R-TIME") from None
    if not isinstance(value, datetime):
        raise ValidationError(field, f"must be a datetime or ISO-8601 str, got {type(value).__name__}", "R-TIME")
    try:
        if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
            value = value.replace(tzinfo=UTC)
        else:
            value = value.astimezone(UTC)
    except OverflowError:
        raise ValidationError(field, "outside 1900-01-01..2199-12-31 UTC", "R-TIME") from None
    except (ValueError, TypeError) as exc:  # a tzinfo with an offset of a day or more, or not a timedelta
        raise ValidationError(field, f"has an invalid UTC offset: {exc}", "R-TIME") from None
    if not TIME_MIN <= value <= TIME_MAX:
        raise ValidationError(field, f"{value.isoformat()} is outside 1900-01-01..2199-12-31 UTC", "R-TIME")
    return cast(datetime, value)


def _text_bound(text: str) -> int:
    """Upper bound of a str's bytes in :mod:`memory_core.codec` JSON: quotes
    plus at most 6 bytes per code point (``\\u00XX`` escapes; UTF-8 needs <= 4)."""
    return 6 * len(text) + 2


def _check_json_value(value: Any, field: Any, depth: int) -> int:
    """Check one JSON value (R-JSON); returns an upper bound of its encoded
    size in bytes, so R-SIZE needs an exact encoding only near the limit.
    ``field`` is a name or a path (:func:`_path_name`)."""
    kind = type(value)
    if value is None or kind is bool:
        return 5
    if kind is str:
        _check_text(value, field, "R-JSON")
        return _text_bound(value)
    if kind is int:
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValidationError(_path_name(field), "int outside signed 64-bit", "R-JSON")
        return 20
    if kind is float:
        if not math.isfinite(value):
            raise ValidationError(_path_name(field), "NaN and infinity are not JSON", "R-JSON")
        return 24
    if depth >= JSON_MAX_DEPTH:
        raise ValidationError(_path_name(field), f"nested deeper than {JSON_MAX_DEPTH} levels", "R-JSON")
    if kind is list:
        size = 2
        for index, item in enumerate(value):
            size += _check_json_value(item, (field, index), depth + 1) + 1
        return size
    if kind is dict:
        size = 2
        for key, item in value.items():
            if type(key) is not str:
                raise ValidationError(_path_name(field), f"object keys must be str, got {type(key).__name__}", "R-JSON")
            if not key.isascii():
                _check_text(key, f"{_path_name(field)} key", "R-JSON")
            size += _text_bound(key) + _check_json_value(item, (field, key), depth + 1) + 2
        return size
    raise ValidationError(_path_name(field), f"{kind.__name__} is not a JSON type", "R-JSON")


def check_record_size(field: str, value: dict[str, Any]) -> None:
    """R-SIZE for threads and resources (and their patches): the JSON of
    ``value`` (already R-JSON-checked) must fit in 15 MiB, the limit messages
    have, so every backend stores what one accepts (a MongoDB document is at
    most 16 MiB).

    Raises:
        ValidationError: over :data:`MAX_MESSAGE_BYTES`.
    """
    if _check_json_value(value, field, 0) <= MAX_MESSAGE_BYTES:
        return
    size = len(codec.dumps(value).encode("utf-8"))
    if size > MAX_MESSAGE_BYTES:
        raise ValidationError(field, f"serialises to {size} bytes, over the 15 MiB limit", "R-SIZE")


def check_json_value(value: Any, field: str) -> None:
    """R-JSON for any JSON value (object, array, scalar): the rules of
    :func:`check_json_object` without requiring a dict."""
    _check_json_value(value, field, 0)


def check_json_object(value: Any, field: str) -> dict[str, Any]:
    """R-JSON: a JSON object (dict with str keys; values str/int/float/bool/
    None/list/dict, any nesting). Refuses NaN/inf, ints outside int64, lone
    surrogates, tuples, sets and other non-JSON types."""
    if type(value) is not dict:
        raise ValidationError(field, f"must be a dict (JSON object), got {type(value).__name__}", "R-JSON")
    _check_json_value(value, field, 0)
    return cast(dict[str, Any], value)


def message_size(message: Message) -> int:
    """Bytes of the message's JSON serialisation (UTF-8), as R-SIZE counts."""
    body = {
        "id": message.id,
        "thread_id": message.thread_id,
        "resource_id": message.resource_id,
        "role": message.role,
        "type": message.type,
        "content": message.content,
        "metadata": message.metadata,
    }
    return len(codec.dumps(body).encode("utf-8")) + 40  # + an ISO timestamp


def check_message(value: Any, field: str, *, by_id: bool = True) -> Message:
    """Validate one message for saving (R-ID, R-TIME, R-JSON, R-SIZE).

    Returns a Message with ``created_at`` normalised to aware UTC (or None
    when absent, meaning "now"). Errors name the message by its id
    (``message 'm1'.role``), or by ``field`` (``turns[2].role``) when
    ``by_id`` is False: an id the store just generated means nothing to the
    caller.
    """
    message = coerce_model(value, Message, field)
    msg_id = check_id(message.id, f"{field}.id")
    where = f"message {msg_id!r}" if by_id else field
    check_id(message.thread_id, f"{where}.thread_id")
    if message.resource_id is not None:
        check_id(message.resource_id, f"{where}.resource_id")
    if type(message.role) is not str or message.role not in ROLES:
        given: Any = message.role
        hint = " (OpenAI's 'developer' is stored as 'system': see memory_core.chat)" if given == "developer" else ""
        raise ValidationError(f"{where}.role", f"must be one of {sorted(ROLES)}, got {message.role!r}{hint}")
    if type(message.type) is not str:
        raise ValidationError(f"{where}.type", "must be a str")
    _check_text(message.type, f"{where}.type", "R-JSON")
    if type(message.content) is str:
        _check_text(message.content, f"{where}.content", "R-JSON")
        bound = _text_bound(message.content)
    elif type(message.content) is dict:
        bound = _check_json_value(message.content, f"{where}.content", 0)
    else:
        hint = " (a list of chat content parts: convert with memory_core.chat)" if type(message.content) is list else ""
        raise ValidationError(
            f"{where}.content", f"must be a str or a dict, got {type(message.content).__name__}{hint}"
        )
    if type(message.metadata) is not dict:
        raise ValidationError(
            f"{where}.metadata", f"must be a dict (JSON object), got {type(message.metadata).__name__}", "R-JSON"
        )
    bound += _check_json_value(message.metadata, f"{where}.metadata", 0)
    created_at = None if message.created_at is None else check_datetime(message.created_at, f"{where}.created_at")
    if created_at is not message.created_at:
        message = _replace(message, created_at=created_at)
    # R-SIZE: encode exactly only when the cheap upper bound (ids and keys
    # included, ~200 bytes) could pass the limit.
    ids = (msg_id, message.thread_id, message.resource_id or "", message.role, message.type)
    if bound + 6 * sum(map(len, ids)) + 2 * len(ids) + 200 > MAX_MESSAGE_BYTES:  # + each _text_bound
        size = message_size(message)
        if size > MAX_MESSAGE_BYTES:
            raise ValidationError(where, f"serialises to {size} bytes, over the 15 MiB limit", "R-SIZE")
    return message


class CheckedMessages(tuple[Message, ...]):
    """A batch of messages, each one a result of :func:`check_message`:
    :meth:`BaseStorage.save_messages <memory_core.storage.BaseStorage.save_messages>`
    saves it without checking every message a second time (``Memory``
    validates a batch itself, to name generated ids by position and to drop
    system messages, then hands it to its storage). Any storage also sees a
    plain tuple of messages. Build one only from ``check_message``'s results,
    with nothing in between: they are not checked again before the write."""

    __slots__ = ()


def _replace(obj: M, **changes: Any) -> M:
    from dataclasses import replace

    return replace(obj, **changes)  # type: ignore[type-var]


def check_thread(value: Any, field: str = "thread") -> Thread:
    """Validate a thread for saving: ids, title (str), metadata (R-JSON),
    datetimes (R-TIME, None = now). ``last_message_at`` is the store's to
    keep: it is dropped (None) here."""
    thread = coerce_model(value, Thread, field)
    check_id(thread.id, f"{field}.id")
    check_id(thread.resource_id, f"{field}.resource_id")
    if type(thread.title) is not str:
        raise ValidationError(f"{field}.title", "must be a str")
    _check_text(thread.title, f"{field}.title", "R-JSON")
    check_json_object(thread.metadata, f"{field}.metadata")
    check_record_size(field, {"title": thread.title, "metadata": thread.metadata})
    created = None if thread.created_at is None else check_datetime(thread.created_at, f"{field}.created_at")
    updated = None if thread.updated_at is None else check_datetime(thread.updated_at, f"{field}.updated_at")
    return _replace(thread, created_at=created, updated_at=updated, last_message_at=None)


def check_resource(value: Any, field: str = "resource") -> Resource:
    """Validate a resource for saving."""
    resource = coerce_model(value, Resource, field)
    check_id(resource.id, f"{field}.id")
    if resource.working_memory is not None:
        if type(resource.working_memory) is not str:
            raise ValidationError(f"{field}.working_memory", "must be a str or None")
        _check_text(resource.working_memory, f"{field}.working_memory", "R-JSON")
    check_json_object(resource.metadata, f"{field}.metadata")
    check_record_size(field, {"working_memory": resource.working_memory, "metadata": resource.metadata})
    created = None if resource.created_at is None else check_datetime(resource.created_at, f"{field}.created_at")
    updated = None if resource.updated_at is None else check_datetime(resource.updated_at, f"{field}.updated_at")
    return _replace(resource, created_at=created, updated_at=updated)


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
            _check_text(item, f"{field}[{key!r}]", "R-META")
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
    usual = type(value) is list or type(value) is tuple  # skips the ABC checks below
    if not usual and (isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence)):
        raise ValidationError("include", "must be a list of Include")
    result = []
    for index, item in enumerate(value):
        inc = coerce_model(item, Include, f"include[{index}]")
        check_id(inc.id, f"include[{index}].id")
        if inc.thread_id is not None:
            check_id(inc.thread_id, f"include[{index}].thread_id")
        before = check_non_negative_int(inc.with_previous, f"include[{index}].with_previous", "R-INCLUDE")
        after = check_non_negative_int(inc.with_next, f"include[{index}].with_next", "R-INCLUDE")
        # pass on the checked plain ints: an IntEnum would reach the backend as itself
        result.append(_replace(inc, with_previous=before, with_next=after))
    return result


def check_id_list(value: Any, field: str) -> list[str]:
    """A list (or tuple) of ids (R-ID); a bare str is refused."""
    usual = type(value) is list or type(value) is tuple  # skips the ABC checks below
    if not usual and (isinstance(value, str | bytes) or not isinstance(value, Sequence)):
        raise ValidationError(field, f"must be a list of ids, got {type(value).__name__}", "R-ID")
    return [check_id(item, f"{field}[{index}]") for index, item in enumerate(value)]


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
