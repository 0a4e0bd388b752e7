"""What ``Memory(...)`` and ``Memory.open(...)`` accept (issue 27, issue 26):
every wrong kind of argument is a ValidationError naming it and the fix,
before any I/O; the one-line setup owns its stores and round-trips a
conversation through a restart; a persistent storage is never silently
paired with in-memory vectors; a vector store turns semantic recall on unless
the config sets it."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

import memory_core
from memory_core import AdapterClosedError, InMemoryVectorStore, Memory, MemoryConfig, SemanticRecall, ValidationError
from memory_core.arguments import check_memory
from memory_core.embedders import LexicalHashEmbedder, default_embedder
from memory_core.storage import Storage
from memory_core.vector import VectorStore

pytestmark = pytest.mark.anyio

HAS_SQLITE = memory_core.registry.known_schemes().get("sqlite") is not None
HAS_QDRANT = "qdrant" in memory_core.registry.known_schemes(memory_core.registry.VECTOR_GROUP)


def _file_url(kind: str, folder: Path) -> str:
    """A URL of a store in ``folder``: four slashes before an absolute path."""
    return f"{kind}:///{folder}"


STORAGE_URLS: dict[str, Callable[[Path], str]] = {
    "memory": lambda tmp: "memory://",
    "sqlite-file": lambda tmp: _file_url("sqlite", tmp / "app.db"),
}
"""Storage backends the refusals run on (add a backend's URL here)."""


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio."""
    return "asyncio"


@pytest.fixture(params=sorted(STORAGE_URLS))
def storage_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh store on each backend of STORAGE_URLS."""
    if request.param.startswith("sqlite") and not HAS_SQLITE:
        pytest.skip("memory-core-sqlite is not installed")
    return STORAGE_URLS[request.param](tmp_path)


@pytest.fixture
async def seeded(storage_url: str) -> AsyncIterator[Storage]:
    """An opened store holding one thread with one message."""
    storage = await memory_core.connect(storage_url)
    await storage.save_thread({"id": "t1", "resource_id": "r1"})
    await storage.save_messages([{"id": "m1", "thread_id": "t1", "role": "user", "content": "hello"}])
    try:
        yield storage
    finally:
        await storage.close()


async def _snapshot(storage: Storage) -> tuple[Any, ...]:
    threads = await storage.list_threads(per_page=False)
    messages = await storage.list_messages([t.id for t in threads.items], per_page=False) if threads.items else None
    return tuple(threads.items), tuple(messages.items if messages else ())


def _wrong(storage: Storage, vectors: VectorStore) -> dict[str, Callable[[], Any]]:
    """Each wrong kind of argument, as a call building a Memory."""
    return {
        "storage-url": lambda: Memory("sqlite:///app.db"),  # type: ignore[arg-type]
        "storage-none": lambda: Memory(None),  # type: ignore[arg-type]
        "storage-is-vectors": lambda: Memory(vectors, vectors),  # type: ignore[arg-type]
        "vector-url": lambda: Memory(storage, "qdrant::memory:"),  # type: ignore[arg-type]
        "vector-is-storage": lambda: Memory(storage, storage),  # type: ignore[arg-type]
        "vector-is-embedder": lambda: Memory(storage, LexicalHashEmbedder()),  # type: ignore[arg-type]
        "embedder-name": lambda: Memory(storage, vectors, embedder="lexical"),  # type: ignore[arg-type]
        "embedder-int": lambda: Memory(storage, vectors, embedder=1),  # type: ignore[arg-type]
        "embedder-function": lambda: Memory(storage, vectors, embedder=lambda texts: texts),  # type: ignore[arg-type]
        "allow-not-bool": lambda: Memory(storage, vectors, allow_volatile_vectors="yes"),  # type: ignore[arg-type]
    }


WRONG = {
    "storage-url": ("storage", "Memory.open("),
    "storage-none": ("storage", "memory_core.connect(url)"),
    "storage-is-vectors": ("storage", "a vector store (InMemoryVectorStore)"),
    "vector-url": ("vector", "Memory.open("),
    "vector-is-storage": ("vector", "a storage ("),
    "vector-is-embedder": ("vector", "pass the embedder as embedder="),
    "embedder-name": ("embedder", "get_embedder('lexical')"),
    "embedder-int": ("embedder", "get_embedder(name)"),
    "embedder-function": ("embedder", "CallableEmbedder"),
    "allow-not-bool": ("allow_volatile_vectors", "must be a bool"),
}


@pytest.mark.parametrize("case", sorted(WRONG))
async def test_each_wrong_argument_is_refused_before_any_io(seeded: Storage, case: str) -> None:
    vectors = InMemoryVectorStore()
    before = await _snapshot(seeded)
    with pytest.raises(ValidationError) as caught:
        _wrong(seeded, vectors)[case]()
    field, fix = WRONG[case]
    assert caught.value.field == field and fix in caught.value.reason, caught.value
    assert await _snapshot(seeded) == before
    assert await vectors.count() == 0


async def test_the_issue_calls_fail_at_construction_not_after_a_write(seeded: Storage) -> None:
    """Before: accepted, then the first append stored the message and failed
    with AttributeError, the vector index never getting it."""
    for embedder in ("lexical", 1):
        with pytest.raises(ValidationError, match="use get_embedder"):
            Memory(seeded, InMemoryVectorStore(), config=MemoryConfig(), embedder=embedder)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"storage: must be a storage, got the str 'sqlite:///app.db'"):
        Memory("sqlite:///app.db")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"vector: must be a vector store or None, got the str 'qdrant::memory:'"):
        Memory(seeded, "qdrant::memory:")  # type: ignore[arg-type]


