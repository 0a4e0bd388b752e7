"""The named benchmark workloads (issue 7).

A workload is one kind of call an agent makes, run the same way on every
subject. The runner creates one :class:`Workload` object per subject, awaits
:meth:`Workload.setup` (untimed: scratch threads, walking to a deep cursor),
then for op ``i`` calls :meth:`Workload.args` (untimed: building the caller's
objects), times :meth:`Workload.run` and then awaits :meth:`Workload.settle`
(untimed: a workload that must keep its data as it was undoes its write).

Storage workloads (``per_page`` is 20 throughout):

========================  =========================================================
``save_batch``            save 100 new messages in one call (scratch threads)
``save_one``              save one new message per call
``recall_newest``         newest 20 of a 40-message probe thread, ownership checked
``page_first``            first page of the deep thread (keyset API, no cursor)
``page_offset``           page 50 of 20 (offset 1,000) of the deep thread
``page_cursor``           the same window by cursor (depth 1,000)
``filter_meta``           first page of the deep thread where ``topic == "billing"``
``filter_date``           first page of the deep thread's middle half by date
``include_windows``       newest 20 plus 5 include targets with 2 before/after each
``list_threads``          first page (20) of one resource's threads, with the count
``agent_loop``            N concurrent tasks: save 2, recall newest 20, repeat
========================  =========================================================

Vector workload: ``semantic`` (top 10 by cosine, filtered by resource).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from memory_core_bench.dataset import Dataset, ThreadSpec, WriteStream
from memory_core_bench.subjects import Answer, Subject, Vector, VectorSubject

__all__ = [
    "PER_PAGE",
    "READ_WORKLOADS",
    "STORAGE_WORKLOADS",
    "VECTOR_WORKLOADS",
    "WORKLOADS",
    "WRITE_WORKLOADS",
    "AgentLoop",
    "Semantic",
    "Workload",
    "workload_names",
]

PER_PAGE = 20
SAVE_BATCH = 100
SCRATCH_THREADS = 20
DEEP_PAGE = 50
CURSOR_DEPTH = 1_000
INCLUDE_TARGETS = 5
INCLUDE_RANGE = 2
TOP_K = 10


class Workload(ABC):
    """One storage workload bound to one subject.

    Attributes:
        name / title: identifier and human title.
        needs: subject operations it calls (see ``Subject.ops``).
        writes: it adds data (run after every read workload).
        items_per_op: messages written per op (for items/s), 0 for reads.
        concurrency: tasks running ops at once (1 for all but ``agent_loop``).
        params: what the report shows about its shape (page, depth ...).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    needs: ClassVar[frozenset[str]]
    writes: ClassVar[bool] = False
    items_per_op: ClassVar[int] = 0
    concurrency: int = 1

    def __init__(self, dataset: Dataset, subject: Subject) -> None:
        self.dataset = dataset
        self.subject = subject
        self.params: dict[str, Any] = {}

    async def setup(self) -> None:
        """Untimed preparation (default: nothing)."""

    def args(self, i: int) -> Any:
        """Untimed per-op arguments for op ``i`` (default: ``i``)."""
        return i

    @abstractmethod
    async def run(self, args: Any) -> Answer | None:
        """The timed call; reads return their :class:`Answer`."""

    async def settle(self, args: Any) -> None:
        """Untimed, after each timed call of ``run(args)``: undo what it did
        when the workload must keep its data as it was (default: nothing)."""

    def written_thread(self) -> ThreadSpec | None:
        """A thread this (writing) workload filled, to check afterwards that
        another subject reads back the same messages; None for reads."""
        return None


class _Writes(Workload):
    writes = True
    batch: ClassVar[int]

    async def setup(self) -> None:
        self.stream: WriteStream = self.dataset.writer(f"{self.name}-{self.subject.kind}-{self.subject.label}")
        self.threads = [self.stream.scratch_thread(k) for k in range(SCRATCH_THREADS)]
        await self.subject.create_threads(self.threads)
        self.params = {"batch": self.batch, "threads": SCRATCH_THREADS}

    def args(self, i: int) -> Any:
        return self.subject.prepare(self.stream.messages(self.threads[i % SCRATCH_THREADS], self.batch))

    async def run(self, args: Any) -> None:
        await self.subject.save(args)

    def written_thread(self) -> ThreadSpec | None:
        return self.threads[0]


class SaveBatch(_Writes):
    """Save 100 new messages per call."""

    name = "save_batch"
    title = "save, batches of 100"
    needs = frozenset({"save"})
    batch = SAVE_BATCH
    items_per_op = SAVE_BATCH


