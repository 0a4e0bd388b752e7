"""What an export's trailer holds and what a copy verifies: record counts and
sha256 digests over the canonical encoding of
:func:`memory_core.transfer.records.encode` (one line per record, ending in
``\\n``):

- per thread: its record, then its messages in R-ORDER;
- per resource: its record (when there is one), then the ids of its
  messages, one per line, in R-ORDER across its threads (so the order of
  messages with equal ``created_at`` in different threads is verified too).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Difference", "Summary", "first_difference"]

_KINDS = ("resources", "threads", "messages")


@dataclass
class Summary:
    """Counts and digests of a stream of records, fed in file order.

    Memory: one hash state per thread and per resource (a few hundred bytes
    each), nothing per message.

    Attributes:
        counts: ``{"resources": n, "threads": n, "messages": n}``.
    """

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    _threads: dict[str, Any] = field(default_factory=dict)
    _resources: dict[str, Any] = field(default_factory=dict)

    def add(self, kind: str, record: dict[str, Any], line: str) -> None:
        """Count a record and fold its canonical ``line`` into its digest
        (a message into its thread's)."""
        data = line.encode("utf-8") + b"\n"
        if kind == "message":
            self.counts["messages"] += 1
            self._threads.setdefault(record["thread_id"], hashlib.sha256()).update(data)
            self._resources.setdefault(record["resource_id"], hashlib.sha256()).update(
                record["id"].encode("utf-8", "surrogatepass") + b"\n"
            )
        elif kind == "thread":
            self.counts["threads"] += 1
            self._threads.setdefault(record["id"], hashlib.sha256()).update(data)
        else:
            self.counts["resources"] += 1
            self._resources.setdefault(record["id"], hashlib.sha256()).update(data)

    def thread_digests(self) -> dict[str, str]:
        """Thread id -> hex sha256."""
        return {key: value.hexdigest() for key, value in self._threads.items()}

    def resource_digests(self) -> dict[str, str]:
        """Resource id -> hex sha256."""
        return {key: value.hexdigest() for key, value in self._resources.items()}

    def trailer(self) -> dict[str, Any]:
        """The trailer record: ``{"kind": "trailer", "counts": ..., "threads":
        {id: digest}, "resources": {id: digest}}``."""
        return {
            "kind": "trailer",
            "counts": dict(self.counts),
            "threads": self.thread_digests(),
            "resources": self.resource_digests(),
        }


@dataclass(frozen=True)
class Difference:
    """Where two summaries part: ``subject`` is ``"counts"``, ``"thread"`` or
    ``"resource"``; ``key`` the count name or id; ``expected``/``found`` the
    two values (None: absent)."""

    subject: str
    key: str
    expected: Any
    found: Any

    def __str__(self) -> str:
        return f"{self.subject} {self.key!r}: expected {self.expected!r}, found {self.found!r}"

    def between(self, expected: str, found: str) -> str:
        """The difference in words, naming the two sides (``"the source"``,
        ``"the destination"``): what one holds and the other lacks, or that
        they differ."""
        where = f"{self.subject} {self.key!r}"
        if self.expected is None:
            return f"{where}: {found} holds it, {expected} does not"
        if self.found is None:
            return f"{where}: {expected} holds it, {found} does not"
        if self.subject == "counts":
            return f"{where}: {expected} holds {self.expected!r}, {found} {self.found!r}"
        return f"{where}: its content differs between {expected} and {found}"


def first_difference(expected: dict[str, Any], found: dict[str, Any]) -> Difference | None:
    """The first difference between two trailers, or None when they are
    equal: threads first (in ``expected``'s order, then threads only
    ``found`` has), then resources the same way, then the counts."""
    for subject, key in (("thread", "threads"), ("resource", "resources")):
        want_all, got_all = expected.get(key, {}), found.get(key, {})
        for name, digest in want_all.items():
            if got_all.get(name) != digest:
                return Difference(subject, name, digest, got_all.get(name))
        for name in got_all:
            if name not in want_all:
                return Difference(subject, name, None, got_all[name])
    for kind in _KINDS:
        want, got = expected.get("counts", {}).get(kind), found.get("counts", {}).get(kind)
        if want != got:
            return Difference("counts", kind, want, got)
    return None
