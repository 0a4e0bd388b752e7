"""The history-length axis: what a long-running agent has, ONE long thread.

``memory-core bench --history-lengths 100,1000,10000,100000`` runs this
family instead of the store-size workloads: for each length L and each
storage target, one thread of L messages in a resource of its own is loaded
(bulk saves of :data:`LOAD_BATCH`), then timed as the store-size run times
its workloads (same interleaving, medians, repeats, JSON and Markdown; a
result's ``size`` is the thread's length, ``meta["axis"]`` is
``"history"``):

===========================  ====================================================
``thread_newest``            newest 20 of the thread, ownership checked (recall)
``thread_cursor_walk``       one page of 20 of a walk back from the newest
                             message by ``next_cursor`` (wraps at the oldest)
``thread_include_middle``    newest 20 + 5 include targets ±2 spread over the
                             middle of the thread
``thread_semantic``          recall with semantic recall on: newest 20 + top 4
                             ±2 by vector search over the resource (that one
                             long history); needs a ``--vector`` store
``thread_agent_loop``        one agent turn: newest 20, then append 2
===========================  ====================================================

The swap section runs the same item sequence (the thread's messages as
user/assistant items) through each framework's own store and ours, loaded
through each store's own bulk path:

===========================  ====================================================
``swap_get_items``           OpenAI Agents ``get_items(limit=20)``: the SDK's
                             ``SQLiteSession`` (a file), its ``SQLAlchemySession``
                             on the same PostgreSQL (PostgreSQL targets), and
                             ``MemoryCoreSession`` on the target
``swap_agent_loop``          the same sessions: ``get_items(limit=20)``, then
                             ``add_items`` of a user and an assistant item
``swap_get_session``         ADK ``get_session(config=GetSessionConfig(
                             num_recent_events=20))``: ``DatabaseSessionService``
                             on SQLite (and on the same PostgreSQL for
                             PostgreSQL targets) and ``MemoryCoreSessionService``
``swap_append_event``        the same services: ``append_event`` of one event
===========================  ====================================================

Writes must not lengthen the thread they measure: after every timed write
op, untimed, the workload removes what it appended (``settle``), so every
op sees a thread of exactly L. Peers' first answers are compared with
memory-core's (``verified``): every store holds the same sequence.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from memory_core.embedders import LexicalHashEmbedder
from memory_core.memory import Memory, MemoryConfig, SemanticRecall
from memory_core.models import Message, OrderBy

from memory_core_bench.dataset import BASE_TIME_US, BenchMessage, Dataset, ThreadSpec
from memory_core_bench.report import ADK_DATABASE, OPENAI_SESSION, OPENAI_SQLALCHEMY, BenchReport, PopulateRecord
from memory_core_bench.runner import (
    BenchConfig,
    ProgressSink,
    StorageTarget,
    _checkpoint,
    _Entry,
    _failed,
    _failed_target,
    _measure_group,
    _Phase,
    _report,
    _result,
)
from memory_core_bench.subjects import AdapterSubject, AdapterVectorSubject, Answer, Kind, remove_sqlite_files
from memory_core_bench.workloads import INCLUDE_RANGE, INCLUDE_TARGETS, PER_PAGE

__all__ = [
    "ADK_DATABASE",
    "ADK_OURS",
    "DEFAULT_HISTORY_LENGTHS",
    "HISTORY_WORKLOADS",
    "LOAD_BATCH",
    "OPENAI_OURS",
    "OPENAI_SQLALCHEMY",
    "SWAP_WORKLOADS",
    "THREAD_WORKLOADS",
    "history_steps",
    "long_thread",
    "run_history",
]

DEFAULT_HISTORY_LENGTHS = (100, 1_000, 10_000, 100_000)
"""Thread lengths (messages) of the full history-length run."""

LOAD_BATCH = 1_000
"""Messages (items, events) per bulk save when a long thread is loaded."""

SEMANTIC_QUERIES = 64
"""Distinct query texts ``thread_semantic`` cycles through."""

OPENAI_OURS = "MemoryCoreSession"
ADK_OURS = "MemoryCoreSessionService"
_APP = "bench"
_USER = "user-1"
_LAST_WRITE_US = BASE_TIME_US + 399 * 86_400_000_000
"""The long thread ends before this (write streams start a day later)."""


def long_thread(length: int) -> ThreadSpec:
    """The one thread of ``length`` messages (its own resource), timed so
    that its newest message is older than anything a write stream appends."""
    return ThreadSpec(
        index=1_000_000 + length,
        id=f"history-{length}",
        resource_id=f"history-user-{length}",
        title=f"one long conversation of {length:,} messages",
        metadata={"channel": "api", "topic": "code", "archived": False},
        created_at_us=_LAST_WRITE_US - length * 600_000_000,  # a gap is at most 600 s
        size=length,
    )


def _batches(items: Iterator[BenchMessage], size: int = LOAD_BATCH) -> Iterator[list[BenchMessage]]:
    batch: list[BenchMessage] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _ids_at(dataset: Dataset, spec: ThreadSpec, positions: Sequence[int]) -> list[str]:
    wanted = set(positions)
    found = {k: m.id for k, m in enumerate(dataset.iter_thread_messages(spec)) if k in wanted}
    return [found[k] for k in positions]


# ---------------------------------------------------------------------- memory-core on the long thread


class ThreadWorkload(ABC):
    """One timed call on the long thread through memory-core (see the
    module docstring for each one). Satisfies the runner's workload shape:
    ``setup``, ``args``, ``run`` (timed), ``settle`` (untimed)."""

    name: ClassVar[str]
    title: ClassVar[str]
    items_per_op: ClassVar[int] = 0
    needs_vectors: ClassVar[bool] = False
    concurrency: int = 1

    def __init__(self, dataset: Dataset, subject: AdapterSubject, thread: ThreadSpec, semantic: Memory | None) -> None:
        self.dataset = dataset
        self.subject = subject
        self.thread = thread
        self.semantic = semantic
        self.params: dict[str, Any] = {"per_page": PER_PAGE, "thread_length": thread.size}

    async def setup(self) -> None:
        """Untimed preparation (default: nothing)."""

    def args(self, i: int) -> Any:
        """Untimed per-op arguments (default: ``i``)."""
        return i

    @abstractmethod
    async def run(self, args: Any) -> Answer | None:
        """The timed call."""

    async def settle(self, args: Any) -> None:
        """Untimed, after each op: undo its writes (default: nothing)."""

    def written_thread(self) -> ThreadSpec | None:
        """None: no raw driver compares writes here."""
        return None


class ThreadNewest(ThreadWorkload):
    """``Memory.recall(thread, resource, per_page=20)``."""

    name = "thread_newest"
    title = "newest 20 of one long thread"

    async def run(self, args: Any) -> Answer:
        return await self.subject.recall_newest(self.thread, PER_PAGE)


class ThreadCursorWalk(ThreadWorkload):
    """One page of a newest-first cursor walk (``list_messages(order_by=
    created_at DESC, cursor=previous next_cursor)``); back at the newest
    page after the oldest."""

    name = "thread_cursor_walk"
    title = "cursor walk back, 20 a page"

    async def setup(self) -> None:
        self.cursor: str | None = None
        self.order = OrderBy("created_at", "DESC")

    async def run(self, args: Any) -> Answer:
        page = await self.subject.storage.list_messages(
            self.thread.id, per_page=PER_PAGE, order_by=self.order, cursor=self.cursor
        )
        self.cursor = page.next_cursor
        return Answer(page.total, tuple(m.id for m in page.items))

    async def settle(self, args: Any) -> None:
        """Record how deep the walk went (messages from the newest)."""
        self.params["pages_walked"] = self.params.get("pages_walked", 0) + 1


class ThreadIncludeMiddle(ThreadWorkload):
    """Newest 20 plus 5 include targets ±2 at 1/6 ... 5/6 of the thread."""

    name = "thread_include_middle"
    title = "newest 20 + 5 includes ±2 in the middle"

    async def setup(self) -> None:
        size = self.thread.size
        positions = [min(size - 1, size * (k + 1) // (INCLUDE_TARGETS + 1)) for k in range(INCLUDE_TARGETS)]
        self.targets = _ids_at(self.dataset, self.thread, positions)
        self.params |= {"targets": INCLUDE_TARGETS, "range": INCLUDE_RANGE, "positions": positions}

    async def run(self, args: Any) -> Answer:
        return await self.subject.include_windows(self.thread, self.targets, INCLUDE_RANGE, INCLUDE_RANGE, PER_PAGE)


class ThreadSemantic(ThreadWorkload):
    """``Memory.recall(thread, resource, vector_search_string=q, per_page=20)``
    with semantic recall on (top 4 ±2, resource scope: the whole history)."""

    name = "thread_semantic"
    title = "recall + semantic top 4 over the resource"
    needs_vectors = True

    async def setup(self) -> None:
        rng = random.Random(self.dataset.seed ^ 0x5E)
        self.queries = [self.dataset.content(rng)[:120] for _ in range(SEMANTIC_QUERIES)]
        semantic = SemanticRecall()
        self.params |= {"top_k": semantic.top_k, "message_range": semantic.message_range, "scope": semantic.scope}

    def args(self, i: int) -> str:
        return self.queries[i % len(self.queries)]

    async def run(self, args: str) -> Answer:
        if self.semantic is None:  # the runner skips this workload without a vector store
            raise RuntimeError(f"{self.name} needs a Memory with a vector store")
        result = await self.semantic.recall(
            self.thread.id, resource_id=self.thread.resource_id, vector_search_string=args, per_page=PER_PAGE
        )
        return Answer(result.total, tuple(m.id for m in result.messages))


class ThreadAgentLoop(ThreadWorkload):
    """One turn: newest 20, then save the user's and the assistant's message
    (removed again, untimed, so the thread keeps its length)."""

    name = "thread_agent_loop"
    title = "agent loop: newest 20, append 2"
    items_per_op = 2

    async def setup(self) -> None:
        self.stream = self.dataset.writer(f"{self.name}-{self.thread.size}")

    def args(self, i: int) -> list[Message]:
        return self.subject.prepare(self.stream.messages(self.thread, 2))

    async def run(self, args: list[Message]) -> Answer:
        answer = await self.subject.recall_newest(self.thread, PER_PAGE)
        await self.subject.save(args)
        return answer

    async def settle(self, args: list[Message]) -> None:
        await self.subject.memory.delete_messages([m.id for m in args])


THREAD_WORKLOADS: tuple[type[ThreadWorkload], ...] = (
    ThreadNewest,
    ThreadCursorWalk,
    ThreadIncludeMiddle,
    ThreadSemantic,
    ThreadAgentLoop,
)


# ---------------------------------------------------------------------- the swap section: sessions


class SessionSubject(ABC):
    """One framework session store holding the long thread as items.

    Attributes:
        family: ``"openai"`` (an Agents SDK ``Session``) or ``"adk"`` (an ADK
            session service).
        label / kind: display name; ``"adapter"`` for memory-core's, else
            ``"peer"``.
    """

    family: ClassVar[str]
    label: str
    kind: Kind

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id

    @abstractmethod
    async def open(self) -> None:
        """Connect and create the (empty) session."""

    @abstractmethod
    async def close(self) -> None:
        """Delete what was created and disconnect."""

    @abstractmethod
    async def load(self, batch: Sequence[BenchMessage]) -> None:
        """Append one batch of the thread through the store's bulk path."""

    @abstractmethod
    async def newest(self, n: int) -> Answer:
        """The newest ``n`` items (oldest first) through the framework's API."""

    @abstractmethod
    async def append(self, message: BenchMessage) -> None:
        """Append one turn's worth (see the subclasses)."""

    @abstractmethod
    async def undo(self) -> None:
        """Remove what the last :meth:`append` added (untimed)."""

    async def ready(self) -> None:
        """Before timed appends: load the session as an agent would
        (default: nothing)."""


