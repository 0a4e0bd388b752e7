"""Careless input gets the fix in its error (issue 26, a fresh user's
re-probe): a file path where a URL goes names that path's URL; an
awaitable call of ours entered with ``async with`` or read without
``await`` names the right form; one item, a str or a mapping where a list
goes says "pass a list" with the list's shape, before anything is written.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest

import memory_core
from memory_core import AwaitError, BarePathError, Memory, NotAListError, ValidationError
from memory_core.chat import from_openai_chat
from memory_core.embedders import get_embedder
from tests.cli_run import cli

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------- a path for a URL


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("memory.db", "sqlite:///memory.db"),
        ("data/memory.db", "sqlite:///data/memory.db"),
        ("/srv/app/memory.db", "sqlite:////srv/app/memory.db"),
        ("C:\\data\\memory.db", "sqlite:///C:\\data\\memory.db"),
    ],
)
async def test_connect_to_a_path_names_its_sqlite_url(path: str, url: str) -> None:
    with pytest.raises(BarePathError) as caught:
        await memory_core.connect(path)
    assert caught.value.field == "url" and caught.value.url_example == url
    assert f"the URL of that path is {url}" in str(caught.value)


async def test_a_vector_path_names_its_qdrant_folder_url() -> None:
    with pytest.raises(BarePathError, match=r"qdrant\+path:///memory\.vectors"):
        await memory_core.connect_vector("memory.vectors")


async def test_memory_open_names_the_argument_and_keeps_the_type(tmp_path: Path) -> None:
    made = tmp_path / "m.db"
    with pytest.raises(BarePathError) as caught:
        await Memory.open("memory.db")
    assert caught.value.field == "storage" and caught.value.url_example == "sqlite:///memory.db"
    with pytest.raises(BarePathError) as caught:
        await Memory.open(f"sqlite:///{made}", vector="/srv/m.vectors")
    assert caught.value.field == "vector" and caught.value.url_example == "qdrant+path:////srv/m.vectors"
    assert not made.exists()


@pytest.mark.parametrize("command", [["demo", "--storage"], ["export"]])
def test_the_command_line_names_the_url_of_a_path(command: list[str], tmp_path: Path) -> None:
    done = cli(*command, "memory.db", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "'memory.db' is a file path, not a URL; the URL of that path is sqlite:///memory.db" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- await and async with


@pytest.mark.parametrize(
    ("call", "form"),
    [
        (lambda: Memory.open("memory://"), "async with await Memory.open(url, ...) as memory:"),
        (lambda: memory_core.connect("memory://"), "async with await memory_core.connect(url) as storage:"),
        (
            lambda: memory_core.connect_vector("memory://"),
            "async with await memory_core.connect_vector(url) as vectors:",
        ),
    ],
    ids=["Memory.open", "connect", "connect_vector"],
)
async def test_async_with_on_an_awaitable_call_names_the_form(call: Any, form: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the wrapped coroutine is closed: no "never awaited"
        with pytest.raises(AwaitError, match="is awaited, not entered with `async with`") as caught:
            async with call():
                pass
    assert form in str(caught.value)
    assert isinstance(caught.value, TypeError)


async def test_a_missing_await_names_the_form_on_first_use() -> None:
    opening = memory_core.connect("memory://")
    with pytest.raises(AwaitError, match=r"has no 'save_thread' until awaited; write `storage = await"):
        opening.save_thread  # noqa: B018 - the attribute read is the misuse
    assert not hasattr(opening, "list_threads")  # getattr/hasattr keep their meaning
    storage = await opening  # still the opening coroutine, awaited later
    async with storage:
        assert (await storage.list_resource_ids()).items == []


def test_the_awaitable_runs_as_a_coroutine() -> None:
    """``asyncio.run``, ``create_task`` and ``gather`` take it as before."""
    storage = asyncio.run(memory_core.connect("memory://"))
    assert type(storage).__name__ == "InMemoryStorage"

    async def both() -> list[Any]:
        return list(
            await asyncio.gather(memory_core.connect("memory://"), asyncio.create_task(Memory.open("memory://")))
        )

    stores = asyncio.run(both())
    assert [type(s).__name__ for s in stores] == ["InMemoryStorage", "Memory"]


# ---------------------------------------------------------------- one item for a list


@pytest.fixture
async def memory() -> Any:
    async with await Memory.open("memory://") as memory:
        yield memory


async def _count(memory: Memory, thread_id: str) -> int:
    page = await memory.list_messages(thread_id)
    return page.total or 0


@pytest.mark.parametrize(
    ("turns", "got", "shape"),
    [
        (("user", "hi"), "one (role, content) pair", "[('user', 'hi')]"),
        (["user", "hi"], "one (role, content) pair", "[('user', 'hi')]"),
        ({"role": "user", "content": "hi"}, "one turn (a mapping)", "[{'content': 'hi', 'role': 'user'}]"),
        ("hi", "a str (taken as a list, it would be its characters)", '[("user", "hello")'),
    ],
    ids=["pair", "pair-as-list", "mapping", "str"],
)
async def test_append_messages_of_one_turn_says_pass_a_list(memory: Memory, turns: Any, got: str, shape: str) -> None:
    thread, _ = await memory.get_or_create_thread("u1", "t1")
    with pytest.raises(NotAListError) as caught:
        await memory.append_messages(thread.id, turns)
    message = str(caught.value)
    assert caught.value.field == "turns" and f"got {got}; pass a list: {shape}" in message, message
    assert await _count(memory, thread.id) == 0


async def test_a_list_of_str_turns_shows_a_pair(memory: Memory) -> None:
    thread, _ = await memory.get_or_create_thread("u1", "t1")
    with pytest.raises(ValidationError, match=r"turns\[0\]: .* got str; e\.g\. \(\"user\", 'hello'\)"):
        await memory.append_messages(thread.id, ["hello", "world"])  # type: ignore[list-item]
    assert await _count(memory, thread.id) == 0


async def test_every_list_write_and_read_refuses_one_item(memory: Memory) -> None:
    """The same refusal wherever a list goes: saves, updates, deletes,
    reads by id, includes, clones, embedders, chat formats."""
    thread, _ = await memory.get_or_create_thread("u1", "t1")
    [saved] = await memory.append_messages(thread.id, [("user", "hello")])
    calls: dict[str, Any] = {
        "messages": lambda: memory.save_messages(saved),  # type: ignore[arg-type]
        "updates": lambda: memory.update_messages({"id": saved.id, "content": "changed"}),  # type: ignore[arg-type]
        "ids": lambda: memory.delete_messages(saved.id),
        "include": lambda: memory.list_messages(thread.id, include={"id": saved.id}),  # type: ignore[arg-type]
        "message_ids": lambda: memory.clone_thread(thread.id, message_ids=saved.id),
        "texts": lambda: get_embedder("lexical").embed("hello"),
    }
    for field, call in calls.items():
        with pytest.raises(NotAListError, match="pass a list: ") as caught:
            await call()
        assert caught.value.field == field, caught.value
    with pytest.raises(NotAListError, match="got one mapping"):
        from_openai_chat({"role": "user", "content": "x"}, thread.id)  # type: ignore[arg-type]
    assert [m.content for m in (await memory.list_messages(thread.id)).items] == ["hello"]
