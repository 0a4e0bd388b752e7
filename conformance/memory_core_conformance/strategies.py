"""Public Hypothesis strategies for memory-core inputs.

Valid inputs follow the rules exactly (the suite's property tests use them,
and so may any adapter's own tests); the ``bad_*`` strategies draw inputs
the core must reject with a ``ValidationError``. Pools such as
:data:`FILTER_VALUES` are small on purpose: generated filters then match
generated metadata often enough to be interesting.

Example::

    from hypothesis import given
    from memory_core_conformance import strategies as mst

    @given(mst.json_objects())
    def test_codec_round_trips(value): ...
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from memory_core.models import DateRange, Include, Message, MessageFilter, OrderBy, PerPage, Thread, ThreadFilter
from memory_core.validation import INT64_MAX, INT64_MIN, MAX_ID_LENGTH

__all__ = [
    "BAD_IDS",
    "TIME_POOL",
    "Dataset",
    "EDGE_DATETIMES",
    "FILTER_KEYS",
    "FILTER_VALUES",
    "ODD_IDS",
    "ODD_TEXTS",
    "bad_date_ranges",
    "bad_ids",
    "bad_json_values",
    "bad_meta_filters",
    "bad_orders",
    "bad_page_bounds",
    "contents",
    "datasets",
    "date_ranges",
    "datetimes",
    "filter_metadata",
    "ids",
    "includes",
    "iso_datetimes",
    "json_objects",
    "json_scalars",
    "json_values",
    "message_filters",
    "messages",
    "meta_filters",
    "orders",
    "out_of_range_datetimes",
    "page_bounds",
    "pooled_times",
    "texts",
    "thread_filters",
    "threads",
]

# ---------------------------------------------------------------- ids and text

ODD_IDS: tuple[str, ...] = (
    "t1",
    "team-a",
    "TEAM-A",
    "team a",
    " lead",
    "trail ",
    "a.b",
    "$x",
    "{t1}",
    "a:b:c",
    "../etc/passwd",
    "'; DROP TABLE threads; --",
    '{"$ne": ""}',
    "*",
    "?",
    "%_",
    "\\",
    "ключ",
    "👋🏽",
    "مرحبا",
    "a\u200db",
    "e\u0301",
    "\u00e9",
    "x" * MAX_ID_LENGTH,
)
"""Valid ids that have broken key builders, SQL, LIKE patterns and hash tags."""

ODD_TEXTS: tuple[str, ...] = (
    "👋🏽",
    "🧵",
    "🔥",
    "世界",
    "مرحبا",
    "שלום",
    "\u200b",
    "\u200d",
    "\u200e",
    "\u202e",
    "\ufeff",
    "e\u0301",
    "\t",
    "\n",
    "\r\n",
    "\x00",
    "\x7f",
    "\U0010ffff",
    "'",
    '"',
    "\\",
    "%",
    "{}",
)
"""Characters and fragments that text handling gets wrong: emoji with
modifiers, right-to-left scripts, zero-width and bidi controls, NUL, quotes."""

_CHARS = st.characters(codec="utf-8")  # every code point but lone surrogates
_ID_CHARS = st.characters(codec="utf-8", exclude_categories=["Cc"])  # R-ID: no control character


def ids() -> st.SearchStrategy[str]:
    """Valid ids (R-ID): 1-256 characters, not all whitespace, no control
    character (Unicode category ``Cc``: C0, DEL, C1), no lone surrogates;
    often one of :data:`ODD_IDS`."""
    return st.one_of(
        st.sampled_from(ODD_IDS),
        st.text(_ID_CHARS, min_size=1, max_size=MAX_ID_LENGTH).filter(lambda s: not s.isspace()),
    )


BAD_IDS: tuple[Any, ...] = (
    "",
    " ",
    "\t\n",
    "a\x00b",
    "a\nb",
    "\x1b[31mred",
    "a\x7f",
    "a\x85b",
    "x" * (MAX_ID_LENGTH + 1),
    "bad \ud83d id",
    5,
    None,
)
"""Values R-ID rejects, one of each kind: empty, blank, control characters
(NUL, newline, escape, DEL, C1), too long, lone surrogate, not a str."""


def bad_ids() -> st.SearchStrategy[Any]:
    """Values R-ID rejects: :data:`BAD_IDS`, and bytes and a float."""
    return st.sampled_from([*BAD_IDS, b"t1", 5.0])


def texts(*, min_size: int = 0, max_size: int = 64, long: bool = False) -> st.SearchStrategy[str]:
    """Valid Unicode text: any code point except lone surrogates, often mixed
    with :data:`ODD_TEXTS`.

    Args:
        min_size: fewest characters.
        max_size: most characters of the short forms.
        long: also draw very long text (1,000-200,000 characters).
    """
    spiced = st.lists(st.one_of(st.sampled_from(ODD_TEXTS), st.text(_CHARS, max_size=8)), max_size=8).map("".join)
    choices: list[st.SearchStrategy[str]] = [
        st.text(_CHARS, min_size=min_size, max_size=max_size),
        spiced.filter(lambda s: min_size <= len(s)),
    ]
    if long:
        choices.append(
            st.builds(
                lambda piece, times: piece * times,
                st.sampled_from(["ab ", "👋🏽", "مرحبا ", "x"]),
                st.integers(1_000, 50_000),
            )
        )
    return st.one_of(choices)


# ---------------------------------------------------------------- JSON

_INT_EDGES = (0, 1, -1, 2**31 - 1, -(2**31), 2**32, 2**53, 2**53 + 1, -(2**53) - 1, INT64_MAX, INT64_MIN)
_FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 0.1, 1.5, 1e-300, 5e-324, 1.7976931348623157e308, 2.0**53, 1e16)
_KEYS = st.one_of(
    st.sampled_from(["", "a.b", "$x", "$where", "__proto__", "constructor", " ", "0", "\x00", "🔥", "clé", "a" * 300]),
    st.text(_CHARS, max_size=12),
)


def json_scalars() -> st.SearchStrategy[Any]:
    """JSON scalars: None, bool, int (signed 64-bit, edges often), finite float
    (edges often; ``-0.0`` included), str."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(_INT_EDGES),
        st.integers(INT64_MIN, INT64_MAX),
        st.sampled_from(_FLOAT_EDGES),
        st.floats(allow_nan=False, allow_infinity=False),
        texts(max_size=16),
    )


