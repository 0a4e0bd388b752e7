"""Validation and normalisation of every public input, done once, in the core.

Each function raises :class:`~memory_core.errors.ValidationError` naming the
field and the rule before anything is written or queried: R-ID, R-TIME,
R-JSON, R-SIZE, R-PAGE, R-DATE, R-META, R-SORT, R-INCLUDE (each stated in
``memory_core_conformance.rules``). Mappings are accepted wherever a model is, with Mastra's camelCase
keys as aliases (``threadId`` ...).

This module holds the checks of what is written: JSON values (R-JSON),
record sizes (R-SIZE), messages, threads and resources. It re-exports, so
that ``memory_core.validation`` stays the one import path, the checks of
single values (ids, text, ints, datetimes, model coercion:
:mod:`memory_core.value_checks`) and of read requests (pages, orders,
filters, includes, message pages, recall: :mod:`memory_core.query_checks`).
"""

from __future__ import annotations

import math
from typing import Any, cast

from memory_core import codec
from memory_core.errors import ValidationError
from memory_core.models import ROLES, Message, Resource, Thread
from memory_core.query_checks import (
    MAX_PER_PAGE,
    MAX_SEARCH_CHARS,
    MAX_TOP_K,
    MESSAGE_ORDER_DEFAULT,
    MinScore,
    check_date_range,
    check_includes,
    check_message_filter,
    check_message_page,
    check_meta_filter,
    check_min_score,
    check_order,
    check_page,
    check_page_request,
    check_per_page,
    check_recall,
    check_search_text,
    check_thread_filter,
    check_thread_ids,
    check_thread_order,
)
from memory_core.value_checks import (
    INT64_MAX,
    INT64_MIN,
    MAX_ID_LENGTH,
    check_bool,
    check_datetime,
    check_id,
    check_id_list,
    check_list,
    check_non_negative_int,
    check_text,
    check_unicode,
    coerce_model,
    config_field,
    path_name,
    replace_fields,
    unknown_field,
)

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
    "MinScore",
    "check_bool",
    "check_date_range",
    "check_datetime",
    "check_id",
    "check_id_list",
    "check_list",
    "check_includes",
    "check_json_object",
    "check_json_value",
    "check_record_size",
    "check_message",
    "check_message_filter",
    "check_message_page",
    "check_min_score",
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

MAX_MESSAGE_BYTES = 15 * 1024 * 1024
"""R-SIZE: a message serialises to at most 15 MiB (15,728,640 bytes)."""
JSON_MAX_DEPTH = 200


def _text_bound(text: str) -> int:
    """Upper bound of a str's bytes in :mod:`memory_core.codec` JSON: quotes
    plus at most 6 bytes per code point (``\\u00XX`` escapes; UTF-8 needs <= 4)."""
    return 6 * len(text) + 2


def _check_json_value(value: Any, field: Any, depth: int) -> int:
    """Check one JSON value (R-JSON); returns an upper bound of its encoded
    size in bytes, so R-SIZE needs an exact encoding only near the limit.
    ``field`` is a name or a path (:func:`path_name`)."""
    kind = type(value)
    if value is None or kind is bool:
        return 5
    if kind is str:
        check_unicode(value, field, "R-JSON")
        return _text_bound(value)
    if kind is int:
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValidationError(path_name(field), "int outside signed 64-bit", "R-JSON")
        return 20
    if kind is float:
        if not math.isfinite(value):
            raise ValidationError(path_name(field), "NaN and infinity are not JSON", "R-JSON")
        return 24
    if depth >= JSON_MAX_DEPTH:
        raise ValidationError(path_name(field), f"nested deeper than {JSON_MAX_DEPTH} levels", "R-JSON")
    if kind is list:
        size = 2
        for index, item in enumerate(value):
            size += _check_json_value(item, (field, index), depth + 1) + 1
        return size
    if kind is dict:
        size = 2
        for key, item in value.items():
            if type(key) is not str:
                raise ValidationError(path_name(field), f"object keys must be str, got {type(key).__name__}", "R-JSON")
            if not key.isascii():
                check_unicode(key, f"{path_name(field)} key", "R-JSON")
            size += _text_bound(key) + _check_json_value(item, (field, key), depth + 1) + 2
        return size
    raise ValidationError(path_name(field), f"{kind.__name__} is not a JSON type", "R-JSON")


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
    check_unicode(message.type, f"{where}.type", "R-JSON")
    if type(message.content) is str:
        check_unicode(message.content, f"{where}.content", "R-JSON")
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
        message = replace_fields(message, created_at=created_at)
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


def check_thread(value: Any, field: str = "thread") -> Thread:
    """Validate a thread for saving: ids, title (str), metadata (R-JSON),
    datetimes (R-TIME, None = now). ``last_message_at`` is the store's to
    keep: it is dropped (None) here."""
    thread = coerce_model(value, Thread, field)
    check_id(thread.id, f"{field}.id")
    check_id(thread.resource_id, f"{field}.resource_id")
    if type(thread.title) is not str:
        raise ValidationError(f"{field}.title", "must be a str")
    check_unicode(thread.title, f"{field}.title", "R-JSON")
    check_json_object(thread.metadata, f"{field}.metadata")
    check_record_size(field, {"title": thread.title, "metadata": thread.metadata})
    created = None if thread.created_at is None else check_datetime(thread.created_at, f"{field}.created_at")
    updated = None if thread.updated_at is None else check_datetime(thread.updated_at, f"{field}.updated_at")
    return replace_fields(thread, created_at=created, updated_at=updated, last_message_at=None)


def check_resource(value: Any, field: str = "resource") -> Resource:
    """Validate a resource for saving."""
    resource = coerce_model(value, Resource, field)
    check_id(resource.id, f"{field}.id")
    if resource.working_memory is not None:
        if type(resource.working_memory) is not str:
            raise ValidationError(f"{field}.working_memory", "must be a str or None")
        check_unicode(resource.working_memory, f"{field}.working_memory", "R-JSON")
    check_json_object(resource.metadata, f"{field}.metadata")
    check_record_size(field, {"working_memory": resource.working_memory, "metadata": resource.metadata})
    created = None if resource.created_at is None else check_datetime(resource.created_at, f"{field}.created_at")
    updated = None if resource.updated_at is None else check_datetime(resource.updated_at, f"{field}.updated_at")
    return replace_fields(resource, created_at=created, updated_at=updated)
