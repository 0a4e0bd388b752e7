"""Command errors go to stderr, never into the data a command writes on
stdout; ``prune --vector`` refuses a vector store that keeps nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core import Thread, connect
from memory_core.cli import app

runner = CliRunner()


def test_an_export_error_is_on_stderr_and_stdout_stays_empty(tmp_path: Path) -> None:
    result = runner.invoke(app, ["export", f"sqlite:///{tmp_path / 'nosuch.db'}"])
    assert result.exit_code == 2
    assert result.stdout == ""  # `export ... > backup.jsonl` holds no error line
    assert "error: URL:" in result.stderr and "does not exist" in result.stderr


@pytest.mark.parametrize("vector", ["memory://", "qdrant::memory:"])
def test_prune_refuses_an_in_memory_vector_store_before_any_io(tmp_path: Path, vector: str) -> None:
    if vector.startswith("qdrant"):
        pytest.importorskip("memory_core_qdrant")
    db = tmp_path / "agent.db"

    async def fill() -> None:
        storage = await connect(f"sqlite:///{db}")
        await storage.save_thread(Thread("t1", "r1"))
        old = {"id": "m1", "thread_id": "t1", "role": "user", "content": "old", "created_at": "2020-01-01T00:00:00Z"}
        await storage.save_messages([old])
        await storage.close()

    asyncio.run(fill())
    before = db.read_bytes()
    result = runner.invoke(app, ["prune", f"sqlite:///{db}", "--older-than", "30d", "--vector", vector])
    assert result.exit_code == 2, result.output
    assert "error: --vector:" in result.stderr and "in memory" in result.stderr
    assert db.read_bytes() == before  # nothing pruned


def test_copy_names_the_embedder_it_re_embeds_with(tmp_path: Path) -> None:
    pytest.importorskip("memory_core_qdrant")
    source = tmp_path / "a.db"

    async def fill() -> None:
        storage = await connect(f"sqlite:///{source}")
        await storage.save_thread(Thread("t1", "r1"))
        await storage.save_messages([{"id": "m1", "thread_id": "t1", "role": "user", "content": "hello"}])
        await storage.close()

    asyncio.run(fill())
    args = ["copy", f"sqlite:///{source}", f"sqlite:///{tmp_path / 'b.db'}"]
    alone = runner.invoke(app, [*args, "--embedder", "lexical"])
    assert alone.exit_code == 2 and "--embedder: goes with --vector" in alone.stderr
    assert not (tmp_path / "b.db").exists()
    result = runner.invoke(app, [*args, "--vector", f"qdrant+path:///{tmp_path / 'vec'}", "--embedder", "lexical"])
    assert result.exit_code == 0, result.output
    assert "re-embedded with lexical-hash-1024 (1024 dimensions)" in result.stderr
