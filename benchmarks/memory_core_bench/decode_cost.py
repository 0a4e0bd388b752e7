"""What a stored row costs to become a typed ``Message``, against the raw decode.

Issue 14's target: a row becomes a :class:`memory_core.models.Message` at most
1 µs slower than the raw driver's decode of the same row (the raw baselines
decode the JSON columns with orjson and keep ``created_at`` as an int). Each
adapter's own row decoder is timed on the row shape its backend returns,
beside the raw decode and beside the plain dataclass constructor the
decoders used before :mod:`memory_core.builders`. Repeats are interleaved
and the minimum is kept (the least disturbed run).

Usage (venv active, adapters installed)::

    python -m memory_core_bench.decode_cost [--rows 200000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from memory_core.clock import from_us
from memory_core.models import Message

_CONTENT = '"' + "hello there, how are you today? " * 4 + '"'
_META = '{"topic":"billing","turn":3}'
_CREATED_US = 1_764_580_000_123_456
_ROW = ("m0001", "t1", "r1", "user", "v2", _CONTENT, _META, _CREATED_US, 17)


def _raw(row: tuple[Any, ...] = _ROW) -> tuple[Any, ...]:
    """The raw baselines' decode: JSON columns parsed, the rest as stored."""
    return (row[0], row[1], row[2], row[3], row[4], orjson.loads(row[5]), orjson.loads(row[6]), row[7], row[8])


def _dataclass_constructor(row: tuple[Any, ...] = _ROW) -> Message:
    """The decode before the builders: the frozen dataclass's own __init__."""
    return Message(
        row[0], row[1], row[3], orjson.loads(row[5]), row[2], row[4], orjson.loads(row[6]), from_us(row[7]), row[8]
    )


def _decoders() -> dict[str, Callable[[], Any]]:
    """Each installed adapter's row decoder, bound to a row of its own shape."""
    found: dict[str, Callable[[], Any]] = {
        "raw decode (tuple, int time)": _raw,
        "Message(...) constructor": _dataclass_constructor,
    }
    try:
        from memory_core_sqlite._ops import _message as sqlite_message

        found["sqlite row -> Message"] = lambda: sqlite_message(_ROW)
    except ImportError:
        pass
    try:
        from memory_core_redis.storage import _message as redis_message

        record = ["m0001", "t1", "user", "v2", _CONTENT, _META, str(_CREATED_US), "17"]
        found["redis record -> Message"] = lambda: redis_message("r1", record)
    except ImportError:
        pass
    try:
        from memory_core_mongodb._layout import message_doc, message_from_doc

        # the document the adapter stores (message_doc leaves out the insert-only fields)
        doc = {**message_doc(_dataclass_constructor()), "_id": "m0001", "resource_id": "r1"}
        doc.update(created_at=_CREATED_US, seq=17)
        found["mongodb document -> Message"] = lambda: message_from_doc(doc)
    except ImportError:
        pass
    try:
        from memory_core_postgres.storage import _message as postgres_message

        when = datetime(2025, 12, 1, 9, 6, 40, 123456, tzinfo=UTC)
        pg_row = ("m0001", "t1", "r1", "user", '"v2"', _CONTENT, _META, when, 17)
        found["postgres row -> Message"] = lambda: postgres_message(pg_row)
    except ImportError:
        pass
    return found


def measure(rows: int, repeats: int) -> dict[str, float]:
    """Nanoseconds per row for each decoder: the minimum over interleaved repeats."""
    decoders = _decoders()
    best = dict.fromkeys(decoders, float("inf"))
    for _ in range(repeats):
        for name, decode in decoders.items():
            seconds = timeit.timeit(decode, number=rows)
            best[name] = min(best[name], seconds / rows * 1e9)
    return best


def main(argv: list[str] | None = None) -> None:
    """Print ns per row and the difference to the raw decode (target: <= 1,000 ns)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000, help="rows per timed run (default 200,000)")
    parser.add_argument("--repeats", type=int, default=7, help="interleaved runs, minimum kept (default 7)")
    args = parser.parse_args(argv)
    best = measure(args.rows, args.repeats)
    raw = best["raw decode (tuple, int time)"]
    print(f"{'decoder':34s} {'ns/row':>8s} {'vs raw':>8s}  target: <= +1,000 ns")
    for name, ns in best.items():
        print(f"{name:34s} {ns:8.0f} {ns - raw:+8.0f}")


if __name__ == "__main__":
    main()
