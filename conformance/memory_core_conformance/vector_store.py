"""``VectorStoreConformance``: the vector store on its own (rule VECTOR-STORE).

What every :class:`memory_core.vector.BaseVectorStore` answers the same way,
whatever its backend: the R-VEC layout (one collection per dimension behind
the namespace prefix, UUIDv5 point ids), upserts that replace, counts of
points and of distinct messages, deletes by message, thread and resource,
filtered cosine search with one hit per message (its best chunk), namespace
isolation, ``destroy``, validation before any write, and the life cycle.

A vector adapter's test module subclasses :class:`VectorStoreConformance`
and provides one fixture, ``vector_store_factory``: ``factory(**options) ->
BaseVectorStore``, unopened, in a fresh namespace unless ``namespace=`` is
given; the options are the base's (``namespace``, ``overfetch``,
``batch_size``). An adapter whose store keeps no deleted bytes provides
``raw_scan`` too (see the fixture), and an adapter registered for URL
schemes provides ``vector_urls`` (:class:`VectorUrls`) for the URL cases.
Stores made by one factory share one location (directory, client or
server), so a store built again with a namespace sees that namespace's
collections. Every test destroys the stores it made.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import anyio
import numpy as np
import numpy.typing as npt
import pytest

from memory_core.errors import AdapterClosedError, BackendError, ValidationError
from memory_core.lexical import bm25_rank, document_terms
from memory_core.lexical_index import LexicalDocument
from memory_core.registry import build_vector
from memory_core.vector import SCORE_DIGITS, BaseVectorStore, VectorPoint
from memory_core_conformance.harness import leaked_by_collection

__all__ = ["IndexKinds", "RawScan", "VectorStoreConformance", "VectorStoreFactory", "VectorUrls"]

VectorStoreFactory = Callable[..., BaseVectorStore]
"""``factory(**options) -> BaseVectorStore``: unopened, fresh namespace unless given."""

RawScan = Callable[[BaseVectorStore], Awaitable[bytes]]
"""``await scan(store) -> bytes``: every byte the backend holds for ``store``."""

IndexKinds = tuple[
    dict[str, tuple[dict[str, Any], frozenset[str]]], Callable[[BaseVectorStore, int], Awaitable[frozenset[str]]]
]
"""``(variants, probe)``: store variants (name -> (factory options, index
kinds their collections carry)) and ``await probe(store, dimension) ->
kinds``, the approximate index kinds the backend holds for a collection."""


@dataclass(frozen=True, slots=True)
class VectorUrls:
    """The URL forms a vector adapter opens, for the URL cases (the
    ``vector_urls`` fixture). The cases build each URL with
    :func:`memory_core.registry.build_vector` (no I/O: nothing is opened,
    no folder is made).

    Attributes:
        accepted: one URL per form the adapter takes (in memory, a folder,
            a server...); a folder URL may name a folder that does not exist.
            The first one takes the base's ``batch_size`` option in its query.
        refused: malformed URLs of the adapter's schemes (no host, a host
            where a folder goes, no folder, credentials the adapter does not
            take in a URL...); each must be refused with a ValidationError
            whose field is ``url``.
        bool_options: a bool option the adapter takes, mapped to a URL that
            takes it; the store exposes the parsed value as its attribute of
            that name.
    """

    accepted: tuple[str, ...]
    refused: tuple[str, ...] = ()
    bool_options: dict[str, str] = field(default_factory=dict)


DIM = 8

Vector = npt.NDArray[np.float32]
T = TypeVar("T")


def unit(*values: float, dim: int = DIM) -> Vector:
    """A unit vector whose first entries are ``values`` (rest zero)."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[: len(values)] = values
    return (vector / np.linalg.norm(vector)).astype(np.float32)


async def _use_in_four_loops(store: BaseVectorStore) -> None:
    """Open ``store``, write, count and destroy it, each under its own
    ``asyncio.run`` (in a thread of its own)."""

    async def in_new_loop(work: Awaitable[T]) -> T:
        return await asyncio.to_thread(asyncio.run, work)  # type: ignore[arg-type]

    try:
        await in_new_loop(store.open())
        await in_new_loop(store.upsert([point("m1", axis(0))]))
        assert await in_new_loop(store.count()) == 1
        await in_new_loop(store.destroy())
    finally:
        if not store.closed:
            await store.destroy()


def axis(index: int, dim: int = DIM) -> Vector:
    """The unit vector along ``index``."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[index] = 1.0
    return vector


def point(
    message_id: str,
    vector: Vector,
    thread_id: str = "t1",
    resource_id: str = "r1",
    chunk: int = 0,
    created_at_us: int = 1_735_689_600_000_000,
) -> VectorPoint:
    """A :class:`VectorPoint` with the suite's defaults (thread t1, resource r1)."""
    return VectorPoint(message_id, chunk, vector, thread_id, resource_id, created_at_us)


