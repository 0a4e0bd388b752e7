"""Options that change how PostgreSQL works are observed on the server, not
only through answers that stay right: ``index=hnsw`` builds an HNSW index
that the search's plan can use, and ``text_search_config`` is the
configuration the stored full text was made with."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg
import numpy as np
import pytest
from memory_core.vector import VectorPoint, collection_name

from memory_core_postgres import PgVectorStore, PostgresStorage

pytestmark = pytest.mark.anyio

DIMENSION = 8


async def test_hnsw_index_exists_and_the_search_plan_uses_it(vector_url: str) -> None:
    store = PgVectorStore.from_url(vector_url, namespace=f"v{uuid.uuid4().hex[:16]}", index="hnsw")
    await store.open()
    try:
        points = [
            VectorPoint(
                f"m{i}", 0, np.array([(i + j) % 5 + 1.0 for j in range(DIMENSION)], dtype=np.float32), "t1", "r1", i
            )
            for i in range(20)
        ]
        await store.upsert(points)
        table = f"{store.namespace}_{collection_name(DIMENSION)}"
        conn = await asyncpg.connect(vector_url)
        try:
            indexes = await conn.fetch(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2",
                store.schema,
                table,
            )
            hnsw = [row["indexname"] for row in indexes if "USING hnsw" in row["indexdef"]]
            assert hnsw, f"index='hnsw' built no HNSW index on {table}: {[row['indexdef'] for row in indexes]}"
            async with conn.transaction():
                # 20 rows: the planner prefers a scan unless told not to; the
                # question is whether the index can answer the search's order.
                await conn.execute("SET LOCAL enable_seqscan = off")
                plan = await conn.fetch(
                    f'EXPLAIN SELECT message_id FROM "{store.schema}"."{table}"'
                    f" ORDER BY embedding <=> '{[1.0] * DIMENSION}' LIMIT 4"
                )
            text = "\n".join(row[0] for row in plan)
            assert f"Index Scan using {hnsw[0]}" in text, text
        finally:
            await conn.close()
    finally:
        await store.destroy()


@pytest.mark.parametrize(("config", "lexemes"), [("english", {"run", "dog"}), ("simple", {"running", "dogs"})])
async def test_text_search_config_shapes_the_stored_full_text(pg_target: str, config: str, lexemes: set[str]) -> None:
    store = PostgresStorage.from_url(pg_target, namespace=f"t{uuid.uuid4().hex[:16]}", text_search_config=config)
    try:
        await store.save_thread({"id": "t1", "resource_id": "r1"})
        created = datetime(2025, 1, 1, tzinfo=UTC)
        await store.save_messages(
            [{"id": "m1", "thread_id": "t1", "role": "user", "content": "running dogs", "created_at": created}]
        )
        conn = await asyncpg.connect(pg_target)
        try:
            stored = await conn.fetchval(f'SELECT search::text FROM "{store.schema}".messages WHERE id = $1', "m1")
        finally:
            await conn.close()
        assert {word.split(":")[0].strip("'") for word in stored.split()} == lexemes, stored
    finally:
        await store.destroy()
