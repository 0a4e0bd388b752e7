"""``sqlite://`` URLs and namespaces -> where the database lives.

Accepted forms (SQLAlchemy's convention):

- ``sqlite:///relative/path.db``: a file relative to the working directory;
- ``sqlite:////absolute/path.db``: an absolute file path;
- ``sqlite://:memory:``, ``sqlite:///:memory:`` or ``sqlite://``: a private
  in-memory database.

The path is percent-decoded; ``?timeout=<seconds>&synchronous=<NORMAL|FULL>``
may follow. The scheme may also be spelled ``sqlite+aiosqlite``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote

from memory_core.errors import ValidationError
from memory_core.options import check_option_names, option_bool

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_PATH_BYTES",
    "MEMORY",
    "SQLiteSettings",
    "check_options",
    "check_path_length",
    "namespaced_path",
    "parse_url",
]

MEMORY = ":memory:"
"""The path that means "a private in-memory database"."""

DEFAULT_TIMEOUT = 30.0
"""Seconds a statement waits for another connection's lock (busy timeout)."""

MAX_PATH_BYTES = 504
"""The longest database path SQLite opens, in bytes of the file system's
encoding, symlinks resolved: its Unix file layer's 512-byte pathname limit
(``SQLITE_MAX_PATHNAME``, the default build's, Python's included) less the 8
of the ``-journal`` file name it derives from the database's. A longer path
fails in ``open`` with SQLite's bare "unable to open database file"."""

Synchronous = Literal["NORMAL", "FULL"]

_SCHEMES = ("sqlite", "sqlite+aiosqlite")
_NAMESPACE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_OPTIONS = frozenset({"timeout", "synchronous", "create_dirs"})


@dataclass(frozen=True, slots=True)
class SQLiteSettings:
    """Where and how to open the database.

    Attributes:
        path: absolute file path, or :data:`MEMORY`.
        timeout: busy timeout in seconds (> 0).
        synchronous: ``PRAGMA synchronous`` for file databases in WAL mode.
    """

    path: str
    timeout: float = DEFAULT_TIMEOUT
    synchronous: Synchronous = "NORMAL"

    @property
    def in_memory(self) -> bool:
        """Whether this is a private in-memory database (no file)."""
        return self.path == MEMORY


def parse_url(url: str) -> tuple[str, dict[str, str]]:
    """Split a ``sqlite://`` URL into (path, query options).

    Args:
        url: e.g. ``"sqlite:///memory.db?timeout=5"``.

    Returns:
        ``(path, options)``: ``path`` is :data:`MEMORY` or a file path as
        written (relative paths are not resolved here); ``options`` holds the
        raw query-string values.

    Raises:
        ValidationError: not a ``sqlite://`` URL, a host part (use three
            slashes), no path, or a repeated query option.
    """
    if not isinstance(url, str) or "://" not in url:
        raise ValidationError("url", f"must look like sqlite:///path.db, got {url!r}")
    scheme, rest = url.split("://", 1)
    if scheme.lower() not in _SCHEMES:
        raise ValidationError("url", f"scheme must be sqlite://, got {scheme!r}")
    rest, _, query = rest.partition("?")
    options: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)):
        if key in options:
            raise ValidationError(f"URL option {key!r}", "given twice")
        options[key] = value
    if rest in ("", MEMORY):
        return MEMORY, options
    if not rest.startswith("/"):
        raise ValidationError(
            "url", f"{url!r} has a host part; use sqlite:///relative.db or sqlite:////absolute/path.db"
        )
    path = unquote(rest[1:])
    if not path:
        raise ValidationError("url", f"{url!r} names no file; use sqlite:///path.db or sqlite://:memory:")
    return path, options


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate adapter options (from the URL query or keyword arguments).

    Args:
        options: ``timeout`` (seconds, number > 0, or its text),
            ``synchronous`` (``"NORMAL"`` or ``"FULL"``, case-insensitive)
            and/or ``create_dirs`` (a bool, or ``true``/``false``).

    Returns:
        The options normalised: ``timeout`` as float, ``synchronous``
        upper-cased, ``create_dirs`` a bool.

    Raises:
        ValidationError: an unknown option or a bad value.
    """
    check_option_names("sqlite", sorted(options), _OPTIONS)
    checked: dict[str, Any] = {}
    if "timeout" in options:
        raw = options["timeout"]
        try:
            if isinstance(raw, bool):
                raise TypeError
            timeout = float(raw)
        except (TypeError, ValueError):
            raise ValidationError("timeout", f"must be a number of seconds, got {raw!r}") from None
        if not 0 < timeout < 1e6:
            raise ValidationError("timeout", f"must be > 0 seconds, got {raw!r}")
        checked["timeout"] = timeout
    if "synchronous" in options:
        raw = options["synchronous"]
        if not isinstance(raw, str) or raw.upper() not in ("NORMAL", "FULL"):
            raise ValidationError("synchronous", f"must be 'NORMAL' or 'FULL', got {raw!r}")
        checked["synchronous"] = raw.upper()
    if "create_dirs" in options:
        checked["create_dirs"] = option_bool(options["create_dirs"], "create_dirs")
    return checked


def namespaced_path(path: str, namespace: str | None) -> str:
    """The database of ``namespace`` beside ``path``.

    ``/data/memory.db`` with namespace ``t1`` -> ``/data/memory-t1.db``.
    Relative paths are made absolute (against the current directory, now).
    An in-memory database stays in memory (every instance is its own).

    Raises:
        ValidationError: a namespace that is not 1-128 of ``[A-Za-z0-9_.-]``
            starting with a letter, digit or ``_``.
    """
    if namespace is not None and (not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace)):
        raise ValidationError(
            "namespace", f"must be 1-128 characters of [A-Za-z0-9_.-], not starting with '.' or '-': {namespace!r}"
        )
    if path == MEMORY:
        return MEMORY
    path = os.path.abspath(os.fspath(path))
    if namespace is None:
        return path
    folder, name = os.path.split(path)
    stem, suffix = os.path.splitext(name)
    return os.path.join(folder, f"{stem}-{namespace}{suffix}")


def check_path_length(path: str) -> None:
    """Refuse a database path SQLite cannot open for its length (blocking:
    resolving symlinks reads the file system; nothing is created).

    Args:
        path: a database file's path. An in-memory database has none: its
            callers check file databases only (:attr:`SQLiteSettings.in_memory`),
            so no spelling of a path is skipped here. The path is measured
            absolute, symlinks resolved (a relative one against the current
            directory, as SQLite would open it); a store's path is absolute
            already (:func:`namespaced_path`).

    Raises:
        ValidationError: field ``url``: the path, symlinks resolved, is longer
            than :data:`MAX_PATH_BYTES` bytes; the message names its length,
            the limit and the fix.
    """
    resolved = os.path.realpath(path)
    size = len(os.fsencode(resolved))
    if size <= MAX_PATH_BYTES:
        return
    how = "" if resolved == path else f" once its symlinks are resolved ({resolved})"
    raise ValidationError(
        "url",
        f"the database path {path} is {size} bytes long{how}; SQLite opens a path of at most "
        f"{MAX_PATH_BYTES} bytes (its 512-byte pathname limit, less the 8 of the '-journal' name it derives): "
        "put the database in a folder with a shorter path",
    )
