"""Unit tests of input validation in the core (rules R-ID, R-TIME, R-JSON,
R-PAGE, R-META, R-SORT, R-DATE): pure functions, no store involved."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core import ValidationError, codec, validation
from memory_core.clock import to_us
from memory_core.models import OrderBy
from memory_core.validation import (
    MAX_PER_PAGE,
    MAX_SEARCH_CHARS,
    check_date_range,
    check_datetime,
    check_id,
    check_json_object,
    check_meta_filter,
    check_order,
    check_page,
    check_search_text,
)


@pytest.mark.parametrize("bad", ["", " ", "\t\n", "a\x00b", "x" * 257, 5, None, b"id", "bad\ud83d"])
def test_check_id_rejects(bad: object) -> None:
    with pytest.raises(ValidationError) as info:
        check_id(bad, "thread_id")
    assert info.value.field == "thread_id"
    assert info.value.rule == "R-ID"


@pytest.mark.parametrize(
    ("bad", "found"),
    [
        ("a\nb", "U+000A at index 1"),
        ("\x1b[31mred", "U+001B at index 0"),
        ("tab\there", "U+0009 at index 3"),
        ("del\x7f", "U+007F at index 3"),
        ("c1\x85", "U+0085 at index 2"),
        ("a\x00b", "U+0000 at index 1"),
    ],
)
def test_check_id_refuses_control_characters_naming_field_rule_and_character(bad: str, found: str) -> None:
    """Issue 26: a newline, an escape (which recolours a terminal that prints
    the id) or a C1 control was a valid id; only NUL was refused."""
    with pytest.raises(ValueError) as info:
        check_id(bad, "thread_id")
    error = info.value
    assert isinstance(error, ValidationError) and error.field == "thread_id" and error.rule == "R-ID"
    assert "control character" in error.reason and found in error.reason, error.reason


@pytest.mark.parametrize("good", ["a", "team-a", "TEAM-A", "team a", "x" * 256, "ñandú-1", "42"])
def test_check_id_accepts_exactly(good: str) -> None:
    assert check_id(good, "id") == good


def test_check_datetime_converts_to_utc_and_keeps_microseconds() -> None:
    zone = timezone(timedelta(hours=2))
    value = check_datetime(datetime(2025, 3, 9, 10, 30, 0, 123456, tzinfo=zone), "t")
    assert value == datetime(2025, 3, 9, 8, 30, 0, 123456, tzinfo=UTC)
    assert value.tzinfo is UTC
    assert check_datetime("2025-03-09T08:30:00", "t") == datetime(2025, 3, 9, 8, 30, tzinfo=UTC)
    assert check_datetime("2025-03-09T08:30:00.000001Z", "t").microsecond == 1


@pytest.mark.parametrize("bad", ["1899-12-31T23:59:59.999999Z", "2200-01-01T00:00:00Z", "yesterday", 1700000000, None])
def test_check_datetime_rejects(bad: object) -> None:
    with pytest.raises(ValidationError, match="R-TIME"):
        check_datetime(bad, "created_at")


def test_check_datetime_range_edges() -> None:
    assert check_datetime("1900-01-01T00:00:00Z", "t").year == 1900
    assert check_datetime("2199-12-31T23:59:59.999999Z", "t").year == 2199


@pytest.mark.parametrize(
    "bad",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": 2**63},
        {"x": -(2**63) - 1},
        {"x": (1, 2)},
        {"x": {1, 2}},
        {1: "int key"},
        {"x": "lone \udc00"},
        {"lone \ud800": 1},
        {"x": datetime(2025, 1, 1)},
        [1, 2],
    ],
)
def test_check_json_object_rejects(bad: object) -> None:
    with pytest.raises(ValidationError, match="R-JSON"):
        check_json_object(bad, "metadata")


def test_check_json_object_accepts_odd_keys_and_edges() -> None:
    value = {"": 1, "a.b": 1.0, "$x": True, "n": None, "deep": {"l": [1, {"m": -(2**63)}]}, "big": 2**63 - 1}
    assert check_json_object(value, "metadata") is value


@pytest.mark.parametrize(
    ("page", "per_page"),
    [
        (-1, 10),
        (True, 10),
        (0, True),
        (0, -1),
        (0, 2.5),
        (0, "3"),
        (1, False),
        ("0", 10),
        (2**62, 4),
        (0, MAX_PER_PAGE + 1),
        (0, 2**63 - 1),
    ],
)
def test_check_page_rejects(page: object, per_page: object) -> None:
    with pytest.raises(ValidationError, match="R-PAGE"):
        check_page(page, per_page)


def test_check_page_offsets() -> None:
    assert check_page(3, 7) == (3, 7, 21)
    assert check_page(0, False) == (0, False, 0)
    assert check_page(5, 0) == (5, 0, 0)
    assert check_page(2, MAX_PER_PAGE) == (2, MAX_PER_PAGE, 2 * MAX_PER_PAGE)


def test_check_search_text_limit() -> None:
    assert check_search_text("x" * MAX_SEARCH_CHARS) == "x" * MAX_SEARCH_CHARS
    for bad in ("x" * (MAX_SEARCH_CHARS + 1), "lone \udc00", b"bytes", None):
        with pytest.raises(ValidationError) as info:
            check_search_text(bad)
        assert info.value.field == "vector_search_string"


@pytest.mark.parametrize(
    "bad",
    [
        {"owner": {"$ne": ""}},
        {"$where": "1"},
        {"a.b": 1},
        {"k') OR 1=1 --": "x"},
        {'k"]': 1},
        {"user-id": 1},
        {"__proto__": 1},
        {"x" * 129: 1},
        {"k": [1]},
        {"k": float("nan")},
        "owner=alice",
    ],
)
def test_check_meta_filter_rejects(bad: object) -> None:
    with pytest.raises(ValidationError, match="R-META"):
        check_meta_filter(bad, "filter.metadata")


def test_check_meta_filter_kinds() -> None:
    conditions = check_meta_filter({"n": 5, "f": 1.5, "b": True, "s": "5", "z": None}, "m")
    assert [(c.key, c.kind) for c in conditions] == [
        ("n", "number"),
        ("f", "number"),
        ("b", "bool"),
        ("s", "str"),
        ("z", "null"),
    ]


@pytest.mark.parametrize(
    "bad",
    [OrderBy("created_at; DROP TABLE threads", "ASC"), OrderBy("created_at", "ASC, 1"), {"field": "id"}, "created_at"],
)
def test_check_order_rejects(bad: object) -> None:
    with pytest.raises(ValidationError, match="R-SORT"):
        check_order(bad, ("created_at",), OrderBy())


def test_check_order_case_and_camel() -> None:
    assert check_order({"field": "createdAt", "direction": "desc"}, ("created_at",), OrderBy()) == ("created_at", True)
    assert check_order(None, ("created_at",), OrderBy()) == ("created_at", False)


def test_date_range_exclusive_bounds_move_one_microsecond() -> None:
    start = datetime(2025, 3, 9, 8, 30, tzinfo=UTC)
    lo, hi = check_date_range({"start": start, "end": start, "start_exclusive": True, "endExclusive": True})
    assert lo == to_us(start) + 1
    assert hi == to_us(start) - 1
    with pytest.raises(ValidationError):
        check_date_range({"start": start, "start_exclusive": 1})


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8")),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(_json_values)
def test_json_size_bound_is_never_below_the_encoded_size(value: object) -> None:
    """R-SIZE is encoded exactly only when this bound could pass the limit, so
    it must never undercount (control characters, non-BMP text, long floats)."""
    bound = validation._check_json_value(value, "v", 0)
    assert bound >= len(codec.dumps(value).encode("utf-8"))


class _DayOffset(tzinfo):
    """A tzinfo whose offset is a whole day (datetime refuses it)."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=24)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)

    def tzname(self, dt: datetime | None) -> str:
        return "+24:00"


def test_datetime_with_an_impossible_utc_offset_is_a_validation_error() -> None:
    with pytest.raises(ValidationError) as raised:
        check_datetime(datetime(2025, 1, 1, tzinfo=_DayOffset()), "created_at")
    assert raised.value.field == "created_at" and raised.value.rule == "R-TIME"
