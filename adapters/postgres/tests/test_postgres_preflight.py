"""``preflight(must_exist=True)`` on PostgreSQL: a schema the URL names must
exist and hold a memory-core store, checked without creating anything, so
``memory-core export postgresql://...?schema=typo`` is an error instead of an
empty export."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import asyncpg
import pytest
from memory_core import Memory, Thread, connect
from memory_core.cli import app
from memory_core.errors import BackendError, ValidationError
from tests.cli_run import cli
from typer.testing import CliRunner

from memory_core_postgres import PostgresStorage
from memory_core_postgres._url import quote_ident

from .conftest import _has_pgvector

pytestmark = pytest.mark.anyio


async def _schema_exists(url: str, schema: str) -> bool:
    conn = await asyncpg.connect(PostgresStorage.from_url(url).settings.dsn)
    try:
        return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema))
    finally:
        await conn.close()


async def test_a_missing_schema_is_refused_and_not_created(
    pg_target: str, make_store: Callable[..., PostgresStorage]
) -> None:
    store = make_store()
    with pytest.raises(ValidationError) as caught:
        await store.preflight(must_exist=True)
    assert caught.value.field == "schema"
    assert "does not exist" in caught.value.reason
    assert not await _schema_exists(pg_target, store.schema)
    await store.preflight(must_exist=False)  # a destination: open() will create it
    assert not await _schema_exists(pg_target, store.schema)


async def test_a_schema_without_a_store_is_refused(pg_target: str, make_store: Callable[..., PostgresStorage]) -> None:
    store = make_store()
    conn = await asyncpg.connect(store.settings.dsn)
    try:
        await conn.execute(f"CREATE SCHEMA {quote_ident(store.schema)}")
        with pytest.raises(ValidationError, match="holds no memory-core store"):
            await store.preflight(must_exist=True)
    finally:
        await conn.execute(f"DROP SCHEMA {quote_ident(store.schema)} CASCADE")
        await conn.close()


async def test_an_existing_store_passes(make_store: Callable[..., PostgresStorage]) -> None:
    store = make_store()
    await store.open()
    try:
        again = PostgresStorage(store.settings.dsn, schema=store.schema)
        await again.preflight(must_exist=True)
    finally:
        await store.destroy()


def test_export_of_a_misspelt_schema_is_one_red_line(pg_target: str) -> None:
    schema = f"typo_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in pg_target else "?"
    result = CliRunner().invoke(app, ["export", f"{pg_target}{separator}schema={schema}"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: URL: '{schema}' does not exist in the database"), result.output
    assert result.output.count("\n") == 1


async def test_a_write_into_another_applications_schema_is_refused(make_store: Callable[..., PostgresStorage]) -> None:
    """``preflight(writes=True)`` (``import``, ``copy``'s destination): a
    schema holding other tables and no memory-core store is refused before
    ``open`` adds memory-core's tables beside them; an empty one passes."""
    store = make_store()
    conn = await asyncpg.connect(store.settings.dsn)
    try:
        await conn.execute(f"CREATE SCHEMA {quote_ident(store.schema)}")
        await store.preflight(writes=True)  # empty: open() fills it
        await conn.execute(f"CREATE TABLE {quote_ident(store.schema)}.foo (x int)")
        with pytest.raises(ValidationError, match="is another application's database \\(table 'foo'\\)") as caught:
            await store.preflight(writes=True)
        assert caught.value.field == "schema"
    finally:
        await conn.execute(f"DROP SCHEMA {quote_ident(store.schema)} CASCADE")
        await conn.close()


@pytest.mark.parametrize("command", ["prune", "check-index"])
def test_vectors_on_a_server_without_pgvector_name_the_extension(command: str, pg_target: str, tmp_path: Path) -> None:
    """``prune --vector`` and ``check-index`` on a server without pgvector
    say what ``import --vector`` says (the extension is missing). Before:
    "holds no memory-core vectors", as if the URL were mistyped."""
    if asyncio.run(_has_pgvector(pg_target)):
        pytest.skip("the server has pgvector (run with POSTGRES_URL naming one without it)")
    url = f"sqlite:///{tmp_path / 'agent.db'}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1"))

    asyncio.run(seed())
    extra = ["--older-than", "30d", "--dry-run"] if command == "prune" else []
    done = cli(command, url, "--vector", pg_target, *extra)
    assert done.returncode == 2, done.stderr
    assert "the server has no pgvector extension (CREATE EXTENSION vector)" in done.stderr, done.stderr
    assert "holds no memory-core vectors" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


