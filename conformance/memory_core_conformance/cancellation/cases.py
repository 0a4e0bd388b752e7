"""The :class:`~memory_core_conformance.cancellation.WriteCase` of each
public write of memory-core: the storage writes (through
:class:`~memory_core.Memory`), an import batch, a prune, and the framework
seams (ADK ``append_event``, OpenAI Agents ``add_items``/``pop_item``,
Pydantic AI ``append``; a seam whose framework is not installed is left
out).

Every case starts from :func:`base_store`: resource ``r1`` (working memory
``"wm"``) with threads ``t1`` and ``t2``, resource ``r2`` with thread ``t3``,
three messages in each thread at fixed times (ids and times in the run's
:class:`~memory_core_conformance.cancellation.Scope`)."""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from memory_core import Memory
from memory_core.models import Message, Thread
from memory_core.retention import RetentionPolicy
from memory_core.transfer import export_lines, import_lines

from . import T0, Scope, WriteCase, snapshot

__all__ = [
    "APPENDED",
    "T0",
    "UNSCOPED",
    "all_cases",
    "append_turns",
    "append_view",
    "base_store",
    "seam_cases",
    "storage_cases",
]

_THREADS = (("t1", "r1"), ("t2", "r1"), ("t3", "r2"))
UNSCOPED = Scope()
"""The scope of a store of one's own: ids as written, times from ``T0``."""


async def base_store(memory: Memory, scope: Scope = UNSCOPED) -> None:
    """Write the starting store (see the module docstring); message i of a
    thread at ``T0 + timedelta(minutes=i)`` (minutes)."""
    s = scope.id
    await memory.storage.update_resource(s("r1"), working_memory="wm")
    for tid, rid in _THREADS:
        await memory.storage.save_thread(Thread(s(tid), s(rid), title=tid, metadata={"n": tid}))
        await memory.save_messages(
            [
                Message(
                    s(f"{tid}-m{i}"), s(tid), "user", f"{tid} text {i}", s(rid), created_at=T0 + timedelta(minutes=i)
                )
                for i in range(3)
            ]
        )


def _storage(name: str, operation: Callable[[Memory, Scope], Awaitable[Any]], *, resumable: bool = False) -> WriteCase:
    return WriteCase(name, base_store, operation, snapshot, resumable)


def storage_cases() -> list[WriteCase]:
    """The storage writes: ``append_messages`` (viewed through a semantic
    recall that must find the new turns), the storage's own
    ``save_messages``, ``delete_messages`` and ``delete_thread`` (no vector
    step: the adapter's cancellation safety), then through
    :class:`~memory_core.Memory`: ``save_thread``, ``save_messages`` (one batch over
    two resources), ``update_messages``, ``delete_messages``,
    ``delete_thread``, ``delete_resource`` (resumable: documented as such),
    ``update_working_memory``, ``create_thread``, ``get_or_create_thread``,
    ``update_thread``, ``append_working_memory``, ``clone_thread`` (into
    ``r2``) and ``branch_thread`` (both viewed with the copy's lineage and
    without message ids, new in every run), an import batch (``import_lines`` of an export
    of two threads; resumable per message batch) and ``prune`` of ``r1``
    (batches of two; resumable per batch)."""

    def new_messages(s: Scope) -> list[Message]:
        return [
            Message(s.id("n1"), s.id("t1"), "assistant", "new 1", s.id("r1"), created_at=T0 + timedelta(minutes=11)),
            Message(s.id("n2"), s.id("t3"), "assistant", "new 2", s.id("r2"), created_at=T0 + timedelta(minutes=12)),
            Message(s.id("n3"), s.id("t2"), "user", "new 3", s.id("r1"), created_at=T0 + timedelta(minutes=13)),
        ]

    def ids(s: Scope, *names: str) -> list[str]:
        return [s.id(name) for name in names]

    def edits(s: Scope) -> list[dict[str, Any]]:
        return [{"id": s.id("t1-m1"), "content": "edited"}, {"id": s.id("t3-m2"), "content": "edited"}]

    return [
        WriteCase("append_messages", base_store, append_turns, append_view),
        _storage("storage save_messages", lambda m, s: m.storage.save_messages(new_messages(s))),
        _storage("storage delete_messages", lambda m, s: m.storage.delete_messages(ids(s, "t1-m0", "t3-m1", "t2-m2"))),
        _storage("storage delete_thread", lambda m, s: m.storage.delete_thread(s.id("t1"))),
        _storage(
            "save_thread",
            lambda m, s: m.storage.save_thread(Thread(s.id("t4"), s.id("r2"), title="new", metadata={"k": 1})),
        ),
        _storage("save_messages", lambda m, s: m.save_messages(new_messages(s))),
        _storage("update_messages", lambda m, s: m.update_messages(edits(s))),
        _storage("delete_messages", lambda m, s: m.delete_messages(ids(s, "t1-m0", "t3-m1", "t2-m2"))),
        _storage("delete_thread", lambda m, s: m.delete_thread(s.id("t1"))),
        _storage("delete_resource", lambda m, s: m.delete_resource(s.id("r1")), resumable=True),
        _storage(
            "update_working_memory",
            lambda m, s: m.update_working_memory(
                s.id("t2"), "notes", thread_config={"working_memory": {"enabled": True}}
            ),
        ),
        _storage("create_thread", lambda m, s: m.create_thread(s.id("r2"), s.id("t4"), title="new", metadata={"k": 1})),
        _storage("get_or_create_thread", lambda m, s: m.get_or_create_thread(s.id("r1"), s.id("t4"), title="new")),
        _storage("update_thread", lambda m, s: m.update_thread(s.id("t1"), title="renamed", metadata={"k": 2})),
        _storage(
            "append_working_memory",
            lambda m, s: m.append_working_memory(
                s.id("t2"), "more", thread_config={"working_memory": {"enabled": True}}
            ),
        ),
        WriteCase(
            "clone_thread",  # into another resource: the copies' vectors follow them
            base_store,
            lambda m, s: m.clone_thread(s.id("t1"), s.id("t5"), resource_id=s.id("r2"), source_resource_id=s.id("r1")),
            _copy_view,
        ),
        WriteCase(
            "branch_thread", base_store, lambda m, s: m.branch_thread(s.id("t1"), s.id("t1-m1"), s.id("t5")), _copy_view
        ),
        WriteCase("import batch", _import_setup, _import_batch, _import_view, resumable=True),
        _storage(
            "prune",  # of r1 (two threads): a store-wide prune would reach every other trial's scope
            lambda m, s: m.prune(
                RetentionPolicy(before=T0 + timedelta(minutes=2), resource_id=s.id("r1"), batch_size=2)
            ),
            resumable=True,
        ),
    ]


