"""Bad input from a fresh-user probe, on the reference store and a real SQLite
file: every case raises the documented error type naming the field, before
anything is written (the store is compared before and after)."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import re
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from memory_core import (
    ConflictError,
    ManualClock,
    Memory,
    MemoryConfig,
    Message,
    SemanticRecall,
    Thread,
    ValidationError,
    WorkingMemory,
    connect,
)
from memory_core.cli import app, build_app
from memory_core.cli.demo import print_banner, run_session
from memory_core.cli.locomo import load_sample
from memory_core.clock import TIME_MAX, TIME_MAX_US, TIME_MIN_US, bump_us, from_us
from memory_core.cursor import MAX_CURSOR_CHARS, encode_cursor
from memory_core.embedders import LEXICAL_INLINE_CHARS, LexicalHashEmbedder
from memory_core.memory import MAX_CLONE_ID_LENGTH
from memory_core.validation import MAX_MESSAGE_BYTES, MAX_PER_PAGE, MAX_SEARCH_CHARS, MAX_TOP_K, message_size

pytestmark = pytest.mark.anyio

URLS = ["memory"] + (["sqlite"] if importlib.util.find_spec("memory_core_sqlite") else [])
HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None

Snapshot = tuple[list[Thread], dict[str, list[Message]]]


@pytest.fixture(params=URLS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'x.db'}" if request.param == "sqlite" else "memory://"


@pytest.fixture
async def memory(url: str) -> AsyncIterator[Memory]:
    """A store with thread t1 (5 messages) of r1 and an empty thread t2 of r2."""
    async with Memory(await connect(url)) as memory:
        await memory.create_thread("r1", thread_id="t1")
        await memory.create_thread("r2", thread_id="t2")
        await memory.save_messages([Message(f"m{i}", "t1", "user", f"hello {i}") for i in range(5)])
        yield memory


async def snapshot(memory: Memory) -> Snapshot:
    threads = (await memory.list_threads(per_page=False)).items
    return threads, {t.id: (await memory.list_messages(t.id, per_page=False)).items for t in threads}


async def rejected(memory: Memory, call: Awaitable[Any], field: str, kind: type[Exception] = ValidationError) -> None:
    """``call`` raises ``kind`` (a ValidationError naming ``field``) and the
    store is exactly as it was."""
    before = await snapshot(memory)
    with pytest.raises(kind) as info:
        await call
    if isinstance(info.value, ValidationError):
        assert info.value.field == field, str(info.value)
    assert await snapshot(memory) == before


def real_cursor_fingerprint(cursor: str) -> str:
    raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert isinstance(raw[1], str)
    return raw[1]


# ---------------------------------------------------------------- 1. clone_thread, create_thread


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"new_id": "x" * (MAX_CLONE_ID_LENGTH + 1)}, "new_id"),
        ({"new_id": "x" * 257}, "new_id"),
        ({"new_id": ""}, "new_id"),
        ({"new_id": "t1"}, "new_id"),
        ({"new_id": 5}, "new_id"),
        ({"new_id": "c", "title": 5}, "title"),
        ({"new_id": "c", "metadata": [1]}, "metadata"),
        ({"new_id": "c", "metadata": "k=v"}, "metadata"),
        ({"new_id": "c", "metadata": {"k": float("nan")}}, "metadata['k']"),
        ({"new_id": "c", "message_limit": -1}, "message_limit"),
    ],
)
async def test_clone_thread_rejects_bad_input_before_writing(
    memory: Memory, options: dict[str, Any], field: str
) -> None:
    await rejected(memory, memory.clone_thread("t1", **options), field)


async def test_clone_thread_never_overwrites_a_thread(memory: Memory) -> None:
    await memory.create_thread("r1", thread_id="t1-copy")
    await rejected(memory, memory.clone_thread("t1", "t1-copy"), "", ConflictError)
    await rejected(memory, memory.clone_thread("t1", "t2"), "", ConflictError)  # another resource's thread


async def test_clone_thread_longest_new_id_fits_every_copy(memory: Memory) -> None:
    new_id = "n" * MAX_CLONE_ID_LENGTH
    thread, copies = await memory.clone_thread("t1", new_id)
    assert thread.id == new_id
    assert [len(m.id) for m in copies] == [256] * 5
    assert [m.content for m in (await memory.list_messages(new_id, per_page=False)).items] == [
        f"hello {i}" for i in range(5)
    ]


async def test_clone_thread_copy_over_r_size_writes_nothing(memory: Memory) -> None:
    # Near 15 MiB, the copy's longer id and thread id push it over R-SIZE.
    probe = Message("big", "t1", "user", "")
    body = "a" * (MAX_MESSAGE_BYTES - message_size(probe) - 10)
    await memory.save_messages([Message("big", "t1", "user", body)])
    await rejected(memory, memory.clone_thread("t1", "n" * MAX_CLONE_ID_LENGTH), "copy of message 'big'")


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"thread_id": ""}, "thread_id"),
        ({"thread_id": " "}, "thread_id"),
        ({"thread_id": 7}, "thread_id"),
        ({"thread_id": "n", "title": None}, "title"),
        ({"thread_id": "n", "metadata": 5}, "metadata"),
        ({"thread_id": "n", "metadata": [("k", 1)]}, "metadata"),
    ],
)
async def test_create_thread_rejects_bad_input(memory: Memory, options: dict[str, Any], field: str) -> None:
    await rejected(memory, memory.create_thread("r1", **options), field)
    await rejected(memory, memory.create_thread("", thread_id="n"), "resource_id")


async def test_create_thread_generates_an_id_only_for_none(memory: Memory) -> None:
    thread = await memory.create_thread("r1")
    assert len(thread.id) == 36 and await memory.get_thread(thread.id) == thread


# ---------------------------------------------------------------- 2. recall query text


async def test_recall_rejects_an_oversized_or_invalid_query(memory: Memory) -> None:
    await rejected(
        memory, memory.recall("t1", "r1", vector_search_string="a" * (MAX_SEARCH_CHARS + 1)), "vector_search_string"
    )
    await rejected(memory, memory.recall("t1", "r1", vector_search_string="lone \ud800"), "vector_search_string")


class _ThreadRecordingEmbedder(LexicalHashEmbedder):
    """The real lexical embedder, noting which thread did the CPU work."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []

    def _embed_checked(self, items: list[str]) -> Any:
        self.threads.append(threading.get_ident())
        return super()._embed_checked(items)


