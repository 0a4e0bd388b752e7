"""Working memory, the storage side: compare-and-set swaps and checked
writes of a resource's or a thread's working memory.

What a write checks (the thread exists, belongs to the resource asked for,
holds the expected version) is decided by :mod:`memory_core.workmem`; here
the store reads what those checks need with one
:meth:`~memory_core.storage.contract.AdapterContract._read` and writes
with the adapter's plain or conditional primitive.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_core.clock import to_us
from memory_core.errors import NotFoundError, StaleStateError, ValidationError
from memory_core.models import Thread
from memory_core.plan import ReadPlan
from memory_core.query import NOT_GIVEN
from memory_core.storage.lifecycle import Lifecycle
from memory_core.telemetry import traced
from memory_core.validation import check_id, check_json_object, check_record_size, check_text
from memory_core.workmem import MemoryDecision, MemoryWrite, Scope, memory_decision, thread_memory

__all__ = ["WorkingMemory"]


class WorkingMemory(Lifecycle):
    """The working-memory calls of :class:`~memory_core.storage.BaseStorage`,
    and the default of the contract's ``_write_memory``."""

    @traced("update_memory")
    async def swap_working_memory(self, resource_id: str, expected: str | None, value: str) -> bool:
        """Compare-and-set of a resource's working memory: set it to ``value``
        only if it is ``expected`` now (None: nothing stored, or no resource);
        atomic on every backend. A missing resource is created. Bumps
        ``updated_at`` when it writes.

        Returns:
            True if it wrote, False if the stored value was not ``expected``
            (nothing written).

        Raises:
            ValidationError: bad id, ``expected`` not str/None, ``value`` not a
                str, or a record over R-SIZE.
        """
        check_id(resource_id, "resource_id")
        if expected is not None:
            check_text(expected, "expected")
        check_text(value, "working_memory")
        check_record_size("working_memory", {"working_memory": value})
        await self._ready()
        with self._guard("swap_working_memory"):
            return await self._swap_resource_memory(resource_id, expected, value, to_us(self.clock.now()))

    @traced("update_memory")
    async def swap_thread_working_memory(
        self, thread_id: str, expected: str | None, value: str, *, metadata: Mapping[str, Any] | None = None
    ) -> bool:
        """Compare-and-set of a thread's working memory
        (``metadata["working_memory"]``): set it to ``value`` only if it is
        ``expected`` now (None: the key is absent or not a str); atomic on
        every backend; other metadata keys are kept, and ``metadata`` (a JSON
        object without ``working_memory``), when given, is merged one level
        in the same write (so a state written with a revision is written
        only by the holder of the expected one). Bumps ``updated_at`` when
        it writes.

        Returns:
            True if it wrote, False if the stored value was not ``expected``.

        Raises:
            ValidationError: bad id or values, ``metadata`` not a JSON object
                or holding ``working_memory``, or a record over R-SIZE.
            NotFoundError: no such thread.
        """
        check_id(thread_id, "thread_id")
        if expected is not None:
            check_text(expected, "expected")
        check_text(value, "working_memory")
        patch = None if metadata is None else check_json_object(metadata, "metadata")
        if patch is not None and "working_memory" in patch:
            raise ValidationError("metadata", "holds 'working_memory': pass it as the value", "R-WM")
        check_record_size("working_memory", {"metadata": {**(patch or {}), "working_memory": value}})
        await self._ready()
        with self._guard("swap_thread_working_memory"):
            now_us = to_us(self.clock.now())
            if patch:
                swapped = await self._swap_thread_memory(thread_id, expected, value, now_us, patch)
            else:  # an adapter written before ``metadata`` keeps working
                swapped = await self._swap_thread_memory(thread_id, expected, value, now_us)
        if swapped is None:
            raise NotFoundError(f"thread {thread_id!r} does not exist")
        return swapped

    @traced("update_memory")
    async def write_working_memory(
        self,
        value: str,
        *,
        scope: Scope,
        thread_id: str | None,
        resource_id: str | None = None,
        if_version: str | None = NOT_GIVEN,
    ) -> None:
        """Set a working memory with its checks (what
        :meth:`memory_core.Memory.update_working_memory` stores through).

        ``scope="thread"``: ``metadata["working_memory"]`` of ``thread_id``
        (other keys kept); ``scope="resource"``: the working memory of the
        resource owning ``thread_id``, or of ``resource_id`` when
        ``thread_id`` is None (a missing record is created). With both ids,
        the thread must belong to ``resource_id``. ``if_version`` makes it a
        compare-and-set on :func:`~memory_core.workmem.working_memory_version`
        of the stored value (None: only while nothing is stored); omitted:
        unconditional. Bumps ``updated_at``. Where nothing needs checking (a
        resource by id; a thread of any resource) it is one plain write;
        otherwise :meth:`_write_memory`.

        Raises:
            ValidationError: bad ids or values, a record over R-SIZE, or
                thread scope without ``thread_id``.
            NotFoundError: ``thread_id`` names no thread.
            OwnershipError: the thread belongs to another resource.
            ConflictError: ``if_version`` is not the stored version (nothing
                written).
        """
        check_text(value, "working_memory")
        if thread_id is not None:
            check_id(thread_id, "thread_id")
        if resource_id is not None:
            check_id(resource_id, "resource_id")
        if if_version is not NOT_GIVEN and if_version is not None:
            check_text(if_version, "if_version")
        if thread_id is None and (scope == "thread" or resource_id is None):
            raise ValidationError("thread_id", f"a {scope} working memory write needs a thread_id")
        write = MemoryWrite(scope, thread_id, resource_id, value, if_version is not NOT_GIVEN)
        decide = memory_decision(write, if_version)
        # The record the write primitive's public twin checks (update_thread,
        # update_resource, swap_*): the same R-SIZE size; the error names the
        # field the caller gave.
        memory: dict[str, Any] = {"working_memory": value}
        record = {"metadata": memory} if scope == "thread" else memory
        if not write.conditional:
            record = {"title": None, **record} if scope == "thread" else {**memory, "metadata": None}
        try:
            check_record_size("working_memory", record)
        except ValidationError as exc:
            oversized: ValidationError | None = exc
        else:
            oversized = None
        if oversized is not None:
            # Refused only after the checks that read (a missing thread is a
            # NotFoundError first, as it always was): read, check, refuse.
            await self._ready()
            with self._guard("write_working_memory"):
                decide(*(await self._memory_state(write))[:2])
            raise oversized
        if not write.conditional and thread_id is None and resource_id is not None:
            await self._ready()
            with self._guard("update_resource"):
                await self._patch_resource(resource_id, value, None, to_us(self.clock.now()))
            return
        if not write.conditional and thread_id is not None and scope == "thread" and resource_id is None:
            await self._ready()
            with self._guard("update_thread"):
                found = await self._patch_thread(thread_id, None, {"working_memory": value}, to_us(self.clock.now()))
            if found is None:
                decide(None, None)
            return
        now_us = to_us(self.clock.now())  # one bump time for every attempt
        await self._optimistic("write_working_memory", lambda: self._write_memory(write, decide, now_us))

    async def _write_memory(self, write: MemoryWrite, decide: MemoryDecision, now_us: int) -> None:
        """The default write of
        :meth:`~memory_core.storage.contract.AdapterContract._write_memory`:
        :meth:`_memory_state`, ``decide``, then the plain or conditional write
        primitive of its scope (a value or thread changed in between raises
        :class:`~memory_core.errors.StaleStateError`: the core retries)."""
        thread, current, key = await self._memory_state(write)
        decide(thread, current)
        if write.scope == "thread":
            if write.conditional:
                done = await self._swap_thread_memory(key, current, write.value, now_us)
            else:
                done = await self._patch_thread(key, None, {"working_memory": write.value}, now_us) is not None
        elif write.conditional:
            done = await self._swap_resource_memory(key, current, write.value, now_us)
        else:
            await self._patch_resource(key, write.value, None, now_us)
            done = True
        if not done:
            raise StaleStateError(f"working memory of {key!r} changed while writing")

    async def _memory_state(self, write: MemoryWrite) -> tuple[Thread | None, str | None, str]:
        """What ``write``'s checks read, with one :meth:`_read`: ``(thread or
        None, stored value, id of the record written)``.

        Raises:
            ValidationError: ``write`` names neither a thread nor a resource.
        """
        if write.thread_id is None:
            if write.resource_id is None:
                raise ValidationError("thread_id", "a working memory write needs a thread_id or a resource_id")
            record = (await self._read(ReadPlan(resources=(write.resource_id,)))).resources.get(write.resource_id)
            return None, None if record is None else record.working_memory, write.resource_id
        resource_scope = write.scope == "resource"
        parts = await self._read(ReadPlan(threads=(write.thread_id,), owner_resources=resource_scope))
        thread = parts.threads.get(write.thread_id)
        if thread is None:
            return None, None, write.thread_id
        if not resource_scope:
            return thread, thread_memory(thread), thread.id
        owner = parts.resources.get(thread.resource_id)
        return thread, None if owner is None else owner.working_memory, thread.resource_id
