"""``memory-core demo`` creates no folder, a failed demo leaves no file it
made, and a demo on a server URL works in a namespace of its own that it
removes: the server holds the same keys / collections after as before."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memory_core.cli import app

# One worker runs this module (its module-scoped fixture once): the README's `--dist loadgroup`.
pytestmark = pytest.mark.xdist_group("cli_demo_cleanup")

HAS_REDIS = importlib.util.find_spec("memory_core_redis") is not None
HAS_MONGODB = importlib.util.find_spec("memory_core_mongodb") is not None


def _one_error_line(result: Any, says: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert says in result.output, result.output


def test_demo_creates_no_folder(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--db", f"{tmp_path}/missing/dir/x.db"])
    _one_error_line(result, f"folder '{tmp_path}/missing/dir' does not exist")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # Fails after the database and vectors folder are made, before use.
        (["--embedder", "bogus"], "unknown embedder 'bogus'"),
        # Fails when the storage opens: the vectors folder was made already.
        (["--storage", "sqlite:///{tmp}/gone/x.db"], "is not a folder"),
    ],
)
def test_a_failed_demo_leaves_no_file_it_made(args: list[str], says: str, tmp_path: Path) -> None:
    (tmp_path / "gone").write_text("a file where the URL wants a folder")
    argv = ["demo", "--db", str(tmp_path / "demo.db"), *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    result = CliRunner().invoke(app, argv)
    _one_error_line(result, says)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone"]


def test_a_failed_demo_keeps_what_was_there_before(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert CliRunner().invoke(app, ["demo", "--db", str(db), "--vector", "none"]).exit_code == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    result = CliRunner().invoke(app, ["demo", "--db", str(db), "--keep", "--embedder", "bogus"])
    _one_error_line(result, "unknown embedder 'bogus'")
    # --keep kept the database (not made by this run); the vectors folder this run made is gone.
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_failed_demo_leaves_a_symlink_at_db_alone(tmp_path: Path) -> None:
    """A (dangling) symlink at --db is the user's: the demo neither writes
    through it (creating its target) nor removes it when it fails."""
    from tests.cli_run import cli

    (tmp_path / "demo.db").symlink_to("elsewhere.db")
    result = cli("demo", "--db", str(tmp_path / "demo.db"), "--embedder", "lexical")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: --db: ") and result.stderr.count("\n") == 1, result.stderr
    assert "was not made by memory-core demo" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.db"]
    assert (tmp_path / "demo.db").is_symlink()


def test_a_demo_db_named_like_its_vectors_folder_is_refused_before_any_file(tmp_path: Path) -> None:
    from tests.cli_run import cli

    result = cli("demo", "--db", str(tmp_path / "x.vectors"))
    assert result.returncode == 2, result.stderr
    assert "is the name of its own vectors folder" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if not HAS_REDIS:
        pytest.skip("memory-core-redis is not installed")
    from memory_core_redis.testing import start_standalone

    server = start_standalone()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def mongodb_url() -> Iterator[str]:
    if not HAS_MONGODB:
        pytest.skip("memory-core-mongodb is not installed")
    from memory_core_mongodb.testing import secantus_server

    with secantus_server() as url:
        yield url


def _redis_keys(url: str) -> list[str]:
    import redis

    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        return sorted(str(key) for key in client.keys("*"))
    finally:
        client.close()


def _mongodb_names(url: str) -> dict[str, list[str]]:
    from pymongo import MongoClient

    client: MongoClient[dict[str, Any]] = MongoClient(url)
    try:
        return {name: sorted(client[name].list_collection_names()) for name in client.list_database_names()}
    finally:
        client.close()


def _demo_on(url: str, tmp_path: Path) -> str:
    result = CliRunner().invoke(app, ["demo", "--db", str(tmp_path / "demo.db"), "--storage", url, "--vector", "none"])
    assert result.exit_code == 0, result.output
    assert "loaded 1 resource, 3 threads, 36 messages" in result.output
    assert "namespace: memory_core_demo_" in result.output
    return result.output


def test_demo_on_redis_removes_every_key_it_made(redis_url: str, tmp_path: Path) -> None:
    before = _redis_keys(redis_url)
    _demo_on(redis_url, tmp_path)
    assert _redis_keys(redis_url) == before
    assert list(tmp_path.iterdir()) == []  # --storage without a default vector store: no file either


def test_demo_on_mongodb_removes_what_it_made(mongodb_url: str, tmp_path: Path) -> None:
    before = _mongodb_names(mongodb_url)
    _demo_on(mongodb_url, tmp_path)
    assert _mongodb_names(mongodb_url) == before


def test_a_failed_demo_on_redis_removes_its_keys(redis_url: str, tmp_path: Path) -> None:
    # The sample loads, then the vector URL fails: the storage namespace must still go.
    before = _redis_keys(redis_url)
    result = CliRunner().invoke(
        app, ["demo", "--db", str(tmp_path / "demo.db"), "--storage", redis_url, "--vector", "memory://?bogus=1"]
    )
    assert result.exit_code == 2, result.output
    assert "memory:// takes no path or options" in result.output, result.output
    assert _redis_keys(redis_url) == before
