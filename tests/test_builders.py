"""The fast record builders give the very objects the dataclass constructors give."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError, asdict, dataclass, fields, replace
from datetime import UTC, datetime, timedelta

import pytest

from memory_core.builders import build_message, build_resource, build_thread, builder
from memory_core.clock import to_us
from memory_core.errors import ValidationError
from memory_core.models import Message, Resource, StoredTime, Thread
from memory_core.validation import check_message

WHEN = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def test_build_message_is_a_message_equal_to_the_constructed_one() -> None:
    built = build_message("m1", "t1", "user", {"parts": [1]}, "r1", "v2", {"k": "v"}, WHEN, 7)
    made = Message("m1", "t1", "user", {"parts": [1]}, "r1", "v2", {"k": "v"}, WHEN, 7)
    assert type(built) is Message
    assert built == made and repr(built) == repr(made)
    assert built.sequence == 7
    assert replace(built, content="x").content == "x"
    assert pickle.loads(pickle.dumps(built)) == made
    assert copy.deepcopy(built) == made


def test_built_records_stay_frozen() -> None:
    built = build_message("m1", "t1", "user", "hi", "r1", "v2", {}, WHEN, 1)
    with pytest.raises(FrozenInstanceError):
        built.content = "changed"  # type: ignore[misc]
    thread = build_thread("t1", "r1", "title", {}, WHEN, WHEN, None)
    assert thread == Thread("t1", "r1", "title", {}, WHEN, WHEN, None)
    with pytest.raises(FrozenInstanceError):
        thread.title = "x"  # type: ignore[misc]
    resource = build_resource("r1", "memory", {}, WHEN, WHEN)
    assert resource == Resource("r1", "memory", {}, WHEN, WHEN)


def test_builder_takes_every_field_positionally_and_nothing_else() -> None:
    with pytest.raises(TypeError):
        build_message("m1", "t1", "user", "hi")  # type: ignore[call-arg]  # no defaults: mypy and the call refuse it


def test_builder_refuses_classes_it_cannot_build() -> None:
    @dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:  # a builder would skip this check
            raise AssertionError

    with pytest.raises(TypeError, match="slotted dataclass"):
        builder(NoSlots)
    with pytest.raises(TypeError, match="__post_init__"):
        builder(Checked)


def test_a_builder_signature_must_name_the_fields_in_order() -> None:
    """A declaration that drifts from the dataclass (a field renamed, two
    swapped) fails at import, not at a call the type checker passed."""

    @dataclass(frozen=True, slots=True)
    class Pair:
        a: int
        b: str

    def swapped(b: str, a: int, /) -> Pair:
        raise NotImplementedError

    def matching(a: int, b: str, /) -> Pair:
        raise NotImplementedError

    with pytest.raises(TypeError, match="not its fields"):
        builder(Pair, swapped)
    assert builder(Pair, matching)(1, "x") == Pair(1, "x")


def test_stored_times_read_as_the_datetimes_they_hold() -> None:
    us = to_us(WHEN)
    stored = build_thread("t1", "r1", "", {}, StoredTime(us), StoredTime(us + 1), StoredTime(us + 2))
    made = Thread("t1", "r1", "", {}, WHEN, WHEN + timedelta(microseconds=1), WHEN + timedelta(microseconds=2))
    assert stored == made and repr(stored) == repr(made)
    assert type(stored.created_at) is datetime and stored.created_at is stored.created_at  # decoded once, kept
    for lazy in (
        build_message("m1", "t1", "user", "hi", "r1", "v2", {}, StoredTime(us), 1),
        build_resource("r1", None, {}, StoredTime(us), StoredTime(us)),
        build_thread("t1", "r1", "", {}, StoredTime(us), StoredTime(us), None),
    ):
        # every way of reading the record sees datetimes, before any field was read
        for copied in (pickle.loads(pickle.dumps(lazy)), copy.copy(lazy), replace(lazy), asdict(lazy)):
            values = copied.values() if isinstance(copied, dict) else [getattr(copied, f.name) for f in fields(lazy)]
            assert StoredTime not in {type(v) for v in values}
        assert lazy.created_at == WHEN


def test_an_int_time_from_a_caller_stays_an_int_and_is_refused() -> None:
    message = Message("m1", "t1", "user", "hi", created_at=1_700_000_000_000_000)  # type: ignore[arg-type]
    assert type(message.created_at) is int  # type: ignore[comparison-overlap]
    with pytest.raises(ValidationError, match="created_at"):
        check_message(message, "messages[0]")
