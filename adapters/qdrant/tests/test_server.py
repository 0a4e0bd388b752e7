"""The qdrant-client path: error wrapping, retry classification, client
ownership (the behaviour itself runs in test_vector_store on local mode and,
with QDRANT_URL, on a real server)."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
from memory_core.errors import AdapterClosedError, BackendError, ValidationError
from memory_core.testing import free_port
from memory_core.vector import VectorPoint
from qdrant_client import AsyncQdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from memory_core_qdrant import QdrantServerStore, from_url
from memory_core_qdrant._errors import is_transient

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("protocol", ["", "&prefer_grpc=true"], ids=["rest", "grpc"])
async def test_unreachable_server_raises_a_retryable_backend_error(protocol: str) -> None:
    store = from_url(f"qdrant://127.0.0.1:{free_port()}?timeout=2&grpc_port={free_port()}{protocol}")
    with pytest.raises(BackendError) as caught:
        await store.open()
    error = caught.value
    assert (error.backend, error.operation, error.retryable) == ("qdrant", "open", True)
    assert error.__cause__ is error.original is not None
    await store.close()


async def test_a_store_needs_a_url_or_a_client_and_is_used_after_open() -> None:
    with pytest.raises(ValidationError, match="url"):
        QdrantServerStore()
    unopened = from_url("qdrant://h")
    assert isinstance(unopened, QdrantServerStore)
    with pytest.raises(AdapterClosedError):
        unopened.client  # noqa: B018


async def test_server_errors_are_wrapped_and_not_retryable(local_client: AsyncQdrantClient) -> None:
    async with QdrantServerStore(client=local_client, namespace="n1") as store:
        await store.upsert([VectorPoint("m1", 0, np.ones(4, dtype=np.float32), "t1", "r1", 0)])
        # Another writer recreates the collection with another size: our next upsert fails in the driver.
        await local_client.delete_collection(store.collection(4))
        from qdrant_client import models

        await local_client.create_collection(
            store.collection(4), vectors_config=models.VectorParams(size=5, distance=models.Distance.COSINE)
        )
        with pytest.raises(BackendError) as caught:
            await store.upsert([VectorPoint("m2", 0, np.ones(4, dtype=np.float32), "t1", "r1", 0)])
        assert (caught.value.operation, caught.value.retryable) == ("upsert", False)
        assert caught.value.__cause__ is not None


async def test_an_injected_client_is_not_closed(local_client: AsyncQdrantClient) -> None:
    store = QdrantServerStore(client=local_client, namespace="n2")
    async with store:
        await store.upsert([VectorPoint("m1", 0, np.ones(4, dtype=np.float32), "t1", "r1", 0)])
    assert store.collection(4) in [c.name for c in (await local_client.get_collections()).collections]
    async with QdrantServerStore(client=local_client, namespace="n2") as again:
        assert await again.count() == 1
        await again.destroy()
    assert (await local_client.get_collections()).collections == []


async def test_collections_made_by_another_process_are_seen(local_client: AsyncQdrantClient) -> None:
    async with (
        QdrantServerStore(client=local_client, namespace="shared") as first,
        QdrantServerStore(client=local_client, namespace="shared") as second,
    ):
        await first.upsert([VectorPoint("m1", 0, np.ones(6, dtype=np.float32), "t1", "r1", 0)])
        assert await second.count() == 1
        assert [h.message_id for h in await second.search(np.ones(6, dtype=np.float32), 1)] == ["m1"]
        await second.delete_messages(["m1"])
        assert await first.count() == 0
        await first.destroy()


def _response(status: int) -> UnexpectedResponse:
    return UnexpectedResponse(status, "reason", b"{}", httpx.Headers())


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (httpx.ConnectError("refused"), True),
        (httpx.ReadTimeout("slow"), True),
        (ConnectionResetError(), True),
        (TimeoutError(), True),
        (ResponseHandlingException(httpx.ConnectError("refused")), True),
        (ResponseHandlingException(ValueError("bad json")), False),
        (_response(503), True),
        (_response(429), True),
        (_response(400), False),
        (_response(404), False),
        (ValueError("wrong dimension"), False),
        (Exception("Service runtime error: cannot load edge shard"), False),
    ],
)
def test_retry_classification(exc: Exception, retryable: bool) -> None:
    assert is_transient(exc) is retryable
