"""Thread operations every integration shares: ids (scoped per owner), the
one meaning of a history ``limit``, ownership-checked reads, the current
turn, create-on-first-write saves and an atomic pop of the newest message.

Built only on public :class:`~memory_core.Memory` and storage calls, so every
backend gets the same semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any

from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.ids import new_message_id
from memory_core.lineage import lineage_of
from memory_core.memory import Memory
from memory_core.models import Message, MessagePageRequest, PerPage, Thread
from memory_core.validation import MAX_ID_LENGTH, MAX_MESSAGE_BYTES, MAX_PER_PAGE, check_id, check_message

__all__ = [
    "check_limit",
    "check_names",
    "check_record",
    "composed_id",
    "context_resource",
    "conversation_thread",
    "current_turn",
    "delete_conversation",
    "claim_copy",
    "new_message_id",
    "newest_messages",
    "newest_matching",
    "owner_of",
    "pop_newest",
    "save_to",
    "scoped_key",
    "scoped_thread",
    "session_thread",
]


def check_names(**names: Any) -> None:
    """Check that each of ``names`` (a seam's id arguments by parameter name,
    before they are composed into an id) is a str.

    Raises:
        ValidationError: the first that is not, named (R-ID), as
            :func:`~memory_core.validation.check_id` says it.
    """
    for field, value in names.items():
        if not isinstance(value, str):
            raise ValidationError(field, f"must be a str, got {type(value).__name__}", "R-ID")


def scoped_key(*parts: str) -> str:
    """The parts joined with ``:``, ``%`` and ``:`` inside a part escaped
    (``%25``, ``%3A``), so two different part tuples never give one key."""
    return ":".join(p.replace("%", "%25").replace(":", "%3A") for p in parts)


def scoped_thread(namespace: str, owner: str, conversation_id: str) -> str:
    """The thread id of a conversation as its owner names it:
    ``<namespace>:<owner>:<conversation>`` (owner and conversation escaped
    by :func:`scoped_key`; ``namespace`` taken as it is). Two owners who both
    call a conversation ``"chat"`` get two threads. The id is not checked
    here: callers check it (R-ID: at most 256 characters once mapped)."""
    return f"{namespace}:{scoped_key(owner, conversation_id)}"


def composed_id(thread_id: str, field: str, parts: str, kind: str = "thread id") -> str:
    """``thread_id``, a seam's composition of the caller's ids, checked
    against R-ID in the caller's words: when it is too long, the error names
    the caller's ``field`` and says the length is the composition's, not
    that of the value the caller passed.

    Args:
        thread_id: the composed id.
        field: the caller's parameter the error names (``"session_id"``).
        parts: what the id is made of, as the caller knows it
            (``"session_id with resource_id"``).
        kind: what the id is (``"thread id"``, ``"resource id"``).

    Raises:
        ValidationError: ``field``, rule R-ID: the composed id is longer
            than :data:`~memory_core.validation.MAX_ID_LENGTH` characters
            (or fails another R-ID rule).
    """
    if len(thread_id) > MAX_ID_LENGTH:
        raise ValidationError(
            field,
            f"{parts} makes a {kind} of {len(thread_id)} characters (the ids and the seam's prefix, "
            f"':' and '%' inside an id escaped as 3 characters); at most {MAX_ID_LENGTH}: use shorter ids",
            "R-ID",
        )
    return check_id(thread_id, field)


def conversation_thread(
    namespace: str, owner: str, conversation_id: str, *, scoped: bool, field: str, owner_field: str = "resource_id"
) -> str:
    """The thread a seam keeps a conversation in: :func:`scoped_thread` when
    ``scoped``, else ``conversation_id`` itself (the id global across owners,
    as stores made before ids were scoped hold it).

    Raises:
        ValidationError: the thread id fails R-ID (more than 256 characters
            once mapped: :func:`composed_id`), naming ``field`` (the seam's
            own parameter) and ``owner_field`` (where the owner came from).
    """
    if not scoped:
        return check_id(conversation_id, field)
    return composed_id(scoped_thread(namespace, owner, conversation_id), field, f"{field} with {owner_field}")


def session_thread(app_name: str, user_id: str, session_id: str) -> str:
    """The thread id of an ADK session: ``adk:<app>:<user>:<session>``
    (:func:`scoped_thread` in the namespace ``adk:<app>``).

    Raises:
        ValidationError: an argument that is not a str, named
            (:func:`check_names`); field ``session_id``: the id is longer
            than 256 characters (:func:`composed_id`).
    """
    check_names(app_name=app_name, user_id=user_id, session_id=session_id)
    thread_id = scoped_thread("adk:" + scoped_key(app_name), user_id, session_id)
    return composed_id(thread_id, "session_id", "session_id with app_name and user_id")


def check_limit(value: Any, field: str = "limit", *, negative_reads_all: bool = True) -> int | None:
    """The one meaning of a history limit in every seam (``get_items(limit)``,
    ``session_settings={"limit": ...}``, ``load(limit=)``, ADK's
    ``num_recent_events``), the SDK's ``SQLiteSession`` rule: None -> every
    message; an int n >= 0 -> the newest n (0: none; an n over
    :data:`~memory_core.validation.MAX_PER_PAGE`, the largest page a read
    takes, -> every message, as ``SQLiteSession`` and ADK's own services
    read it: more than a thread can hold is all of it); a negative int ->
    every message, or refused where the seam's framework refuses it
    (``negative_reads_all=False``: ADK's ``GetSessionConfig``).

    Args:
        value: the caller's limit, as given.
        field: the caller's own name for it (``"limit"``,
            ``"session_settings.limit"``, ``"num_recent_events"``).
        negative_reads_all: True (default): a negative int reads every
            message; False: it is refused, and no error hints at it.

    Returns:
        The number of newest messages to read, or None for all.

    Raises:
        ValidationError: ``field``: anything but an int or None (a bool, a
            float such as ``2.0`` and a numeric string included: the SDK
            reads ``True`` as 1 and ``"2"`` as 2; here a flag or a text
            passed as a count is an error), or a negative int with
            ``negative_reads_all=False``; each hint says what the seam reads.
    """
    counts = (
        "an int (the newest n; negative: all) or None (all)"
        if negative_reads_all
        else ("an int >= 0 (the newest n) or None (all)")
    )
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError(field, f"must be {counts}, got {type(value).__name__} {value!r}")
    if value < 0 and not negative_reads_all:
        raise ValidationError(field, f"must be {counts}, got {value}")
    return None if value < 0 or value > MAX_PER_PAGE else int(value)


TEXT_LIMIT = MAX_MESSAGE_BYTES // 2
"""About the most text one framework message holds: a seam stores its text
twice (the framework's own JSON of the message, and beside it the text
semantic recall embeds and searches), within the 15 MiB of a stored message."""


def check_record(message: Message, where: str) -> Message:
    """A seam's stored message, checked as storage checks it
    (:func:`~memory_core.validation.check_message`), every error named by
    ``where``, the caller's words (``"items[1]"``, ``"messages[0]"``,
    ``"event"``), never by the id the seam generated for it.

    Raises:
        ValidationError: field ``where`` (or a path in it): a bad message;
            R-SIZE states the limit in the caller's terms: the text is
            stored twice, so about 7.5 MiB of text (:data:`TEXT_LIMIT`
            bytes of UTF-8) fits in one message.
    """
    try:
        return check_message(message, where, by_id=False)
    except ValidationError as error:
        if error.rule != "R-SIZE":
            raise
        raise ValidationError(
            where,
            f"{error.reason}: the seam stores a message's text twice (the framework's JSON of it and the text "
            f"recall searches), so one message holds at most about {TEXT_LIMIT / 2**20:.1f} MiB of text "
            f"({TEXT_LIMIT} bytes of UTF-8); split it or store the large part elsewhere",
            "R-SIZE",
        ) from None


async def newest_messages(memory: Memory, thread_id: str, resource_id: str, limit: int | None) -> list[Message]:
    """The newest ``limit`` messages of a thread (all when None), oldest first.

    One storage read of the ``limit`` rows returned, however long the thread
    (no total is asked for), when the thread has messages: the page is
    filtered by ``resource_id``, so every message returned is the owner's. Only an empty
    page costs a second read, telling "no thread" (``[]``) from "another
    resource's thread".

    Raises:
        OwnershipError: the thread belongs to another resource.
        ValidationError: bad ids or limit.
    """
    per_page: PerPage = False if limit is None else limit
    await memory.wait_for_writes()  # a cancelled write still in flight is seen whole
    page = await memory.storage.page_messages(
        MessagePageRequest(
            thread_ids=(thread_id,), resource_id=resource_id, per_page=per_page, newest=True, total=False
        )
    )
    if not page.items:
        await _check_owner(memory, thread_id, resource_id)
    return page.items


_WALK_PAGE = 100
"""Messages per read when walking back through a thread to a stop."""

_MAX_TURN = 1000
"""The furthest :func:`current_turn` walks back (MAX_TOP_K)."""


async def newest_matching(
    memory: Memory, thread_id: str, resource_id: str, limit: int | None, keep: Callable[[Message], bool]
) -> tuple[Thread | None, list[Message]]:
    """The thread and its newest ``limit`` messages (None: all) for which
    ``keep`` is true, oldest first.

    Walks back from the newest message in pages of up to 100, with the
    thread row in the first read, and stops once ``limit`` are kept: the
    cost follows what is read back to the oldest one kept (the whole thread
    when fewer match, or with no limit).

    Returns:
        ``(thread, messages)``; ``(None, [])`` when the thread is missing or
        belongs to another resource.

    Raises:
        ValidationError: bad ids or limit.
    """
    taken: list[Message] = []  # newest first
    thread: Thread | None = None
    cursor: str | None = None
    await memory.wait_for_writes()  # a cancelled write still in flight is seen whole
    while True:
        request = MessagePageRequest(
            thread_ids=(thread_id,),
            resource_id=resource_id,
            per_page=0 if limit == 0 else _WALK_PAGE,  # 0: the thread row alone
            newest=True,
            total=False,
            cursor=cursor,
        )
        parts = await memory.storage.message_parts(request, threads=() if thread else (thread_id,))
        if thread is None:
            thread = parts.threads.get(thread_id)
            if thread is None or thread.resource_id != resource_id:
                return None, []
        taken += [m for m in parts.main if keep(m)]  # newest first: the query runs DESC
        cursor = parts.next_cursor
        if cursor is None or (limit is not None and len(taken) >= limit):
            return thread, (taken if limit is None else taken[:limit])[::-1]


async def current_turn(
    memory: Memory,
    resource_id: str,
    thread_id: str | None = None,
    *,
    within: int = _MAX_TURN,
    starts: Callable[[Message], bool] | None = None,
) -> tuple[str | None, int]:
    """Where the turn being answered sits: the newest ``user`` message (of
    the thread, or of every thread of the resource when ``thread_id`` is
    None) and the messages after it in its thread, which a runner stores
    before the model calls a tool (the question, tool calls, results).

    Walks back from the newest message, 100 a read, at most ``within``
    messages (default 1000, the most a search can ask for).

    Args:
        starts: which message begins the turn (default: the newest whose
            role is ``user``); a seam that knows the run's own question
            passes a test of its id, so no other message is taken for it.

    Returns:
        ``(thread_id, count)``: the turn is the newest ``count`` messages of
        that thread; ``(thread_id, 0)`` when no user message was found within
        reach (``thread_id`` is the newest message's thread, or the given one);
        ``(None, 0)`` when there is no message at all.

    Raises:
        ValidationError: bad ids.
    """
    threads = None if thread_id is None else (thread_id,)
    seen: dict[str, int] = {}  # thread -> messages walked in it
    await memory.wait_for_writes()  # a cancelled write still in flight is seen whole
    newest_thread = thread_id
    cursor: str | None = None
    while sum(seen.values()) < within:
        request = MessagePageRequest(
            thread_ids=threads, resource_id=resource_id, per_page=_WALK_PAGE, newest=True, total=False, cursor=cursor
        )
        page = await memory.storage.message_parts(request)
        for message in page.main:  # newest first: the query runs DESC
            newest_thread = newest_thread or message.thread_id
            seen[message.thread_id] = seen.get(message.thread_id, 0) + 1
            if (message.role == "user") if starts is None else starts(message):
                return message.thread_id, seen[message.thread_id]
        cursor = page.next_cursor
        if cursor is None:
            break
    return newest_thread, 0


async def _check_owner(memory: Memory, thread_id: str, resource_id: str) -> Thread | None:
    thread = await memory.storage.get_thread(thread_id)
    if thread is not None and thread.resource_id != resource_id:
        raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}")
    return thread


async def save_to(
    memory: Memory,
    thread_id: str,
    resource_id: str,
    messages: Sequence[Message],
    *,
    metadata: Mapping[str, Any] | None = None,
) -> list[Message]:
    """Save messages into a thread, creating the thread (owned by
    ``resource_id``, with ``metadata``) on first write; one write when it
    exists. Vectors are indexed through :meth:`Memory.save_messages`; items
    are stored exactly, ``system`` ones included (``persist_system``).

    Raises:
        OwnershipError: the thread belongs to another resource (named by
            the thread, as the caller knows it with ``scope_ids=False``, not
            by a generated message id).
        ValidationError: a bad message; nothing is written.
    """
    if not messages:
        return []
    try:
        try:
            return await memory.save_messages(messages, persist_system=True)
        except NotFoundError:
            pass
        with suppress(ConflictError):  # created meanwhile by a concurrent writer: save into it
            await memory.storage.insert_thread(Thread(thread_id, resource_id, metadata=dict(metadata or {})))
        return await memory.save_messages(messages, persist_system=True)
    except OwnershipError:  # storage names the message by the id the seam generated
        raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}") from None


async def pop_newest(memory: Memory, thread_id: str, resource_id: str) -> Message | None:
    """Remove and return the thread's newest message; None when empty.

    Atomic under concurrent poppers on every backend: read the newest
    message, then delete it; ``delete_messages`` counts only what this call
    removed, so of racing poppers exactly one gets 1 and returns the message.
    A popper that lost the race reads again. Nothing is left behind.

    Raises:
        OwnershipError: the thread belongs to another resource.
    """
    while True:
        newest = await newest_messages(memory, thread_id, resource_id, 1)
        if not newest:
            return None
        if await memory.delete_messages([newest[0].id]) == 1:
            return newest[0]


async def delete_conversation(memory: Memory, thread_id: str, resource_id: str) -> None:
    """Delete a thread with its messages and their vectors (missing: no-op).

    Raises:
        OwnershipError: the thread belongs to another resource.
    """
    if await _check_owner(memory, thread_id, resource_id) is not None:
        await memory.delete_thread(thread_id)


def context_resource(context: Any, key: str = "resource_id", where: str = "context") -> str | None:
    """The resource id a framework's run context carries: ``context[key]``
    for a mapping, else attribute ``key``; None when absent.

    Raises:
        ValidationError: field ``<where>.<key>`` (``where`` is the caller's
            name for the context: ``"context"``, ``"deps"``): not an id (R-ID).
    """
    if context is None:
        return None
    value = context.get(key) if isinstance(context, Mapping) else getattr(context, key, None)
    return None if value is None else check_id(value, f"{where}.{key}")


def owner_of(explicit: str | None, context: Any, *, where: str = "context", fix: str | None = None) -> str:
    """The resource a seam acts for: the one given at construction, or the
    run context's ``resource_id`` (one of them, or both agreeing). A
    construction argument is never overridden: a context naming another
    resource is refused, as a session built for one user serving another.

    Args:
        explicit: the construction's ``resource_id`` (None: not given).
        context: the run's context (the Agents SDK's ``context``, Pydantic
            AI's ``deps``).
        where: the caller's name for the context, the error's field prefix
            (``"context"``, ``"deps"``).
        fix: what the caller can do about a conflict, in the seam's own
            terms (a fix that exists there); default: build one seam per
            resource.

    Raises:
        ValidationError: neither gives one (field ``resource_id``); both
            give one and they differ (field ``<where>.resource_id``, naming
            both and ``fix``).
    """
    owner = context_resource(context, where=where)
    if explicit is None:
        if owner is None:
            raise ValidationError("resource_id", f"give one at construction or in the run's {where} ('resource_id')")
        return owner
    if owner is not None and owner != explicit:
        raise ValidationError(
            f"{where}.resource_id",
            f"is {owner!r} but the seam was built with resource_id={explicit!r}: the construction argument is "
            f"never overridden; {fix or 'build one seam per resource'}",
        )
    return explicit


async def claim_copy(
    memory: Memory, thread_id: str, source_id: str, resource_id: str, last_message_id: str | None
) -> bool:
    """Whether thread ``thread_id`` is the copy a seam's branch or clone
    call makes: owned by ``resource_id``, copied from the thread ``source_id``
    that exists now (owned by ``resource_id`` too; not a deleted one of the
    same id) holding its messages up to ``last_message_id`` (None: none),
    per its lineage record. A retried call (its first try timed out, but
    its write finished in the background, or the process ended midway)
    then takes the copy as its own instead of a ConflictError. Waits for
    writes still in flight first, so such a copy is seen whole; a copy
    whose vectors were never written (the process ended between the copy
    and its vectors) is re-indexed here, so the retry returns a copy that
    semantic recall finds, as a first try's.

    Raises:
        BackendError: the re-index failed (the copy is the caller's; retry).
    """
    await memory.wait_for_writes()
    thread = await memory.storage.get_thread(thread_id, resource_id)
    record = None if thread is None else lineage_of(thread)
    source = await memory.storage.get_thread(source_id, resource_id)
    if record is None or source is None or not record.names(source):
        return False
    if (record.source_resource_id, record.last_message_id) != (resource_id, last_message_id):
        return False
    if memory.vector is not None and not (await memory.check_index(thread_id=thread_id)).in_step:
        await memory.reindex(thread_id=thread_id)
    return True
