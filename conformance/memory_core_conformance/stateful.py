"""The state machine: random operation sequences, adapter vs reference store.

:class:`StorageStateMachine` drives every storage operation (threads,
messages, resources; listings with random filters, orders, pages, includes
and cursors; partial updates and moves), and ``Memory.recall`` over each
store (sources, gaps, token budgets), against the adapter and
:class:`~memory_core.reference.InMemoryStorage` side by side, and compares
every answer in full (exceptions by type). Both stores follow one
:class:`~memory_core.clock.ManualClock`, so their timestamps agree. Each
step is recorded with ``note()``, so a shrunk failure reads as a script.

Hypothesis has no native async state machines; each run starts an anyio
``BlockingPortal`` (an event loop in a worker thread) and opens, uses and
destroys both stores inside it.

Use :func:`run_storage_machine` (the suite does), or subclass
:class:`StorageStateMachine` with a ``factory`` for your own runs.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memory_core.clock import ManualClock, to_us
from memory_core.config import MemoryConfig, SemanticRecall
from memory_core.errors import AdapterClosedError
from memory_core.lineage import CopyPlan, size_limit
from memory_core.memory import Memory
from memory_core.models import IdPage, Include, Message, MessageFilter, OrderBy, Page, Resource, Thread, ThreadFilter
from memory_core.query import NOT_GIVEN
from memory_core.reference import InMemoryStorage
from memory_core.retention import RetentionPolicy
from memory_core.storage import BaseStorage
from memory_core_conformance import strategies as mst
from memory_core_conformance.compare import Failed, assert_same, capture, summary
from memory_core_conformance.harness import T0, FollowerClock, StorageFactory, snapshot
from memory_core_conformance.profiles import active_profile, shrink_time_limit

__all__ = [
    "MESSAGE_IDS",
    "META_KEYS",
    "META_VALUES",
    "RESOURCE_IDS",
    "THREAD_IDS",
    "WIDE_KEY",
    "WIDE_VALUES",
    "StorageStateMachine",
    "run_storage_machine",
]

THREAD_IDS = ("t1", "t2", "t3", "T1")
"""Thread ids the machine uses (``T1`` differs from ``t1`` only by case)."""
RESOURCE_IDS = ("r1", "r2", "R1")
"""Resource ids the machine uses."""
MESSAGE_IDS = ("m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "M0")
"""Message ids the machine uses; a small pool, so upserts and moves are common."""

_TIMES = st.sampled_from(
    [
        T0,
        T0,
        T0,
        T0 + timedelta(microseconds=1),
        T0 + timedelta(microseconds=999),
        T0 + timedelta(microseconds=999_999),
        T0 + timedelta(seconds=1),
        T0 - timedelta(seconds=1),
        datetime(1960, 5, 5, tzinfo=UTC),
    ]
)
"""Explicit times: mostly T0, so equal timestamps (R-ORDER ties) are common;
one before the Unix epoch (negative timestamps)."""
META_KEYS = ("a", "b")
"""Metadata keys the machine uses (two, so filters and data collide often)."""
META_VALUES: tuple[Any, ...] = (0, 1, 1.0, True, False, None, "1", "")
"""Metadata values whose JSON types collide (1 / 1.0 / true / "1", 0 / false / null / "")."""
WIDE_KEY = "w"
"""A third metadata key, present in about half the records, holding :data:`WIDE_VALUES`."""
WIDE_VALUES: tuple[Any, ...] = (
    5,
    5.0,
    "5",
    -0.0,
    1.5,
    2**63 - 1,
    -(2**63),
    "x",
    "X",
    "x\x00y",
    "é",
    [1, "a"],
    {"k": None},
    {"nested": {"deep": None}},
)
"""Values a backend's encoding can get wrong: 5 / 5.0 / "5", -0.0 (which equals 0),
the signed 64-bit ends, a NUL inside a string beside its prefix, case,
non-ASCII text, and list / object values (stored whole, matched by no filter)."""
_WIDE_SCALARS = tuple(v for v in WIDE_VALUES if not isinstance(v, list | dict))
_metadata = st.builds(
    lambda narrow, wide: {**narrow, **wide},
    st.dictionaries(st.sampled_from(META_KEYS), st.sampled_from(META_VALUES), max_size=2),
    st.fixed_dictionaries({}, optional={WIDE_KEY: st.sampled_from(WIDE_VALUES)}),
)
_meta_filters = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(META_KEYS), st.sampled_from(META_VALUES), min_size=1, max_size=2),
    st.builds(
        lambda narrow, wide: {**narrow, WIDE_KEY: wide},
        st.dictionaries(st.sampled_from(META_KEYS), st.sampled_from(META_VALUES), max_size=1),
        st.sampled_from(_WIDE_SCALARS),
    ),
)
_thread_ids = st.sampled_from(THREAD_IDS)
_busy_thread_ids = st.sampled_from(("t1", "t1", "t1", "t2", "t3", "T1"))
"""Where messages go and what listings read: mostly ``t1``, so windows have
something to cut."""
_resource_ids = st.sampled_from(RESOURCE_IDS)
_message_ids = st.sampled_from(MESSAGE_IDS)
_contents = st.one_of(
    st.sampled_from(["", "hi", "héllo 👋🏽", "a\u200db"]),
    st.builds(
        lambda t, extra: {"format": 2, "parts": [{"type": "text", "text": t}], **extra},
        st.sampled_from(["x", "y"]),
        st.dictionaries(st.sampled_from(["tool", "n"]), mst.json_scalars(), max_size=1),
    ),
)
_messages = st.builds(
    Message,
    id=_message_ids,
    thread_id=_busy_thread_ids,
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    content=_contents,
    resource_id=st.one_of(st.none(), st.none(), st.none(), st.none(), st.none(), _resource_ids),
    type=st.sampled_from(["v2", "v1"]),
    metadata=_metadata,
    created_at=st.one_of(st.none(), _TIMES, _TIMES),
)
_threads = st.builds(
    Thread,
    _thread_ids,
    st.sampled_from(RESOURCE_IDS[:2]),
    st.sampled_from(["", "plan", "🧵"]),
    _metadata,
    st.none() | _TIMES,
    st.none() | _TIMES,
)
_updates = st.fixed_dictionaries(
    {"id": _message_ids},
    optional={
        "content": _contents,
        "metadata": _metadata,
        "role": st.sampled_from(["user", "assistant"]),
        "type": st.sampled_from(["v2", "v3"]),
        "thread_id": _busy_thread_ids,
    },
)
_message_filters = st.one_of(
    st.none(),
    st.builds(MessageFilter, st.none() | mst.date_ranges(_TIMES), _meta_filters),
)
_includes = st.none() | mst.includes(_message_ids)
_message_orders = mst.orders()
_thread_orders = mst.orders(("created_at", "updated_at", "last_message_at"))
_bounds = st.one_of(st.tuples(st.just(0), st.integers(1, 3)), mst.page_bounds(max_page=3, max_per_page=4))
_bad = st.one_of(
    st.tuples(st.just("page"), mst.bad_page_bounds()),
    st.tuples(st.just("metadata"), mst.bad_meta_filters()),
    st.tuples(st.just("order"), mst.bad_orders()),
    st.tuples(st.just("date_range"), mst.bad_date_ranges()),
)


@dataclass(frozen=True)
class _PerStore:
    """An argument whose value differs per store: (adapter's, reference's)."""

    values: tuple[Any, Any]

    def __repr__(self) -> str:
        return "<its own next_cursor>"


class _Step:
    """One operation as the failing script shows it (``await
    store.list_messages(thread_id='t1', ...)``); the text is built only when
    Hypothesis prints it, not on every step of every run."""

    __slots__ = ("args", "kwargs", "operation", "target")

    def __init__(self, operation: str, args: tuple[Any, ...], kwargs: dict[str, Any], target: str = "store") -> None:
        self.operation = operation
        self.args = args
        self.kwargs = kwargs
        self.target = target

    def __repr__(self) -> str:
        shown = ", ".join([*(repr(a) for a in self.args), *(f"{k}={v!r}" for k, v in self.kwargs.items())])
        return f"await {self.target}.{self.operation}({shown})"

    async def run(self, store: BaseStorage | Memory, side: int) -> Any:
        """The answer of ``store`` (or a Memory over it; 0: adapter, 1:
        reference) or :class:`Failed`."""
        args = tuple(a.values[side] if isinstance(a, _PerStore) else a for a in self.args)
        kwargs = {k: v.values[side] if isinstance(v, _PerStore) else v for k, v in self.kwargs.items()}
        return await capture(getattr(store, self.operation)(*args, **kwargs))


class _Answer:
    """The reference store's answer after a step, in the script: one line
    (pages and record lists by ids, see :func:`~memory_core_conformance.compare.summary`)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"# -> {summary(self.value)}"