async def test_a_persistent_storage_with_in_memory_vectors_is_refused_unless_allowed(
    seeded: Storage, storage_url: str
) -> None:
    persistent = not storage_url.startswith("memory:")
    if persistent:
        with pytest.raises(ValidationError) as caught:
            Memory(seeded, InMemoryVectorStore(), owns_stores=False)
        assert caught.value.field == "vector"
        assert "allow_volatile_vectors=True" in caught.value.reason and "SQLiteStorage" in caught.value.reason
    else:
        Memory(seeded, InMemoryVectorStore(), owns_stores=False)  # nothing outlives the process: fine
    memory = Memory(seeded, InMemoryVectorStore(), owns_stores=False, allow_volatile_vectors=True)
    assert memory.vector is not None
    persistent_vectors = InMemoryVectorStore()
    persistent_vectors.persistent = True  # what a store on disk or on a server says
    if persistent:
        Memory(seeded, persistent_vectors, owns_stores=False)
    else:  # the reverse (issue 26): the messages go, their vectors would stay and pile up
        with pytest.raises(ValidationError) as caught:
            Memory(seeded, persistent_vectors, owns_stores=False)
        assert caught.value.field == "vector", caught.value
        assert "allow_volatile_vectors=True" in caught.value.reason and "sqlite:///" in caught.value.reason
    Memory(seeded, persistent_vectors, owns_stores=False, allow_volatile_vectors=True)


async def test_a_vector_store_without_a_config_turns_semantic_recall_on() -> None:
    storage = await memory_core.connect("memory://")
    async with Memory(storage, InMemoryVectorStore(), LexicalHashEmbedder()) as memory:
        assert memory.config.semantic() is not None
        thread, _ = await memory.get_or_create_thread("r1", "t1")
        await memory.append_messages(thread.id, [("user", "I fly to Lisbon in April"), ("assistant", "noted")])
        result = await memory.recall(thread.id, "r1", vector_search_string="Lisbon flight")
        assert result.semantic_hits
    assert Memory(await memory_core.connect("memory://")).config.semantic() is None
    config = MemoryConfig(last_messages=5, semantic_recall=False)
    assert Memory(await memory_core.connect("memory://"), InMemoryVectorStore(), config=config).config is config


@pytest.mark.parametrize(
    "config",
    [{"working_memory": {"enabled": True}}, {"last_messages": 5}, MemoryConfig(last_messages=5), {}],
    ids=["working-memory-mapping", "mapping", "MemoryConfig", "empty"],
)
async def test_a_config_that_leaves_semantic_recall_unset_keeps_the_vector_stores_default(config: Any) -> None:
    """Enabling working memory (or any field) does not turn recall off by
    accident: unset, semantic recall follows the vector store (was off for
    any config given); set, it is kept (off or on)."""
    with_vectors = Memory(await memory_core.connect("memory://"), InMemoryVectorStore(), config=config)
    assert with_vectors.config.semantic() == SemanticRecall()
    assert Memory(await memory_core.connect("memory://"), config=config).config.semantic() is None
    kept = {"semantic_recall": False, "working_memory": {"enabled": True}}
    assert Memory(await memory_core.connect("memory://"), InMemoryVectorStore(), config=kept).config.semantic() is None
    on = {"semantic_recall": {"top_k": 2}}
    assert Memory(await memory_core.connect("memory://"), InMemoryVectorStore(), config=on).config.semantic() == (
        SemanticRecall(top_k=2)
    )


async def test_the_default_embedder_is_the_same_everywhere(tmp_path: Path) -> None:
    storage = await memory_core.connect("memory://")
    default = type(default_embedder())
    assert type(Memory(storage, InMemoryVectorStore()).embedder) is default
    async with await Memory.open("memory://", vector="memory://") as memory:
        assert type(memory.embedder) is default


def test_the_seams_refuse_what_is_not_a_memory() -> None:
    with pytest.raises(ValidationError) as caught:
        check_memory("sqlite:///app.db")
    assert caught.value.field == "memory" and "Memory.open('sqlite:///app.db'" in caught.value.reason
    with pytest.raises(ValidationError, match="wrap the store: Memory"):
        check_memory(memory_core.InMemoryStorage())
    with pytest.raises(ValidationError) as caught:
        check_memory(Memory(memory_core.InMemoryStorage()), needs_vectors=True)
    assert caught.value.field == "memory.vector"


# ------------------------------------------------------------------ Memory.open


