"""The document layout: models <-> BSON documents (see README "Layout").

A JSON object (metadata; dict message content) is stored as an array of
*entries*, one per top-level key, in key order:

- a scalar value (str, int, float, bool, None): ``{"k": key, "v": value}``
  with ``v`` in its native BSON type (string, int32/int64, double, bool,
  null), so MongoDB filters it natively through a multikey index on
  ``meta.k`` / ``meta.v``;
- a list or dict value: ``{"k": key, "j": text}`` with ``text`` the exact
  JSON from :func:`memory_core.codec.dumps` (no ``v``, so it never matches a
  scalar filter).

Keys are *values* (never BSON field names), so ``""``, ``"a.b"``, ``"$x"``
and any unicode round-trip. BSON keeps int vs double apart, so ``1`` stays
int, ``1.0`` float, ``True`` bool, and 64-bit ints are exact. One entry per
key also makes a one-level merge a single server-side pipeline update
(:func:`merge_expr`), so partial updates never read-modify-write.

Times are int64 microseconds since the epoch (exact, ordered).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bson.int64 import Int64

from memory_core import codec
from memory_core.builders import StoredTime, build_message, build_resource, build_thread
from memory_core.clock import to_us
from memory_core.models import Message, Resource, Thread
from memory_core.query import NO_MESSAGE_ASC_US, NO_MESSAGE_DESC_US

__all__ = [
    "LAST_ASC",
    "LAST_DESC",
    "MESSAGE_COUNT",
    "Entry",
    "content_set_expr",
    "decode_object",
    "encode_object",
    "last_fields",
    "last_message_at",
    "merge_expr",
    "message_doc",
    "message_from_doc",
    "new_thread_fields",
    "resource_doc",
    "resource_from_doc",
    "thread_doc",
    "thread_from_doc",
    "us",
]

Entry = dict[str, Any]
"""One stored top-level key: ``{"k": key, "v": scalar}`` or ``{"k": key, "j": json_text}``."""


def us(value: int) -> Int64:
    """An int µs value as BSON int64 (never int32), so every time field has one type."""
    return Int64(value)


def _entry(key: str, value: Any) -> Entry:
    if value is None or type(value) in (str, bool, int, float):
        return {"k": key, "v": value}
    return {"k": key, "j": codec.dumps(value)}


def encode_object(obj: Mapping[str, Any]) -> list[Entry]:
    """A JSON object -> its entry array (key order kept)."""
    return [_entry(key, value) for key, value in obj.items()]


def _scalar(value: Any) -> Any:
    # PyMongo decodes BSON int64 as bson.Int64 (an int subclass): give back int.
    if type(value) is Int64:
        return int(value)
    return value


def decode_object(entries: Any) -> dict[str, Any]:
    """An entry array -> the JSON object it stores (missing field -> ``{}``)."""
    if not entries:
        return {}
    return {e["k"]: codec.loads(e["j"]) if "j" in e else _scalar(e.get("v")) for e in entries}


def merge_expr(field: str, patch: Mapping[str, Any]) -> dict[str, Any]:
    """Aggregation expression: the entries of ``$<field>`` merged one level with
    ``patch`` (``{**stored, **patch}``): stored keys keep their place and take the
    patch's value, new keys are appended in patch order. A missing field counts
    as ``{}``. User data is wrapped in ``$literal`` so no string is read as a
    field path or operator.

    Portable form: the keys of the stored entries are taken with ``$map``
    (``"$$var.k"`` over an array of documents is not supported everywhere).
    """
    entries = encode_object(patch)
    keys = [e["k"] for e in entries]
    return {
        "$let": {
            "vars": {
                "patch": {"$literal": entries},
                "keys": {"$literal": keys},
                "old": {"$ifNull": [f"${field}", []]},
            },
            "in": {
                "$concatArrays": [
                    {
                        "$map": {
                            "input": "$$old",
                            "as": "e",
                            "in": {
                                "$cond": [
                                    {"$in": ["$$e.k", "$$keys"]},
                                    {"$arrayElemAt": ["$$patch", {"$indexOfArray": ["$$keys", "$$e.k"]}]},
                                    "$$e",
                                ]
                            },
                        }
                    },
                    {
                        "$filter": {
                            "input": "$$patch",
                            "as": "p",
                            "cond": {
                                "$not": [{"$in": ["$$p.k", {"$map": {"input": "$$old", "as": "o", "in": "$$o.k"}}]}]
                            },
                        }
                    },
                ]
            },
        }
    }


def _encode_content(content: Any) -> Any:
    return encode_object(content) if isinstance(content, dict) else content


def _decode_content(stored: Any) -> Any:
    return decode_object(stored) if isinstance(stored, list) else stored


# ---------------------------------------------------------------- threads


def thread_doc(thread: Thread) -> dict[str, Any]:
    """The whole stored document of a thread (``_id`` = thread id)."""
    if thread.created_at is None or thread.updated_at is None:
        raise ValueError(f"thread {thread.id!r} reached the store without its times (the core sets them)")
    return {
        "_id": thread.id,
        "resource_id": thread.resource_id,
        "title": thread.title,
        "meta": encode_object(thread.metadata),
        "created_at": us(to_us(thread.created_at)),
        "updated_at": us(to_us(thread.updated_at)),
    }


LAST_ASC = "last_asc"
"""Thread field: ``last_message_at`` in µs, or ``NO_MESSAGE_ASC_US`` without
messages (the sort key of ``last_message_at`` ASC: such threads last)."""
LAST_DESC = "last_desc"
"""Thread field: the same with ``NO_MESSAGE_DESC_US`` (the DESC sort key)."""


def last_fields(last_us: int | None) -> dict[str, Any]:
    """The two ``last_message_at`` sort fields of a thread document."""
    if last_us is None:
        return {LAST_ASC: us(NO_MESSAGE_ASC_US), LAST_DESC: us(NO_MESSAGE_DESC_US)}
    return {LAST_ASC: us(last_us), LAST_DESC: us(last_us)}


MESSAGE_COUNT = "message_count"
"""Thread field: how many messages the thread holds (int64), kept by every
message write (:mod:`memory_core_mongodb._counters`)."""


def new_thread_fields() -> dict[str, Any]:
    """The fields a thread gets when it is created and a replace keeps:
    no messages yet (``last_message_at`` sort keys, a zero counter)."""
    return {**last_fields(None), MESSAGE_COUNT: us(0)}


def last_message_at(doc: Mapping[str, Any]) -> StoredTime | None:
    """The ``last_message_at`` of a thread document (its :data:`LAST_DESC`
    field, a StoredTime the thread decodes when read; None without messages)."""
    last = doc.get(LAST_DESC)
    return None if last is None or int(last) == NO_MESSAGE_DESC_US else StoredTime(last)


def thread_from_doc(doc: Mapping[str, Any]) -> Thread:
    """A stored thread document -> :class:`Thread`."""
    return build_thread(
        doc["_id"],
        doc["resource_id"],
        doc.get("title", ""),
        decode_object(doc.get("meta")),
        StoredTime(doc["created_at"]),
        StoredTime(doc["updated_at"]),
        last_message_at(doc),
    )


# ---------------------------------------------------------------- messages


def message_doc(message: Message) -> dict[str, Any]:
    """The fields of a message an upsert replaces (everything but ``_id``,
    ``resource_id``, ``created_at`` and ``seq``, which are set on insert only)."""
    return {
        "thread_id": message.thread_id,
        "role": message.role,
        "type": message.type,
        "content": _encode_content(message.content),
        "meta": encode_object(message.metadata),
    }


def content_set_expr(content: Any) -> Any:
    """Pipeline expression for a content patch: a str replaces; a dict is merged
    one level into stored dict content and replaces stored str content."""
    if isinstance(content, dict):
        replace = {"$literal": encode_object(content)}
        return {"$cond": [{"$isArray": "$content"}, merge_expr("content", content), replace]}
    return {"$literal": content}


def message_from_doc(doc: Mapping[str, Any]) -> Message:
    """A stored message document -> :class:`Message` (``sequence`` filled)."""
    return build_message(
        doc["_id"],
        doc["thread_id"],
        doc["role"],
        _decode_content(doc["content"]),
        doc["resource_id"],
        doc.get("type", "v2"),
        decode_object(doc.get("meta")),
        StoredTime(doc["created_at"]),
        int(doc["seq"]),
    )


# ---------------------------------------------------------------- resources


def resource_doc(resource: Resource) -> dict[str, Any]:
    """The whole stored document of a resource (``_id`` = resource id)."""
    if resource.created_at is None or resource.updated_at is None:
        raise ValueError(f"resource {resource.id!r} reached the store without its times (the core sets them)")
    return {
        "_id": resource.id,
        "working_memory": resource.working_memory,
        "meta": encode_object(resource.metadata),
        "created_at": us(to_us(resource.created_at)),
        "updated_at": us(to_us(resource.updated_at)),
    }


def resource_from_doc(doc: Mapping[str, Any]) -> Resource:
    """A stored resource document -> :class:`Resource`."""
    return build_resource(
        doc["_id"],
        doc.get("working_memory"),
        decode_object(doc.get("meta")),
        StoredTime(doc["created_at"]),
        StoredTime(doc["updated_at"]),
    )
