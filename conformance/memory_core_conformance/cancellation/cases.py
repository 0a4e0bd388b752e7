"""The :class:`~memory_core_conformance.cancellation.WriteCase` of each
public write of memory-core: the storage writes (through
:class:`~memory_core.Memory`), an import batch, a prune, and the framework
seams (ADK ``append_event``, OpenAI Agents ``add_items``/``pop_item``,
Pydantic AI ``append``; a seam whose framework is not installed is left
out).

Every case starts from :func:`base_store`: resource ``r1`` (working memory
``"wm"``) with threads ``t1`` and ``t2``, resource ``r2`` with thread ``t3``,
three messages in each thread at fixed times."""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core import Memory
from memory_core.models import Message, Thread
from memory_core.retention import RetentionPolicy
from memory_core.transfer import export_lines, import_lines

from . import WriteCase, snapshot

__all__ = ["APPENDED", "T0", "all_cases", "append_turns", "append_view", "base_store", "seam_cases", "storage_cases"]

T0 = datetime(2025, 1, 1, tzinfo=UTC)
"""The time of the first message; message i of a thread is ``T0 + i`` minutes."""

_THREADS = (("t1", "r1"), ("t2", "r1"), ("t3", "r2"))


async def base_store(memory: Memory) -> None:
    """Write the starting store (see the module docstring)."""
    await memory.storage.update_resource("r1", working_memory="wm")
    for tid, rid in _THREADS:
        await memory.storage.save_thread(Thread(tid, rid, title=tid, metadata={"n": tid}))
        await memory.save_messages(
            [
                Message(f"{tid}-m{i}", tid, "user", f"{tid} text {i}", rid, created_at=T0 + timedelta(minutes=i))
                for i in range(3)
            ]
        )


def _storage(name: str, operation: Callable[[Memory], Awaitable[Any]], *, resumable: bool = False) -> WriteCase:
    return WriteCase(name, base_store, operation, snapshot, resumable)


def storage_cases() -> list[WriteCase]:
    """The storage writes: ``append_messages`` (viewed through a semantic
    recall that must find the new turns), the storage's own
    ``save_messages``, ``delete_messages`` and ``delete_thread`` (no vector
    step: the adapter's cancellation safety), then through
    :class:`~memory_core.Memory`: ``save_thread``, ``save_messages`` (one batch over
    two resources), ``update_messages``, ``delete_messages``,
    ``delete_thread``, ``delete_resource`` (resumable: documented as such),
    ``update_working_memory``, an import batch (``import_lines`` of an export
    of two threads; resumable per message batch) and ``prune`` (batches of
    two; resumable per batch)."""

    def later(i: int) -> datetime:
        return T0 + timedelta(minutes=10 + i)

    new_messages = [
        Message("n1", "t1", "assistant", "new 1", "r1", created_at=later(1)),
        Message("n2", "t3", "assistant", "new 2", "r2", created_at=later(2)),
        Message("n3", "t2", "user", "new 3", "r1", created_at=later(3)),
    ]
    return [
        WriteCase("append_messages", base_store, append_turns, append_view),
        _storage("storage save_messages", lambda m: m.storage.save_messages(new_messages)),
        _storage("storage delete_messages", lambda m: m.storage.delete_messages(["t1-m0", "t3-m1", "t2-m2"])),
        _storage("storage delete_thread", lambda m: m.storage.delete_thread("t1")),
        _storage("save_thread", lambda m: m.storage.save_thread(Thread("t4", "r2", title="new", metadata={"k": 1}))),
        _storage("save_messages", lambda m: m.save_messages(new_messages)),
        _storage(
            "update_messages",
            lambda m: m.update_messages([{"id": "t1-m1", "content": "edited"}, {"id": "t3-m2", "content": "edited"}]),
        ),
        _storage("delete_messages", lambda m: m.delete_messages(["t1-m0", "t3-m1", "t2-m2"])),
        _storage("delete_thread", lambda m: m.delete_thread("t1")),
        _storage("delete_resource", lambda m: m.delete_resource("r1"), resumable=True),
        _storage(
            "update_working_memory",
            lambda m: m.update_working_memory("t2", "notes", thread_config={"working_memory": {"enabled": True}}),
        ),
        WriteCase("import batch", base_store, _import_batch, _import_view, resumable=True),
        _storage(
            "prune",
            lambda m: m.prune(RetentionPolicy(before=T0 + timedelta(minutes=2), batch_size=2)),
            resumable=True,
        ),
    ]


APPENDED = ("the zebra crossing at noon", "a zebra crossed the road")
"""The turns :func:`append_turns` adds to ``t1``; :func:`append_view` searches for them."""


async def append_turns(memory: Memory) -> Any:
    """``append_messages`` of :data:`APPENDED` to ``t1`` (new ids, "now")."""
    return await memory.append_messages("t1", [("user", APPENDED[0]), ("assistant", APPENDED[1])], resource_id="r1")


async def append_view(memory: Memory) -> Any:
    """:func:`snapshot` without message ids (``append_messages`` makes new
    ones), and the texts a semantic recall for "zebra crossing" over ``r1``
    hits (the appended turns once they are stored, with their vectors)."""
    found = await memory.recall("t1", "r1", vector_search_string="zebra crossing", per_page=0)
    hits = sorted(str(m.content) for m in found.messages if m.id in found.semantic_hits)
    view = await snapshot(memory)
    for rid, record in view.items():
        if rid is not None:
            for tid, (title, metadata, items, indexed) in record[2].items():
                record[2][tid] = (title, metadata, [item[1:] for item in items], indexed)
    return view, hits


_EXPORT: list[str] = []


async def _import_batch(memory: Memory) -> Any:
    """Import an export of resource ``r9`` (threads ``i1``, ``i2``; three
    messages each), made once in a ``memory://`` store, in batches of two."""
    if not _EXPORT:
        import memory_core

        source = Memory(await memory_core.connect("memory://"))
        async with source:
            for tid in ("i1", "i2"):
                await source.storage.save_thread(Thread(tid, "r9", title=tid))
                await source.save_messages(
                    [
                        Message(f"{tid}-{i}", tid, "user", f"i {i}", "r9", created_at=T0 + timedelta(minutes=i))
                        for i in range(3)
                    ]
                )
            _EXPORT.extend([line async for line in export_lines(source.storage)])
    return await import_lines(memory.storage, list(_EXPORT), batch_size=2)


async def _import_view(memory: Memory) -> Any:
    """:func:`snapshot` plus the imported threads' ``updated_at`` (the
    file's, once the import is complete)."""
    threads = [await memory.storage.get_thread(tid) for tid in ("i1", "i2")]
    return await snapshot(memory), [None if t is None else t.updated_at for t in threads]


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