class SaveOne(_Writes):
    """Save one new message per call."""

    name = "save_one"
    title = "save, one per call"
    needs = frozenset({"save"})
    batch = 1
    items_per_op = 1


class RecallNewest(Workload):
    """Newest 20 of a probe thread (round robin over the probes)."""

    name = "recall_newest"
    title = "recall newest 20"
    needs = frozenset({"recall_newest"})

    async def setup(self) -> None:
        self.threads = self.dataset.probes
        self.params = {"per_page": PER_PAGE, "thread_size": self.threads[0].size}

    def args(self, i: int) -> ThreadSpec:
        return self.threads[i % len(self.threads)]

    async def run(self, args: ThreadSpec) -> Answer:
        return await self.subject.recall_newest(args, PER_PAGE)


def _deep_pages(dataset: Dataset) -> int:
    return max(0, dataset.deep.size // PER_PAGE - 1)


class PageFirst(Workload):
    """First page of the deep thread through the keyset API (no cursor)."""

    name = "page_first"
    title = "first page (keyset)"
    needs = frozenset({"page_cursor"})

    async def setup(self) -> None:
        self.params = {"per_page": PER_PAGE, "depth": 0}

    async def run(self, args: Any) -> Answer:
        return await self.subject.page_cursor(self.dataset.deep, None, PER_PAGE)


class PageOffset(Workload):
    """Page 50 of 20 (offset 1,000) of the deep thread, by offset."""

    name = "page_offset"
    title = "page 50 of 20, offset"
    needs = frozenset({"page_offset"})

    async def setup(self) -> None:
        self.page = min(DEEP_PAGE, _deep_pages(self.dataset))
        self.params = {"per_page": PER_PAGE, "page": self.page, "depth": self.page * PER_PAGE}

    async def run(self, args: Any) -> Answer:
        return await self.subject.page_offset(self.dataset.deep, self.page, PER_PAGE)


class PageCursor(Workload):
    """The window at depth 1,000 of the deep thread, by cursor."""

    name = "page_cursor"
    title = "page at depth 1000, cursor"
    needs = frozenset({"page_cursor"})

    async def setup(self) -> None:
        depth = min(CURSOR_DEPTH, _deep_pages(self.dataset) * PER_PAGE)
        self.cursor = await self.subject.first_cursor(self.dataset.deep, PER_PAGE, depth)
        self.params = {"per_page": PER_PAGE, "depth": depth}

    async def run(self, args: Any) -> Answer:
        return await self.subject.page_cursor(self.dataset.deep, self.cursor, PER_PAGE)


class FilterMeta(Workload):
    """First page of the deep thread filtered on ``metadata.topic``."""

    name = "filter_meta"
    title = "metadata-filtered page"
    needs = frozenset({"filter_meta"})

    async def setup(self) -> None:
        self.params = {"per_page": PER_PAGE, "filter": {"topic": "billing"}}

    async def run(self, args: Any) -> Answer:
        return await self.subject.filter_meta(self.dataset.deep, "topic", "billing", PER_PAGE)


class FilterDate(Workload):
    """First page of the deep thread's middle half by ``created_at``."""

    name = "filter_date"
    title = "date-range page"
    needs = frozenset({"filter_date"})

    async def setup(self) -> None:
        times = [m.created_at_us for m in self.dataset.thread_messages(self.dataset.deep)]
        self.start = times[len(times) // 4]
        self.end = times[(3 * len(times)) // 4]
        self.params = {"per_page": PER_PAGE, "range": "middle half of the thread"}

    async def run(self, args: Any) -> Answer:
        return await self.subject.filter_date(self.dataset.deep, self.start, self.end, PER_PAGE)


class IncludeWindows(Workload):
    """Newest 20 of a probe thread plus 5 include targets ±2 in the deep thread."""

    name = "include_windows"
    title = "newest 20 + 5 includes ±2"
    needs = frozenset({"include_windows"})

    async def setup(self) -> None:
        deep = self.dataset.thread_messages(self.dataset.deep)
        step = max(1, len(deep) // (INCLUDE_TARGETS + 1))
        self.targets = [deep[min(len(deep) - 1, step * (k + 1))].id for k in range(INCLUDE_TARGETS)]
        self.threads = self.dataset.probes
        self.params = {"per_page": PER_PAGE, "targets": INCLUDE_TARGETS, "range": INCLUDE_RANGE}

    def args(self, i: int) -> ThreadSpec:
        return self.threads[i % len(self.threads)]

    async def run(self, args: ThreadSpec) -> Answer:
        return await self.subject.include_windows(args, self.targets, INCLUDE_RANGE, INCLUDE_RANGE, PER_PAGE)


class ListThreads(Workload):
    """First page (20) of a resource's threads, created_at DESC, with count."""

    name = "list_threads"
    title = "list threads of a resource"
    needs = frozenset({"list_threads"})

    async def setup(self) -> None:
        self.resources = self.dataset.resources
        self.params = {"per_page": PER_PAGE, "threads_per_resource": self.dataset.threads_per_resource}

    def args(self, i: int) -> str:
        return self.resources[i % len(self.resources)]

    async def run(self, args: str) -> Answer:
        return await self.subject.list_threads(args, 0, PER_PAGE)


class AgentLoop(Workload):
    """One agent turn: save the user's and the assistant's message, then
    recall the newest 20. ``concurrency`` tasks run turns at once, each in its
    own thread; an op is one turn."""

    name = "agent_loop"
    title = "agent loop (save 2, recall 20)"
    needs = frozenset({"save", "recall_newest"})
    writes = True
    items_per_op = 2

    def __init__(self, dataset: Dataset, subject: Subject, concurrency: int = 8) -> None:
        super().__init__(dataset, subject)
        self.concurrency = concurrency

    async def setup(self) -> None:
        self.stream = self.dataset.writer(f"{self.name}-{self.subject.kind}-{self.subject.label}")
        self.threads = [self.stream.scratch_thread(k) for k in range(self.concurrency)]
        await self.subject.create_threads(self.threads)
        self.params = {"concurrency": self.concurrency, "per_page": PER_PAGE}

    def args(self, i: int) -> Any:
        thread = self.threads[i % self.concurrency]
        return thread, self.subject.prepare(self.stream.messages(thread, 2))

    async def run(self, args: Any) -> Answer:
        thread, prepared = args
        await self.subject.save(prepared)
        return await self.subject.recall_newest(thread, PER_PAGE)

    def written_thread(self) -> ThreadSpec | None:
        """The first task's thread."""
        return self.threads[0]


class Semantic:
    """Top-10 cosine search filtered by resource (round robin over resources
    and 64 fixed query vectors). Not a :class:`Workload`: it runs on a
    :class:`VectorSubject`."""

    name: ClassVar[str] = "semantic"
    title: ClassVar[str] = "semantic top 10 by resource"
    writes: ClassVar[bool] = False
    items_per_op: ClassVar[int] = 0
    concurrency: int = 1

    def __init__(self, dataset: Dataset, subject: VectorSubject, dimension: int) -> None:
        self.dataset = dataset
        self.subject = subject
        self.queries: Vector = dataset.query_vectors(64, dimension)
        self.params: dict[str, Any] = {"top_k": TOP_K, "dimension": dimension, "filter": "resource_id"}

    async def setup(self) -> None:
        """Nothing to prepare."""

    def args(self, i: int) -> tuple[Vector, str]:
        """Query vector and resource for op ``i``."""
        resources = self.dataset.resources
        return self.queries[i % len(self.queries)], resources[i % len(resources)]

    async def run(self, args: tuple[Vector, str]) -> Answer:
        """The timed search."""
        query, resource = args
        return await self.subject.search(query, TOP_K, resource)

    async def settle(self, args: tuple[Vector, str]) -> None:
        """Nothing: a read."""

    def written_thread(self) -> ThreadSpec | None:
        """None: a read."""
        return None


READ_WORKLOADS: tuple[type[Workload], ...] = (
    RecallNewest,
    PageFirst,
    PageOffset,
    PageCursor,
    FilterMeta,
    FilterDate,
    IncludeWindows,
    ListThreads,
)
WRITE_WORKLOADS: tuple[type[Workload], ...] = (SaveBatch, SaveOne, AgentLoop)
STORAGE_WORKLOADS: tuple[type[Workload], ...] = READ_WORKLOADS + WRITE_WORKLOADS
VECTOR_WORKLOADS: tuple[str, ...] = (Semantic.name,)
WORKLOADS: dict[str, str] = {w.name: w.title for w in STORAGE_WORKLOADS} | {Semantic.name: Semantic.title}
"""Every workload name -> title, in run order."""


def workload_names() -> list[str]:
    """Every workload name, in run order."""
    return list(WORKLOADS)