async def test_open_refuses_before_any_io(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    url = _file_url("sqlite", db)
    refusals: list[tuple[dict[str, Any], str, str]] = [
        ({"vector": "qdrant::memory:"}, "vector", "allow_volatile_vectors=True"),
        ({"vector": "memory://"}, "vector", "allow_volatile_vectors=True"),
        ({"vector": InMemoryVectorStore()}, "vector", "Memory.open takes a URL"),
        ({"vector": "memory://", "embedder": "bogus"}, "embedder", "unknown embedder 'bogus'"),
        ({"vector": "memory://", "embedder": 3, "allow_volatile_vectors": True}, "embedder", "get_embedder"),
        ({"embedder": "lexical"}, "embedder", "without a vector store"),
        ({"vector": "nope://x"}, "vector", "unknown vector store scheme 'nope'"),
        ({"vector": "memory://", "vector_options": {"bogus": 1}}, "vector option 'bogus'", "not accepted"),
    ]
    for options, field, reason in refusals:
        with pytest.raises(ValidationError) as caught:
            await Memory.open(url, **options)
        assert caught.value.field == field and reason in caught.value.reason, (options, caught.value)
    with pytest.raises(ValidationError) as caught:
        await Memory.open(memory_core.InMemoryStorage())  # type: ignore[arg-type]
    assert caught.value.field == "storage" and "Memory(storage, vector" in caught.value.reason
    with pytest.raises(ValidationError) as caught:
        await Memory.open("bogus://x")
    assert caught.value.field == "storage"
    assert os.listdir(tmp_path) == []  # no database file was created


@pytest.mark.skipif(not (HAS_SQLITE and HAS_QDRANT), reason="memory-core-sqlite and memory-core-qdrant are needed")
async def test_open_round_trips_a_conversation_through_a_restart(tmp_path: Path) -> None:
    db, vectors = _file_url("sqlite", tmp_path / "app.db"), _file_url("qdrant+path", tmp_path / "vectors")
    assert vectors.startswith("qdrant+path:////")  # absolute: four slashes
    async with await Memory.open(db, vector=vectors, embedder="lexical") as memory:
        thread, _ = await memory.get_or_create_thread("user-1", "trip")
        await memory.append_messages(thread.id, [("user", "I fly to Lisbon in April"), ("assistant", "Noted!")])
        storage = memory.storage
    with pytest.raises(AdapterClosedError):  # Memory.open's stores are closed with it
        await storage.get_thread("trip")

    memory = await Memory.open(db, vector=vectors, embedder="lexical")  # a restart
    try:
        result = await memory.recall("trip", "user-1", vector_search_string="when is the Lisbon trip?", per_page=0)
        texts = {m.id: m.content for m in result.messages}
        assert texts[result.semantic_hits[0]] == "I fly to Lisbon in April" and not result.warnings
        status = await memory.check_index(resource_id="user-1")
        assert not status.behind
    finally:
        await memory.close()


async def test_open_preflights_the_stores_and_still_creates_folders_when_asked(tmp_path: Path) -> None:
    """``Memory.open`` preflights each store before opening either; a SQLite
    URL with ``create_dirs=true`` still has its folders made by ``open``,
    while a missing folder without it is refused before anything is made."""
    with pytest.raises(ValidationError, match="does not exist"):
        await Memory.open(f"sqlite:///{tmp_path}/no/such/m.db")
    assert not (tmp_path / "no").exists()
    async with await Memory.open(f"sqlite:///{tmp_path}/deep/er/m.db?create_dirs=true") as memory:
        await memory.create_thread("r1", thread_id="t1")
    assert (tmp_path / "deep" / "er" / "m.db").exists()


@pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)
async def test_a_missing_folder_is_named_by_the_argument_that_gave_it(tmp_path: Path) -> None:
    """Before: field ``url`` for both, though ``Memory.open`` has no
    ``url`` argument and the folder was the vector URL's."""
    with pytest.raises(ValidationError, match="does not exist") as caught:
        await Memory.open(
            f"sqlite:///{tmp_path / 'agent.db'}", vector=f"qdrant+path:///{tmp_path / 'no' / 'v'}", embedder="lexical"
        )
    assert caught.value.field == "vector"
    with pytest.raises(ValidationError, match="does not exist") as caught:
        await Memory.open(f"sqlite:///{tmp_path / 'no' / 'agent.db'}", vector=f"qdrant+path:///{tmp_path / 'v'}")
    assert caught.value.field == "storage"
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)
async def test_an_unreachable_qdrant_server_is_named_by_its_address(tmp_path: Path) -> None:
    """Before: ``qdrant preflight failed: ResponseHandlingException: All
    connection attempts failed``: which server, the message did not say
    (Redis's names it: ``Error 111 connecting to 127.0.0.1:6390``)."""
    from memory_core import BackendError

    with pytest.raises(BackendError) as caught:
        await Memory.open(f"sqlite:///{tmp_path / 'a.db'}", vector="qdrant://127.0.0.1:1/", embedder="lexical")
    assert "127.0.0.1:1" in str(caught.value), caught.value
