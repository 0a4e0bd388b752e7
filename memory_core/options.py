"""Adapter options: the names and values a storage or vector store URL (or
``connect`` keyword) may carry, checked alike by every adapter before any
I/O (:func:`check_option_names`, :func:`option_bool`), and the folder a
file-backed store lives in (:func:`ensure_folder`).

Each function raises (or returns) a
:class:`~memory_core.errors.ValidationError` naming the option.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote_plus, urlsplit

from memory_core.errors import MissingFolderError, ValidationError
from memory_core.wording import listed

__all__ = [
    "COMMON_OPTIONS",
    "check_option_names",
    "ensure_folder",
    "hide_password",
    "option_bool",
    "unknown_option",
    "url_namespace",
]

COMMON_OPTIONS = ("clock", "namespace")
"""Keywords every adapter's ``from_url`` takes besides its own options."""

_UNOFFERED = frozenset({"clock"})
"""Keywords accepted but never offered in a message: ``clock`` is a test
hook (an injectable clock; the adapters' READMEs say so), not an option a
user chooses."""


def unknown_option(
    adapter: str, name: str, accepted: Iterable[str], *, driver: Iterable[str] = (), driver_name: str = ""
) -> ValidationError:
    """The error for an option ``name`` an adapter does not take: it lists
    every keyword ``connect`` accepts for that adapter (its own plus
    :data:`COMMON_OPTIONS`; its driver's options, ``driver``, are only named,
    they are too many to list; test hooks, ``clock``, are accepted but not
    offered) as comma-separated words and, for a misspelling, the one meant
    (``namesapce`` -> "did you mean 'namespace'?", ``prefx`` -> "did you mean
    'prefix'?"); one of :data:`COMMON_OPTIONS` (only a keyword of
    ``connect``) found in a URL's query says so.

    Returns (does not raise) the :class:`ValidationError`, field ``option '<name>'``.
    """
    if name in COMMON_OPTIONS:  # a URL's query handed to from_url itself (connect() reads a namespace there)
        return ValidationError(
            f"option {name!r}",
            f"is read from a URL by connect() and the memory-core commands, not by from_url() "
            f"(from_url(url, {name}=...)); {adapter} URLs accept {listed(sorted(accepted))}",
        )
    known = sorted({*accepted, *COMMON_OPTIONS} - _UNOFFERED)
    close = difflib.get_close_matches(name, [*known, *sorted(driver)], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    also = f" and {driver_name}'s options" if driver_name else ""
    return ValidationError(f"option {name!r}", f"unknown; {hint}{adapter} accepts {listed(known)}{also}")


def _is_namespace(query_part: str) -> bool:
    return unquote_plus(query_part.partition("=")[0]) == "namespace"


def url_namespace(url: str, namespace: Any = None) -> tuple[str, Any]:
    """Move a ``namespace`` option of ``url``'s query into the keyword, so
    that ``sqlite:///m.db?namespace=t1`` names what ``connect("sqlite:///m.db",
    namespace="t1")`` opens (an operator reaches a program's namespaced store
    from the command line). Every other part of the URL is kept as written.

    Args:
        url: a storage or vector store URL.
        namespace: the namespace the caller chose (None: none).

    Returns:
        ``(url without the option, namespace)``; ``url`` unchanged and
        ``namespace`` as given when the query names none.

    Raises:
        ValidationError: field ``option 'namespace'``: named twice in the
            URL, empty in it, or named in the URL while the caller chose
            another (``memory-core check`` and ``demo`` run in namespaces
            of their own).
    """
    head, mark, query = url.partition("?")
    query, hash_mark, fragment = query.partition("#")
    parts = query.split("&") if mark else []
    named = [unquote_plus(part.partition("=")[2]) for part in parts if _is_namespace(part)]
    if not named:
        return url, namespace
    field = "option 'namespace'"
    if len(named) > 1:
        raise ValidationError(field, f"is named {len(named)} times in the URL; name it once")
    if not named[0]:
        raise ValidationError(field, "is empty in the URL; name a namespace or drop the option")
    if namespace is not None and namespace != named[0]:
        raise ValidationError(
            field,
            f"the URL names {named[0]!r} and the caller {namespace!r} (memory-core check and demo run in "
            "namespaces of their own); name one",
        )
    rest = "&".join(part for part in parts if not _is_namespace(part))
    return head + (f"?{rest}" if rest else "") + hash_mark + fragment, named[0]


_NEAR_MISS = 0.8
"""How alike (difflib ratio) a name passed on to a driver may be to a known
one before it counts as a misspelling of it (``schem``/``schema`` 0.91;
``search_path``/``ef_search`` 0.6 stays a server setting)."""


def option_bool(value: Any, name: str) -> bool:
    """A bool option: a bool, or its text from a URL query (``true/false``,
    ``1/0``, ``yes/no``, ``on/off``, any case).

    Raises:
        ValidationError: anything else, field ``name``.
    """
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
    if not isinstance(value, bool):
        raise ValidationError(name, f"must be a bool (or true/false in a URL), got {value!r}")
    return value


def ensure_folder(folder: str, *, create_dirs: bool, url_example: str) -> list[str]:
    """The folder a store's file or directory goes in, checked before the
    store writes anything (blocking: run it in a worker thread).

    A store never makes a missing folder on its own: a misspelt path would
    otherwise become a new, empty store elsewhere while the real one sits
    unused (SQLite itself refuses a missing folder). With ``create_dirs``
    the folder and its missing parents are made.

    Args:
        folder: the absolute folder path.
        create_dirs: make the folder (and parents) when missing.
        url_example: the store's URL with ``?create_dirs=true``, for the fix.

    Returns:
        The folders made, deepest first (empty when it existed).

    Raises:
        MissingFolderError: field ``url``: ``folder`` is missing (and not
            ``create_dirs``); the message names the folder and both fixes.
        ValidationError: field ``url``: ``folder`` is not a folder.
    """
    if os.path.isdir(folder):
        return []
    if os.path.exists(folder):
        raise ValidationError("url", f"{folder!r} is not a folder")
    if not create_dirs:
        raise MissingFolderError("url", folder, url_example)
    made = []
    missing = folder
    while missing and not os.path.exists(missing):
        made.append(missing)
        parent = os.path.dirname(missing)
        if parent == missing:
            break
        missing = parent
    os.makedirs(folder, exist_ok=True)
    return made


def check_option_names(
    adapter: str,
    names: Iterable[str],
    accepted: Iterable[str],
    *,
    driver: Iterable[str] = (),
    driver_name: str = "",
    passed_on: bool = False,
) -> None:
    """Refuse, before any I/O and before a driver sees it, an option name
    (a URL query key or a keyword) that neither the adapter nor its driver
    takes: every adapter checks its URL options with this, so a typo reads
    alike everywhere (:func:`unknown_option`: "did you mean ...?").

    Args:
        adapter: the adapter's name in the message (``"redis"``).
        names: the option names given.
        accepted: the adapter's own options.
        driver: options its driver takes and the adapter passes on (redis-py's
            keywords, PyMongo's URI options, asyncpg's connection parameters).
        driver_name: the driver's name in the message (``"redis-py"``).
        passed_on: True when the driver also takes names no list can hold
            (PostgreSQL server settings such as ``application_name``): a name
            is then refused only when it is a near miss of a known one
            (``schem`` for ``schema``), and the rest go to the driver, which
            judges them when it connects.

    Raises:
        ValidationError: the first unknown name (field ``option '<name>'``).
    """
    own, theirs = set(accepted), set(driver)
    for name in names:
        if name in own or name in theirs:
            continue
        near = difflib.get_close_matches(name, [*own, *theirs, *COMMON_OPTIONS], n=1, cutoff=_NEAR_MISS)
        if passed_on and name not in COMMON_OPTIONS and not near:
            continue
        raise unknown_option(adapter, name, own, driver=theirs, driver_name=driver_name)


def hide_password(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part replaced by
    ``***``, for reprs and error messages (which end up in logs); any other
    text is returned as it is. A text that does not parse as a URL (a
    malformed port, a bracket) is returned as it is only when it holds no
    ``@``; otherwise everything before its last ``@`` is hidden."""
    if "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***" + url[url.rindex("@") :]
    if "@" not in parts.netloc:
        return url
    credentials, hosts = parts.netloc.rsplit("@", 1)
    if ":" not in credentials:
        return url
    user = credentials.split(":", 1)[0]
    return parts._replace(netloc=f"{user}:***@{hosts}").geturl()
