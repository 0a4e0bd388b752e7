"""The records of the vector side (R-VEC): what a vector store takes
(:class:`VectorPoint`, its vector checked by :func:`unit_vector`) and what
it returns (:class:`VectorHit`); a backend's hits and filters are in
:mod:`memory_core.vector_layout`. Re-exported by :mod:`memory_core.vector`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memory_core.errors import ValidationError

__all__ = ["Vector", "VectorHit", "VectorPoint", "unit_vector"]

Vector = npt.NDArray[np.float32]
"""A float32 numpy vector, shape ``(dim,)`` (or a matrix of them, one per row)."""


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


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """One embedded chunk of one message (what :meth:`VectorStore.upsert` takes).

    Attributes:
        message_id: the message (R-ID).
        chunk: the chunk number, int >= 0 (0 for a one-chunk message).
        vector: the embedding, shape ``(dim,)``; stored L2-normalised.
        thread_id: the message's thread (R-ID).
        resource_id: the message's resource (R-ID).
        created_at_us: the message's ``created_at``, int µs since the epoch (UTC).
    """

    message_id: str
    chunk: int
    vector: Vector
    thread_id: str
    resource_id: str
    created_at_us: int


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search hit: the message and its best chunk's cosine score (-1 to 1)."""

    message_id: str
    thread_id: str
    resource_id: str
    score: float
