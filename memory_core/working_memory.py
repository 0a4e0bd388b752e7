"""Working memory on the core side: its settings, where it lives, and the
reads and writes :class:`~memory_core.memory.Memory` (and the agent-framework
seams) make of it.

One home for the rules: :class:`WorkingMemory` holds the settings (on or
off, scope, template, JSON Schema); :func:`read`, :func:`update` and
:func:`append` check a call (all before any I/O), find the value (a
resource's ``working_memory``, or ``metadata["working_memory"]`` of a thread)
and read or write it through the storage's primitives. The storage side of a
conditional write (the checks it runs in its transaction) is
:mod:`memory_core.workmem`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memory_core import codec
from memory_core.errors import ConflictError, NotFoundError, OwnershipError, ValidationError
from memory_core.models import Thread, WorkingMemoryState
from memory_core.query import NOT_GIVEN
from memory_core.retry import RetryPolicy
from memory_core.storage import Storage
from memory_core.validation import check_bool, check_id, check_json_object, check_json_value, check_text
from memory_core.workmem import Scope, check_version, thread_memory, working_memory_version

__all__ = ["APPENDS", "SCOPES", "WorkingMemory", "append", "check_scope", "read", "update"]

APPENDS = RetryPolicy(attempts=100)
"""Compare-and-set rounds :func:`append` tries before giving up with a
ConflictError (100, no pause): each round one of the racing writers wins, so
100 concurrent appends to one working memory all land."""

SCOPES: tuple[Scope, ...] = ("resource", "thread")
"""Where a working memory (or a semantic search) may be scoped."""


def check_scope(value: Any, field: str) -> None:
    """Raise a ValidationError naming ``field`` unless ``value`` is one of :data:`SCOPES`."""
    if not isinstance(value, str) or value not in SCOPES:
        raise ValidationError(field, f"must be 'resource' or 'thread', got {value!r}")


@dataclass(frozen=True, slots=True)
class WorkingMemory:
    """Working memory settings.

    Attributes:
        enabled: whether :meth:`~memory_core.memory.Memory.read_working_memory` and updates are on.
        scope: ``"resource"`` keeps it in ``Resource.working_memory``;
            ``"thread"`` in ``thread.metadata["working_memory"]``.
        template: returned while nothing has been stored (Markdown text).
        schema: a JSON Schema (Draft 2020-12, a dict); when set, working memory
            is JSON text that must validate against it. The schema itself is
            checked against the meta-schema here; a ``$ref`` that cannot be
            resolved is reported when an update is validated.

    Raises:
        ValidationError: a field of the wrong type, an unknown scope or an
            invalid schema (at construction, field ``working_memory.<name>``).
    """

    enabled: bool = False
    scope: Scope = "resource"
    template: str | None = None
    schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        check_bool(self.enabled, "working_memory.enabled")
        check_scope(self.scope, "working_memory.scope")
        if self.template is not None:
            check_text(self.template, "working_memory.template")
        if self.schema is not None:
            schema = self.schema
            if isinstance(schema, Mapping):
                schema = dict(schema)
            check_json_object(schema, "working_memory.schema")
            from jsonschema import Draft202012Validator
            from jsonschema.exceptions import SchemaError

            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise ValidationError("working_memory.schema", f"not a valid JSON Schema: {exc.message}") from None
            object.__setattr__(self, "schema", schema)


async def read(
    storage: Storage, settings: WorkingMemory, thread_id: str | None, resource_id: str | None
) -> WorkingMemoryState:
    """The working memory, whether it is stored, and its version (one read:
    the thread, with its owner's record for resource scope).

    Returns:
        :class:`~memory_core.models.WorkingMemoryState`: ``text`` (the stored
        value, or ``settings.template`` while nothing is stored), ``stored``
        and ``version``.

    Raises:
        ValidationError: working memory off; neither id given (or no
            ``thread_id`` with thread scope); a bad id. Before any I/O.
        NotFoundError: ``thread_id`` names no thread.
        OwnershipError: the thread belongs to another resource.
    """
    _, _, value = await _state(storage, settings, thread_id, resource_id)
    if value is None:
        return WorkingMemoryState(settings.template, False, None)
    return WorkingMemoryState(value, True, working_memory_version(value))


async def update(
    storage: Storage,
    settings: WorkingMemory,
    thread_id: str | None,
    value: str | Mapping[str, Any],
    resource_id: str | None,
    if_version: str | None = NOT_GIVEN,
) -> str:
    """Replace the working memory in one conditional write; returns the
    stored text (a mapping is stored as its compact JSON text).

    ``if_version``: NOT_GIVEN (default) writes unconditionally; a version
    writes only while that version is stored; None only while nothing is.

    Raises:
        ValidationError: off, bad type, schema violation, bad ids, an
            ``if_version`` that is not a version, a value over R-SIZE; before
            any I/O.
        NotFoundError / OwnershipError: as :func:`read`.
        ConflictError: ``if_version`` given and the stored version differs.
    """
    if isinstance(value, Mapping):
        text = codec.dumps(check_json_object(dict(value), "working_memory"))
    elif isinstance(value, str):
        text = check_text(value, "working_memory")
    else:
        raise ValidationError("working_memory", f"must be a str or a dict, got {type(value).__name__}")
    if settings.schema is not None:
        _validate_schema(text, settings.schema)
    if if_version is not NOT_GIVEN and if_version is not None:
        check_version(if_version)
    _check_target(thread_id, resource_id, settings)
    # One conditional write: the storage checks the thread, its owner and
    # the version with the write (typed errors as a read would give them).
    await storage.write_working_memory(
        text, scope=settings.scope, thread_id=thread_id, resource_id=resource_id, if_version=if_version
    )
    return text


async def append(
    storage: Storage,
    settings: WorkingMemory,
    thread_id: str | None,
    text: str,
    resource_id: str | None,
    separator: str = "\n",
) -> str:
    """Append ``text`` (after ``separator``; nothing stored: ``text`` alone)
    by compare-and-set, retried until it wins (at most
    :data:`APPENDS` rounds); returns the new stored value.

    Raises:
        ValidationError: off; a schema is set; ``text``/``separator`` not
            str; bad ids. Before any I/O.
        NotFoundError / OwnershipError: as :func:`read`.
        ConflictError: still losing after :data:`APPENDS` rounds.
    """
    check_text(text, "text")
    check_text(separator, "separator")
    if settings.schema is not None:
        raise ValidationError("working_memory.schema", "a schema is set: working memory is JSON, use update")
    scope, key, current = await _state(storage, settings, thread_id, resource_id)
    for _ in APPENDS.tries():
        value = text if current is None else current + separator + text
        if await _swap(storage, scope, key, current, value):
            return value
        current = await _stored(storage, scope, key)
    raise ConflictError(f"working memory append lost {APPENDS.attempts} races in a row")


async def _state(
    storage: Storage, settings: WorkingMemory, thread_id: str | None, resource_id: str | None
) -> tuple[Scope, str, str | None]:
    """Where the working memory lives (``("thread", thread id)`` or
    ``("resource", resource id)``) and its stored value; checks, then
    reads once (the thread, with its owner's record for resource scope)."""
    _check_target(thread_id, resource_id, settings)
    if thread_id is None:
        if resource_id is None:  # _check_target refused this already; narrows the type
            raise ValidationError("resource_id", "give a thread_id or a resource_id")
        return "resource", resource_id, await _stored(storage, "resource", resource_id)
    if settings.scope == "thread":
        thread = _owned(await storage.get_thread(thread_id), thread_id, resource_id)
        return "thread", thread.id, thread_memory(thread)
    found, owner = await storage.get_thread_with_owner(thread_id)
    thread = _owned(found, thread_id, resource_id)
    return "resource", thread.resource_id, None if owner is None else owner.working_memory


def _check_target(thread_id: str | None, resource_id: str | None, settings: WorkingMemory) -> None:
    """Check a working-memory call (enabled; ids; the ids its scope needs)
    before any I/O."""
    if not settings.enabled:
        raise ValidationError(
            "working_memory.enabled",
            "working memory is off (the default): turn it on with "
            'MemoryConfig(working_memory={"enabled": True}) or the call\'s thread_config',
        )
    if thread_id is not None:
        check_id(thread_id, "thread_id")
    if resource_id is not None:
        check_id(resource_id, "resource_id")
    if thread_id is None:
        if settings.scope == "thread":
            raise ValidationError("thread_id", "working memory with thread scope needs a thread_id")
        if resource_id is None:
            raise ValidationError("resource_id", "give a thread_id or a resource_id")


async def _stored(storage: Storage, scope: Scope, key: str) -> str | None:
    if scope == "thread":
        thread = await storage.get_thread(key)
        if thread is None:
            raise NotFoundError(f"thread {key!r} does not exist")
        return thread_memory(thread)
    resource = await storage.get_resource(key)
    return None if resource is None else resource.working_memory


async def _swap(storage: Storage, scope: Scope, key: str, expected: str | None, value: str) -> bool:
    if scope == "thread":
        return await storage.swap_thread_working_memory(key, expected, value)
    return await storage.swap_working_memory(key, expected, value)


def _owned(thread: Thread | None, thread_id: str, resource_id: str | None) -> Thread:
    """The thread, checked to exist and (with ``resource_id``) to be that resource's."""
    if thread is None:
        raise NotFoundError(f"thread {thread_id!r} does not exist")
    if resource_id is not None and thread.resource_id != resource_id:
        raise OwnershipError(f"thread {thread_id!r} does not belong to resource {resource_id!r}")
    return thread


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (R-JSON)")


def _validate_schema(text: str, schema: dict[str, Any]) -> None:
    from jsonschema import Draft202012Validator

    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise ValidationError("working_memory", f"must be JSON when a schema is set: {exc}", "R-JSON") from None
    except RecursionError:
        raise ValidationError("working_memory", "JSON nested too deeply", "R-JSON") from None
    try:
        check_json_value(value, "working_memory")
    except RecursionError:
        raise ValidationError("working_memory", "JSON nested too deeply", "R-JSON") from None
    try:
        error = next(iter(Draft202012Validator(schema).iter_errors(value)), None)
    except Exception as exc:
        # The value is plain JSON, so a failure here is the schema's own (an
        # unresolvable $ref, say): report it as such, not as a raw jsonschema error.
        raise ValidationError("working_memory.schema", f"cannot be applied: {type(exc).__name__}: {exc}") from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise ValidationError("working_memory", f"does not match the schema at {where}: {error.message}")
