"""The arguments of :class:`~memory_core.Memory` and of its calls, and the
objects handed to the agent framework seams, checked before any I/O.

Constructors: :func:`check_storage`, :func:`check_vector_store`,
:func:`check_embedder`, :func:`check_config`, :func:`check_urls`. Calls (the
checks of Memory's own arguments, each run once per call; the values inside,
ids, messages, filters, and the whole of a recall, are :mod:`memory_core.validation`'s):
:func:`check_turns`, :func:`check_message_list`,
:func:`check_one_scope`, :func:`check_metadata_arg`.

``Memory(storage, vector, embedder)`` takes objects; a URL or an embedder
name in their place would otherwise be accepted and fail at the first call,
possibly after the storage write and before the vector write. Each check here
raises a :class:`~memory_core.errors.ValidationError` naming the argument,
what it got and the fix (``Memory.open(url, ...)`` for URLs,
``get_embedder(name)`` for names).

It is also the one home of the persistence rules: a vector store written to
by a transfer or a prune must outlive the process (:func:`check_persistent`),
and a persistent storage is paired with a persistent vector store unless the
caller says otherwise (:func:`check_pairing`).
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast, get_args

from memory_core.capabilities import Capability, declared_capabilities
from memory_core.config import MemoryConfig
from memory_core.embedders import Embedder
from memory_core.errors import NotAListError, ValidationError
from memory_core.models import Message, Role
from memory_core.options import hide_password
from memory_core.storage import Storage
from memory_core.validation import (
    check_id,
    check_json_object,
    check_list,
    coerce_model,
)
from memory_core.vector import VectorStore

if TYPE_CHECKING:
    from memory_core.memory import Memory

__all__ = [
    "check_turns",
    "check_metadata_arg",
    "check_one_scope",
    "check_message_list",
    "check_config",
    "check_embedder",
    "check_memory",
    "check_pairing",
    "check_persistent",
    "check_storage",
    "check_urls",
    "check_vector_store",
    "persistent_storage",
]


def _got(value: Any) -> str:
    """What a wrong argument is, for the message: a short repr of a str, else
    its kind (a storage, a vector store, an embedder) or its type."""
    if isinstance(value, str):
        value = hide_password(value)
        shown = value if len(value) <= 80 else value[:77] + "..."
        return f"the str {shown!r}"
    if isinstance(value, VectorStore):
        return f"a vector store ({type(value).__name__})"
    if isinstance(value, Storage):
        return f"a storage ({type(value).__name__})"
    if isinstance(value, Embedder):
        return f"an embedder ({type(value).__name__})"
    return f"{type(value).__name__} {value!r}"[:120]


def check_storage(value: Any, field: str = "storage") -> Storage:
    """``value`` if it is a storage object (:class:`~memory_core.storage.Storage`).

    Args:
        value: what was passed as the storage.
        field: the argument's name in the error.

    Returns:
        ``value``, unchanged.

    Raises:
        ValidationError: anything else: a URL (the fix: ``Memory.open(url)``
            or ``await memory_core.connect(url)``), a vector store, None.
    """
    if isinstance(value, Storage):
        return value
    if isinstance(value, str):
        fix = (
            f"pass a URL to Memory.open(...): memory = await Memory.open({hide_password(value)!r}), "
            "or open it with memory_core.connect(url)"
        )
    else:
        fix = "pass a storage object (await memory_core.connect(url)), or a URL to Memory.open(...)"
    raise ValidationError(field, f"must be a storage, got {_got(value)}; {fix}")


def check_vector_store(value: Any, field: str = "vector") -> VectorStore | None:
    """``value`` if it is None or a vector store object
    (:class:`~memory_core.vector.VectorStore`).

    Args:
        value: what was passed as the vector store.
        field: the argument's name in the error.

    Returns:
        ``value``, unchanged.

    Raises:
        ValidationError: anything else: a URL (the fix:
            ``Memory.open(..., vector=url)`` or ``await
            memory_core.connect_vector(url)``), a storage, an embedder.
    """
    if value is None or isinstance(value, VectorStore):
        return value
    if isinstance(value, str):
        fix = (
            f"pass a URL to Memory.open(...): Memory.open(storage_url, vector={value!r}), "
            "or open it with memory_core.connect_vector(url)"
        )
    elif isinstance(value, Embedder):
        fix = "pass the embedder as embedder=, after the vector store"
    else:
        fix = "pass a vector store object (await memory_core.connect_vector(url)), or a URL to Memory.open(...)"
    raise ValidationError(field, f"must be a vector store or None, got {_got(value)}; {fix}")


def check_embedder(value: Any, field: str = "embedder") -> Embedder | None:
    """``value`` if it is None or an embedder object
    (:class:`~memory_core.embedders.Embedder`: ``name``, ``dimension``,
    ``max_input_chars`` and an async ``embed``).

    Args:
        value: what was passed as the embedder.
        field: the argument's name in the error.

    Returns:
        ``value``, unchanged.

    Raises:
        ValidationError: anything else: a name (the fix: ``get_embedder(name)``
            or ``Memory.open(..., embedder=name)``), a number, a function
            (wrap it in ``CallableEmbedder``).
    """
    if value is None or isinstance(value, Embedder):
        return value
    if isinstance(value, str):
        fix = (
            f"use get_embedder({value!r}) (memory_core.embedders), "
            f"or pass the name to Memory.open(..., embedder={value!r})"
        )
    elif callable(value):
        fix = "wrap a function in memory_core.embedders.CallableEmbedder(function, dimension)"
    else:
        fix = "use get_embedder(name) (memory_core.embedders: 'minilm', 'lexical'), or leave it out for the default"
    raise ValidationError(field, f"must be an Embedder or None, got {_got(value)}; {fix}")


def check_memory(value: Any, field: str = "memory", *, needs_vectors: bool = False) -> Memory:
    """``value`` if it is a :class:`~memory_core.Memory` (what every agent
    framework seam is built on).

    Args:
        value: what was passed as the memory.
        field: the argument's name in the error.
        needs_vectors: the caller recalls semantically, so the Memory must
            have a vector store.

    Returns:
        ``value``, unchanged.

    Raises:
        ValidationError: not a Memory (a URL: ``await Memory.open(url)``; a
            storage: ``Memory(storage, vector)``), or with ``needs_vectors`` a
            Memory without a vector store (field ``<field>.vector``).
    """
    from memory_core.memory import Memory

    if not isinstance(value, Memory):
        if isinstance(value, str):
            fix = f"pass a URL to Memory.open(...): memory = await Memory.open({hide_password(value)!r}, vector=...)"
        elif isinstance(value, Storage):
            fix = "wrap the store: Memory(storage, vector)"
        else:
            fix = "build one with await Memory.open(url, vector=...) or Memory(storage, vector)"
        raise ValidationError(field, f"must be a memory_core.Memory, got {_got(value)}; {fix}")
    if needs_vectors and value.vector is None:
        raise ValidationError(
            f"{field}.vector",
            "semantic recall needs a vector store: Memory(storage, vector) or Memory.open(url, vector=url)",
        )
    return value


def persistent_storage(storage: Storage) -> bool:
    """Whether ``storage`` declares :attr:`Capability.PERSISTENT
    <memory_core.capabilities.Capability.PERSISTENT>` (a file or a server;
    not ``memory://`` nor an in-memory SQLite database). A storage that
    declares no capabilities counts as not persistent."""
    return Capability.PERSISTENT in declared_capabilities(storage)


def check_persistent(vectors: VectorStore, field: str = "vector", *, fix: str = "or leave it out") -> None:
    """Refuse a vector store whose points would not outlive it (no I/O).

    Args:
        vectors: the store a command, transfer or Memory would write points
            into (re-embedding, pruning, a persistent storage's index).
        field: the name given in the error (``"--vector"`` on the command line).
        fix: the end of the advice, after "give a persistent vector store
            (...)".

    Raises:
        ValidationError: ``vectors.persistent`` is False.
    """
    if not vectors.persistent:
        raise ValidationError(
            field,
            "the vector store keeps its vectors in memory: they would be gone when this process exits; "
            f"give a persistent vector store (qdrant+path:///dir, a server, pgvector) {fix}",
        )


def check_pairing(storage: Storage, vector: VectorStore | None, *, allow_volatile_vectors: bool = False) -> None:
    """Refuse a storage and a vector store of which one forgets on a restart
    and the other does not (no I/O), in either direction:

    - a persistent storage with in-memory vectors (a SQLite file with
      ``qdrant::memory:`` or ``memory://`` vectors): after a restart the
      messages are there and the index is empty, so semantic recall finds
      nothing until :meth:`memory_core.Memory.reindex`;
    - an in-memory storage (``memory://``, ``sqlite://:memory:``) with
      persistent vectors (``qdrant+path:///dir``, a server, pgvector): after
      a restart the messages are gone and their vectors stay, so every run
      adds vectors of messages no store holds (an index that only grows,
      hits the storage cannot resolve, ``check_index`` counting orphans).

    Args:
        storage: the storage (see :func:`persistent_storage`).
        vector: the vector store (its ``persistent``), or None (nothing to check).
        allow_volatile_vectors: accept either pairing anyway (tests, demos,
            a vector namespace removed after the run).

    Raises:
        ValidationError: ``allow_volatile_vectors`` is not a bool (that
            field), or the pairing is refused (field ``vector``; the message
            names both stores and the fixes).
    """
    if not isinstance(allow_volatile_vectors, bool):
        raise ValidationError("allow_volatile_vectors", f"must be a bool, got {type(allow_volatile_vectors).__name__}")
    if vector is None or allow_volatile_vectors:
        return
    if not persistent_storage(storage):
        if vector.persistent:
            raise ValidationError(
                "vector",
                f"{type(vector).__name__} keeps its vectors after this process exits, but "
                f"{type(storage).__name__} keeps its messages in memory: every run would add vectors of messages "
                "that are gone (an index that only grows, and check_index counting orphans); give a persistent "
                "storage (sqlite:///file.db, a server) to pair with it, or in-memory vectors (qdrant::memory:, "
                "memory://) to pair with the in-memory storage, or pass allow_volatile_vectors=True",
            )
        return
    check_persistent(
        vector,
        "vector",
        fix=(
            f"to pair with {type(storage).__name__}, which keeps its messages after a restart "
            "(the index would be empty then); or pass allow_volatile_vectors=True"
        ),
    )


def check_config(config: Any, vector: VectorStore | None, embedder: Embedder | None) -> MemoryConfig:
    """The config of a ``Memory(storage, vector, embedder, config)``:
    ``config`` itself (``MemoryConfig()`` when None), its ``semantic_recall``
    settled when the config leaves it unset (None): on with its defaults
    exactly when there is a vector store. A config that sets it keeps it.

    Raises:
        ValidationError: ``config`` neither a MemoryConfig nor a mapping of
            its fields, or a key or value of the mapping wrong (field
            ``config.<key>``, an unknown key naming the field meant); without a vector
            store, an embedder (field ``embedder``) or semantic recall on
            (field ``config.semantic_recall``).
    """
    checked = MemoryConfig() if config is None else _memory_config(config)
    if checked.semantic_recall is None:  # not set: on exactly when there is a vector store
        checked = replace(checked, semantic_recall=vector is not None)
    if vector is None:
        if embedder is not None:
            raise ValidationError("embedder", "given without a vector store: pass vector= too, or no embedder")
        semantic = checked.semantic()
        if semantic is not None and semantic.mode != "lexical":
            raise ValidationError(
                "config.semantic_recall",
                "semantic recall is on but Memory has no vector store: pass "
                "vector=await memory_core.connect_vector(url), or turn semantic_recall off",
                "R-RECALL",
            )
    return checked


def _memory_config(value: Any) -> MemoryConfig:
    """The ``config`` argument as a MemoryConfig: one given as it is; a
    mapping (Mastra's camelCase names too) checked field by field, its errors
    named from ``config`` (``config.semantic_recall.top_k``)."""
    try:
        return coerce_model(value, MemoryConfig, "config")
    except ValidationError as exc:
        if exc.field == "config" or exc.field.startswith("config."):
            raise
        raise ValidationError(f"config.{exc.field}", exc.reason, exc.rule) from None


def check_urls(storage: Any, vector: Any) -> None:
    """The URLs of ``Memory.open(storage, vector)``: a str, and a str or None.

    Raises:
        ValidationError: a store object or anything else where a URL goes
            (field ``storage`` or ``vector``), naming the fix.
    """
    for name, url in (("storage", storage), ("vector", vector)):
        if not isinstance(url, str) and (name == "storage" or url is not None):
            raise ValidationError(
                name,
                f"Memory.open takes a URL (str), got {type(url).__name__}; "
                f"for a {name} object already built use Memory(storage, vector, ...)",
            )


def check_message_list(value: Any) -> Sequence[Message | Mapping[str, Any]]:
    """``value`` if it is a list (sequence) of messages or mappings; each
    message is checked when it is saved.

    Raises:
        NotAListError: one message, a str, a mapping or anything not a
            sequence (field ``messages``; the message says "pass a list").
    """
    shape = '[message, ...] (Message or {"thread_id": ..., "role": ..., "content": ...})'
    return cast(Sequence[Message | Mapping[str, Any]], check_list(value, "messages", "Message or mappings", shape))


def check_one_scope(thread_id: Any, resource_id: Any, field: str) -> None:
    """Exactly one of ``thread_id`` and ``resource_id``, and it a valid id
    (R-ID); ``field`` names the operation in the error when both or
    neither are given."""
    if (thread_id is None) == (resource_id is None):
        raise ValidationError(field, "give exactly one of thread_id or resource_id")
    if thread_id is not None:
        check_id(thread_id, "thread_id")
    else:
        check_id(resource_id, "resource_id")


def check_metadata_arg(value: Any, field: str) -> dict[str, Any]:
    """An optional metadata argument as a checked JSON object (None -> {})."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a dict (JSON object), got {type(value).__name__}", "R-JSON")
    return check_json_object(dict(value), field)


_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother = 40, 60


def _short(value: Any) -> str:
    """``repr(value)`` with long strings cut (for a message)."""
    return _SHORT.repr(value)


_TURN_KEYS = frozenset({"role", "content", "metadata", "type", "id", "created_at", "createdAt"})


def check_turns(turns: Any, thread_id: str, resource_id: str | None) -> list[dict[str, Any]]:
    """Turns (``(role, content)`` pairs or mappings of a message's fields
    without ``thread_id``) as message mappings of ``thread_id`` (and
    ``resource_id`` when given); each message's own fields are checked when
    it is saved.

    Raises:
        NotAListError: ``turns`` is one turn (a ``(role, content)`` pair or
            a mapping), a str or anything not a list (field ``turns``).
        ValidationError: a turn is neither a pair nor a mapping, or has an
            unknown key (field ``turns[<index>]``).
    """
    items, shape = "(role, content) pairs or mappings", '[("user", "hello"), ("assistant", "hi!")]'
    if isinstance(turns, tuple | list) and len(turns) == 2 and turns[0] in get_args(Role):  # ("user", "hi")
        raise NotAListError("turns", items, "one (role, content) pair", f"[{_short(tuple(turns))}]")
    if isinstance(turns, Mapping) and "role" in turns:
        raise NotAListError("turns", items, "one turn (a mapping)", f"[{_short(dict(turns))}]")
    turns = check_list(turns, "turns", items, shape)
    batch: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        field = f"turns[{index}]"
        if isinstance(turn, Mapping):
            unknown = sorted(map(str, set(turn) - _TURN_KEYS))
            if unknown:
                raise ValidationError(f"{field}.{unknown[0]}", "unknown key of a turn")
            item = dict(turn)
        elif isinstance(turn, tuple | list) and len(turn) == 2:
            item = {"role": turn[0], "content": turn[1]}
        else:
            example = f'("user", {_short(turn)})' if isinstance(turn, str) else '("user", "hello")'
            raise ValidationError(
                field, f"must be a (role, content) pair or a mapping, got {type(turn).__name__}; e.g. {example}"
            )
        item["thread_id"] = thread_id
        if resource_id is not None:
            item["resource_id"] = resource_id
        batch.append(item)
    return batch
