"""``PgVectorStore``: the memory-core vector store on PostgreSQL + pgvector (R-VEC).

One table per dimension, ``memory_messages_<dim>``, in the store's schema
(the same URL, schema and namespace rules as :class:`PostgresStorage`, so
``connect_vector`` takes the storage's URL): ``point_id uuid`` primary key
(:func:`memory_core.vector.point_id`), ``message_id``, ``chunk``,
``thread_id``, ``resource_id``, ``created_at`` (µs) and ``embedding
vector(<dim>)`` stored L2-normalised, with btree indexes on the three ids.

Search is exact by default: a scan of the rows under the thread/resource
filter (the indexes find them), best chunk per message, cosine score
``1 - (embedding <=> query)``; so recall equals brute force. ``index=hnsw``
adds an HNSW index (``vector_cosine_ops``) and searches through it with
``hnsw.ef_search`` = ``ef_search``: faster on large collections, approximate,
and (pgvector 0.6 has no iterative index scans) a filtered search may return
fewer than ``top_k`` hits when the filter is selective.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

import asyncpg
import numpy as np
import numpy.typing as npt
from memory_core.errors import AdapterClosedError, BackendError, BackendGuard, ValidationError
from memory_core.validation import check_id
from memory_core.vector import VectorHit, VectorPoint, collection_name, point_id
from pgvector.asyncpg import register_vector

from memory_core_postgres._schema import LOCK_CLASS
from memory_core_postgres._url import DEFAULT_SCHEMA, VECTOR_OPTIONS, check_options, parse_url, quote_ident, schema_name
from memory_core_postgres.storage import keep_session

__all__ = ["MAX_TOP_K", "PgVectorStore"]

MAX_TOP_K = 1000
"""Largest ``top_k`` a search accepts (as the core's recall limit)."""

_TABLE = re.compile(r"memory_messages_([1-9][0-9]*)")


def _unit(vector: Any, field: str) -> npt.NDArray[np.float32]:
    """A finite, non-zero 1-D vector, L2-normalised, as float32."""
    try:
        array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValidationError(field, "must be a 1-D array of numbers") from None
    norm = float(np.linalg.norm(array)) if array.ndim == 1 and array.size else 0.0
    if array.ndim != 1 or not np.all(np.isfinite(array)) or not 0.0 < norm < float("inf"):
        raise ValidationError(field, "must be a non-empty 1-D array of finite numbers, not all zero")
    if array.size > 16000:
        raise ValidationError(field, f"has {array.size} dimensions; pgvector stores at most 16000")
    return array / np.float32(norm)


class PgVectorStore:
    """Semantic-recall vectors in PostgreSQL with pgvector.

    Construction does no I/O; ``open()`` creates the pool, the ``vector``
    extension (if missing; needs the privilege) and the schema. Tables are
    created per dimension on first upsert, under an advisory lock. Driver
    errors are raised as :class:`~memory_core.errors.BackendError`.

    Args:
        dsn: a libpq URL (see :meth:`from_url` for the accepted forms).
        schema / namespace / min_size / max_size: as for
            :class:`~memory_core_postgres.PostgresStorage`.
        index: ``"exact"`` (default: brute force under the filter, exact
            recall) or ``"hnsw"`` (approximate, see the module docstring).
        ef_search: HNSW candidate list size per search (default 100).

    Raises:
        ValidationError: a bad option.
    """

    backend_name = "pgvector"

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        namespace: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        index: str = "exact",
        ef_search: int = 100,
    ) -> None:
        options = check_options({"schema": schema, "min_size": min_size, "max_size": max_size})
        if index not in ("exact", "hnsw"):
            raise ValidationError("index", f"must be 'exact' or 'hnsw', got {index!r}")
        if isinstance(ef_search, bool) or not isinstance(ef_search, int) or not 1 <= ef_search <= 1000:
            raise ValidationError("ef_search", f"must be an int from 1 to 1000, got {ef_search!r}")
        self.dsn = dsn
        self.schema = schema_name(options["schema"], namespace)
        self.min_size = options["min_size"]
        self.max_size = options["max_size"]
        self.index = index
        self.ef_search = ef_search
        self._pool: asyncpg.Pool | None = None
        self._tables: set[int] = set()
        self._closed = False

    @classmethod
    def from_url(cls, url: str, *, clock: Any = None, namespace: str | None = None, **options: Any) -> PgVectorStore:
        """Build a store from a URL (no I/O).

        Args:
            url: ``postgresql://`` or ``postgres://`` URL (the storage's URL
                works); query options ``schema``, ``min_size``, ``max_size``,
                ``index`` (``exact``/``hnsw``), ``ef_search``.
            clock: accepted for the registry's signature; unused.
            namespace: the schema ``<schema>_<namespace>``.
            **options: the same options; they override the URL's.

        Raises:
            ValidationError: a malformed URL, unknown option or bad value.
        """
        dsn, query = parse_url(url)
        merged: dict[str, Any] = {**query, **options}
        vector_options = {k: merged.pop(k) for k in list(merged) if k in VECTOR_OPTIONS}
        merged.pop("text_search_config", None)  # a storage option: shared URLs may carry it
        if "ef_search" in vector_options:
            raw = vector_options["ef_search"]
            vector_options["ef_search"] = int(raw) if isinstance(raw, str) and raw.isdigit() else raw
        return cls(dsn, namespace=namespace, **check_options(merged), **vector_options)

    def __repr__(self) -> str:
        return f"PgVectorStore(schema={self.schema!r}, index={self.index!r})"

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def is_retryable(self, exc: Exception) -> bool:
        """Serialization failures, deadlocks, lost or refused connections."""
        state = getattr(exc, "sqlstate", None) or ""
        return state.startswith(("40001", "40P01", "53300", "57P", "08")) or isinstance(
            exc, asyncpg.exceptions.InterfaceError | OSError
        )

    def _guard(self, operation: str) -> BackendGuard:
        return BackendGuard(self, operation)

    async def open(self) -> None:
        """Connect, create the extension and schema if missing (idempotent).

        Raises:
            AdapterClosedError: the store was closed.
            BackendError: the server is unreachable or has no pgvector.
        """
        if self._closed:
            raise AdapterClosedError("pgvector store is closed")
        if self._pool is not None:
            return
        with self._guard("open"):
            extension_schema = await self._prepare()
            pool = await asyncpg.create_pool(
                self.dsn,
                min_size=self.min_size,
                max_size=self.max_size,
                server_settings={
                    "search_path": f"{quote_ident(self.schema)}, {quote_ident(extension_schema)}",
                    "hnsw.ef_search": str(self.ef_search),
                },
                init=lambda conn: register_vector(conn, schema=extension_schema),
                reset=keep_session,
            )
            try:
                async with pool.acquire() as conn:
                    await self._refresh(conn)
            except BaseException:
                await pool.close()
                raise
        self._pool = pool

    async def _prepare(self) -> str:
        """Create the extension (if missing) and the schema; returns the
        schema the extension lives in (its type and operators are found there)."""
        conn = await asyncpg.connect(self.dsn)
        try:
            if await conn.fetchval("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'") is None:
                raise BackendError(
                    self.backend_name, "open", "the server has no pgvector extension (CREATE EXTENSION vector)"
                )
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext('vector'))", LOCK_CLASS)
                await conn.execute(
                    f"CREATE EXTENSION IF NOT EXISTS vector; CREATE SCHEMA IF NOT EXISTS {quote_ident(self.schema)}"
                )
            return str(
                await conn.fetchval(
                    "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
                )
            )
        finally:
            await conn.close()

    async def close(self) -> None:
        """Release the pool (idempotent)."""
        if self._closed:
            return
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            with self._guard("close"):
                await pool.close()

    async def destroy(self) -> None:
        """Drop this store's tables (and its schema when that leaves it
        empty), then close. For tests and benchmarks."""
        pool = await self._ready()
        with self._guard("destroy"):
            async with pool.acquire() as conn:
                await self._refresh(conn)
                for dimension in sorted(self._tables):
                    await conn.execute(f"DROP TABLE IF EXISTS {self._table(dimension)}")
                empty = await conn.fetchval(
                    "SELECT NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = $1)",
                    self.schema,
                )
                if empty:
                    await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(self.schema)}")
        await self.close()

    async def _ready(self) -> asyncpg.Pool:
        if self._closed:
            raise AdapterClosedError("pgvector store is closed")
        if self._pool is None:
            await self.open()
        assert self._pool is not None
        return self._pool

    # ------------------------------------------------------------------ layout

    def _table(self, dimension: int) -> str:
        return f"{quote_ident(self.schema)}.{collection_name(dimension)}"

    async def _refresh(self, conn: asyncpg.Connection) -> None:
        """Re-read which dimension tables exist (other processes create them)."""
        names = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", self.schema)
        self._tables = {int(m.group(1)) for row in names if (m := _TABLE.fullmatch(row[0]))}

    async def _ensure(self, conn: asyncpg.Connection, dimension: int) -> None:
        if dimension in self._tables:
            return
        table = self._table(dimension)
        name = collection_name(dimension)
        script = (
            f'CREATE TABLE IF NOT EXISTS {table} (point_id uuid PRIMARY KEY, message_id text COLLATE "C" NOT NULL,'
            ' chunk integer NOT NULL, thread_id text COLLATE "C" NOT NULL, resource_id text COLLATE "C" NOT NULL,'
            f" created_at bigint NOT NULL, embedding vector({dimension}) NOT NULL);"
            f" CREATE INDEX IF NOT EXISTS {name}_message ON {table} (message_id);"
            f" CREATE INDEX IF NOT EXISTS {name}_thread ON {table} (thread_id);"
            f" CREATE INDEX IF NOT EXISTS {name}_resource ON {table} (resource_id);"
        )
        if self.index == "hnsw" and dimension <= 2000:  # pgvector indexes at most 2000 dimensions
            script += f" CREATE INDEX IF NOT EXISTS {name}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops);"
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", LOCK_CLASS, f"{self.schema}.{name}")
            await conn.execute(script)
        self._tables.add(dimension)

    # ------------------------------------------------------------------ VectorStore

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        """Insert or replace these points (same message id and chunk replaces);
        vectors are stored L2-normalised, each dimension in its own table.

        Raises:
            ValidationError: a point with a bad id, chunk, time or vector;
                nothing is written.
            BackendError: the server failed.
        """
        groups: dict[int, dict[str, tuple[Any, ...]]] = {}
        for index, point in enumerate(points):
            field = f"points[{index}]"
            if not isinstance(point, VectorPoint):
                raise ValidationError(field, f"must be a VectorPoint, got {type(point).__name__}")
            for name in ("message_id", "thread_id", "resource_id"):
                check_id(getattr(point, name), f"{field}.{name}")
            for name in ("chunk", "created_at_us"):
                value = getattr(point, name)
                if isinstance(value, bool) or not isinstance(value, int) or (name == "chunk" and not value >= 0):
                    raise ValidationError(f"{field}.{name}", "must be an int (a chunk >= 0)")
            vector = _unit(point.vector, f"{field}.vector")
            pid = point_id(point.message_id, point.chunk)
            row = (pid, point.message_id, point.chunk, point.thread_id, point.resource_id, point.created_at_us, vector)
            groups.setdefault(vector.shape[0], {})[pid] = row
        pool = await self._ready()
        if not groups:
            return
        with self._guard("upsert"):
            async with pool.acquire() as conn:
                for dimension, rows in groups.items():
                    await self._ensure(conn, dimension)
                    await conn.executemany(
                        f"INSERT INTO {self._table(dimension)} (point_id, message_id, chunk, thread_id, resource_id,"
                        " created_at, embedding) VALUES ($1::uuid, $2, $3, $4, $5, $6, $7) ON CONFLICT (point_id)"
                        " DO UPDATE SET message_id = excluded.message_id, chunk = excluded.chunk,"
                        " thread_id = excluded.thread_id, resource_id = excluded.resource_id,"
                        " created_at = excluded.created_at, embedding = excluded.embedding",
                        list(rows.values()),
                    )

    async def _delete_where(self, operation: str, clause: str, value: Any) -> None:
        pool = await self._ready()
        with self._guard(operation):
            async with pool.acquire() as conn:
                await self._refresh(conn)
                if self._tables:
                    # One statement (one round trip, atomic) across every dimension's table.
                    deletes = ", ".join(
                        f"d{d} AS (DELETE FROM {self._table(d)} WHERE {clause})" for d in sorted(self._tables)
                    )
                    await conn.execute(f"WITH {deletes} SELECT 1", value)

    async def delete_messages(self, message_ids: Sequence[str]) -> None:
        """Remove every point (all chunks) of these messages.

        Raises:
            ValidationError: a bad id.
        """
        ids = [check_id(m, f"message_ids[{i}]") for i, m in enumerate(message_ids)]
        if ids:
            await self._delete_where("delete_messages", "message_id = ANY($1::text[])", ids)

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every point of this thread.

        Raises:
            ValidationError: a bad id.
        """
        await self._delete_where("delete_thread", "thread_id = $1", check_id(thread_id, "thread_id"))

    async def search(
        self,
        vector: Any,
        top_k: int,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
    ) -> list[VectorHit]:
        """The ``top_k`` most similar messages (cosine), best first (ties by
        message id), one hit per message (its best chunk), filtered by thread
        and/or resource.

        Raises:
            ValidationError: a bad vector, ``top_k`` (int 1-1000) or id.
        """
        query = _unit(vector, "vector")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise ValidationError("top_k", f"must be an int from 1 to {MAX_TOP_K}, got {top_k!r}")
        params: list[Any] = [query]
        clauses = []
        for column, value in (("thread_id", thread_id), ("resource_id", resource_id)):
            if value is not None:
                params.append(check_id(value, column))
                clauses.append(f"{column} = ${len(params)}")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        pool = await self._ready()
        dimension = int(query.shape[0])
        table = self._table(dimension)
        params.append(top_k)
        limit = f"${len(params)}"
        if self.index == "hnsw":
            # Through the index: nearest chunks first, then the best per message.
            source = (
                f"(SELECT message_id, thread_id, resource_id, embedding <=> $1 AS distance FROM {table}{where}"
                f" ORDER BY embedding <=> $1 LIMIT {limit} * 4) c"
            )
        else:
            source = f"(SELECT message_id, thread_id, resource_id, embedding <=> $1 AS distance FROM {table}{where}) c"
        sql = (
            f"SELECT message_id, thread_id, resource_id, min(distance) AS distance FROM {source}"
            f" GROUP BY message_id, thread_id, resource_id ORDER BY distance, message_id LIMIT {limit}"
        )
        with self._guard("search"):
            try:
                rows = await pool.fetch(sql, *params)
            except asyncpg.UndefinedTableError:
                return []  # nothing of this dimension was ever stored
        return [VectorHit(r[0], r[1], r[2], 1.0 - float(r[3])) for r in rows]

    async def count(self, *, thread_id: str | None = None, resource_id: str | None = None) -> int:
        """How many points match the filter (all when both are None).

        Raises:
            ValidationError: a bad id.
        """
        params: list[Any] = []
        clauses = []
        for column, value in (("thread_id", thread_id), ("resource_id", resource_id)):
            if value is not None:
                params.append(check_id(value, column))
                clauses.append(f"{column} = ${len(params)}")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        pool = await self._ready()
        with self._guard("count"):
            async with pool.acquire() as conn:
                await self._refresh(conn)
                if not self._tables:
                    return 0
                parts = " + ".join(f"(SELECT count(*) FROM {self._table(d)}{where})" for d in sorted(self._tables))
                return int(await conn.fetchval(f"SELECT {parts}", *params))