def _item(m: BenchMessage) -> dict[str, Any]:
    return {"role": m.role, "content": m.content}


def _text_key(text: str) -> str:
    return text[:40]


class AgentsSessionSubject(SessionSubject):
    """An OpenAI Agents SDK ``Session``; :meth:`append` adds a user and an
    assistant item in one ``add_items``."""

    family = "openai"
    _session: Any

    async def load(self, batch: Sequence[BenchMessage]) -> None:
        """One ``add_items`` of the batch."""
        await self.session.add_items([_item(m) for m in batch])

    async def newest(self, n: int) -> Answer:
        """``get_items(limit=n)``."""
        items = await self.session.get_items(limit=n)
        return Answer(-1, tuple(_text_key(str(item.get("content"))) for item in items))

    async def append(self, message: BenchMessage) -> None:
        """``add_items([user, assistant])``."""
        question = {"role": "user", "content": message.content}
        answer = {"role": "assistant", "content": message.content[::-1]}
        await self.session.add_items([question, answer])

    async def undo(self) -> None:
        """``pop_item()`` twice."""
        await self.session.pop_item()
        await self.session.pop_item()

    @property
    def session(self) -> Any:
        """The SDK session (after :meth:`open`)."""
        return self._session


class SQLiteSessionSubject(AgentsSessionSubject):
    """The SDK's ``SQLiteSession`` in a file of its own."""

    label = OPENAI_SESSION
    kind: Kind = "peer"

    def __init__(self, session_id: str, path: Path) -> None:
        super().__init__(session_id)
        self.path = path

    async def open(self) -> None:
        """Create the session (file created on first write)."""
        from agents import SQLiteSession

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._session = SQLiteSession(self.session_id, self.path)

    async def close(self) -> None:
        """Close and delete the file."""
        self._session.close()
        remove_sqlite_files(self.path)


