"""MongoDB under cancellation and a silent server (issue 25): every call is
bounded (``timeoutMS`` by default), a cancelled transaction is aborted and
its session ended, so nothing is left holding locks, and a cancelled write
has happened or not by the time its caller gets ``CancelledError``."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import pytest
from memory_core_conformance.cancellation import cancel_at, count_suspensions
from memory_core_mongodb import MongoStorage
from memory_core_mongodb import storage as mongo_storage
from memory_core_mongodb.testing import unique_namespace
from pymongo import AsyncMongoClient, monitoring

from memory_core import Memory
from memory_core.errors import BackendError
from memory_core.models import Message, Thread

pytestmark = pytest.mark.anyio


class StallingProxy:
    """A loopback TCP proxy to ``target`` that drops the client's bytes
    while :attr:`flowing` is clear (a server that stops answering)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"mongodb://127.0.0.1:{port}/?directConnection=true"

    async def __aexit__(self, *exc: object) -> None:
        for task in self.tasks:
            task.cancel()
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        for pump in (self._pump(reader, up_writer, True), self._pump(up_reader, writer, False)):
            task = asyncio.create_task(pump)
            self.tasks.add(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream: bool) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                if upstream and not self.flowing.is_set():
                    continue  # lost on the way: the server never hears of it
                writer.write(data)
                await writer.drain()
        writer.close()


@pytest.fixture
async def proxy(mongodb_url: str) -> AsyncIterator[tuple[StallingProxy, str]]:
    parts = urlsplit(mongodb_url.split(",")[0])
    stalling = StallingProxy(parts.hostname or "127.0.0.1", parts.port or 27017)
    async with stalling as url:
        yield stalling, url


async def _seeded(url: str, namespace: str | None = None, **options: Any) -> MongoStorage:
    namespace = namespace or unique_namespace()
    store = MongoStorage.from_url(url, namespace=namespace, serverSelectionTimeoutMS=10_000, **options)
    await store.open()
    await store.save_thread(Thread("t1", "r1"))
    await store.save_messages([Message(f"m{i}", "t1", "user", f"text {i}", "r1") for i in range(3)])
    return store


async def _end(stalling: StallingProxy, store: MongoStorage, mongodb_url: str, namespace: str) -> None:
    """Let the proxy flow, close ``store`` and destroy its namespace directly."""
    stalling.flowing.set()
    await store.close()
    direct = MongoStorage.from_url(mongodb_url, namespace=namespace)
    await direct.open()
    await direct.destroy()


