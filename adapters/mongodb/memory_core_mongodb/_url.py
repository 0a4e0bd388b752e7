"""URL and database-name handling for ``mongodb://`` and ``mongodb+srv://``.

The connection string goes to PyMongo unchanged (hosts, credentials, TLS and
every ``?option``); this module only decides which *database* the store lives
in, without touching the network (PyMongo's own URI parser resolves SRV
records, which would be I/O at construction time).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from urllib.parse import parse_qsl, unquote, urlsplit

from memory_core.errors import ValidationError
from memory_core.identity import canonical_host, server_addresses

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_PORT",
    "SCHEMES",
    "database_name",
    "url_database",
    "url_hosts",
    "url_options",
]

DEFAULT_PORT = 27017
"""Port of a host the connection string names without one."""

SCHEMES = ("mongodb", "mongodb+srv")
"""URL schemes this adapter registers."""

DEFAULT_DATABASE = "memory_core"
"""Database used when neither the URL path nor the ``database`` option names one."""

_MAX_DB_BYTES = 63
_BAD_DB_CHARS = re.compile(r'[/\\. "$*<>:|?\x00]')
_NAMESPACE = re.compile(r"[A-Za-z0-9_-]{1,48}")


def _scheme(url: str) -> str:
    if not isinstance(url, str) or "://" not in url:
        raise ValidationError("url", f"must look like mongodb://host[:port]/[database][?options], got {url!r}")
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise ValidationError("url", f"scheme must be one of {list(SCHEMES)}, got {scheme!r}")
    return scheme


def url_database(url: str) -> str | None:
    """The database named in the URL path, or None when the path is empty.

    Args:
        url: a ``mongodb://`` or ``mongodb+srv://`` connection string.

    Returns:
        The percent-decoded path (``mongodb://h/app?x=1`` -> ``"app"``), or None.

    Raises:
        ValidationError: another scheme, or no ``://``.
    """
    _scheme(url)
    path = urlsplit(url).path
    name = unquote(path[1:]) if path.startswith("/") else unquote(path)
    return name or None


def url_options(url: str) -> list[str]:
    """The names of the query options of a connection string, as written
    (all of them PyMongo's: this adapter reads none from the query).

    Raises:
        ValidationError: another scheme, or no ``://``.
    """
    _scheme(url)
    return [key for key, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)]


def url_hosts(url: str) -> frozenset[Hashable]:
    """The servers a connection string names, spelled canonically (no I/O,
    no SRV lookup): the seed list of a ``mongodb://`` URL as
    :func:`memory_core.identity.server_addresses` reads it (loopback
    spellings are one host, a missing port is 27017, a unix socket is its
    resolved path), or ``{("srv", name)}`` for ``mongodb+srv://name``.

    Raises:
        ValidationError: another scheme, or no ``://``.
    """
    scheme = _scheme(url)
    hosts = urlsplit(url).netloc.rpartition("@")[2]
    if scheme == "mongodb+srv":
        return frozenset({("srv", canonical_host(hosts))})
    return server_addresses(unquote(hosts), DEFAULT_PORT)


def database_name(url: str, database: str | None = None, namespace: str | None = None) -> str:
    """The database a store uses.

    Precedence: the ``database`` option, then the URL path, then
    :data:`DEFAULT_DATABASE`. A ``namespace`` selects a separate database
    ``<database>_<namespace>``, so one server hosts many isolated stores.

    Args:
        url: the connection string.
        database: explicit database name (overrides the URL path), or None.
        namespace: 1-48 characters of ``[A-Za-z0-9_-]``, or None.

    Returns:
        A valid MongoDB database name (at most 63 bytes).

    Raises:
        ValidationError: bad namespace, or a name MongoDB would refuse
            (characters ``/\\. "$*<>:|?`` or NUL, empty, longer than 63 bytes).
    """
    base = database if database is not None else url_database(url)
    if database is not None:
        _scheme(url)
    name = base if base is not None else DEFAULT_DATABASE
    if namespace is not None:
        if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
            raise ValidationError("namespace", f"must be 1-48 characters of [A-Za-z0-9_-], got {namespace!r}")
        name = f"{name}_{namespace}"
    if not isinstance(name, str) or not name or _BAD_DB_CHARS.search(name):
        raise ValidationError("database", f'{name!r} is not a valid MongoDB database name (no /\\. "$*<>:|?)')
    if len(name.encode("utf-8")) > _MAX_DB_BYTES:
        raise ValidationError("database", f"{name!r} is longer than {_MAX_DB_BYTES} bytes")
    return name
