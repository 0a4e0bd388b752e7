"""The key layout of one store, and the exact string encodings it sorts by.

Every key of a store starts with a Redis Cluster hash tag, so the keys that
one script touches always share a slot (see README.md, "Key layout"):

- ``{P}:…`` store-wide keys: the sequence counter, the message directory,
  the per-thread global records and the global thread indexes.
- ``{P:R}:…`` everything of resource ``R``: its record, its threads, their
  messages and every index over them.

``P`` is the escaped key prefix (the store's namespace) and ``R`` the escaped
resource id. Escaping keeps the tag well formed whatever the ids hold: ``%``,
``{`` and ``}`` are percent-encoded in both, and ``:`` in the prefix too, so
one store's keys can never look like another's.

Sorted sets are lexicographic (all scores 0, ``ZRANGEBYLEX``): a member
starts with a fixed-width, order-preserving text form of its sort key, so
ordering is exact at microsecond resolution (a double score could not hold
``created_at`` and the sequence together).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "Layout",
    "canon",
    "filter_fields",
    "escape",
    "message_member",
    "seq_text",
    "thread_member",
    "time_key",
    "time_of_key",
]

_NEG_BASE = 9_000_000_000_000_000
"""Negative times are stored as ``_NEG_BASE + us``: exact in a Lua double
(< 2**53) across the supported range (1900-2199 is about ±7.3e15 µs)."""


def time_key(us: int) -> str:
    """Order-preserving fixed-width text (17 chars) of a time in µs since the
    epoch: ``1`` + 16 digits for ``us >= 0``, ``0`` + 16 digits of
    ``9e15 + us`` for negative times. The Lua scripts compute the same text
    (``tkey``) so both sides agree byte for byte."""
    if us >= 0:
        return f"1{us:016d}"
    return f"0{_NEG_BASE + us:016d}"


def time_of_key(key: str) -> int:
    """The time in µs that :func:`time_key` wrote as ``key`` (its inverse)."""
    digits = int(key[1:])
    return digits if key[0] == "1" else digits - _NEG_BASE


def seq_text(sequence: int) -> str:
    """A store-wide sequence number as 20 zero-padded digits."""
    return f"{sequence:020d}"


def message_member(created_us: int, sequence: int, message_id: str) -> str:
    """Index member of a message: ``<time_key>:<seq 20>:<id>``. Sorting the
    members sorts by (created_at, sequence) (R-ORDER); the id only rides along
    (sequence numbers are unique)."""
    return f"{time_key(created_us)}:{seq_text(sequence)}:{message_id}"


def thread_member(at_us: int, thread_id: str) -> str:
    """Index member of a thread: ``<time_key>:<id>``: sorts by (time, id),
    the id compared by UTF-8 bytes, which is code-point order like Python's."""
    return f"{time_key(at_us)}:{thread_id}"


def escape(text: str, *, colon: bool = False) -> str:
    """Percent-encode ``%``, ``{``, ``}`` (and ``:`` when asked) so ``text``
    can sit inside a hash tag."""
    text = text.replace("%", "%25").replace("{", "%7B").replace("}", "%7D")
    return text.replace(":", "%3A") if colon else text


def canon(value: Any) -> str | None:
    """The R-META comparison form of a stored top-level metadata value.

    Two values match under R-META exactly when their forms are equal: the
    first letter is the JSON type (``n`` number, ``s`` str, ``b`` bool, ``z``
    null), so ``"5"`` never meets ``5`` and ``True`` never meets ``1``;
    numbers are exact (an integral float is written as the int it equals,
    any other float as its shortest repr), so ``5 == 5.0`` and big ints are
    never rounded. Lists and dicts return None: no filter can match them.
    """
    if value is None:
        return "z"
    if value is True:
        return "b1"
    if value is False:
        return "b0"
    if isinstance(value, int):
        return f"n{value}"
    if isinstance(value, float):
        return f"n{int(value)}" if value.is_integer() else f"n{value!r}"
    if isinstance(value, str):
        return f"s{value}"
    return None


class Layout:
    """Key names of one store (prefix ``prefix``).

    Args:
        prefix: the store's key prefix (its namespace); any non-empty str.
    """

    __slots__ = ("pattern", "store")

    def __init__(self, prefix: str) -> None:
        tag = escape(prefix, colon=True)
        self.store = "{" + tag + "}:"
        """Base of the store-wide keys (one slot)."""
        glob = "".join("\\" + ch if ch in "*?[]\\" else ch for ch in tag)
        self.pattern = "{" + glob + "[:}]*"
        """SCAN pattern matching exactly this store's keys (destroy only)."""

    def resource(self, resource_id: str) -> str:
        """Base of the keys of one resource (one slot): ``{P:R}:``."""
        return self.store[:-2] + ":" + escape(resource_id) + "}:"

    @property
    def record_pattern(self) -> str:
        """SCAN pattern matching every resource record ``{P:R}:r`` of this
        store (and possibly other keys: check with :meth:`record_owner`)."""
        return self.pattern[: -len("[:}]*")] + ":*}:r"

    def record_owner(self, key: str) -> str | None:
        """The resource id whose record ``key`` is, or None when ``key`` is
        not a resource record of this store."""
        head = self.store[:-2] + ":"
        if not (key.startswith(head) and key.endswith("}:r")):
            return None
        tag = key[len(head) : -3]
        if "}" in tag:  # an escaped id holds no "}": another key that ends alike
            return None
        return tag.replace("%7D", "}").replace("%7B", "{").replace("%25", "%")


def filter_fields(metadata: Mapping[str, Any]) -> list[str]:
    """Flat ``["~key", form, ...]`` filter fields of a whole metadata object
    (:func:`canon` forms; lists and dicts get none)."""
    out: list[str] = []
    for key, value in metadata.items():
        form = canon(value)
        if form is not None:
            out += ("~" + key, form)
    return out
