"""OpenTelemetry spans of storage and Memory calls (memory_core.telemetry),
read back with the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from memory_core import (
    InMemoryStorage,
    InMemoryVectorStore,
    Memory,
    MemoryConfig,
    RetentionPolicy,
    Thread,
    ValidationError,
    connect,
    connect_vector,
)
from memory_core.embedders import LexicalHashEmbedder
from memory_core.telemetry import set_capture_content, set_tracer_provider
from memory_core.vector import VectorPoint

# One worker runs this module (its module-scoped fixture once): the README's `--dist loadgroup`.
pytestmark = [pytest.mark.anyio, pytest.mark.xdist_group("telemetry")]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    """An exporter on a provider of this module's own: the process's global
    provider is left alone, and the other tests' calls are not recorded."""
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    set_tracer_provider(provider)
    yield found
    set_tracer_provider(None)
    provider.shutdown()


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    exporter.clear()
    yield exporter
    set_capture_content(None)


@pytest.fixture
async def store() -> AsyncIterator[InMemoryStorage]:
    async with InMemoryStorage() as opened:
        await opened.save_thread(Thread("t1", "r1"))
        yield opened


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


async def test_storage_calls_are_genai_memory_spans(store: InMemoryStorage, spans: InMemorySpanExporter) -> None:
    await store.save_messages(
        [
            {"id": "a", "thread_id": "t1", "role": "user", "content": "secret"},
            {"id": "b", "thread_id": "t1", "role": "user", "content": "x"},
        ]
    )
    page = await store.list_messages("t1")
    assert len(page.items) == 2
    saved = _named(spans, "update_memory save_messages")[0]
    assert saved.attributes is not None
    assert saved.attributes["gen_ai.operation.name"] == "update_memory"
    assert saved.attributes["db.system.name"] == saved.attributes["db.system"] == "memory"
    assert saved.attributes["db.operation.batch.size"] == 2
    assert "gen_ai.memory.content" not in saved.attributes  # message text is opt-in
    [listed] = _named(spans, "search_memory list_messages")
    assert listed.attributes is not None
    assert listed.attributes["gen_ai.conversation.id"] == "t1"
    assert listed.attributes["gen_ai.memory.search.result.count"] == 2
    assert listed.attributes["db.response.returned_rows"] == 2
    assert listed.end_time is not None and listed.start_time is not None and listed.end_time > listed.start_time
    # list_messages runs through page_messages: one span, not two
    assert _named(spans, "search_memory page_messages") == []
    assert listed.kind == trace.SpanKind.CLIENT


async def test_message_text_only_when_enabled(store: InMemoryStorage, spans: InMemorySpanExporter) -> None:
    set_capture_content(True)
    await store.save_messages([{"id": "a", "thread_id": "t1", "role": "user", "content": "héllo"}])
    [saved] = _named(spans, "update_memory save_messages")
    assert saved.attributes is not None and saved.attributes["gen_ai.memory.content"] == '["héllo"]'


async def test_memory_spans_hold_their_storage_and_record_the_query(
    spans: InMemorySpanExporter, store: InMemoryStorage
) -> None:
    config = MemoryConfig(semantic_recall=True)
    async with Memory(store, InMemoryVectorStore(), LexicalHashEmbedder(), config, owns_stores=False) as memory:
        await memory.save_messages([{"id": "a", "thread_id": "t1", "role": "user", "content": "tea"}])
        set_capture_content(True)
        result = await memory.recall("t1", "r1", vector_search_string="tea")
    assert [m.id for m in result.messages] == ["a"]
    exporter = spans
    outer = [s for s in _named(exporter, "update_memory save_messages") if s.parent is None]
    inner = [s for s in _named(exporter, "update_memory save_messages") if s.parent is not None]
    assert len(outer) == 1 and len(inner) == 1
    assert inner[0].parent is not None and inner[0].parent.span_id == outer[0].context.span_id  # type: ignore[union-attr]
    [recall] = _named(exporter, "search_memory recall")
    assert recall.attributes is not None
    assert recall.attributes["gen_ai.memory.query"] == "tea"
    assert recall.attributes["gen_ai.memory.namespace"] == "r1"
    assert recall.attributes["gen_ai.memory.search.result.count"] == 1


async def test_a_failed_call_is_an_error_span(store: InMemoryStorage, spans: InMemorySpanExporter) -> None:
    with pytest.raises(ValidationError):
        await store.list_messages("t1", per_page=-1)
    [failed] = _named(spans, "search_memory list_messages")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["error.type"] == "ValidationError"


async def test_prune_span_counts_what_went(store: InMemoryStorage, spans: InMemorySpanExporter) -> None:
    await store.save_messages([{"id": "a", "thread_id": "t1", "role": "user", "content": "x"}])
    await store.prune(RetentionPolicy(before=store.clock.now() + timedelta(seconds=1)))
    [pruned] = _named(spans, "delete_memory prune")
    assert pruned.attributes is not None
    assert pruned.attributes["memory_core.prune.messages"] == 1
    assert pruned.attributes["memory_core.prune.threads"] == 0


