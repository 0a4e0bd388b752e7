"""OpenTelemetry spans for storage, vector store and :class:`~memory_core.Memory` calls.

Every public storage, vector store and Memory operation decorated with
:func:`traced` becomes one span when the application uses OpenTelemetry. The attribute
names follow the OpenTelemetry GenAI semantic conventions for memory
operations (still in development upstream: ``gen_ai.operation.name``
values ``search_memory``, ``create_memory``, ``update_memory``,
``delete_memory``; ``gen_ai.conversation.id``; ``gen_ai.memory.*``) and the
database conventions for the backend (``db.system.name``, with the older
``db.system`` alongside; ``db.operation.name``;
``db.operation.batch.size``; ``db.response.returned_rows``). The span's
start and end times are the operation's latency. A vector store's spans
name the vector backend (``qdrant``, ``pgvector``, ``memory``) in
``db.system.name`` and carry the query vector's length
(``gen_ai.embeddings.dimension.count``) and ``top_k``
(``memory_core.vector.top_k``) of a search.

Span name: ``"<gen_ai.operation.name> <method>"``, e.g. ``"search_memory
list_messages"``. A storage call made inside another storage call (for
example ``list_messages`` through ``page_messages``) adds no second span,
and likewise within a vector store; the storage and vector calls made by a
Memory operation are children of its span.

Cost: memory-core never imports ``opentelemetry`` itself. A span is made
only when the application has imported ``opentelemetry.trace`` and a span
can record (a tracer provider other than the API's default proxy or no-op
is set, globally or through :func:`set_tracer_provider`); otherwise a
decorated call costs a dictionary lookup (and, with the API imported by a
library alone, a provider check). Message text and search queries (``gen_ai.memory.content``,
``gen_ai.memory.query``, the text a recall searches for: a vector store is
given only its vector, which is never recorded) are recorded only after
:func:`set_capture_content` (True) or with the environment variable
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (the GenAI
instrumentations' switch).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal, ParamSpec, TypeVar

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "TRACER_NAME",
    "Layer",
    "Operation",
    "capture_content",
    "set_capture_content",
    "set_tracer_provider",
    "traced",
]

TRACER_NAME = "memory_core"
"""Instrumentation scope name of every span."""
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Environment switch for recording message text (``true``/``1``)."""

Operation = Literal["search_memory", "create_memory", "update_memory", "delete_memory"]
Layer = Literal["memory", "storage", "vector"]
"""Which object a traced method belongs to: a call made inside a span of its
own layer adds no span."""

P = ParamSpec("P")
R = TypeVar("R")
_Method = Callable[P, Coroutine[Any, Any, R]]

_capture: list[bool | None] = [None]
_tracer: list[Any] = []
# The layer of the span the current task is inside, if any.
_layer: ContextVar[str | None] = ContextVar("memory_core_span_layer", default=None)


def set_capture_content(enabled: bool | None) -> None:
    """Record message text and search queries on spans (True), never (False),
    or as :data:`CAPTURE_CONTENT_ENV` says (None, the default). Off unless
    enabled: message text is user data."""
    _capture[0] = enabled


def capture_content() -> bool:
    """Whether spans carry message text now."""
    if _capture[0] is not None:
        return _capture[0]
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true")


def set_tracer_provider(provider: Any) -> None:
    """Trace memory-core with this OpenTelemetry ``TracerProvider`` instead of
    the global one (``opentelemetry.trace.set_tracer_provider``); None goes
    back to the global provider."""
    _tracer.clear()
    if provider is not None:
        _tracer.append(provider.get_tracer(TRACER_NAME, _own_version()))


def _own_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memory-core")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return None


def _get_tracer() -> Any:
    """The OpenTelemetry tracer, or None when the application has not imported
    OpenTelemetry (never imports it itself)."""
    if _tracer:
        return _tracer[0]
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        return None
    # get_tracer returns a proxy that follows a provider set later.
    _tracer.append(api.get_tracer(TRACER_NAME, _own_version()))
    return _tracer[0]


def _can_record(tracer: Any) -> bool:
    """Whether ``tracer``'s spans can be recorded: not OpenTelemetry's no-op
    tracer, and for the global proxy, a provider has been set. A library
    that imports only the API (the OpenAI Agents SDK does) leaves the proxy
    without one; its spans would record nothing and cost microseconds a call."""
    api = sys.modules["opentelemetry.trace"]
    if isinstance(tracer, api.ProxyTracer):
        return not isinstance(api.get_tracer_provider(), api.ProxyTracerProvider | api.NoOpTracerProvider)
    return not isinstance(tracer, api.NoOpTracer)


