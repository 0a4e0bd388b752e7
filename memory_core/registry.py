"""Find a storage or vector adapter by URL scheme (``memory_core.connect``).

Adapters register a class under the entry-point group ``memory_core.storage``
(or ``memory_core.vector``) keyed by scheme, e.g. ``sqlite =
memory_core_sqlite:SQLiteStorage``. The class provides ``from_url(url,
**options)``. ``register_storage()``/``register_vector()`` add one at run
time (tests, third parties without packaging).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

from memory_core.errors import ValidationError

__all__ = [
    "STORAGE_GROUP",
    "VECTOR_GROUP",
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

# Which distribution to install for our own schemes (for the error message).
_INSTALL_HINTS = {
    "sqlite": "memory-core-sqlite",
    "mongodb": "memory-core-mongodb",
    "mongodb+srv": "memory-core-mongodb",
    "redis": "memory-core-redis",
    "rediss": "memory-core-redis",
    "unix": "memory-core-redis",
    "qdrant": "memory-core-qdrant",
    "qdrant+path": "memory-core-qdrant",
    "qdrant+edge": "memory-core-qdrant",
}

_runtime: dict[str, dict[str, Any]] = {STORAGE_GROUP: {}, VECTOR_GROUP: {}}


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


def _load(group: str, url: str) -> Any:
    scheme = url_scheme(url)
    candidates = [scheme, scheme.split("+", 1)[0]]
    for name in candidates:
        if name in _runtime[group]:
            return _runtime[group][name]
    eps = {ep.name.lower(): ep for ep in entry_points(group=group)}
    for name in candidates:
        if name in eps:
            return eps[name].load()
    hint = _INSTALL_HINTS.get(scheme)
    advice = f"install it with: pip install {hint}" if hint else "no installed adapter registers it"
    kind = "storage" if group == STORAGE_GROUP else "vector store"
    raise ValidationError("url", f"unknown {kind} scheme {scheme!r}: {advice} (known: {sorted(eps)})")


def storage_class(url: str) -> Any:
    """The registered storage class for ``url``'s scheme, without building or
    opening anything (``memory-core check`` builds one store per namespace
    with its ``from_url``).

    Raises:
        ValidationError: unknown scheme (the message names the package to
            install) or a malformed URL.
    """
    return _load(STORAGE_GROUP, url)


async def connect(url: str, **options: Any) -> Any:
    """Open the storage for ``url`` (``memory://``, ``sqlite:///path``,
    ``mongodb://``, ``redis://`` ...). Returns an opened
    :class:`~memory_core.storage.BaseStorage`; close it with ``close()`` or use
    it as an async context manager.

    Raises:
        ValidationError: unknown scheme (the message names the package to
            install) or a malformed URL.
        BackendError: the backend could not be reached.
    """
    storage = _load(STORAGE_GROUP, url).from_url(url, **options)
    await storage.open()
    return storage


async def connect_vector(url: str, **options: Any) -> Any:
    """Open the vector store for ``url`` (``qdrant::memory:``,
    ``qdrant+path:///dir``, ``qdrant://host:6333`` ...)."""
    store = _load(VECTOR_GROUP, url).from_url(url, **options)
    await store.open()
    return store
