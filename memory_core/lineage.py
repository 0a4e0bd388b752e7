"""Conversations as a tree: clones, branches and their lineage (R-LINEAGE).

A clone copies a thread's messages (all, or a selection) into a new thread;
a branch copies them up to and including one message, so the new thread can
continue the conversation differently from there. Both record where they
came from, and that record is plain data on the new thread: four reserved,
top-level metadata keys (:data:`LINEAGE_KEYS`).

- ``cloned_from``: the source thread's id (the only key stores written
  before lineage had; such threads read as clones with an unknown source
  resource and last message).
- ``cloned_from_resource``: the resource that owned the source.
- ``cloned_last_message_id``: the id of the last source message the copy
  holds (None when it holds none).
- ``cloned_from_created_at``: the source thread's ``created_at`` (ISO 8601,
  UTC, microseconds), so a thread created later under the same id (a
  deleted conversation started again under its name) is not taken for the
  source. Records written before it was kept name the source by id only.

Only a real clone or branch (or an import restoring an export) writes these
keys: every other thread write that gives one a value the stored thread does
not hold is refused (:func:`check_hand_set_lineage`), so ``metadata.cloned_from``
set by hand on an ordinary thread does not make it look like a clone, on any
backend. Threads of stores written before keep the lineage they hold.

The time of the copy is the new thread's ``created_at``. Because the record
is top-level scalar metadata, every lineage query is an ordinary thread
listing (R-META equality, keyset cursors, R-OWN), composed here once and
identical on every backend: no adapter writes a line for it.

Deleting a source leaves its clones readable: their ``cloned_from`` then names
an id that no longer resolves: :func:`source_thread` returns None, and a
thread later created under that id is not their source either (its
``created_at`` is not the recorded one), so neither :func:`source_thread`
nor :func:`clone_history` leads from them to it (:func:`list_clones` of the
id still lists them: see there).
Erasing a resource (:meth:`BaseStorage.delete_resource
<memory_core.storage.BaseStorage.delete_resource>`) nulls the four keys on
every surviving thread whose record names that resource, so no lineage
points into erased data.

Everything here is composed from public storage calls; every input is checked
before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memory_core import codec
from memory_core.clock import to_us
from memory_core.errors import NotFoundError, OwnershipError, ValidationError
from memory_core.ids import new_message_id, new_message_ids
from memory_core.models import (
    DateRange,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    Page,
    PerPage,
    Thread,
    ThreadFilter,
)
from memory_core.validation import (
    MAX_MESSAGE_BYTES,
    check_date_range,
    check_id,
    check_id_list,
    check_json_object,
    check_non_negative_int,
    check_text,
    coerce_model,
)

if TYPE_CHECKING:
    from memory_core.storage import Storage

__all__ = [
    "LINEAGE_KEYS",
    "Clone",
    "CopyPlan",
    "Lineage",
    "branch_thread",
    "check_hand_set_lineage",
    "clone_history",
    "clone_thread",
    "forget_resource",
    "get_lineage",
    "lineage_of",
    "list_clones",
    "size_limit",
    "source_thread",
    "writing_lineage",
]

SOURCE = "cloned_from"
SOURCE_RESOURCE = "cloned_from_resource"
LAST_MESSAGE = "cloned_last_message_id"
SOURCE_CREATED = "cloned_from_created_at"
LINEAGE_KEYS = (SOURCE, SOURCE_RESOURCE, LAST_MESSAGE, SOURCE_CREATED)
"""The reserved thread-metadata keys that hold a clone's lineage. A
``metadata`` override passed to :func:`clone_thread` or :func:`branch_thread`
may not set them (ValidationError, R-LINEAGE)."""

_RULE = "R-LINEAGE"
_ERASE_PAGE = 100

_WRITING_LINEAGE: ContextVar[bool] = ContextVar("memory_core_writing_lineage", default=False)


@contextmanager
def writing_lineage() -> Iterator[None]:
    """Within it (this task and what it awaits), thread writes may set the
    lineage keys: the calls here that record or erase lineage, and an import
    restoring an export (:mod:`memory_core.transfer`). Everywhere else
    :func:`check_hand_set_lineage` refuses them."""
    token = _WRITING_LINEAGE.set(True)
    try:
        yield
    finally:
        _WRITING_LINEAGE.reset(token)


async def check_hand_set_lineage(storage: Storage, thread_id: str, metadata: Mapping[str, Any] | None) -> None:
    """Refuse lineage set by hand: a thread write (``save_thread``,
    ``insert_thread``, ``update_thread``, so every ``Memory`` call and seam
    that writes a thread) whose ``metadata`` gives a key of
    :data:`LINEAGE_KEYS` a value other than the one the stored thread
    ``thread_id`` holds (a missing key or thread holds None). So only a real
    clone or branch makes a thread a clone, and lineage is all or nothing: a
    clone's keys cannot be changed or nulled one by one (erasure nulls them
    all, within :func:`writing_lineage`). The same on every backend; a clone
    read and saved back whole keeps its lineage, a thread that is no clone
    may carry the keys as None (nothing changes), and threads of stores
    written before keep theirs. Reads the stored thread only when such a key
    is given (outside :func:`writing_lineage`).

    Raises:
        ValidationError: field ``metadata.<key>``, rule R-LINEAGE; nothing
            has been written.
    """
    if metadata is None or _WRITING_LINEAGE.get():
        return
    claimed = {key: metadata[key] for key in LINEAGE_KEYS if key in metadata}
    if not claimed:
        return
    stored = await storage.get_thread(thread_id)
    held = {} if stored is None else stored.metadata
    for key, value in claimed.items():
        if held.get(key) != value:
            raise ValidationError(
                f"metadata.{key}",
                "is reserved for the lineage a clone or branch records (clone_thread, branch_thread): "
                "it cannot be set or changed by hand",
                _RULE,
            )


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where a clone or branch came from (Mastra's clone metadata).

    Attributes:
        source_thread_id: the thread it was copied from. It may no longer
            resolve: deleting a source leaves its clones.
        source_resource_id: the resource that owned the source; None for a
            clone written before lineage was recorded (same resource then).
        cloned_at: when the copy was made (the clone thread's ``created_at``,
            UTC).
        last_message_id: the last source message the copy holds, None when it
            holds none or the record predates lineage.
        source_created_at: the source's ``created_at`` when the copy was
            made (UTC); None for a record written before it was kept.
    """

    source_thread_id: str
    source_resource_id: str | None
    cloned_at: datetime | None
    last_message_id: str | None
    source_created_at: datetime | None = None

    def names(self, thread: Thread) -> bool:
        """Whether ``thread`` (read under :attr:`source_thread_id`) is this
        record's source: the same ``created_at`` when the record has one,
        else (a record written before it was kept) any thread of that id."""
        return thread.id == self.source_thread_id and self.source_created_at in (None, thread.created_at)