async def test_lexical_embedder_runs_large_input_off_the_event_loop() -> None:
    embedder = _ThreadRecordingEmbedder()
    small = ["short query"]
    large = ["word " * (LEXICAL_INLINE_CHARS // 5 + 1)]
    assert np.array_equal(await embedder.embed(small), LexicalHashEmbedder().embed_sync(small))
    assert np.array_equal(await embedder.embed(large), LexicalHashEmbedder().embed_sync(large))
    loop_thread = threading.get_ident()
    assert embedder.threads[0] == loop_thread
    assert embedder.threads[1] != loop_thread


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
async def test_recall_with_a_long_query_still_finds_the_hit() -> None:
    from memory_core import connect_vector

    config = MemoryConfig(semantic_recall=SemanticRecall(top_k=1, message_range={"before": 1}))  # type: ignore[arg-type]
    storage = await connect("memory://")
    async with Memory(storage, await connect_vector("qdrant::memory:"), config=config) as memory:
        await memory.create_thread("r1", thread_id="t1")
        await memory.save_messages(
            [Message("a", "t1", "user", "tea with milk"), Message("b", "t1", "user", "zebra crossing")]
        )
        query = "zebra " + "filler " * 20_000  # ~140,000 characters: embedded off the loop
        result = await memory.recall("t1", "r1", vector_search_string=query, per_page=0)
        assert result.semantic_hits == ["b"]
        assert [m.id for m in result.messages] == ["a", "b"]


# ---------------------------------------------------------------- 3. pagination and cursors


@pytest.mark.parametrize("per_page", [MAX_PER_PAGE + 1, 2**63 - 1, 2**63])
async def test_per_page_over_the_maximum_is_rejected(memory: Memory, per_page: int) -> None:
    page = await memory.list_messages("t1", per_page=2)
    assert page.next_cursor is not None
    await rejected(memory, memory.list_messages("t1", per_page=per_page), "per_page")
    await rejected(memory, memory.list_messages("t1", per_page=per_page, cursor=page.next_cursor), "per_page")
    await rejected(memory, memory.list_threads(per_page=per_page), "per_page")
    await rejected(memory, memory.recall("t1", "r1", per_page=per_page, cursor=page.next_cursor), "per_page")
    await rejected(memory, memory.recall("t1", "r1", thread_config={"last_messages": per_page}), "last_messages")


async def test_per_page_at_the_maximum_pages_by_cursor(memory: Memory) -> None:
    first = await memory.list_messages("t1", per_page=2)
    assert first.next_cursor is not None
    rest = await memory.list_messages("t1", per_page=MAX_PER_PAGE, cursor=first.next_cursor)
    assert [m.id for m in rest.items] == ["m2", "m3", "m4"]
    assert (rest.has_more, rest.next_cursor) == (False, None)


@pytest.mark.parametrize(
    "key",
    [
        (TIME_MAX_US + 1, 1),
        (TIME_MIN_US - 1, 1),
        (2**80, 1),
        (0, -1),
        (0, 2**63),
        (0, 2**64),
        (0, "m1"),
        (0.5, 1),
        (True, 1),
    ],
)
async def test_forged_message_cursor_keys_are_rejected(memory: Memory, key: tuple[Any, ...]) -> None:
    page = await memory.list_messages("t1", per_page=2)
    assert page.next_cursor is not None
    forged = encode_cursor(real_cursor_fingerprint(page.next_cursor), key)
    await rejected(memory, memory.list_messages("t1", per_page=2, cursor=forged), "cursor")


@pytest.mark.parametrize("key", [(0, ""), (0, "x" * 257), (0, "a\x00"), (0, 5), (TIME_MAX_US + 1, "t1")])
async def test_forged_thread_cursor_keys_are_rejected(memory: Memory, key: tuple[Any, ...]) -> None:
    page = await memory.list_threads(per_page=1)
    assert page.next_cursor is not None
    forged = encode_cursor(real_cursor_fingerprint(page.next_cursor), key)
    await rejected(memory, memory.list_threads(per_page=1, cursor=forged), "cursor")


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        _b64("[" * 1000 + "]" * 1000),  # short enough, nested past the JSON parser's recursion limit
        _b64("[" * 100_000 + "]" * 100_000),
        _b64('{"a":' * 500 + "1" + "}" * 500),
        "A" * (MAX_CURSOR_CHARS + 1),
        _b64('[1, "abc", [1, 2]]'),  # not the exact shape this library writes
        _b64('[1,"abc",[1,2],3]'),
        _b64('[1,"abc",[' + "9" * 5000 + ",1]]"),
        "!!!!",
        base64.urlsafe_b64encode('[1,"é",[1,1]]'.encode()).decode(),
        "",
    ],
)
async def test_malformed_cursors_are_rejected(memory: Memory, cursor: str) -> None:
    await rejected(memory, memory.list_messages("t1", per_page=2, cursor=cursor), "cursor")
    await rejected(memory, memory.list_threads(per_page=1, cursor=cursor), "cursor")


