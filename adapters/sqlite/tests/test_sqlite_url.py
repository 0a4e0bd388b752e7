"""URL parsing, options and namespaces of the SQLite adapter."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from memory_core import ValidationError, connect

from memory_core_sqlite import SQLiteStorage
from memory_core_sqlite._url import MEMORY, namespaced_path, parse_url


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///memory.db", "memory.db"),
        ("sqlite:///data/sub/memory.db", "data/sub/memory.db"),
        ("sqlite:////abs/path/memory.db", "/abs/path/memory.db"),
        ("sqlite:///with%20space.db", "with space.db"),
        ("SQLITE:///upper.db", "upper.db"),
        ("sqlite+aiosqlite:///driver.db", "driver.db"),
        ("sqlite://:memory:", MEMORY),
        ("sqlite:///:memory:", MEMORY),
        ("sqlite://", MEMORY),
    ],
)
def test_parse_url_paths(url: str, path: str) -> None:
    assert parse_url(url) == (path, {})


def test_parse_url_query_options() -> None:
    expected = ("m.db", {"timeout": "2.5", "synchronous": "full"})
    assert parse_url("sqlite:///m.db?timeout=2.5&synchronous=full") == expected


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://host/memory.db",
        "sqlite:///",
        "postgres:///x.db",
        "memory.db",
        "sqlite:///m.db?timeout=1&timeout=2",
    ],
)
def test_parse_url_rejects(url: str) -> None:
    with pytest.raises(ValidationError):
        parse_url(url)


def test_from_url_resolves_relative_paths_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = SQLiteStorage.from_url("sqlite:///sub/m.db")
    assert store.path == str(tmp_path / "sub" / "m.db")
    assert os.path.isabs(store.path)
    assert not (tmp_path / "sub").exists()  # construction does no I/O


def test_from_url_absolute_path(tmp_path: Path) -> None:
    store = SQLiteStorage.from_url(f"sqlite:///{tmp_path}/m.db")
    assert store.path == str(tmp_path / "m.db")


def test_namespace_is_a_file_beside_the_given_one(tmp_path: Path) -> None:
    store = SQLiteStorage.from_url(f"sqlite:///{tmp_path}/memory.db", namespace="tenant_7")
    assert store.path == str(tmp_path / "memory-tenant_7.db")
    assert namespaced_path(str(tmp_path / "plain"), "a.b-c") == str(tmp_path / "plain-a.b-c")
    assert namespaced_path(MEMORY, "x") == MEMORY


@pytest.mark.parametrize("namespace", ["", "../x", "a/b", ".hidden", "-dash", "x" * 129, "sp ace", 7])
def test_bad_namespace(namespace: object, tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        SQLiteStorage.from_url(f"sqlite:///{tmp_path}/m.db", namespace=namespace)  # type: ignore[arg-type]


def test_options_from_url_and_keywords(tmp_path: Path) -> None:
    store = SQLiteStorage.from_url(f"sqlite:///{tmp_path}/m.db?timeout=2&synchronous=full")
    assert (store.settings.timeout, store.settings.synchronous) == (2.0, "FULL")
    store = SQLiteStorage.from_url(f"sqlite:///{tmp_path}/m.db?timeout=2", timeout=7)
    assert store.settings.timeout == 7.0
    assert SQLiteStorage.from_url("sqlite://:memory:").settings.synchronous == "NORMAL"


@pytest.mark.parametrize(
    "options",
    [{"timeout": 0}, {"timeout": -1}, {"timeout": "soon"}, {"timeout": True}, {"synchronous": "OFF"}, {"pool": 3}],
)
def test_bad_options(options: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SQLiteStorage.from_url("sqlite://:memory:", **options)


@pytest.mark.anyio
async def test_connect_finds_the_adapter_by_scheme(tmp_path: Path) -> None:
    store = await connect(f"sqlite:///{tmp_path}/deep/er/m.db?create_dirs=true", namespace="n1")
    try:
        assert isinstance(store, SQLiteStorage)
        assert store.journal_mode == "wal"
        assert (tmp_path / "deep" / "er" / "m-n1.db").exists()
    finally:
        await store.destroy()


@pytest.mark.anyio
async def test_memory_stores_are_separate() -> None:
    first = await connect("sqlite://:memory:")
    second = await connect("sqlite:///:memory:", namespace="other")
    try:
        await first.save_thread({"id": "t1", "resource_id": "r1"})
        assert await second.get_thread("t1") is None
        assert (await first.get_thread("t1")) is not None
        assert isinstance(first, SQLiteStorage) and first.journal_mode == "memory"
    finally:
        await first.destroy()
        await second.destroy()
