"""The memory-core error tree.

Every error raised by the public API is a :class:`MemoryCoreError`. Leaves
also subclass the matching standard-library type, so callers that already
catch ``ValueError`` or ``LookupError`` keep working (the dual inheritance
zarr uses). Raw driver exceptions never escape: adapters wrap them in
:class:`BackendError`, keeping the original as ``__cause__``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, ParamSpec, Protocol, TypeVar

__all__ = [
    "AdapterClosedError",
    "AwaitError",
    "BackendGuard",
    "BackendError",
    "BarePathError",
    "ConflictError",
    "EmbedderMismatchError",
    "MemoryCoreError",
    "MissingFolderError",
    "NotAListError",
    "NotFoundError",
    "OwnershipError",
    "StaleStateError",
    "URLKindError",
    "ValidationError",
    "cancelling_after_pending",
    "guarded",
    "url_named",
]

P = ParamSpec("P")
T = TypeVar("T")


class MemoryCoreError(Exception):
    """Root of every error memory-core raises."""


class ValidationError(MemoryCoreError, ValueError):
    """Bad input, rejected before any write or query.

    Attributes:
        field: the argument or field that was wrong, e.g. ``"per_page"`` or
            ``"messages[3].created_at"``.
        rule: the id of the rule it breaks (``"R-PAGE"``), or ``""``.
        reason: the human explanation.
    """

    def __init__(self, field: str, reason: str, rule: str = "") -> None:
        self.field = field
        self.rule = rule
        self.reason = reason
        prefix = f"[{rule}] " if rule else ""
        super().__init__(f"{prefix}{field}: {reason}")

    def renamed(self, field: str) -> ValidationError:
        """The same refusal (reason, rule) about ``field``: what a caller
        raises when the argument it was given is named otherwise than the
        function it passed it to names it (``url`` -> ``vector``). Subclasses
        that carry more override it to keep their class and attributes."""
        return ValidationError(field, self.reason, self.rule)


class MissingFolderError(ValidationError):
    """The folder a file-backed store goes in does not exist, and the store
    was not told to make it (it never makes one on its own: a misspelt path
    would become a new, empty store elsewhere). The message names the folder
    and both fixes a Python caller has: the keyword ``create_dirs=True`` and
    the URL option; the command line (``memory_core.cli.stores.url_role``)
    raises it again with ``keyword=False``: the URL option only, the fix a
    command-line user can apply.

    Attributes:
        folder: the missing folder.
        url_example: the store's URL with ``?create_dirs=true``.
    """

    def __init__(self, field: str, folder: str, url_example: str, *, keyword: bool = True) -> None:
        """``keyword``: name the constructor keyword as a fix too (False:
        the URL option only, for a user who can only change the URL)."""
        self.folder = folder
        self.url_example = url_example
        fix = f"create_dirs=True, or {url_example}" if keyword else "add ?create_dirs=true to the URL"
        super().__init__(
            field,
            f"folder {folder!r} does not exist (a typo in the path?); create it (mkdir -p {folder}) "
            f"or let the store make it: {fix}",
        )

    def renamed(self, field: str) -> MissingFolderError:
        """This error about ``field`` (see :meth:`ValidationError.renamed`)."""
        return MissingFolderError(field, self.folder, self.url_example)


@contextmanager
def url_named(name: str) -> Iterator[None]:
    """A :class:`ValidationError` about field ``url`` (an adapter's word for
    the URL it was built from: a missing folder, a misspelt file) raised
    again naming ``name``, the argument or option the caller gave that URL
    as (``vector``, ``--vector``); the reason and rule are kept. Other
    errors pass unchanged.

    Raises:
        ValidationError: the same reason and rule, field ``name``.
    """
    try:
        yield
    except ValidationError as exc:
        if exc.field != "url":
            raise
        raise exc.renamed(name) from None  # the same class: MissingFolderError, URLKindError, BarePathError


class URLKindError(ValidationError):
    """A URL of the other kind: a storage URL where a vector store URL goes
    (``connect_vector("sqlite:///...")``, ``--vector sqlite:///...``), or
    the reverse. The message names the kind the URL is and where it goes:
    the other function for a Python caller; the command line
    (``memory_core.cli.stores.url_role``) raises it again with
    ``python=False``, naming its argument and option instead.

    Attributes:
        scheme: the URL's scheme.
        kind: what the URL is, ``"storage"`` or ``"vector store"``.
    """

    def __init__(self, field: str, scheme: str, kind: str, *, python: bool = True) -> None:
        """``python``: name the function that opens such a URL (False: the
        command line's argument and option, for a user of the CLI)."""
        self.scheme = scheme
        self.kind = kind
        wanted = "vector store" if kind == "storage" else "storage"
        if python:
            fix = f"open it with {'connect()' if kind == 'storage' else 'connect_vector()'}"
        elif kind == "storage":
            fix = (
                "a storage URL is the command's URL argument; give --vector a vector store URL (qdrant+path:///FOLDER)"
            )
        else:
            fix = "it goes with --vector; the URL argument takes a storage URL (sqlite:///FILE)"
        article = "an" if wanted[0] in "aeiou" else "a"
        super().__init__(field, f"{scheme!r} is a {kind} URL, not {article} {wanted} URL; {fix}")

    def renamed(self, field: str) -> URLKindError:
        """This error about ``field`` (see :meth:`ValidationError.renamed`)."""
        return URLKindError(field, self.scheme, self.kind)


class BarePathError(ValidationError):
    """A filesystem path where a URL goes (``connect("memory.db")``,
    ``--storage memory.db``): the message names the URL of that path,
    ``sqlite:///memory.db`` for a storage (``sqlite:////srv/memory.db`` for
    an absolute path: the URL's three slashes and the path's own) and
    ``qdrant+path:///memory.vectors`` for a vector store.

    Attributes:
        path: the path as given.
        url_example: the URL that names it.
    """

    def __init__(self, field: str, path: str, url_example: str) -> None:
        self.path = path
        self.url_example = url_example
        super().__init__(field, f"{path!r} is a file path, not a URL; the URL of that path is {url_example}")

    def renamed(self, field: str) -> BarePathError:
        """This error about ``field`` (see :meth:`ValidationError.renamed`)."""
        return BarePathError(field, self.path, self.url_example)


class NotAListError(ValidationError):
    """One item, a str or a mapping where a list of items goes
    (``append_messages(thread_id, ("user", "hi"))``, ``save_messages(message)``,
    ``delete_messages("id")``): refused before anything is read or written
    (a str would otherwise be taken as a list of its characters, a mapping
    as a list of its keys). The message says what was given and the list
    to pass instead.

    Attributes:
        shape: the list to pass, e.g. ``[("user", "hello"), ...]``.
    """

    def __init__(self, field: str, items: str, got: str, shape: str, rule: str = "") -> None:
        """``items``: what the list holds (``"(role, content) pairs"``);
        ``got``: what was given instead (:meth:`given`)."""
        self.items = items
        self.got = got
        self.shape = shape
        super().__init__(field, f"must be a list of {items}, got {got}; pass a list: {shape}", rule)

    def renamed(self, field: str) -> NotAListError:
        """This error about ``field`` (see :meth:`ValidationError.renamed`)."""
        return NotAListError(field, self.items, self.got, self.shape, self.rule)

    @staticmethod
    def given(value: Any) -> str:
        """How the message names ``value``: ``a str (taken as a list, it
        would be its characters)``, ``one mapping``, ``one Message``, ``int``."""
        if isinstance(value, str):
            return "a str (taken as a list, it would be its characters)"
        if isinstance(value, bytes | bytearray):
            return type(value).__name__
        if isinstance(value, Mapping):
            return "one mapping (taken as a list, it would be its keys)"
        if value is None or isinstance(value, int | float):
            return repr(value) if value is None else type(value).__name__
        return f"one {type(value).__name__}"


class AwaitError(MemoryCoreError, TypeError, AttributeError):
    """An awaitable call of memory-core used without ``await``: entered
    with ``async with`` (``async with Memory.open(url) as memory``) or
    read as the object it opens (``storage = connect(url)`` then
    ``storage.save_thread(...)``). The message gives the right form
    (``async with await Memory.open(url) as memory:``). A ``TypeError``,
    as Python's own refusal of these is, and an ``AttributeError`` for the
    attribute case, so ``getattr(x, name, default)`` and ``hasattr`` keep
    their meaning.
    """


class EmbedderMismatchError(ValidationError):
    """The vector index was built by another embedder than this one: it
    holds vectors of another dimension, which searches with this one miss,
    or its record names another embedder of the same dimension
    (:meth:`~memory_core.vector.BaseVectorStore.recorded_embedder`), whose
    vectors live in another space (field ``embedder``; the message names
    both and the fix). Raised before anything is written.

    Attributes:
        dimension: the embedder's dimension.
        counts: points per dimension the index holds (``{384: 120, 1024: 3}``).
        recorded: the name of the embedder the index's record names, when
            the mismatch is that record (same dimension); None when it is
            the dimension.
    """

    def __init__(self, reason: str, dimension: int, counts: dict[int, int], *, recorded: str | None = None) -> None:
        super().__init__("embedder", reason)
        self.dimension = dimension
        self.counts = counts
        self.recorded = recorded


class NotFoundError(MemoryCoreError, LookupError):
    """A thread (or other record) an operation needs does not exist."""


class OwnershipError(MemoryCoreError, PermissionError):
    """A record belongs to another resource than the one given."""


class ConflictError(MemoryCoreError):
    """A write contradicts stored state (e.g. a message id saved again
    under another ``resource_id``)."""


class StaleStateError(ConflictError):
    """Raised by an adapter primitive when what the core read before a write
    no longer holds inside the write's transaction (a concurrent writer
    created, moved or deleted a record in between); nothing was written.

    The core catches it, reads again and re-checks (so the caller gets the
    error the fresh state calls for, e.g. NotFoundError or ConflictError);
    it escapes only when the state keeps changing under every attempt.
    """


class BackendError(MemoryCoreError):
    """A storage or vector backend failed.

    The driver's exception is chained as ``__cause__`` (and kept in
    :attr:`original`). A backend error is always raised, never turned into
    an empty result.

    Attributes:
        backend: adapter name, e.g. ``"sqlite"``.
        operation: the public operation that failed, e.g. ``"save_messages"``.
        retryable: True when repeating the call may succeed (network errors,
            timeouts, primary step-downs, a locked database).
        original: the driver exception, or None.
        detail: what failed, as given (the message without the backend
            and operation before it).
    """

    def __init__(
        self,
        backend: str,
        operation: str,
        message: str,
        *,
        retryable: bool = False,
        original: BaseException | None = None,
    ) -> None:
        self.backend = backend
        self.operation = operation
        self.retryable = retryable
        self.original = original
        self.detail = message
        super().__init__(f"{backend} {operation} failed: {message}")


class AdapterClosedError(MemoryCoreError, RuntimeError):
    """An operation was called on a storage or vector store after close()."""


class _GuardedBackend(Protocol):
    @property
    def backend_name(self) -> str: ...

    @property
    def backend_address(self) -> str: ...

    def is_retryable(self, exc: Exception) -> bool: ...


class BackendGuard:
    """Context manager wrapping any non-memory-core exception raised inside it
    in :class:`BackendError` (named after ``owner.backend_name``, retryable per
    ``owner.is_retryable``, original chained). Shared by storages and vector
    stores so every backend wraps driver errors the same way.

    A call that the task's cancellation reached is a cancelled call: when the
    task's ``cancelling()`` count grew inside the guard and the call returned
    or raised anything but ``CancelledError`` (a driver that retried after
    the cancellation cut off its read, PyMongo's retryable writes; a
    ``wait_for`` that returned the result instead, redis-py on 3.11), the
    guard raises ``CancelledError`` (issue 25; what the call wrote stays
    written, as with any write cancelled after it was sent)."""

    __slots__ = ("_cancelling", "_task", "operation", "owner")

    def __init__(self, owner: _GuardedBackend, operation: str) -> None:
        self.owner = owner
        self.operation = operation
        self._task: asyncio.Task[Any] | None = None
        self._cancelling = 0

    def __enter__(self) -> None:
        try:
            self._task = asyncio.current_task()
        except RuntimeError:  # no running loop: nothing to cancel
            self._task = None
        self._cancelling = 0 if self._task is None else self._task.cancelling()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        task = self._task
        if task is not None and task.cancelling() > self._cancelling and not isinstance(exc, asyncio.CancelledError):
            raise asyncio.CancelledError from exc
        if exc is None or isinstance(exc, MemoryCoreError) or not isinstance(exc, Exception):
            return
        raise _wrapped(self.owner, self.operation, exc) from exc


async def guarded(
    owner: _GuardedBackend, operation: str, primitive: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``await primitive(*args, **kwargs)`` under :class:`BackendGuard`'s rule,
    in one call: what a read path that makes a single backend call uses.

    Returns:
        What ``primitive`` returns.

    Raises:
        BackendError: ``primitive`` raised an exception that is not a
            :class:`MemoryCoreError` (named after ``owner.backend_name`` and
            ``operation``, retryable per ``owner.is_retryable``, the original
            chained); memory-core errors and non-``Exception`` exceptions
            (cancellation) pass through unchanged.
        CancelledError: the task's cancellation reached the call (see
            :class:`BackendGuard`), or was requested before it and is still
            pending: a Ctrl-C's ``asyncio.Runner`` handler cancels the main
            task while it runs, and the request waits for its next
            suspension, which a driver's ``wait_for`` can swallow (redis-py
            on 3.11); :func:`cancelling_after_pending` delivers it before
            the call.
    """
    task = asyncio.current_task()
    before = await cancelling_after_pending(task)
    try:
        result = await primitive(*args, **kwargs)
    except Exception as exc:
        if task is not None and task.cancelling() > before:
            raise asyncio.CancelledError from exc
        if isinstance(exc, MemoryCoreError):
            raise
        raise _wrapped(owner, operation, exc) from exc
    if task is not None and task.cancelling() > before:
        raise asyncio.CancelledError
    return result


async def cancelling_after_pending(task: asyncio.Task[Any] | None) -> int:
    """``task.cancelling()`` (0 for no task), read before a backend call so
    that a count that grows during the call marks a cancellation that
    reached it; a nonzero count first yields once to the loop, so a
    cancellation requested before the call and still pending raises here,
    before anything is sent.

    A Ctrl-C's ``asyncio.Runner`` handler cancels the main task while that
    task runs, and the request is delivered at the task's next suspension,
    which can be a driver's ``wait_for`` that swallows it (redis-py on 3.11,
    issue 25). A count left by a cancellation the task already handled (a
    clean-up after it) costs that one loop turn and nothing else.

    Raises:
        CancelledError: a cancellation of ``task`` was pending.
    """
    before = 0 if task is None else task.cancelling()
    if before:
        await asyncio.sleep(0)
    return before


def _wrapped(owner: _GuardedBackend, operation: str, exc: Exception) -> BackendError:
    said = f"{type(exc).__name__}: {exc}"
    address = owner.backend_address
    return BackendError(
        owner.backend_name,
        operation,
        f"{address}: {said}" if address and address not in said else said,
        retryable=owner.is_retryable(exc),
        original=exc,
    )
