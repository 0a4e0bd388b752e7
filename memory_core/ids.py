"""Generated ids: time-ordered message ids (UUIDv7, RFC 9562).

Chat apps should never have to invent message ids, and message ids are
global in a store (R-ID): a reused id moves the stored message. UUIDv7 ids
are unique without coordination and sort by creation time, so they also keep
database indexes append-only.
"""

from __future__ import annotations

from uuid6 import uuid7

__all__ = ["new_message_id"]


def new_message_id() -> str:
    """A new message id: a UUIDv7 (RFC 9562 §5.7) in canonical text form, 36
    characters, time-ordered (ids made later in this process sort after
    earlier ones, by the ``uuid6`` package's monotonic counter)."""
    return str(uuid7())
