"""The first-week friction of issue 26 (F2, F4, F6, F7): what a new user
trips over in the first hour is either accepted as meant or refused with the
field, the rule and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

import memory_core
from memory_core import InMemoryVectorStore, Memory, MemoryConfig, OwnershipError, ValidationError

pytestmark = pytest.mark.anyio

HAS_SQLITE = memory_core.registry.known_schemes().get("sqlite") is not None
HAS_QDRANT = "qdrant" in memory_core.registry.known_schemes(memory_core.registry.VECTOR_GROUP)
needs_sqlite = pytest.mark.skipif(not HAS_SQLITE, reason="memory-core-sqlite is not installed")
needs_qdrant = pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


# ---------------------------------------------------------------- F6: config as a mapping


async def test_a_config_mapping_is_checked_into_a_memory_config() -> None:
    """Before: ``config={...}`` was refused ("must be a MemoryConfig")."""
    memory = Memory(
        memory_core.reference.InMemoryStorage(),
        InMemoryVectorStore(),
        config={"lastMessages": 3, "semantic_recall": {"top_k": 2}},
    )
    assert memory.config == MemoryConfig(last_messages=3, semantic_recall={"top_k": 2})  # type: ignore[arg-type]
    opened = await Memory.open("memory://", config={"last_messages": 7})
    async with opened:
        assert opened.config.last_messages == 7


async def test_a_misspelt_config_key_names_the_field_meant() -> None:
    storage = memory_core.reference.InMemoryStorage()
    with pytest.raises(ValidationError) as caught:
        Memory(storage, config={"last_mesages": 3})
    assert caught.value.field == "config.last_mesages"
    assert "did you mean 'last_messages'?" in caught.value.reason, caught.value
    with pytest.raises(ValidationError) as caught:
        Memory(storage, config={"semantic_recall": {"topk": 3}}, vector=InMemoryVectorStore())
    assert caught.value.field == "config.semantic_recall.topk" and "'top_k'" in caught.value.reason, caught.value
    with pytest.raises(ValidationError, match=r"config\.lastMessage: .*did you mean 'last_messages'"):
        await Memory.open("memory://", config={"lastMessage": 3})
    with pytest.raises(ValidationError, match=r"^config: expected MemoryConfig or a mapping, got int"):
        Memory(storage, config=3)  # type: ignore[arg-type]


# ---------------------------------------------------------------- F4: one answer to the wrong owner


async def test_list_messages_and_recall_refuse_another_resources_thread_alike() -> None:
    """Before: ``list_messages`` answered an empty page where ``recall`` raised."""
    async with Memory(memory_core.reference.InMemoryStorage()) as memory:
        await memory.create_thread("alice", thread_id="t1")
        await memory.save_messages([{"thread_id": "t1", "role": "user", "content": "hi"}])
        for read in (
            memory.recall(thread_id="t1", resource_id="bob"),
            memory.list_messages("t1", resource_id="bob"),
            memory.storage.list_messages(["t1"], resource_id="bob", per_page=False),
        ):
            with pytest.raises(OwnershipError, match="'t1' does not belong to resource 'bob'"):
                await read
        assert len((await memory.list_messages("t1", resource_id="alice")).items) == 1


# ---------------------------------------------------------------- F7: a missing folder is refused


@needs_sqlite
@needs_qdrant
async def test_a_missing_folder_is_refused_unless_create_dirs(tmp_path: Path) -> None:
    """Before: ``open`` made ``typo/`` and a new, empty store in it. The
    error names the argument that gave the URL (``storage``, ``vector``)."""
    missing = tmp_path / "typo" / "deeper"
    with pytest.raises(ValidationError) as caught:
        await Memory.open(f"sqlite:///{missing}/memory.db")
    assert caught.value.field == "storage" and str(missing) in caught.value.reason, caught.value
    assert "create_dirs=True" in caught.value.reason and "mkdir -p" in caught.value.reason
    with pytest.raises(ValidationError, match=r"vector: folder .*typo.* does not exist.*create_dirs"):
        await Memory.open(f"sqlite:///{tmp_path}/memory.db", vector=f"qdrant+path:///{missing}/vectors")
    assert not (tmp_path / "typo").exists()
    assert not (tmp_path / "memory.db").exists()  # refused before the storage was created (trial 3)
    memory = await Memory.open(
        f"sqlite:///{missing}/memory.db?create_dirs=true",
        vector=f"qdrant+path:///{missing}/vectors",
        vector_options={"create_dirs": True},
        embedder="lexical",
    )
    async with memory:
        await memory.create_thread("r1", thread_id="t1")
    assert {"memory.db", "vectors"} <= {p.name for p in missing.iterdir()}


HAS_POSTGRES = "postgresql" in memory_core.registry.known_schemes(memory_core.registry.VECTOR_GROUP)


@needs_sqlite
@needs_qdrant
async def test_a_vector_store_that_cannot_be_opened_is_refused_before_the_storage_is_made(tmp_path: Path) -> None:
    """Before: a Qdrant server that does not answer, or a vectors folder
    another store holds open, was found by the vector store's ``open``,
    after the storage's had made ``memory.db`` and its schema."""
    held = f"qdrant+path:///{tmp_path}/held"
    unreachable = ["qdrant://127.0.0.1:1", "qdrant+http://127.0.0.1:1/prefix", held]
    if HAS_POSTGRES:
        unreachable.append("postgresql://postgres@127.0.0.1:1/test")
    async with await Memory.open(f"sqlite:///{tmp_path}/first.db", vector=held, embedder="lexical") as first:
        await first.create_thread("r1", thread_id="t1")
        for vector in unreachable:
            with pytest.raises(memory_core.BackendError) as caught:
                await Memory.open(f"sqlite:///{tmp_path}/memory.db", vector=vector, embedder="lexical")
            assert caught.value.operation == "preflight", (vector, caught.value)
            if vector == held:
                assert "open in another process or store" in str(caught.value), caught.value
            assert not (tmp_path / "memory.db").exists(), vector
        from memory_core_qdrant import QdrantEdgeStore

        with pytest.raises(memory_core.BackendError, match="open in another process or store"):
            await QdrantEdgeStore.from_url(held).preflight()
        assert isinstance(first.vector, QdrantEdgeStore)
        await first.vector.preflight()  # the store holding the folder is not refused by its own lock
    async with await Memory.open(f"sqlite:///{tmp_path}/memory.db", vector=held, embedder="lexical") as memory:
        assert await memory.get_thread("t1") is None  # once closed, the folder opens


