"""``--resource ID`` on the command line: when the id names no resource of
the store (no record, no thread), the commands that take it (``prune``,
``export``, ``copy``) act on nothing and succeed; this says so, and names the
ids the user probably meant."""

from __future__ import annotations

import difflib

from memory_core.models import ThreadFilter
from memory_core.storage import Storage

__all__ = ["SCANNED_IDS", "absent_resource_hint"]

SCANNED_IDS = 10_000
"""At most this many resource ids are read to find close ones (a typo's
cost stays bounded on a store with millions of users)."""


async def absent_resource_hint(storage: Storage, resource_id: str | None, outcome: str) -> str | None:
    """The hint for a ``--resource`` that names nothing, or None when it
    names a resource (or no ``--resource`` was given).

    Args:
        storage: the opened store the command read.
        resource_id: the ``--resource`` value, or None.
        outcome: what the command did, as a clause for the hint
            (``"nothing was exported"``, ``"nothing would be pruned"``).

    Returns:
        ``the store holds no resource 'X' (no record, no thread): <outcome>;
        did you mean 'Y'?`` with up to three close ids (difflib's
        ratio >= 0.6) among the first :data:`SCANNED_IDS`; without one, a few
        of the ids the store holds, or that it holds none.

    Raises:
        BackendError: the store failed.
    """
    if resource_id is None or await storage.get_resource(resource_id) is not None:
        return None
    page = await storage.list_threads(ThreadFilter(resource_id=resource_id), per_page=1)
    if page.items:
        return None
    ids: list[str] = []
    cursor: str | None = None
    while len(ids) < SCANNED_IDS:
        listing = await storage.list_resource_ids(per_page=1000, cursor=cursor)
        ids.extend(listing.items)
        cursor = listing.next_cursor
        if cursor is None:
            break
    hint = f"the store holds no resource {resource_id!r} (no record, no thread): {outcome}"
    close = difflib.get_close_matches(resource_id, ids, n=3)
    if close:
        return f"{hint}; did you mean {' or '.join(repr(i) for i in close)}?"
    if not ids:
        return f"{hint}; the store holds no resources at all: check the URL"
    shown = ", ".join(repr(i) for i in ids[:5])
    more = " ..." if len(ids) > 5 else ""
    return f"{hint}; it holds {shown}{more}: give one of its resource ids"