NO_PGVECTOR_URL = os.environ.get("POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
"""A PostgreSQL without pgvector (the machine's PostgreSQL 15 by default)."""


async def test_memory_open_without_pgvector_writes_nothing() -> None:
    """``Memory.open`` with PostgreSQL storage and pgvector vectors on a
    server without the extension refuses before either store writes: the
    storage schema is not created. Before: the storage schema was created,
    then the vectors were refused."""
    try:
        has_pgvector = await _has_pgvector(NO_PGVECTOR_URL)
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"no PostgreSQL at {NO_PGVECTOR_URL}: {exc}")
    if has_pgvector:
        pytest.skip(f"the server at {NO_PGVECTOR_URL} has pgvector (set POSTGRES_URL to one without it)")
    schema = f"t{uuid.uuid4().hex[:16]}"
    url = f"{NO_PGVECTOR_URL}?schema={schema}"
    with pytest.raises(BackendError, match="no pgvector extension"):
        await Memory.open(url, vector=url, embedder="lexical")
    assert not await _schema_exists(url, schema)


@pytest.mark.parametrize(
    ("grants", "refusal"),
    [
        ("GRANT CREATE ON DATABASE {db} TO {role}", "may not create it: have a superuser run CREATE EXTENSION vector"),
        ("", "may not create it"),
    ],
    ids=["may-make-schemas", "may-make-nothing"],
)
async def test_memory_open_as_a_role_that_may_not_make_pgvector_writes_nothing(
    pg_url: str, grants: str, refusal: str
) -> None:
    """``Memory.open`` as a role that may not create the pgvector extension
    (in a database where it is not installed; pgserver has it available)
    is refused before either store writes, naming the fix. Before: the
    preflight only asked whether the extension was available, so the
    storage's schema was made, then ``CREATE EXTENSION`` was refused."""
    name = f"t{uuid.uuid4().hex[:16]}"  # the role, its database and the schema
    admin = await asyncpg.connect(pg_url)
    try:
        await admin.execute(f"CREATE ROLE {name} LOGIN")
        await admin.execute(f"CREATE DATABASE {name}")
        if grants:
            await admin.execute(grants.format(db=name, role=name))
        base = pg_url.rsplit("/", 1)[0]  # postgresql://postgres@127.0.0.1:<port>
        url = f"{base.replace('//postgres@', f'//{name}@')}/{name}?schema={name}"
        with pytest.raises(BackendError, match=refusal):
            await Memory.open(url, vector=url, embedder="lexical")
        assert not await _schema_exists(f"{base}/{name}", name)
    finally:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.execute(f"DROP ROLE IF EXISTS {name}")
        await admin.close()


async def test_memory_open_as_a_role_without_create_on_the_schema_writes_nothing(pg_url: str) -> None:
    """pgvector installed and the schema made by another role: a role that
    may not create tables in it is refused by the vectors' preflight,
    naming the GRANT, before the storage opens (the vectors' ``open``
    would make the lexical index's tables there, after the storage)."""
    name = f"t{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(pg_url)
    try:
        await admin.execute(f"CREATE ROLE {name} LOGIN")
        await admin.execute(f"CREATE DATABASE {name}")
        await admin.execute(f"GRANT CREATE ON DATABASE {name} TO {name}")
        base = pg_url.rsplit("/", 1)[0]
        owner = await asyncpg.connect(f"{base}/{name}")
        try:
            await owner.execute(
                f"CREATE EXTENSION vector; CREATE SCHEMA {name}; GRANT USAGE ON SCHEMA {name} TO {name}"
            )
        finally:
            await owner.close()
        url = f"{base.replace('//postgres@', f'//{name}@')}/{name}?schema={name}"
        with pytest.raises(BackendError, match="GRANT CREATE ON SCHEMA"):
            await Memory.open(url, vector=url, embedder="lexical")
    finally:
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.execute(f"DROP ROLE IF EXISTS {name}")
        await admin.close()