async def test_longest_real_cursor_is_accepted(memory: Memory) -> None:
    # A 256-character id of astral characters: 12 JSON characters each.
    longest = "\U0001f600" * 256
    await memory.storage.save_thread(Thread(longest, "r1", created_at=TIME_MAX))
    first = await memory.list_threads(per_page=1)
    assert [t.id for t in first.items] == [longest] and first.next_cursor is not None
    assert len(first.next_cursor) <= MAX_CURSOR_CHARS
    rest = await memory.list_threads(per_page=10, cursor=first.next_cursor)
    assert sorted(t.id for t in rest.items) == ["t1", "t2"]


@pytest.mark.parametrize("top_k", [0, MAX_TOP_K + 1, 2**63, True, 2.0, "4"])
async def test_top_k_out_of_range_is_rejected(memory: Memory, top_k: Any) -> None:
    with pytest.raises(ValidationError) as info:
        SemanticRecall(top_k=top_k)
    assert info.value.field == "semantic_recall.top_k"
    await rejected(
        memory, memory.recall("t1", "r1", thread_config={"semantic_recall": {"topK": top_k}}), "semantic_recall.top_k"
    )
    assert SemanticRecall(top_k=MAX_TOP_K).top_k == MAX_TOP_K


# ---------------------------------------------------------------- 4. raw exceptions become ValidationError