APPENDED = ("the zebra crossing at noon", "a zebra crossed the road")
"""The turns :func:`append_turns` adds to ``t1``; :func:`append_view` searches for them."""


async def append_turns(memory: Memory, scope: Scope = UNSCOPED) -> Any:
    """``append_messages`` of :data:`APPENDED` to ``t1`` (new ids, "now")."""
    turns = [("user", APPENDED[0]), ("assistant", APPENDED[1])]
    return await memory.append_messages(scope.id("t1"), turns, resource_id=scope.id("r1"))


async def append_view(memory: Memory, scope: Scope = UNSCOPED) -> Any:
    """:func:`snapshot` without message ids (``append_messages`` makes new
    ones), and the texts a semantic recall for "zebra crossing" over ``r1``
    hits (the appended turns once they are stored, with their vectors)."""
    found = await memory.recall(scope.id("t1"), scope.id("r1"), vector_search_string="zebra crossing", per_page=0)
    hits = sorted(str(m.content) for m in found.messages if m.id in found.semantic_hits)
    view = await snapshot(memory, scope)
    for record in view.values():
        for tid, (title, metadata, items, index) in record[2].items():
            record[2][tid] = (title, metadata, [item[1:] for item in items], index)
    return view, hits


async def _copy_view(memory: Memory, scope: Scope) -> Any:
    """:func:`snapshot` without message ids (a copy's ids are new in every
    run) nor the source's creation time a copy's metadata records, and the
    lineage of the copy ``t5`` without its times (None while there is no
    copy)."""
    view = await snapshot(memory, scope)
    for record in view.values():
        for tid, (title, metadata, items, index) in record[2].items():
            timeless = {k: v for k, v in metadata.items() if k != "cloned_from_created_at"}  # the source's time
            record[2][tid] = (title, timeless, [item[1:] for item in items], index)
    copy = await memory.storage.get_thread(scope.id("t5"))
    found = None if copy is None else await memory.get_lineage(copy.id, copy.resource_id)
    return view, None if found is None else (found.source_thread_id, found.source_resource_id, found.last_message_id)


_EXPORTS: dict[str, tuple[list[str], dict[str, Any]]] = {}
"""Per scope prefix: the export :func:`_import_batch` imports and its
threads' ``updated_at``."""


async def _import_setup(memory: Memory, scope: Scope) -> None:
    """:func:`base_store`, and an export of resource ``r9`` (threads ``i1``,
    ``i2``; three messages each) made in a ``memory://`` store."""
    import memory_core

    await base_store(memory, scope)
    s = scope.id
    source = Memory(await memory_core.connect("memory://"))
    async with source:
        for tid in ("i1", "i2"):
            await source.storage.save_thread(Thread(s(tid), s("r9"), title=tid))
            await source.save_messages(
                [
                    Message(s(f"{tid}-{i}"), s(tid), "user", f"i {i}", s("r9"), created_at=T0 + timedelta(minutes=i))
                    for i in range(3)
                ]
            )
        lines = [line async for line in export_lines(source.storage)]
        times = {tid: (await source.storage.get_thread(s(tid))).updated_at for tid in ("i1", "i2")}  # type: ignore[union-attr]
    _EXPORTS[scope.prefix] = (lines, times)


async def _import_batch(memory: Memory, scope: Scope) -> Any:
    """Import the scope's export (:func:`_import_setup`) in batches of two."""
    return await import_lines(memory.storage, list(_EXPORTS[scope.prefix][0]), batch_size=2)


async def _import_view(memory: Memory, scope: Scope) -> Any:
    """:func:`snapshot` plus, per imported thread, whether its
    ``updated_at`` is the file's (None while the thread is missing)."""
    times = _EXPORTS[scope.prefix][1]
    threads = {tid: await memory.storage.get_thread(scope.id(tid)) for tid in ("i1", "i2")}
    return await snapshot(memory, scope), [
        None if t is None else t.updated_at == times[tid] for tid, t in threads.items()
    ]


def seam_cases() -> list[WriteCase]:
    """The framework seams whose framework is installed."""
    cases: list[WriteCase] = []
    if importlib.util.find_spec("google.adk") is not None:
        from .seams import adk_append_event

        cases.append(adk_append_event())
    if importlib.util.find_spec("agents") is not None:
        from .seams import openai_add_items, openai_pop_item

        cases += [openai_add_items(), openai_pop_item()]
    if importlib.util.find_spec("pydantic_ai") is not None:
        from .seams import pydantic_ai_append

        cases.append(pydantic_ai_append())
    return cases


def all_cases() -> list[WriteCase]:
    """:func:`storage_cases` then :func:`seam_cases`."""
    return storage_cases() + seam_cases()
