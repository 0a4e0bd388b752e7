"""``preflight(must_exist=True)`` on SQLite: the file must hold memory-core's
schema, checked without writing, so ``export`` of a 0-byte file or of another
application's database is refused instead of adding memory-core's tables to
it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from memory_core.cli import app
from memory_core.errors import ValidationError
from memory_core.models import Thread
from typer.testing import CliRunner

from memory_core_sqlite import SQLiteStorage

pytestmark = pytest.mark.anyio


def _foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.mark.parametrize("kind", ["empty", "foreign"])
async def test_a_file_without_a_store_is_refused_and_unchanged(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "f.db"
    if kind == "empty":
        path.touch()
    else:
        _foreign(path)
    before = _snapshot(tmp_path)
    store = SQLiteStorage.from_url(f"sqlite:///{path}")
    with pytest.raises(ValidationError, match="holds no memory-core store") as caught:
        await store.preflight(must_exist=True)
    assert caught.value.field == "url"
    await store.preflight(must_exist=False)  # a destination: open() will create the schema
    assert _snapshot(tmp_path) == before  # no table added, no -wal/-shm left


async def test_an_existing_store_passes_and_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStorage.from_url(f"sqlite:///{path}")
    await store.open()
    await store.close()
    before = _snapshot(tmp_path)
    await SQLiteStorage.from_url(f"sqlite:///{path}").preflight(must_exist=True)
    assert _snapshot(tmp_path) == before


async def test_an_open_store_in_wal_passes(tmp_path: Path) -> None:
    store = SQLiteStorage.from_url(f"sqlite:///{tmp_path / 'w.db'}")
    await store.open()
    try:
        await SQLiteStorage.from_url(f"sqlite:///{tmp_path / 'w.db'}").preflight(must_exist=True)
    finally:
        await store.close()


@pytest.mark.parametrize("command", [["export"], ["prune", "--dry-run", "--older-than", "30d"]])
@pytest.mark.parametrize("kind", ["empty", "foreign"])
def test_the_cli_gives_one_red_line(tmp_path: Path, command: list[str], kind: str) -> None:
    path = tmp_path / "f.db"
    if kind == "empty":
        path.touch()
    else:
        _foreign(path)
    before = _snapshot(tmp_path)
    result = CliRunner().invoke(app, [command[0], f"sqlite:///{path}", *command[1:]])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: URL: the file {str(path)!r} holds no memory-core store"), result.output
    assert result.output.count("\n") == 1
    assert _snapshot(tmp_path) == before


def _long_path(folder: Path, size: int) -> Path:
    """A database path of exactly ``size`` bytes under ``folder`` (its
    folders made, of 200-character names at most)."""
    base = folder.resolve()
    left = size - len(str(base)) - len("/x.db")
    parts = []
    while left > 0:
        part = min(200, left - 1) if left > 1 else 1
        parts.append("d" * part)
        left -= part + 1
    path = base.joinpath(*parts) / "x.db"
    path = path.with_name("x" * (1 + size - len(str(path))) + ".db")
    assert len(str(path)) == size
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


async def test_the_longest_path_sqlite_opens_works_and_a_longer_one_is_refused_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a path over SQLite's limit failed in open with its bare
    "unable to open database file" (a BackendError that names no field),
    after ``create_dirs`` had made the folders. A relative URL is measured
    as the absolute path it opens (a short relative name in a deep folder
    is refused too)."""
    from memory_core_sqlite._url import MAX_PATH_BYTES

    longest = _long_path(tmp_path / "ok", MAX_PATH_BYTES)
    async with SQLiteStorage.from_url(f"sqlite:///{longest}") as store:
        await store.preflight()
        await store.save_thread(Thread("t1", "r1"))
        assert await store.get_thread("t1") is not None
    too_long = _long_path(tmp_path / "no", MAX_PATH_BYTES + 1)
    before = sorted(p.name for p in too_long.parent.iterdir())
    monkeypatch.chdir(too_long.parent)
    for url in (
        f"sqlite:///{too_long}",
        f"sqlite:///{too_long.parent / 'new' / too_long.name}?create_dirs=true",
        f"sqlite:///{too_long.name}",
    ):
        store = SQLiteStorage.from_url(url)
        for step in (store.preflight, store.open):
            with pytest.raises(ValidationError, match=f"at most {MAX_PATH_BYTES} bytes") as caught:
                await step()
            assert caught.value.field == "url"
    assert sorted(p.name for p in too_long.parent.iterdir()) == before  # no file, no folder made


async def test_a_short_symlink_to_a_long_folder_is_measured_resolved(tmp_path: Path) -> None:
    from memory_core_sqlite._url import MAX_PATH_BYTES

    target = _long_path(tmp_path / "long", MAX_PATH_BYTES + 1).parent
    link = tmp_path / "s"
    link.symlink_to(target)
    store = SQLiteStorage.from_url(f"sqlite:///{link / ('x' * 20 + '.db')}")
    with pytest.raises(ValidationError, match="once its symlinks are resolved"):
        await store.preflight()
