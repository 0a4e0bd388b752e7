"""Input checks of the vector store (:mod:`memory_core.vector` re-exports
:func:`check_namespace`): its namespace and its size settings, checked
before any I/O."""

from __future__ import annotations

import re
from typing import Any

from memory_core.errors import ValidationError

__all__ = ["check_namespace", "positive_int"]

_NAMESPACE = re.compile(r"[A-Za-z0-9_-]{1,48}")


def check_namespace(namespace: str | None) -> str | None:
    """A vector store namespace (collection-name prefix): None, or 1-48
    characters of ``[A-Za-z0-9_-]`` (safe in any backend's collection names).

    Raises:
        ValidationError: anything else.
    """
    if namespace is not None and (not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace)):
        raise ValidationError("namespace", f"must be 1-48 characters of [A-Za-z0-9_-], got {namespace!r}")
    return namespace


def positive_int(value: Any, field: str) -> int:
    """``value`` when it is an int >= 1 (not a bool).

    Raises:
        ValidationError: anything else, naming ``field``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(field, f"must be an int >= 1, got {value!r}")
    return value