def _stamp(thread: Thread) -> str | None:
    """A source's ``created_at`` as :data:`SOURCE_CREATED` holds it."""
    created = thread.created_at
    return None if created is None else created.astimezone(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True, slots=True)
class Clone:
    """What :func:`clone_thread` and :func:`branch_thread` made.

    The copy runs inside the backend, so no message body comes back: read
    the copies with ``list_messages(clone.thread.id, ...)`` when needed.

    Attributes:
        thread: the new thread, as stored.
        message_ids: source message id -> copy id, one entry per copy, in
            R-ORDER (the copies' order in the new thread).
    """

    thread: Thread
    message_ids: dict[str, str]


@dataclass(frozen=True, slots=True)
class CopyPlan:
    """One copy for :meth:`BaseStorage.copy_thread
    <memory_core.storage.BaseStorage.copy_thread>`: which source messages,
    into which new thread, under which ids. Checked by the core.

    The selection, in R-ORDER ``(created_at, sequence)`` ASC: the messages of
    ``source_id`` whose id is in ``message_ids`` (None: any), whose
    ``created_at`` lies in ``[created_from_us, created_to_us]`` (µs,
    inclusive; None: open) and whose key is at most ``until`` (None: no
    cut); then only the newest ``newest`` of those (None: all).

    Attributes:
        source_id: the source thread.
        thread: the new thread, times resolved, ``last_message_at`` None.
        message_ids: restrict to these source message ids, or None.
        created_from_us / created_to_us: inclusive bounds on ``created_at``.
        until: ``(created_at µs, sequence)`` of the last message to copy, or
            None.
        newest: keep only the newest N selected (N >= 0), or None.
        new_ids: ids for the copies: the k-th selected message's copy gets
            ``new_ids[k]``; at least as many as the selection (extra unused).
        size_limit: R-SIZE for the copies: a selected message whose JSON
            ``role`` + ``type`` + ``content`` + ``metadata`` (UTF-8 bytes, as
            :func:`memory_core.codec.dumps` writes them) exceed this makes a
            copy over 15 MiB: raise ``ValidationError("copy of message
            '<id>'", ..., "R-SIZE")`` and write nothing.
    """

    source_id: str
    thread: Thread
    message_ids: tuple[str, ...] | None
    created_from_us: int | None
    created_to_us: int | None
    until: tuple[int, int] | None
    newest: int | None
    new_ids: tuple[str, ...]
    size_limit: int

    def select(self, ordered: Sequence[Message]) -> list[Message]:
        """The selection from the source's messages already bounded by the
        date range, in R-ORDER: the reference for every adapter."""
        chosen = [m for m in ordered if self._keeps(m)]
        if self.newest is not None:
            chosen = chosen[max(0, len(chosen) - self.newest) :] if self.newest else []
        return chosen

    def copies(self, originals: Sequence[Message]) -> list[Message]:
        """The new messages for ``originals`` (the selection), ready for
        ``_save_messages``: new ids, the new thread and owner, no sequence."""
        thread_id, owner = self.thread.id, self.thread.resource_id
        return [
            replace(m, id=new, thread_id=thread_id, resource_id=owner, sequence=None)
            for m, new in zip(originals, self.new_ids, strict=False)
        ]

    def oversized(self, message: Message) -> bool:
        """Whether the copy of ``message`` would exceed :attr:`size_limit`
        (for an adapter that must look at a message to know)."""
        parts = (message.role, message.type, message.content, message.metadata)
        return sum(len(codec.dumps(part).encode("utf-8")) for part in parts) > self.size_limit

    def too_large(self, message_id: str) -> ValidationError:
        """The error for a selected message whose copy would exceed
        :attr:`size_limit` (the adapter raises it, writing nothing)."""
        return ValidationError(f"copy of message {message_id!r}", "would serialise over the 15 MiB limit", "R-SIZE")

    def _keeps(self, message: Message) -> bool:
        if self.message_ids is not None and message.id not in self.message_ids:
            return False
        if self.until is None:
            return True
        created = message.created_at
        return created is not None and (to_us(created), message.sequence or 0) <= self.until


