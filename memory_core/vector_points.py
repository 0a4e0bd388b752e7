"""The records of the vector side (R-VEC): what a vector store takes
(:class:`VectorPoint`, its vector checked by
:func:`memory_core.vector_checks.unit_vector`) and what
it returns (:class:`VectorHit`); a backend's hits and filters are in
:mod:`memory_core.vector_layout`. Re-exported by :mod:`memory_core.vector`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Vector", "VectorHit", "VectorPoint"]

Vector = npt.NDArray[np.float32]
"""A float32 numpy vector, shape ``(dim,)`` (or a matrix of them, one per row)."""


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
