"""Peer: LangGraph's SQLite store (``langgraph-checkpoint-sqlite``,
``AsyncSqliteStore``), the long-term memory store of LangGraph agents.

Layout (the nearest equivalent of memory-core's model): a message is an item
in namespace ``("messages", resource_id, thread_id)`` keyed by its id, with
value ``{role, content, metadata, created_at}``; a thread is an item in
``("threads", resource_id)``. The store orders searches by ``updated_at``
DESC (second resolution), pages by ``limit``/``offset`` and filters with
``json_extract`` on the value. So it can do: save (one ``abatch`` of puts),
newest-N (``asearch(limit=N)``), an offset page, a metadata-filtered page, a
date-range page (``$gte``/``$lte`` on ``created_at``) and listing a
resource's threads; none of them returns a count, and it has no cursor or
include windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.store.base import PutOp
from langgraph.store.sqlite import AsyncSqliteStore  # type: ignore[import-untyped]
from memory_core.errors import AdapterClosedError

from memory_core_bench.dataset import BenchMessage, ThreadSpec
from memory_core_bench.report import LANGGRAPH_STORE
from memory_core_bench.subjects import Answer, Kind, Subject, remove_sqlite_files

__all__ = ["LangGraphSqliteStore", "make"]


def make(backend: str, workdir: Path) -> LangGraphSqliteStore:
    """The peer, keeping its file under ``workdir``."""
    return LangGraphSqliteStore(backend, workdir / "langgraph-store.db")


def _ns(resource_id: str, thread_id: str) -> tuple[str, ...]:
    return ("messages", resource_id, thread_id)


class LangGraphSqliteStore(Subject):
    """``AsyncSqliteStore`` doing the nearest equivalent work.

    Args:
        backend: group name (``"sqlite"``).
        path: database file (created).
    """

    kind: Kind = "peer"
    ops = frozenset({"save", "recall_newest", "page_offset", "filter_meta", "filter_date", "list_threads"})

    def __init__(self, backend: str, path: Path) -> None:
        self.backend = backend
        self.label = LANGGRAPH_STORE
        self.path = path
        self._conn: aiosqlite.Connection | None = None
        self._store: AsyncSqliteStore | None = None

    @property
    def store(self) -> AsyncSqliteStore:
        """The open store."""
        if self._store is None:
            raise AdapterClosedError("the LangGraph store: open() first")
        return self._store

    async def open(self) -> None:
        """Open the file (WAL, as the SDK's ``from_conn_string`` does not) and
        run the store's migrations."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = await aiosqlite.connect(str(self.path), isolation_level=None)
        await self._conn.execute("PRAGMA journal_mode=WAL")
        self._store = AsyncSqliteStore(self._conn)
        await self._store.setup()

    async def close(self) -> None:
        """Close and delete the file."""
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
        remove_sqlite_files(self.path)

    async def create_threads(self, threads: Sequence[ThreadSpec]) -> None:
        """One ``abatch`` of thread items."""
        await self.store.abatch(
            [
                PutOp(
                    ("threads", t.resource_id),
                    t.id,
                    {"title": t.title, "metadata": t.metadata, "created_at": t.created_at_us},
                    index=False,
                )
                for t in threads
            ]
        )

    def prepare(self, messages: list[BenchMessage]) -> list[PutOp]:
        """One ``PutOp`` per message."""
        return [
            PutOp(
                _ns(m.resource_id, m.thread_id),
                m.id,
                {"role": m.role, "content": m.content, "metadata": m.metadata, "created_at": m.created_at_us},
                index=False,
            )
            for m in messages
        ]

    async def save(self, prepared: Any) -> None:
        """``abatch`` of the puts."""
        await self.store.abatch(prepared)

    async def _search(self, thread: ThreadSpec, **kwargs: Any) -> Answer:
        items = await self.store.asearch(_ns(thread.resource_id, thread.id), **kwargs)
        return Answer(-1, tuple(item.key for item in items))

    async def recall_newest(self, thread: ThreadSpec, n: int) -> Answer:
        """``asearch(limit=n)`` (newest by updated_at), reversed to oldest first."""
        answer = await self._search(thread, limit=n)
        return Answer(-1, tuple(reversed(answer.ids)))

    async def page_offset(self, thread: ThreadSpec, page: int, per_page: int) -> Answer:
        """``asearch(limit=per_page, offset=page * per_page)``."""
        return await self._search(thread, limit=per_page, offset=page * per_page)

    async def filter_meta(self, thread: ThreadSpec, key: str, value: str, per_page: int) -> Answer:
        """``asearch(filter={"metadata.<key>": value}, limit=per_page)``."""
        return await self._search(thread, filter={f"metadata.{key}": value}, limit=per_page)

    async def filter_date(self, thread: ThreadSpec, start_us: int, end_us: int, per_page: int) -> Answer:
        """``asearch(filter={"created_at": {"$gte": .., "$lte": ..}}, limit=per_page)``."""
        return await self._search(thread, filter={"created_at": {"$gte": start_us, "$lte": end_us}}, limit=per_page)

    async def list_threads(self, resource_id: str, page: int, per_page: int) -> Answer:
        """``asearch(("threads", resource_id), limit=per_page, offset=...)``."""
        items = await self.store.asearch(("threads", resource_id), limit=per_page, offset=page * per_page)
        return Answer(-1, tuple(item.key for item in items))
