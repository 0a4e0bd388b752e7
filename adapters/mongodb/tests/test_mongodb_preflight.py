"""``preflight``: the strict check (``must_exist``: ``export``, ``copy``'s
source, ``prune``) reads the database's collections and creates nothing;
the plain one checks nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from memory_core_mongodb import MongoStorage
from memory_core_mongodb.testing import unique_namespace
from pymongo import AsyncMongoClient

from memory_core.errors import ValidationError
from memory_core.models import Thread

pytestmark = pytest.mark.anyio

StoreFactory = Callable[..., MongoStorage]


async def test_strict_preflight_needs_both_collections_and_creates_nothing(
    store_factory: StoreFactory, raw_client: AsyncMongoClient[dict[str, Any]]
) -> None:
    namespace = unique_namespace()
    unopened = store_factory(namespace=namespace)
    await unopened.preflight()  # nothing checked
    refusal = f"the database '{unopened.database_name}' holds no memory-core store"
    with pytest.raises(ValidationError, match=refusal) as caught:
        await unopened.preflight(must_exist=True)
    assert caught.value.field == "database"
    assert "collection" not in caught.value.reason  # memory-core's own collections: not the URL's words
    assert unopened.database_name not in await raw_client.list_database_names()
    try:
        await raw_client[unopened.database_name].create_collection("threads")
        with pytest.raises(ValidationError, match="holds no memory-core store"):  # half a store is none
            await unopened.preflight(must_exist=True)
        await raw_client.drop_database(unopened.database_name)
        writer = store_factory(namespace=namespace)
        await writer.save_thread(Thread("t1", "r1"))
        await unopened.preflight(must_exist=True)  # never opened: a client made for the check
        await writer.preflight(must_exist=True)  # opened: the store's own client
        await writer.destroy()
    finally:
        await raw_client.drop_database(unopened.database_name)
        await unopened.close()


async def test_a_write_into_another_applications_database_is_refused(
    store_factory: StoreFactory, raw_client: AsyncMongoClient[dict[str, Any]]
) -> None:
    """``preflight(writes=True)`` (``import``, ``copy``'s destination): a
    database with other collections and not memory-core's is refused before
    ``open`` adds memory-core's beside them; an absent one passes."""
    store = store_factory(namespace=unique_namespace())
    await store.preflight(writes=True)  # absent: open() creates it
    try:
        await raw_client[store.database_name].create_collection("orders")
        with pytest.raises(
            ValidationError, match="is another application's database \\(collection 'orders'\\)"
        ) as caught:
            await store.preflight(writes=True)
        assert caught.value.field == "database"
        assert await raw_client[store.database_name].list_collection_names() == ["orders"]
    finally:
        await raw_client.drop_database(store.database_name)
        await store.close()
