"""Driver errors: wrapped as BackendError, classified retryable or not."""

from __future__ import annotations

import pytest
from memory_core_mongodb import MongoStorage
from pymongo.errors import (
    AutoReconnect,
    BulkWriteError,
    ConfigurationError,
    DocumentTooLarge,
    DuplicateKeyError,
    ExecutionTimeout,
    NetworkTimeout,
    NotPrimaryError,
    OperationFailure,
    ServerSelectionTimeoutError,
    WTimeoutError,
)

from memory_core.errors import BackendError
from memory_core.testing import free_port

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "exc",
    [
        AutoReconnect("connection reset"),
        NotPrimaryError("not primary", {"code": 10107}),
        NetworkTimeout("timed out"),
        ServerSelectionTimeoutError("no servers"),
        ExecutionTimeout("operation exceeded time limit", 50),
        WTimeoutError("waiting for replication timed out", 64),
        OperationFailure("Primary stepped down", 189),
        OperationFailure("WriteConflict", 112),
        OperationFailure("interrupted", 11602),
        OperationFailure("any", 1, {"errorLabels": ["TransientTransactionError"]}),
        OperationFailure("any", 1, {"errorLabels": ["RetryableWriteError"]}),
        BulkWriteError({"writeErrors": [{"code": 112, "errmsg": "WriteConflict"}], "writeConcernErrors": []}),
        TimeoutError(),
        ConnectionResetError(),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_transient_errors_are_retryable(exc: Exception) -> None:
    assert MongoStorage().is_retryable(exc)


@pytest.mark.parametrize(
    "exc",
    [
        DuplicateKeyError("E11000 duplicate key", 11000),
        OperationFailure("bad query", 2),
        OperationFailure("unauthorized", 13),
        DocumentTooLarge("BSON document too large"),
        ConfigurationError("bad option"),
        BulkWriteError({"writeErrors": [{"code": 11000, "errmsg": "dup"}], "writeConcernErrors": []}),
        ValueError("not a driver error"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_permanent_errors_are_not_retryable(exc: Exception) -> None:
    assert not MongoStorage().is_retryable(exc)


async def test_unreachable_server_raises_a_retryable_backend_error() -> None:
    # timeoutMS too: under the adapter's default (60 s) PyMongo selects a server for that long.
    store = MongoStorage.from_url(f"mongodb://127.0.0.1:{free_port()}/x", serverSelectionTimeoutMS=300, timeoutMS=300)
    with pytest.raises(BackendError) as caught:
        await store.get_thread("t1")
    error = caught.value
    assert error.backend == "mongodb"
    assert error.operation == "open"
    assert error.retryable is True
    assert isinstance(error.original, ServerSelectionTimeoutError)
    assert error.__cause__ is error.original
    await store.close()