def _sqlalchemy_url(url: str) -> str:
    """``postgresql://user@host:port/db?opts`` -> ``postgresql+asyncpg://user@host:port/db``."""
    parts = urlsplit(url)
    return f"postgresql+asyncpg://{parts.netloc}{parts.path}"


async def _pg_schema_engine(url: str, schema: str) -> Any:
    """An asyncpg SQLAlchemy engine whose tables live in a fresh schema."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(_sqlalchemy_url(url), connect_args={"server_settings": {"search_path": schema}})
    async with engine.begin() as conn:
        await conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    return engine


async def _drop_pg_schema(engine: Any, schema: str) -> None:
    from sqlalchemy import text

    async with engine.begin() as conn:
        await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    await engine.dispose()


class SQLAlchemySessionSubject(AgentsSessionSubject):
    """The SDK's ``SQLAlchemySession`` on a PostgreSQL server (asyncpg), in
    a schema of its own (dropped on close)."""

    label = OPENAI_SQLALCHEMY
    kind: Kind = "peer"

    def __init__(self, session_id: str, url: str, schema: str) -> None:
        super().__init__(session_id)
        self.url = url
        self.schema = schema

    async def open(self) -> None:
        """Create the schema and the session (tables on first use)."""
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        self.engine = await _pg_schema_engine(self.url, self.schema)
        self._session = SQLAlchemySession(self.session_id, engine=self.engine, create_tables=True)

    async def close(self) -> None:
        """Drop the schema."""
        await _drop_pg_schema(self.engine, self.schema)


class MemoryCoreSessionSubject(AgentsSessionSubject):
    """memory-core's ``MemoryCoreSession`` on the target's storage."""

    label = OPENAI_OURS
    kind: Kind = "adapter"

    def __init__(self, session_id: str, adapter: AdapterSubject, resource_id: str) -> None:
        super().__init__(session_id)
        self.adapter = adapter
        self.resource_id = resource_id

    async def open(self) -> None:
        """Create the session (the thread appears with the first items)."""
        from memory_core.integrations.openai_agents import MemoryCoreSession

        memory = Memory(self.adapter.storage, owns_stores=False)
        self._session = MemoryCoreSession(self.session_id, memory, resource_id=self.resource_id)

    async def close(self) -> None:
        """Nothing: the adapter's namespace goes with the adapter."""