@pytest.mark.parametrize("role", [["user"], {"user": 1}, {"user"}, None, 1])
async def test_unhashable_or_non_str_role_is_rejected(memory: Memory, role: Any) -> None:
    bad = {"id": "z", "thread_id": "t1", "role": role, "content": "x"}
    await rejected(memory, memory.save_messages([Message("ok", "t1", "user", "fine"), bad]), "message 'z'.role")


_CONFIG_CASES: list[tuple[Callable[[], object], str]] = [
    (lambda: MemoryConfig(last_messages=-1), "last_messages"),
    (lambda: MemoryConfig(last_messages=True), "last_messages"),
    (lambda: MemoryConfig(last_messages="10"), "last_messages"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(last_messages=MAX_PER_PAGE + 1), "last_messages"),
    (lambda: MemoryConfig(semantic_recall="yes"), "semantic_recall"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(semantic_recall=None), "semantic_recall"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(semantic_recall={"top": 1}), "semantic_recall.top"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(working_memory=True), "working_memory"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(working_memory={"enabld": True}), "working_memory.enabld"),  # type: ignore[arg-type]
    (lambda: MemoryConfig(generate_title="title"), "generate_title"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(top_k=None), "semantic_recall.top_k"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range=-1), "semantic_recall.message_range"),
    (lambda: SemanticRecall(message_range=2**63), "semantic_recall.message_range"),
    (lambda: SemanticRecall(message_range=1.5), "semantic_recall.message_range"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range=(1, 2, 3)), "semantic_recall.message_range"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range=(1, -2)), "semantic_recall.message_range.after"),
    (lambda: SemanticRecall(message_range={"before": "1"}), "semantic_recall.message_range.before"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(message_range={"befor": 1}), "semantic_recall.message_range.befor"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(scope="global"), "semantic_recall.scope"),  # type: ignore[arg-type]
    (lambda: SemanticRecall(scope=["thread"]), "semantic_recall.scope"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(enabled=1), "working_memory.enabled"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(scope="user"), "working_memory.scope"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(template=5), "working_memory.template"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(schema="object"), "working_memory.schema"),  # type: ignore[arg-type]
    (lambda: WorkingMemory(schema={"type": "nonsense"}), "working_memory.schema"),
    (lambda: WorkingMemory(schema={"x": {1, 2}}), "working_memory.schema['x']"),
]


@pytest.mark.parametrize(("build", "field"), _CONFIG_CASES)
def test_config_fields_are_checked_at_construction(build: Callable[[], object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        build()
    assert info.value.field == field


async def test_bad_thread_config_fields_are_rejected_in_recall(memory: Memory) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"lastMessages": -1}, "last_messages"),
        ({"semanticRecall": "on"}, "semantic_recall"),
        ({"workingMemory": {"scope": "user"}}, "working_memory.scope"),
        ({"generateTitle": 3}, "generate_title"),
        ({"nope": 1}, "thread_config.nope"),
    ]
    for config, field in cases:
        await rejected(memory, memory.recall("t1", "r1", thread_config=config), field)
    with pytest.raises(ValidationError) as info:
        Memory(memory.storage, config={"last_messages": 5})  # type: ignore[arg-type]
    assert info.value.field == "config"


