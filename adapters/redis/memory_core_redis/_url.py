"""Parsing of ``redis://`` URLs into driver settings (no I/O)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from memory_core.errors import ValidationError
from memory_core.identity import canonical_host, server_address

__all__ = ["DEFAULT_PORT", "DEFAULT_PREFIX", "URL_OPTIONS", "RedisTarget", "parse_url", "server_identity"]

DEFAULT_PORT = 6379
"""Port of a ``redis://`` URL that names none (redis-py's default)."""

DEFAULT_PREFIX = "memory-core"
"""Key prefix of a store when neither ``namespace`` nor ``prefix`` is given."""

_SCHEMES = {
    "redis": ("redis", False),
    "rediss": ("rediss", False),
    "unix": ("unix", False),
    "redis+cluster": ("redis", True),
    "rediss+cluster": ("rediss", True),
}
URL_OPTIONS = frozenset({"prefix", "cluster"})
"""The query options this adapter reads itself (the others go to redis-py)."""
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True, slots=True)
class RedisTarget:
    """Where and how to connect.

    Attributes:
        driver_url: the URL handed to redis-py (our own options removed).
        cluster: connect with ``RedisCluster`` instead of ``Redis``.
        prefix: key prefix from the URL's ``prefix`` option, or None.
        driver_options: the names of the query options left for redis-py
            (for the adapter to check before redis-py sees them).
    """

    driver_url: str
    cluster: bool
    prefix: str | None
    driver_options: tuple[str, ...] = ()


def parse_url(url: str) -> RedisTarget:
    """Split a memory-core Redis URL into driver URL, cluster flag and prefix.

    Accepted: ``redis://[[user]:pass@]host[:port][/db]``, ``rediss://…``
    (TLS), ``unix:///path/to.sock[?db=N]``, and ``redis+cluster://host:port``
    / ``rediss+cluster://…`` (or ``?cluster=true``) for Redis Cluster. The
    query options ``prefix`` and ``cluster`` are ours; every other query
    option goes to redis-py unchanged.

    Raises:
        ValidationError: unknown scheme, bad ``cluster`` value, empty prefix,
            a database path that is not a number (``redis://host/abc``), or
            a cluster URL with a database other than 0 / a unix socket.
    """
    if not isinstance(url, str):
        raise ValidationError("url", f"must be a str, got {type(url).__name__}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValidationError("url", f"scheme must be one of {sorted(_SCHEMES)}, got {scheme!r}")
    driver_scheme, cluster = _SCHEMES[scheme]
    prefix: str | None = None
    passed: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "prefix":
            if not value:
                raise ValidationError("url", "prefix must not be empty")
            prefix = value
        elif key == "cluster":
            if value.lower() not in _TRUE | _FALSE:
                raise ValidationError("url", f"cluster must be true or false, got {value!r}")
            cluster = cluster or value.lower() in _TRUE
        else:
            passed.append((key, value))
    if cluster and driver_scheme == "unix":
        raise ValidationError("url", "Redis Cluster is reached over TCP, not a unix socket")
    database = parts.path[1:] if driver_scheme != "unix" else ""
    # redis-py ignores a path that is not a number: the data would go to db 0.
    if database and not (database.isascii() and database.isdigit()):
        raise ValidationError("url", f"the database (the path after host:port) must be a number, got {database!r}")
    if cluster and parts.path.strip("/") not in ("", "0"):
        raise ValidationError("url", "Redis Cluster has only database 0")
    query = "?" + urlencode(passed) if passed else ""
    driver_url = f"{driver_scheme}://{parts.netloc}{parts.path}{query}"
    return RedisTarget(driver_url, cluster, prefix, tuple(key for key, _ in passed))


def server_identity(driver_url: str) -> tuple[Hashable, int | str]:
    """The server and database a driver URL reaches, as redis-py reads it,
    spelled canonically (no I/O): ``((host, port), db)`` with the host as
    :func:`memory_core.identity.canonical_host` spells it (``localhost`` and
    ``127.0.0.1`` are one host) and 6379 for a missing port, or ``(socket
    path, db)`` for ``unix://`` (symlinks resolved). The database is the
    ``db`` query option, else the URL path, else 0 (redis-py's precedence).

    Args:
        driver_url: :attr:`RedisTarget.driver_url`.
    """
    parts = urlsplit(driver_url)
    query = dict(parse_qsl(parts.query))
    address: Hashable
    if parts.scheme == "unix":
        address, path_db = canonical_host(unquote(parts.path)), ""
    else:
        host = None if parts.hostname is None else unquote(parts.hostname)
        address, path_db = server_address(host, parts.port, DEFAULT_PORT), parts.path.strip("/")
    database = query.get("db") or path_db or "0"
    return address, int(database) if database.isdigit() else database