def _event(m: BenchMessage, timestamp: float | None = None) -> Any:
    from google.adk.events.event import Event
    from google.genai import types

    user = m.role == "user"
    return Event(
        author="user" if user else "agent",
        invocation_id=f"inv-{m.id[:8]}",
        content=types.Content(role="user" if user else "model", parts=[types.Part(text=m.content)]),
        timestamp=m.created_at_us / 1e6 if timestamp is None else timestamp,
    )


class AdkServiceSubject(SessionSubject):
    """An ADK session service holding one session; :meth:`append` is one
    ``append_event`` on the session loaded by :meth:`ready`."""

    family = "adk"
    _service: Any
    loaded: Any
    last: Any

    @property
    def service(self) -> Any:
        """The ``BaseSessionService`` (after :meth:`open`)."""
        return self._service

    async def _create(self) -> None:
        await self._service.create_session(app_name=_APP, user_id=_USER, session_id=self.session_id)

    async def newest(self, n: int) -> Answer:
        """``get_session(config=GetSessionConfig(num_recent_events=n))``."""
        from google.adk.sessions.base_session_service import GetSessionConfig

        session = await self._service.get_session(
            app_name=_APP, user_id=_USER, session_id=self.session_id, config=GetSessionConfig(num_recent_events=n)
        )
        texts = [e.content.parts[0].text or "" for e in session.events if e.content and e.content.parts]
        return Answer(-1, tuple(_text_key(t) for t in texts))

    async def ready(self) -> None:
        """Load the session with its newest 20 events, as a runner does."""
        from google.adk.sessions.base_session_service import GetSessionConfig

        self.loaded = await self._service.get_session(
            app_name=_APP, user_id=_USER, session_id=self.session_id, config=GetSessionConfig(num_recent_events=20)
        )

    async def append(self, message: BenchMessage) -> None:
        """``append_event`` of a new event, timestamped now."""
        self.last = await self._service.append_event(self.loaded, _event(message, time.time()))


