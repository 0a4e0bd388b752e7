"""Long scripts (a copy, a delete, an erasure whose work grows with the data)
are not cut by the client's ``socket_timeout``, and a server that died or
stopped answering during one is still detected (``memory_core_redis._patient``)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator

import pytest
from memory_core import lineage
from memory_core.errors import BackendError
from memory_core.models import Message, Thread

from memory_core_redis import RedisStorage, _patient
from memory_core_redis.testing import Server, start_standalone

from .conftest import new_namespace

pytestmark = pytest.mark.anyio

SIZE = 10_000
"""Messages in the source thread: a copy that takes a valkey server tens of
milliseconds at least."""


async def _long_thread(url: str, prefix: str) -> float:
    """Save a SIZE-message thread ``src`` under ``prefix``; return the seconds
    one whole-thread clone of it takes with the default timeout (the clone
    is deleted again)."""
    store = RedisStorage(url, prefix=prefix)
    try:
        await store.save_thread(Thread("src", "r"))
        for start in range(0, SIZE, 1000):
            await store.save_messages(
                [Message(f"m{i:06d}", "src", "user", f"message {i} " + "x" * 100) for i in range(start, start + 1000)]
            )
        began = time.perf_counter()
        await lineage.clone_thread(store, "src", "probe")
        took = time.perf_counter() - began
        await store.delete_thread("probe")
        return took
    finally:
        await store.close()


async def test_a_copy_longer_than_the_socket_timeout_completes(redis_target: str) -> None:
    prefix = new_namespace()
    took = await _long_thread(redis_target, prefix)
    timeout = took / 10
    store = RedisStorage(redis_target, prefix=prefix, socket_timeout=timeout)
    try:
        began = time.perf_counter()
        made = await lineage.clone_thread(store, "src", "copy")
        assert time.perf_counter() - began > timeout  # the copy did outlast the timeout
        assert len(made.message_ids) == SIZE
        assert (await store.list_messages("copy", per_page=1)).total == SIZE
        await store.delete_thread("copy")  # a long delete, under the same timeout
        assert await store.get_thread("copy") is None
        await store.destroy()
    finally:
        await store.close()


@pytest.fixture
def own_server() -> Iterator[Server]:
    """A standalone valkey-server of the test's own, to kill or stop."""
    server = start_standalone()
    try:
        yield server
    finally:
        os.kill(server.pid, signal.SIGCONT)
        server.stop()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP])
async def test_a_server_lost_during_a_long_copy_is_detected(
    own_server: Server, sig: signal.Signals, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SIGKILL: the connection closes; SIGSTOP: the server answers nothing
    # (no probe answered within socket_timeout + BUSY_GRACE, shortened here).
    monkeypatch.setattr(_patient, "BUSY_GRACE", 0.5)
    prefix = new_namespace()
    took = await _long_thread(own_server.url, prefix)
    store = RedisStorage(own_server.url, prefix=prefix, socket_timeout=0.5)
    try:
        await store.open()
        for _ in range(5):  # the copy's time varies with the machine's load: catch one under way
            clone = asyncio.ensure_future(lineage.clone_thread(store, "src", "copy"))
            await asyncio.sleep(min(took / 10, 0.02))
            if not clone.done():
                break
            await store.delete_thread("copy")
        assert not clone.done(), "five copies ended before the server could be lost"
        os.kill(own_server.pid, sig)
        with pytest.raises(BackendError):
            await asyncio.wait_for(clone, 60)
    finally:
        await store.close()