def lineage_of(thread: Thread) -> Lineage | None:
    """The lineage record of a thread already read, or None when it is not a
    clone (no ``cloned_from`` str: never cloned, or its source's resource was
    erased)."""
    source = thread.metadata.get(SOURCE)
    if not isinstance(source, str):
        return None
    owner = thread.metadata.get(SOURCE_RESOURCE)
    last = thread.metadata.get(LAST_MESSAGE)
    return Lineage(
        source,
        owner if isinstance(owner, str) else None,
        thread.created_at,
        last if isinstance(last, str) else None,
        _parse_stamp(thread.metadata.get(SOURCE_CREATED)),
    )


def _parse_stamp(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).astimezone(UTC)
    except ValueError:  # not written by a clone (the key is reserved): no creation time to check
        return None


async def clone_thread(
    storage: Storage,
    source_id: str,
    new_id: str | None = None,
    *,
    resource_id: str | None = None,
    source_resource_id: str | None = None,
    title: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    message_ids: Sequence[str] | None = None,
    date_range: DateRange | Mapping[str, Any] | None = None,
    message_limit: int | None = None,
) -> Clone:
    """Copy a thread (or a selection of its messages) into a new thread.

    Selection, applied in this order: ``message_ids`` keeps only those
    messages of the source (ids of other threads, or unknown, are skipped);
    ``date_range`` only messages inside it (R-DATE: inclusive unless a bound
    says exclusive); ``message_limit`` only the newest N of what is left (0:
    none). Copies keep ``created_at``, role, type, content, metadata and
    order, and get new UUIDv7 ids (:func:`memory_core.ids.new_message_id`).

    Ownership: the copy belongs to ``resource_id`` (default: the source's
    resource). ``source_resource_id`` is the caller's claim to own the
    source: when given it must be the source's owner; cloning into another
    resource requires it. Vectors follow through :class:`memory_core.Memory`,
    which copies the sources' points in the vector store under the new ids
    and resource, and embeds only copies whose source has none
    (:meth:`memory_core.indexing.VectorIndex.copy`).

    The new thread's title is ``title`` when given, else ``"Clone of <source
    title>"`` (``""`` for an untitled source); its metadata is the source's,
    updated with ``metadata``, plus the lineage keys (:data:`LINEAGE_KEYS`).

    Args:
        storage: the store holding the source; the copy is written there.
        source_id: the thread to copy.
        new_id: the new thread's id (default: a new UUIDv7); must not exist.
        resource_id: the copy's owner. Default: the source's.
        source_resource_id: the source's owner, as the caller knows it.
        title: the new title (str).
        metadata: JSON object merged over the source's metadata; may not
            set a key of :data:`LINEAGE_KEYS`.
        message_ids: copy only these source messages (a list of ids).
        date_range: copy only messages whose ``created_at`` lies inside;
            a range holding no instant (start after end, or equal with an
            exclusive bound) is refused, as a mistake (``list_messages``
            answers such a range with no messages).
        message_limit: copy only the newest N (an int >= 0).

    Returns:
        :class:`Clone`: the thread, its copies and the id mapping.

    Raises:
        ValidationError: a bad argument (R-ID, R-JSON, R-DATE: also an
            empty ``date_range``, R-LINEAGE),
            ``new_id == source_id``, or a copy over R-SIZE; nothing written.
        NotFoundError: no source thread.
        OwnershipError: ``source_resource_id`` is not the source's owner, or
            another target resource without ``source_resource_id``.
        ConflictError: a thread ``new_id`` exists (a clone never overwrites).
    """
    checked = _Request.check(source_id, new_id, resource_id, source_resource_id, title, metadata)
    ids = None if message_ids is None else tuple(dict.fromkeys(check_id_list(message_ids, "message_ids")))
    if message_limit is not None:
        message_limit = check_non_negative_int(message_limit, "message_limit")
    lo, hi = check_date_range(date_range, "date_range")
    if lo is not None and hi is not None and lo > hi:  # a read answers []; a clone would be empty by mistake
        raise ValidationError(
            "date_range", "holds no instant (its start is after its end): the clone would copy nothing", "R-DATE"
        )
    source = await checked.source(storage)
    if ids is None:  # the newest match and the number of matches, in one read
        flt = None if date_range is None else MessageFilter(coerce_model(date_range, DateRange, "date_range"))
        request = MessagePageRequest(thread_ids=(source_id,), filter=flt, per_page=1, newest=True)
        page = await storage.page_messages(request)
        last, matches = (page.items[-1] if page.items else None), page.counted_total
    else:  # the listed messages of the source inside the range (R-ORDER)
        listed = [m for m in await storage.get_messages(ids) if m.thread_id == source_id and _inside(m, lo, hi)]
        last, matches = (listed[-1] if listed else None), len(listed)
    if message_limit is not None:
        matches = min(matches, message_limit)
    return await checked.copy(
        storage, source, CopySelection(ids, lo, hi, last if matches else None, message_limit, matches), "Clone of"
    )


