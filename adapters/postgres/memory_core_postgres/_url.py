"""``postgresql://`` / ``postgres://`` URLs and options -> connection settings.

The URL is libpq's (``postgresql://user:password@host:port/database``); the
query string may carry this adapter's options, which are taken out before
the rest of the URL goes to asyncpg (which reads ``sslmode``, ``host`` ...,
:data:`DRIVER_OPTIONS`, and passes other parameters on as server settings,
:data:`~memory_core_postgres._settings.SERVER_SETTINGS`; any other name is
refused before any I/O, see :func:`parse_url`):

- ``schema``: the PostgreSQL schema the store's tables live in (default
  ``memory_core``), so several stores share one database;
- ``min_size`` / ``max_size``: connection pool bounds (default 1 and 10);
- ``text_search_config``: the text search configuration of the full-text
  column (default ``simple``: no stemming, any language);
- ``index`` / ``ef_search``: the vector store's search mode (see
  :mod:`.vector`); the storage ignores them, so one URL serves both.

A ``namespace`` (tests, ``memory-core check``) selects the schema
``<schema>_<namespace>``.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from memory_core.errors import ValidationError
from memory_core.identity import server_addresses
from memory_core.options import check_option_names

from memory_core_postgres._settings import SERVER_SETTINGS

__all__ = [
    "DEFAULT_PORT",
    "DEFAULT_SCHEMA",
    "DRIVER_OPTIONS",
    "VECTOR_OPTIONS",
    "PostgresSettings",
    "check_options",
    "parse_url",
    "quote_ident",
    "schema_name",
    "server_identity",
]

DEFAULT_SCHEMA = "memory_core"
"""Schema of a store whose URL names none."""
DEFAULT_PORT = 5432
"""Port of a host the URL (and ``PGPORT``) names without one."""

_SCHEMES = ("postgresql", "postgres")
_OPTIONS = frozenset({"schema", "min_size", "max_size", "text_search_config"})
VECTOR_OPTIONS = frozenset({"index", "ef_search", "overfetch", "batch_size"})
"""Options only the pgvector store reads (the storage ignores them in a shared URL)."""
DRIVER_OPTIONS = frozenset(
    {
        "host", "port", "dbname", "database", "user", "password", "passfile", "service", "sslmode", "sslcert",
        "sslkey", "sslrootcert", "sslnegotiation", "sslcrl", "sslpassword", "ssl_min_protocol_version",
        "ssl_max_protocol_version", "target_session_attrs", "krbsrvname", "gsslib", "options",
    }
)  # fmt: skip
"""The connection parameters asyncpg reads from a URL's query, and libpq's
``options`` (``-c name=value``), which it passes to the server; it passes
every other name to the server as a setting (``application_name``,
``statement_timeout`` ...: :data:`~memory_core_postgres._settings.SERVER_SETTINGS`)."""
_LIBPQ_ONLY = frozenset(
    {
        "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
        "hostaddr", "fallback_application_name", "channel_binding", "require_auth", "requirepeer",
        "sslcompression", "sslsni", "gssencmode", "gssdelegation", "load_balance_hosts", "replication",
        "servicefile",
    }
)  # fmt: skip
"""libpq connection parameters asyncpg does not read (it would send them to
the server as settings, which refuses them): refused with what to use instead."""
_SETTINGS_NOTE = (
    "and PostgreSQL's session settings (application_name, statement_timeout, ...; one this adapter "
    "does not know, from a newer server, goes as ?options=-c%20name%3Dvalue); "
    "the accepted names: memory-core's operator guide, PostgreSQL URLs"
)
_SCHEMA = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAMESPACE = re.compile(r"[A-Za-z0-9_-]+")
_TS_CONFIG = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?")
MAX_IDENTIFIER = 63
"""PostgreSQL's identifier length limit (NAMEDATALEN - 1 bytes)."""


@dataclass(frozen=True, slots=True)
class PostgresSettings:
    """Where and how to connect.

    Attributes:
        dsn: the URL handed to asyncpg (this adapter's options removed).
        schema: the schema holding the store's tables (unquoted name).
        min_size / max_size: connection pool bounds (1 <= min <= max).
        text_search_config: ``regconfig`` of the full-text column.
    """

    dsn: str
    schema: str = DEFAULT_SCHEMA
    min_size: int = 1
    max_size: int = 10
    text_search_config: str = "simple"


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (``"`` doubled)."""
    return '"' + name.replace('"', '""') + '"'


def parse_url(url: str) -> tuple[str, dict[str, str]]:
    """Split a PostgreSQL URL into (dsn for asyncpg, this adapter's options).

    Accepted query names: this adapter's options (``schema`` ...,
    :data:`VECTOR_OPTIONS`), asyncpg's connection parameters
    (:data:`DRIVER_OPTIONS`), PostgreSQL's session settings
    (:data:`~memory_core_postgres._settings.SERVER_SETTINGS`, any case) and
    dotted names (an extension's settings); the last two go to the server.

    Raises:
        ValidationError: not a ``postgresql://``/``postgres://`` URL, an
            option given twice, or any other name (field ``option '<name>'``:
            "did you mean ...?" for a misspelling, ``?prefx=``, ``?sslmod=``;
            :func:`memory_core.options.check_option_names`), including
            ``search_path`` (the store sets it: ``?schema=``) and libpq
            parameters asyncpg does not read (``connect_timeout``).
    """
    if not isinstance(url, str) or "://" not in url:
        raise ValidationError("url", f"must look like postgresql://user@host:5432/database, got {url!r}")
    parts = urlsplit(url)
    if parts.scheme.lower() not in _SCHEMES:
        raise ValidationError("url", f"scheme must be postgresql:// or postgres://, got {parts.scheme!r}")
    ours: dict[str, str] = {}
    passed: list[tuple[str, str]] = []
    seen: set[str] = set()
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key in seen:
            raise ValidationError(f"URL option {key!r}", "given twice")
        seen.add(key)
        if key in _OPTIONS | VECTOR_OPTIONS:
            ours[key] = value
        else:
            passed.append((key, value))
    _check_passed([key for key, _ in passed])
    dsn = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(passed), parts.fragment))
    return dsn, ours


