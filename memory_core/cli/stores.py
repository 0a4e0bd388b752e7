"""Storage URLs on the command line: build the store a command names,
refusing before any I/O what would make the command act on the wrong store.

Shared by the commands that read or delete a store's data (``export``,
``copy``'s source, ``prune``) and those that write into one (``import``,
``copy``'s destination).
"""

from __future__ import annotations

from pathlib import Path

from memory_core.cli.host import fail
from memory_core.registry import build_storage, url_scheme
from memory_core.storage import Storage

__all__ = ["command_storage"]


def command_storage(url: str, role: str, *, must_exist: bool) -> Storage:
    """The store for ``url``, built but not opened.

    Refuses before any I/O an unknown scheme or an adapter not installed (the
    registry's error names the package), a malformed URL and, with
    ``must_exist`` (a command that reads or deletes existing data), a SQLite
    file that does not exist: opening it would create an empty database, and
    the command would report on nothing instead of naming the typo.

    Raises:
        ValidationError: from the registry (scheme, adapter, URL shape).
        typer.Exit: the SQLite file is missing (one red line ``<role>: <path>
            does not exist``, exit 2).
    """
    store = build_storage(url)
    if must_exist and url_scheme(url) == "sqlite":
        path = url.split("://", 1)[1].split("?", 1)[0]
        path = path[1:] if path.startswith("/") else path
        if path not in ("", ":memory:", "/:memory:") and not Path(path).exists():
            fail(f"{role}: {path} does not exist")
    return store