class VectorStoreConformance:
    """The store-level vector suite. Fixture to override: ``vector_store_factory``."""

    pytestmark: ClassVar[list[pytest.MarkDecorator]] = [pytest.mark.conformance, pytest.mark.anyio]

    @pytest.fixture
    def vector_store_factory(self) -> VectorStoreFactory:
        """Override: ``factory(**options) -> BaseVectorStore`` (unopened, fresh namespace)."""
        raise NotImplementedError(f"{type(self).__name__} must define the fixture vector_store_factory")

    @pytest.fixture
    def unreachable_vector_store(self) -> BaseVectorStore | None:
        """Override (optional): an unopened store, making its own client, whose
        server cannot be reached (a closed port, a short timeout); None (the
        default) skips the case: a store with no server (in process) has no
        such failure."""
        return None

    @pytest.fixture
    def raw_scan(self) -> RawScan | None:
        """Override (optional): ``await scan(store) -> bytes``, every byte the
        backend holds for the opened ``store`` (every file of its folder, say),
        for the case that an erased resource leaves no trace there. None (the
        default) skips that case: a server keeps deleted bytes until its own
        compaction (the adapter's README says what an operator does)."""
        return None

    @pytest.fixture
    def integer_option_ranges(self) -> dict[str, tuple[int, int]]:
        """Override (optional): the adapter's own integer options (beyond the
        base's) and the lowest and highest value each takes, for the case
        that both ends are taken and one step beyond either, or a bool, is
        refused. Empty (the default): the case checks nothing."""
        return {}

    @pytest.fixture
    def index_kinds(self) -> IndexKinds | None:
        """Override (optional): ``(variants, probe)``. ``variants`` maps a
        name to the factory options of a store variant and the approximate
        index kinds (say ``{"hnsw"}``) its collections must carry;
        ``await probe(store, dimension)`` names the kinds the backend holds
        for that collection. None (the default) skips the case."""
        return None

    @pytest.fixture
    def vector_urls(self) -> VectorUrls | None:
        """Override (optional): the adapter's URL forms (:class:`VectorUrls`),
        for the cases that URLs and their query options are parsed and
        refused alike by every vector adapter. None (the default) skips them."""
        return None

    @pytest.fixture
    def anyio_backend(self) -> str:
        """Adapters run on asyncio."""
        return "asyncio"

    @pytest.fixture
    async def store(self, vector_store_factory: VectorStoreFactory) -> AsyncIterator[BaseVectorStore]:
        """An opened store in a fresh namespace, destroyed after the test."""
        vectors = vector_store_factory()
        await vectors.open()
        try:
            yield vectors
        finally:
            if not vectors.closed:
                await vectors.destroy()

    # ------------------------------------------------------------------ URLs

    def test_vector_store_urls_build_their_forms_and_refuse_malformed_ones(
        self, vector_urls: VectorUrls | None
    ) -> None:
        """Each URL form the adapter declares builds an unopened store
        (without I/O: a folder URL may name a folder not made yet); each
        malformed one is refused with a ValidationError of field ``url``,
        never built into a store that fails later or opens something else
        (a host where a folder goes read as the in-memory form). Each store
        class's own ``from_url`` (what the registry calls, and a user may)
        refuses what is no URL at all (no scheme, empty, not a str) the same
        way, never with a ValueError or TypeError of its parsing."""
        if vector_urls is None:
            pytest.skip("the test class declares no vector_urls")
        classes: set[type[BaseVectorStore]] = set()
        for url in vector_urls.accepted:
            store = build_vector(url)
            assert isinstance(store, BaseVectorStore) and not store.closed, url
            classes.add(type(store))
        for url in vector_urls.refused:
            with pytest.raises(ValidationError) as refused:
                build_vector(url)
            assert refused.value.field == "url", f"{url!r}: {refused.value!r}"
        for cls in classes:
            for nothing in ("", "vectors", None, 5):
                with pytest.raises(ValidationError) as refused:
                    cls.from_url(nothing)  # type: ignore[attr-defined]
                assert refused.value.field == "url", f"{cls.__name__}.from_url({nothing!r}): {refused.value!r}"

    @pytest.mark.parametrize("text", ["0", "-3", "abc", "1.5", "", " "])
    def test_vector_store_url_integer_options_parse_their_text_and_refuse_the_rest(
        self, vector_urls: VectorUrls | None, text: str
    ) -> None:
        """``?batch_size=7`` gives a store whose ``batch_size`` is 7 (so does
        the keyword); any other text (zero, negative, not a whole number,
        blank) and a bool keyword are refused with a ValidationError naming
        the option, not a TypeError from comparing text with a number."""
        if vector_urls is None:
            pytest.skip("the test class declares no vector_urls")
        url = vector_urls.accepted[0]
        join = "&" if "?" in url else "?"
        assert build_vector(f"{url}{join}batch_size=7").batch_size == 7  # type: ignore[attr-defined]
        assert build_vector(url, batch_size=7).batch_size == 7  # type: ignore[attr-defined]
        keyword: dict[str, Any] = {"batch_size": True}
        for query, options in ((f"{join}batch_size={text}", {}), ("", keyword)):
            with pytest.raises(ValidationError) as refused:
                build_vector(url + query, **options)
            assert "batch_size" in refused.value.field, f"{text!r}: {refused.value!r}"

    def test_vector_store_url_bool_options_take_each_text_and_unknown_options_are_named(
        self, vector_urls: VectorUrls | None
    ) -> None:
        """A bool option reads ``true/false``, ``1/0``, ``yes/no``, ``on/off``
        in any case (the store's attribute of that name shows the value) and
        refuses any other text naming the option; an option no adapter
        takes is refused with a ValidationError naming it."""
        if vector_urls is None:
            pytest.skip("the test class declares no vector_urls")
        for name, url in vector_urls.bool_options.items():
            join = "&" if "?" in url else "?"
            for text, value in [
                ("true", True),
                ("FALSE", False),
                ("1", True),
                ("0", False),
                ("Yes", True),
                ("off", False),
            ]:
                assert getattr(build_vector(f"{url}{join}{name}={text}"), name) is value, f"{name}={text}"
            with pytest.raises(ValidationError) as refused:
                build_vector(f"{url}{join}{name}=maybe")
            assert name in refused.value.field
        for url in vector_urls.accepted:
            join = "&" if "?" in url else "?"
            with pytest.raises(ValidationError) as refused:
                build_vector(f"{url}{join}no_such_option=1")
            assert "no_such_option" in refused.value.field, refused.value

    # ------------------------------------------------------------------ lexical index

    async def test_vector_store_lexical_index_ranks_like_the_reference_bm25_and_follows_deletes(
        self, store: BaseVectorStore
    ) -> None:
        if not store.lexical_index:
            pytest.skip(f"{store!r} declares no lexical index (the core composes the lexical ranking)")
        texts = {
            ("m1", "t1", "r1"): "Dogs Rex and Luna ran on the beach",
            ("m2", "t1", "r1"): "the dog Rex sleeps, Rex snores",
            ("m3", "t2", "r1"): "pottery in Boston with two dogs",
            ("m4", "t2", "r1"): "",
            ("m5", "t3", "r2"): "Rex dogs dogs Boston pottery Luna",
        }
        await store.index_documents(
            [LexicalDocument(m, t, r, *document_terms(text)) for (m, t, r), text in texts.items()]
        )

        async def check(gone: set[str]) -> None:
            for query in ("dogs Rex", "Boston pottery", "Luna", "the of"):
                for scope in ({"resource_id": "r1"}, {"thread_id": "t1"}, {"thread_id": "t2"}, {"resource_id": "r2"}):
                    kept = [
                        (m, text)
                        for (m, t, r), text in texts.items()
                        if m not in gone and scope.get("resource_id", r) == r and scope.get("thread_id", t) == t
                    ]
                    for top_k in (1, 2):  # small k: the index may stop before reading every term
                        assert await store.lexical_search(query, top_k, **scope) == bm25_rank(query, kept, top_k)
                    got = await store.lexical_search(query, 10, **scope)
                    assert got == bm25_rank(query, kept, 10), (query, scope)
                    assert not {m for m, _ in got} & gone
                    if scope.get("resource_id") != "r2":
                        assert "m5" not in {m for m, _ in got}  # another resource's

        await check(set())
        assert await store.count_documents(resource_id="r1") == 4  # the empty message is a document too
        await store.delete_messages(["m2"])
        await check({"m2"})
        await store.delete_thread("t2")
        await check({"m2", "m3", "m4"})
        assert await store.count_documents(resource_id="r1") == 1
        await store.delete_resource("r2")
        assert await store.lexical_search("Rex", 10, resource_id="r2") == []
        assert await store.count_documents() == 1

    # ------------------------------------------------------------------ layout and ids

    async def test_vector_store_collection_is_named_by_dimension_with_namespace_prefix(
        self, store: BaseVectorStore
    ) -> None:
        await store.upsert([point("m1", axis(0)), point("m2", axis(1, dim=16))])
        assert await store.dimensions() == [DIM, 16]
        assert store.collection(DIM) == f"{store.namespace}_memory_messages_{DIM}"
        assert await store.count() == 2

    async def test_vector_store_counts_points_per_dimension(self, store: BaseVectorStore) -> None:
        assert await store.dimension_counts() == {}
        await store.upsert([point("m1", axis(0), chunk=c) for c in range(2)] + [point("m2", axis(1, dim=16))])
        assert await store.dimension_counts() == {DIM: 2, 16: 1}
        await store.delete_messages(["m2"])  # an emptied collection still exists, but holds no vectors
        assert await store.dimensions() == [DIM, 16]
        assert await store.dimension_counts() == {DIM: 2}

    async def test_vector_store_memory_refuses_a_second_embedder_after_its_first_write(
        self, store: BaseVectorStore
    ) -> None:
        """Before: once one message of a new embedder was in, the index held
        both dimensions and the check found its own among them."""
        from memory_core import EmbedderMismatchError, InMemoryStorage, Memory
        from memory_core.embedders import LexicalHashEmbedder

        storage = InMemoryStorage()
        built = Memory(
            storage, store, LexicalHashEmbedder(dimension=256), owns_stores=False, allow_volatile_vectors=True
        )
        await built.create_thread("r1", thread_id="t1")
        await built.append_messages("t1", [("user", "my cat is called Miso"), ("assistant", "noted")])
        # A point of the new embedder written behind Memory's back (an older release, another process).
        await store.upsert([point("m-new", unit(1.0, dim=1024))])
        switched = Memory(storage, store, LexicalHashEmbedder(), owns_stores=False, allow_volatile_vectors=True)
        for attempt in (
            switched.append_messages("t1", [("user", "and a dog called Rex")]),
            switched.update_messages([{"id": (await storage.list_messages("t1")).items[0].id, "content": "x"}]),
            switched.check_index(resource_id="r1"),
        ):
            with pytest.raises(EmbedderMismatchError) as caught:
                await attempt
            assert caught.value.field == "embedder" and caught.value.counts == {256: 2, 1024: 1}, caught.value
            for named in (
                "2 vectors (text chunks) of a 256-dimension embedder",
                "'lexical-hash-1024' (1024 dimensions)",
            ):
                assert named in caught.value.reason, caught.value.reason
            assert "memory.reindex(resource_id=...)" in caught.value.reason, caught.value.reason
        assert [m.content for m in (await storage.list_messages("t1")).items] == ["my cat is called Miso", "noted"]
        assert await store.dimension_counts() == {256: 2, 1024: 1}  # nothing written
        await switched.reindex(resource_id="r1")  # the fix the message names
        await store.delete_messages(["m-new"])
        assert await store.dimension_counts() == {1024: 2}
        await switched.append_messages("t1", [("user", "and a dog called Rex")])
        assert not (await switched.check_index(resource_id="r1")).behind

    async def test_vector_store_memory_refuses_another_embedder_of_the_same_dimension(
        self, store: BaseVectorStore, vector_store_factory: VectorStoreFactory
    ) -> None:
        """Issue 26: the index records its embedder's name at its first write
        and refuses an embedder of the same dimension and another name on
        write, recall and check_index, before anything is written. Before,
        only the dimension was recorded: the two vector spaces mixed and
        recall ranked nonsense."""
        from memory_core import EmbedderMismatchError, InMemoryStorage, Memory, MemoryConfig, SemanticRecall
        from memory_core.embedders import LexicalHashEmbedder

        built_with, other = LexicalHashEmbedder(), LexicalHashEmbedder(stem=False)
        assert built_with.dimension == other.dimension and built_with.name != other.name
        storage = InMemoryStorage()
        built = Memory(storage, store, built_with, owns_stores=False, allow_volatile_vectors=True)
        await built.create_thread("r1", thread_id="t1")
        await built.append_messages("t1", [("user", "my cat is called Miso"), ("assistant", "noted")])
        assert await store.recorded_embedder(built_with.dimension) == built_with.name
        config = MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(1, (0, 0), "thread"))
        switched = Memory(storage, store, other, owns_stores=False, allow_volatile_vectors=True)
        for attempt in (
            switched.append_messages("t1", [("user", "and a dog called Rex")]),
            switched.recall("t1", "r1", "cat", thread_config=config),
            switched.check_index(resource_id="r1"),
        ):
            with pytest.raises(EmbedderMismatchError) as caught:
                await attempt
            refused = caught.value
            assert refused.field == "embedder" and refused.recorded == built_with.name, refused
            for named in (repr(built_with.name), repr(other.name), "reindex URL --new"):
                assert named in refused.reason, refused.reason
        assert [m.content for m in (await storage.list_messages("t1")).items] == ["my cat is called Miso", "noted"]
        assert await store.dimension_counts() == {built_with.dimension: 2}  # nothing written
        assert (await built.recall("t1", "r1", "cat", thread_config=config)).semantic_hits != []
        await built.append_messages("t1", [("user", "and a dog called Rex")])
        await store.close()  # the record outlives the store object (a folder opens once at a time)
        again = vector_store_factory(namespace=store.namespace)
        await again.open()
        try:
            if await again.dimension_counts():  # the same location (not a store whose points went)
                assert await again.recorded_embedder(built_with.dimension) == built_with.name
        finally:
            await again.destroy()

    async def test_vector_store_index_without_a_record_keeps_working_and_the_next_write_records_it(
        self, store: BaseVectorStore
    ) -> None:
        """An index written before the record existed (points, no record)
        keeps serving any embedder of its dimension; the next write records
        the writer's name, and from then on another is refused."""
        from memory_core import EmbedderMismatchError, InMemoryStorage, Memory, MemoryConfig, SemanticRecall
        from memory_core.clock import to_us
        from memory_core.embedders import LexicalHashEmbedder

        built_with, other = LexicalHashEmbedder(), LexicalHashEmbedder(stem=False)
        storage = InMemoryStorage()
        plain = Memory(storage, None, None, owns_stores=False)
        await plain.create_thread("r1", thread_id="t1")
        saved = await plain.append_messages("t1", [("user", "my cat is called Miso"), ("assistant", "noted")])
        vectors = await built_with.embed([str(m.content) for m in saved])
        await store.upsert(
            [
                VectorPoint(m.id, 0, v, m.thread_id, "r1", to_us(m.created_at) if m.created_at else 0)
                for m, v in zip(saved, vectors, strict=True)
            ]
        )
        assert await store.recorded_embedder(built_with.dimension) is None
        config = MemoryConfig(last_messages=False, semantic_recall=SemanticRecall(1, (0, 0), "thread"))
        later = Memory(storage, store, built_with, owns_stores=False, allow_volatile_vectors=True)
        assert (await later.recall("t1", "r1", "cat", thread_config=config)).semantic_hits == [saved[0].id]
        assert (await later.check_index(resource_id="r1")).indexed == 2  # no record: checked as before
        await later.append_messages("t1", [("user", "and a dog called Rex")])
        assert await store.recorded_embedder(built_with.dimension) == built_with.name
        switched = Memory(storage, store, other, owns_stores=False, allow_volatile_vectors=True)
        with pytest.raises(EmbedderMismatchError):
            await switched.recall("t1", "r1", "cat", thread_config=config)

    @pytest.mark.parametrize(
        "message_id",
        ["msg_01", "42", "ñandú-1", "a b", "🧵 plan", "x" * 256, "T-1", "t-1", "00000000-0000-0000-0000-000000000000"],
    )
    async def test_vector_store_any_message_id_round_trips(self, store: BaseVectorStore, message_id: str) -> None:
        thread_id, resource_id = f"th {message_id}"[:256], f"res {message_id}"[:256]
        await store.upsert([point(message_id, axis(0), thread_id=thread_id, resource_id=resource_id)])
        hits = await store.search(axis(0), 3)
        assert [(h.message_id, h.thread_id, h.resource_id) for h in hits] == [(message_id, thread_id, resource_id)]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert await store.count(thread_id=thread_id) == 1
        assert await store.count(resource_id=resource_id) == 1
        await store.delete_messages([message_id])
        assert await store.count() == 0

    async def test_vector_store_ids_are_compared_exactly(self, store: BaseVectorStore) -> None:
        await store.upsert([point("T-1", axis(0)), point("t-1", axis(1)), point("t-1 ", axis(2))])
        assert await store.count() == 3
        await store.delete_messages(["t-1"])
        assert sorted(h.message_id for h in await store.search(axis(0), 5)) == ["T-1", "t-1 "]

    async def test_vector_store_reupsert_replaces_and_never_duplicates(self, store: BaseVectorStore) -> None:
        await store.upsert([point("m1", axis(0)), point("m2", axis(1))])
        await store.upsert([point("m1", axis(2)), point("m2", axis(1))])
        assert await store.count() == 2
        hits = await store.search(axis(2), 1)
        assert [h.message_id for h in hits] == ["m1"]
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)

    async def test_vector_store_same_point_twice_in_one_call_keeps_the_last(self, store: BaseVectorStore) -> None:
        await store.upsert([point("m1", axis(0)), point("m1", axis(3))])
        assert await store.count() == 1
        hits = await store.search(axis(3), 1)
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)

    # ------------------------------------------------------------------ counts and deletes

    async def test_vector_store_counts_by_thread_and_resource(self, store: BaseVectorStore) -> None:
        await store.upsert(
            [
                point("a1", axis(0), "t1", "r1"),
                point("a1", axis(1), "t1", "r1", chunk=1),
                point("a2", axis(1), "t1", "r1"),
                point("b1", axis(2), "t2", "r1"),
                point("c1", axis(3), "t3", "r2"),
            ]
        )
        assert await store.count_points() == 5
        assert await store.count_points(thread_id="t1") == 3
        assert await store.count_points(resource_id="r1") == 4
        assert await store.count_points(thread_id="t3", resource_id="r1") == 0
        assert await store.count_points(thread_id="t3", resource_id="r2") == 1
        assert await store.count_points(thread_id="nope") == 0
        # count: distinct messages (a1's two chunks count once)
        assert await store.count() == 4
        assert await store.count(thread_id="t1") == 2
        assert await store.count(resource_id="r1") == 3
        assert await store.count("r1", "t1") == 2
        assert await store.count(thread_id="t3", resource_id="r1") == 0
        assert await store.count(thread_id="nope") == 0

    async def test_vector_store_delete_messages_removes_every_chunk_and_dimension(self, store: BaseVectorStore) -> None:
        await store.upsert(
            [point("m1", axis(0), chunk=c) for c in range(3)] + [point("m1", axis(0, dim=16)), point("m2", axis(1))]
        )
        assert await store.count_points() == 5
        assert await store.count() == 2  # m1 in two dimensions is one message
        await store.delete_messages(["m1", "unknown"])
        assert await store.count() == 1
        assert [h.message_id for h in await store.search(axis(0), 5)] == ["m2"]
        assert await store.search(axis(0, dim=16), 5) == []
        await store.delete_messages([])
        assert await store.count() == 1

    async def test_vector_store_copy_messages_copies_every_chunk_of_one_dimension(self, store: BaseVectorStore) -> None:
        """copy_messages (a clone's vectors): each source's chunks in that
        dimension's collection get copies under the new ids, thread and
        resource (vector and chunk kept); other dimensions,
        other messages and the sources stay as they were."""
        await store.upsert(
            [
                point("a1", axis(0), created_at_us=7),
                point("a1", axis(1), chunk=1, created_at_us=7),
                point("a2", axis(2)),
                point("a3", axis(3)),
                point("a1", axis(0, dim=16)),
            ]
        )
        copied = await store.copy_messages({"a1": "c1", "a2": "c2", "nope": "c9"}, "t9", "r9", DIM)
        if copied is None:  # the backend cannot copy points: the caller embeds instead
            assert await store.count(thread_id="t9") == 0
            return
        assert copied == {"a1", "a2"}
        assert await store.count_points(thread_id="t9", resource_id="r9") == 3
        assert await store.count_points(thread_id="t1") == 5  # the sources keep theirs
        hits = await store.search(axis(1), 1, thread_id="t9")
        assert [(h.message_id, h.thread_id, h.resource_id) for h in hits] == [("c1", "t9", "r9")]
        assert [h.message_id for h in await store.search(axis(2), 1, resource_id="r9")] == ["c2"]
        assert await store.search(axis(0, dim=16), 5, thread_id="t9") == []
        assert await store.copy_messages({"a1": "d1"}, "t8", "r1", 16) == {"a1"}
        assert await store.copy_messages({}, "t8", "r1", DIM) == set()

    async def test_vector_store_copy_messages_copies_the_lexical_documents(self, store: BaseVectorStore) -> None:
        """copy_messages on a store with a lexical index: each copied source's
        document is copied too under the new id, thread and resource, so a
        lexical search of the copies' thread finds them (and a clone's
        hybrid recall is not vector-only); the sources keep theirs."""
        if not store.lexical_index:
            pytest.skip(f"{store!r} declares no lexical index (the core composes the lexical ranking)")
        texts = {"a1": "pottery class in Boston", "a2": "the dog Rex", "a3": "Rex in Boston"}
        await store.upsert([point(m, axis(i)) for i, m in enumerate(texts)])
        await store.index_documents([LexicalDocument(m, "t1", "r1", *document_terms(t)) for m, t in texts.items()])
        copied = await store.copy_messages({"a1": "c1", "a2": "c2"}, "t9", "r9", DIM)
        if copied is None:  # the backend cannot copy: the caller indexes the copies (documents too)
            assert await store.count_documents(thread_id="t9") == 0
            return
        assert await store.count_documents(thread_id="t9", resource_id="r9") == 2
        assert await store.count_documents(thread_id="t1", resource_id="r1") == 3  # the sources keep theirs
        copies = [("c1", texts["a1"]), ("c2", texts["a2"])]
        for query in ("Boston pottery", "Rex", "dog Boston"):
            assert await store.lexical_search(query, 10, thread_id="t9") == bm25_rank(query, copies, 10)
            assert await store.lexical_search(query, 10, resource_id="r9") == bm25_rank(query, copies, 10)
            sources = list(texts.items())
            assert await store.lexical_search(query, 10, thread_id="t1") == bm25_rank(query, sources, 10)
        await store.delete_thread("t9")
        assert await store.count_documents(thread_id="t9") == 0
        assert await store.count_documents() == 3

    async def test_vector_store_document_ids_list_every_document_by_scope(self, store: BaseVectorStore) -> None:
        """document_ids: ``{message_id: resource_id}`` of exactly the
        documents count_documents counts, a text-less one (length 0, no
        point) included, filtered by resource and thread; deletes drop them
        (the whole-store reindex finds the documents of messages storage no
        longer holds by it)."""
        if not store.lexical_index:
            pytest.skip(f"{store!r} declares no lexical index (the core composes the lexical ranking)")
        texts = {"a1": ("t1", "r1", "pottery in Boston"), "a2": ("t1", "r1", ""), "b1": ("t2", "r2", "Rex")}
        await store.index_documents([LexicalDocument(m, t, r, *document_terms(x)) for m, (t, r, x) in texts.items()])
        assert await store.document_ids() == {"a1": "r1", "a2": "r1", "b1": "r2"}
        assert await store.document_ids(resource_id="r1") == {"a1": "r1", "a2": "r1"}
        assert await store.document_ids(thread_id="t2") == {"b1": "r2"}
        assert await store.document_ids(resource_id="r9") == {}
        await store.delete_messages(["a2"])
        await store.delete_resource("r2")
        assert await store.document_ids() == {"a1": "r1"} and await store.count_documents() == 1

    async def test_vector_store_delete_thread_removes_only_that_thread(self, store: BaseVectorStore) -> None:
        await store.upsert(
            [
                point("a1", axis(0), "t1"),
                point("a2", axis(1), "t1", chunk=1),
                point("b1", axis(2), "t2"),
                point("a3", axis(0, dim=16), "t1"),
            ]
        )
        await store.delete_thread("t1")
        assert await store.count() == 1
        assert await store.count(thread_id="t2") == 1
        await store.delete_thread("never-existed")
        assert await store.count() == 1

    async def test_vector_store_delete_resource_removes_only_that_resource(self, store: BaseVectorStore) -> None:
        await store.upsert(
            [
                point("a1", axis(0), "t1", "r1"),
                point("a1", axis(1), "t1", "r1", chunk=1),
                point("a2", axis(0, dim=16), "t2", "r1"),
                point("b1", axis(2), "t3", "r2"),
            ]
        )
        await store.delete_resource("r1")
        assert (await store.count(), await store.count_points()) == (1, 1)
        assert await store.count(resource_id="r1") == 0
        assert [h.message_id for h in await store.search(axis(0), 5)] == ["b1"]
        await store.delete_resource("never-existed")
        assert await store.count(resource_id="r2") == 1

    async def test_vector_store_delete_resource_leaves_no_trace_in_a_raw_scan(
        self, store: BaseVectorStore, raw_scan: RawScan | None
    ) -> None:
        """R-ERASE at the store: no byte of the erased resource's id, thread
        ids or (lexical index) words stays in the backend."""
        if raw_scan is None:
            pytest.skip("the adapter provides no raw_scan (its backend keeps deleted bytes until compaction)")
        erased = ("ZZerasemeRID", "ZZerasemeT1", "ZZerasemeT2")
        words = "xylophonequark zebrawombat"
        await store.upsert(
            [
                point("e1", axis(0), erased[1], erased[0]),
                point("e2", axis(1, dim=16), erased[2], erased[0]),
                point("k1", axis(2), "keptT", "keptR"),
            ]
        )
        if store.lexical_index:
            await store.index_documents(
                [
                    LexicalDocument("e1", erased[1], erased[0], *document_terms(words)),
                    LexicalDocument("k1", "keptT", "keptR", *document_terms("kept words")),
                ]
            )
        assert erased[0].encode() in await raw_scan(store)  # the scan sees what the store holds
        await store.delete_resource(erased[0])
        blob = await raw_scan(store)
        assert [text for text in (*erased, *words.split()) if text.encode() in blob] == []
        assert await store.count(resource_id="keptR") == 1

    # ------------------------------------------------------------------ search

    async def test_vector_store_search_filters_by_thread_and_resource(self, store: BaseVectorStore) -> None:
        # C16's layout with explicit vectors: axis 0 means "apples".
        await store.upsert(
            [
                point("a1", unit(1.0, 0.1), "t1", "r1"),
                point("a2", unit(0.1, 1.0), "t1", "r1"),
                point("b1", unit(1.0, 0.3), "t2", "r1"),
                point("b2", unit(0.0, 0.2, 1.0), "t2", "r1"),
                point("c1", unit(1.0), "t3", "r2"),
            ]
        )
        query = axis(0)
        in_thread = await store.search(query, 4, thread_id="t1")
        assert [h.message_id for h in in_thread] == ["a1", "a2"]
        in_resource = await store.search(query, 4, resource_id="r1")
        assert [h.message_id for h in in_resource] == ["a1", "b1", "a2", "b2"]
        assert [h.message_id for h in await store.search(query, 4, resource_id="r2")] == ["c1"]
        assert await store.search(query, 4, thread_id="t4") == []
        assert await store.search(query, 4, thread_id="t3", resource_id="r1") == []
        everywhere = await store.search(query, 2)
        assert [h.message_id for h in everywhere] == ["c1", "a1"]
        assert [h.score for h in in_resource] == sorted((h.score for h in in_resource), reverse=True)

    async def test_vector_store_one_hit_per_message_with_its_best_chunk(
        self, vector_store_factory: VectorStoreFactory
    ) -> None:
        store = vector_store_factory(overfetch=1)  # forces the widening loop
        await store.open()
        try:
            # m-long has 40 chunks all closer to the query than any other message.
            chunks = [point("m-long", unit(1.0, 0.01 * (c + 1)), chunk=c) for c in range(40)]
            others = [point(f"m{i}", unit(1.0, 1.0 + i)) for i in range(5)]
            await store.upsert(chunks + others)
            hits = await store.search(axis(0), 3)
            assert [h.message_id for h in hits] == ["m-long", "m0", "m1"]
            assert hits[0].score == pytest.approx(float(unit(1.0, 0.01)[0]), abs=1e-5)
            all_hits = await store.search(axis(0), 10)
            assert [h.message_id for h in all_hits] == ["m-long", "m0", "m1", "m2", "m3", "m4"]
        finally:
            await store.destroy()

    async def test_vector_store_equal_similarity_ties_break_by_message_id(self, store: BaseVectorStore) -> None:
        """Messages exactly as similar to the query (here: permutations of
        one vector against a symmetric query), whose cosines a backend
        computes to different last bits, tie: the smaller message id first,
        also where the top k cuts a tie, with scores equal to the rounding
        of ``SCORE_DIGITS`` decimals (R-VEC: every backend the same hits)."""
        permutations = [(1.0, 2.0, 3.0), (3.0, 1.0, 2.0), (2.0, 3.0, 1.0), (3.0, 2.0, 1.0), (1.0, 3.0, 2.0)]
        ids = ["m4", "m0", "m3", "m2", "m1"]
        await store.upsert(
            [point(message_id, unit(*values)) for message_id, values in zip(ids, permutations, strict=True)]
        )
        await store.upsert([point("best", unit(1.0, 1.0, 1.0)), point("far", axis(5))])
        query = unit(1.0, 1.0, 1.0)
        hits = await store.search(query, top_k=4)
        assert [h.message_id for h in hits] == ["best", "m0", "m1", "m2"]
        tied = {round(h.score, SCORE_DIGITS) for h in hits[1:]}
        assert len(tied) == 1 and hits[1].score == pytest.approx(6 / float(np.sqrt(42)), abs=1e-5)
        assert [h.message_id for h in await store.search(query, top_k=7)][:6] == ["best", "m0", "m1", "m2", "m3", "m4"]

    async def test_vector_store_top_k_zero_and_missing_collection(self, store: BaseVectorStore) -> None:
        assert await store.search(axis(0), 5) == []  # no collection yet
        await store.upsert([point("m1", axis(0))])
        assert await store.search(axis(0), 0) == []
        assert await store.search(axis(0, dim=32), 5) == []  # no collection of that dimension

    # ------------------------------------------------------------------ namespaces and collections

    async def test_vector_store_namespaces_isolate_stores(self, vector_store_factory: VectorStoreFactory) -> None:
        first, second = vector_store_factory(), vector_store_factory()
        async with first, second:
            await first.upsert([point("m1", axis(0))])
            await second.upsert([point("m1", axis(1)), point("m2", axis(2))])
            assert await first.count() == 1
            assert await second.count() == 2
            await first.delete_thread("t1")
            assert await second.count() == 2
            assert [h.message_id for h in await first.search(axis(2), 5)] == []
            await first.destroy()
            assert await second.count() == 2
            assert [h.message_id for h in await second.search(axis(2), 1)] == ["m2"]
            await second.destroy()

    @pytest.mark.parametrize("length", [40, 48])
    async def test_vector_store_long_namespaces_are_refused_or_kept_whole(
        self, vector_store_factory: VectorStoreFactory, length: int
    ) -> None:
        """A namespace ``length`` characters long (48: the longest any store
        takes) is refused (a ValidationError naming ``namespace``, before any
        I/O) or kept whole: apart from one differing only in its last
        character, and its collections of two dimensions apart (no backend
        may cut names short silently: PostgreSQL truncates identifiers past
        63 bytes)."""
        stem = ("n" + uuid.uuid4().hex * 2)[: length - 1]
        try:
            first = vector_store_factory(namespace=stem + "a")
        except ValidationError as refused:
            assert "namespace" in str(refused)
            return
        second = vector_store_factory(namespace=stem + "b")
        await first.open()
        await second.open()
        try:
            await first.upsert([point("m1", axis(0)), point("m2", axis(0, dim=16))])
            assert await second.count() == 0, f"namespaces of {length} characters differing at the end share data"
            assert [h.message_id for h in await first.search(axis(0), 5)] == ["m1"]
            assert [h.message_id for h in await first.search(axis(0, dim=16), 5)] == ["m2"]
        finally:
            await first.destroy()
            await second.destroy()

    async def test_vector_store_destroy_removes_the_collections(self, vector_store_factory: VectorStoreFactory) -> None:
        store = vector_store_factory()
        namespace = store.namespace
        await store.open()
        await store.upsert([point("m1", axis(0)), point("m2", axis(0, dim=16))])
        await store.destroy()
        with pytest.raises(AdapterClosedError):
            await store.count()
        # A store built again on the same namespace (and location) finds nothing.
        again = vector_store_factory(namespace=namespace)
        async with again:
            assert await again.dimensions() == []
            assert await again.count() == 0
            await again.destroy()

    async def test_vector_store_collection_creation_is_idempotent_and_concurrent(
        self, vector_store_factory: VectorStoreFactory
    ) -> None:
        store = vector_store_factory()
        async with store:
            async with anyio.create_task_group() as group:
                for i in range(8):
                    group.start_soon(store.upsert, [point(f"m{i}", axis(i % DIM))])
            assert await store.count() == 8
            assert await store.dimensions() == [DIM]
            await store.destroy()

    async def test_vector_store_large_upsert_is_batched(self, vector_store_factory: VectorStoreFactory) -> None:
        rng = np.random.default_rng(3)
        store = vector_store_factory(batch_size=7)
        async with store:
            vectors = rng.standard_normal((50, DIM)).astype(np.float32)
            await store.upsert([point(f"m{i}", vectors[i], thread_id=f"t{i % 3}") for i in range(50)])
            assert await store.count() == 50
            assert await store.count(thread_id="t0") == 17
            await store.delete_messages([f"m{i}" for i in range(0, 50, 2)])
            assert await store.count() == 25
            await store.destroy()

    # ------------------------------------------------------------------ validation

    @pytest.mark.parametrize(
        "bad",
        [
            np.zeros(DIM, dtype=np.float32),
            np.array([np.nan] + [0.0] * (DIM - 1), dtype=np.float32),
            np.array([np.inf] + [0.0] * (DIM - 1), dtype=np.float32),
            np.ones((2, DIM), dtype=np.float32),
            np.array([], dtype=np.float32),
        ],
        ids=["zero", "nan", "inf", "2d", "empty"],
    )
    async def test_vector_store_bad_vectors_are_rejected_before_any_write(
        self, store: BaseVectorStore, bad: Vector
    ) -> None:
        with pytest.raises(ValidationError):
            await store.upsert([point("ok", axis(0)), point("bad", bad)])
        assert await store.count() == 0
        with pytest.raises(ValidationError):
            await store.search(bad, 3)

    @pytest.mark.parametrize(
        "fields",
        [
            {"message_id": ""},
            {"thread_id": "  "},
            {"resource_id": "a\x00b"},
            {"thread_id": "a\nb"},
            {"message_id": "\x1b[31m"},
            {"chunk": -1},
            {"created_at_us": 1.5},
        ],
    )
    async def test_vector_store_bad_points_are_rejected(self, store: BaseVectorStore, fields: dict[str, Any]) -> None:
        good: dict[str, Any] = {
            "message_id": "m1",
            "chunk": 0,
            "vector": axis(0),
            "thread_id": "t1",
            "resource_id": "r1",
            "created_at_us": 0,
        }
        with pytest.raises(ValidationError):
            await store.upsert([VectorPoint(**{**good, **fields})])
        assert await store.count() == 0

    async def test_vector_store_bad_arguments_are_rejected(self, store: BaseVectorStore) -> None:
        for top_k in (-1, True, 2.0):
            with pytest.raises(ValidationError, match="top_k"):
                await store.search(axis(0), top_k)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="thread_id"):
            await store.search(axis(0), 1, thread_id="")
        with pytest.raises(ValidationError, match="message_ids"):
            await store.delete_messages("m1")
        with pytest.raises(ValidationError):
            await store.delete_thread("")
        with pytest.raises(ValidationError):
            await store.delete_resource("")
        with pytest.raises(ValidationError):
            await store.count(resource_id=5)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            await store.count_points(thread_id="\x00")

    async def test_vector_store_integer_options_take_their_range_and_refuse_beyond_it(
        self, vector_store_factory: VectorStoreFactory, integer_option_ranges: dict[str, tuple[int, int]]
    ) -> None:
        """Each integer option the adapter declares (``integer_option_ranges``)
        builds a store at its lowest and highest value and refuses one step
        beyond either, and a bool, with a ValidationError naming it."""
        if not integer_option_ranges:
            pytest.skip("the test class declares no integer_option_ranges")
        for name, (low, high) in integer_option_ranges.items():
            for value in (low, high):
                vector_store_factory(**{name: value})
            for value in (low - 1, high + 1, True):
                with pytest.raises(ValidationError, match=name):
                    vector_store_factory(**{name: value})

    async def test_vector_store_each_variant_builds_the_indexes_it_names(
        self, vector_store_factory: VectorStoreFactory, index_kinds: IndexKinds | None
    ) -> None:
        """Each store variant the adapter declares (``index_kinds``) carries
        exactly the approximate indexes it names, whatever the dimension,
        also when its option values are strings built at run time (read
        from a config file: equal, not identical, to the adapter's own)."""
        if index_kinds is None:
            pytest.skip("the test class declares no index_kinds")
        variants, probe = index_kinds
        for name, (options, kinds) in variants.items():
            fresh = {key: "".join(list(value)) if isinstance(value, str) else value for key, value in options.items()}
            store = vector_store_factory(**fresh)
            await store.open()
            try:
                await store.upsert([point("m1", axis(0)), point("m2", axis(0, dim=16))])
                for dimension in (DIM, 16):
                    found = await probe(store, dimension)
                    assert found == kinds, f"variant {name!r}, dimension {dimension}: indexes {found}, want {kinds}"
            finally:
                await store.destroy()

    # ------------------------------------------------------------------ life cycle

    async def test_lifecycle_vector_store(self, vector_store_factory: VectorStoreFactory) -> None:
        store = vector_store_factory()
        await store.open()
        await store.open()
        await store.upsert([point("m1", axis(0))])
        await store.destroy()
        await store.close()  # idempotent
        assert store.closed
        with pytest.raises(AdapterClosedError):
            await store.upsert([point("m1", axis(0))])
        with pytest.raises(AdapterClosedError):
            await store.open()

    async def test_lifecycle_vector_store_preflight_reads_before_open_and_creates_nothing(
        self, vector_store_factory: VectorStoreFactory
    ) -> None:
        """``preflight`` before ``open`` (what ``prune --vector`` runs): a
        store a command writes into passes unchecked; ``must_exist`` refuses
        a namespace holding no vectors, field ``url``, naming the namespace
        as the URL gives it and not the adapter's class (the command line
        shows the reason to a user who typed a URL), and creates nothing
        there; a persistent store's namespace holding vectors passes, read
        by a store never opened (with lexical documents there too), which a
        writer's preflight also lets in once the first store is closed; while
        the first is open, a reader's ``must_exist`` finds its vectors or,
        on an engine that serves one open store per folder, refuses with
        the :class:`BackendError` opening would raise (never "holds no
        vectors")."""
        fresh = vector_store_factory()
        await fresh.preflight()
        with pytest.raises(ValidationError) as refused:
            await fresh.preflight(must_exist=True)
        assert refused.value.field == "url"
        assert fresh.namespace is None or repr(fresh.namespace) in refused.value.reason, refused.value
        assert type(fresh).__name__ not in refused.value.reason, refused.value
        assert not fresh.closed
        async with vector_store_factory(namespace=fresh.namespace) as same:
            assert await same.dimensions() == []  # the refused preflight made no collection
            await same.upsert([point("m1", axis(0))])
            if same.lexical_index:  # its collection is read too, and is no dimension's
                await same.index_documents([LexicalDocument("m1", "t1", "r1", *document_terms("preflight words"))])
            if same.persistent:  # a reader finds the vectors, or refuses as opening would (one open store per folder)
                try:
                    await vector_store_factory(namespace=fresh.namespace).preflight(must_exist=True)
                except BackendError as held:
                    assert "open" in str(held), held  # says the namespace is held open
            await same.preflight(must_exist=True)  # open: its own listing answers
        again = vector_store_factory(namespace=fresh.namespace)  # never opened; the writer above is closed
        if again.persistent:  # what it holds there (vectors, lexical documents) lets a writer in, and is found
            await again.preflight()
            await again.preflight(must_exist=True)
        await again.destroy()

    async def test_lifecycle_vector_store_preflight_passes_exactly_when_open_would(
        self, vector_store_factory: VectorStoreFactory
    ) -> None:
        """While one store of a namespace is open and holds vectors, a second
        store of that namespace (never opened) passes ``preflight`` (a
        writer's, ``must_exist`` a reader's) exactly when its ``open``
        succeeds: an engine serving one open store per folder refuses both
        with a :class:`BackendError` saying the folder is held open; a
        backend several stores share passes both. Before: the engine's
        preflight stopped checking the folder's locks and passed, and
        ``open`` refused after ``Memory.open`` had created the storage."""
        first = vector_store_factory()
        if not first.persistent:
            pytest.skip(f"{first!r} keeps nothing a second store could open")
        async with first:
            await first.upsert([point("m1", axis(0))])
            for must_exist in (False, True):
                second = vector_store_factory(namespace=first.namespace)
                try:
                    await second.preflight(must_exist=must_exist)
                except BackendError as refused:
                    assert "open" in str(refused), refused  # says the namespace is held open
                    with pytest.raises(BackendError):
                        await second.open()
                else:
                    try:
                        await second.open()
                    except BackendError as failed:
                        pytest.fail(f"preflight(must_exist={must_exist}) passed, then open refused: {failed!r}")
                    assert await second.count() == 1
                finally:
                    await second.close()
            await first.destroy()

    async def test_lifecycle_vector_store_preflight_is_not_held_by_other_namespaces(
        self, vector_store_factory: VectorStoreFactory
    ) -> None:
        """While stores of other namespaces are open in the same location and
        hold vectors and documents (one namespace sorting before this one,
        one after), a store of its own namespace is not refused as held
        open: its writer's ``preflight`` passes, its reader's
        (``must_exist``) says it holds no vectors (ValidationError, field
        ``url``), and it opens. Before: the engine took every shard whose
        name sorted after its own lexical index's for one of its own and
        refused, naming the folder held open."""
        stem = uuid.uuid4().hex[:12]
        others = [vector_store_factory(namespace=f"{first}{stem}") for first in ("0", "z")]
        try:
            for other in others:
                await other.open()
                await other.upsert([point("m1", axis(0))])
                if other.lexical_index:
                    await other.index_documents([LexicalDocument("m1", "t1", "r1", *document_terms("other words"))])
            mine = vector_store_factory(namespace=f"m{stem}")
            await mine.preflight()
            with pytest.raises(ValidationError) as refused:
                await mine.preflight(must_exist=True)
            assert refused.value.field == "url", refused.value
            async with mine:
                await mine.upsert([point("m2", axis(1))])
                assert await mine.count() == 1
                await mine.destroy()
        finally:
            for other in others:
                await other.destroy()

    async def test_lifecycle_vector_store_unreachable_server_is_a_retryable_typed_error(
        self, unreachable_vector_store: BaseVectorStore | None
    ) -> None:
        """A server that cannot be reached fails ``preflight`` (so
        ``Memory.open`` refuses it before the storage is created), ``open``
        and a first call, which opens, with :class:`BackendError` marked
        retryable (the next call tries again), never with the driver's own
        exception."""
        if unreachable_vector_store is None:
            pytest.skip("the store has no server to be unreachable (unreachable_vector_store is None)")
        store = unreachable_vector_store
        for attempt in (store.preflight, store.open, store.count):
            with pytest.raises(BackendError) as failed:
                await attempt()
            assert failed.value.retryable, f"an unreachable server is transient: {failed.value!r}"
        assert not store.closed
        await store.close()

    async def test_lifecycle_vector_store_opens_lazily(self, vector_store_factory: VectorStoreFactory) -> None:
        store = vector_store_factory()
        await store.upsert([point("m1", axis(0))])
        assert await store.count() == 1
        await store.destroy()

    async def test_lifecycle_vector_store_follows_each_new_event_loop(
        self, vector_store_factory: VectorStoreFactory
    ) -> None:
        """One store used from one ``asyncio.run`` after another (each loop
        closed after its call, as sync frameworks call async code), then
        closed from yet another loop: every call works, the close too."""
        store = vector_store_factory()

        async def in_new_loop(work: Awaitable[T]) -> T:
            return await asyncio.to_thread(asyncio.run, work)  # type: ignore[arg-type]

        await in_new_loop(store.upsert([point("m1", axis(0))]))  # opens in a loop that then closes
        await in_new_loop(store.upsert([point("m2", axis(1))]))
        await in_new_loop(store.delete_messages(["m1"]))
        assert await in_new_loop(store.count()) == 1
        assert [hit.message_id for hit in await store.search(axis(1), top_k=5)] == ["m2"]  # and in this loop
        await in_new_loop(store.close())
        assert store.closed
        await vector_store_factory(namespace=store.namespace).destroy()

    async def test_lifecycle_vector_store_each_event_loop_closes_what_it_made_in_it(
        self, vector_store_factory: VectorStoreFactory
    ) -> None:
        """Opened under one ``asyncio.run``, written under a second, counted
        under a third, destroyed under a fourth: each loop's connections are
        closed in that loop, not dropped with it (asyncpg's "unclosed
        connection" warnings when collected later)."""
        gc.collect()  # what earlier tests dropped is not this case's
        await _use_in_four_loops(vector_store_factory())  # then nothing references the store
        assert leaked_by_collection() == [], "a vector store left connections of ended event loops unclosed"
