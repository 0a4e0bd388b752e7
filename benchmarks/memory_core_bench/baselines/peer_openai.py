"""Peer: the OpenAI Agents SDK's ``SQLiteSession`` (package ``openai-agents``).

One session per thread (``session_id`` = thread id) in one SQLite file,
as the SDK is meant to be used. Items are Responses-API message dicts
carrying the same id, content and metadata as memory-core's messages.
What it can do of the benchmark: save (``add_items``, a batch per thread)
and newest-N recall (``get_items(limit=N)``, oldest first, no count). It has
no ownership check, paging, filters, include windows or thread listing.

Sessions are kept in a small LRU (each one holds its own connections) and
closed when evicted.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents import SQLiteSession

from memory_core_bench.dataset import BenchMessage, ThreadSpec
from memory_core_bench.report import OPENAI_SESSION
from memory_core_bench.subjects import Answer, Kind, Subject, remove_sqlite_files

__all__ = ["OpenAIAgentsSession", "make"]

_LRU = 64


def make(backend: str, workdir: Path) -> OpenAIAgentsSession:
    """The peer, keeping its file under ``workdir``."""
    return OpenAIAgentsSession(backend, workdir / "openai-agents.db")


class OpenAIAgentsSession(Subject):
    """``agents.SQLiteSession`` doing the nearest equivalent work.

    Args:
        backend: group name (``"sqlite"``).
        path: database file (created).
    """

    kind: Kind = "peer"
    ops = frozenset({"save", "recall_newest"})

    def __init__(self, backend: str, path: Path) -> None:
        self.backend = backend
        self.label = OPENAI_SESSION
        self.path = path
        self._sessions: OrderedDict[str, SQLiteSession] = OrderedDict()

    async def open(self) -> None:
        """Create the folder (sessions open lazily)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def _session(self, thread_id: str) -> SQLiteSession:
        session = self._sessions.pop(thread_id, None)
        if session is None:
            session = SQLiteSession(thread_id, self.path)
            while len(self._sessions) >= _LRU:
                _, old = self._sessions.popitem(last=False)
                old.close()
        self._sessions[thread_id] = session
        return session

    async def close(self) -> None:
        """Close every session and delete the file."""
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        remove_sqlite_files(self.path)

    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """Nothing: a session row appears with its first items."""

    def prepare(self, messages: list[BenchMessage]) -> list[tuple[str, list[dict[str, Any]]]]:
        """Group into (thread, Responses-API items)."""
        grouped: dict[str, list[dict[str, Any]]] = {}
        for m in messages:
            grouped.setdefault(m.thread_id, []).append(
                {
                    "type": "message",
                    "id": m.id,
                    "role": m.role,
                    "content": m.content,
                    "metadata": m.metadata,
                    "created_at": m.created_at_us,
                }
            )
        return list(grouped.items())

    async def save(self, prepared: Any) -> None:
        """``add_items`` once per thread of the batch."""
        for thread_id, items in prepared:
            await self._session(thread_id).add_items(items)

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """``get_items(limit=n)`` (oldest first); no count."""
        items = await self._session(thread.id).get_items(limit=n)
        return Answer(-1, tuple(str(item.get("id")) for item in items))
