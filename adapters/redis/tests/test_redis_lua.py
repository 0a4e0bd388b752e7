"""The Lua helpers against their Python definitions, on a real server:
the shallow JSON merge must equal ``codec.dumps({**old, **patch})`` byte for
byte (R-JSON: no decoding, so ints, floats and key order survive), and the
scripts' time keys must equal :func:`time_key`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_core.codec import dumps

from memory_core_redis._keys import Layout, time_key
from memory_core_redis._scripts import script_text
from memory_core_redis.storage import _members

# One worker runs this module (its module-scoped fixture once): the README's `--dist loadgroup`.
pytestmark = pytest.mark.xdist_group("redis_lua")

LIB = script_text("get_threads").split("\n-- ARGV: thread ids.")[0]

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=8) | st.sampled_from(
    ['"', "\\", '\\"', "{", "}", "[", "]", ",", ":", '","', '"}', "\u2028", "é", "👋🏽", ""]
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4), max_leaves=12
)
objects = st.dictionaries(text, values, max_size=6)


@pytest.fixture(scope="module")
def client(redis_standalone: str) -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(redis_standalone, decode_responses=True)
    yield conn
    conn.close()


def lua(client: redis.Redis, body: str, *args: Any) -> Any:
    return client.eval(LIB + "\n" + body, 1, "{lua-test}:", *args)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=objects, patch=objects)
def test_merge_equals_python_shallow_merge(client: redis.Redis, old: dict[str, Any], patch: dict[str, Any]) -> None:
    merged = lua(client, "return merge(ARGV[1], {unpack(ARGV, 2)})", dumps(old), *_members(patch))
    assert merged == dumps({**old, **patch})


def test_merge_keeps_number_types_and_order(client: redis.Redis) -> None:
    old = {"z": 1, "a": 1.0, "big": 2**63 - 1, "f": 1e-7, "n": None, "nested": {"x": [1, 2.5, {"y": "}"}]}}
    merged = lua(client, "return merge(ARGV[1], {unpack(ARGV, 2)})", dumps(old), *_members({"a": 2, "new": 0.1}))
    assert merged == (
        '{"z":1,"a":2,"big":9223372036854775807,"f":1e-07,"n":null,"nested":{"x":[1,2.5,{"y":"}"}]},"new":0.1}'
    )


def test_merge_of_a_large_value_is_intact(client: redis.Redis) -> None:
    old = {"format": 2, "content": "x" * 5_000_000 + '"\\', "parts": [{"type": "text", "text": "a"}]}
    merged = lua(client, "return merge(ARGV[1], {unpack(ARGV, 2)})", dumps(old), *_members({"format": 3}))
    assert merged == dumps({**old, "format": 3})


@pytest.mark.parametrize(
    "us", [-2208988800000001, -2208988800000000, -1, 0, 1, 1735689600000000, 7258118399999999, 7258118400000000]
)
def test_lua_time_key_matches_python(client: redis.Redis, us: int) -> None:
    assert lua(client, "return tkey(tonumber(ARGV[1]))", us) == time_key(us)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=text.filter(bool), resource_id=text)
def test_lua_resource_base_matches_the_layout(client: redis.Redis, prefix: str, resource_id: str) -> None:
    # solo.lua finds a thread's slot from the directory's resource id
    layout = Layout(prefix)
    assert lua(client, "return resource_base(ARGV[1], ARGV[2])", layout.store, resource_id) == layout.resource(
        resource_id
    )
