"""A Qdrant server through qdrant-client's ``AsyncQdrantClient``.

``qdrant://host:6333`` (REST over http), ``qdrant+https://host:6333[/prefix]``,
``prefer_grpc=true`` for gRPC. Any ``AsyncQdrantClient`` can be passed as
``client=`` instead, including qdrant-client's local mode
(``AsyncQdrantClient(location=":memory:")``), which the tests and the
retrieval benchmark use for comparison; local mode is too slow to be offered
as a URL (it scans every point in Python).

Collections are shared with other processes, so operations spanning every
dimension (deletes, counts) re-list the collections first, and creation
tolerates a concurrent creator.

The lexical index is the collection ``[<namespace>_]memory_documents``, laid
out and read as by the engine store (:mod:`memory_core_qdrant.edge`'s
notes: a payload document per message, a count, a facet over ``length`` and
a scroll of the documents holding a query term per search), created on the
first lexical call.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Self
from urllib.parse import urlsplit
from uuid import UUID

from memory_core.errors import AdapterClosedError, ValidationError
from memory_core.lexical_index import LexicalDocument, LexicalPostings, LexicalStatistics, copied_document
from memory_core.vector import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_OVERFETCH,
    BaseVectorStore,
    PointFilter,
    RawHit,
    Vector,
)
from memory_core.vector_layout import copied_point
from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from memory_core_qdrant._errors import is_transient
from memory_core_qdrant._layout import (
    DOCUMENT_KEYWORDS,
    DOCUMENTS,
    INDEXED_FIELDS,
    LENGTH_FIELD,
    NO_VECTOR,
    PAGE,
    TENANT_FIELD,
    document_payload,
    document_point_id,
    posting,
    posting_fields,
    stored_document,
    total_length,
)
from memory_core_qdrant._url import resolve_url

__all__ = ["QdrantServerStore", "server_filter"]

_SCROLL = 1000
"""Points per ``scroll`` page when a clone's points are copied."""


def server_filter(flt: PointFilter, *extra: models.Condition) -> models.Filter | None:
    """qdrant-client's filter for ``flt`` and ``extra`` conditions (None when
    it selects everything)."""
    must: list[models.Condition] = list(extra)
    if flt.message_ids:
        must.append(models.FieldCondition(key="message_id", match=models.MatchAny(any=list(flt.message_ids))))
    if flt.thread_id is not None:
        must.append(models.FieldCondition(key="thread_id", match=models.MatchValue(value=flt.thread_id)))
    if flt.resource_id is not None:
        must.append(models.FieldCondition(key="resource_id", match=models.MatchValue(value=flt.resource_id)))
    return models.Filter(must=must) if must else None


