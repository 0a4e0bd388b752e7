"""Streaming import of ``memory-core/jsonl`` lines into a store: every record
validated before it is written, idempotent by id, resumable."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from memory_core.clock import TIME_MAX
from memory_core.errors import ConflictError, ValidationError
from memory_core.lineage import writing_lineage
from memory_core.models import Message, Resource, Thread
from memory_core.storage import Storage
from memory_core.transfer.digest import Summary, first_difference
from memory_core.transfer.records import (
    COPY_IT_WHOLE,
    FORMAT,
    VERSION,
    TransferError,
    decode,
    encode,
    message_record,
    resource_record,
    thread_record,
)

__all__ = ["BATCH_SIZE", "ImportReport", "import_lines", "verify_lines"]

BATCH_SIZE = 500
"""Messages written per ``save_messages`` call."""

IMPORTING = TIME_MAX
"""The ``updated_at`` a thread holds while an import writes messages into it
(the top of the R-TIME range, where a bump saturates, so saving the batch
keeps it): a thread stored as in the file but for this ``updated_at`` is one
an interrupted import left, which a re-run completes. Any other stored
``updated_at`` than the file's is a write after the export."""

_KINDS = ("resources", "threads", "messages")

_YIELD_EVERY = 200
"""Lines read between two yields to the event loop (``asyncio.sleep(0)``):
reading a file and checking its lines never waits on I/O, so without them
:func:`verify_lines` held the loop for the whole file (seconds for a large
export) and a cancellation (Ctrl-C, a timeout) landed only at its end. A
few milliseconds' work on a loaded machine."""


@dataclass
class ImportReport:
    """What an import did.

    Attributes:
        written: records written, per kind (``resources``, ``threads``, ``messages``).
        skipped: records already in the destination exactly as in the file
            (a re-run or a resumed import), per kind.
        trailer: the file's trailer (counts and digests), which the records
            read were checked against.
        in_flight: messages of a batch whose write was sent and not yet
            acknowledged (0 between batches): interrupted there, the batch
            landed whole or not at all, and only a read can tell which.
    """

    written: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_KINDS, 0))
    trailer: dict[str, Any] = field(default_factory=dict)
    in_flight: int = 0

    @property
    def messages(self) -> int:
        """Message records handled (written or skipped)."""
        return self.written["messages"] + self.skipped["messages"]

    @property
    def may_have_written(self) -> bool:
        """Whether any record was written, or a batch's write was sent."""
        return self.in_flight > 0 or any(self.written.values())