def _check_passed(names: list[str]) -> None:
    """Refuse a name asyncpg would hand the server that is no setting of
    it (see :func:`parse_url`), before the server refuses the connection."""
    for name in names:
        if name == "search_path":
            raise ValidationError(
                f"option {name!r}", "is set by the store to its schema; name the schema with ?schema=<name>"
            )
        if name in _LIBPQ_ONLY:
            raise ValidationError(
                f"option {name!r}",
                "is a libpq parameter that asyncpg (this adapter's driver) does not read; leave it out "
                f"(asyncpg reads {sorted(DRIVER_OPTIONS)})",
            )
    unknown = [name for name in names if name.lower() not in SERVER_SETTINGS and "." not in name]
    try:
        check_option_names(
            "postgresql",
            unknown,
            _OPTIONS | VECTOR_OPTIONS,
            driver=DRIVER_OPTIONS | SERVER_SETTINGS,
            driver_name="asyncpg",
        )
    except ValidationError as exc:
        raise ValidationError(exc.field, f"{exc.reason} {_SETTINGS_NOTE}", exc.rule) from None


def _positive_int(raw: Any, field: str) -> int:
    if isinstance(raw, bool):
        raise ValidationError(field, f"must be an int >= 1, got {raw!r}")
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValidationError(field, f"must be an int >= 1, got {raw!r}") from None
    if not 1 <= value <= 10_000 or (isinstance(raw, float) and raw != value):
        raise ValidationError(field, f"must be an int from 1 to 10000, got {raw!r}")
    return value


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate adapter options (from the URL query or keyword arguments).

    Args:
        options: ``schema`` (a plain identifier, at most 63 characters),
            ``min_size``/``max_size`` (pool bounds, ints 1-10000, min <= max),
            ``text_search_config`` (a text search configuration name such as
            ``simple`` or ``english``).

    Returns:
        The options normalised (ints as int).

    Raises:
        ValidationError: an unknown option or a bad value, naming it.
    """
    check_option_names("postgresql", sorted(options), _OPTIONS)
    checked: dict[str, Any] = {}
    if "schema" in options:
        schema = options["schema"]
        if not isinstance(schema, str) or not _SCHEMA.fullmatch(schema) or len(schema) > MAX_IDENTIFIER:
            raise ValidationError("schema", f"must be 1-63 of [A-Za-z0-9_], not starting with a digit: {schema!r}")
        checked["schema"] = schema
    for field in ("min_size", "max_size"):
        if field in options:
            checked[field] = _positive_int(options[field], field)
    low, high = checked.get("min_size", 1), checked.get("max_size", 10)
    if low > high:
        raise ValidationError("min_size", f"must be <= max_size ({high}), got {low}")
    if "text_search_config" in options:
        config = options["text_search_config"]
        if not isinstance(config, str) or not _TS_CONFIG.fullmatch(config):
            raise ValidationError("text_search_config", f"must be a configuration name like 'english', got {config!r}")
        checked["text_search_config"] = config
    return checked


def schema_name(schema: str, namespace: str | None) -> str:
    """The schema of a store: ``schema``, or ``<schema>_<namespace>``.

    Raises:
        ValidationError: a namespace that is not 1+ of ``[A-Za-z0-9_-]``, or a
            result longer than PostgreSQL's 63-character identifier limit
            (longer names would be silently truncated, merging namespaces).
    """
    if namespace is None:
        return schema
    if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
        raise ValidationError("namespace", f"must be 1+ characters of [A-Za-z0-9_-], got {namespace!r}")
    name = f"{schema}_{namespace}"
    if len(name) > MAX_IDENTIFIER:
        raise ValidationError("namespace", f"schema {name!r} would exceed PostgreSQL's 63-character limit")
    return name


def server_identity(dsn: str) -> tuple[frozenset[Hashable], str]:
    """The servers and the database a libpq URL reaches, spelled canonically
    (no I/O): the hosts of the URL (or its ``host`` option, else ``PGHOST``,
    else this machine) as :func:`memory_core.identity.server_addresses` reads
    them (loopback spellings are one host; a host without a port takes the
    ``port`` option, else ``PGPORT``, else 5432; a socket folder is resolved),
    and the database (the URL path, else the ``dbname`` option, else
    ``PGDATABASE``, else the user name, as libpq defaults it).

    Args:
        dsn: :attr:`PostgresSettings.dsn`.
    """
    parts = urlsplit(dsn)
    query = dict(parse_qsl(parts.query))
    credentials, _, hosts = parts.netloc.rpartition("@")
    user = unquote(credentials.partition(":")[0]) or query.get("user") or os.environ.get("PGUSER") or getpass.getuser()
    port = query.get("port") or os.environ.get("PGPORT") or ""
    default_port = int(port) if port.isdigit() else DEFAULT_PORT
    hosts = query.get("host") or unquote(hosts) or os.environ.get("PGHOST", "")
    database = unquote(parts.path.lstrip("/")) or query.get("dbname") or os.environ.get("PGDATABASE") or user
    return server_addresses(hosts, default_port), database
