"""The records of the ``memory-core/jsonl`` format: model <-> JSON object,
the canonical line encoding, and decoding a line with its line number in
every error."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memory_core.errors import ValidationError
from memory_core.models import Message, Resource, Thread
from memory_core.validation import check_message, check_resource, check_thread
from memory_core.wording import counted

__all__ = [
    "COPY_IT_WHOLE",
    "FIX_THE_INPUT",
    "FORMAT",
    "VERSION",
    "Record",
    "TransferError",
    "decode",
    "encode",
    "header",
    "message_record",
    "resource_record",
    "thread_record",
]

FORMAT = "memory-core/jsonl"
"""The ``format`` field of the header line."""

VERSION = 1
"""The format version this code writes and reads."""

Record = Thread | Message | Resource


class TransferError(ValidationError):
    """A line of an export that cannot be imported (malformed JSON, an unknown
    kind or field, a record that breaks a storage rule, records out of
    order), or a file without its trailer. ``field`` is ``"line N"`` (1-based)
    or ``"input"``; nothing of the offending record has been written.

    The message ends with one next step: ``next_step``, by default
    :data:`FIX_THE_INPUT` (a truncated file names its own, copying it
    whole again).

    Attributes:
        what: what is wrong, without what was kept and the next step (to
            quote it inside another message).
        written: what the import wrote before it stopped, per kind (empty
            outside an import, or when nothing was written). Those records
            stay; importing the corrected file again skips them. The message
            says so too, so a reader never takes the error for a rollback.
    """

    def __init__(
        self,
        field: str,
        reason: str,
        rule: str = "",
        written: dict[str, int] | None = None,
        *,
        next_step: str = "",
    ) -> None:
        self.written = {kind: count for kind, count in (written or {}).items() if count}
        self.what = reason
        if self.written:
            reason = f"{reason} (written before it, and kept: {counted(self.written)}; importing again skips them)"
        super().__init__(field, f"{reason}; {next_step or FIX_THE_INPUT}", rule)


FIX_THE_INPUT = "fix the input, or write it again with memory-core export"
"""The next step a :class:`TransferError` names by default (the input is at fault)."""

_JSON_TYPES: dict[type, str] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}
"""JSON's names of the values a line may hold that are not an object."""

COPY_IT_WHOLE = "copy the whole file again"
"""The next step for an export cut short (a write or copy that stopped early)."""


def encode(record: dict[str, Any]) -> str:
    """The canonical text of a record: JSON with sorted keys, no spaces, UTF-8
    characters kept (``ensure_ascii=False``), no NaN/inf. Lines are written in
    it and digests are taken over it, so two stores holding the same data
    give byte-equal exports."""
    return json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"), sort_keys=True)


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="microseconds")


def header(messages: int) -> dict[str, Any]:
    """The first line: format, version and the number of message records that follow."""
    return {"kind": "header", "format": FORMAT, "version": VERSION, "messages": messages}


def resource_record(resource: Resource) -> dict[str, Any]:
    """A stored resource as a record (times as ISO-8601 UTC with microseconds)."""
    return {
        "kind": "resource",
        "id": resource.id,
        "working_memory": resource.working_memory,
        "metadata": resource.metadata,
        "created_at": _time(resource.created_at),
        "updated_at": _time(resource.updated_at),
    }


def thread_record(thread: Thread) -> dict[str, Any]:
    """A stored thread as a record; ``last_message_at`` is left out (the
    destination derives it from the messages)."""
    return {
        "kind": "thread",
        "id": thread.id,
        "resource_id": thread.resource_id,
        "title": thread.title,
        "metadata": thread.metadata,
        "created_at": _time(thread.created_at),
        "updated_at": _time(thread.updated_at),
    }


def message_record(message: Message) -> dict[str, Any]:
    """A stored message as a record; ``sequence`` is left out (counters are
    per store: the record's place in the file carries R-ORDER)."""
    return {
        "kind": "message",
        "id": message.id,
        "thread_id": message.thread_id,
        "resource_id": message.resource_id,
        "role": message.role,
        "type": message.type,
        "content": message.content,
        "metadata": message.metadata,
        "created_at": _time(message.created_at),
    }


# Fields a record must carry although the storage API has defaults for them:
# an import keeps times and owners exactly, never "now" or "the thread's".
_REQUIRED = {
    "resource": ("created_at", "updated_at"),
    "thread": ("created_at", "updated_at"),
    "message": ("created_at", "resource_id"),
}


def decode(line: str | bytes, number: int) -> tuple[str, dict[str, Any], Record | None]:
    """Parse and validate one line.

    Args:
        line: the line's text (a trailing newline is allowed).
        number: its 1-based line number, named in every error.

    Returns:
        ``(kind, object, model)``: ``model`` is the validated Thread, Message
        or Resource (times aware UTC) for record kinds, None for ``header``
        and ``trailer``.

    Raises:
        TransferError: not UTF-8 (or cut off inside a character: a
            truncated file), not a JSON object, an unknown ``kind``, a record that
            the storage validation refuses (R-ID, R-JSON, R-TIME, R-SIZE ...),
            or a record without its times (or a message without its
            ``resource_id``): an import never lets the destination pick them.
    """
    where = f"line {number}"
    try:
        # The format is UTF-8; json.loads would guess UTF-16/32 from bytes.
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # the bytes stop inside a character
            raise TransferError(
                where,
                f"cut off inside a UTF-8 character (byte {exc.start + 1} of the line starts one that never ends): "
                "the export is truncated, a write or copy that stopped early",
                next_step=COPY_IT_WHOLE,
            ) from None
        raise TransferError(where, f"not UTF-8 text: {exc.reason} at byte {exc.start + 1}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TransferError(
            where, f"not valid JSON: {exc.msg[:1].lower()}{exc.msg[1:]} at column {exc.colno}"
        ) from None
    except ValueError:  # nested too deep for the parser, a number too long to read
        raise TransferError(where, "not valid JSON that can be read") from None
    if not isinstance(value, dict):
        raise TransferError(where, f"must be a JSON object, got {_JSON_TYPES.get(type(value), 'another value')}")
    kind = value.get("kind")
    if kind in ("header", "trailer"):
        return kind, value, None
    if "kind" not in value:
        raise TransferError(where, 'not a memory-core record: it has no "kind"')
    if kind not in _REQUIRED:
        raise TransferError(
            where, f"unknown record kind {json.dumps(kind)} (header, resource, thread, message, trailer)"
        )
    fields = {key: item for key, item in value.items() if key != "kind"}
    for name in _REQUIRED[kind]:
        if fields.get(name) is None:
            raise TransferError(where, f"{kind} record needs {name}")
    try:
        model: Record
        if kind == "message":
            model = check_message(fields, "message")
        elif kind == "thread":
            model = check_thread(fields, "thread")
        else:
            model = check_resource(fields, "resource")
    except ValidationError as exc:
        raise TransferError(where, str(exc)) from None
    return kind, value, model
