"""Storage URLs on the command line: build the store a command names,
refusing before any I/O what would make the command act on the wrong store.

Shared by the commands that read or delete a store's data (``export``,
``copy``'s source, ``prune``) and those that write into one (``import``,
``copy``'s destination).
"""

from __future__ import annotations

import asyncio

from memory_core.cli.host import fail
from memory_core.errors import ValidationError
from memory_core.registry import build_storage
from memory_core.storage import Storage

__all__ = ["command_storage"]


def command_storage(url: str, role: str, *, must_exist: bool) -> Storage:
    """The store for ``url``, built but not opened, after the adapter's
    :meth:`~memory_core.storage.BaseStorage.preflight`.

    Refuses before any I/O an unknown scheme or an adapter not installed (the
    registry's error names the package) and a malformed URL; then the adapter
    checks, creating nothing, that the store can be opened where the URL says
    and, with ``must_exist`` (a command that reads or deletes existing data),
    that it is there: opening a missing SQLite file would create an empty
    database, and the command would report on nothing instead of naming the
    typo.

    Raises:
        ValidationError: from the registry (scheme, adapter, URL shape).
        BackendError: what the URL names cannot be opened (preflight).
        typer.Exit: preflight refused the location (one red line
            ``<role>: <reason>``, exit 2).
    """
    store = build_storage(url)
    try:
        asyncio.run(store.preflight(must_exist=must_exist))
    except ValidationError as exc:
        fail(f"{role}: {exc.reason}")
    return store
