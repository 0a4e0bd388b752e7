"""One store spelled twice is refused by ``memory-core copy`` (one red line,
exit 2, nothing read or written) and by ``copy_store`` (a ValidationError),
through the stores' ``store_identity``; different stores are not."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core import Storage, ValidationError, connect
from memory_core.cli import app
from memory_core.identity import canonical_host, same_store, server_addresses
from memory_core.registry import build_storage
from memory_core.transfer import copy_store, summarize
from tests.transfer.stores import fill

runner = CliRunner()
SAME = "error: SOURCE and DESTINATION are the same store; give a DESTINATION that names another store\n"


def _filled(url: str) -> dict:  # type: ignore[type-arg]
    async def make() -> dict:  # type: ignore[type-arg]
        storage: Storage = await connect(url)
        try:
            await fill(storage, 5, resources=2, messages=20)
            return await summarize(storage)
        finally:
            await storage.close()

    return asyncio.run(make())


def _summary(url: str) -> dict:  # type: ignore[type-arg]
    async def read() -> dict:  # type: ignore[type-arg]
        storage: Storage = await connect(url)
        try:
            return await summarize(storage)
        finally:
            await storage.close()

    return asyncio.run(read())


@pytest.mark.parametrize("spelling", ["relative", "dot", "absolute", "double-slash", "symlink", "linked-folder"])
def test_copy_refuses_one_sqlite_file_spelled_twice(
    spelling: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "link.db").symlink_to(tmp_path / "data" / "a.db")
    (tmp_path / "folder").symlink_to(tmp_path / "data", target_is_directory=True)
    source = "sqlite:///data/a.db"
    before = _filled(source)
    other = {
        "relative": "sqlite:///data/../data/a.db",
        "dot": "sqlite:///./data/a.db",
        "absolute": f"sqlite:///{tmp_path}/data/a.db",
        "double-slash": f"sqlite:///{tmp_path}//data/a.db",
        "symlink": "sqlite:///link.db",
        "linked-folder": "sqlite:///folder/a.db",
    }[spelling]
    files = sorted(os.listdir(tmp_path / "data"))
    result = runner.invoke(app, ["copy", source, other])
    assert result.exit_code == 2, result.output
    assert result.output == SAME
    assert sorted(os.listdir(tmp_path / "data")) == files
    assert _summary(source) == before


def test_copy_between_two_files_still_runs(tmp_path: Path) -> None:
    source, destination = f"sqlite:///{tmp_path}/a.db", f"sqlite:///{tmp_path}/b.db"
    before = _filled(source)
    result = runner.invoke(app, ["copy", source, destination])
    assert result.exit_code == 0, result.output
    assert _summary(destination) == before


def test_in_memory_stores_are_each_their_own() -> None:
    for url in ("sqlite://:memory:", "memory://"):
        first, second = build_storage(url), build_storage(url)
        assert not same_store(first, second)
        assert same_store(first, first)
    assert not same_store(build_storage("sqlite://:memory:"), build_storage("memory://"))


@pytest.mark.anyio
async def test_copy_store_refuses_the_same_store_before_any_io(tmp_path: Path) -> None:
    source = build_storage(f"sqlite:///{tmp_path}/a.db")
    destination = build_storage(f"sqlite:///{tmp_path}/./a.db")
    with pytest.raises(ValidationError) as caught:
        await copy_store(source, destination)
    assert caught.value.field == "destination"
    assert os.listdir(tmp_path) == []  # neither store was opened
    memory = build_storage("memory://")
    with pytest.raises(ValidationError):
        await copy_store(memory, memory)


def test_redis_spellings_of_one_server_are_one_store(valkey_url: str) -> None:
    port = valkey_url.rsplit(":", 1)[1].split("/")[0]
    source = f"redis://127.0.0.1:{port}/0?prefix=opsfix-same"
    before = _filled(source)
    try:
        for other in (
            f"redis://localhost:{port}?prefix=opsfix-same",
            f"redis://[::1]:{port}/0?prefix=opsfix-same",
            f"redis://127.0.0.1:{port}/1?db=0&prefix=opsfix-same",
        ):
            result = runner.invoke(app, ["copy", source, other])
            assert result.exit_code == 2, (other, result.output)
            assert result.output == SAME
        for other in (f"redis://127.0.0.1:{port}/1?prefix=opsfix-same", f"redis://127.0.0.1:{port}/0?prefix=other"):
            assert not same_store(build_storage(source), build_storage(other)), other
        assert _summary(source) == before
    finally:
        asyncio.run(_destroy(source))


async def _destroy(url: str) -> None:
    store = await connect(url)
    await store.destroy()


def test_mongodb_spellings_of_one_database_are_one_store(secantus_url: str) -> None:
    pytest.importorskip("memory_core_mongodb")
    source = build_storage("mongodb://h1:27017,h2:27018/app")
    assert same_store(source, build_storage("mongodb://user:pw@H2:27018,h1/app?retryWrites=false"))
    assert not same_store(source, build_storage("mongodb://h1:27017,h2:27018/other"))
    assert not same_store(source, build_storage("mongodb://h1:27017,h2:27018/app", namespace="n1"))
    port = secantus_url.rsplit(":", 1)[1].split("/")[0]
    result = runner.invoke(app, ["copy", f"mongodb://127.0.0.1:{port}/opsfix", f"mongodb://localhost:{port}/opsfix"])
    assert result.exit_code == 2, result.output
    assert result.output == SAME


def test_postgresql_spellings_of_one_schema_are_one_store() -> None:
    pytest.importorskip("memory_core_postgres")
    source = build_storage("postgresql://postgres@127.0.0.1:5432/app?schema=s1")
    assert same_store(source, build_storage("postgres://postgres:secret@localhost/app?schema=s1&sslmode=disable"))
    assert not same_store(source, build_storage("postgresql://postgres@127.0.0.1:5432/app?schema=s2"))
    assert not same_store(source, build_storage("postgresql://postgres@127.0.0.1:5432/app2?schema=s1"))
    assert not same_store(source, build_storage("postgresql://postgres@127.0.0.1:5433/app?schema=s1"))


@pytest.mark.parametrize(
    ("host", "canonical"),
    [
        ("localhost", "localhost"),
        ("LocalHost.", "localhost"),
        ("127.0.0.1", "localhost"),
        ("[::1]", "localhost"),
        ("::ffff:127.0.0.1", "localhost"),
        ("0.0.0.0", "localhost"),
        ("Example.COM", "example.com"),
        ("[2001:db8:0::1]", "2001:db8::1"),
        ("::ffff:10.0.0.1", "10.0.0.1"),
    ],
)
def test_host_spellings(host: str, canonical: str) -> None:
    assert canonical_host(host) == canonical


def test_host_lists_ignore_order_and_default_ports() -> None:
    assert server_addresses("b:1,[::1],a", 9) == server_addresses("a:9,localhost:9,b:1", 9)
    assert server_addresses("", 9) == frozenset({("localhost", 9)})
    assert server_addresses("2001:db8::1", 9) == frozenset({("2001:db8::1", 9)})
