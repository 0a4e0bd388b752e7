"""``PgVectorStore``: the memory-core vector store on PostgreSQL + pgvector (R-VEC).

A :class:`~memory_core.vector.BaseVectorStore`: the core validates, batches,
keeps each message's best chunk and over-fetches; this module implements its
primitives in SQL. One table per dimension, ``memory_messages_<dim>``, in the
store's schema (the same URL and ``schema`` option as
:class:`~memory_core_postgres.PostgresStorage`, so ``connect_vector`` takes
the storage's URL), ``<namespace>_memory_messages_<dim>`` with a namespace
(R-VEC's prefix, as on every vector backend): ``point_id uuid`` primary key (:func:`memory_core.vector.point_id`),
``message_id``, ``chunk``, ``thread_id``, ``resource_id``, ``created_at``
(µs) and ``embedding vector(<dim>)`` (unit rows), with btree indexes on the
three ids.

Search is exact by default: the rows under the thread/resource filter (found
by the indexes) sorted by cosine distance, so recall equals brute force.
``index=hnsw`` adds an HNSW index (``vector_cosine_ops``) and searches through
it with ``hnsw.ef_search`` = ``ef_search``: faster on large collections,
approximate, and (pgvector 0.6 has no iterative index scans) a filtered
search may return fewer than ``top_k`` hits when the filter is selective.

The lexical index (:mod:`memory_core.lexical_index`) is two tables beside
the vectors, made on open: ``[<namespace>_]memory_documents`` (a row per
message: its ids and length, btree indexes on thread and resource) and
``[<namespace>_]memory_postings`` (a row per term of a message with its
count, keyed by (term, message id), indexed by (term, thread) and (term,
resource), its rows deleted with their document by a cascading foreign
key). A lexical search reads the scope's document count and total length
and the query terms' document frequencies (the core computes each term's
IDF), then one statement scores, in the server, every document of the scope
holding a query term with BM25's operations (the postings of the query's
terms, joined to their documents' lengths, summed per document) and returns
the documents within a relative 1e-9 of the ``top_k``-th best score with
their counts; the core scores these with its
:func:`~memory_core.lexical.bm25_score`, so scores and ranking are the
reference's to the last bit. One statement, not a MaxScore loop of a
statement per term: on a 10^4-message resource a Zipf query read a few
thousand documents over a dozen round trips (design notes, issue 23).
PostgreSQL's own ``ts_rank`` is not used: it is no BM25 (no IDF) and its
parser and stemmer are not the core's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import asyncpg
from memory_core.errors import AdapterClosedError, BackendError, ValidationError
from memory_core.lexical import BM25_B, BM25_K1, bm25_idf, bm25_score, top_scores
from memory_core.lexical_index import LexicalDocument, LexicalStatistics
from memory_core.loops import LoopConnections, connect_through_cancel
from memory_core.vector import DEFAULT_BATCH_SIZE, DEFAULT_OVERFETCH, BaseVectorStore, PointFilter, RawHit, Vector
from memory_core.vector_layout import point_id
from pgvector.asyncpg import register_vector

from memory_core_postgres._schema import LOCK_CLASS
from memory_core_postgres._url import (
    DEFAULT_SCHEMA,
    MAX_IDENTIFIER,
    VECTOR_OPTIONS,
    check_options,
    parse_url,
    quote_ident,
)
from memory_core_postgres.storage import is_transient, keep_session

__all__ = ["PgVectorStore"]

_MAX_NAMESPACE = MAX_IDENTIFIER - len("_memory_messages_16000_h")
"""Longest namespace whose table and index names fit PostgreSQL's 63-byte
identifier limit (longer names would be silently truncated, merging stores)."""

_HNSW_MAX_DIMENSIONS = 2000
_TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = $1"
"""pgvector 0.6 indexes vectors of at most 2,000 dimensions (larger ones are
searched exactly)."""


_CAPABILITIES = """
SELECT current_user AS role, current_database() AS database,
       EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available,
       EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AS installed,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
         OR COALESCE((SELECT NOT v.superuser OR v.trusted
                        FROM pg_available_extensions a
                        JOIN pg_available_extension_versions v ON v.name = a.name AND v.version = a.default_version
                       WHERE a.name = 'vector'), false)
            AND has_database_privilege(current_database(), 'CREATE') AS may_create_extension,
       has_database_privilege(current_database(), 'CREATE') AS may_create_schema,
       COALESCE((SELECT has_schema_privilege(oid, 'CREATE') FROM pg_namespace WHERE nspname = $1), true)
         AS may_create_tables
