"""The document layout: odd keys and exact types round-trip; filters use native values."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_core_mongodb import MongoStorage
from memory_core_mongodb._layout import decode_object, encode_object
from memory_core_mongodb._plan import state_aggregate
from memory_core_mongodb._schema import MESSAGES, THREADS
from pymongo import AsyncMongoClient

from memory_core.models import Message, Resource, Thread

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

ODD: dict[str, Any] = {
    "": "empty key",
    "a.b": 1,
    "$x": 1.0,
    "$": True,
    ".": False,
    "a.$b.c": None,
    "\u00e9\U0001f525": "v\u00e4lue",
    " ": " ",
    "_id": "not an id",
    "k": {"k": "v", "j": "[]", "": {"$gt": 1}},
    "v": [1, 1.0, True, None, "1", [], {}],
    "int64_max": INT64_MAX,
    "int64_min": INT64_MIN,
    "int32_edge": 2**31,
    "float": 0.1,
    "neg_zero": -0.0,
    "big_float": 1.7976931348623157e308,
    "tiny": 5e-324,
    "dollar_value": "$notAField",
    "nul": None,
    "nested": {"a.b": {"$c": [{"": None}]}},
}


def exact(value: Any) -> Any:
    """Value with types spelled out, so 1 vs 1.0 vs True differ in comparisons."""
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [exact(v) for v in value]
    return (type(value).__name__, repr(value))


def test_encode_decode_keeps_keys_order_and_types() -> None:
    decoded = decode_object(encode_object(ODD))
    assert list(decoded) == list(ODD)
    assert exact(decoded) == exact(ODD)


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(INT64_MIN, INT64_MAX)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(), json_values, max_size=6))
def test_encode_decode_roundtrip_property(obj: dict[str, Any]) -> None:
    assert exact(decode_object(encode_object(obj))) == exact(obj)


async def test_odd_metadata_round_trips_through_the_server(store: MongoStorage) -> None:
    thread = await store.save_thread(Thread("t1", "r1", "title", ODD, T0, T0))
    got = await store.get_thread("t1")
    assert got == thread
    assert got is not None and exact(got.metadata) == exact(ODD) and list(got.metadata) == list(ODD)

    await store.save_messages([Message("m1", "t1", "user", dict(ODD), metadata=dict(ODD), created_at=T0)])
    [message] = await store.get_messages(["m1"])
    assert exact(message.content) == exact(ODD) and exact(message.metadata) == exact(ODD)

    await store.save_resource(Resource("r1", "wm", ODD, T0, T0))
    resource = await store.get_resource("r1")
    assert resource is not None and exact(resource.metadata) == exact(ODD)


async def test_stored_document_shape(store: MongoStorage, raw_client: AsyncMongoClient[dict[str, Any]]) -> None:
    """Keys are values in an entry array; scalars native, containers as JSON text; times int64 µs."""
    await store.save_thread(
        Thread("t1", "r1", metadata={"a.b": 5, "$x": [1, 2.0], "n": None}, created_at=T0, updated_at=T0)
    )
    await store.save_messages([Message("m1", "t1", "user", {"format": 2, "parts": []}, created_at=T0)])
    db = raw_client[store.database_name]
    thread = await db["threads"].find_one({"_id": "t1"})
    assert thread is not None
    assert thread["meta"] == [{"k": "a.b", "v": 5}, {"k": "$x", "j": "[1,2.0]"}, {"k": "n", "v": None}]
    assert thread["created_at"] == 1735689600000000 and thread["resource_id"] == "r1"
    message = await db["messages"].find_one({"_id": "m1"})
    assert message is not None
    assert message["content"] == [{"k": "format", "v": 2}, {"k": "parts", "j": "[]"}]
    assert message["seq"] >= 1 and message["resource_id"] == "r1" and message["thread_id"] == "t1"
    assert await db["counters"].find_one({"_id": "message_sequence"}) is not None


async def test_partial_updates_merge_on_the_server_keeping_key_order(store: MongoStorage) -> None:
    await store.save_thread(Thread("t1", "r1", metadata={"a": 1, "$b": 2, "c.d": 3}, created_at=T0, updated_at=T0))
    updated = await store.update_thread("t1", metadata={"$b": "two", "": 0, "a": {"x": [1]}})
    assert list(updated.metadata.items()) == [("a", {"x": [1]}), ("$b", "two"), ("c.d", 3), ("", 0)]
    assert await store.get_thread("t1") == updated

    await store.save_messages([Message("m1", "t1", "user", {"p": 1, "q": "$q"}, metadata={"m": 1}, created_at=T0)])
    [patched] = await store.update_messages([{"id": "m1", "content": {"q": "$r", "$s": None}, "metadata": {"m": 1.0}}])
    assert exact(patched.content) == exact({"p": 1, "q": "$r", "$s": None})
    assert exact(patched.metadata) == exact({"m": 1.0})
    [replaced] = await store.update_messages([{"id": "m1", "content": "plain"}])
    assert replaced.content == "plain"
    [again] = await store.update_messages([{"id": "m1", "content": {"back": True}}])
    assert again.content == {"back": True}


async def test_upsert_keeps_created_at_and_sequence(store: MongoStorage) -> None:
    await store.save_thread(Thread("t1", "r1", created_at=T0, updated_at=T0))
    await store.save_messages([Message("m1", "t1", "user", "a", created_at=T0)])
    [first] = await store.get_messages(["m1"])
    await store.save_messages([Message("m2", "t1", "user", "b", created_at=T0)])
    [again] = await store.save_messages(
        [Message("m1", "t1", "assistant", "edited", created_at=datetime(2030, 1, 1, tzinfo=UTC))]
    )
    [stored] = await store.get_messages(["m1"])
    assert stored.created_at == T0 and again.created_at == T0
    assert stored.sequence == first.sequence
    assert (stored.role, stored.content) == ("assistant", "edited")
    page = await store.list_messages("t1", per_page=False)
    assert [m.id for m in page.items] == ["m1", "m2"]
    sequences = [m.sequence or 0 for m in page.items]
    assert sequences == sorted(sequences) and len(set(sequences)) == 2 and min(sequences) >= 1


def test_the_save_check_reads_the_messages_in_the_aggregate_s_own_pipeline() -> None:
    """secantusdb runs a ``$unionWith`` branch as a scan of its collection
    testing every document against the ``$in`` list: with the messages
    there, a save of 1,000 messages into a thread of 10^4 ran past the
    client's timeoutMS. The messages lead; the threads (a few ids) are the
    branch."""
    command = state_aggregate(["t1"], [f"m{i}" for i in range(1000)])
    assert command.collection == MESSAGES
    assert command.pipeline[0] == {"$match": {"_id": {"$in": [f"m{i}" for i in range(1000)]}}}
    unions = [stage["$unionWith"] for stage in command.pipeline if "$unionWith" in stage]
    assert [union["coll"] for union in unions] == [THREADS]
