"""Branching an Agents SDK session under timeouts and mistakes: a branch
call with an explicit ``branch_id`` is safe to retry after a timeout (its
write finishes in the background; the retry takes that branch), a taken
``branch_id`` is named in the caller's words, and ``switch_to`` refuses a
session that does not exist (as ``AdvancedSQLiteSession.switch_to_branch``);
a branch is resumed after a restart as the README says, by its id."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, RunContextWrapper, Runner, Usage, set_tracing_disabled
from agents.items import TResponseInputItem
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from memory_core import Memory, ThreadFilter, ValidationError
from memory_core.integrations.openai_agents import MemoryCoreSession

from .conftest import OpenMemory

set_tracing_disabled(True)  # no exporter, no network

pytestmark = pytest.mark.anyio

ALICE = RunContextWrapper({"resource_id": "alice"})
TURNS: list[TResponseInputItem] = [
    {"role": "user", "content": "one"},
    {"role": "assistant", "content": "1"},
    {"role": "user", "content": "two"},
    {"role": "assistant", "content": "2"},
    {"role": "user", "content": "three"},
    {"role": "assistant", "content": "3"},
]


async def _cancelled_after(steps: int, work: asyncio.Future[str]) -> None:
    for _ in range(steps):
        await asyncio.sleep(0)
    work.cancel()
    await asyncio.gather(work, return_exceptions=True)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_timed_out_branch_with_an_explicit_id_is_safe_to_retry(
    open_memory: OpenMemory, anyio_backend: str
) -> None:
    async with open_memory() as memory:
        session = MemoryCoreSession("conv", memory)
        await session.add_items(TURNS, wrapper=ALICE)
        tries = 16
        for steps in range(tries):  # cancelled before, during and after the copy
            await session.switch_to("conv", wrapper=ALICE)
            name = f"edit-{steps}"
            await _cancelled_after(steps, asyncio.ensure_future(session.branch_from_turn(2, name, wrapper=ALICE)))
            await session.switch_to("conv", wrapper=ALICE)
            assert await session.branch_from_turn(2, name, wrapper=ALICE) == name == session.current_session_id(ALICE)
            assert await session.get_items(wrapper=ALICE) == TURNS[:2]
        await session.switch_to("conv", wrapper=ALICE)
        for _ in range(2):  # turn 1: an empty copy, retried
            await session.switch_to("conv", wrapper=ALICE)
            assert await session.branch_from_turn(1, "first", wrapper=ALICE) == "first"
        assert await session.get_items(wrapper=ALICE) == []
        threads = await memory.list_threads(ThreadFilter(resource_id="alice"), per_page=False)
        assert threads.total == tries + 2  # the session, one branch per id, no orphan


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_taken_branch_id_is_named_as_the_caller_gave_it(open_memory: OpenMemory, anyio_backend: str) -> None:
    async with open_memory() as memory:
        session = MemoryCoreSession("conv", memory)
        await session.add_items(TURNS, wrapper=ALICE)
        await session.branch_from_turn(2, "edit-colour", wrapper=ALICE)
        await session.switch_to("conv", wrapper=ALICE)
        for turn in (1, 3):  # the same id for another cut is another branch
            with pytest.raises(ValidationError, match="branch_id: 'edit-colour'") as raised:
                await session.branch_from_turn(turn, "edit-colour", wrapper=ALICE)
            assert "openai-agents:" not in str(raised.value) and session.current_session_id(ALICE) == "conv"
        other = MemoryCoreSession("other", memory)
        await other.add_items(TURNS, wrapper=ALICE)
        with pytest.raises(ValidationError, match="branch_id: 'edit-colour'"):  # a branch of another session
            await other.branch_from_turn(2, "edit-colour", wrapper=ALICE)
        with pytest.raises(ValidationError, match="branch_id: 'other'"):  # a session that is no branch
            await session.branch_from_turn(2, "other", wrapper=ALICE)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_switch_to_refuses_a_session_that_does_not_exist(open_memory: OpenMemory, anyio_backend: str) -> None:
    async with open_memory() as memory:
        session = MemoryCoreSession("conv", memory)
        await session.add_items(TURNS, wrapper=ALICE)
        branch = await session.branch_from_turn(2, wrapper=ALICE)
        with pytest.raises(ValidationError, match="'convv'") as raised:
            await session.switch_to("convv", wrapper=ALICE)
        assert raised.value.field == "session_id" and isinstance(raised.value, ValueError)
        assert session.current_session_id(ALICE) == branch  # unchanged
        bob = RunContextWrapper({"resource_id": "bob"})
        with pytest.raises(ValidationError, match="'conv'"):  # alice's session is not bob's
            await session.switch_to("conv", wrapper=bob)
        await session.switch_to("conv", wrapper=ALICE)
        assert await session.get_items(wrapper=ALICE) == TURNS


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_retried_branch_gets_the_vectors_its_cut_off_first_try_never_wrote(
    open_memory: OpenMemory, anyio_backend: str
) -> None:
    """A first try whose process ended between the copy and its vectors
    (here: the branch's vectors removed) leaves a branch recall cannot
    find; the retry with the same ``branch_id`` takes it and indexes it.
    Before: the retry returned the branch with no vector (trial 24)."""
    async with open_memory() as memory:
        session = MemoryCoreSession("conv", memory)
        await session.add_items(TURNS, wrapper=ALICE)
        await session.branch_from_turn(3, "edit", wrapper=ALICE)
        branch = session.thread_id(ALICE)
        assert memory.vector is not None
        await memory.vector.delete_thread(branch)
        assert not (await memory.check_index(thread_id=branch)).in_step
        await session.switch_to("conv", wrapper=ALICE)
        assert await session.branch_from_turn(3, "edit", wrapper=ALICE) == "edit"
        status = await memory.check_index(thread_id=branch)
        assert status.in_step and status.indexed == 4


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_branch_of_a_deleted_session_is_not_taken_by_its_namesake(
    open_memory: OpenMemory, anyio_backend: str
) -> None:
    """A session cleared and started again under its name is another
    conversation: the old session's branch is not the new one's (its
    lineage names the old one's creation time), so a branch call with that
    ``branch_id`` is refused (a ValueError, as the SDK's), not the old branch taken."""
    async with open_memory() as memory:
        session = MemoryCoreSession("conv", memory)
        await session.add_items(TURNS, wrapper=ALICE)
        await session.branch_from_turn(1, "edit", wrapper=ALICE)  # an empty branch: nothing but lineage tells
        await session.switch_to("conv", wrapper=ALICE)
        await session.clear_session(wrapper=ALICE)
        await session.add_items(TURNS, wrapper=ALICE)
        with pytest.raises(ValidationError, match="branch_id: 'edit'"):
            await session.branch_from_turn(1, "edit", wrapper=ALICE)
        assert await memory.source_thread(session.thread_id(ALICE).replace("conv", "edit"), "alice") is None


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_branch_mistakes_are_value_errors_in_the_callers_words(
    open_memory: OpenMemory, anyio_backend: str
) -> None:
    """As the SDK's ``create_branch_from_turn``, a turn past the end and a
    taken name are ``ValueError``s; a ``branch_id`` naming the session
    itself is refused by that name, before any write (trial 24: it was
    ``new_id: must differ from source_id``, a NotFoundError for the turn)."""
    async with open_memory() as memory:
        session = MemoryCoreSession("conv", memory)
        await session.add_items(TURNS, wrapper=ALICE)
        with pytest.raises(ValueError, match="turn: session 'conv' has 3 user turns, not 4"):
            await session.branch_from_turn(4, wrapper=ALICE)
        with pytest.raises(ValueError, match="branch_id: 'conv' is the session it branches from") as raised:
            await session.branch_from_turn(2, "conv", wrapper=ALICE)
        assert "new_id" not in str(raised.value) and "source_id" not in str(raised.value)
        assert await session.get_items(wrapper=ALICE) == TURNS


async def test_reruns_that_clear_a_named_branch_keep_one_branch(open_memory: OpenMemory, anyio_backend: str) -> None:
    """The README's rerun pattern: without ``branch_id`` every run of a
    "start afresh" script adds a branch (they pile up); clearing the
    conversation and its named branch first keeps exactly one."""
    async with open_memory() as memory:

        async def run(branch_id: str | None) -> None:
            stale = ["conv"] if branch_id is None else ["conv", branch_id]
            for name in stale:
                await MemoryCoreSession(name, memory).clear_session(wrapper=ALICE)
            session = MemoryCoreSession("conv", memory)
            await session.add_items(TURNS, wrapper=ALICE)
            await session.branch_from_turn(2, branch_id, wrapper=ALICE)

        async def sessions() -> int:
            return len((await memory.storage.list_threads(ThreadFilter(resource_id="alice"), per_page=100)).items)

        for _ in range(2):
            await run(None)
        assert await sessions() == 3  # conv and a branch per run
        await memory.delete_resource("alice")  # the piled-up ones, for a throwaway user
        for _ in range(3):
            await run("conv.edit")
        assert await sessions() == 2  # conv and its one branch


class UserTurns(Model):
    """Answers with the user turns it was given, joined: which conversation
    the run loaded, read off its reply (no network)."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        items: list[Any] = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
        text = " | ".join(str(item["content"]) for item in items if item.get("role") == "user")
        part = ResponseOutputText(type="output_text", text=text, annotations=[])
        reply = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[part])
        return ModelResponse(output=[reply], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_branch_is_resumed_after_a_restart_by_its_id(tmp_path: Path, anyio_backend: str) -> None:
    """Which session an owner is on lives in the session object (as the
    SDK's ``AdvancedSQLiteSession`` keeps its current branch): a session
    built again after a restart is on ``session_id``. The README's two ways
    back onto the branch, with the id the app kept, work over a store closed
    and opened again: build the session with the branch's id, or build it
    as before and ``switch_to`` the branch."""
    url = f"sqlite:///{tmp_path / 'agents.db'}"
    agent = Agent(name="assistant", model=UserTurns())
    context = {"resource_id": "alice"}
    wrapper = RunContextWrapper(context)
    async with await Memory.open(url) as memory:
        session = MemoryCoreSession("chat", memory)
        for said in ("one", "two"):
            await Runner.run(agent, said, session=session, context=context)
        await session.branch_from_turn(2, "chat.edit", wrapper=wrapper)
        edited = await Runner.run(agent, "two, edited", session=session, context=context)
        assert edited.final_output == "one | two, edited"
        kept = session.current_session_id(wrapper)  # what the app stores to resume on the branch
    assert kept == "chat.edit"

    async with await Memory.open(url) as memory:  # the restart
        again = MemoryCoreSession("chat", memory)
        assert again.current_session_id(wrapper) == "chat"  # the switch was not kept
        resumed = MemoryCoreSession(kept, memory)  # way 1: the session opened with the branch's id
        third = await Runner.run(agent, "three", session=resumed, context=context)
        assert third.final_output == "one | two, edited | three"
        await again.switch_to(kept, wrapper=wrapper)  # way 2: the session as before, switched to the branch
        fourth = await Runner.run(agent, "four", session=again, context=context)
        assert fourth.final_output == "one | two, edited | three | four"
        assert again.session_id == "chat"
        await again.switch_to("chat", wrapper=wrapper)  # and back: the original, unchanged
        back = await Runner.run(agent, "five", session=again, context=context)
        assert back.final_output == "one | two | five"