def traced(
    operation: Operation, layer: Layer | None = None, name: str | None = None
) -> Callable[[_Method[P, R]], _Method[P, R]]:
    """Decorate a public async method of a storage (an object with
    ``backend_name``), a vector store or a Memory (with ``storage``) so each
    call is a span (see the module docstring for names and attributes).

    Args:
        operation: the ``gen_ai.operation.name`` of the method.
        layer: the owner's :data:`Layer`; None (the default) tells storage
            (``backend_name``) from Memory. A vector store, which has a
            ``backend_name`` too, says ``"vector"``: its calls inside a storage
            span, or a storage's inside its spans, are spans of their own.
        name: the span's method name (default: the method's own), for a
            variant of a public method that answers as that method.
    """

    def decorate(method: _Method[P, R]) -> _Method[P, R]:
        span_name = name or method.__name__
        parameters = method.__code__.co_varnames[1 : method.__code__.co_argcount + method.__code__.co_kwonlyargcount]

        @functools.wraps(method)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            tracer = _get_tracer()
            if tracer is None or not _can_record(tracer):  # the usual case: no OpenTelemetry SDK in use
                return await method(*args, **kwargs)
            owner = args[0]
            own = layer or ("storage" if hasattr(owner, "backend_name") else "memory")
            if _layer.get() == own:
                return await method(*args, **kwargs)
            token = _layer.set(own)
            try:
                with tracer.start_as_current_span(f"{operation} {span_name}", kind=_client_kind()) as span:
                    if span.is_recording():
                        bound = dict(zip(parameters, args[1:], strict=False)) | kwargs
                        span.set_attributes(_request_attributes(owner, operation, span_name, bound))
                    try:
                        result = await method(*args, **kwargs)
                    except Exception as exc:
                        span.set_attribute("error.type", type(exc).__qualname__)
                        raise
                    if span.is_recording():
                        span.set_attributes(_result_attributes(operation, result))
                    return result
            finally:
                _layer.reset(token)

        return wrapper

    return decorate


def _client_kind() -> Any:
    from opentelemetry.trace import SpanKind

    return SpanKind.CLIENT


def _backend(owner: Any) -> str:
    storage = getattr(owner, "storage", owner)
    return str(getattr(storage, "backend_name", type(storage).__name__))


def _request_attributes(owner: Any, operation: str, name: str, bound: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes known before the call, from its arguments."""
    backend = _backend(owner)
    found: dict[str, Any] = {
        "gen_ai.operation.name": operation,
        "gen_ai.provider.name": "memory_core",
        "db.system.name": backend,
        "db.system": backend,
        "db.operation.name": name,
    }
    request = bound.get("request")
    policy = bound.get("policy")
    thread_ids = getattr(request, "thread_ids", None) or bound.get("thread_id")
    resource_id = bound.get("resource_id") or getattr(request, "resource_id", None)
    resource_id = resource_id or getattr(policy, "resource_id", None)
    if isinstance(thread_ids, str):
        found["gen_ai.conversation.id"] = thread_ids
        found["gen_ai.memory.scope"] = "session"
    if isinstance(resource_id, str):
        found["gen_ai.memory.namespace"] = resource_id
        found.setdefault("gen_ai.memory.scope", "user")
    for key in ("messages", "updates", "ids", "points", "message_ids"):
        batch = bound.get(key)
        if isinstance(batch, Sequence) and not isinstance(batch, str):
            found["db.operation.batch.size"] = len(batch)
            if key == "messages" and capture_content():
                found["gen_ai.memory.content"] = _texts(batch)
    query = bound.get("vector_search_string")
    if isinstance(query, str) and capture_content():
        found["gen_ai.memory.query"] = query
    vector = bound.get("vector")
    shape = getattr(vector, "shape", None)
    if isinstance(shape, tuple) and len(shape) == 1:
        found["gen_ai.embeddings.dimension.count"] = shape[0]
    elif isinstance(vector, list | tuple):
        found["gen_ai.embeddings.dimension.count"] = len(vector)
    top_k = bound.get("top_k")
    if isinstance(top_k, int):
        found["memory_core.vector.top_k"] = top_k
    return found


def _result_attributes(operation: str, result: Any) -> dict[str, Any]:
    """Attributes known after the call: how many records it returned or removed."""
    items = getattr(result, "items", None)
    if items is None:
        items = getattr(result, "messages", None)  # RecallResult
    if isinstance(result, list):
        items = result
    found: dict[str, Any] = {}
    if isinstance(items, list):
        found["db.response.returned_rows"] = len(items)
        if operation == "search_memory":
            found["gen_ai.memory.search.result.count"] = len(items)
    count = getattr(result, "message_count", None)  # PruneReport
    if isinstance(count, int):
        found["memory_core.prune.messages"] = count
        found["memory_core.prune.threads"] = len(result.threads)
    return found


def _texts(messages: Sequence[Any]) -> str:
    """The contents of messages being saved, as a JSON list (opt-in only)."""
    contents = [m.get("content") if isinstance(m, Mapping) else getattr(m, "content", None) for m in messages]
    return json.dumps(contents, ensure_ascii=False, default=str)
