"""Exact comparison of answers: types kept, sequences and cursor text ignored.

Python's ``==`` says ``1 == 1.0 == True``; R-JSON says those round-trip as
different values. :func:`canonical` turns any answer (records, pages, JSON,
datetimes, exceptions) into a nested tuple that keeps JSON types apart, so
two answers are "the same" only when a user could not tell them apart.

Ignored on purpose: ``Message.sequence`` (a per-store counter: only its
order matters, and that shows in item order) and the text of
``next_cursor`` (it encodes store-specific sequence numbers; only whether
there is one is compared).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from memory_core.clock import to_us

__all__ = [
    "ABSENT",
    "Failed",
    "assert_same",
    "brief",
    "canonical",
    "capture",
    "describe_difference",
    "first_difference",
    "json_identical",
    "summary",
]

_IGNORED_FIELDS = frozenset({"sequence"})


@dataclasses.dataclass(frozen=True, slots=True)
class Failed:
    """An operation that raised instead of answering.

    Attributes:
        error: the exception raised.
    """

    error: BaseException

    def __repr__(self) -> str:
        return f"raised {type(self.error).__name__}({self.error})"


def canonical(value: Any) -> Any:
    """A hashable, type-exact form of ``value`` for comparison.

    Args:
        value: a record, Page, list, dict, JSON scalar, datetime, exception
            or :class:`Failed`.

    Returns:
        Nested tuples tagged with type names: ``1`` -> ``("int", 1)``,
        ``1.0`` -> ``("float", "1.0")``, an aware datetime ->
        ``("datetime", µs, utc offset seconds)``.
    """
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, datetime):
        offset = value.utcoffset()
        if offset is None:
            return ("naive-datetime", value.isoformat())
        return ("datetime", to_us(value), offset.total_seconds())
    if isinstance(value, Failed):
        return ("raised", type(value.error).__name__)
    if isinstance(value, BaseException):
        return ("raised", type(value).__name__)
    if isinstance(value, list | tuple):
        return ("list", tuple(canonical(item) for item in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((("key", repr(k)), canonical(v)) for k, v in value.items())))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = []
        for field in dataclasses.fields(value):
            if field.name in _IGNORED_FIELDS:
                continue
            item = getattr(value, field.name)
            if field.name == "next_cursor":
                parts.append((field.name, ("has-cursor", item is not None)))
            else:
                parts.append((field.name, canonical(item)))
        return (type(value).__name__, tuple(parts))
    return ("other", type(value).__name__, repr(value))


def json_identical(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal *and* of the same JSON types throughout."""
    return bool(canonical(a) == canonical(b))