class DatabaseSessionSubject(AdkServiceSubject):
    """ADK's ``DatabaseSessionService`` on SQLite (a file) or PostgreSQL (a
    schema of its own); bulk loads insert its own ORM rows
    (``StorageEvent.from_event``) through its own session factory."""

    label = ADK_DATABASE
    kind: Kind = "peer"

    def __init__(self, session_id: str, *, path: Path | None = None, url: str | None = None, schema: str = "") -> None:
        super().__init__(session_id)
        self.path = path
        self.url = url
        self.schema = schema
        if path is not None:
            self.label = f"{ADK_DATABASE} (sqlite)"
        else:
            self.label = f"{ADK_DATABASE} (postgresql)"

    async def open(self) -> None:
        """Create the service (tables) and the session."""
        from google.adk.sessions import DatabaseSessionService

        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._service = DatabaseSessionService(f"sqlite+aiosqlite:///{self.path}")
        elif self.url is not None:
            self.engine = await _pg_schema_engine(self.url, self.schema)
            self._service = DatabaseSessionService(db_engine=self.engine)
        else:
            raise ValueError("an ADK subject needs a SQLite path or a PostgreSQL URL")
        await self._create()
        self.session = await self._service.get_session(app_name=_APP, user_id=_USER, session_id=self.session_id)

    async def close(self) -> None:
        """Close; delete the file or drop the schema."""
        await self._service.close()
        if self.path is not None:
            remove_sqlite_files(self.path)
        else:
            await _drop_pg_schema(self.engine, self.schema)

    async def load(self, batch: Sequence[BenchMessage]) -> None:
        """``add_all`` of ``StorageEvent`` rows, one commit."""
        from google.adk.sessions.schemas.v1 import StorageEvent

        async with self._service.database_session_factory() as sql:
            sql.add_all([StorageEvent.from_event(self.session, _event(m)) for m in batch])
            await sql.commit()

    async def undo(self) -> None:
        """Delete the last appended event's row."""
        from google.adk.sessions.schemas.v1 import StorageEvent
        from sqlalchemy import delete

        async with self._service.database_session_factory() as sql:
            await sql.execute(delete(StorageEvent).where(StorageEvent.id == self.last.id))
            await sql.commit()


class MemoryCoreServiceSubject(AdkServiceSubject):
    """memory-core's ``MemoryCoreSessionService`` on the target's storage;
    bulk loads save the events as the service stores them, 1,000 a call."""

    label = ADK_OURS
    kind: Kind = "adapter"

    def __init__(self, session_id: str, adapter: AdapterSubject) -> None:
        super().__init__(session_id)
        self.adapter = adapter

    async def open(self) -> None:
        """Create the service and the session."""
        from memory_core.integrations.google_adk import MemoryCoreSessionService

        self.memory = Memory(self.adapter.storage, owns_stores=False)
        self._service = MemoryCoreSessionService(self.memory)
        await self._create()

    async def close(self) -> None:
        """Nothing: the adapter's namespace goes with the adapter."""

    async def load(self, batch: Sequence[BenchMessage]) -> None:
        """One ``save_messages`` of the batch's events."""
        from memory_core.integrations.google_adk import _event_message, session_thread, user_resource

        thread, owner = session_thread(_APP, _USER, self.session_id), user_resource(_APP, _USER)
        await self.memory.save_messages([_event_message(_event(m), thread, owner) for m in batch], persist_system=True)

    async def undo(self) -> None:
        """Pop the newest event's message."""
        from memory_core.integrations._threads import pop_newest
        from memory_core.integrations.google_adk import session_thread, user_resource

        await pop_newest(self.memory, session_thread(_APP, _USER, self.session_id), user_resource(_APP, _USER))


