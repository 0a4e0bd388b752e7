"""The one JSON encoding every adapter stores metadata and content with.

Compact, UTF-8 (``ensure_ascii=False``), no NaN/inf. Python's ``json`` keeps
int vs float apart on the way back (``1`` stays int, ``1.0`` stays float), which
is what R-JSON asks for, so adapters never pick their own encoding.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "loads"]


def dumps(value: Any) -> str:
    """Encode an already-validated JSON value to compact text."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def loads(text: str | bytes) -> Any:
    """Decode text written by :func:`dumps`."""
    return json.loads(text)