class _Marker:
    """A placeholder shown in a difference (its repr is its text)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


ABSENT = _Marker("<absent>")
"""Stands for "no such item or key" on one side of a difference."""
_CURSOR = _Marker("a cursor")
_SHOWN_CHARS = 200
_SHOWN_IDS = 12


def _compared_fields(value: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(value) if f.name not in _IGNORED_FIELDS]


def _field(value: Any, name: str) -> Any:
    """A record's or page's field as compared: ``next_cursor`` by presence only."""
    item = getattr(value, name)
    if name == "next_cursor":
        return _CURSOR if item is not None else None
    return item


def _same_dataclass(a: Any, b: Any) -> bool:
    return dataclasses.is_dataclass(a) and not isinstance(a, type) and type(a) is type(b)


def first_difference(actual: Any, expected: Any, path: str = "answer") -> tuple[str, Any, Any] | None:
    """Where two answers first differ, by :func:`canonical` comparison.

    Args:
        actual: one answer (the adapter's).
        expected: the other (the reference store's).
        path: the name of the whole answer in the returned path.

    Returns:
        None when they are the same; else ``(path, actual_part,
        expected_part)`` for the first differing leaf, e.g.
        ``("answer.items[2].id", "m3", "m4")``. A list shorter on one side
        gives the first missing index with :data:`ABSENT` on that side.
    """
    if canonical(actual) == canonical(expected):
        return None
    if isinstance(actual, list | tuple) and isinstance(expected, list | tuple):
        for index, (a, b) in enumerate(zip(actual, expected, strict=False)):
            same_id = getattr(a, "id", ABSENT) == getattr(b, "id", ABSENT) != ABSENT
            where = f"{path}[{index}, id={a.id!r}]" if same_id else f"{path}[{index}]"
            if (found := first_difference(a, b, where)) is not None:
                return found
        index = min(len(actual), len(expected))
        return (
            f"{path}[{index}]",
            actual[index] if index < len(actual) else ABSENT,
            expected[index] if index < len(expected) else ABSENT,
        )
    if isinstance(actual, dict) and isinstance(expected, dict):
        for key in sorted(actual.keys() | expected.keys(), key=repr):
            where = f"{path}[{key!r}]"
            if key not in actual or key not in expected:
                return (where, actual.get(key, ABSENT), expected.get(key, ABSENT))
            if (found := first_difference(actual[key], expected[key], where)) is not None:
                return found
    if _same_dataclass(actual, expected):
        for name in _compared_fields(actual):
            if (found := first_difference(_field(actual, name), _field(expected, name), f"{path}.{name}")) is not None:
                return found
    return (path, actual, expected)


def _text(value: Any) -> str:
    """``repr``, but aware datetimes in ISO form (naive ones marked)."""
    if isinstance(value, datetime):
        return value.isoformat() + ("" if value.utcoffset() is not None else " (naive)")
    return repr(value)


def brief(value: Any, limit: int = _SHOWN_CHARS) -> str:
    """:func:`summary` of ``value``, cut to ``limit`` characters."""
    text = summary(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} chars)"


def _records(value: Any) -> list[Any] | None:
    """The records (dataclasses with an ``id``) of a list or of a Page's
    items; None for any other value."""
    items = getattr(value, "items", None) if dataclasses.is_dataclass(value) else value
    if isinstance(items, list) and all(dataclasses.is_dataclass(i) and hasattr(i, "id") for i in items):
        return items
    return None


def _ids(items: list[Any]) -> str:
    shown = [item.id for item in items[:_SHOWN_IDS]]
    more = f" +{len(items) - _SHOWN_IDS} more" if len(items) > _SHOWN_IDS else ""
    return f"{len(items)} {shown}{more}"


def summary(value: Any) -> str:
    """A one-line form of an answer for logs: a Page by its items' ids
    (``Page(ids=['m1', 'm2'], total=5, page=0, per_page=2, has_more=True,
    next_cursor=a cursor)``), a non-empty list of records by ids
    (``[Message 'm1', 'm2']``), a record with ISO datetimes and without its
    ``sequence``, anything else by ``repr``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, "id"):
        shown = ", ".join(f"{name}={_text(getattr(value, name))}" for name in _compared_fields(value))
        return f"{type(value).__name__}({shown})"
    records = _records(value)
    if records is None or not (records or dataclasses.is_dataclass(value)):
        return _text(value)
    ids = [item.id for item in records]
    if not dataclasses.is_dataclass(value):
        return f"[{type(records[0]).__name__} {', '.join(map(repr, ids))}]"
    scalars = [f"{name}={_field(value, name)!s}" for name in _compared_fields(value) if name != "items"]
    return f"{type(value).__name__}(ids={ids}, {', '.join(scalars)})"


def describe_difference(
    actual: Any, expected: Any, sides: tuple[str, str] = ("adapter", "reference"), root: str = "answer"
) -> list[str]:
    """A few lines saying how two answers differ (nothing when they are the same).

    The first differing leaf with both values; for record lists (a Page's
    items, a snapshot's threads and messages ...), the counts and ids on each
    side when the ids differ; for records and pages, every top-level field
    that differs. Never both whole answers.

    Args:
        actual: one answer (shown as ``sides[0]``).
        expected: the other (``sides[1]``).
        sides: names of the two sides.
        root: the name of the whole answer in paths (``answer.items[0].id``).
    """
    found = first_difference(actual, expected, root)
    if found is None:
        return []
    path, a, b = found
    width = max(map(len, sides)) + 1
    lines = [
        f"first difference at {path}:",
        f"  {sides[0] + ':':<{width}} {brief(a)}",
        f"  {sides[1] + ':':<{width}} {brief(b)}",
    ]
    record = _same_dataclass(actual, expected)  # a Page, a record, a snapshot ...
    parts = [("items", actual, expected)]
    if record:
        parts = [(name, _field(actual, name), _field(expected, name)) for name in _compared_fields(actual)]
    differing = []
    for name, a_part, b_part in parts:
        a_items, b_items = _records(a_part), _records(b_part)
        if a_items is not None and b_items is not None and [i.id for i in a_items] != [i.id for i in b_items]:
            lines.append(f"{name}: {sides[0]} {_ids(a_items)}; {sides[1]} {_ids(b_items)}")
        if record and first_difference(a_part, b_part) is not None:
            scalar = not isinstance(a_part, list | tuple | dict) and not dataclasses.is_dataclass(a_part)
            differing.append(f"{name} {brief(a_part, 40)} / {brief(b_part, 40)}" if scalar else name)
    if len(differing) > 1:
        lines.append(f"fields that differ ({sides[0]} / {sides[1]}): {', '.join(differing)}")
    return lines


def assert_same(
    actual: Any, expected: Any, what: object = "answer", *, sides: tuple[str, str] = ("adapter", "reference store")
) -> None:
    """Fail unless ``actual`` and ``expected`` are the same answer.

    Args:
        actual: the adapter's answer (value or :class:`Failed`).
        expected: the reference answer.
        what: names the operation (with its arguments) in the message;
            turned into text with ``str()`` only on failure.
        sides: what ``actual`` and ``expected`` are, for the message.

    Raises:
        AssertionError: they differ; the message names ``what`` and shows
            :func:`describe_difference` (where they first differ, counts and
            ids of listed items), not the whole answers.
    """
    __tracebackhide__ = True  # pytest shows the caller, not this helper
    lines = describe_difference(actual, expected, sides)
    if lines:
        body = "\n".join(f"  {line}" for line in lines)
        raise AssertionError(f"{what}: the {sides[0]} and the {sides[1]} disagree\n{body}")


async def capture(awaitable: Any) -> Any:
    """Await ``awaitable``; return its value, or :class:`Failed` if it raised
    an ``Exception``."""
    try:
        return await awaitable
    except Exception as exc:
        return Failed(exc)
