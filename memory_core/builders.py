"""Fast constructors of stored records, for adapters decoding rows.

A frozen dataclass sets each field in ``__init__`` through
``object.__setattr__`` (to get past its own frozen ``__setattr__``), which
makes a nine-field :class:`~memory_core.models.Message` cost about 2.4 µs to
build, several times the decode of the row it comes from. The builders here
set the slots with plain attribute stores on a look-alike class with the
same slot layout and then turn the object into the real class, the same
object in the end (``type(m) is Message``, frozen, equal, picklable):
about 0.6 µs for a message (``python -m memory_core_bench.decode_cost``).

They take every field positionally in the dataclass's field order, with no
defaults and no validation: they are for values read back from a store,
which were validated when written, and for records the core builds from
values it has just checked. Anything else should call the class.

Each builder has a real signature for the type checker (:func:`builder`
takes it from a declaration whose parameters are checked, at import, to be
the class's fields in order), so every call site is checked like a call of
the class: ``build_message(id, thread_id, role, content, resource_id, type,
metadata, created_at, sequence)``.

A time field may be given as :class:`~memory_core.models.StoredTime`
(integer microseconds since the epoch, as a row holds it) instead of a
datetime: the record turns it into the aware datetime when the field is
first read, so a read that never looks at a time never builds one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import fields
from datetime import datetime
from typing import Any, ParamSpec, TypeVar, overload

from memory_core.models import JSONObject, Message, MessageContent, Resource, Role, StoredTime, Thread

__all__ = ["StoredTime", "build_message", "build_resource", "build_thread", "builder"]

T = TypeVar("T")
P = ParamSpec("P")

Time = datetime | StoredTime | None
"""A time field as a builder takes it: a datetime, stored microseconds, or None."""


@overload
def builder(cls: type[T]) -> Callable[..., T]: ...
@overload
def builder(cls: type[T], signature: Callable[P, T]) -> Callable[P, T]: ...


def builder(cls: type[T], signature: Callable[P, T] | None = None) -> Callable[..., T]:
    """A constructor of ``cls``, a frozen slotted dataclass without
    ``__post_init__``, taking every field positionally in field order.

    Args:
        cls: the dataclass.
        signature: a declaration of the constructor (a function whose
            parameters are ``cls``'s fields, in order, positional-only,
            typed as the builder takes them; its body is never run). It
            gives the builder its type, so the type checker checks each call.
            Without it the builder is typed ``Callable[..., cls]`` and its
            calls go unchecked (only the storage's internal query builders
            still are).

    Raises:
        TypeError: ``cls`` is not a slotted dataclass or has
            ``__post_init__``; ``signature``'s parameters are not its fields
            in order.
    """
    if "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} must be a slotted dataclass without __post_init__")
    slots: tuple[str, ...] = cls.__dict__["__slots__"]
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    declared = names if signature is None else list(inspect.signature(signature).parameters)
    if declared != names:
        raise TypeError(f"the signature of {cls.__name__}'s builder names {declared}, not its fields {names}")
    body = "".join(f"    self.{name} = {name}\n" for name in names)
    source = f"def __init__(self, {', '.join(names)}, /):\n{body}    self.__class__ = cls\n"
    namespace: dict[str, Any] = {"cls": cls}
    exec(source, namespace)  # generated like dataclasses' own __init__
    look_alike = type(f"_Stored{cls.__name__}", (), {"__slots__": slots, "__init__": namespace["__init__"]})
    return look_alike  # type: ignore[return-value]  # its instances become cls


def _message(
    id: str,
    thread_id: str,
    role: Role,
    content: MessageContent,
    resource_id: str | None,
    type: str,
    metadata: JSONObject,
    created_at: Time,
    sequence: int | None,
    /,
) -> Message:
    raise NotImplementedError  # a declaration: builder() reads its signature


def _thread(
    id: str,
    resource_id: str,
    title: str,
    metadata: JSONObject,
    created_at: Time,
    updated_at: Time,
    last_message_at: Time,
    /,
) -> Thread:
    raise NotImplementedError  # a declaration: builder() reads its signature


def _resource(
    id: str, working_memory: str | None, metadata: JSONObject, created_at: Time, updated_at: Time, /
) -> Resource:
    raise NotImplementedError  # a declaration: builder() reads its signature


build_message = builder(Message, _message)
"""``build_message(id, thread_id, role, content, resource_id, type, metadata,
created_at, sequence) -> Message`` for decoded stored values."""

build_thread = builder(Thread, _thread)
"""``build_thread(id, resource_id, title, metadata, created_at, updated_at,
last_message_at) -> Thread`` for decoded stored values."""

build_resource = builder(Resource, _resource)
"""``build_resource(id, working_memory, metadata, created_at, updated_at)
-> Resource`` for decoded stored values."""
