"""Commands that read a store (export, prune) refuse a Redis prefix or a
MongoDB database that holds no memory-core store, writing nothing there,
instead of exporting nothing with exit 0 (a misspelt name)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from typer.testing import CliRunner

from memory_core import Thread, connect
from memory_core.cli import app

runner = CliRunner()


async def _filled(url: str, **options: str) -> None:
    storage = await connect(url, **options)
    await storage.save_thread(Thread("t1", "r1"))
    await storage.close()


def test_a_redis_prefix_without_a_store_is_refused_and_left_empty(valkey_url: str) -> None:
    pytest.importorskip("memory_core_redis")
    from redis import Redis

    typo = f"typo-{uuid.uuid4().hex[:8]}"
    for args in (["export"], ["prune", "--dry-run", "--older-than", "30d"]):
        result = runner.invoke(app, [args[0], f"{valkey_url}?prefix={typo}", *args[1:]])
        assert result.exit_code == 2, result.output
        assert "holds no memory-core store" in result.stderr and result.stdout == ""
    client = Redis.from_url(valkey_url)
    try:
        assert client.keys(f"*{typo}*") == []  # nothing written under the misspelt prefix
    finally:
        client.close()
    real = f"real-{uuid.uuid4().hex[:8]}"
    asyncio.run(_filled(f"{valkey_url}?prefix={real}"))
    result = runner.invoke(app, ["export", f"{valkey_url}?prefix={real}"])
    assert result.exit_code == 0, result.output
    assert '"t1"' in result.stdout


def test_a_mongodb_database_without_a_store_is_refused_and_not_created(secantus_url: str) -> None:
    pytest.importorskip("memory_core_mongodb")
    from pymongo import MongoClient

    base = secantus_url.rstrip("/")
    typo = f"typo_{uuid.uuid4().hex[:8]}"
    result = runner.invoke(app, ["export", f"{base}/{typo}"])
    assert result.exit_code == 2, result.output
    assert "holds no memory-core store" in result.stderr and result.stdout == ""
    client: MongoClient[dict[str, object]] = MongoClient(secantus_url)
    try:
        assert typo not in client.list_database_names()
    finally:
        client.close()
    real = f"real_{uuid.uuid4().hex[:8]}"
    asyncio.run(_filled(f"{base}/{real}"))
    result = runner.invoke(app, ["export", f"{base}/{real}"])
    assert result.exit_code == 0, result.output
    assert '"t1"' in result.stdout
