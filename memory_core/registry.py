"""Find a storage or vector adapter by URL scheme (``memory_core.connect``).

Adapters register a class under the entry-point group ``memory_core.storage``
(or ``memory_core.vector``) keyed by scheme, e.g. ``sqlite =
memory_core_sqlite:SQLiteStorage``. What an entry point names provides
``from_url(url, **options)``: usually the class; a module whose ``from_url``
picks the class when several share a scheme (``qdrant = memory_core_qdrant``
serves both ``qdrant::memory:`` and ``qdrant://host``).
``register_storage()``/``register_vector()`` add one at run time (tests,
third parties without packaging).
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

from memory_core.clock import Clock
from memory_core.errors import BarePathError, URLKindError, ValidationError
from memory_core.opening import Opening
from memory_core.options import url_namespace
from memory_core.storage import Storage
from memory_core.vector import VectorStore
from memory_core.wording import listed

__all__ = [
    "STORAGE_GROUP",
    "VECTOR_GROUP",
    "build_storage",
    "build_vector",
    "connect",
    "connect_vector",
    "known_schemes",
    "register_storage",
    "register_vector",
    "storage_class",
    "url_scheme",
]

STORAGE_GROUP = "memory_core.storage"
VECTOR_GROUP = "memory_core.vector"

# Which adapter folder of this repository serves our own schemes (for the
# error message): the adapters are not on PyPI, so the hint is an editable
# install from a clone.
_INSTALL_HINTS = {
    "sqlite": "sqlite",
    "mongodb": "mongodb",
    "mongodb+srv": "mongodb",
    "redis": "redis",
    "rediss": "redis",
    "redis+cluster": "redis",
    "unix": "redis",
    "qdrant": "qdrant",
    "qdrant+path": "qdrant",
    "qdrant+http": "qdrant",
    "qdrant+https": "qdrant",
    "postgresql": "postgres",
    "postgres": "postgres",
}

_PATH_URLS = {STORAGE_GROUP: "sqlite:///", VECTOR_GROUP: "qdrant+path:///"}
"""The URL a bare filesystem path was meant as: a SQLite file, a Qdrant
folder (the embedded stores, whose URLs are a path after three slashes)."""

_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
"""A Windows drive path (``C:\\data\\memory.db``), whose ``C`` is no scheme."""

_runtime: dict[str, dict[str, Any]] = {STORAGE_GROUP: {}, VECTOR_GROUP: {}}
_UNEXPECTED_OPTION = re.compile(r"unexpected keyword argument '([^']+)'")


def url_scheme(url: str) -> str:
    """The scheme of ``url``: the text before the first ``:`` (lower-cased)."""
    if not isinstance(url, str) or ":" not in url:
        raise ValidationError("url", f"must look like scheme://..., got {url!r}")
    return url.split(":", 1)[0].lower()


def register_storage(scheme: str, factory: Any) -> None:
    """Register a storage class (with ``from_url``) for ``scheme`` at run time."""
    _runtime[STORAGE_GROUP][scheme.lower()] = factory


def register_vector(scheme: str, factory: Any) -> None:
    """Register a vector-store class (with ``from_url``) for ``scheme``."""
    _runtime[VECTOR_GROUP][scheme.lower()] = factory


def known_schemes(group: str = STORAGE_GROUP) -> Mapping[str, str]:
    """Read-only view: scheme -> where it comes from (entry point or runtime)."""
    found = {ep.name.lower(): ep.value for ep in entry_points(group=group)}
    found.update({k: repr(v) for k, v in _runtime[group].items()})
    return MappingProxyType(found)


def _check_not_a_path(group: str, url: Any) -> None:
    """Refuse a filesystem path given as a URL (``memory.db``,
    ``/srv/memory.db``, ``C:\\data\\memory.db``), naming its URL.

    Raises:
        BarePathError: field ``url``; ``sqlite:///<path>`` for a storage,
            ``qdrant+path:///<path>`` for a vector store (``~`` expanded).
    """
    if isinstance(url, str) and url.strip() and (":" not in url or _DRIVE.match(url)):
        path = os.path.expanduser(url) if url.startswith("~") else url
        raise BarePathError("url", url, _PATH_URLS[group] + path)


def _load(group: str, url: str) -> Any:
    _check_not_a_path(group, url)
    scheme = url_scheme(url)
    candidates = [scheme, scheme.split("+", 1)[0]]
    for name in candidates:
        if name in _runtime[group]:
            return _runtime[group][name]
    eps = {ep.name.lower(): ep for ep in entry_points(group=group)}
    for name in candidates:
        if name in eps:
            return eps[name].load()
    kind = "storage" if group == STORAGE_GROUP else "vector store"
    other = VECTOR_GROUP if group == STORAGE_GROUP else STORAGE_GROUP
    if any(name in _runtime[other] or name in known_schemes(other) for name in candidates):
        raise URLKindError("url", scheme, "vector store" if group == STORAGE_GROUP else "storage")
    folder = _INSTALL_HINTS.get(scheme)
    known = sorted(known_schemes(group))
    if folder:
        advice = f"install memory-core-{folder} from a clone of memory-core: pip install -e ./adapters/{folder}"
    else:
        # A misspelt scheme gets the one meant, as a misspelt option does
        # (options.unknown_option): ``sqlit`` -> "did you mean 'sqlite'?".
        close = difflib.get_close_matches(scheme, known, n=1)
        advice = f"did you mean {close[0]!r}? " if close else ""
        advice += "no installed adapter registers it"
    raise ValidationError("url", f"unknown {kind} scheme {scheme!r}: {advice} (known: {listed(known)})")


def _build(group: str, url: str, options: dict[str, Any]) -> Any:
    """``from_url(url, **options)`` of the adapter for ``url``, with option
    mistakes turned into ValidationError (``from_url`` does no I/O)."""
    factory = _load(group, url)
    url, options["namespace"] = url_namespace(url, options.get("namespace"))
    if options["namespace"] is None:
        del options["namespace"]
    clock = options.get("clock")
    if clock is not None and not isinstance(clock, Clock):
        raise ValidationError("option 'clock'", f"must be a memory_core.Clock, got {type(clock).__name__}")
    try:
        return factory.from_url(url, **options)
    except TypeError as exc:
        # Building takes nothing but the URL and these options, so a TypeError
        # means an option the adapter does not take (or a bad keyword value).
        found = _UNEXPECTED_OPTION.search(str(exc))
        field = f"option {found.group(1)!r}" if found else "options"
        raise ValidationError(field, f"not accepted by the {url_scheme(url)!r} adapter ({exc})") from None


def storage_class(url: str) -> Any:
    """The registered storage class for ``url``'s scheme, without building or
    opening anything (``memory-core check`` builds one store per namespace
    with its ``from_url``).

    Raises:
        ValidationError: unknown scheme (the message names the package to
            install, or the scheme meant for a misspelling) or a malformed URL.
    """
    return _load(STORAGE_GROUP, url)


def build_storage(url: str, **options: Any) -> Storage:
    """The storage for ``url``, built but not opened (no I/O): what a command
    line uses to refuse a bad URL before it touches any data. Open it with
    ``await store.open()`` (or ``async with``).

    Raises:
        ValidationError: as for :func:`connect`.
    """
    storage: Storage = _build(STORAGE_GROUP, url, options)
    return storage


def build_vector(url: str, **options: Any) -> VectorStore:
    """The vector store for ``url``, built but not opened (no I/O), as
    :func:`build_storage`.

    Raises:
        ValidationError: as for :func:`connect_vector`.
    """
    store: VectorStore = _build(VECTOR_GROUP, url, options)
    return store


def connect(url: str, **options: Any) -> Opening[Storage]:
    """Open the storage for ``url`` (``memory://``, ``sqlite:///path``,
    ``mongodb://``, ``redis://`` ...). Awaited, returns an opened
    :class:`~memory_core.storage.Storage` (in practice a
    :class:`~memory_core.storage.BaseStorage` subclass); close it with
    ``close()`` or use it as an async context manager:
    ``async with await connect(url) as storage:``. The call itself is no
    context manager: ``async with connect(url)``, or an attribute read
    without ``await``, raises :class:`~memory_core.errors.AwaitError`
    giving that form (:class:`~memory_core.opening.Opening`).

    Args:
        url: the storage URL; its scheme picks the adapter.
        **options: adapter keywords (``clock``, ``namespace`` and the
            adapter's own, see its ``from_url``); a ``namespace`` in the
            URL's query (``sqlite:///m.db?namespace=t1``) is the same as
            the keyword (:func:`~memory_core.options.url_namespace`).

    Raises:
        ValidationError: unknown scheme (the message names the package to
            install, or the scheme meant for a misspelling), a malformed URL,
            or an option the adapter does not accept or a bad value (the
            field names the option); :class:`~memory_core.errors.BarePathError`
            for a file path (``"memory.db"``: the message names its URL,
            ``sqlite:///memory.db``; ``qdrant+path:///...`` for
            :func:`connect_vector`).
        BackendError: the backend could not be reached.
        AwaitError: the call used without ``await`` (see above).
    """
    return Opening(_open(STORAGE_GROUP, url, options), "memory_core.connect(url)", "storage", Storage)


async def _open(group: str, url: str, options: dict[str, Any]) -> Any:
    """The store for ``url`` of ``group``, built (:func:`_build`) and opened."""
    store = _build(group, url, options)
    await store.open()
    return store


def connect_vector(url: str, **options: Any) -> Opening[VectorStore]:
    """Open the vector store for ``url`` (``memory://``, ``qdrant::memory:``,
    ``qdrant+path:///dir``, ``qdrant://host:6333`` ...). Awaited, returns an
    opened :class:`~memory_core.vector.BaseVectorStore`, an async context
    manager (``async with await connect_vector(url) as vectors:``); the
    call itself is none, as for :func:`connect`.

    Raises:
        ValidationError: as for :func:`connect`.
        BackendError: the backend could not be reached.
        AwaitError: the call used without ``await`` (as for :func:`connect`).
    """
    return Opening(_open(VECTOR_GROUP, url, options), "memory_core.connect_vector(url)", "vectors", VectorStore)
