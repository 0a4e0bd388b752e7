"""Commands an operator can trust (issue 26), each through a real
``memory-core`` process: a mistyped ``--vector`` is refused and creates
nothing, a failed import changes nothing, an interrupted export leaves no
partial file, an interrupted prune says how to resume, and a closed pipe is a
normal end."""

from __future__ import annotations

import asyncio
import importlib.util
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import Memory, Thread, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder
from tests.cli_run import cli

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None

OLD = datetime(2025, 1, 1, tzinfo=UTC)


def _seed(db: Path, vectors: Path | None = None, messages: int = 6) -> str:
    """A SQLite store with ``messages`` old messages in one thread (and their
    points in a qdrant+path folder when ``vectors`` is given)."""
    url = f"sqlite:///{db}"

    async def seed() -> None:
        storage = await connect(url)
        await storage.save_thread(Thread("t1", "r1", created_at=OLD))
        index = None if vectors is None else await connect_vector(f"qdrant+path:///{vectors}")
        async with Memory(storage, index, LexicalHashEmbedder() if index is not None else None) as memory:
            await memory.save_messages(
                [
                    {"id": f"m{i}", "thread_id": "t1", "role": "user", "content": f"old words {i}", "created_at": OLD}
                    for i in range(messages)
                ]
            )

    asyncio.run(seed())
    return url


def _points(vectors: Path) -> int:
    async def count() -> int:
        async with await connect_vector(f"qdrant+path:///{vectors}") as index:
            return await index.count_points()

    return asyncio.run(count())


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_prune_with_a_mistyped_vector_folder_is_refused_and_creates_nothing(dry_run: list[str], tmp_path: Path) -> None:
    vectors = tmp_path / "agent.vectors"
    url = _seed(tmp_path / "agent.db", vectors)
    before = (tmp_path / "agent.db").read_bytes()
    typo = tmp_path / "agent.vector"
    done = cli("prune", url, "--older-than", "30d", "--vector", f"qdrant+path:///{typo}", *dry_run)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --vector: ") and "holds no memory-core vectors" in done.stderr, done.stderr
    assert not typo.exists()
    assert (tmp_path / "agent.db").read_bytes() == before
    assert _points(vectors) == 6


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_prune_with_the_right_vector_folder_removes_the_points(tmp_path: Path) -> None:
    vectors = tmp_path / "agent.vectors"
    url = _seed(tmp_path / "agent.db", vectors)
    done = cli("prune", url, "--older-than", "30d", "--vector", f"qdrant+path:///{vectors}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("removed 6 messages"), done.stdout
    assert _points(vectors) == 0