async def test_sqlite_spans_name_their_backend(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    pytest.importorskip("memory_core_sqlite")
    async with await connect(f"sqlite:///{tmp_path / 's.db'}") as sqlite:
        await sqlite.get_thread("t1")
    [got] = _named(spans, "search_memory get_thread")
    assert got.attributes is not None and got.attributes["db.system.name"] == "sqlite"


def test_no_opentelemetry_import_and_no_spans_without_it() -> None:
    """memory-core never imports OpenTelemetry: importing it and running calls
    leaves ``opentelemetry`` unloaded (a program without it pays nothing)."""
    code = (
        "import asyncio, sys\n"
        "import memory_core\n"
        "async def main():\n"
        "    async with memory_core.InMemoryStorage() as s:\n"
        "        await s.save_thread(memory_core.Thread('t', 'r'))\n"
        "        await s.list_messages('t')\n"
        "asyncio.run(main())\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry')\n"
        "assert not loaded, loaded\n"
        "print('clean')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "clean", done.stderr


def test_the_api_without_a_provider_makes_no_span_until_one_is_set() -> None:
    """A library that imports only the API (the OpenAI Agents SDK does)
    leaves no provider: memory-core then makes no span; once the application
    sets a provider, calls are spans again."""
    code = (
        "import asyncio\n"
        "from opentelemetry import trace\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "import memory_core\n"
        "made = []\n"
        "real = trace.ProxyTracer.start_as_current_span\n"
        "def counted(self, *a, **k):\n"
        "    made.append(a[0])\n"
        "    return real(self, *a, **k)\n"
        "trace.ProxyTracer.start_as_current_span = counted\n"
        "async def calls():\n"
        "    async with memory_core.InMemoryStorage() as s:\n"
        "        await s.list_messages('t')\n"
        "asyncio.run(calls())\n"
        "assert made == [], made\n"
        "exporter = InMemorySpanExporter()\n"
        "provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(exporter))\n"
        "trace.set_tracer_provider(provider)\n"
        "asyncio.run(calls())\n"
        "assert [s.name for s in exporter.get_finished_spans()] == ['search_memory list_messages'], made\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def _point(message_id: str, thread_id: str, vector: list[float]) -> VectorPoint:
    return VectorPoint(message_id, 0, np.asarray(vector, dtype=np.float32), thread_id, "r1", 0)


async def test_vector_store_calls_are_genai_memory_spans(spans: InMemorySpanExporter) -> None:
    set_capture_content(True)  # still no vector or text on a vector span: it is given none
    async with InMemoryVectorStore() as vectors:
        await vectors.upsert([_point("a", "t1", [1, 0, 0]), _point("b", "t2", [0, 1, 0])])
        hits = await vectors.search(np.asarray([1, 0.1, 0], dtype=np.float32), 5, resource_id="r1")
        assert await vectors.count(thread_id="t1") == 1
        await vectors.delete_messages(["a"])
        await vectors.delete_thread("t2")
        await vectors.delete_resource("r1")
    assert [h.message_id for h in hits] == ["a", "b"]
    [upsert] = _named(spans, "update_memory upsert")
    assert upsert.attributes is not None
    assert upsert.attributes["db.system.name"] == upsert.attributes["db.system"] == "memory"
    assert upsert.attributes["db.operation.name"] == "upsert"
    assert upsert.attributes["db.operation.batch.size"] == 2
    assert upsert.kind == trace.SpanKind.CLIENT
    [search] = _named(spans, "search_memory search")
    assert search.attributes is not None
    assert search.attributes["gen_ai.operation.name"] == "search_memory"
    assert search.attributes["gen_ai.memory.namespace"] == "r1"
    assert search.attributes["gen_ai.memory.scope"] == "user"
    assert search.attributes["gen_ai.embeddings.dimension.count"] == 3
    assert search.attributes["memory_core.vector.top_k"] == 5
    assert search.attributes["gen_ai.memory.search.result.count"] == 2
    assert not {"gen_ai.memory.query", "gen_ai.memory.content"} & set(search.attributes)
    [counted] = _named(spans, "search_memory count")
    assert counted.attributes is not None and counted.attributes["gen_ai.conversation.id"] == "t1"
    [deleted] = _named(spans, "delete_memory delete_messages")
    assert deleted.attributes is not None and deleted.attributes["db.operation.batch.size"] == 1
    assert _named(spans, "delete_memory delete_thread")[0].attributes["gen_ai.conversation.id"] == "t2"  # type: ignore[index]
    assert _named(spans, "delete_memory delete_resource")[0].attributes["gen_ai.memory.namespace"] == "r1"  # type: ignore[index]


async def test_a_failed_vector_call_is_an_error_span(spans: InMemorySpanExporter) -> None:
    async with InMemoryVectorStore() as vectors:
        with pytest.raises(ValidationError):
            await vectors.search(np.zeros(3, dtype=np.float32), 1)
    [failed] = _named(spans, "search_memory search")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["error.type"] == "ValidationError"


async def test_vector_spans_are_children_of_memory_spans(spans: InMemorySpanExporter, store: InMemoryStorage) -> None:
    config = MemoryConfig(semantic_recall=True)
    async with Memory(store, InMemoryVectorStore(), LexicalHashEmbedder(), config, owns_stores=False) as memory:
        await memory.save_messages([{"id": "a", "thread_id": "t1", "role": "user", "content": "tea"}])
        await memory.recall("t1", "r1", vector_search_string="tea")
    [saved] = [s for s in _named(spans, "update_memory save_messages") if s.parent is None]
    [recall] = _named(spans, "search_memory recall")
    [upsert] = _named(spans, "update_memory upsert")
    [search] = _named(spans, "search_memory search")
    assert upsert.parent is not None and upsert.parent.span_id == saved.context.span_id  # type: ignore[union-attr]
    assert search.parent is not None and search.parent.span_id == recall.context.span_id  # type: ignore[union-attr]
    assert search.attributes is not None and search.attributes["gen_ai.memory.namespace"] == "r1"  # resource scope


async def test_qdrant_spans_name_their_backend(spans: InMemorySpanExporter) -> None:
    pytest.importorskip("memory_core_qdrant")
    async with await connect_vector("qdrant::memory:") as vectors:
        await vectors.upsert([_point("a", "t1", [1, 0])])
    [upsert] = _named(spans, "update_memory upsert")
    assert upsert.attributes is not None and upsert.attributes["db.system.name"] == "qdrant"
