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
import pprint
from datetime import datetime
from typing import Any

from memory_core.clock import to_us

__all__ = ["Failed", "assert_same", "canonical", "capture", "json_identical"]

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


def assert_same(actual: Any, expected: Any, what: str = "answer") -> None:
    """Fail unless ``actual`` and ``expected`` are the same answer.

    Args:
        actual: the adapter's answer (value or :class:`Failed`).
        expected: the reference answer.
        what: names the operation in the failure message.

    Raises:
        AssertionError: they differ; the message shows both.
    """
    if canonical(actual) == canonical(expected):
        return
    raise AssertionError(
        f"{what}: the adapter and the reference store disagree\n"
        f"adapter:   {pprint.pformat(actual, width=110)}\n"
        f"reference: {pprint.pformat(expected, width=110)}"
    )


async def capture(awaitable: Any) -> Any:
    """Await ``awaitable``; return its value, or :class:`Failed` if it raised
    an ``Exception``."""
    try:
        return await awaitable
    except Exception as exc:
        return Failed(exc)