async def test_unknown_or_bad_connect_options_are_rejected(url: str) -> None:
    with pytest.raises(ValidationError) as info:
        await connect(url, bogus=1)
    assert info.value.field == "option 'bogus'"
    with pytest.raises(ValidationError) as info:
        await connect(url, clock="now")
    assert info.value.field == "option 'clock'"


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/missing"},
        {"type": "object", "properties": {"name": {"$ref": "https://example.invalid/schema.json"}}},
    ],
)
async def test_working_memory_schema_with_unresolvable_ref(memory: Memory, schema: dict[str, Any]) -> None:
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True, schema=schema, template="none yet"))
    call = memory.update_working_memory("t1", {"name": "Ada"}, thread_config=config)
    await rejected(memory, call, "working_memory.schema")
    assert await memory.get_working_memory("t1", thread_config=config) == "none yet"
    assert await memory.storage.get_resource("r1") is None


# ---------------------------------------------------------------- 5. R-BUMP at the top of R-TIME


def test_bump_us_saturates_at_the_end_of_r_time() -> None:
    assert bump_us(TIME_MAX_US, TIME_MAX_US) == TIME_MAX_US
    assert bump_us(TIME_MAX_US - 1, 0) == TIME_MAX_US
    assert bump_us(TIME_MAX_US, TIME_MAX_US + 5) == TIME_MAX_US
    assert bump_us(10, 10) == 11 and bump_us(10, 50) == 50


async def test_bumps_and_assigned_times_stay_inside_r_time_on_the_reference_store() -> None:
    clock = ManualClock(TIME_MAX)
    async with Memory(await connect("memory://", clock=clock)) as memory:
        await memory.storage.save_thread(Thread("t1", "r1", created_at=TIME_MAX, updated_at=TIME_MAX))
        updated = await memory.update_thread("t1", title="at the end of time")
        assert updated.updated_at == TIME_MAX
        saved = await memory.save_messages([Message("a", "t1", "user", "one"), Message("b", "t1", "user", "two")])
        assert [m.created_at for m in saved] == [TIME_MAX, TIME_MAX]
        assert [m.id for m in (await memory.list_messages("t1")).items] == ["a", "b"]
        thread = await memory.get_thread("t1")
        assert thread is not None and thread.updated_at == TIME_MAX
        await memory.storage.update_resource("r1", working_memory="x")
        resource = await memory.storage.update_resource("r1", working_memory="y")
        assert resource.updated_at == TIME_MAX
        # Everything stored can be read back and paged (a 2200 value could not).
        page = await memory.list_threads(order_by={"field": "updated_at", "direction": "DESC"}, per_page=1)
        assert [t.id for t in page.items] == ["t1"]
    assert from_us(TIME_MAX_US) == TIME_MAX


# ---------------------------------------------------------------- 6. message_range mappings


def test_message_range_forms() -> None:
    assert SemanticRecall(message_range={"before": 1, "after": 3}).window() == (1, 3)  # type: ignore[arg-type]
    assert SemanticRecall(message_range={"after": 2}).window() == (0, 2)  # type: ignore[arg-type]
    assert SemanticRecall(message_range=[2, 1]).window() == (2, 1)  # type: ignore[arg-type]
    assert SemanticRecall(message_range=4).window() == (4, 4)
    config = MemoryConfig(semantic_recall={"topK": 2, "messageRange": {"before": 1, "after": 2}})  # type: ignore[arg-type]
    semantic = config.semantic()
    assert semantic is not None and (semantic.top_k, semantic.window()) == (2, (1, 2))


