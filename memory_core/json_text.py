"""Why bytes a user gave are not the JSON they should be, in words they can
act on: a file (or a line) cut off early is *truncated*, at a named
position, not "not UTF-8" (a cut inside a multi-byte character) or a
parser's "Expecting ',' delimiter" (a cut between two values).

Shared by every reader of user-given JSON: the LoCoMo loader
(:mod:`memory_core.cli.locomo`) and the JSON Lines import
(:mod:`memory_core.transfer.records`).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["UnreadableJSON", "load_json_text"]


class UnreadableJSON(ValueError):
    """The bytes are not UTF-8 JSON; ``reason`` says why (truncated at
    position N, not UTF-8 at byte N, invalid JSON at position N), worded to
    follow the name of what was read (``"<file> " + reason``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def load_json_text(data: bytes | str) -> Any:
    """The JSON value ``data`` (UTF-8 bytes, or text) holds.

    Raises:
        UnreadableJSON: empty; truncated (the bytes stop inside a UTF-8
            character, or the JSON stops before its value is complete: the
            position, 0-based in characters, and line/column are named); not
            UTF-8 elsewhere (byte offset named); or invalid JSON (position,
            line and column named).
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.reason == "unexpected end of data" and exc.end == len(data):
                raise UnreadableJSON(
                    f"is truncated: it ends inside a UTF-8 character (at byte {exc.start}); "
                    "a download or copy stopped early, get the whole file again"
                ) from None
            raise UnreadableJSON(f"is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    else:
        text = data
    if not text.strip():
        raise UnreadableJSON("is empty: no JSON in it")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # A string never closed runs to the end: a cut, reported at the end.
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            end = len(text)
            where = f"position {end} (line {text.count(chr(10)) + 1} column {end - text.rfind(chr(10))})"
            raise UnreadableJSON(
                f"is truncated: its JSON stops before it is complete, at {where}; "
                "a download or copy stopped early, get the whole file again"
            ) from None
        where = f"position {exc.pos} (line {exc.lineno} column {exc.colno})"
        raise UnreadableJSON(f"is not valid JSON ({exc.msg} at {where})") from None
