"""Input checks of the vector store (:mod:`memory_core.vector` re-exports
:func:`check_namespace`): its namespace and its size settings, checked
before any I/O."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from memory_core.errors import ValidationError
from memory_core.vector_points import Vector

__all__ = ["check_namespace", "positive_int", "unit_vector"]

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


def unit_vector(vector: Any, field: str) -> Vector:
    """Validate one vector and return it L2-normalised as float32.

    Args:
        vector: anything numpy reads as a 1-D array of numbers, shape ``(dim,)``.
        field: the name used in errors (``"points[3].vector"``).

    Raises:
        ValidationError: not 1-D, empty, not finite (NaN, inf) or the zero
            vector (cosine is undefined for it).
    """
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValidationError(field, "must be a 1-D array of numbers") from None
    if array.ndim != 1 or array.size < 1:
        raise ValidationError(field, f"must be a non-empty 1-D array, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValidationError(field, "must hold finite numbers (no NaN or inf)")
    norm = float(np.linalg.norm(array))
    if norm == 0.0 or not np.isfinite(norm):
        raise ValidationError(field, "must not be the zero vector (cosine is undefined)")
    return array / np.float32(norm)