class _Import:
    """One import's state: the resource being imported, its threads (to put
    their ``updated_at`` back once its messages are in) and a batch of
    validated messages not yet written. Without a storage it only checks
    (:func:`verify_lines`): the same rules, nothing read or written."""

    def __init__(
        self,
        storage: Storage | None,
        batch_size: int,
        on_total: Callable[[int], None] | None,
        on_progress: Callable[[int], None] | None,
        on_resource: Callable[[str], Awaitable[None]] | None,
        report: ImportReport | None = None,
    ) -> None:
        self.storage = storage
        self.batch_size = batch_size
        self.on_total = on_total
        self.on_progress = on_progress
        self.on_resource = on_resource
        self.report = ImportReport() if report is None else report
        self.summary = Summary()
        self.group: str | None = None
        self.threads: dict[str, Thread] = {}
        self.batch: dict[str, tuple[int, Message]] = {}
        self.resumed: dict[str, int] = {}
        self.declared = 0

    async def line(self, text: str | bytes, number: int) -> None:
        """Handle one line (the trailer: check it and keep it in the report)."""
        try:
            kind, value, model = decode(text, number)
        except TransferError as exc:
            if number == 1:  # the input does not start as an export does
                raise _not_an_export(exc.what) from None
            raise
        where = f"line {number}"
        if number == 1:
            if kind != "header" or value.get("format") != FORMAT:
                raise _not_an_export("the first line must be its header")
            if value.get("version") != VERSION:
                raise TransferError(where, f"format version {value.get('version')!r}; this memory-core reads {VERSION}")
            declared = value.get("messages")
            if type(declared) is not int or declared < 0:
                raise TransferError(
                    f"{where}: messages", f"must be the export's message count (an int >= 0), not {declared!r}"
                )
            self.declared = declared
            if self.on_total is not None:
                self.on_total(declared)
            return
        if kind == "header":
            raise TransferError(where, "a second header")
        if kind == "trailer":
            await self.finish_group()
            self.check_trailer(value, where)
            return
        if isinstance(model, Resource):
            await self.resource(model, where)
        elif isinstance(model, Thread):
            await self.thread(model, where)
        else:
            if not isinstance(model, Message):
                raise ValidationError(where, f"a record of unknown kind {type(model).__name__}")
            await self.message(model, number, where)

    async def enter(self, resource_id: str) -> None:
        if resource_id != self.group:
            await self.finish_group()
            self.group = resource_id

    async def resource(self, resource: Resource, where: str) -> None:
        if resource.id == self.group and (self.threads or self.batch):
            raise TransferError(where, f"resource {resource.id!r} comes after its threads")
        await self.enter(resource.id)
        record = resource_record(resource)
        self.summary.add("resource", record, encode(record))
        if self.storage is None:
            return
        stored = await self.storage.get_resource(resource.id)
        if stored is None:
            await self.storage.save_resource(resource)
            self.report.written["resources"] += 1
        elif encode(resource_record(stored)) == encode(record):
            self.report.skipped["resources"] += 1
        else:
            raise _conflict(f"{where}: resource {resource.id!r}")

    async def thread(self, thread: Thread, where: str) -> None:
        await self.enter(thread.resource_id)
        if thread.id in self.threads:
            raise TransferError(where, f"thread {thread.id!r} appears twice")
        record = thread_record(thread)
        self.summary.add("thread", record, encode(record))
        self.threads[thread.id] = thread
        if self.storage is None:
            return
        stored = await self.storage.get_thread(thread.id)
        if stored is None:
            await self.storage.insert_thread(thread)
            self.report.written["threads"] += 1
        elif encode(thread_record(stored)) == encode(record):
            self.report.skipped["threads"] += 1
        elif _interrupted(stored, thread):
            # An import of this file stopped (cancelled, failed, killed) while
            # writing messages into it; finish_group puts the file's
            # updated_at back once the thread holds exactly the file's messages.
            self.resumed[thread.id] = 0
            self.report.skipped["threads"] += 1
        else:
            # updated_at counts too: a write after the export (a prune, a new
            # message, an edit) bumped it, and importing again would undo it.
            raise _conflict(f"{where}: thread {thread.id!r}", _differences(thread_record(stored), record))

    async def message(self, message: Message, number: int, where: str) -> None:
        if message.resource_id != self.group or message.thread_id not in self.threads:
            raise TransferError(
                where, f"message {message.id!r} comes before the record of thread {message.thread_id!r}"
            )
        if message.id in self.batch:
            raise TransferError(where, f"message {message.id!r} appears twice")
        record = message_record(message)
        self.summary.add("message", record, encode(record))
        self.batch[message.id] = (number, message)
        if message.thread_id in self.resumed:
            self.resumed[message.thread_id] += 1
        if len(self.batch) >= self.batch_size:
            await self.flush()

    async def flush(self) -> None:
        """Write the batch's messages the destination lacks, in file order
        (so they get sequences in R-ORDER), then put back the ``updated_at``
        of their threads; refuse the whole batch if one differs from what
        the destination holds (ConflictError)."""
        if not self.batch:
            return
        if self.storage is None:
            self.batch.clear()
            return
        stored = {m.id: m for m in await self.storage.get_messages(list(self.batch))}
        new = []
        for number, message in self.batch.values():
            old = stored.get(message.id)
            if old is None:
                new.append(message)
            elif encode(message_record(old)) != encode(message_record(message)):
                raise _conflict(f"line {number}: message {message.id!r}")
        if new:
            receiving = list(dict.fromkeys(m.thread_id for m in new))
            # Marked first (IMPORTING, which the save's bump keeps), so that a
            # re-run after an interruption between here and the put-back
            # tells this import's leftovers from a write after the export.
            for thread_id in receiving:
                await self.storage.save_thread(replace(self.threads[thread_id], updated_at=IMPORTING))
            self.report.in_flight = len(new)
            await self.storage.save_messages(new)
            # Counted as soon as acknowledged: an interruption during the
            # put-back below must not report the batch unwritten.
            self.report.written["messages"] += len(new)
            self.report.in_flight = 0
            # Every thread in self.threads was new, held exactly the file's
            # record or was marked by an interrupted import of it, so this
            # puts back the file's value (never an older value over a newer
            # write).
            for thread_id in receiving:
                await self.storage.save_thread(self.threads[thread_id])
        self.report.skipped["messages"] += len(self.batch) - len(new)
        self.batch.clear()
        if self.on_progress is not None:
            self.on_progress(self.report.messages)

    async def finish_group(self) -> None:
        """Flush, put back the ``updated_at`` of threads an interrupted
        import left marked (:func:`_interrupted`; ConflictError when such a
        thread holds messages the file lacks), then run the per-resource
        hook."""
        await self.flush()
        if self.storage is not None:
            for thread_id, count in self.resumed.items():
                held = await self.storage.list_messages(thread_id, per_page=0)
                if held.total != count:
                    raise _conflict(f"thread {thread_id!r}", f"it holds {held.total} messages, the file {count}")
                await self.storage.save_thread(self.threads[thread_id])
        self.resumed.clear()
        if self.group is not None and self.on_resource is not None:
            await self.on_resource(self.group)
        self.threads.clear()
        self.group = None

    def check_trailer(self, trailer: dict[str, Any], where: str) -> None:
        difference = first_difference(trailer, self.summary.trailer())
        if difference is not None:
            raise TransferError(
                where, f"the records read do not match the trailer: {difference.between('the trailer', 'the records')}"
            )
        counted = self.summary.counts.get("messages", 0)
        if counted != self.declared:
            raise TransferError(
                "line 1: messages",
                f"the header counts {self.declared} messages, the file holds {counted} (and its trailer agrees): "
                "the header was altered or the export is damaged; export the store again",
            )
        self.report.trailer = trailer


