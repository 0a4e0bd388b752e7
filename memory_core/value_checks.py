"""Checks of single values, shared by every other check of the core: ids
(R-ID), text, bools, ints, datetimes (R-TIME), lists of ids, and a mapping
given where a model is (:func:`coerce_model`, with Mastra's camelCase keys
as aliases). :mod:`memory_core.validation` re-exports the public ones.

Each function raises :class:`~memory_core.errors.ValidationError` naming the
field and the rule.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, fields, is_dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from memory_core.clock import TIME_MAX, TIME_MIN
from memory_core.errors import NotAListError, ValidationError
from memory_core.models import Message

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_ID_LENGTH",
    "check_bool",
    "check_datetime",
    "check_id",
    "check_id_list",
    "check_list",
    "check_non_negative_int",
    "check_text",
    "check_unicode",
    "coerce_model",
    "config_field",
    "path_name",
    "replace_fields",
    "unknown_field",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_ID_LENGTH = 256

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""The control characters an id may not hold (R-ID): C0 (U+0000-U+001F, NUL,
tab and newline among them), DEL (U+007F) and C1 (U+0080-U+009F), Unicode's
category ``Cc``. They print as nothing or move the cursor (``\x1b`` starts a
terminal escape), so an id holding one shows as another id in logs, tables
and the command line, and NUL is no text at all to some stores."""

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
    """R-ID: a str of 1-256 characters, not all whitespace, no control
    character (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F: NUL, tab,
    newline and escape among them), no lone surrogate. Returned unchanged
    (ids compare exactly).

    Raises:
        ValidationError: field ``field``, rule ``R-ID``, saying which rule
            and, for a control character, which one and where (``U+000A at
            index 3``).
    """
    if not isinstance(value, str):
        raise ValidationError(field, f"must be a str, got {type(value).__name__}", "R-ID")
    if not value or len(value) > MAX_ID_LENGTH:
        raise ValidationError(field, f"must be 1-{MAX_ID_LENGTH} characters, got {len(value)}", "R-ID")
    found = _CONTROL.search(value)
    if found is not None:
        raise ValidationError(
            field,
            f"must not contain control characters (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F), "
            f"found U+{ord(found.group()):04X} at index {found.start()}",
            "R-ID",
        )
    if value.isspace():
        raise ValidationError(field, "must not be all whitespace", "R-ID")
    check_unicode(value, field, "R-ID")
    return value


def check_unicode(value: str, field: Any, rule: str) -> None:
    """No lone surrogate in ``value`` (an ASCII str has none: ``isascii`` is a
    flag check, no scan). ``field`` is a name or a JSON walk's path
    (:func:`path_name`), turned into text only for the error.

    Raises:
        ValidationError: field ``path_name(field)``, rule ``rule``: a lone
            surrogate.
    """
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(path_name(field), "contains a lone surrogate (not valid Unicode text)", rule) from None


def path_name(path: Any) -> str:
    """The field name of a position in a JSON walk: ``path`` is a name (str)
    or ``(parent path, key)`` with a list index or a dict key, named
    ``parent[0]`` / ``parent['key']``. The walk builds tuples and only an
    error pays for the text."""
    if type(path) is str:
        return path
    parent, key = path
    return f"{path_name(parent)}[{key!r}]"


def check_text(value: Any, field: str) -> str:
    """A str that is valid Unicode (no lone surrogates)."""
    if type(value) is not str:
        raise ValidationError(field, f"must be a str, got {type(value).__name__}")
    check_unicode(value, field, "R-JSON")
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


def check_list(value: Any, field: str, items: str, shape: str, rule: str = "") -> Sequence[Any]:
    """``value`` when it is a list: any sequence but a str, bytes or a
    mapping (a str iterated is its characters, a mapping its keys), checked
    before anything is read or written; its items are the caller's to check.

    Args:
        value: what the caller gave.
        field: the argument's name (``turns``, ``ids``).
        items: what the list holds, for the message (``"ids"``).
        shape: the list to pass instead, for the message (``["<id>", ...]``).
        rule: the rule id the message names, or ``""``.

    Raises:
        NotAListError: ``value`` is one item, a str, a mapping or no sequence.
    """
    if type(value) is list or type(value) is tuple:  # skips the ABC checks below
        return cast(Sequence[Any], value)
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise NotAListError(field, items, NotAListError.given(value), shape, rule)
    return value


def check_id_list(value: Any, field: str) -> list[str]:
    """A list (or tuple) of ids (R-ID).

    Raises:
        NotAListError: one id (a str) or anything not a list: ``pass a
            list: ["<id>", ...]`` (rule R-ID).
        ValidationError: a bad id, named ``<field>[<index>]``.
    """
    value = check_list(value, field, "ids", '["<id>", ...]', "R-ID")
    return [check_id(item, f"{field}[{index}]") for index, item in enumerate(value)]


def replace_fields(obj: M, **changes: Any) -> M:
    """``dataclasses.replace`` for a model typed by a TypeVar (a checked
    copy of ``obj`` with ``changes``)."""
    return replace(obj, **changes)  # type: ignore[type-var]
