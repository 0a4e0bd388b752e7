"""Classifying sqlite3 driver errors."""

from __future__ import annotations

import sqlite3

__all__ = ["is_busy"]

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's transient "database is locked"/busy error
    (another connection holds a lock); retrying later can succeed."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return True
    text = str(exc).lower()
    return "database is locked" in text or "database table is locked" in text or "busy" in text
