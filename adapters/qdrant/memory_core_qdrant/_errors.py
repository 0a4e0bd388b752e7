"""Which Qdrant driver exceptions are transient (``BackendError.retryable``).

The store wraps every driver exception in
:class:`memory_core.errors.BackendError`; this module only classifies them.

Retryable: connection failures and timeouts (``httpx.TransportError``, Python's
``ConnectionError``/``TimeoutError``, qdrant-client's
``ResponseHandlingException`` around one of those), HTTP 408/429/502/503/504
answers, and gRPC ``UNAVAILABLE``/``DEADLINE_EXCEEDED``/``RESOURCE_EXHAUSTED``.
Not retryable: every other answer (bad request, wrong dimension, missing
collection) and the in-process engine's errors, which are deterministic.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RETRYABLE_STATUS", "is_transient"]

RETRYABLE_STATUS = frozenset({408, 429, 502, 503, 504})
"""HTTP status codes worth retrying."""

_RETRYABLE_GRPC = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED"})


def _grpc_code(exc: BaseException) -> str | None:
    code_method: Any = getattr(exc, "code", None)
    if not callable(code_method):
        return None
    try:
        code = code_method()
    except Exception:  # not a grpc.RpcError after all
        return None
    name = getattr(code, "name", None)
    return name if isinstance(name, str) else None


def is_transient(exc: BaseException) -> bool:
    """Whether repeating the call that raised ``exc`` may succeed.

    Args:
        exc: an exception raised by qdrant-client or qdrant-edge-py.

    Returns:
        True for the transient kinds in the module docstring, else False.
    """
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if isinstance(exc, ConnectionError | TimeoutError | httpx.TransportError):
        return True
    if isinstance(exc, ResponseHandlingException):
        return is_transient(exc.source)
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code in RETRYABLE_STATUS
    if type(exc).__module__.startswith("grpc"):
        return _grpc_code(exc) in _RETRYABLE_GRPC
    return False