def _conflict(what: str, differs: str = "") -> ConflictError:
    """The refusal of a record that the destination holds with other
    content (``differs``: how, when known), naming the next step."""
    how = f" ({differs})" if differs else ""
    return ConflictError(
        f"{what} exists in the destination with other content{how}; import into a store that does not hold it, "
        "or delete it there first (Memory.delete_resource, delete_thread or delete_messages)"
    )


def _differences(stored: dict[str, Any], record: dict[str, Any]) -> str:
    """The fields in which a stored record differs from the file's, each with
    both values (``updated_at: destination X, file Y``) when short."""
    parts = []
    for name, theirs in record.items():
        mine = stored.get(name)
        if encode({"v": mine}) != encode({"v": theirs}):
            short = len(str(mine)) + len(str(theirs)) < 120
            parts.append(f"{name}: destination {mine!r}, file {theirs!r}" if short else name)
    if stored.get("updated_at") != record.get("updated_at"):
        parts.append("a write after the export changed it")
    return "; ".join(parts)


def _interrupted(stored: Thread, thread: Thread) -> bool:
    """Whether ``stored`` is the file's ``thread`` but for the
    :data:`IMPORTING` mark: what an import that stopped while writing
    messages into it (before putting the file's value back) leaves."""
    if stored.updated_at != IMPORTING or thread.updated_at == IMPORTING:
        return False
    mine, theirs = thread_record(stored), thread_record(thread)
    return encode({**mine, "updated_at": None}) == encode({**theirs, "updated_at": None})


async def _lines(lines: AsyncIterable[str | bytes] | Iterable[str | bytes]) -> AsyncIterable[str | bytes]:
    if isinstance(lines, AsyncIterable):
        async for line in lines:
            yield line
    else:
        for line in lines:
            yield line


GIVE_AN_EXPORT = "give a file that memory-core export wrote"
"""The next step when the input is not an export at all."""


def _not_an_export(what: str) -> TransferError:
    """The error for input whose first line is not an export's header:
    field ``input``, ``what`` quoted as line 1's fault."""
    return TransferError("input", f"not a {FORMAT} export (line 1: {what})", next_step=GIVE_AN_EXPORT)


def _cut_mid_line(text: str | bytes, error: TransferError) -> bool:
    """Whether ``text`` failed as a line a truncated file ends with: no
    newline at its end and not valid JSON (the caller checks it is the last)."""
    end = text[-1:]
    return end not in ("\n", b"\n") and error.reason.startswith("not valid JSON")


