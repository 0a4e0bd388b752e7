"""``memory-core destroy URL [--vector URL] --yes`` through a real process
(issue 26: retiring an application's or a test's store took removing
files, keys or schemas by hand): without ``--yes`` it lists what would go
and removes nothing (exit 2); a URL naming no store is refused (exit 2),
never "destroyed"; with ``--yes`` the store is gone (a SQLite file and
everything beside it, a Redis prefix's keys, a Qdrant folder's shards)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import uuid
from pathlib import Path

import pytest

from memory_core import connect
from memory_core.errors import ValidationError
from memory_core.registry import build_storage, build_vector
from memory_core.vector import BaseVectorStore
from tests.cli_run import cli
from tests.cli_seed import seed_two_users

pytest.importorskip("memory_core_sqlite")

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None


async def _messages(url: str) -> int:
    async with await connect(url) as storage:
        return sum([(await storage.list_messages_by_resource(r, per_page=0)).counted_total for r in ("u1", "u2")])


def _storage_exists(url: str) -> bool:
    """Whether ``url`` names a memory-core store (its adapter's check, reading only)."""
    try:
        asyncio.run(build_storage(url).preflight(must_exist=True))
    except ValidationError:
        return False
    return True


def test_destroy_of_a_sqlite_file_refuses_without_yes_then_leaves_nothing_beside_it(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    url = f"sqlite:///{db}"
    seed_two_users(url)
    (tmp_path / "notes.txt").write_text("not the store's")
    # A WAL left as a crashed writer leaves it: the destroy takes it too.
    (tmp_path / "agent.db-wal").write_bytes(b"")
    (tmp_path / "agent.db-shm").write_bytes(b"")

    unasked = cli("destroy", url)
    assert unasked.returncode == 2, unasked.stderr
    assert unasked.stdout == ""
    assert f"would destroy storage SQLite file {db} (with its -wal, -shm and -journal files)" in unasked.stderr
    assert "3 threads (messages included)" in unasked.stderr, unasked.stderr
    assert "error: destroy removes the whole store" in unasked.stderr and "--yes" in unasked.stderr
    assert asyncio.run(_messages(url)) == 7  # nothing removed

    dry = cli("destroy", url, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == (
        f"would destroy storage SQLite file {db} (with its -wal, -shm and -journal files), URL {url}: "
        "3 threads (messages included)\n"
    )
    assert asyncio.run(_messages(url)) == 7

    done = cli("destroy", url, "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"destroyed storage SQLite file {db} (with its -wal, -shm and -journal files), URL {url}: "
        "3 threads (messages included)\n"
    )
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]  # no agent.db, -wal, -shm or -journal

    again = cli("destroy", url, "--yes")  # gone: refused as any URL naming no store
    assert again.returncode == 2
    assert again.stderr.startswith("error: URL: "), again.stderr
    assert sorted(os.listdir(tmp_path)) == ["notes.txt"]  # and not created again


def test_destroy_refuses_a_mistyped_url_and_removes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed_two_users(url)
    typo = cli("destroy", f"sqlite:///{tmp_path / 'agnet.db'}", "--yes")
    assert typo.returncode == 2, typo.stderr
    assert typo.stdout == ""
    assert typo.stderr.startswith("error: URL: "), typo.stderr
    assert "agnet.db does not exist" in typo.stderr and "typo" in typo.stderr
    assert not (tmp_path / "agnet.db").exists()
    assert asyncio.run(_messages(url)) == 7

    # A mistyped --vector folder: refused before the storage is touched.
    folder = cli("destroy", url, "--vector", f"qdrant+path:///{tmp_path / 'vectorz'}", "--yes")
    if HAS_QDRANT:
        assert folder.returncode == 2, folder.stderr
        assert folder.stderr.startswith("error: --vector: "), folder.stderr
        assert asyncio.run(_messages(url)) == 7


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_destroy_with_vector_removes_the_qdrant_folders_collections(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    url = f"sqlite:///{db}"
    folder = tmp_path / "vectors"
    vector = f"qdrant+path:///{folder}"
    seed_two_users(url, vector)
    assert os.listdir(folder)  # the shards

    unasked = cli("destroy", url, "--vector", vector)
    assert unasked.returncode == 2, unasked.stderr
    assert f"would destroy vector index Qdrant folder {folder}: collections memory_messages_<dim>" in unasked.stderr
    assert "7 vectors" in unasked.stderr, unasked.stderr
    assert os.listdir(folder) and db.exists()

    done = cli("destroy", url, "--vector", vector, "--yes")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"destroyed storage SQLite file {db} "), lines
    assert lines[1].startswith(f"destroyed vector index Qdrant folder {folder}: "), lines
    assert lines[1].endswith(": 7 vectors"), lines
    assert os.listdir(folder) == []
    assert sorted(os.listdir(tmp_path)) == ["vectors"]

    async def index_exists() -> bool:
        index = build_vector(vector)
        assert isinstance(index, BaseVectorStore)
        try:
            await index.preflight(must_exist=True)
        except ValidationError:
            return False
        return True

    assert not asyncio.run(index_exists())


def test_destroy_of_a_redis_prefix_unlinks_its_keys_and_no_other(valkey_url: str) -> None:
    prefix = f"destroy-{uuid.uuid4().hex[:8]}"
    url = f"{valkey_url}?prefix={prefix}"
    neighbour = f"{valkey_url}?prefix={prefix}x"
    seed_two_users(url)
    seed_two_users(neighbour)

    unasked = cli("destroy", url)
    assert unasked.returncode == 2, unasked.stderr
    assert f"would destroy storage Redis keys of prefix {prefix!r}" in unasked.stderr, unasked.stderr
    assert asyncio.run(_messages(url)) == 7

    typo = cli("destroy", f"{valkey_url}?prefix={prefix}-typo", "--yes")
    assert typo.returncode == 2, typo.stderr
    assert typo.stderr.startswith("error: URL: "), typo.stderr
    assert asyncio.run(_messages(url)) == 7

    done = cli("destroy", url, "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"destroyed storage Redis keys of prefix {prefix!r}"), done.stdout
    assert not _storage_exists(url)
    assert asyncio.run(_messages(neighbour)) == 7  # the neighbouring prefix keeps its store

    async def keys_left() -> list[str]:
        from redis.asyncio import Redis

        client = Redis.from_url(valkey_url, decode_responses=True)
        try:
            return [key async for key in client.scan_iter(match=f"*{prefix}[:}}]*")]
        finally:
            await client.aclose()

    assert asyncio.run(keys_left()) == []
