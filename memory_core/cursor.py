"""Opaque keyset cursors (R-CURSOR).

A cursor names the last item of a window (its keyset position) and a
fingerprint of the query it came from: the filter, the scope and the order,
not the page size. Passing it back resumes strictly after that position, so
concurrent inserts and deletes cause no gaps or repeats and the cost does
not grow with depth. A cursor from another query is a ValidationError.

Cursors come back from callers, so decoding trusts nothing: the text is
bounded in size and nesting before it is parsed, and every key part is range
checked, so a forged cursor is a ValidationError and never reaches a backend.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from memory_core.clock import TIME_MAX_US, TIME_MIN_US
from memory_core.errors import ValidationError
from memory_core.query import NO_MESSAGE_ASC_US, NO_MESSAGE_DESC_US
from memory_core.validation import INT64_MAX, check_id

__all__ = ["MAX_CURSOR_CHARS", "decode_cursor", "encode_cursor", "fingerprint"]

_VERSION = 1

MAX_CURSOR_CHARS = 8192
"""The longest cursor text accepted. Real cursors stay under ~4,200
characters (a 256-character id of astral characters, JSON-escaped, in
base64); anything longer is refused before decoding."""

# The exact shape encode_cursor writes: ``[version,"fingerprint",[int,int|str]]``,
# or ``[version,"fingerprint",["str"]]`` for a key that is one id.
# Checked (anchored, linear time) before json.loads, so a forged cursor can
# never be deeply nested JSON that exhausts the parser's recursion.
_SHAPE = re.compile(r'\[\d+,"[0-9a-f]+",\[(?:-?\d+,(?:-?\d+|"(?:[^"\\]|\\.)*")|"(?:[^"\\]|\\.)*")\]\]')


def fingerprint(*parts: Any) -> str:
    """A short stable hash of the query's identity: its parts are tuples,
    lists, str, int, float, bool and None, whose ``repr`` is exact and
    deterministic (and several times faster than JSON with sorted keys)."""
    raw = repr(parts).encode("utf-8", "surrogatepass")
    return hashlib.blake2s(raw, digest_size=9).hexdigest()


def encode_cursor(query_fingerprint: str, key: tuple[Any, ...]) -> str:
    """Cursor text for "after ``key``" in the query with ``query_fingerprint``."""
    parts = ",".join(str(part) if type(part) is int else json.dumps(part, ensure_ascii=True) for part in key)
    raw = f'[{_VERSION},"{query_fingerprint}",[{parts}]]'  # the JSON json.dumps writes, without its overhead
    return base64.urlsafe_b64encode(raw.encode("ascii")).decode("ascii").rstrip("=")


def _not_a_cursor() -> ValidationError:
    return ValidationError("cursor", "is not a memory-core cursor", "R-CURSOR")


def _parse(cursor: str) -> Any:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise ValidationError("cursor", f"is longer than {MAX_CURSOR_CHARS} characters", "R-CURSOR")
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except ValueError:  # bad base64 padding or non-ASCII bytes
        raise _not_a_cursor() from None
    if _SHAPE.fullmatch(text) is None:
        raise _not_a_cursor()
    try:
        return json.loads(text)
    except ValueError:
        raise _not_a_cursor() from None


def _check_part(part: Any, kind: type, position: int) -> None:
    if kind is int and type(part) is int:
        # Position 0 is always a time (created_at, updated_at or
        # last_message_at µs, whose sentinels sort threads without messages
        # last); later ints are insertion sequences.
        low, high = (TIME_MIN_US, TIME_MAX_US) if position == 0 else (0, INT64_MAX)
        sentinel = position == 0 and part in (NO_MESSAGE_ASC_US, NO_MESSAGE_DESC_US)
        if not (low <= part <= high or sentinel):
            raise ValidationError("cursor", "holds a position outside the stored range", "R-CURSOR")
    elif kind is str and type(part) is str:
        check_id(part, "cursor")
    else:
        raise _not_a_cursor()


def decode_cursor(cursor: Any, query_fingerprint: str, key_types: tuple[type, ...]) -> tuple[Any, ...]:
    """The keyset position in ``cursor``.

    Args:
        cursor: the ``next_cursor`` text of a previous page (at most
            :data:`MAX_CURSOR_CHARS` characters).
        query_fingerprint: :func:`fingerprint` of the current query.
        key_types: the key's part types: ``(int, int)`` for messages
            (created_at µs, sequence), ``(int, str)`` for threads (order
            field µs, id) or ``(str,)`` for resource ids. An int first part
            is a time within R-TIME; a later int is a sequence from 0 to
            2**63-1; a str is an id (R-ID).

    Raises:
        ValidationError: (field ``cursor``, rule R-CURSOR) not a cursor this
            library wrote (too long, too deeply nested, malformed, or a key
            out of range), or written for a different query (filter, scope or
            order).
    """
    if not isinstance(cursor, str) or not cursor:
        raise ValidationError("cursor", "must be a non-empty str from a previous page's next_cursor", "R-CURSOR")
    version, found, key = _parse(cursor)  # the shape check guarantees three parts
    if version != _VERSION or len(key) != len(key_types):
        raise _not_a_cursor()
    for position, (part, kind) in enumerate(zip(key, key_types, strict=True)):
        _check_part(part, kind, position)
    if found != query_fingerprint:
        raise ValidationError("cursor", "was made for a different query (filter, scope or order)", "R-CURSOR")
    return tuple(key)