class QdrantServerStore(BaseVectorStore):
    """A Qdrant server (``qdrant://``, ``qdrant+http://``, ``qdrant+https://``).

    The public methods and the layout are :class:`memory_core.vector.BaseVectorStore`'s;
    this class implements its primitives with qdrant-client.

    Args:
        url: ``http(s)://host:port[/prefix]`` for qdrant-client; ignored when
            ``client`` is given.
        client: an ``AsyncQdrantClient`` to use (not closed by this store).
        api_key: the server's API key.
        prefer_grpc: talk gRPC instead of REST (default False).
        grpc_port: gRPC port (default 6334).
        timeout: request timeout in seconds (qdrant-client's default when None).
        exact: exact (brute-force) search instead of HNSW (default False: the
            server picks; filtered searches over small tenants are exact anyway).
        namespace: collection-name prefix (see :class:`memory_core.vector.BaseVectorStore`).
        overfetch: search over-fetch factor (int >= 1).
        batch_size: points per upsert request (int >= 1).

    Raises:
        ValidationError: neither ``url`` nor ``client``, or a bad option.
    """

    backend_name = "qdrant"
    shares_collections = True
    lexical_index = True

    def __init__(
        self,
        url: str | None = None,
        *,
        client: AsyncQdrantClient | None = None,
        api_key: str | None = None,
        prefer_grpc: bool = False,
        grpc_port: int = 6334,
        timeout: int | None = None,
        exact: bool = False,
        namespace: str | None = None,
        overfetch: int = DEFAULT_OVERFETCH,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        super().__init__(namespace=namespace, overfetch=overfetch, batch_size=batch_size)
        if url is None and client is None:
            raise ValidationError("url", "give a server URL or an AsyncQdrantClient as client=")
        self.url = url
        if url is not None:  # qdrant-client's connection errors do not name the server
            self.backend_address = urlsplit(url).netloc
        self.exact = exact
        self._client_options: dict[str, Any] = {
            "api_key": api_key,
            "prefer_grpc": prefer_grpc,
            "grpc_port": grpc_port,
            "timeout": timeout,
        }
        self._client: AsyncQdrantClient | None = client
        self._owns_client = client is None
        self._documents_made = False

    @classmethod
    def from_url(cls, url: str, *, clock: Any = None, namespace: str | None = None, **options: Any) -> Self:
        """Build the store for a server URL (no I/O).

        Args:
            url: ``qdrant://host:6333``, ``qdrant+http://...`` or
                ``qdrant+https://host[:port][/prefix]``; options may follow as
                ``?key=value``.
            clock: accepted for the registry's signature; unused (payloads
                carry the messages' own ``created_at``).
            namespace: collection-name prefix.
            **options: ``overfetch``, ``batch_size``, ``api_key``,
                ``prefer_grpc``, ``grpc_port``, ``timeout`` (seconds), ``exact``
                (bool: exact instead of HNSW search), ``client`` (an
                ``AsyncQdrantClient`` to use instead of making one; not closed
                by the store). Keyword options override the URL's.

        Raises:
            ValidationError: a malformed URL, an engine URL
                (``qdrant::memory:``, ``qdrant+path:``), an unknown option or a
                bad value.
        """
        settings, checked = resolve_url(url, options, mode="server")
        return cls(settings.url, namespace=namespace, **checked)

    def __repr__(self) -> str:
        where = self.url if self._owns_client else "<client>"
        return f"QdrantServerStore({where!r}, namespace={self.namespace!r})"

    def is_retryable(self, exc: Exception) -> bool:
        """Connection errors, timeouts, HTTP 408/429/502/503/504 and gRPC
        UNAVAILABLE/DEADLINE_EXCEEDED/RESOURCE_EXHAUSTED."""
        return is_transient(exc)

    @property
    def client(self) -> AsyncQdrantClient:
        """The qdrant-client in use (after ``open``)."""
        if self._client is None:
            raise AdapterClosedError("qdrant store: open it first")
        return self._client

    # ------------------------------------------------------------------ primitives

    async def _connect(self) -> None:
        if self._client is None:
            # No compatibility probe: it is a blocking request at construction.
            self._client = AsyncQdrantClient(url=self.url, check_compatibility=False, **self._client_options)

    async def _disconnect(self) -> None:
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def _list_collections(self) -> Iterable[str]:
        answer = await self.client.get_collections()
        return [c.name for c in answer.collections]

    async def _create_collection(self, name: str, dimension: int) -> None:
        client = self.client
        if not await client.collection_exists(name):
            try:
                await client.create_collection(
                    name, vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE)
                )
            except UnexpectedResponse as exc:
                if exc.status_code != 409:  # 409: a concurrent opener made it first
                    raise
        with warnings.catch_warnings():
            # qdrant-client's local mode warns that it has no payload indexes.
            warnings.simplefilter("ignore", UserWarning)
            for field in INDEXED_FIELDS:
                tenant = field == TENANT_FIELD
                schema = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=tenant)
                await client.create_payload_index(name, field, field_schema=schema, wait=True)

    async def _drop(self, name: str) -> None:
        await self.client.delete_collection(name)

    async def _upsert(self, name: str, ids: list[str], vectors: Vector, payloads: list[dict[str, Any]]) -> None:
        batch = models.Batch(ids=list(ids), vectors=vectors.tolist(), payloads=payloads)
        await self.client.upsert(name, points=batch, wait=True)

    async def _copy_points(
        self, name: str, mapping: dict[str, str], thread_id: str, resource_id: str
    ) -> set[str] | None:
        # Qdrant has no server-side copy: the sources' points are scrolled
        # with their vectors and upserted under the new ids (no embedding).
        condition = server_filter(PointFilter(message_ids=tuple(mapping)))
        ids: list[int | str | UUID] = []
        vectors: list[Any] = []
        payloads: list[dict[str, Any]] = []
        sources: set[str] = set()
        offset: Any = None
        while True:
            found, offset = await self.client.scroll(
                name, scroll_filter=condition, limit=_SCROLL, offset=offset, with_payload=True, with_vectors=True
            )
            for point in found:
                old = dict(point.payload or {})
                sources.add(old["message_id"])
                pid, payload = copied_point(old, mapping, thread_id, resource_id)
                ids.append(pid)
                vectors.append(point.vector)
                payloads.append(payload)
            if offset is None:
                break
        if ids:
            await self.client.upsert(name, points=models.Batch(ids=ids, vectors=vectors, payloads=payloads), wait=True)
        return sources

    async def _delete(self, name: str, flt: PointFilter) -> None:
        condition = server_filter(flt)
        if condition is None:
            raise ValidationError("filter", "an unfiltered delete would empty the collection; refused", "R-VEC")
        await self.client.delete(name, points_selector=models.FilterSelector(filter=condition), wait=True)

    async def _search(self, name: str, vector: Vector, limit: int, flt: PointFilter) -> list[RawHit]:
        answer = await self.client.query_points(
            name,
            query=vector.tolist(),
            query_filter=server_filter(flt),
            limit=limit,
            with_payload=flt.hit_fields(),
            search_params=models.SearchParams(exact=True) if self.exact else None,
        )
        return [flt.hit(point.payload, point.score) for point in answer.points]

    async def _count(self, name: str, flt: PointFilter) -> int:
        answer = await self.client.count(name, count_filter=server_filter(flt), exact=True)
        return answer.count

    async def _message_ids(self, name: str, flt: PointFilter) -> set[str]:
        # A facet over the message_id index; its limit must cover every
        # distinct value, and the point count bounds them.
        points = await self._count(name, flt)
        if points == 0:
            return set()
        answer = await self.client.facet(name, "message_id", facet_filter=server_filter(flt), limit=points, exact=True)
        return {str(hit.value) for hit in answer.hits}

    # ------------------------------------------------------------------ lexical index

    async def _documents(self) -> str:
        """The lexical index's collection, created (with its payload indexes)
        on first use; tolerates a concurrent creator."""
        name = self._prefix + DOCUMENTS
        if self._documents_made:
            return name

        async def create() -> None:
            client = self.client
            if not await client.collection_exists(name):
                try:
                    await client.create_collection(
                        name, vectors_config={}, sparse_vectors_config={NO_VECTOR: models.SparseVectorParams()}
                    )
                except UnexpectedResponse as exc:
                    if exc.status_code != 409:
                        raise
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # local mode: no payload indexes
                for field in DOCUMENT_KEYWORDS:
                    schema = models.KeywordIndexParams(
                        type=models.KeywordIndexType.KEYWORD, is_tenant=field == TENANT_FIELD
                    )
                    await client.create_payload_index(name, field, field_schema=schema, wait=True)
                integer = models.IntegerIndexParams(type=models.IntegerIndexType.INTEGER, lookup=True, range=False)
                await client.create_payload_index(name, LENGTH_FIELD, field_schema=integer, wait=True)
            self._documents_made = True

        await self._setup.run(("collection", name), lambda: self._documents_made, create)
        return name

    async def _write_documents(self, documents: Sequence[LexicalDocument]) -> None:
        points = [
            models.PointStruct(id=document_point_id(d.message_id), vector={}, payload=document_payload(d))
            for d in documents
        ]
        await self.client.upsert(await self._documents(), points=points, wait=True)

    async def _copy_documents(self, mapping: dict[str, str], thread_id: str, resource_id: str) -> None:
        # No server-side copy: the sources' document points are scrolled and
        # written under the copies' ids (their payloads only; nothing is
        # tokenised again).
        name, condition = await self._documents(), server_filter(PointFilter(message_ids=tuple(mapping)))
        sources: list[LexicalDocument] = []
        offset: Any = None
        while True:
            found, offset = await self.client.scroll(
                name, scroll_filter=condition, limit=_SCROLL, offset=offset, with_payload=True
            )
            sources.extend(stored_document(dict(point.payload or {})) for point in found)
            if offset is None:
                break
        if sources:
            await self._write_documents([copied_document(d, mapping, thread_id, resource_id) for d in sources])

    async def _delete_documents(self, flt: PointFilter) -> None:
        condition = server_filter(flt)
        if condition is None:
            raise ValidationError("filter", "an unfiltered delete would empty the index; refused", "R-VEC")
        selector = models.FilterSelector(filter=condition)
        await self.client.delete(await self._documents(), points_selector=selector, wait=True)

    async def _read_statistics(self, terms: tuple[str, ...], flt: PointFilter) -> LexicalStatistics:
        name, scope = await self._documents(), server_filter(flt)
        size = (await self.client.count(name, count_filter=scope, exact=True)).count
        if size == 0:
            return LexicalStatistics(0, 0, dict.fromkeys(terms, 0))
        facet = await self.client.facet(name, LENGTH_FIELD, facet_filter=scope, limit=size, exact=True)
        frequencies = {}
        for term in terms:
            holding = server_filter(flt, models.FieldCondition(key="terms", match=models.MatchValue(value=term)))
            frequencies[term] = (await self.client.count(name, count_filter=holding, exact=True)).count
        return LexicalStatistics(size, total_length((hit.value, hit.count) for hit in facet.hits), frequencies)

    async def _read_postings(
        self, selecting: tuple[str, ...], counted: tuple[str, ...], flt: PointFilter
    ) -> LexicalPostings:
        name = await self._documents()
        holding = server_filter(flt, models.FieldCondition(key="terms", match=models.MatchAny(any=list(selecting))))
        matches: list[tuple[str, int, dict[str, int]]] = []
        offset: Any = None
        while True:
            records, offset = await self.client.scroll(
                name,
                scroll_filter=holding,
                limit=PAGE,
                offset=offset,
                with_payload=posting_fields(counted),
                with_vectors=False,
            )
            matches.extend(posting(record.payload or {}) for record in records)
            if offset is None:
                return LexicalPostings(matches)

    async def _count_documents(self, flt: PointFilter) -> int:
        answer = await self.client.count(await self._documents(), count_filter=server_filter(flt), exact=True)
        return answer.count

    async def _document_ids(self, flt: PointFilter) -> dict[str, str]:
        name, condition = await self._documents(), server_filter(flt)
        owners: dict[str, str] = {}
        offset: Any = None
        while True:
            records, offset = await self.client.scroll(
                name,
                scroll_filter=condition,
                limit=PAGE,
                offset=offset,
                with_payload=["message_id", "resource_id"],
                with_vectors=False,
            )
            owners.update((str(r.payload["message_id"]), str(r.payload["resource_id"])) for r in records if r.payload)
            if offset is None:
                return owners

    async def _drop_documents(self) -> None:
        await self.client.delete_collection(self._prefix + DOCUMENTS)
        self._documents_made = False