class SwapWorkload(ABC):
    """One timed framework call on each :class:`SessionSubject` of a family."""

    name: ClassVar[str]
    title: ClassVar[str]
    family: ClassVar[str]
    items_per_op: ClassVar[int] = 0
    concurrency: int = 1

    def __init__(self, dataset: Dataset, subject: SessionSubject, thread: ThreadSpec) -> None:
        self.dataset = dataset
        self.subject = subject
        self.thread = thread
        self.params: dict[str, Any] = {"limit": PER_PAGE, "thread_length": thread.size}

    async def setup(self) -> None:
        """A write stream for the appends (untimed)."""
        self.stream = self.dataset.writer(f"{self.name}-{self.subject.label}-{self.thread.size}")

    def args(self, i: int) -> Any:
        """One new message for the workloads that append."""
        return self.stream.messages(self.thread, 1)[0]

    @abstractmethod
    async def run(self, args: Any) -> Answer | None:
        """The timed call."""

    async def settle(self, args: Any) -> None:
        """Undo the appends (nothing for reads)."""

    def written_thread(self) -> ThreadSpec | None:
        """None."""
        return None


class SwapGetItems(SwapWorkload):
    """``get_items(limit=20)``."""

    name = "swap_get_items"
    title = "Agents SDK get_items(limit=20)"
    family = "openai"

    async def run(self, args: Any) -> Answer:
        return await self.subject.newest(PER_PAGE)


class SwapAgentLoop(SwapWorkload):
    """``get_items(limit=20)`` then ``add_items`` of 2 items."""

    name = "swap_agent_loop"
    title = "Agents SDK loop: get_items(20), add 2"
    family = "openai"
    items_per_op = 2

    async def run(self, args: BenchMessage) -> Answer:
        answer = await self.subject.newest(PER_PAGE)
        await self.subject.append(args)
        return answer

    async def settle(self, args: Any) -> None:
        await self.subject.undo()


class SwapGetSession(SwapWorkload):
    """``get_session(config=GetSessionConfig(num_recent_events=20))``."""

    name = "swap_get_session"
    title = "ADK get_session(num_recent_events=20)"
    family = "adk"

    async def run(self, args: Any) -> Answer:
        return await self.subject.newest(PER_PAGE)


class SwapAppendEvent(SwapWorkload):
    """``append_event`` of one event to a session loaded with its newest 20."""

    name = "swap_append_event"
    title = "ADK append_event"
    family = "adk"
    items_per_op = 1

    async def setup(self) -> None:
        await super().setup()
        await self.subject.ready()

    async def run(self, args: BenchMessage) -> None:
        await self.subject.append(args)

    async def settle(self, args: Any) -> None:
        await self.subject.undo()


SWAP_WORKLOADS: tuple[type[SwapWorkload], ...] = (SwapGetItems, SwapAgentLoop, SwapGetSession, SwapAppendEvent)

HISTORY_WORKLOADS: dict[str, str] = {w.name: w.title for w in THREAD_WORKLOADS} | {
    w.name: w.title for w in SWAP_WORKLOADS
}
"""Every history-axis workload name -> title, in run order."""