def json_values(*, max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Any JSON value: scalars, lists and objects nested at any depth."""
    return st.recursive(
        json_scalars(),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
        max_leaves=max_leaves,
    )


def json_objects(*, max_leaves: int = 12) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects (R-JSON metadata): any str keys (``""``, ``"a.b"``, ``"$x"``
    ...) with :func:`json_values`."""
    return st.dictionaries(_KEYS, json_values(max_leaves=max_leaves), max_size=6)


def bad_json_values() -> st.SearchStrategy[Any]:
    """Values R-JSON rejects anywhere inside metadata or content."""
    return st.sampled_from(
        [
            math.nan,
            math.inf,
            -math.inf,
            INT64_MAX + 1,
            INT64_MIN - 1,
            (1, 2),
            {1, 2},
            b"bytes",
            Decimal("1.5"),
            datetime(2025, 1, 1, tzinfo=UTC),
            "lone \ud800 surrogate",
            {"nested": [math.nan]},
            {1: "int key"},
            object(),
        ]
    )


def contents() -> st.SearchStrategy[Any]:
    """Message content: text, or a structured object like Mastra's v2 format."""
    structured = st.builds(
        lambda parts, text, extra: {
            "format": 2,
            "parts": [{"type": "text", "text": p} for p in parts],
            "content": text,
            **extra,
        },
        st.lists(texts(max_size=20), max_size=3),
        texts(max_size=20),
        st.dictionaries(st.sampled_from(["tool", "x", "$y", "a.b"]), json_values(max_leaves=4), max_size=2),
    )
    return st.one_of(texts(long=False), structured)


# ---------------------------------------------------------------- time

MIN_TIME = datetime(1900, 1, 1, tzinfo=UTC)
MAX_TIME = datetime(2199, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)

EDGE_DATETIMES: tuple[datetime, ...] = (
    MIN_TIME,
    MAX_TIME,
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2000, 2, 29, 12, 0, 0, 1, tzinfo=UTC),
    datetime(2038, 1, 19, 3, 14, 8, tzinfo=UTC),
    datetime(2025, 3, 9, 10, 30, 0, 123456, tzinfo=timezone(timedelta(hours=2))),
    datetime(2025, 1, 1, 0, 0, 0, 999, tzinfo=UTC),
    datetime(2025, 1, 1, 0, 0, 0, 1000, tzinfo=UTC),
)
"""Range ends, the epoch and 1 µs before it, a leap day, the 2038 int32 limit,
sub-millisecond times."""

