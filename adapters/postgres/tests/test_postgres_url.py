"""``postgresql://`` URLs, options, schema names and registry discovery."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import memory_core
import pytest
from memory_core.errors import ValidationError
from memory_core.registry import storage_class

from memory_core_postgres import PgVectorStore, PostgresStorage
from memory_core_postgres._settings import SERVER_SETTINGS
from memory_core_postgres._url import parse_url


@pytest.mark.parametrize(
    ("url", "dsn", "options"),
    [
        ("postgresql://u:p@h:5433/db", "postgresql://u:p@h:5433/db", {}),
        ("postgres://h/db?schema=team_a", "postgresql://h/db", {"schema": "team_a"}),
        ("postgresql://h/db?sslmode=disable&max_size=4", "postgresql://h/db?sslmode=disable", {"max_size": "4"}),
        ("POSTGRESQL://h/db?application_name=x", "postgresql://h/db?application_name=x", {}),
    ],
)
def test_parse_url_keeps_driver_options_and_takes_ours(url: str, dsn: str, options: dict[str, str]) -> None:
    assert parse_url(url) == (dsn, options)


def test_from_url_builds_settings_and_namespaces() -> None:
    store = PostgresStorage.from_url("postgresql://h/db?schema=team_a&min_size=2&max_size=3", namespace="ns-1")
    assert (store.schema, store.settings.min_size, store.settings.max_size) == ("team_a_ns-1", 2, 3)
    secret = PostgresStorage.from_url("postgresql://u:pw@h/db?schema=team_a", namespace="ns-1")
    assert repr(secret) == "PostgresStorage(schema='team_a_ns-1')"  # no URL, so no password
    assert PostgresStorage.from_url("postgres://h/db").schema == "memory_core"
    assert PostgresStorage.from_url("postgres://h/db", text_search_config="english").settings.text_search_config == (
        "english"
    )


@pytest.mark.parametrize(
    ("url", "options", "field"),
    [
        ("mysql://h/db", {}, "url"),
        ("postgresql-h-db", {}, "url"),
        ("postgresql://h/db?schema=a&schema=b", {}, "URL option 'schema'"),
        ("postgresql://h/db?schema=1abc", {}, "schema"),
        ("postgresql://h/db", {"schema": 'x"; DROP TABLE threads; --'}, "schema"),
        ("postgresql://h/db", {"schema": "a" * 64}, "schema"),
        ("postgresql://h/db", {"namespace": "a b"}, "namespace"),
        ("postgresql://h/db", {"namespace": "n" * 60}, "namespace"),
        ("postgresql://h/db?min_size=0", {}, "min_size"),
        ("postgresql://h/db?max_size=x", {}, "max_size"),
        ("postgresql://h/db", {"min_size": 5, "max_size": 2}, "min_size"),
        ("postgresql://h/db", {"min_size": True}, "min_size"),
        ("postgresql://h/db", {"text_search_config": "english; x"}, "text_search_config"),
        ("postgresql://h/db", {"pool": 3}, "option 'pool'"),
    ],
)
def test_bad_urls_and_options_are_validation_errors(url: str, options: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        PostgresStorage.from_url(url, **options)
    assert caught.value.field == field


def test_vector_store_options() -> None:
    store = PgVectorStore.from_url("postgresql://h/db?index=hnsw&ef_search=64&schema=v", namespace="n1")
    assert (store.schema, store.index, store.ef_search) == ("v", "hnsw", 64)
    assert store.collection(8) == "n1_memory_messages_8"  # R-VEC's namespace prefix
    for bad in ({"index": "ivf"}, {"ef_search": 0}, {"ef_search": "many"}):
        with pytest.raises(ValidationError):
            PgVectorStore.from_url("postgresql://h/db", **bad)


def test_schemes_are_registered() -> None:
    assert storage_class("postgresql://h/db") is PostgresStorage
    assert storage_class("postgres://h/db") is PostgresStorage
    assert memory_core.registry._load(memory_core.registry.VECTOR_GROUP, "postgresql://h/db") is PgVectorStore


@pytest.mark.anyio
async def test_the_accepted_session_settings_are_the_servers_and_reach_it(pg_url: str) -> None:
    """:data:`SERVER_SETTINGS` is the test server's (PostgreSQL 16) list of
    settings a session may set (less ``search_path``, the store's), and a
    store opened with settings in its URL (any case, and libpq's
    ``options``) connects with them in force."""
    conn = await asyncpg.connect(pg_url)
    try:
        rows = await conn.fetch(
            "SELECT lower(name) FROM pg_settings WHERE context IN ('user', 'superuser', 'backend', 'superuser-backend')"
        )
    finally:
        await conn.close()
    assert {row[0] for row in rows} - {"search_path"} == SERVER_SETTINGS
    query = "application_name=mc-settings&DateStyle=SQL,%20DMY&options=-c%20statement_timeout%3D1234"
    store = PostgresStorage.from_url(f"{pg_url}{'&' if '?' in pg_url else '?'}{query}", namespace=uuid.uuid4().hex)
    try:
        await store.open()
        async with store.pool.acquire() as held:
            shown = [
                await held.fetchval(f"SHOW {name}") for name in ("application_name", "DateStyle", "statement_timeout")
            ]
        assert shown == ["mc-settings", "SQL, DMY", "1234ms"], shown
    finally:
        await store.destroy()