def _is_postgres(url: str) -> bool:
    return url.split(":", 1)[0].lower() in ("postgresql", "postgres")


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def swap_subjects(
    family: str, adapter: AdapterSubject, target: StorageTarget, workdir: Path, peers: bool, length: int
) -> list[SessionSubject]:
    """memory-core's session store of ``family`` on the target, then (with
    ``peers``) the framework's own stores that are installed: SQLite files
    under ``workdir`` and, for a PostgreSQL target, the same server."""
    tag = uuid.uuid4().hex[:8]
    session_id = f"swap-{family}-{length}"
    found: list[SessionSubject] = []
    if family == "openai":
        if not _installed("agents"):
            return []
        found.append(MemoryCoreSessionSubject(session_id, adapter, f"swap-user-{length}"))
        if peers:
            found.append(SQLiteSessionSubject(session_id, workdir / f"agents-{tag}.db"))
            if _is_postgres(target.url) and _installed("sqlalchemy") and _installed("asyncpg"):
                found.append(SQLAlchemySessionSubject(session_id, target.url, f"bench_agents_{tag}"))
        return found
    if not _installed("google.adk"):
        return []
    found.append(MemoryCoreServiceSubject(session_id, adapter))
    if peers and _installed("sqlalchemy") and _installed("greenlet"):
        found.append(DatabaseSessionSubject(session_id, path=workdir / f"adk-{tag}.db"))
        if _is_postgres(target.url) and _installed("asyncpg"):
            found.append(DatabaseSessionSubject(session_id, url=target.url, schema=f"bench_adk_{tag}"))
    return found


# ---------------------------------------------------------------------- the run


def _wanted(config: BenchConfig, names: Sequence[str]) -> list[str]:
    return [n for n in names if config.wants(n)]


def _families(config: BenchConfig) -> list[tuple[str, list[type[SwapWorkload]]]]:
    out = []
    for family in ("openai", "adk"):
        chosen = [w for w in SWAP_WORKLOADS if w.family == family and config.wants(w.name)]
        if chosen:
            out.append((family, chosen))
    return out


def history_steps(config: BenchConfig) -> int:
    """Progress steps of :func:`run_history` (load, each workload, each
    swap family's load and workloads, per target and length)."""
    per_target = 1 + len(_wanted(config, [w.name for w in THREAD_WORKLOADS]))
    per_target += sum(1 + len(chosen) for _, chosen in _families(config))
    steps = 0
    for length in config.sizes:
        steps += per_target * sum(1 for t in config.storage if t.max_size is None or length <= t.max_size)
    return steps


async def _load(
    label: str,
    kind: str,
    backend: str,
    length: int,
    batches: Iterator[list[BenchMessage]],
    save: Any,
    progress: ProgressSink,
    server_pid: int | None,
) -> PopulateRecord:
    """Bulk-load the thread into one subject (``save`` takes a batch)."""
    progress.step(f"{backend}: load one thread of {length:,} messages into {label}", total=length)
    with _Phase(server_pid) as phase:
        started = time.perf_counter()
        for batch in batches:
            await save(batch)
            progress.advance(len(batch))
        seconds = time.perf_counter() - started
    progress.end_step()
    rate = length / seconds if seconds else 0.0
    return PopulateRecord(backend, label, kind, length, length, 1, seconds, rate, phase.client, phase.server)


async def _measure(
    name: str,
    title: str,
    target: StorageTarget,
    length: int,
    entries: list[_Entry],
    config: BenchConfig,
    report: BenchReport,
    progress: ProgressSink,
) -> None:
    """Time ``entries`` interleaved and report them; peers' first answers
    are compared with memory-core's."""
    progress.step(f"{target.name} @ thread of {length:,}: {title}")
    with _Phase(target.server_pid) as phase:
        await _measure_group(entries, config)
    expected = next((e.first for e in entries if e.kind == "adapter" and e.error is None), None)
    for entry in entries:
        result = _result(target.name, name, length, entry, phase)
        if entry.kind == "peer" and config.verify and result.error is None and expected is not None:
            result.verified = entry.first == expected
            if not result.verified:
                progress.log(f"[red]{target.name} {name}: {entry.label} and memory-core disagree[/]")
        _report(report, result, progress)
    progress.end_step()


