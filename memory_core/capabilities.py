"""Optional capabilities a storage adapter may declare (as data).

Every rule of the contract (stated in ``memory_core_conformance.rules``) is
required of every adapter. A capability names an *optional* property of a
backend that a test can only exercise when the backend has it, such as a
second process opening the same namespace. An adapter declares what it has
on its class::

    class SQLiteStorage(BaseStorage):
        capabilities = frozenset({Capability.PERSISTENT, Capability.SHARED_NAMESPACE})

The conformance suite (``memory_core_conformance``) skips the tests of an
undeclared capability, giving the reason, and checks that declared ones work.
``Capability`` is a ``str`` enum, so ``frozenset[str]`` declarations compare
equal to it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

__all__ = ["OPTIONAL_CAPABILITIES", "Capability", "declared_capabilities"]


class Capability(StrEnum):
    """An optional capability of a storage adapter."""

    PERSISTENT = "persistent"
    """Adapter can reopen a namespace: data saved through one instance is read
    back, unchanged, by a new instance on the same namespace after the first
    one is closed (files, servers; not a process-local store)."""

    SHARED_NAMESPACE = "shared_namespace"
    """Adapter can serve several open instances on one namespace at the same
    time in one event loop: each sees the others' writes, and concurrent
    writers and readers raise no error ("database is locked" included) (C12)."""


OPTIONAL_CAPABILITIES: frozenset[Capability] = frozenset(Capability)
"""Every capability an adapter may declare."""


def declared_capabilities(storage_class: type | object, /) -> frozenset[Capability]:
    """The capabilities a storage class (or one store) declares, as
    :class:`Capability` members.

    Args:
        storage_class: a :class:`~memory_core.storage.BaseStorage` subclass or
            instance (or anything with a ``capabilities`` attribute of
            strings); an instance may declare fewer than its class.

    Returns:
        The declared capabilities; an empty set when none are declared.

    Raises:
        ValueError: a declared name is not a :class:`Capability` (a typo would
            otherwise silently skip the tests it gates).
    """
    raw: Iterable[str] = getattr(storage_class, "capabilities", frozenset())
    found = set()
    for name in raw:
        try:
            found.add(Capability(name))
        except ValueError:
            known = ", ".join(sorted(c.value for c in Capability))
            raise ValueError(
                f"{getattr(storage_class, '__name__', type(storage_class).__name__)}.capabilities declares "
                f"unknown capability {name!r} (known: {known})"
            ) from None
    return frozenset(found)
