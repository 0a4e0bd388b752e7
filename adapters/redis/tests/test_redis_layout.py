"""Key layout units (no server): order-preserving encodings, R-META forms,
hash tags and URL parsing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_core.clock import to_us
from memory_core.errors import ValidationError
from memory_core.query import MetaCondition, meta_kind

from memory_core_redis import RedisStorage
from memory_core_redis._keys import Layout, canon, escape, message_member, thread_member, time_key, time_of_key
from memory_core_redis._url import parse_url

MIN_US = to_us(datetime(1900, 1, 1, tzinfo=UTC)) - 1
MAX_US = to_us(datetime(2199, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) + 1
times = st.integers(MIN_US, MAX_US)
ids = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20)


def hash_tag(key: str) -> str:
    """What Redis Cluster hashes: the text between the first '{' and the
    first '}' after it, when non-empty; else the whole key."""
    start = key.find("{")
    if start >= 0:
        end = key.find("}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


@given(times, times)
def test_time_key_orders_like_the_integers(a: int, b: int) -> None:
    assert len(time_key(a)) == 17
    assert (time_key(a) < time_key(b)) == (a < b)
    assert time_of_key(time_key(a)) == a  # the inverse (a thread save reads last_message_at from its key)


@given(times, st.integers(1, 2**62), ids, times, st.integers(1, 2**62), ids)
def test_message_members_sort_by_created_then_sequence(c1: int, s1: int, m1: str, c2: int, s2: int, m2: str) -> None:
    if s1 == s2:
        return  # sequence numbers are unique in a store
    a, b = message_member(c1, s1, m1), message_member(c2, s2, m2)
    # Redis compares members as bytes (memcmp).
    assert (a.encode() < b.encode()) == ((c1, s1) < (c2, s2))
    assert a[39:] == m1


@given(times, ids, times, ids)
def test_thread_members_sort_by_time_then_id_code_points(t1: int, i1: str, t2: int, i2: str) -> None:
    a, b = thread_member(t1, i1), thread_member(t2, i2)
    if (t1, i1) != (t2, i2):
        assert (a.encode() < b.encode()) == ((t1, i1) < (t2, i2))
    assert a[18:] == i1


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.sampled_from([0, 1, 5, 5.0, -0.0, 0.0, 1.5, "5", "1", True, False, 2**53 + 1, float(2**53), 1e16]),
)


@given(scalars, scalars)
def test_canon_equality_is_r_meta_matching(stored: object, wanted: object) -> None:
    kind = meta_kind(wanted)
    assert kind is not None
    condition = MetaCondition("k", kind, wanted)  # type: ignore[arg-type]
    assert (canon(stored) == canon(wanted)) == condition.matches({"k": stored})


def test_canon_of_containers_is_none() -> None:
    assert canon([1]) is None
    assert canon({"a": 1}) is None


@given(st.text(min_size=1, max_size=12), ids)
def test_every_key_of_a_resource_shares_one_well_formed_tag(prefix: str, resource_id: str) -> None:
    layout = Layout(prefix)
    base = layout.resource(resource_id)
    keys = [base + "r", base + "t:" + "}{x", base + "m:{", base + "tm:a}b", base + "rm", base + "tc"]
    tags = {hash_tag(k) for k in keys}
    assert tags == {escape(prefix, colon=True) + ":" + escape(resource_id)}
    assert hash_tag(layout.store + "msg") == escape(prefix, colon=True)


def test_distinct_prefixes_and_resources_get_distinct_tags() -> None:
    a, b = Layout("a"), Layout("a:b")
    assert a.resource("b:x") != b.resource("x")
    assert a.store != b.store
    assert hash_tag(a.resource("b}")) != hash_tag(a.resource("b"))


@pytest.mark.parametrize(
    ("url", "driver", "cluster", "prefix"),
    [
        ("redis://localhost:6379/0", "redis://localhost:6379/0", False, None),
        ("redis://localhost:6379/", "redis://localhost:6379/", False, None),
        ("redis://localhost:6379/15", "redis://localhost:6379/15", False, None),
        ("rediss://u:p@h:1/2?prefix=app&socket_timeout=3", "rediss://u:p@h:1/2?socket_timeout=3", False, "app"),
        ("unix:///tmp/r.sock?db=1", "unix:///tmp/r.sock?db=1", False, None),
        ("redis+cluster://h:7000", "redis://h:7000", True, None),
        ("redis://h:7000?cluster=true", "redis://h:7000", True, None),
        ("REDISS+CLUSTER://h:7000?cluster=false", "rediss://h:7000", True, None),
    ],
)
def test_parse_url(url: str, driver: str, cluster: bool, prefix: str | None) -> None:
    target = parse_url(url)
    assert (target.driver_url, target.cluster, target.prefix) == (driver, cluster, prefix)


@pytest.mark.parametrize(
    "url",
    ["http://h", "redis://h?cluster=maybe", "redis://h?prefix=", "redis+cluster://h/3", "unix:///s?cluster=1"],
)
def test_parse_url_rejects(url: str) -> None:
    with pytest.raises(ValidationError):
        parse_url(url)


@pytest.mark.parametrize("url", ["redis://h:6379/abc", "rediss://h/0/1", "redis://h/-1", "redis://h/\uff11"])
def test_a_database_path_that_is_not_a_number_is_refused(url: str) -> None:
    # redis-py ignores such a path and writes to database 0.
    with pytest.raises(ValidationError, match="must be a number"):
        parse_url(url)


@pytest.mark.parametrize("namespace", [5, "", b"ns"])
def test_a_bad_namespace_is_named_as_given(namespace: object) -> None:
    with pytest.raises(ValidationError) as caught:
        RedisStorage.from_url("redis://h:6379/0", namespace=namespace)  # type: ignore[arg-type]
    assert caught.value.field == "namespace"
