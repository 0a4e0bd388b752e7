"""Storage and vector URLs on the command line: build the store a command
names, refusing before any I/O what would make the command act on the wrong
store.

Shared by the commands that read or delete a store's data (``export``,
``copy``'s source, ``prune`` and its ``--vector``) and those that write into
one (``import``, ``copy``'s destination, their ``--vector``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from memory_core.arguments import check_persistent
from memory_core.cli.host import OPTION_OF_FIELD, backend_line, clauses, fail
from memory_core.embedders import Embedder, get_embedder
from memory_core.errors import BackendError, MissingFolderError, URLKindError, ValidationError, url_named
from memory_core.identity import same_store
from memory_core.options import hide_password
from memory_core.registry import build_storage, build_vector
from memory_core.storage import Storage
from memory_core.vector import BaseVectorStore, VectorStore

S = TypeVar("S", Storage, BaseVectorStore)

__all__ = [
    "NO_VECTORS_WRITTEN",
    "command_embedder",
    "command_storage",
    "command_stores",
    "command_vector",
    "copy_storages",
    "url_role",
]

NO_VECTORS_WRITTEN = "or leave --vector out when no vectors were ever written"
"""The way out a command that deletes data (``erase``, ``prune``) offers when its ``--vector`` names no index."""


@contextmanager
def url_role(role: str) -> Iterator[None]:
    """A :class:`~memory_core.errors.ValidationError` about a URL as the
    command line names it: the library's field is its parameter ``url``
    (``url: unknown storage scheme ...``); a command says which of its URLs
    was wrong, in its own words (``URL: ...``, ``--vector: ...``,
    ``DESTINATION: ...``). Other errors pass unchanged.

    A missing folder (:class:`~memory_core.errors.MissingFolderError`) is
    fixed with the URL option (``?create_dirs=true``), not the Python
    keyword a command-line user cannot pass; a URL of the other kind
    (:class:`~memory_core.errors.URLKindError`, a storage URL given as
    ``--vector``) names the argument or option that takes it, not the
    Python function. A bad value of one of the
    URL's options (the library's field is the keyword, ``batch_size``) is
    ``<role>: option 'batch_size' <reason>``: the URL is what to fix, not
    a command's option of the same name (``prune --batch-size``); one
    about a part of the URL (:data:`~memory_core.cli.host.OPTION_OF_FIELD`
    maps it to ``URL``: its key prefix, schema) is ``<role>: <reason>``.

    Raises:
        ValidationError: the same reason and rule, field ``role``.
    """
    try:
        with url_named(role):
            yield
    except MissingFolderError as exc:
        raise MissingFolderError(exc.field, exc.folder, exc.url_example, keyword=False) from None
    except URLKindError as exc:
        raise URLKindError(exc.field, exc.scheme, exc.kind, python=False) from None
    except ValidationError as exc:
        if exc.field == role or not exc.field.isidentifier():  # named as given: the role, "option 'prefx'"
            raise
        if OPTION_OF_FIELD.get(exc.field) == "URL":  # a part of the URL (its prefix, schema): the URL says it
            raise ValidationError(role, exc.reason, exc.rule) from None
        raise ValidationError(role, f"option {exc.field!r} {exc.reason}", exc.rule) from None


def command_storage(url: str, role: str, *, must_exist: bool) -> Storage:
    """The store for ``url``, built but not opened, after the adapter's
    :meth:`~memory_core.storage.BaseStorage.preflight`.

    Refuses before any I/O an unknown scheme or an adapter not installed (the
    registry's error names the package) and a malformed URL; then the adapter
    checks, creating nothing, that the store can be opened where the URL says;
    without ``must_exist`` (a command that writes into it) that it is not
    another application's database (SQLite tables, a PostgreSQL schema or a
    MongoDB database with other data: memory-core's tables would land
    beside them), and with ``must_exist`` (a command that reads or deletes existing data),
    that it is there: opening a missing SQLite file would create an empty
    database, and the command would report on nothing instead of naming the
    typo.

    Raises:
        ValidationError: from the registry (scheme, adapter, URL shape).
        BackendError: what the URL names cannot be opened (preflight).
        typer.Exit: preflight refused the location (one red line
            ``<role>: <reason>``, exit 2).
    """
    with url_role(role):
        storage = build_storage(url)
    return _preflight(storage, url, role, must_exist)


def command_vector(url: str, role: str, *, must_exist: bool, otherwise: str = "") -> VectorStore:
    """The vector store for ``url``, built but not opened: refused when it
    keeps its points in memory (every command's ``--vector`` must outlive
    the process: :func:`memory_core.arguments.check_persistent`), then
    checked by its :meth:`~memory_core.vector.BaseVectorStore.preflight` (a
    store that does not derive from
    :class:`~memory_core.vector.BaseVectorStore` has none and is not checked).

    With ``must_exist`` (a command that reads or prunes vectors) the store
    must already hold a collection: ``qdrant+path:///`` with a misspelt
    folder would otherwise be created empty (by ``--dry-run`` too) and a
    prune would report success while the real index keeps every point.
    ``otherwise`` is the command's other way out, added to that refusal
    (``"or pass --new to build a new index there"``).

    Raises:
        ValidationError: from the registry (scheme, adapter, URL options);
            a store that is not persistent (field ``role``).
        BackendError: the store cannot be reached or read (preflight).
        typer.Exit: preflight refused the location (one red line
            ``<role>: <reason>``, exit 2).
    """
    with url_role(role):
        vectors = build_vector(url)
    check_persistent(vectors, role)
    if isinstance(vectors, BaseVectorStore):
        _preflight(vectors, url, role, must_exist, otherwise)
    return vectors


def command_stores(url: str, vector: str | None, role: str) -> tuple[Storage, VectorStore | None]:
    """The stores of a command that deletes a resource's or an age's data
    (``erase``, ``prune``): the storage ``url`` (the argument ``role``)
    and, when given, the ``--vector`` store; both must exist
    (:func:`command_storage`, :func:`command_vector`), a ``--vector``
    naming no index being refused with :data:`NO_VECTORS_WRITTEN` as
    the way out. Built, checked, not opened.

    Raises:
        ValidationError, BackendError, typer.Exit: as :func:`command_storage`
            and :func:`command_vector`.
    """
    storage = command_storage(url, role, must_exist=True)
    vectors = (
        None if vector is None else command_vector(vector, "--vector", must_exist=True, otherwise=NO_VECTORS_WRITTEN)
    )
    return storage, vectors


def command_embedder(name: str) -> Embedder:
    """The embedder ``--embedder`` names (:func:`memory_core.embedders.get_embedder`).

    Raises:
        ValidationError: field ``--embedder`` (as the command line spells
            it, not the library's ``embedder``): an unknown name, or one
            whose package is not installed (the message names it).
    """
    try:
        return get_embedder(name)
    except ValidationError as exc:
        raise ValidationError("--embedder", exc.reason, exc.rule) from None


def copy_storages(source: str, destination: str) -> tuple[Storage, Storage]:
    """``copy``'s two stores, built but not opened: both URLs checked as by
    :func:`command_storage` (the source must exist), and refused when they
    name one store (:func:`memory_core.identity.same_store`, compared before
    the preflights' I/O), however the URLs spell it.

    Raises:
        ValidationError: from the registry (scheme, adapter, URL shape).
        BackendError: what a URL names cannot be opened (preflight).
        typer.Exit: the same store twice ("SOURCE and DESTINATION are the
            same store"), or a preflight refused a location (one red line,
            exit 2).
    """
    with url_role("SOURCE"):
        src = build_storage(source)
    with url_role("DESTINATION"):
        dst = build_storage(destination)
    if same_store(src, dst):
        fail("SOURCE and DESTINATION are the same store; give a DESTINATION that names another store")
    return _preflight(src, source, "SOURCE", True), _preflight(dst, destination, "DESTINATION", False)


def _preflight(store: S, url: str, role: str, must_exist: bool, otherwise: str = "") -> S:
    """``store`` (built from ``url``) after its ``preflight`` (a storage or
    a vector store); a refusal is one red line ``<role>: <reason>``, a
    backend failure one that names the URL (its password hidden) and what
    happened in words (:func:`~memory_core.cli.host.backend_line`). A storage the command does
    not read (``must_exist`` false) is one it writes into: its preflight
    also refuses another application's data there (``writes``), the one
    check every writing command shares."""
    try:
        with url_role(role):  # a missing folder's fix in the URL's words
            if isinstance(store, BaseVectorStore):
                asyncio.run(store.preflight(must_exist=must_exist))
            else:
                asyncio.run(store.preflight(must_exist=must_exist, writes=not must_exist))
    except ValidationError as exc:
        fail(f"{role}: {clauses(exc.reason, otherwise)}")
    except BackendError as exc:  # named by the URL the user gave (its host and port, its file)
        fail(backend_line(f"{role} {hide_password(url)}", exc))
    return store
