"""End to end on real input: all ten LoCoMo conversations into SQLite, then
the demo command. Skipped with a reason when the data folder is absent."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core import Memory, MessageFilter, ThreadFilter, connect
from memory_core.cli import app
from memory_core.cli.locomo import load_dir
from tests.locomo_data import LOCOMO, needs_locomo

heavy = pytest.mark.heavy  # 5,882 messages: run first (root conftest.py)
pytest.importorskip("memory_core_sqlite", reason="memory-core-sqlite is not installed")


@heavy
@needs_locomo
@pytest.mark.anyio
async def test_all_locomo_conversations_load_into_sqlite(tmp_path: Path) -> None:
    conversations = load_dir(LOCOMO)
    storage = await connect(f"sqlite:///{tmp_path / 'locomo.db'}")
    async with Memory(storage) as memory:
        for conversation in conversations:
            for thread in conversation.threads:
                await memory.storage.save_thread(thread)
            by_thread: dict[str, list] = {}  # type: ignore[type-arg]
            for message in conversation.messages:
                by_thread.setdefault(message.thread_id, []).append(message)
            for batch in by_thread.values():
                await memory.save_messages(batch)

        resources = {c.resource_id for c in conversations}
        assert len(resources) == 10
        threads = await memory.list_threads(per_page=False)
        assert threads.total == 272 and len(threads.items) == 272
        per_resource = [
            (await memory.list_threads(ThreadFilter(resource_id=r), per_page=0)).counted_total
            for r in sorted(resources)
        ]
        assert sum(per_resource) == 272
        assert per_resource[sorted(resources).index("locomo-26")] == 19
        messages = 0
        for resource in sorted(resources):
            messages += (await memory.storage.list_messages_by_resource(resource, per_page=0)).counted_total
        assert messages == 5882

        first = await memory.list_messages("locomo-26:s1", per_page=2)
        assert first.total == 18
        assert first.items[0].content == "Hey Mel! Good to see you! How have you been?"
        assert first.items[0].metadata == {"speaker": "Caroline", "dia_id": "D1:1", "session": 1}
        assert first.items[0].role == "user" and first.items[1].role == "assistant"
        newest = await memory.recall("locomo-26:s1", "locomo-26", per_page=1)
        assert newest.messages[0].id == "locomo-26:D1:18"
        melanie = await memory.storage.list_messages_by_resource(
            "locomo-26", filter=MessageFilter(metadata={"speaker": "Melanie"}), per_page=0
        )
        caroline = await memory.storage.list_messages_by_resource(
            "locomo-26", filter=MessageFilter(metadata={"speaker": "Caroline"}), per_page=0
        )
        assert melanie.counted_total + caroline.counted_total == 419
        evidence = next(q for q in conversations[0].questions if q.evidence)
        found = await memory.get_messages(list(evidence.evidence))
        assert [m.id for m in found] == list(evidence.evidence)


def test_demo_on_the_shipped_sample_exits_0(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--db", str(tmp_path / "demo.db")])
    assert result.exit_code == 0, result.output
    assert "loaded 1 resource, 3 threads, 36 messages" in result.output
    assert "cursor walk" in result.output
    assert "threads so far: 3" in result.output


@heavy
@needs_locomo
def test_demo_on_locomo_exits_0(tmp_path: Path) -> None:
    # Lexical: the load and the session are under test here; MiniLM over 5,882
    # turns would add three minutes (the default embedder is tested on the sample).
    demo = ["demo", "--db", str(tmp_path / "demo.db"), "--locomo", str(LOCOMO), "--embedder", "lexical"]
    result = CliRunner().invoke(app, demo)
    assert result.exit_code == 0, result.output
    assert "loaded 10 resources, 272 threads, 5882 messages" in result.output
