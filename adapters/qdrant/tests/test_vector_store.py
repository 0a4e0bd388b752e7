"""R-VEC on the vector-store level: what only this adapter promises (the
shared store-level suite, :class:`~memory_core_conformance.vector_store.VectorStoreConformance`,
runs in test_qdrant_conformance)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from memory_core.vector import BaseVectorStore, point_id
from memory_core_conformance.vector_store import axis, point

import memory_core_qdrant
from memory_core_qdrant import from_url

pytestmark = pytest.mark.anyio

DIM = 8


async def test_collection_without_namespace_is_exactly_r_vec_name() -> None:
    async with from_url("qdrant::memory:") as store:
        assert store.collection(384) == "memory_messages_384"
        await store.upsert([point("m1", axis(0))])
        assert await store.dimensions() == [DIM]


async def test_point_ids_are_uuid5_of_message_and_chunk() -> None:
    assert point_id("m1", 0) != point_id("m1", 1) != point_id("m10", 0)
    assert point_id("m1", 0) == point_id("m1", 0)


def test_stores_implement_the_core_base() -> None:
    assert isinstance(from_url("qdrant::memory:"), BaseVectorStore)
    assert isinstance(from_url("qdrant://localhost:6333"), BaseVectorStore)


def test_edge_and_server_import_only_the_core_and_private_modules() -> None:
    """No import circle: each store imports the core base and this package's
    private helpers, never the other store or the package root."""
    package = Path(memory_core_qdrant.__file__).parent
    for module in ("edge.py", "server.py"):
        tree = ast.parse((package / module).read_text(encoding="utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        ours = {name for name in imported if name.startswith("memory_core_qdrant")}
        assert ours <= {
            "memory_core_qdrant._layout",
            "memory_core_qdrant._url",
            "memory_core_qdrant._errors",
            "memory_core_qdrant._rebuild",
        }, module
        assert "memory_core.vector" in imported


def test_only_the_on_disk_and_server_stores_are_persistent(tmp_path: Path) -> None:
    assert from_url("qdrant::memory:").persistent is False
    assert from_url("qdrant+path:///:memory:").persistent is False
    assert from_url(f"qdrant+path:///{tmp_path}/vectors").persistent is True
    assert from_url("qdrant://localhost:6333").persistent is True