@dataclass
class _Walk:
    """A listing whose next page is still to be fetched by cursor."""

    operation: str
    kwargs: dict[str, Any]
    adapter_cursor: str
    reference_cursor: str


class StorageStateMachine(RuleBasedStateMachine):
    """Adapter vs reference store, operation by operation.

    Subclass with ``factory`` set (a
    :class:`~memory_core_conformance.harness.StorageFactory`, wrapped in
    ``staticmethod``), or use :func:`run_storage_machine`.
    """

    factory: ClassVar[StorageFactory | None] = None

    def __init__(self) -> None:
        super().__init__()
        factory = type(self).factory
        if factory is None:
            raise TypeError("StorageStateMachine needs a factory: use run_storage_machine(factory)")
        self.leader = ManualClock(T0)
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal("asyncio")
        self.portal = self._portal_cm.__enter__()
        self.adapter: BaseStorage | None = None
        self.reference = InMemoryStorage(clock=FollowerClock(self.leader))
        self.follower = FollowerClock(self.leader)
        try:
            adapter = factory(self.follower)
            self.portal.call(adapter.open)
            self.adapter = adapter
            self.portal.call(self.reference.open)
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise
        self.walks: list[_Walk] = []
        self.copies = 0
        # Recall is composed in the core over storage reads: a Memory over each store.
        self.memories = (Memory(adapter, owns_stores=False), Memory(self.reference, owns_stores=False))

    # ------------------------------------------------------------------ plumbing

    def _both(self, operation: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """Call ``operation`` on both stores, note it, compare the answers.

        A :class:`_PerStore` argument is replaced by each store's own value.
        """
        target, name = self._target()
        call = _Step(operation, args, kwargs, target=name)
        note(call)
        actual, expected = self.portal.call(self._call_both, target, self.reference, call)
        note(_Answer(expected))
        assert_same(actual, expected, call)
        return actual, expected

    def _target(self) -> tuple[BaseStorage, str]:
        """The adapter store the next step's operation runs on, and its name
        in the script (this class: always :attr:`adapter`, ``store``; the
        two-process variant alternates)."""
        if self.adapter is None:
            raise AdapterClosedError("the state machine's adapter store did not open")
        return self.adapter, "store"

    @staticmethod
    async def _call_both(
        adapter: BaseStorage | Memory, reference: BaseStorage | Memory, call: _Step
    ) -> tuple[Any, Any]:
        """Both stores' answers in one trip to the event loop (adapter first)."""
        return await call.run(adapter, 0), await call.run(reference, 1)

    def _remember(self, operation: str, kwargs: dict[str, Any], actual: Any, expected: Any) -> None:
        pages = (Page, IdPage)
        if isinstance(actual, pages) and isinstance(expected, pages) and actual.next_cursor and expected.next_cursor:
            self.walks.append(_Walk(operation, kwargs, actual.next_cursor, expected.next_cursor))
            del self.walks[:-4]

    # ------------------------------------------------------------------ setup

    @initialize(threads=st.tuples(*(st.builds(replace, _threads, id=st.just(tid)) for tid in THREAD_IDS)))
    def seed_threads(self, threads: tuple[Thread, ...]) -> None:
        """Start with every thread of the pool, so messages have somewhere to go."""
        for item in threads:
            self._both("save_thread", item)

    @initialize(batch=st.lists(st.builds(replace, _messages, resource_id=st.none()), min_size=4, max_size=12))
    def seed_messages(self, batch: list[Message]) -> None:
        """Start with some messages (ties included), so listings have windows to cut."""
        self._both("save_messages", batch)

    @rule(seconds=st.sampled_from([0.0, 0.000001, 0.001, 1.0, 3600.0]))
    def advance_clock(self, seconds: float) -> None:
        """Move "now" forward for both stores."""
        note(f"clock.advance({seconds})")
        self.leader.advance(seconds)

    # ------------------------------------------------------------------ threads

    @rule(item=_threads)
    def save_thread(self, item: Thread) -> None:
        self._both("save_thread", item)

    @rule(thread_id=_thread_ids, title=st.none() | st.sampled_from(["", "new", "🧵"]), metadata=st.none() | _metadata)
    def update_thread(self, thread_id: str, title: str | None, metadata: dict[str, Any] | None) -> None:
        self._both("update_thread", thread_id, title=title, metadata=metadata)

    @rule(
        flt=st.none() | st.builds(ThreadFilter, st.none() | _resource_ids, _meta_filters),
        bounds=_bounds,
        order=_thread_orders,
    )
    def list_threads(self, flt: ThreadFilter | None, bounds: tuple[int, Any], order: Any) -> None:
        kwargs = {"filter": flt, "page": bounds[0], "per_page": bounds[1], "order_by": order}
        actual, expected = self._both("list_threads", **kwargs)
        self._remember("list_threads", kwargs, actual, expected)

    # ------------------------------------------------------------------ messages

    @rule(batch=st.lists(_messages, min_size=1, max_size=3))
    def save_messages(self, batch: list[Message]) -> None:
        self._both("save_messages", batch)

    @rule(item=_messages)
    def save_one_message(self, item: Message) -> None:
        """(Messages are the heart of the store: saving gets three rules.)"""
        self._both("save_messages", [item])

    @rule(item=_messages)
    def save_one_message_now(self, item: Message) -> None:
        self._both("save_messages", [replace(item, created_at=None)])

    @rule(updates=st.lists(_updates, max_size=3))
    def update_messages(self, updates: list[dict[str, Any]]) -> None:
        self._both("update_messages", updates)

    @rule(
        what=st.one_of(
            st.tuples(st.just("delete_thread"), _thread_ids),
            st.tuples(st.just("delete_messages"), st.lists(_message_ids, max_size=2)),
        ),
        recreate=st.none() | _threads,
    )
    def delete(self, what: tuple[str, Any], recreate: Thread | None) -> None:
        """``delete_thread`` or ``delete_messages`` (one rule: deletes empty the
        store, and the interesting states need messages). A deleted thread is
        usually created again at once (under the same id): it must come back
        without its old messages."""
        self._both(*what)
        if what[0] == "delete_thread" and recreate is not None:
            self._both("save_thread", replace(recreate, id=what[1]))

    @rule(
        thread_id=_busy_thread_ids | st.lists(_thread_ids, min_size=1, max_size=3),
        resource_id=st.none() | _resource_ids,
        include=_includes,
        flt=_message_filters,
        bounds=_bounds,
        order=_message_orders,
        total=st.booleans(),
    )
    def list_messages(
        self,
        thread_id: Any,
        resource_id: str | None,
        include: list[Include] | None,
        flt: MessageFilter | None,
        bounds: tuple[int, Any],
        order: Any,
        total: bool,
    ) -> None:
        kwargs = {
            "thread_id": thread_id,
            "resource_id": resource_id,
            "include": include,
            "filter": flt,
            "page": bounds[0],
            "per_page": bounds[1],
            "order_by": order,
            "total": total,
        }
        actual, expected = self._both("list_messages", **kwargs)
        self._remember("list_messages", kwargs, actual, expected)

    @rule(
        thread_id=_busy_thread_ids,
        resource_id=st.none() | _resource_ids,
        include=_includes,
        per_page=st.integers(0, 5),
        page=st.integers(0, 1),
        max_tokens=st.none() | st.integers(0, 60),
    )
    def recall(
        self,
        thread_id: str,
        resource_id: str | None,
        include: list[Include] | None,
        per_page: int,
        page: int,
        max_tokens: int | None,
    ) -> None:
        """Memory.recall over both stores: sources, gaps and the token budget
        (R-SOURCE, R-BUDGET) must agree too."""
        kwargs = {
            "thread_id": thread_id,
            "resource_id": resource_id,
            "include": include,
            "per_page": per_page,
            "page": page,
            "max_tokens": max_tokens,
        }
        call = _Step("recall", (), kwargs, target="memory")
        note(call)
        actual, expected = self.portal.call(self._call_both, *self.memories, call)
        note(_Answer(expected))
        assert_same(actual, expected, call)

    @rule(
        thread_id=_busy_thread_ids,
        resource_id=_resource_ids,
        query=st.sampled_from(["hi", "héllo", "x y", "b", "hi x"]),
        scope=st.sampled_from(["thread", "resource"]),
        top_k=st.integers(1, 3),
        message_range=st.integers(0, 1),
    )
    def lexical_recall(
        self, thread_id: str, resource_id: str, query: str, scope: str, top_k: int, message_range: int
    ) -> None:
        """Memory.recall in lexical mode over both stores (R-HYBRID): the
        same BM25 hits (ties by id), windows and sources, never a message of
        another resource or one deleted or pruned by an earlier step."""
        semantic = SemanticRecall(top_k, message_range, scope, mode="lexical")  # type: ignore[arg-type]
        kwargs = {
            "thread_id": thread_id,
            "resource_id": resource_id,
            "vector_search_string": query,
            "thread_config": MemoryConfig(last_messages=False, semantic_recall=semantic),
        }
        call = _Step("recall", (), kwargs, target="memory")
        note(call)
        actual, expected = self.portal.call(self._call_both, *self.memories, call)
        note(_Answer(expected))
        assert_same(actual, expected, call)

    @rule(
        resource_id=_resource_ids,
        include=_includes,
        flt=_message_filters,
        bounds=_bounds,
        order=_message_orders,
        total=st.booleans(),
    )
    def list_messages_by_resource(
        self,
        resource_id: str,
        include: list[Include] | None,
        flt: MessageFilter | None,
        bounds: tuple[int, Any],
        order: Any,
        total: bool,
    ) -> None:
        kwargs = {
            "resource_id": resource_id,
            "include": include,
            "filter": flt,
            "page": bounds[0],
            "per_page": bounds[1],
            "order_by": order,
            "total": total,
        }
        actual, expected = self._both("list_messages_by_resource", **kwargs)
        self._remember("list_messages_by_resource", kwargs, actual, expected)

    @precondition(lambda self: bool(self.walks))
    @rule(
        index=st.integers(0, 3),
        per_page=st.integers(0, 4) | st.just(False),
        pages=st.integers(1, 4),
        tamper=st.sampled_from([False, False, False, True]),
    )
    def follow_cursor(self, index: int, per_page: Any, pages: int, tamper: bool) -> None:
        """Fetch up to ``pages`` next pages of an earlier listing by cursor (after
        whatever writes happened since); with ``tamper``, under another order
        (an error)."""
        walk = self.walks.pop(index % len(self.walks))
        if walk.operation == "list_resource_ids":  # one order, no page numbers: nothing to tamper with
            kwargs, tamper = dict(walk.kwargs, per_page=per_page), False
        else:
            kwargs = dict(walk.kwargs, page=0, per_page=per_page)
        if tamper:
            old = kwargs.get("order_by")
            given = OrderBy(**old).direction if isinstance(old, dict) else (old or OrderBy()).direction
            threads = walk.operation == "list_threads"
            direction = given or ("DESC" if threads else "ASC")  # R-SORT: the kind's default
            field = "updated_at" if threads else "created_at"
            kwargs["order_by"] = OrderBy(field, "ASC" if direction.upper() == "DESC" else "DESC")
        note(f"# continue {walk.operation} by cursor")
        for _ in range(pages):
            cursor = _PerStore((walk.adapter_cursor, walk.reference_cursor))
            actual, expected = self._both(walk.operation, **kwargs, cursor=cursor)
            if tamper or not (isinstance(actual, (Page, IdPage)) and isinstance(expected, (Page, IdPage))):
                return
            if not (actual.next_cursor and expected.next_cursor):
                return
            walk = _Walk(walk.operation, walk.kwargs, actual.next_cursor, expected.next_cursor)
        self.walks.append(walk)

    # ------------------------------------------------------------------ resources

    @rule(
        update=st.tuples(_resource_ids, st.sampled_from([NOT_GIVEN, None, "", "# wm", "🧠"]), st.none() | _metadata),
        replacement=st.none()
        | st.builds(
            Resource, _resource_ids, st.none() | st.just("wm"), _metadata, st.none() | _TIMES, st.none() | _TIMES
        ),
    )
    def write_resource(self, update: tuple[str, Any, dict[str, Any] | None], replacement: Resource | None) -> None:
        """``update_resource`` (partial), or ``save_resource`` when a replacement is drawn."""
        if replacement is not None:
            self._both("save_resource", replacement)
        else:
            self._both("update_resource", update[0], working_memory=update[1], metadata=update[2])

    @rule(
        where=st.one_of(
            st.tuples(st.just("swap_working_memory"), _resource_ids),
            st.tuples(st.just("swap_thread_working_memory"), _thread_ids),
        ),
        expected=st.sampled_from([None, "", "# wm", "🧠"]),
        value=st.sampled_from(["", "# wm", "🧠"]),
    )
    def swap_working_memory(self, where: tuple[str, str], expected: str | None, value: str) -> None:
        """Compare-and-set of a resource's or a thread's working memory."""
        self._both(where[0], where[1], expected, value)

    @rule(per_page=st.integers(0, 3) | st.just(False))
    def list_resource_ids(self, per_page: Any) -> None:
        """The first page of the resource listing (R-RESOURCES); later pages
        come by ``follow_cursor``, after whatever writes happen in between."""
        kwargs = {"per_page": per_page}
        actual, expected = self._both("list_resource_ids", **kwargs)
        self._remember("list_resource_ids", kwargs, actual, expected)

    @rule(
        source=_busy_thread_ids,
        into=_thread_ids,
        resource_id=st.none() | _resource_ids,
        picked=st.none() | st.lists(_message_ids, max_size=4),
        bounds=st.tuples(st.none() | _TIMES, st.none() | _TIMES),
        until=st.none() | _message_ids,
        newest=st.none() | st.integers(0, 4),
        ids=st.integers(0, 8),
    )
    def copy_thread(
        self,
        source: str,
        into: str,
        resource_id: str | None,
        picked: list[str] | None,
        bounds: tuple[datetime | None, datetime | None],
        until: str | None,
        newest: int | None,
        ids: int,
    ) -> None:
        """A clone or branch (R-LINEAGE) through the copy primitive, with every
        option: message ids, a date range, a cut at a message (a branch),
        the newest N, another resource, and too few new ids (the copy holds
        the first ones); an existing target id is a ConflictError on both."""
        assert self.adapter is not None
        found = self.portal.call(self.reference.get_thread, source)
        owner = resource_id or (found.resource_id if found is not None else "r1")
        self.copies += 1
        new = Thread(into, owner, "copy", {"cloned_from": source})
        keys: list[tuple[int, int] | None] = []
        for store in (self.adapter, self.reference):
            cut = [m for m in self.portal.call(store.get_messages, [until] if until else []) if m.thread_id == source]
            keys.append((to_us(cut[0].created_at), cut[0].sequence or 0) if cut and cut[0].created_at else None)
        lo, hi = (None if t is None else to_us(t) for t in bounds)
        new_ids = tuple(f"copy{self.copies}-{k}" for k in range(ids))
        chosen = None if picked is None else tuple(picked)
        plans = [CopyPlan(source, new, chosen, lo, hi, key, newest, new_ids, size_limit(new)) for key in keys]
        self._both("copy_thread", _PerStore((plans[0], plans[1])))

    @rule(resource_id=_resource_ids)
    def delete_resource(self, resource_id: str) -> None:
        """Erase a resource: its threads, their messages, its record (the
        answers list what went, and must agree)."""
        self._both("delete_resource", resource_id)

    @rule(
        kind=st.sampled_from(["messages", "threads"]),
        cutoff=st.one_of(_TIMES.map(lambda t: {"before": t}), st.just({"older_than": timedelta(microseconds=1)})),
        resource_id=st.none() | _resource_ids,
        batch_size=st.integers(1, 3),
        dry_run=st.booleans(),
    )
    def prune(self, kind: str, cutoff: dict[str, Any], resource_id: str | None, batch_size: int, dry_run: bool) -> None:
        """Retention (R-PRUNE): messages or threads older than a cutoff, in
        small batches, sometimes a dry run (reports and the state after must agree)."""
        policy = RetentionPolicy(kind, resource_id=resource_id, batch_size=batch_size, **cutoff)  # type: ignore[arg-type]
        self._both("prune", policy, dry_run=dry_run)

    # ------------------------------------------------------------------ reads

    @rule(
        read=st.one_of(
            st.tuples(st.just("get_thread"), _thread_ids, st.none() | _resource_ids),
            st.tuples(st.just("get_messages"), st.lists(_message_ids, max_size=4)),
            st.tuples(st.just("get_resource"), _resource_ids),
        )
    )
    def get_record(self, read: tuple[Any, ...]) -> None:
        """``get_thread``, ``get_messages`` or ``get_resource``."""
        self._both(read[0], *read[1:])

    # ------------------------------------------------------------------ errors and full state

    @rule(bad=_bad, operation=st.sampled_from(["list_messages", "list_threads"]))
    def invalid_query(self, bad: tuple[str, Any], operation: str) -> None:
        """A bad page bound, filter, order or date range: both must refuse it."""
        kind, value = bad
        kwargs: dict[str, Any] = {}
        if kind == "page":
            kwargs = {"page": value[0], "per_page": value[1]}
        elif kind == "metadata":
            kwargs = {"filter": {"metadata": value}}
        elif kind == "order":
            kwargs = {"order_by": value}
        else:
            kwargs = {"filter": {"date_range": value}}
            operation = "list_messages"
        if operation == "list_messages":
            kwargs["thread_id"] = "t1"
        actual, _ = self._both(operation, **kwargs)
        assert isinstance(actual, Failed), f"{operation}({kwargs}) was accepted"

    @invariant()
    def counters_agree(self) -> None:
        """After every step, each thread's and resource's unfiltered total (the
        message counters the adapter's writes keep) equals the reference's
        (R-PAGE). Silent while they agree: only a difference joins the script."""
        if self.adapter is None:
            return
        calls = [_Step("list_messages", (tid,), {"per_page": 0}) for tid in THREAD_IDS]
        calls += [_Step("list_messages_by_resource", (rid,), {"per_page": 0}) for rid in RESOURCE_IDS]
        for call in calls:
            actual, expected = self.portal.call(self._call_both, self.adapter, self.reference, call)
            if not isinstance(actual, Page) or not isinstance(expected, Page) or actual.total != expected.total:
                note(call)
                note(_Answer(expected))
                assert_same(actual, expected, call)

    @rule()
    def compare_everything(self) -> None:
        """Every thread, message and resource (and the resource listing),
        compared in full."""
        label = f"await snapshot(store, {RESOURCE_IDS!r})"
        note(f"{label}  # the whole store")
        assert self.adapter is not None
        actual = self.portal.call(snapshot, self.adapter, RESOURCE_IDS)
        expected = self.portal.call(snapshot, self.reference, RESOURCE_IDS)
        assert_same(actual, expected, label)

    def teardown(self) -> None:
        try:
            if self.adapter is not None:
                self.portal.call(self.adapter.destroy)
            self.portal.call(self.reference.destroy)
        finally:
            self._portal_cm.__exit__(None, None, None)


def run_storage_machine(factory: StorageFactory, *, machine_settings: settings | None = None) -> None:
    """Run :class:`StorageStateMachine` against ``factory``'s adapter.

    Args:
        factory: the adapter's storage factory.
        machine_settings: Hypothesis settings; default: the active profile's
            (``MEMORY_CORE_HYPOTHESIS_PROFILE``) state-machine settings. The
            profile's shrinking time cap applies either way.

    Raises:
        AssertionError: the adapter answered differently from the reference
            store. The message names the operation with its arguments and
            where the answers differ; the notes hold the shrunk script of
            operations, each followed by the reference store's answer.
    """
    profile = active_profile()
    machine = type("StorageStateMachineRun", (StorageStateMachine,), {"factory": staticmethod(factory)})
    with shrink_time_limit(profile.shrink_seconds):
        run_state_machine_as_test(machine, settings=machine_settings or profile.stateful_settings())