async def branch_thread(
    storage: Storage,
    thread_id: str,
    at_message_id: str,
    new_id: str | None = None,
    *,
    resource_id: str | None = None,
    source_resource_id: str | None = None,
    title: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Clone:
    """Start a new thread holding ``thread_id``'s messages up to and including
    ``at_message_id`` (in R-ORDER), copied as :func:`clone_thread` copies;
    new messages then go to the branch as to any thread.

    Ids, ownership, metadata and lineage as in :func:`clone_thread`; the
    default title is ``"Branch of <source title>"``. The lineage's
    ``last_message_id`` is ``at_message_id``.

    Raises:
        ValidationError: a bad argument (as :func:`clone_thread`); nothing
            written.
        NotFoundError: no thread ``thread_id``, or ``at_message_id`` is not
            one of its messages.
        OwnershipError / ConflictError: as :func:`clone_thread`.
    """
    checked = _Request.check(thread_id, new_id, resource_id, source_resource_id, title, metadata)
    check_id(at_message_id, "at_message_id")
    source = await checked.source(storage)
    found = await storage.get_messages([at_message_id])
    if not found or found[0].thread_id != thread_id:
        raise NotFoundError(f"message {at_message_id!r} is not in thread {thread_id!r}")
    until = MessageFilter(DateRange(end=found[0].created_at))  # a bound on how many: ties after it count too
    request = MessagePageRequest(thread_ids=(thread_id,), filter=until, per_page=0)
    matches = (await storage.page_messages(request)).counted_total
    return await checked.copy(storage, source, CopySelection(None, None, None, found[0], None, matches), "Branch of")


async def get_lineage(storage: Storage, thread_id: str, resource_id: str | None = None) -> Lineage | None:
    """The lineage record of a thread (:func:`lineage_of`); None when the
    thread is not a clone, does not exist, or (with ``resource_id``) belongs
    to another resource.

    Raises:
        ValidationError: bad id (R-ID).
    """
    thread = await storage.get_thread(check_id(thread_id, "thread_id"), _owner(resource_id))
    return None if thread is None else lineage_of(thread)


async def source_thread(storage: Storage, thread_id: str, resource_id: str | None = None) -> Thread | None:
    """The thread a clone was copied from, or None: not a clone, the source
    is gone (a thread created later under its id is not it: see the
    module), or the source belongs to another resource than ``resource_id``
    (default: the clone's own), so no call here reveals a thread of another
    resource.

    Raises:
        ValidationError: bad id (R-ID).
    """
    clone = await storage.get_thread(check_id(thread_id, "thread_id"), _owner(resource_id))
    record = None if clone is None else lineage_of(clone)
    if clone is None or record is None:
        return None
    found = await storage.get_thread(record.source_thread_id, resource_id or clone.resource_id)
    return found if found is not None and record.names(found) else None


async def list_clones(
    storage: Storage,
    thread_id: str,
    resource_id: str,
    *,
    page: int = 0,
    per_page: PerPage = 100,
    order_by: OrderBy | Mapping[str, Any] | None = None,
    cursor: str | None = None,
) -> Page[Thread]:
    """The clones and branches of ``thread_id`` that belong to
    ``resource_id`` (direct children only), as
    :meth:`~memory_core.storage.BaseStorage.list_threads` pages them: the
    same ``page``/``per_page``/``order_by`` (default ``created_at DESC``)
    and keyset ``cursor`` (R-PAGE, R-CURSOR). A thread of another resource is
    never listed. The source need not exist any more. Every clone naming
    ``thread_id`` is listed, also one of a deleted thread that held the id
    before (its lineage's ``source_created_at`` is not the current
    thread's ``created_at``; a filter cannot tell them apart and keep the
    records written before that time was kept, which name no time).

    Raises:
        ValidationError: bad id, paging, order or cursor.
    """
    check_id(thread_id, "thread_id")
    flt = ThreadFilter(check_id(resource_id, "resource_id"), {SOURCE: thread_id})
    return await storage.list_threads(flt, page, per_page, order_by, cursor)


async def clone_history(storage: Storage, thread_id: str, resource_id: str | None = None) -> list[Thread]:
    """The chain from the root down to ``thread_id``: its source, that
    source's source, and so on, oldest ancestor first and the thread itself
    last. The walk stops at a source that is gone (or a thread created
    later under its id) or belongs to another resource than ``resource_id`` (default: the thread's own). ``[]`` when
    the thread does not exist (or is another resource's). One read per hop.

    Raises:
        ValidationError: bad id (R-ID).
    """
    thread = await storage.get_thread(check_id(thread_id, "thread_id"), _owner(resource_id))
    if thread is None:
        return []
    owner = resource_id or thread.resource_id
    chain, seen = [thread], {thread.id}
    record = lineage_of(thread)
    while record is not None and record.source_thread_id not in seen:
        parent = await storage.get_thread(record.source_thread_id, owner)
        if parent is None or not record.names(parent):
            break
        chain.append(parent)
        seen.add(parent.id)
        record = lineage_of(parent)
    return chain[::-1]


async def forget_resource(storage: Storage, resource_id: str) -> int:
    """Null the lineage keys of every thread whose record names
    ``resource_id`` as its source's owner (what erasing that resource
    leaves behind in other resources). Returns how many threads changed.

    Raises:
        ValidationError: bad id (R-ID).
    """
    flt = ThreadFilter(metadata={SOURCE_RESOURCE: check_id(resource_id, "resource_id")})
    cleared = dict.fromkeys(LINEAGE_KEYS)
    changed = 0
    while True:  # each round's updates drop those threads from the filter
        found = await storage.list_threads(flt, per_page=_ERASE_PAGE)
        for thread in found.items:
            try:
                with writing_lineage():  # all the keys at once: no partial lineage
                    await storage.update_thread(thread.id, metadata=cleared)
            except NotFoundError:  # deleted meanwhile: nothing left to clear
                continue
        changed += len(found.items)
        if not found.has_more:
            return changed


def _owner(resource_id: str | None) -> str | None:
    return None if resource_id is None else check_id(resource_id, "resource_id")


@dataclass(frozen=True, slots=True)
class _Request:
    """The checked arguments that clones and branches share."""

    source_id: str
    new_id: str
    resource_id: str | None
    source_resource_id: str | None
    title: str | None
    metadata: dict[str, Any]

    @classmethod
    def check(
        cls,
        source_id: Any,
        new_id: Any,
        resource_id: Any,
        source_resource_id: Any,
        title: Any,
        metadata: Any,
    ) -> _Request:
        source_id = check_id(source_id, "source_id")
        if new_id is None:
            new_id = new_message_id()
        elif check_id(new_id, "new_id") == source_id:
            raise ValidationError("new_id", "must differ from source_id", "R-ID")
        if title is not None:
            check_text(title, "title")
        extra: dict[str, Any] = {}
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise ValidationError("metadata", f"must be a dict (JSON object), got {type(metadata).__name__}")
            extra = check_json_object(dict(metadata), "metadata")
            for key in LINEAGE_KEYS:
                if key in extra:
                    raise ValidationError("metadata", f"key {key!r} is reserved for lineage", _RULE)
        return cls(source_id, new_id, _owner(resource_id), _owner(source_resource_id), title, extra)

    async def source(self, storage: Storage) -> Thread:
        """The source thread, after the ownership checks."""
        source = await storage.get_thread(self.source_id)
        if source is None:
            raise NotFoundError(f"thread {self.source_id!r} does not exist")
        if self.source_resource_id is not None and self.source_resource_id != source.resource_id:
            raise OwnershipError(f"thread {self.source_id!r} does not belong to resource {self.source_resource_id!r}")
        if self.resource_id not in (None, source.resource_id) and self.source_resource_id is None:
            raise OwnershipError(
                "source_resource_id: cloning into another resource needs the source's owner named (R-LINEAGE)"
            )
        return source

    async def copy(self, storage: Storage, source: Thread, selection: CopySelection, prefix: str) -> Clone:
        """Write the new thread and its copies in one :meth:`copy_thread
        <memory_core.storage.BaseStorage.copy_thread>` call."""
        last = selection.last
        lineage = {
            SOURCE: source.id,
            SOURCE_RESOURCE: source.resource_id,
            LAST_MESSAGE: None if last is None else last.id,
            SOURCE_CREATED: _stamp(source),
        }
        title = self.title if self.title is not None else (f"{prefix} {source.title}" if source.title else "")
        owner = self.resource_id or source.resource_id
        new = Thread(self.new_id, owner, title, {**source.metadata, **self.metadata, **lineage})
        plan = CopyPlan(
            source.id,
            new,
            selection.message_ids,
            selection.created_from_us,
            selection.created_to_us,
            None if last is None else (to_us(_created(last)), last.sequence or 0),
            selection.newest,
            tuple(new_message_ids(selection.bound if last is not None else 0)),
            size_limit(new),
        )
        with writing_lineage():  # the copy records its lineage
            thread, copied = await storage.copy_thread(plan)
        return Clone(thread, dict(zip(copied, plan.new_ids, strict=False)))


@dataclass(frozen=True, slots=True)
class CopySelection:
    """What a clone or branch copies, as the core resolved it: the options,
    the last source message the copy will hold (None: nothing to copy) and
    an upper bound on how many it copies."""

    message_ids: tuple[str, ...] | None
    created_from_us: int | None
    created_to_us: int | None
    last: Message | None
    newest: int | None
    bound: int


def _created(message: Message) -> datetime:
    if message.created_at is None:  # stored messages always carry it
        raise ValidationError("message.created_at", "a stored message has a created_at", "R-TIME")
    return message.created_at


def _inside(message: Message, lo: int | None, hi: int | None) -> bool:
    """Whether a stored message's ``created_at`` lies in the inclusive µs bounds."""
    us = to_us(_created(message))
    return (lo is None or us >= lo) and (hi is None or us <= hi)


def size_limit(thread: Thread) -> int:
    """:attr:`CopyPlan.size_limit` for copies into ``thread``: R-SIZE minus
    what a copy's serialisation adds around its role, type, content and
    metadata (a 36-character id, the thread and resource ids, keys)."""
    frame = {"id": "0" * 36, "thread_id": thread.id, "resource_id": thread.resource_id}
    frame.update(role="", type="", content="", metadata="")
    empty = 4 * len(codec.dumps("").encode("utf-8"))  # the four values' own empty JSON
    return MAX_MESSAGE_BYTES - (len(codec.dumps(frame).encode("utf-8")) - empty + 40)