async def _run_target(
    target: StorageTarget, dataset: Dataset, length: int, config: BenchConfig, report: BenchReport, sink: ProgressSink
) -> None:
    thread = long_thread(length)
    namespace = f"bench_h{length}_{uuid.uuid4().hex[:10]}"
    adapter = AdapterSubject(target.name, target.url, namespace, target.server_pid)
    vectors: AdapterVectorSubject | None = None
    opened: list[Any] = []
    try:
        await adapter.open()
        opened.append(adapter)
        semantic: Memory | None = None
        vector_url = next((v.url for v in config.vectors if v.url is not None), None)
        if config.wants(ThreadSemantic.name) and vector_url is not None:
            vectors = AdapterVectorSubject("vectors", vector_url, namespace)
            await vectors.open()
            opened.append(vectors)
            semantic = Memory(
                adapter.storage,
                vectors.store,
                LexicalHashEmbedder(config.dimension),
                MemoryConfig(semantic_recall=SemanticRecall()),
                owns_stores=False,
                allow_volatile_vectors=True,  # a timing run: the vectors need not outlive it
            )
        elif config.wants(ThreadSemantic.name):
            _note(report, sink, f"{target.name} at {length:,}: {ThreadSemantic.name} not run (no --vector store)")
        await adapter.create_threads([thread])
        loader = semantic or adapter.memory

        async def save(batch: list[BenchMessage]) -> None:
            await loader.save_messages(adapter.prepare(batch))

        label = adapter.label + (" + vectors" if semantic is not None else "")
        record = await _load(
            label, "adapter", target.name, length, _batches(dataset.iter_thread_messages(thread)), save, sink,
            target.server_pid,
        )  # fmt: skip
        report.populate.append(record)
        if vectors is not None:
            await vectors.after_load()
        for workload_cls in THREAD_WORKLOADS:
            if not config.wants(workload_cls.name) or (workload_cls.needs_vectors and semantic is None):
                continue
            workload = workload_cls(dataset, adapter, thread, semantic)
            entry = _Entry(adapter.label, "adapter", workload, workload_cls.items_per_op)
            await _measure(workload_cls.name, workload_cls.title, target, length, [entry], config, report, sink)
        for family, chosen in _families(config):
            subjects = swap_subjects(family, adapter, target, config.workdir / namespace, config.peers, length)
            if not subjects:
                _note(report, sink, f"{target.name} at {length:,}: swap {family} not run (framework not installed)")
                continue
            live: list[SessionSubject] = []
            sink.step(f"{target.name} @ thread of {length:,}: load the {family} session stores")
            for subject in subjects:
                try:
                    await subject.open()
                except Exception as exc:  # a peer that will not open: the run goes on without it
                    _failed(report, sink, f"{target.name} at {length:,}: {subject.label} did not open: {exc!r}")
                    continue
                opened.append(subject)
                live.append(subject)
                items = _batches(dataset.iter_thread_messages(thread))
                record = await _load(
                    subject.label, subject.kind, target.name, length, items, subject.load, NullStep(sink),
                    target.server_pid,
                )  # fmt: skip
                report.populate.append(record)
            sink.end_step()
            for swap_cls in chosen:
                entries = [_Entry(s.label, s.kind, swap_cls(dataset, s, thread), swap_cls.items_per_op) for s in live]
                await _measure(swap_cls.name, swap_cls.title, target, length, entries, config, report, sink)
    finally:
        for subject in reversed(opened):
            try:
                await subject.close()
            except Exception as exc:
                sink.log(f"[yellow]closing {subject.label}: {exc!r}[/]")


def _note(report: BenchReport, sink: ProgressSink, text: str) -> None:
    if text not in report.notes:
        report.notes.append(text)
    sink.log(f"[yellow]{text}[/]")


class NullStep:
    """A progress sink that passes only log lines on (loads inside a step)."""

    def __init__(self, sink: ProgressSink) -> None:
        self.sink = sink

    def begin(self, total_steps: int) -> None:
        """Ignore."""

    def step(self, description: str, total: int | None = None) -> None:
        """Ignore."""

    def advance(self, units: int = 1) -> None:
        """Ignore."""

    def end_step(self) -> None:
        """Ignore."""

    def log(self, text: str) -> None:
        """Pass on."""
        self.sink.log(text)


async def run_history(config: BenchConfig, report: BenchReport, sink: ProgressSink) -> None:
    """Run the history-length family (``config.sizes`` are thread lengths)
    on every storage target into ``report``. A target failing at one length
    is recorded in ``report.failures``; the run goes on."""
    for length in config.sizes:
        dataset = Dataset(max(length, 1), config.seed)
        for target in config.storage:
            if target.max_size is not None and length > target.max_size:
                sink.log(f"[yellow]{target.name}: skipping a thread of {length:,} (limit {target.max_size:,})[/]")
                continue
            try:
                await _run_target(target, dataset, length, config, report, sink)
            except Exception as exc:
                _failed_target(report, sink, target.name, length, exc)
            _checkpoint(report, config)
        await asyncio.sleep(0)