_OFFSETS = st.builds(lambda minutes: timezone(timedelta(minutes=minutes)), st.integers(-14 * 60 + 1, 14 * 60 - 1))


def datetimes(*, naive: bool = True) -> st.SearchStrategy[datetime]:
    """Datetimes inside R-TIME's range (1900-01-01 .. 2199-12-31 UTC) with
    microseconds: aware in fixed offsets or IANA zones, naive (read as UTC)
    when ``naive``, and often one of :data:`EDGE_DATETIMES`."""
    aware = st.datetimes(
        min_value=datetime(1900, 1, 2),
        max_value=datetime(2199, 12, 30),
        timezones=st.one_of(st.just(UTC), _OFFSETS, st.timezones()),
    )
    choices = [st.sampled_from(EDGE_DATETIMES), aware]
    if naive:
        choices.append(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2199, 12, 31, 23, 59, 59)))
    return st.one_of(choices)


def iso_datetimes() -> st.SearchStrategy[str]:
    """ISO-8601 strings of :func:`datetimes` (accepted wherever a datetime is)."""
    return datetimes().map(lambda d: d.isoformat())


def out_of_range_datetimes() -> st.SearchStrategy[Any]:
    """Datetimes (and strings) outside 1900-01-01 .. 2199-12-31 UTC, or not datetimes."""
    return st.one_of(
        st.sampled_from(
            [
                datetime(1899, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                datetime(2200, 1, 1, tzinfo=UTC),
                datetime(1900, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1))),
                datetime(2199, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-1))),
                "1899-12-31T23:59:59Z",
                "2200-01-01",
                "not a date",
                "",
                12345,
            ]
        ),
        st.datetimes(max_value=datetime(1899, 12, 31), timezones=st.just(UTC)),
        st.datetimes(min_value=datetime(2200, 1, 1), timezones=st.just(UTC)),
    )


def date_ranges(times: st.SearchStrategy[datetime] | None = None) -> st.SearchStrategy[DateRange]:
    """R-DATE ranges: optional bounds drawn from ``times`` (default
    :func:`datetimes`), each inclusive or exclusive."""
    bound = st.none() | (times if times is not None else datetimes())
    return st.builds(DateRange, bound, bound, st.booleans(), st.booleans())


def bad_date_ranges() -> st.SearchStrategy[Any]:
    """Date ranges the core rejects: bad bounds, non-bool flags, wrong types."""
    return st.one_of(
        st.builds(lambda d: DateRange(start=d), out_of_range_datetimes()),
        st.builds(lambda d: DateRange(end=d), out_of_range_datetimes()),
        st.sampled_from(
            [
                DateRange(start_exclusive=1),  # type: ignore[arg-type]
                DateRange(end_exclusive="yes"),  # type: ignore[arg-type]
                {"start": "2025-01-01", "bogus": 1},
                "2025-01-01",
            ]
        ),
    )