async def test_message_range_with_unknown_keys_is_rejected_in_recall(memory: Memory) -> None:
    config = {"semanticRecall": {"messageRange": {"before": 1, "afterr": 2}}}
    await rejected(memory, memory.recall("t1", "r1", thread_config=config), "semantic_recall.message_range.afterr")


# ---------------------------------------------------------------- 7. CLI user errors


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "--storage", "bogus://x", "--vector", "none"], "unknown storage scheme 'bogus'"),
        (["demo", "--storage", "memory://", "--vector", "nope://x"], "unknown vector store scheme 'nope'"),
        (["demo", "--locomo", "/nonexistent/locomo"], "no LoCoMo *.json files"),
        (["demo", "--embedder", "bogus"], "unknown embedder 'bogus'"),
        (["demo", "--storage", "sqlite:///x.db?timeout=soon", "--vector", "none"], "must be a number of seconds"),
        (["demo", "--db", "{tmp}/file.txt/x.db", "--vector", "none"], "file.txt' is not a folder"),
    ],
)
def test_cli_user_errors_are_one_red_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("a file, not a folder")
    result = CliRunner().invoke(app, [arg.replace("{tmp}", str(tmp_path)) for arg in args])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert "Traceback" not in result.output


def test_cli_check_without_the_conformance_package_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both entries: an earlier test may have imported the check module, and
    # a cached submodule would be found behind a hidden parent.
    monkeypatch.setitem(sys.modules, "memory_core_conformance", None)
    monkeypatch.setitem(sys.modules, "memory_core_conformance.check", None)
    monkeypatch.setitem(sys.modules, "memory_core_conformance.cli", None)
    # A fresh app: its `check` entry point now fails to load.
    result = CliRunner().invoke(build_app(), ["check", "memory://"])
    assert result.exit_code == 2
    assert "memory-core-conformance package is not installed" in result.output
    assert "pip install -e ./conformance" in result.output


# ---------------------------------------------------------------- 8. demo output


def test_demo_banner_prints_long_paths_whole() -> None:
    out = io.StringIO()
    vector = "qdrant+path:///" + "/".join(["a-rather-long-folder-name"] * 6) + "/memory-core-demo.vectors"
    print_banner(Console(file=out, width=40), "sqlite:///memory-core-demo.db", vector)
    assert vector in out.getvalue()


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
async def test_demo_marks_the_found_messages() -> None:
    from memory_core import connect_vector

    conversation = load_sample()[0]
    out = io.StringIO()
    console = Console(file=out, width=250)
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True))
    async with Memory(await connect("memory://"), await connect_vector("qdrant::memory:"), config=config) as memory:
        for thread in conversation.threads:
            await memory.storage.save_thread(thread)
        await memory.save_messages(list(conversation.messages))
        await run_session(memory, conversation, console)
    lines = out.getvalue().splitlines()
    include_step = next(i for i, line in enumerate(lines) if line.startswith("5. include window"))
    recall_step = next(i for i, line in enumerate(lines) if line.startswith("8. semantic recall"))
    rank = re.compile(r"^│\s+#(\d+) │")
    target_rows = [line for line in lines[include_step:recall_step] if rank.match(line)]
    assert len(target_rows) == 1 and "'locomo-sample:" in lines[include_step]
    assert target_rows[0].split("│")[3].strip() == lines[include_step].split("'")[1]
    hit_ranks = sorted(int(m.group(1)) for line in lines[recall_step:] if (m := rank.match(line)))
    assert hit_ranks == [1, 2, 3, 4, 5]


@pytest.mark.anyio
@pytest.mark.parametrize("url", ["memory://?x=1", "memory://somewhere", "memory://a/b"])
async def test_memory_url_with_a_path_or_options_is_rejected(url: str) -> None:
    with pytest.raises(ValidationError) as raised:
        await connect(url)
    assert raised.value.field == "url"
