"""The one JSON encoding every adapter stores metadata and content with.

Compact, UTF-8 (``ensure_ascii=False``), no NaN/inf. Python's ``json`` keeps
int vs float apart on the way back (``1`` stays int, ``1.0`` stays float), which
is what R-JSON asks for, so adapters never pick their own encoding.

Decoding uses orjson (the same values as ``json.loads`` for everything
:func:`dumps` writes: int64 ints, finite floats, valid UTF-8), several times
faster on the short texts messages hold; rows are decoded on every read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dumps", "loads"]


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
# json.dumps with these options builds this same encoder on every call; one
# shared encoder writes the same text (its options never change, so threads
# may share it) without that cost.


def dumps(value: Any) -> str:
    """Encode an already-validated JSON value to compact text.

    Raises:
        ValueError: NaN or infinity (R-JSON refuses them before this).
        TypeError: a value that is not JSON.
    """
    return _ENCODER.encode(value)


loads: Callable[[str | bytes], Any] = orjson.loads
"""Decode text written by :func:`dumps` (orjson itself, not a wrapper: rows
are decoded on every read; ``json.loads`` agrees on every such text)."""