# ---------------------------------------------------------------- filters

FILTER_KEYS: tuple[str, ...] = ("n", "b", "s", "tag", "_x", "K", "nul")
"""Metadata keys used when filters should match generated metadata."""

FILTER_VALUES: tuple[Any, ...] = (
    0,
    1,
    5,
    -1,
    1.0,
    5.0,
    1.5,
    0.0,
    -0.0,
    True,
    False,
    None,
    "",
    "5",
    "1",
    "true",
    "a",
    "A",
    "é",
    INT64_MAX,
    INT64_MIN,
)
"""Scalar values whose JSON types collide (5 / 5.0 / "5", true / 1, "" / None)."""


def filter_metadata() -> st.SearchStrategy[dict[str, Any]]:
    """Metadata built from :data:`FILTER_KEYS` and :data:`FILTER_VALUES` (plus
    the odd list or object), so that generated filters match it often."""
    value = st.one_of(st.sampled_from(FILTER_VALUES), st.just([1]), st.just({"n": 5}))
    return st.dictionaries(st.sampled_from(FILTER_KEYS), value, max_size=4)


def meta_filters(*, pool: bool = True) -> st.SearchStrategy[dict[str, Any] | None]:
    """Valid R-META filters: ``{key: scalar}`` (AND); None or ``{}`` mean none.

    Args:
        pool: draw keys and values from :data:`FILTER_KEYS` /
            :data:`FILTER_VALUES` (True) or from all valid keys and scalars.
    """
    if pool:
        keys: st.SearchStrategy[str] = st.sampled_from(FILTER_KEYS)
        values: st.SearchStrategy[Any] = st.sampled_from(FILTER_VALUES)
    else:
        keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,127}", fullmatch=True).filter(
            lambda k: k not in ("__proto__", "constructor", "prototype")
        )
        values = st.one_of(
            st.none(),
            st.booleans(),
            st.integers(INT64_MIN, INT64_MAX),
            st.floats(allow_nan=False, allow_infinity=False),
            texts(max_size=16),
        )
    return st.one_of(st.none(), st.dictionaries(keys, values, max_size=3))


def bad_meta_filters() -> st.SearchStrategy[Any]:
    """Metadata filters R-META rejects: operator objects, odd keys, non-scalars."""
    return st.sampled_from(
        [
            {"owner": {"$ne": ""}},
            {"$where": "1"},
            {"tag": {"$regex": ".*"}},
            {"a.b": 1},
            {"k') OR 1=1 --": "x"},
            {'k"]': 1},
            {"user-id": 1},
            {"": 1},
            {"1a": 1},
            {"__proto__": 1},
            {"constructor": 1},
            {"prototype": 1},
            {"x" * 129: 1},
            {"k": [1]},
            {"k": math.nan},
            {"k": math.inf},
            {"k": INT64_MAX + 1},
            {"k": b"x"},
            {"k": "\ud800"},
            {1: 1},
            [("k", 1)],
            "k=1",
        ]
    )


def message_filters(times: st.SearchStrategy[datetime] | None = None) -> st.SearchStrategy[MessageFilter | None]:
    """Valid message filters: an optional date range and metadata conditions."""
    return st.one_of(
        st.none(),
        st.builds(MessageFilter, st.none() | date_ranges(times), meta_filters()),
    )


