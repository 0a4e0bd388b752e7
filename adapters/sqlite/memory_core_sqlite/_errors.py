"""Classifying sqlite3 driver errors."""

from __future__ import annotations

import sqlite3

__all__ = ["is_busy"]

_BUSY_CODES = (5, 6)
"""SQLITE_BUSY and SQLITE_LOCKED: the primary result codes of a lock held elsewhere."""


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's transient "database is locked"/busy error
    (another connection holds a lock; its primary result code, not its
    text, which SQLite words differently by version); retrying later can
    succeed."""
    code = getattr(exc, "sqlite_errorcode", None)  # set on every error SQLite raises (Python >= 3.11)
    return isinstance(exc, sqlite3.OperationalError) and isinstance(code, int) and code & 0xFF in _BUSY_CODES
