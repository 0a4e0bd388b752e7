"""URL and option parsing for the Qdrant vector store (no I/O).

URL forms (entry-point group ``memory_core.vector``):

- ``qdrant::memory:`` - Qdrant's engine in-process, in a private temporary
  directory that is removed on close;
- ``qdrant+path:///relative/dir`` and ``qdrant+path:////absolute/dir`` -
  Qdrant's engine in-process, persisted in that directory (three slashes and
  a relative path, four for an absolute one, as ``sqlite:///``);
- ``qdrant://host:6333``, ``qdrant+http://host:6333`` and
  ``qdrant+https://host:6333[/prefix]`` - a Qdrant server through
  qdrant-client's ``AsyncQdrantClient`` (REST; ``prefer_grpc=true`` for gRPC).

Query options (``?key=value``) and keyword options are the same names; a
keyword option overrides the URL's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from memory_core.errors import ValidationError
from memory_core.options import check_option_names, option_bool

__all__ = ["MEMORY", "STORE_CLASSES", "Settings", "check_positive_int", "parse_url", "resolve_url"]

MEMORY = ":memory:"
"""Path value of the in-memory embedded engine."""

Mode = Literal["edge", "server"]

STORE_CLASSES: dict[Mode, str] = {"edge": "QdrantEdgeStore", "server": "QdrantServerStore"}
"""Which class opens each mode (named in errors; this module imports neither)."""

_COMMON = frozenset({"overfetch", "batch_size"})
_SERVER = frozenset({"api_key", "prefer_grpc", "timeout", "exact", "grpc_port", "client"})
_EDGE = frozenset({"create_dirs"})
_QUERY_ONLY_FORBIDDEN = frozenset({"client"})


@dataclass(frozen=True, slots=True)
class Settings:
    """A parsed vector URL.

    Attributes:
        mode: ``"edge"`` (the in-process engine) or ``"server"`` (qdrant-client).
        path: edge only: :data:`MEMORY` or the directory as written.
        url: server only: the ``http(s)://host:port[/prefix]`` URL for qdrant-client.
        options: raw options from the URL query string (str values).
    """

    mode: Mode
    path: str | None = None
    url: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def _query(url: str, text: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, value in parse_qsl(text, keep_blank_values=True, strict_parsing=bool(text)):
        if key in options:
            raise ValidationError(f"URL option {key!r}", "given twice")
        if key in _QUERY_ONLY_FORBIDDEN:
            raise ValidationError(f"URL option {key!r}", "can only be given as a keyword option")
        options[key] = value
    return options


def parse_url(url: str) -> Settings:
    """Parse a Qdrant vector URL (see the module docstring).

    Args:
        url: e.g. ``"qdrant::memory:"``, ``"qdrant+path:////var/lib/app/vectors"``,
            ``"qdrant://localhost:6333?api_key=..."``.

    Returns:
        The :class:`Settings`; option values are not checked yet.

    Raises:
        ValidationError: not a qdrant URL, a ``qdrant+path`` URL with a host
            part or no path, or a server URL without a host.
    """
    if not isinstance(url, str) or ":" not in url:
        raise ValidationError("url", f"must be qdrant::memory:, qdrant+path:///dir or qdrant://host; got {url!r}")
    scheme, rest = url.split(":", 1)
    scheme = scheme.lower()
    rest, _, query = rest.partition("?")
    options = _query(url, query)
    if scheme == "qdrant" and rest == MEMORY:
        return Settings("edge", path=MEMORY, options=options)
    if scheme == "qdrant+path":
        if not rest.startswith("//"):
            raise ValidationError("url", f"{url!r}: use qdrant+path:///relative/dir or qdrant+path:////absolute/dir")
        rest = rest[2:]
        if rest == MEMORY:
            return Settings("edge", path=MEMORY, options=options)
        if not rest.startswith("/"):
            raise ValidationError(
                "url", f"{url!r} has a host part; use qdrant+path:///relative/dir or qdrant+path:////absolute/dir"
            )
        path = unquote(rest[1:])
        if not path:
            raise ValidationError("url", f"{url!r} names no directory")
        return Settings("edge", path=path, options=options)
    protocols = {"qdrant": "http", "qdrant+http": "http", "qdrant+https": "https"}
    if scheme not in protocols:
        raise ValidationError(
            "url", f"scheme must be qdrant, qdrant+path, qdrant+http or qdrant+https, got {scheme!r} in {url!r}"
        )
    parts = urlsplit(f"{protocols[scheme]}:{rest}")
    if not rest.startswith("//") or not parts.hostname:
        raise ValidationError("url", f"{url!r} names no host; use qdrant://host:6333 or qdrant::memory:")
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError as exc:
        raise ValidationError("url", f"{url!r}: {exc}") from None
    if parts.username or parts.password:
        raise ValidationError("url", "credentials in the URL are not supported; pass the api_key option")
    server_url = f"{protocols[scheme]}://{parts.netloc}{parts.path.rstrip('/')}"
    return Settings("server", url=server_url, options=options)


def resolve_url(url: str, options: dict[str, Any], *, mode: Mode) -> tuple[Settings, dict[str, Any]]:
    """Parse ``url`` for the store class of ``mode`` and check the merged
    options (keyword options override the URL's).

    Returns:
        The :class:`Settings` and the typed options (see :func:`check_options`).

    Raises:
        ValidationError: a malformed URL, a URL of the other mode (the message
            names the class that opens it), an unknown option or a bad value.
    """
    settings = parse_url(url)
    if settings.mode != mode:
        raise ValidationError(
            "url", f"{url!r} is not a URL for {STORE_CLASSES[mode]} (it opens a {STORE_CLASSES[settings.mode]})"
        )
    return settings, check_options(mode, {**settings.options, **options})


def check_options(mode: Mode, options: dict[str, Any]) -> dict[str, Any]:
    """Reject options the mode does not know and convert URL strings.

    Args:
        mode: ``"edge"`` or ``"server"``.
        options: merged URL and keyword options.

    Returns:
        The options with typed values (``overfetch``, ``batch_size``,
        ``timeout``, ``grpc_port``: int; ``prefer_grpc``, ``exact``,
        ``create_dirs``: bool).

    Raises:
        ValidationError: an unknown option or a bad value.
    """
    known = _COMMON | (_SERVER if mode == "server" else _EDGE)
    check_option_names(f"the {mode} Qdrant store", options, known)
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key in ("overfetch", "batch_size", "timeout", "grpc_port"):
            value = check_positive_int(value, key)
        elif key in ("prefer_grpc", "exact", "create_dirs"):
            value = option_bool(value, key)
        elif key == "api_key" and value is not None and not isinstance(value, str):
            raise ValidationError("api_key", "must be a str")
        out[key] = value
    return out


def check_positive_int(value: Any, name: str) -> int:
    """An int >= 1 (a decimal str from a URL is accepted).

    Raises:
        ValidationError: anything else (bools included).
    """
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError(name, f"must be an int >= 1, got {value!r}")
    return value
