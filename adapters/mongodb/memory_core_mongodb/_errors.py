"""Which PyMongo exceptions are transient (``BackendError.retryable``).

The core wraps every driver exception from a primitive in
:class:`memory_core.errors.BackendError`; this module only classifies them.
Retryable: network errors and timeouts, ``AutoReconnect`` and its
``NotPrimaryError`` (primary step-down), server selection timeouts, errors
the server labels ``RetryableWriteError`` / ``TransientTransactionError`` /
``UnknownTransactionCommitResult``, and the server codes of elections,
shutdowns, write conflicts and time limits. Not retryable: duplicate keys,
bad queries, documents over 16 MiB, authentication and configuration errors.
"""

from __future__ import annotations

from pymongo.errors import (
    BulkWriteError,
    ConnectionFailure,
    ExecutionTimeout,
    OperationFailure,
    PyMongoError,
    WTimeoutError,
)

__all__ = ["RETRYABLE_CODES", "RETRYABLE_LABELS", "is_transient"]

RETRYABLE_LABELS = ("RetryableWriteError", "TransientTransactionError", "UnknownTransactionCommitResult")
"""Server error labels that mean "the same call may succeed if repeated"."""

RETRYABLE_CODES = frozenset(
    {
        6,  # HostUnreachable
        7,  # HostNotFound
        50,  # MaxTimeMSExpired
        89,  # NetworkTimeout
        91,  # ShutdownInProgress
        112,  # WriteConflict
        189,  # PrimarySteppedDown
        262,  # ExceededTimeLimit
        9001,  # SocketException
        10107,  # NotWritablePrimary
        11600,  # InterruptedAtShutdown
        11602,  # InterruptedDueToReplStateChange
        13435,  # NotPrimaryNoSecondaryOk
        13436,  # NotPrimaryOrSecondary
        64,  # WriteConcernFailed (wtimeout)
    }
)
"""Server error codes of transient conditions (elections, shutdowns, conflicts, time limits)."""


def _codes(exc: BulkWriteError) -> list[int]:
    details = exc.details or {}
    found = [error.get("code") for error in details.get("writeErrors", [])]
    found += [error.get("code") for error in details.get("writeConcernErrors", [])]
    return [code for code in found if isinstance(code, int)]


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` (a PyMongo exception) is worth retrying.

    Args:
        exc: any exception raised by a primitive.

    Returns:
        True for the transient kinds listed in the module docstring; False for
        every other exception, including non-PyMongo ones.
    """
    if isinstance(exc, ConnectionFailure | ExecutionTimeout | WTimeoutError):
        return True  # AutoReconnect, NotPrimaryError, NetworkTimeout, ServerSelectionTimeoutError ...
    if not isinstance(exc, PyMongoError):
        return False
    if exc.timeout or any(exc.has_error_label(label) for label in RETRYABLE_LABELS):
        return True
    if isinstance(exc, BulkWriteError):
        codes = _codes(exc)
        return bool(codes) and all(code in RETRYABLE_CODES for code in codes)
    return isinstance(exc, OperationFailure) and exc.code in RETRYABLE_CODES
