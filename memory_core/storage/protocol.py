"""The storage Protocol: what callers (``Memory``, integrations, the CLI) rely on."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from memory_core.lineage import CopyPlan
from memory_core.models import (
    IdPage,
    Include,
    Message,
    MessageFilter,
    MessagePageRequest,
    OrderBy,
    Page,
    PerPage,
    Resource,
    ResourceErasure,
    Thread,
    ThreadFilter,
)
from memory_core.query import NOT_GIVEN, MessagePage
from memory_core.retention import BatchRunner, PruneHook, PruneReport, RetentionPolicy
from memory_core.storage.parts import MessageParts
from memory_core.workmem import Scope

__all__ = ["Storage"]


@runtime_checkable
class Storage(Protocol):
    """What callers type against: every memory-core storage has these.

    :func:`memory_core.connect` returns one, :class:`~memory_core.Memory` takes
    one, and every :class:`BaseStorage` subclass (the reference store and
    each adapter) satisfies it structurally. See :class:`BaseStorage` for each
    method's full contract.
    """

    async def __aenter__(self) -> Self: ...
    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
    async def open(self) -> None: ...
    async def preflight(self, *, must_exist: bool = False, writes: bool = False) -> None: ...
    @property
    def store_identity(self) -> Hashable: ...
    async def get_thread(self, thread_id: str, resource_id: str | None = None) -> Thread | None: ...
    async def get_thread_with_owner(self, thread_id: str) -> tuple[Thread | None, Resource | None]: ...
    async def save_thread(self, thread: Thread | Mapping[str, Any]) -> Thread: ...
    async def insert_thread(self, thread: Thread | Mapping[str, Any]) -> Thread: ...
    async def copy_thread(self, plan: CopyPlan) -> tuple[Thread, list[str]]: ...
    async def update_thread(
        self, thread_id: str, *, title: str | None = None, metadata: Mapping[str, Any] | None = None
    ) -> Thread: ...
    async def delete_thread(self, thread_id: str) -> None: ...
    async def list_threads(
        self,
        filter: ThreadFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 100,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
    ) -> Page[Thread]: ...
    async def save_messages(self, messages: Sequence[Message | Mapping[str, Any]]) -> list[Message]: ...
    async def update_messages(self, updates: Sequence[Mapping[str, Any]]) -> list[Message]: ...
    async def delete_messages(self, ids: Sequence[str]) -> int: ...
    async def get_messages(self, ids: Sequence[str]) -> list[Message]: ...
    async def list_messages(
        self,
        thread_id: str | Sequence[str],
        resource_id: str | None = None,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]: ...
    async def list_messages_by_resource(
        self,
        resource_id: str,
        include: Sequence[Include | Mapping[str, Any]] | None = None,
        filter: MessageFilter | Mapping[str, Any] | None = None,
        page: int = 0,
        per_page: PerPage = 40,
        order_by: OrderBy | Mapping[str, Any] | None = None,
        cursor: str | None = None,
        total: bool = True,
    ) -> Page[Message]: ...
    async def page_messages(self, request: MessagePageRequest) -> Page[Message]: ...
    async def message_parts(self, request: MessagePageRequest, *, threads: Sequence[str] = ()) -> MessageParts: ...
    async def read_message_parts(
        self, request: MessagePage, include: Sequence[Include] = (), threads: tuple[str, ...] = ()
    ) -> MessageParts: ...
    async def include_windows(
        self, include: Sequence[Include | Mapping[str, Any]], resource_id: str | None = None
    ) -> list[list[Message]]: ...
    async def read_windows(
        self, include: Sequence[Include], resource_id: str | None = None, threads: tuple[str, ...] = ()
    ) -> tuple[list[list[Message]], dict[str, Thread]]: ...
    async def get_resource(self, resource_id: str) -> Resource | None: ...
    async def list_resource_ids(self, per_page: PerPage = 100, cursor: str | None = None) -> IdPage: ...
    async def save_resource(self, resource: Resource | Mapping[str, Any]) -> Resource: ...
    async def update_resource(
        self, resource_id: str, *, working_memory: Any = NOT_GIVEN, metadata: Mapping[str, Any] | None = None
    ) -> Resource: ...
    async def swap_working_memory(self, resource_id: str, expected: str | None, value: str) -> bool: ...
    async def swap_thread_working_memory(
        self, thread_id: str, expected: str | None, value: str, *, metadata: Mapping[str, Any] | None = None
    ) -> bool: ...
    async def write_working_memory(
        self,
        value: str,
        *,
        scope: Scope,
        thread_id: str | None,
        resource_id: str | None = None,
        if_version: str | None = NOT_GIVEN,
    ) -> None: ...
    async def delete_resource(self, resource_id: str) -> ResourceErasure: ...
    async def prune(
        self,
        policy: RetentionPolicy,
        *,
        dry_run: bool = False,
        before_delete: PruneHook | None = None,
        after_delete: PruneHook | None = None,
        each_batch: BatchRunner | None = None,
    ) -> PruneReport: ...
    async def close(self) -> None: ...
    async def destroy(self) -> None: ...
