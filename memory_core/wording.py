"""Plain words for what messages show a reader: counts of records
("3 threads, 1 message") and lists of names ("memory, sqlite"), never a
Python dict or list repr. Used by the library's messages that a command
line shows as they are (an import's counts, a URL's known schemes and
options) and by the commands' own lines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["RECORD_KINDS", "amount", "counted", "listed"]

_PLURALS = {"memory": "memories"}
"""Record kinds whose plural is not the name plus ``s``."""


RECORD_KINDS = ("resources", "threads", "messages")
"""The order records are counted in, whatever order a mapping has them in."""


def counted(counts: Mapping[str, int], *, none: str = "nothing") -> str:
    """``counts`` (record kind -> how many) as words, the kinds of
    :data:`RECORD_KINDS` first in that order, each in the singular or plural
    its number calls for, kinds of none left out: ``{"messages": 36,
    "resources": 0, "threads": 1}`` -> ``"1 thread, 36 messages"``; ``none``
    when nothing is counted."""
    order = sorted(counts, key=lambda kind: RECORD_KINDS.index(kind) if kind in RECORD_KINDS else len(RECORD_KINDS))
    return ", ".join(amount(counts[kind], kind) for kind in order if counts[kind]) or none


def amount(n: int, kind: str) -> str:
    """``n`` things of ``kind`` (a plural such as ``threads``) in the number
    ``n`` calls for: ``amount(1, "threads")`` -> ``"1 thread"``,
    ``amount(0, "messages")`` -> ``"0 messages"``."""
    return f"{n} {_kind(kind, n)}"


def _kind(kind: str, n: int) -> str:
    """``kind`` (a plural such as ``threads``, or a singular) in the number ``n`` calls for."""
    singular = next((one for one, many in _PLURALS.items() if many == kind), kind.removesuffix("s"))
    return singular if n == 1 else _PLURALS.get(singular, f"{singular}s")


def listed(names: Iterable[str]) -> str:
    """``names`` as a comma-separated line of words, in the order given:
    ``["memory", "sqlite"]`` -> ``"memory, sqlite"``."""
    return ", ".join(names)