def thread_filters(resource_ids: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[ThreadFilter | None]:
    """Valid thread filters: optional owning resource and metadata conditions."""
    owners = resource_ids if resource_ids is not None else ids()
    return st.one_of(st.none(), st.builds(ThreadFilter, st.none() | owners, meta_filters()))


# ---------------------------------------------------------------- paging, order, include


def page_bounds(*, max_page: int = 5, max_per_page: int = 7) -> st.SearchStrategy[tuple[int, PerPage]]:
    """Valid ``(page, per_page)`` pairs (R-PAGE): small numbers, ``per_page=0``,
    ``per_page=False`` (with page 0) and huge pages that still fit int64."""
    return st.one_of(
        st.tuples(st.integers(0, max_page), st.integers(0, max_per_page)),
        st.just((0, False)),
        st.tuples(st.sampled_from([2**40, INT64_MAX // 8]), st.just(8)),
    )


def bad_page_bounds() -> st.SearchStrategy[tuple[Any, Any]]:
    """``(page, per_page)`` pairs R-PAGE rejects (C07 and more)."""
    return st.sampled_from(
        [
            (0, -1),
            (0, 2.5),
            (0, "3"),
            (0, True),
            (0, None),
            (-1, 2),
            (True, 2),
            (False, 2),
            (1.0, 2),
            ("1", 2),
            (None, 2),
            (1, False),
            (2**62, 4),
            (0, INT64_MAX + 1),
        ]
    )


def orders(fields: tuple[str, ...] = ("created_at",)) -> st.SearchStrategy[OrderBy | dict[str, str] | None]:
    """Valid orders (R-SORT): one of ``fields``, direction ASC/DESC in any
    case or none (the kind's default), as an OrderBy or a mapping; None for
    the default order."""
    direction = st.sampled_from(["ASC", "DESC", "asc", "desc", "Desc"])
    field = st.sampled_from(fields)
    return st.one_of(
        st.none(),
        st.builds(OrderBy, field, direction),
        st.builds(lambda f, d: {"field": f, "direction": d}, field, direction),
        st.builds(lambda f: {"field": f}, field),
        st.builds(OrderBy, field),
    )


def bad_orders() -> st.SearchStrategy[Any]:
    """Orders R-SORT rejects: unknown fields, injected text, bad directions."""
    return st.sampled_from(
        [
            OrderBy("id", "ASC"),
            OrderBy("created_at; DROP TABLE threads", "ASC"),
            OrderBy("CREATED_AT", "ASC"),
            OrderBy("", "ASC"),
            OrderBy("created_at", "ASC, 1"),
            OrderBy("created_at", "ascending"),
            OrderBy("created_at", ""),
            {"field": "created_at", "direction": "ASC", "nulls": "first"},
            "created_at",
        ]
    )


def includes(message_ids: st.SearchStrategy[str]) -> st.SearchStrategy[list[Include]]:
    """Include lists (R-INCLUDE) around ids drawn from ``message_ids``."""
    one = st.builds(
        Include,
        message_ids,
        st.integers(0, 3),
        st.integers(0, 3),
        st.none() | message_ids,
    )
    return st.lists(one, max_size=3)


# ---------------------------------------------------------------- records


def threads(
    thread_ids: st.SearchStrategy[str] | None = None,
    resource_ids: st.SearchStrategy[str] | None = None,
    *,
    metadata: st.SearchStrategy[dict[str, Any]] | None = None,
    times: st.SearchStrategy[datetime | None] | None = None,
) -> st.SearchStrategy[Thread]:
    """Threads to save; ``times`` default to ``None`` or :func:`datetimes`."""
    when = times if times is not None else st.none() | datetimes()
    return st.builds(
        Thread,
        thread_ids if thread_ids is not None else ids(),
        resource_ids if resource_ids is not None else ids(),
        texts(max_size=40),
        metadata if metadata is not None else json_objects(),
        when,
        when,
    )


def messages(
    message_ids: st.SearchStrategy[str] | None = None,
    thread_ids: st.SearchStrategy[str] | None = None,
    *,
    metadata: st.SearchStrategy[dict[str, Any]] | None = None,
    times: st.SearchStrategy[datetime | None] | None = None,
) -> st.SearchStrategy[Message]:
    """Messages to save (resource taken from the thread)."""
    return st.builds(
        Message,
        id=message_ids if message_ids is not None else ids(),
        thread_id=thread_ids if thread_ids is not None else ids(),
        role=st.sampled_from(["user", "assistant", "system", "tool"]),
        content=contents(),
        type=st.sampled_from(["v2", "v1", "text"]),
        metadata=metadata if metadata is not None else json_objects(),
        created_at=times if times is not None else st.none() | datetimes(),
    )


# ---------------------------------------------------------------- datasets

_T0 = datetime(2025, 1, 1, tzinfo=UTC)

TIME_POOL: tuple[datetime, ...] = (
    _T0,
    _T0 + timedelta(microseconds=1),
    _T0 + timedelta(microseconds=2),
    _T0 + timedelta(microseconds=999),
    _T0 + timedelta(microseconds=1000),
    _T0 + timedelta(seconds=1),
    _T0 - timedelta(seconds=1),
    datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    MIN_TIME,
    MAX_TIME,
)
"""A few close and extreme times, so generated data has ties, µs neighbours
and range ends, and generated date bounds fall exactly on stored times."""


def pooled_times() -> st.SearchStrategy[datetime]:
    """One of :data:`TIME_POOL`."""
    return st.sampled_from(TIME_POOL)


@dataclass(frozen=True)
class Dataset:
    """Threads and batches of messages to load into a store, in order.

    Attributes:
        threads: threads to save first (ids from ``t1``.., resources ``r1``/``r2``).
        batches: ``save_messages`` calls, in order; message ids ``m0``.. repeat
            across batches (upserts and moves within a resource).
        clock_steps: seconds to advance the clock before each batch.
    """

    threads: list[Thread]
    batches: list[list[Message]]
    clock_steps: list[float] = field(default_factory=list)

    @property
    def message_ids(self) -> list[str]:
        """Every message id used, first use first."""
        return list(dict.fromkeys(m.id for batch in self.batches for m in batch))

    @property
    def thread_ids(self) -> list[str]:
        """Every thread id, in save order."""
        return list(dict.fromkeys(t.id for t in self.threads))


@st.composite
def datasets(draw: st.DrawFn, *, max_threads: int = 4, max_messages: int = 12) -> Dataset:
    """Small stores worth querying: threads of two resources with filterable
    metadata, and messages (some without ``created_at``) with ties, upserts
    and moves, saved in a few batches. Only valid writes are drawn (a message
    id stays within one resource)."""
    count = draw(st.integers(1, max_threads))
    owners = draw(st.lists(st.sampled_from(["r1", "r2"]), min_size=count, max_size=count))
    threads = [
        Thread(
            f"t{i + 1}",
            owners[i],
            draw(st.sampled_from(["", "x", "🧵"])),
            draw(filter_metadata()),
            draw(st.none() | pooled_times()),
            draw(st.none() | pooled_times()),
        )
        for i in range(count)
    ]
    home: dict[str, str] = {}
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, max_messages))):
        mid = f"m{draw(st.integers(0, max_messages))}"
        candidates = [t for t in threads if mid not in home or t.resource_id == home[mid]]
        target = draw(st.sampled_from(candidates))
        home.setdefault(mid, target.resource_id)
        messages.append(
            Message(
                mid,
                target.id,
                draw(st.sampled_from(["user", "assistant", "tool"])),
                draw(st.sampled_from(["", "hi", "👋🏽"])) or {"format": 2, "parts": []},
                metadata=draw(filter_metadata()),
                created_at=draw(st.none() | pooled_times()),
            )
        )
    cuts = sorted(set(draw(st.lists(st.integers(0, len(messages)), max_size=3))))
    bounds = [0, *cuts, len(messages)]
    batches = [messages[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    steps = draw(st.lists(st.sampled_from([0.0, 0.000001, 1.0]), min_size=len(batches), max_size=len(batches)))
    return Dataset(threads, batches, steps)