@needs_sqlite
@needs_qdrant
async def test_an_in_memory_storage_with_persistent_vectors_is_refused_unless_allowed(tmp_path: Path) -> None:
    """Before: accepted, so each run added vectors of messages the storage
    had forgotten (the reverse of a file with ``qdrant::memory:``)."""
    vectors = f"qdrant+path:///{tmp_path}/vectors"
    for storage in ("memory://", "sqlite://:memory:"):
        with pytest.raises(ValidationError) as caught:
            await Memory.open(storage, vector=vectors, embedder="lexical")
        assert caught.value.field == "vector", caught.value
        for named in ("QdrantEdgeStore keeps its vectors", "sqlite:///file.db", "qdrant::memory:", "allow_volatile"):
            assert named in caught.value.reason, caught.value
    assert not (tmp_path / "vectors").exists()  # refused before any I/O
    for run in range(2):  # what the opt-in accepts: the index keeps the first run's vectors
        async with await Memory.open(
            "memory://", vector=vectors, embedder="lexical", allow_volatile_vectors=True
        ) as memory:
            thread, _ = await memory.get_or_create_thread("r1", "t1")
            await memory.append_messages(thread.id, [("user", "my cat is called Miso")])
            assert (await memory.check_index(resource_id="r1")).orphaned == run


@needs_sqlite
@needs_qdrant
async def test_the_cli_refuses_a_missing_folder_for_the_vectors_it_writes(tmp_path: Path) -> None:
    """``copy --vector`` into a misspelt folder: one error line, nothing made."""
    from tests.cli_run import cli

    async with Memory(await memory_core.connect(f"sqlite:///{tmp_path}/source.db")) as source:
        await source.create_thread("r1", thread_id="t1")
    done = cli(
        "copy",
        f"sqlite:///{tmp_path}/source.db",
        f"sqlite:///{tmp_path}/copy.db",
        "--vector",
        f"qdrant+path:///{tmp_path}/typo/vectors",
        "--embedder",
        "lexical",
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "typo" in done.stderr and "create_dirs" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "typo").exists()


# ---------------------------------------------------------------- F2: an embedder of another dimension


async def test_an_index_built_by_another_embedder_is_reported() -> None:
    """Before: check_index said "not behind" (it counted every dimension) and
    recall warned of an empty index with the wrong repair."""
    from memory_core.embedders import LexicalHashEmbedder

    storage, vectors = memory_core.reference.InMemoryStorage(), InMemoryVectorStore()
    built = Memory(storage, vectors, LexicalHashEmbedder(dimension=384), owns_stores=False)
    await built.create_thread("r1", thread_id="t1")
    await built.save_messages([{"thread_id": "t1", "role": "user", "content": "my cat is called Miso"}])
    switched = Memory(storage, vectors, LexicalHashEmbedder(), owns_stores=False)  # 1024 dimensions
    with pytest.raises(ValidationError) as caught:
        await switched.check_index(resource_id="r1")
    assert caught.value.field == "embedder", caught.value
    for named in ("384-dimension (embedder='minilm'?)", "'lexical-hash-1024' (1024 dimensions)", "reindex"):
        assert named in caught.value.reason, caught.value
    recalled = await switched.recall(thread_id="t1", resource_id="r1", vector_search_string="cat")
    assert len(recalled.warnings) == 1 and "384-dimension" in recalled.warnings[0], recalled.warnings
    await switched.reindex(resource_id="r1")  # the fix the message names
    assert not (await switched.check_index(resource_id="r1")).behind
    assert not (await switched.recall(thread_id="t1", resource_id="r1", vector_search_string="cat")).warnings


@needs_sqlite
@needs_qdrant
async def test_the_cli_refuses_to_re_embed_into_an_index_of_another_dimension(tmp_path: Path) -> None:
    """``copy --vector`` with an embedder of another dimension than the
    index holds: before, a second dimension's vectors beside the first."""
    from memory_core.embedders import LexicalHashEmbedder
    from tests.cli_run import cli

    vectors = f"qdrant+path:///{tmp_path}/vectors"
    source = f"sqlite:///{tmp_path}/source.db"
    async with await Memory.open(source, vector=vectors, embedder=LexicalHashEmbedder(dimension=384)) as memory:
        await memory.create_thread("r1", thread_id="t1")
        await memory.save_messages([{"thread_id": "t1", "role": "user", "content": "hello"}])
    done = cli("copy", source, f"sqlite:///{tmp_path}/copy.db", "--vector", vectors, "--embedder", "lexical")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "384-dimension" in done.stderr and "lexical-hash-1024" in done.stderr, done.stderr
    assert not (tmp_path / "copy.db").exists()  # refused before the destination was opened
