"""The adapters' READMEs show programs a user can paste and run (issue 26:
their snippets used a top-level ``await``, a SyntaxError in a script, and
the Qdrant README's headline used the throwaway ``qdrant::memory:``).
Every ``python`` block is plain Python that calls ``asyncio.run``; the
embedded adapters' headline programs (SQLite, Qdrant's in-process engine)
run here, twice on the same files, as a user restarting them does. The
server adapters' headlines name a place of the application's own in their
URL (a Redis key prefix, a PostgreSQL schema, a MongoDB database: the
default is shared by every store that names none), and the Redis and
PostgreSQL ones run on the suite's servers; the PostgreSQL one, refused for
want of pgvector, creates nothing (issue 26: it made the storage's schema,
then refused the vectors)."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import re
import runpy
import uuid
from pathlib import Path

import pytest

from memory_core import BackendError
from memory_core.registry import build_storage

ADAPTERS = Path(__file__).resolve().parents[1] / "adapters"
READMES = sorted(ADAPTERS.glob("*/README.md"))


def _blocks(readme: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("readme", READMES, ids=[r.parent.name for r in READMES])
def test_every_block_is_a_program(readme: Path) -> None:
    for code in _blocks(readme):
        tree = ast.parse(code)  # a top-level await is a SyntaxError here
        assert "asyncio.run(" in code or not any(isinstance(n, ast.AsyncFunctionDef) for n in tree.body), code


@pytest.mark.parametrize(("adapter", "module"), [("sqlite", "memory_core_sqlite"), ("qdrant", "memory_core_qdrant")])
def test_the_embedded_headline_runs_twice(
    adapter: str, module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    code = _blocks(ADAPTERS / adapter / "README.md")[0]
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    for _ in range(2):
        runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == {"sqlite": ["[]", "[]"], "qdrant": ["True", "True"]}[adapter]


def test_the_qdrant_headline_keeps_its_vectors() -> None:
    code = _blocks(ADAPTERS / "qdrant" / "README.md")[0]
    assert "qdrant+path:///" in code and "::memory:" not in code


_PLACES = {
    "redis": re.compile(r"\?(?:.*&)?prefix=[^&\"]+"),
    "postgres": re.compile(r"\?(?:.*&)?schema=[^&\"]+"),
    "mongodb": re.compile(r"mongodb://[^/\"]+/\w+"),
}
"""How each server adapter's URL names the application's own place."""


@pytest.mark.parametrize("adapter", sorted(_PLACES))
def test_a_server_headline_names_its_application_place_in_the_url(adapter: str) -> None:
    code = _blocks(ADAPTERS / adapter / "README.md")[0]
    urls = re.findall(r"\"((?:redis|postgresql|mongodb)://[^\"]*)\"", code)
    assert urls, code
    assert all(_PLACES[adapter].search(url) for url in urls), urls
    assert "namespace=" not in code.split("#")[0]  # the URL alone names the store, for the commands too


def _run_headline(code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")


def test_the_redis_headline_runs_on_its_own_prefix(
    valkey_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = f"readme-{uuid.uuid4().hex[:8]}"
    code = _blocks(ADAPTERS / "redis" / "README.md")[0]
    code = code.replace("redis://localhost:6379/0", valkey_url.rstrip("/")).replace("prefix=my-app", f"prefix={prefix}")
    for _ in range(2):
        _run_headline(code, tmp_path)
    assert capsys.readouterr().out.split() == [prefix, prefix]
    url = re.findall(r"\"(redis://[^\"]*)\"", code)[0]

    async def reached_and_removed() -> None:
        store = build_storage(url)
        await store.preflight(must_exist=True)  # the URL alone names the store the program wrote
        await store.open()
        await store.destroy()

    asyncio.run(reached_and_removed())


def _postgres(postgres_url: str) -> tuple[str, str]:
    """``(scheme://user@host:port, /database)`` of the suite's PostgreSQL."""
    found = re.fullmatch(r"(postgresql://[^@/]+@[^/]+)(/[^?]*)", postgres_url.split("?")[0])
    assert found, postgres_url
    return found.group(1), found.group(2)


async def _schemas(url: str) -> list[str]:
    """The schemas of the database ``url`` names, but PostgreSQL's own."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' "
            "AND nspname NOT IN ('information_schema', 'public')"
        )
    finally:
        await conn.close()
    return [row[0] for row in rows]


def test_the_postgres_headline_runs_twice(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncpg

    async def has_pgvector() -> bool:
        conn = await asyncpg.connect(postgres_url)
        try:
            return bool(await conn.fetchval("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"))
        finally:
            await conn.close()

    if not asyncio.run(has_pgvector()):
        pytest.skip("the server has no pgvector extension")
    server, database = _postgres(postgres_url)
    schema = f"readme_{uuid.uuid4().hex[:8]}"
    code = _blocks(ADAPTERS / "postgres" / "README.md")[0]
    code = code.replace("postgresql://app@db:5432/agents", server + database).replace(
        "schema=my_app", f"schema={schema}"
    )
    code = code.replace("vector=URL)", 'vector=URL, embedder="lexical")')  # the default would load MiniLM
    try:
        for _ in range(2):
            _run_headline(code, tmp_path)
        lines = capsys.readouterr().out.split()
        assert len(lines) == 2 and lines[0] == lines[1], lines  # the same thread, found again
    finally:
        asyncio.run(_drop_schema(postgres_url, schema))


async def _drop_schema(url: str, schema: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def test_the_postgres_headline_refused_for_pgvector_creates_nothing(postgres_url: str, tmp_path: Path) -> None:
    """In a new database, as a role that may make schemas there but not the
    pgvector extension (to the store, a server without vectors), the
    headline program is refused before the storage's schema is made."""
    import asyncpg

    server, _ = _postgres(postgres_url)
    name = f"readme_{uuid.uuid4().hex[:8]}"  # the role, its database and the schema

    async def admin(*statements: str) -> None:
        conn = await asyncpg.connect(postgres_url)
        try:
            for statement in statements:
                await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(
        admin(
            f'CREATE ROLE "{name}" LOGIN', f'CREATE DATABASE "{name}"', f'GRANT CREATE ON DATABASE "{name}" TO "{name}"'
        )
    )
    user_url = re.sub(r"//[^@]+@", f"//{name}@", server) + f"/{name}"
    code = _blocks(ADAPTERS / "postgres" / "README.md")[0]
    code = code.replace("postgresql://app@db:5432/agents", user_url).replace("schema=my_app", f"schema={name}")
    code = code.replace("vector=URL)", 'vector=URL, embedder="lexical")')
    try:
        with pytest.raises(BackendError, match="pgvector"):
            _run_headline(code, tmp_path)
        assert asyncio.run(_schemas(server + f"/{name}")) == []  # nothing was created
    finally:
        asyncio.run(admin(f'DROP DATABASE "{name}" WITH (FORCE)', f'DROP ROLE "{name}"'))
