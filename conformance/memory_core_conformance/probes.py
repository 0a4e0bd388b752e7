"""Safe probes for optional capabilities an adapter did not declare.

An adapter that under-declares its capabilities passes the suite with the
capability tests skipped, so a bug in what it really has goes unseen. A probe
looks, through the adapter's own ``storage_factory`` and ``storage_reopener``,
for signs that the store has the capability anyway: it writes one thread and
one message in a fresh namespace, reads them through a second instance, and
destroys what it made. A probe never fails: a store without the capability
(an honest in-memory one) may answer with nothing, or with any error, and the
probe reports what it saw.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass

from memory_core.capabilities import Capability
from memory_core.errors import MemoryCoreError
from memory_core.models import Message, Thread
from memory_core.storage import BaseStorage
from memory_core_conformance.harness import StorageFactory, StorageReopener

__all__ = ["PROBES", "Probe", "ProbeResult", "probe_persistent", "probe_shared_namespace"]

_THREAD = Thread("probe-thread", "probe-resource")
_MESSAGE = Message("probe-message", "probe-thread", "user", "probe")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What a probe saw.

    Attributes:
        capability: the capability probed.
        seems_present: True when the store behaved as one that has it, False
            when it did not, None when it could not be probed.
        evidence: one clause saying what was seen ("a new instance read back
            what a closed one saved", "the second instance raised ...") or
            why there was no probe.
    """

    capability: Capability
    seems_present: bool | None
    evidence: str


Probe = Callable[[StorageFactory, StorageReopener], Awaitable[ProbeResult]]
"""``probe(storage_factory, storage_reopener) -> ProbeResult``."""


def _failure(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:160]


async def _seen_by(store: BaseStorage) -> bool:
    """Whether ``store`` holds the probe's thread and message."""
    return await store.get_thread(_THREAD.id) is not None and bool(await store.get_messages([_MESSAGE.id]))


async def probe_persistent(factory: StorageFactory, reopener: StorageReopener) -> ProbeResult:
    """PERSISTENT: save through one instance, close it, open a new instance
    on its namespace and look for the data; then destroy the namespace.

    A reopener or second instance that raises counts as "no sign" (the
    namespace stays behind only if the second instance cannot destroy it).

    Raises:
        MemoryCoreError, or the adapter's own error: the *first* instance
        failed to open or save (the suite's other tests report that).
    """
    first = factory(None)
    await first.open()
    await first.save_thread(_THREAD)
    await first.save_messages([_MESSAGE])
    await first.close()
    second: BaseStorage | None = None
    try:
        second = reopener(first, None)
        found = await _seen_by(second)
    except Exception as exc:  # a store without the capability may fail in any way
        return ProbeResult(Capability.PERSISTENT, False, f"reopening raised {_failure(exc)}")
    finally:
        if second is not None:
            with suppress(MemoryCoreError):
                await second.destroy()
    if found:
        return ProbeResult(Capability.PERSISTENT, True, "a new instance read back what a closed one saved")
    return ProbeResult(Capability.PERSISTENT, False, "a new instance did not see what a closed one saved")


async def probe_shared_namespace(factory: StorageFactory, reopener: StorageReopener) -> ProbeResult:
    """SHARED_NAMESPACE: open two instances on one namespace at once, write
    through the first and read through the second; then close the second and
    destroy the first.

    Raises:
        MemoryCoreError, or the adapter's own error: the *first* instance
        failed to open or save.
    """
    first = factory(None)
    await first.open()
    second: BaseStorage | None = None
    try:
        await first.save_thread(_THREAD)
        await first.save_messages([_MESSAGE])
        try:
            second = reopener(first, None)
            found = await _seen_by(second)
        except Exception as exc:  # e.g. a lock error: the namespace is not shareable
            return ProbeResult(Capability.SHARED_NAMESPACE, False, f"a second instance raised {_failure(exc)}")
    finally:
        if second is not None:
            await second.close()
        await first.destroy()
    if found:
        return ProbeResult(Capability.SHARED_NAMESPACE, True, "a second open instance saw the first one's writes")
    return ProbeResult(Capability.SHARED_NAMESPACE, False, "a second open instance did not see the first one's writes")


PROBES: dict[Capability, Probe] = {
    Capability.PERSISTENT: probe_persistent,
    Capability.SHARED_NAMESPACE: probe_shared_namespace,
}
"""The probe of every optional capability."""