async def import_lines(
    storage: Storage,
    lines: AsyncIterable[str | bytes] | Iterable[str | bytes],
    *,
    batch_size: int = BATCH_SIZE,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_resource: Callable[[str], Awaitable[None]] | None = None,
    report: ImportReport | None = None,
) -> ImportReport:
    """Import an export (see :mod:`memory_core.transfer`) into ``storage``.

    The import writes as it reads: a file that breaks a rule further on (a
    tampered record the trailer's digest catches, a line out of order) stops
    it there, with the records before it written. To refuse such a file
    before anything is written, check it whole with :func:`verify_lines`
    first (``memory-core import`` does, on a file or on stdin spooled to a
    temporary file).

    Each record is validated (and messages checked against their thread)
    before it is written; a message batch is checked as a whole before any of
    it is written. Records already in the destination exactly as in the file
    are skipped, so importing twice changes nothing and an interrupted import
    is resumed by running it again.

    The unit of an import, cancelled (a timeout, Ctrl-C), killed or failed
    at any await point, is one record (a resource, a thread) or one message
    batch, its threads marked (``updated_at`` = :data:`IMPORTING`) before it
    and put back after it: a reader may see a thread holding part of its
    messages, or the batch's threads marked, until the import is run again,
    which completes it (a thread stored exactly as in the file but for the
    mark is taken for one such interruption left behind when it holds no
    message the file lacks, and is put back to the file's value; otherwise it
    is a conflict). ``created_at``, ``updated_at``, working
    memory (resource and thread) and R-ORDER within each resource are kept
    exactly: messages are written in file order, which the export took from
    R-ORDER. Nothing in the destination is deleted or replaced: a record
    whose id is stored with other content (any field, ``updated_at`` of a
    thread included) stops the import before that record is written. Blank
    lines after the trailer are ignored.

    Args:
        storage: an opened destination store.
        lines: the file's lines (str or bytes, with or without newline), sync
            or async.
        batch_size: messages per write (default :data:`BATCH_SIZE`).
        on_total: called with the header's message count (for a progress bar).
        on_progress: called with the number of messages handled so far after
            each batch.
        on_resource: awaited with each resource id once its records are in
            (the re-embed hook of ``memory-core import --vector``).
        report: the :class:`ImportReport` to fill as records are written
            and skipped (default: a new one), for a caller that may cut the
            import short (a timeout, Ctrl-C) and must then say what was
            written: its counts are those of whole records and batches.

    Returns:
        :class:`ImportReport` (``report`` when given).

    Raises:
        TransferError: a malformed line (named by number), records out of
            order, a header of another format or version, a mismatch with the
            trailer, or input that ends before its trailer (the records before
            it are imported completely; the error's ``written`` and message
            say how many).
        ConflictError: an id stored in the destination with other content.
        ValidationError: a bad ``batch_size``.
        BackendError: the store failed.
    """
    if type(batch_size) is not int or batch_size < 1:
        raise ValidationError("batch_size", f"must be an int >= 1, got {batch_size!r}")
    state = _Import(storage, batch_size, on_total, on_progress, on_resource, report)
    try:
        with writing_lineage():  # an export's clones keep their lineage (R-LINEAGE)
            return await _import(state, lines)
    except TransferError as exc:
        if exc.written or not any(state.report.written.values()):
            raise
        raise TransferError(exc.field, exc.reason, exc.rule, state.report.written) from None


async def verify_lines(lines: AsyncIterable[str | bytes] | Iterable[str | bytes]) -> dict[str, Any]:
    """Check a whole export without a store: the header (format, version),
    every record (as :func:`import_lines` validates it), their order, and the
    trailer (present, matching the counts and digests of the records read).
    Nothing is read from or written to any store. Memory: as
    :func:`import_lines` (a digest per thread, the current resource's thread
    ids), nothing per message. It yields to the event loop every
    few hundred lines, so a cancellation (Ctrl-C in ``memory-core
    import``, a timeout) stops it within milliseconds, not at the file's end.

    Args:
        lines: the file's lines, as for :func:`import_lines` (read once).

    Returns:
        The trailer (counts and digests).

    Raises:
        TransferError: the first line that breaks a rule (named by number),
            a header of another format or version, empty input, input that
            ends before its trailer, or records that do not match it.
    """
    state = _Import(None, BATCH_SIZE, None, None, None)
    return (await _import(state, lines)).trailer


async def _import(state: _Import, lines: AsyncIterable[str | bytes] | Iterable[str | bytes]) -> ImportReport:
    number = 0
    source = aiter(_lines(lines))
    async for text in source:
        number += 1
        if number % _YIELD_EVERY == 0:
            await asyncio.sleep(0)  # other tasks run, a cancellation lands
        if state.report.trailer:
            if not text.strip():
                continue  # blank lines after the trailer are harmless
            raise TransferError(f"line {number}", "a record after the trailer")
        try:
            await state.line(text, number)
        except TransferError as exc:
            if _cut_mid_line(text, exc) and await anext(source, None) is None:
                raise TransferError(
                    exc.field,
                    "cut off mid-line (the last line has no newline and is not a whole record, no trailer follows): "
                    "the export is truncated, a write or copy that stopped early",
                    next_step=COPY_IT_WHOLE,
                ) from None
            raise
    if number == 0:
        raise TransferError("input", "empty: no header")
    if not state.report.trailer:
        await state.finish_group()
        raise TransferError("input", f"ends at line {number} without a trailer: the export is incomplete")
    return state.report