async def test_a_call_the_server_never_answers_fails_within_the_default_bound(
    proxy: tuple[StallingProxy, str], mongodb_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: no bound unless the user set one; delete_thread waited
    forever (and with only ``timeoutMS``, 120 s: each new connection's
    handshake unbounded or PyMongo's with_transaction retrying)."""
    monkeypatch.setattr(mongo_storage, "TIMEOUT_MS", 1500, raising=False)
    stalling, url = proxy
    namespace = unique_namespace()
    store = await _seeded(url, namespace)
    try:
        stalling.flowing.clear()
        with pytest.raises(BackendError) as caught:
            await asyncio.wait_for(store.delete_thread("t1"), 30)
        assert caught.value.retryable
    finally:
        await _end(stalling, store, mongodb_url, namespace)


async def test_a_given_bound_is_kept(proxy: tuple[StallingProxy, str]) -> None:
    _, url = proxy
    store = MongoStorage.from_url(url + "&timeoutMS=0", namespace=unique_namespace())
    assert "timeoutMS" not in store._client_options
    assert MongoStorage.from_url(url)._client_options["timeoutMS"] == mongo_storage.TIMEOUT_MS


async def test_delete_thread_cancelled_at_every_await_leaves_no_open_transaction(
    mongodb_url: str, raw_client: AsyncMongoClient[dict[str, Any]]
) -> None:
    """After each cancelled delete_thread the thread's documents take a
    plain write at once (no transaction left holding them), and the store
    is either before or after."""
    probe = await _seeded(mongodb_url)
    points, _ = await count_suspensions(probe.delete_thread("t1"))
    await probe.destroy()
    assert points >= 1  # a cancelled write waits for its transaction: one point, the wait
    for k in range(1, points + 1):
        store = await _seeded(mongodb_url)
        try:
            await cancel_at(store.delete_thread("t1"), k)
            db = raw_client.get_database(store.database_name)
            for name in await db.list_collection_names():
                await asyncio.wait_for(db[name].update_many({}, {"$set": {"probe": 1}}), 10)
            left = len((await store.list_messages("t1", per_page=False)).items) if await store.get_thread("t1") else 0
            assert left in (0, 3)
        finally:
            await store.destroy()


class _StallAtCommit(monitoring.CommandListener):
    """Once :attr:`armed`, stops the proxy's flow as the next
    ``commitTransaction`` starts: that commit is sent but never reaches the
    server."""

    def __init__(self, stalling: StallingProxy) -> None:
        self.stalling = stalling
        self.armed = False
        self.committing = asyncio.Event()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.armed and event.command_name == "commitTransaction":
            self.armed = False
            self.stalling.flowing.clear()
            self.committing.set()

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


async def test_a_commit_lost_on_the_way_leaves_no_transaction_open(
    proxy: tuple[StallingProxy, str],
    mongodb_url: str,
    raw_client: AsyncMongoClient[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before (seen in CI under load): PyMongo marks a transaction committed
    when its commit starts, so a call whose commit never reached the server
    (cancelled, or timed out) ended its session without an abort, and the
    transaction held its documents until the server expired it (60 s): the
    next plain write timed out. Now the cancelled call waits for its
    transaction, and a failed commit is sent again: the delete happened."""
    monkeypatch.setattr(mongo_storage, "TIMEOUT_MS", 1500, raising=False)
    stalling, url = proxy
    namespace = unique_namespace()
    listener = _StallAtCommit(stalling)
    store = await _seeded(url, namespace, event_listeners=[listener])
    try:
        listener.armed = True
        deleting = asyncio.ensure_future(store.delete_thread("t1"))
        await asyncio.wait_for(listener.committing.wait(), 30)
        await asyncio.sleep(0.2)  # the commit is on the wire, lost by the proxy
        deleting.cancel()
        stalling.flowing.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(deleting, 30)
        db = raw_client.get_database(store.database_name)
        for name in await db.list_collection_names():
            await asyncio.wait_for(db[name].update_many({}, {"$set": {"probe": 1}}), 10)
        assert await store.get_thread("t1") is None
    finally:
        await _end(stalling, store, mongodb_url, namespace)


class _Started(monitoring.CommandListener):
    """Sets :attr:`sent` as the first command named ``name`` starts."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sent = asyncio.Event()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name == self.name:
            self.sent.set()

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


BLOCK_MS = 1000
"""How long the server holds the write it has read before applying it."""


class _LateWrite(NamedTuple):
    """A write whose command the server holds, and what it leaves."""

    command: str
    """The command the server holds (the fail point's)."""
    operation: Callable[[Memory], Awaitable[object]]
    written: tuple[str, str] | None
    """The view of thread ``late`` once the write has happened."""
    seeded: bool = True
    """Thread ``late`` exists before the write (``r1``, titled ``old``)."""
    transactions: bool | None = None


_LATE_WRITES = {
    "get_or_create_thread": _LateWrite(
        "insert", lambda memory: memory.get_or_create_thread("r1", "late", title="new"), ("r1", "new"), False
    ),
    "create_thread": _LateWrite(
        "insert", lambda memory: memory.create_thread("r1", "late", title="new"), ("r1", "new"), False
    ),
    "update_thread": _LateWrite(
        "findAndModify", lambda memory: memory.update_thread("late", title="new"), ("r1", "new")
    ),
    # the ordered plan of a store without transactions (_atomic's other
    # branch); the storage's own call: Memory's would finish it in its outbox
    "delete_thread without transactions": _LateWrite(
        "delete", lambda memory: memory.storage.delete_thread("late"), None, transactions=False
    ),
}


@pytest.mark.parametrize("write", sorted(_LATE_WRITES))
async def test_a_write_cancelled_in_flight_is_settled_when_the_caller_hears_of_it(
    write: str, mongodb_url: str, raw_client: AsyncMongoClient[dict[str, Any]]
) -> None:
    """Before (the seeded cancellation trials, 7 in 1000): a single-document
    write cancelled once sent raised ``CancelledError`` at once, PyMongo
    closed its connection, and the server applied the command later: the
    next read found the thread absent (or unchanged), a later one found it
    written. Now the caller waits for the command's outcome first: the read
    right after the cancellation already sees what a later one sees."""
    command, operation, written, seeded, transactions = _LATE_WRITES[write]
    namespace = unique_namespace()
    listener = _Started(command)
    store = MongoStorage.from_url(
        mongodb_url,
        namespace=namespace,
        serverSelectionTimeoutMS=10_000,
        appname=f"late-{namespace}",
        event_listeners=[listener],
        transactions=transactions,
    )
    memory = Memory(store)
    admin = raw_client.admin

    async def view() -> tuple[str, str] | None:
        thread = await store.get_thread("late")
        return None if thread is None else (thread.resource_id, thread.title)

    try:
        if seeded:
            await memory.create_thread("r1", "late", title="old")
        else:
            await store.open()
        await admin.command(
            "configureFailPoint",
            "failCommand",
            mode={"times": 1},
            data={
                "failCommands": [command],
                "blockConnection": True,
                "blockTimeMS": BLOCK_MS,
                "appName": f"late-{namespace}",
            },
        )
        writing = asyncio.ensure_future(operation(memory))
        await asyncio.wait_for(listener.sent.wait(), 30)
        await asyncio.sleep(0.2)  # the command is on the server, held by the fail point
        writing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(writing, 30)
        right_after = await view()
        await asyncio.sleep(BLOCK_MS / 1000 + 0.5)
        assert right_after == await view() == written
    finally:
        await admin.command("configureFailPoint", "failCommand", mode="off")
        await store.destroy()