"""
"""What :meth:`PgVectorStore._require_pgvector` reads (one statement, no
write): whether the extension is there or may be made by this role (a
superuser; else a trusted or non-superuser extension and ``CREATE`` on the
database), and whether the role may run ``open``'s ``CREATE SCHEMA IF NOT
EXISTS`` (``CREATE`` on the database, checked even when the schema exists)
and its ``CREATE TABLE IF NOT EXISTS`` (``CREATE`` on an existing schema)."""


_CUT_MARGIN = 1e-9
"""Relative margin below the ``top_k``-th best score, as PostgreSQL sums it,
of the documents a lexical search rescores: its sum's order, and so its last
bits, may differ from :func:`~memory_core.lexical.bm25_score`'s (by some
1e-15 relative for a query of 100 terms), so every document of the exact top
(ties at the cut included) lies within it."""


def _where(flt: PointFilter, params: list[Any]) -> str:
    """The SQL condition of ``flt`` (values bound into ``params``)."""
    clauses = []
    if flt.message_ids:
        params.append(list(flt.message_ids))
        clauses.append(f"message_id = ANY(${len(params)}::text[])")
    for column, value in (("thread_id", flt.thread_id), ("resource_id", flt.resource_id)):
        if value is not None:
            params.append(value)
            clauses.append(f"{column} = ${len(params)}")
    return f" WHERE {' AND '.join(clauses)}" if clauses else ""


class PgVectorStore(BaseVectorStore):
    """Semantic-recall vectors in PostgreSQL with pgvector.

    Construction does no I/O; ``open()`` creates the ``vector`` extension (if
    missing; needs the privilege), the schema and the connection pool.
    Tables are created per dimension on first upsert, under an advisory lock.

    Args:
        dsn: a libpq URL (see :meth:`from_url` for the accepted forms).
        schema / min_size / max_size: as for
            :class:`~memory_core_postgres.PostgresStorage`.
        namespace: table-name prefix isolating this store (R-VEC; at most
            38 characters here, for PostgreSQL's identifier limit).
        index: ``"exact"`` (default: brute force under the filter, exact
            recall) or ``"hnsw"`` (approximate, see the module docstring).
        ef_search: HNSW candidate list size per search (default 100).
        overfetch / batch_size: see :class:`~memory_core.vector.BaseVectorStore`.

    Raises:
        ValidationError: a bad option.
    """

    backend_name = "pgvector"
    shares_collections = True
    loop_bound = True
    lexical_index = True

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
        overfetch: int = DEFAULT_OVERFETCH,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if isinstance(namespace, str) and len(namespace) > _MAX_NAMESPACE:
            raise ValidationError(
                "namespace", f"must be at most {_MAX_NAMESPACE} characters here (PostgreSQL's identifier limit)"
            )
        super().__init__(namespace=namespace, overfetch=overfetch, batch_size=batch_size)
        options = check_options({"schema": schema, "min_size": min_size, "max_size": max_size})
        if index not in ("exact", "hnsw"):
            raise ValidationError("index", f"must be 'exact' or 'hnsw', got {index!r}")
        if isinstance(ef_search, bool) or not isinstance(ef_search, int) or not 1 <= ef_search <= 1000:
            raise ValidationError("ef_search", f"must be an int from 1 to 1000, got {ef_search!r}")
        self.dsn = dsn
        self.schema: str = options["schema"]
        self.min_size = options["min_size"]
        self.max_size = options["max_size"]
        self.index = index
        self.ef_search = ef_search
        self._pools: LoopConnections[asyncpg.Pool] = LoopConnections()

    @classmethod
    def from_url(cls, url: str, *, clock: Any = None, namespace: str | None = None, **options: Any) -> PgVectorStore:
        """Build a store from a URL (no I/O).

        Args:
            url: ``postgresql://`` or ``postgres://`` URL (the storage's URL
                works); query options ``schema``, ``min_size``, ``max_size``,
                ``index`` (``exact``/``hnsw``), ``ef_search``, ``overfetch``,
                ``batch_size``.
            clock: accepted for the registry's signature; unused.
            namespace: table-name prefix (see the class).
            **options: the same options; they override the URL's.

        Raises:
            ValidationError: a malformed URL, unknown option or bad value.
        """
        dsn, query = parse_url(url)
        merged: dict[str, Any] = {**query, **options}
        vector_options = {k: merged.pop(k) for k in list(merged) if k in VECTOR_OPTIONS}
        merged.pop("text_search_config", None)  # a storage option: shared URLs may carry it
        for name in ("ef_search", "overfetch", "batch_size"):  # ints; from a URL they are text
            raw = vector_options.get(name)
            if isinstance(raw, str) and raw.isdigit():
                vector_options[name] = int(raw)
        return cls(dsn, namespace=namespace, **check_options(merged), **vector_options)

    def __repr__(self) -> str:
        return f"PgVectorStore(schema={self.schema!r}, namespace={self.namespace!r}, index={self.index!r})"

    def is_retryable(self, exc: Exception) -> bool:
        """Serialization failures, deadlocks, lost or refused connections."""
        return is_transient(exc) or super().is_retryable(exc)

    @property
    def pool(self) -> asyncpg.Pool:
        """The running event loop's connection pool (search_path: the
        schema, then pgvector's). asyncpg connections belong to the loop that
        made them, so each loop using the store has its own (``loop_bound``).

        Raises:
            AdapterClosedError: no pool in this loop (closed, or not opened
                in this loop: public methods open it first).
        """
        pool = self._pools.get()
        if pool is None:
            raise AdapterClosedError("pgvector store: open it first")
        return pool

    def _table(self, name: str) -> str:
        return f"{quote_ident(self.schema)}.{quote_ident(name)}"

    # ------------------------------------------------------------------ primitives

    async def _connect(self) -> None:
        # asyncpg cut mid-connect leaves a future behind: a cancelled open
        # lets the pool come up, then closes it (connect_through_cancel).
        pool = await connect_through_cancel(self._new_pool, asyncpg.Pool.close)
        # closed in its loop by the loop's end at the latest: a pool dropped with a loop
        # that asyncio.run ended left its connections unclosed (ResourceWarning)
        await self._pools.keep(pool, pool.close)

    async def _new_pool(self) -> asyncpg.Pool:
        """The extension and tables prepared, then a pool on the schema."""
        extension_schema = await self._prepare()
        return await asyncpg.create_pool(
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

    async def _prepare(self) -> str:
        """Create the extension (if missing) and the schema; returns the
        schema the extension lives in (its type and operators are found there)."""
        conn = await asyncpg.connect(self.dsn)
        try:
            await self._require_pgvector(conn)
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext('vector'))", LOCK_CLASS)
                await conn.execute(
                    f"CREATE EXTENSION IF NOT EXISTS vector; CREATE SCHEMA IF NOT EXISTS {quote_ident(self.schema)}"
                )
                await conn.execute(self._lexical_tables())
            return str(
                await conn.fetchval(
                    "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'vector'"
                )
            )
        finally:
            await conn.close()

    async def _require_pgvector(self, conn: asyncpg.Connection) -> None:
        """Refuse, reading only, what ``open`` would refuse after its first
        DDL: a server without the pgvector extension, a role that may not
        create the extension (not installed, not trusted, no superuser), or
        may not make the store's schema and tables (``CREATE`` on the
        database, which ``CREATE SCHEMA IF NOT EXISTS`` checks even for an
        existing schema, and on an existing schema). One message for ``open``
        (``import --vector``) and :meth:`preflight` (``Memory.open``, ``prune
        --vector``, ``check-index``), so ``Memory.open`` refuses before the
        storage's schema is made and a command does not report a schema
        without vectors.

        Raises:
            BackendError: operation ``"open"``, naming what is missing and
                who can add it.
        """
        row = await conn.fetchrow(_CAPABILITIES, self.schema)
        if row is None or not row["available"]:
            raise BackendError(
                self.backend_name, "open", "the server has no pgvector extension (CREATE EXTENSION vector)"
            )
        where = f"role {row['role']!r} in database {row['database']!r}"
        if not row["installed"] and not row["may_create_extension"]:
            raise BackendError(
                self.backend_name,
                "open",
                f"the pgvector extension is not installed and {where} may not create it: "
                "have a superuser run CREATE EXTENSION vector in that database once",
            )
        if not row["may_create_schema"]:
            raise BackendError(
                self.backend_name,
                "open",
                f"{where} may not create the schema {self.schema!r} (GRANT CREATE ON DATABASE {row['database']} "
                f"TO {row['role']})",
            )
        if not row["may_create_tables"]:
            raise BackendError(
                self.backend_name,
                "open",
                f"{where} may not create tables in the schema {self.schema!r} (GRANT CREATE ON SCHEMA "
                f"{quote_ident(self.schema)} TO {row['role']})",
            )

    def _lexical_tables(self) -> str:
        """The script creating the lexical index's tables (module notes)."""
        documents, postings = self._lexical_names()
        base = self._prefix + "memory_"
        return (
            f'CREATE TABLE IF NOT EXISTS {documents} (message_id text COLLATE "C" PRIMARY KEY,'
            ' thread_id text COLLATE "C" NOT NULL, resource_id text COLLATE "C" NOT NULL, length integer NOT NULL);'
            f" CREATE INDEX IF NOT EXISTS {quote_ident(base + 'documents_t')} ON {documents} (thread_id);"
            f" CREATE INDEX IF NOT EXISTS {quote_ident(base + 'documents_r')} ON {documents} (resource_id);"
            f' CREATE TABLE IF NOT EXISTS {postings} (term text COLLATE "C" NOT NULL, message_id text COLLATE "C"'
            f' NOT NULL REFERENCES {documents} (message_id) ON DELETE CASCADE, thread_id text COLLATE "C" NOT NULL,'
            ' resource_id text COLLATE "C" NOT NULL, count integer NOT NULL, PRIMARY KEY (term, message_id));'
            f" CREATE INDEX IF NOT EXISTS {quote_ident(base + 'postings_t')} ON {postings} (term, thread_id);"
            f" CREATE INDEX IF NOT EXISTS {quote_ident(base + 'postings_r')} ON {postings} (term, resource_id);"
            f" CREATE INDEX IF NOT EXISTS {quote_ident(base + 'postings_m')} ON {postings} (message_id);"
        )

    def _lexical_names(self) -> tuple[str, str]:
        """The documents and postings tables, schema-qualified."""
        return self._table(self._prefix + "memory_documents"), self._table(self._prefix + "memory_postings")

    async def _disconnect(self) -> None:
        await self._pools.close_all()

    async def _list_collections(self) -> Iterable[str]:
        rows = await self.pool.fetch(_TABLES, self.schema)
        return [row[0] for row in rows]

    async def _existing_collections(self) -> Iterable[str]:
        # _connect would create the extension and the schema; a cancelled
        # caller lets the connection finish and close (connect_through_cancel).
        return await connect_through_cancel(self._read_collections)

    async def _check_backend(self) -> None:
        await connect_through_cancel(self._check_pgvector)

    async def _check_pgvector(self) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            await self._require_pgvector(conn)
        finally:
            await conn.close()

    async def _read_collections(self) -> list[str]:
        conn = await asyncpg.connect(self.dsn)
        try:
            await self._require_pgvector(conn)
            rows = await conn.fetch(_TABLES, self.schema)
        finally:
            await conn.close()
        return [row[0] for row in rows]

    async def _create_collection(self, name: str, dimension: int) -> None:
        table = self._table(name)
        script = (
            f'CREATE TABLE IF NOT EXISTS {table} (point_id uuid PRIMARY KEY, message_id text COLLATE "C" NOT NULL,'
            ' chunk integer NOT NULL, thread_id text COLLATE "C" NOT NULL, resource_id text COLLATE "C" NOT NULL,'
            f" created_at bigint NOT NULL, embedding vector({dimension}) NOT NULL);"
            f" CREATE INDEX IF NOT EXISTS {quote_ident(name + '_m')} ON {table} (message_id);"
            f" CREATE INDEX IF NOT EXISTS {quote_ident(name + '_t')} ON {table} (thread_id);"
            f" CREATE INDEX IF NOT EXISTS {quote_ident(name + '_r')} ON {table} (resource_id);"
        )
        if self.index == "hnsw" and dimension <= _HNSW_MAX_DIMENSIONS:
            script += (
                f" CREATE INDEX IF NOT EXISTS {quote_ident(name + '_h')} ON {table}"
                " USING hnsw (embedding vector_cosine_ops);"
            )
        async with self.pool.acquire() as conn, conn.transaction():
            # IF NOT EXISTS alone races (two creators can both pass the check).
            await conn.execute("SELECT pg_advisory_xact_lock($1, hashtext($2))", LOCK_CLASS, f"{self.schema}.{name}")
            await conn.execute(script)

    async def _drop(self, name: str) -> None:
        # The schema stays: the storage or other namespaces may live in it.
        await self.pool.execute(f"DROP TABLE IF EXISTS {self._table(name)}")

    async def _upsert(self, name: str, ids: list[str], vectors: Vector, payloads: list[dict[str, Any]]) -> None:
        rows = [
            (pid, p["message_id"], p["chunk"], p["thread_id"], p["resource_id"], p["created_at"], vector)
            for pid, p, vector in zip(ids, payloads, vectors, strict=True)
        ]
        # executemany pipelines the rows in one transaction (one round trip).
        await self.pool.executemany(
            f"INSERT INTO {self._table(name)} (point_id, message_id, chunk, thread_id, resource_id, created_at,"
            " embedding) VALUES ($1::uuid, $2, $3, $4, $5, $6, $7) ON CONFLICT (point_id) DO UPDATE SET"
            " message_id = excluded.message_id, chunk = excluded.chunk, thread_id = excluded.thread_id,"
            " resource_id = excluded.resource_id, created_at = excluded.created_at, embedding = excluded.embedding",
            rows,
        )

    async def _copy_points(
        self, name: str, mapping: dict[str, str], thread_id: str, resource_id: str
    ) -> set[str] | None:
        # The point ids of the sources (no vectors), then one INSERT ... SELECT
        # copying the embeddings inside the database under the new ids.
        table = self._table(name)
        rows = await self.pool.fetch(
            f"SELECT point_id::text, message_id, chunk FROM {table} WHERE message_id = ANY($1::text[])", list(mapping)
        )
        if not rows:
            return set()
        new = [point_id(mapping[row[1]], row[2]) for row in rows]
        await self.pool.execute(
            f"INSERT INTO {table} (point_id, message_id, chunk, thread_id, resource_id, created_at, embedding)"
            f" SELECT n.id, n.message_id, o.chunk, $4, $5, o.created_at, o.embedding"
            f" FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS n(old, id, message_id)"
            f" JOIN {table} o ON o.point_id = n.old"
            " ON CONFLICT (point_id) DO UPDATE SET message_id = excluded.message_id, chunk = excluded.chunk,"
            " thread_id = excluded.thread_id, resource_id = excluded.resource_id,"
            " created_at = excluded.created_at, embedding = excluded.embedding",
            [row[0] for row in rows],
            new,
            [mapping[row[1]] for row in rows],
            thread_id,
            resource_id,
        )
        return {row[1] for row in rows}

    async def _delete(self, name: str, flt: PointFilter) -> None:
        params: list[Any] = []
        where = _where(flt, params)
        await self.pool.execute(f"DELETE FROM {self._table(name)}{where}", *params)

    async def _search(self, name: str, vector: Vector, limit: int, flt: PointFilter) -> list[RawHit]:
        params: list[Any] = [vector]
        where = _where(flt, params)
        params.append(limit)
        fields = flt.hit_fields()
        # Exact: the filtered rows sorted by distance (ties by id). HNSW: the
        # index answers ORDER BY distance LIMIT n, and only that order.
        tie = "" if self.index == "hnsw" else ", message_id"
        sql = (
            f"SELECT {', '.join(fields)}, 1 - (embedding <=> $1) AS score FROM {self._table(name)}{where}"
            f" ORDER BY embedding <=> $1{tie} LIMIT ${len(params)}"
        )
        rows = await self.pool.fetch(sql, *params)
        return [flt.hit(dict(zip(fields, row[:-1], strict=True)), float(row[-1])) for row in rows]

    async def _count(self, name: str, flt: PointFilter) -> int:
        params: list[Any] = []
        where = _where(flt, params)
        return int(await self.pool.fetchval(f"SELECT count(*) FROM {self._table(name)}{where}", *params))

    async def _message_ids(self, name: str, flt: PointFilter) -> set[str]:
        params: list[Any] = []
        where = _where(flt, params)
        rows = await self.pool.fetch(f"SELECT DISTINCT message_id FROM {self._table(name)}{where}", *params)
        return {row[0] for row in rows}

    # ------------------------------------------------------------------ lexical index

    async def _write_documents(self, documents: Sequence[LexicalDocument]) -> None:
        table, postings = self._lexical_names()
        ids = [d.message_id for d in documents]
        rows = [(d.message_id, term, d.thread_id, d.resource_id, n) for d in documents for term, n in d.counts.items()]
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(f"DELETE FROM {table} WHERE message_id = ANY($1::text[])", ids)
            await conn.execute(
                f"INSERT INTO {table} SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[])",
                ids,
                [d.thread_id for d in documents],
                [d.resource_id for d in documents],
                [d.length for d in documents],
            )
            await conn.execute(
                f"INSERT INTO {postings} (message_id, term, thread_id, resource_id, count)"
                " SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[])",
                *(list(column) for column in zip(*rows, strict=True)) if rows else ([], [], [], [], []),
            )

    async def _copy_documents(self, mapping: dict[str, str], thread_id: str, resource_id: str) -> None:
        # Inside the database: the copies' documents and postings are
        # INSERT ... SELECTs of the sources' rows under the new ids.
        table, postings = self._lexical_names()
        pairs = "unnest($1::text[], $2::text[]) AS n(old, new)"
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(f"DELETE FROM {table} WHERE message_id = ANY($1::text[])", list(mapping.values()))
            await conn.execute(
                f"INSERT INTO {table} (message_id, thread_id, resource_id, length)"
                f" SELECT n.new, $3, $4, d.length FROM {pairs} JOIN {table} d ON d.message_id = n.old",
                list(mapping),
                list(mapping.values()),
                thread_id,
                resource_id,
            )
            await conn.execute(
                f"INSERT INTO {postings} (term, message_id, thread_id, resource_id, count)"
                f" SELECT p.term, n.new, $3, $4, p.count FROM {pairs} JOIN {postings} p ON p.message_id = n.old",
                list(mapping),
                list(mapping.values()),
                thread_id,
                resource_id,
            )

    async def _delete_documents(self, flt: PointFilter) -> None:
        params: list[Any] = []
        where = _where(flt, params)
        await self.pool.execute(f"DELETE FROM {self._lexical_names()[0]}{where}", *params)

    async def _read_statistics(self, terms: tuple[str, ...], flt: PointFilter) -> LexicalStatistics:
        table, posting_table = self._lexical_names()
        params: list[Any] = []
        scope = _where(flt, params)
        async with self.pool.acquire() as conn:
            size, total = await conn.fetchrow(f"SELECT count(*), coalesce(sum(length), 0) FROM {table}{scope}", *params)
            params = [list(terms)]
            holding = _where(flt, params).replace(" WHERE ", " AND ")
            rows = await conn.fetch(
                f"SELECT term, count(*) FROM {posting_table} WHERE term = ANY($1::text[]){holding} GROUP BY term",
                *params,
            )
        frequencies = dict.fromkeys(terms, 0) | {term: int(n) for term, n in rows}
        return LexicalStatistics(int(size), int(total), frequencies)

    async def _search_documents(self, terms: tuple[str, ...], top_k: int, flt: PointFilter) -> list[tuple[str, float]]:
        """The exact BM25 top ``top_k`` of the scope ``flt`` in two round trips
        (module notes): the statistics, then one statement that scores every
        document holding a query term and returns, with their counts, those
        within :data:`_CUT_MARGIN` of the ``top_k``-th best; the core scores
        these with :func:`~memory_core.lexical.bm25_score`."""
        stats = await self._read_statistics(terms, flt)
        present = tuple(term for term in terms if stats.frequencies[term] > 0)
        if not present or stats.documents == 0:
            return []
        idf = {term: bm25_idf(stats.frequencies[term], stats.documents) for term in present}
        mean_length = stats.total_length / stats.documents
        table, postings = self._lexical_names()
        params: list[Any] = [list(present), [idf[term] for term in present], mean_length, BM25_K1, BM25_B, top_k]
        holding = _where(flt, params).replace(" WHERE ", " AND ")
        # The same operations as bm25_score, summed in the aggregate's order (hence the margin and the rescoring).
        rows = await self.pool.fetch(
            f"WITH q AS (SELECT * FROM unnest($1::text[], $2::float8[]) AS q (term, idf)),"
            f" scored AS (SELECT p.message_id, sum(q.idf * p.count * ($4::float8 + 1) / (p.count + $4::float8"
            f" * (1 - $5::float8 + $5::float8 * d.length / $3::float8))) AS score FROM (SELECT message_id, term, count"
            f" FROM {postings} WHERE term = ANY($1::text[]){holding}) p JOIN q ON q.term = p.term"
            f" JOIN {table} d ON d.message_id = p.message_id GROUP BY p.message_id),"
            f" cut AS (SELECT score FROM scored ORDER BY score DESC OFFSET $6 - 1 LIMIT 1)"
            f" SELECT s.message_id, d.length, array_agg(p.term), array_agg(p.count) FROM scored s"
            f" JOIN {table} d ON d.message_id = s.message_id"
            f" JOIN {postings} p ON p.message_id = s.message_id AND p.term = ANY($1::text[])"
            f" WHERE s.score >= coalesce((SELECT score FROM cut), 0) * {1 - _CUT_MARGIN!r}::float8"
            f" GROUP BY s.message_id, d.length",
            *params,
        )
        scored = (
            (message_id, bm25_score(dict(zip(held, counts, strict=True)), length, idf, mean_length))
            for message_id, length, held, counts in rows
        )
        return top_scores(scored, top_k)

    async def _count_documents(self, flt: PointFilter) -> int:
        params: list[Any] = []
        where = _where(flt, params)
        return int(await self.pool.fetchval(f"SELECT count(*) FROM {self._lexical_names()[0]}{where}", *params))

    async def _document_ids(self, flt: PointFilter) -> dict[str, str]:
        params: list[Any] = []
        where = _where(flt, params)
        rows = await self.pool.fetch(f"SELECT message_id, resource_id FROM {self._lexical_names()[0]}{where}", *params)
        return {row[0]: row[1] for row in rows}

    async def _drop_documents(self) -> None:
        table, postings = self._lexical_names()
        await self.pool.execute(f"DROP TABLE IF EXISTS {postings}, {table}")
