"""What each conformance test checks, stated here so the package is self-contained.

Tests are named after the rule they check, and the name decides the rule:
``test_r_page_*`` checks R-PAGE (a name may cite several rules, e.g.
``test_r_page_and_r_sort_*``), ``test_c07_*`` the bug case C07,
``test_ops_*`` OPS, ``test_lifecycle_*`` LIFECYCLE, ``test_faults_*`` FAULTS, ``test_cap_<capability>_*``
the optional capability, ``test_stateful_*`` MODEL (see :func:`rules_of`).

:data:`RULES` states every rule in one or two sentences. A failing suite test
shows its rules' statements under "conformance rule" (the pytest plugin adds
them), ``memory-core check`` reports per rule, and the table in
``conformance/README.md`` is :func:`rule_table` (``python -m
memory_core_conformance.rules conformance/README.md`` rewrites it; a test
fails when the README and the suite disagree).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memory_core.capabilities import Capability

__all__ = [
    "RULES",
    "TABLE_END",
    "TABLE_START",
    "Rule",
    "explain",
    "rule_table",
    "rules_of",
    "suite_test_names",
    "update_readme",
]


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the conformance report.

    Attributes:
        id: ``R-PAGE``, ``C07``, ``OPS``, ``CAP:persistent`` ...
        title: a few words for tables.
        statement: the rule itself, in one or two sentences.
    """

    id: str
    title: str
    statement: str


_RULE_LIST = [
    Rule(
        "R-ID",
        "ids: exact, 1-256 chars, global message ids",
        "Thread, message and resource ids are str of 1-256 characters, not all whitespace, without control "
        "characters (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F: NUL, tab, newline, escape); anything "
        "else is a ValidationError. Ids compare exactly (case and spaces count) and message ids are unique in the "
        "whole store, not per thread.",
    ),
    Rule(
        "R-TIME",
        "datetimes: aware UTC, microseconds, 1900-2199",
        "Datetimes come back timezone-aware UTC with their microseconds, exactly as saved: aware input is converted "
        "to UTC, naive input and ISO-8601 strings are read as UTC, and the host's TZ never matters. Only "
        "1900-01-01..2199-12-31 UTC is accepted (else ValidationError).",
    ),
    Rule(
        "R-JSON",
        "JSON round-trips with types kept",
        "Metadata and structured content are JSON objects (any string keys, any nesting) that round-trip with "
        "Python types kept: 1, 1.0 and True stay int, float and bool. NaN/inf, ints outside signed 64-bit, non-JSON "
        "types and lone surrogates are a ValidationError naming the message, and nothing of the call is written.",
    ),
    Rule(
        "R-SIZE",
        "15 MiB messages, never truncated",
        "A message of up to 15 MiB serialised is stored and returned intact, in listings too (never cut by a "
        "driver's page or document size); a larger one is a ValidationError.",
    ),
    Rule(
        "R-ORDER",
        "(created_at, insertion sequence) order",
        "Messages are ordered by (created_at, sequence): the sequence is a store-wide counter given when an id is "
        "first saved (list order within a batch) and kept on upsert and move, so equal times keep their save order, "
        "reversed exactly in DESC. Threads are ordered by their order field, then id.",
    ),
    Rule(
        "R-CLOCK",
        "assigned times strictly increasing",
        "A message saved without created_at gets the store clock's now, each assigned time at least 1 µs after the "
        "previous one, so a batch without times keeps its order.",
    ),
    Rule(
        "R-BUMP",
        "updated_at bumps, strictly later",
        "Thread and resource updates and every message write (save, update, move, delete) set the touched "
        "records' updated_at to now, strictly later than before (previous + 1 µs when the clock stands still); "
        "created_at never changes, and concurrent updates never revert each other.",
    ),
    Rule(
        "R-PAGE",
        "page / per_page bounds, total, has_more",
        "page is an int >= 0 and per_page an int >= 0 or False (everything, page 0 only); bools, floats, strings, "
        "negatives and offsets beyond int64 are a ValidationError naming R-PAGE. A page is the window "
        "[page*per_page, +per_page) of the matches, total counts every match (per_page=0 too), and has_more says "
        "whether matches lie beyond the window. per_page=0 is a count-only page on every listing: no items, "
        "has_more True exactly when a match exists (a page of any size would hold one), next_cursor None.",
    ),
    Rule(
        "R-CURSOR",
        "keyset cursors, no gaps or repeats",
        "Every page carries next_cursor (None at the end); passing it back returns the rest of the same query "
        "with no gaps or repeats while others write, whatever the new per_page. A cursor of another query, a "
        "malformed one, or a cursor with page > 0 is a ValidationError naming R-CURSOR.",
    ),
    Rule(
        "R-DATE",
        "date ranges, inclusive / exclusive, to the µs",
        "filter.date_range(start, end, start_exclusive, end_exclusive) selects on created_at; bounds are optional, "
        "inclusive unless marked exclusive, compared to the microsecond, and apply to total as well.",
    ),
    Rule(
        "R-META",
        "typed metadata equality filters",
        "A metadata filter maps top-level keys (identifier-like, <= 128 chars, not __proto__/constructor/prototype) "
        "to scalars, ANDed; a value matches only an equal stored value of the same JSON type (5 matches 5.0, true "
        'never matches 1, "5" never matches 5, None only an explicit null). Lists, dicts, operator objects like '
        '{"$ne": ""} and bad keys are a ValidationError; {} means no filter.',
    ),
    Rule(
        "R-SORT",
        "order_by fields and directions",
        "order_by takes an allowed field (messages: created_at; threads: created_at, updated_at or "
        "last_message_at; camelCase accepted) and ASC/DESC in any case; anything else is a ValidationError. "
        "Defaults: messages created_at ASC, threads created_at DESC; a field without a direction takes its kind's "
        "default direction (threads DESC, messages ASC).",
    ),
    Rule(
        "R-LAST",
        "last_message_at of threads",
        "Thread.last_message_at is the largest created_at among the thread's messages, or None; exact through "
        "saves, moves (both threads), deletes and thread replacement. list_threads orders by it (ties by id), "
        "threads with no message last in either direction, by page and by cursor.",
    ),
    Rule(
        "R-ERASE",
        "delete_resource erases a resource",
        "delete_resource removes the resource's threads, their messages and its record (working memory), returns "
        "what it removed (thread ids, message count, whether a record existed), leaves every id free for reuse by "
        "any resource and other resources untouched; an unknown id is no error; a bad id is a ValidationError.",
    ),
    Rule(
        "R-RESOURCES",
        "list_resource_ids: every resource, by cursor",
        "list_resource_ids lists, once each and ascending by exact (code point) comparison, every id that has a "
        "resource record or owns a thread: a resource stays listed after its last thread is deleted while its "
        "record exists, and leaves with delete_resource. Following next_cursor returns every id exactly once; a "
        "bad per_page (R-PAGE) or cursor (R-CURSOR) is a ValidationError before any I/O.",
    ),
    Rule(
        "R-PRUNE",
        "retention: prune by age",
        "prune(RetentionPolicy) deletes, in the resource or store-wide, every message created strictly before the "
        "cutoff (before=, or the store clock's now minus older_than; threads stay), or every thread whose "
        "last_message_at (created_at when it has none) is before it, with its messages; it reports deleted thread "
        "ids and per-thread message counts, writes nothing in a dry run, resumes exactly with the same cutoff, and "
        "refuses a bad policy before any I/O.",
    ),
    Rule(
        "R-LINEAGE",
        "clones, branches and their lineage",
        "clone_thread copies a thread's messages (all, or by id list, date range and newest N) and branch_thread "
        "those up to and including one message, into a new thread (this or another resource, the source's owner "
        "named) with created_at and order kept and new UUIDv7 ids mapped; the copy records cloned_from, "
        "cloned_from_resource, cloned_last_message_id and cloned_from_created_at, which no thread write sets or "
        "changes by hand (a ValidationError naming metadata.<key>). Lineage calls never reveal another resource's "
        "thread, a deleted source leaves readable clones (a thread created again under its id is not their "
        "source), erasing a resource nulls lineage naming it, and a bad call "
        "writes nothing.",
    ),
    Rule(
        "R-WM",
        "working memory compare-and-set",
        "swap_working_memory / swap_thread_working_memory write only over the expected value (None: nothing "
        "stored), atomically; concurrent Memory.append_working_memory calls all land and of two updates from one "
        "version exactly one wins. Memory.update_working_memory refuses a missing thread (NotFoundError), another "
        "resource's (OwnershipError) and a stale if_version (ConflictError), in that order and before an "
        "oversized value (R-SIZE), writing nothing.",
    ),
    Rule(
        "R-INCLUDE",
        "include windows from the message's own thread",
        "Each include adds the message and up to with_previous / with_next neighbours from its own thread in "
        "R-ORDER (only resource_id's messages when given; unknown ids skipped; filters ignored), a dozen in one "
        "call as well as one. Windows and page are merged without duplicates in the requested order and never "
        "count in total.",
    ),
    Rule(
        "R-OWN",
        "resource ownership and conflicts",
        "A message belongs to its thread's resource: another resource_id is an OwnershipError, an existing id under "
        "another resource a ConflictError, a missing thread a NotFoundError, all before any write. A thread id "
        "saved again under another resource is a ConflictError that writes nothing and does not name the owner. "
        "Reading a thread's messages under a resource_id (list_messages, as Memory.recall) raises an OwnershipError "
        "for another resource's thread and reads a missing one as empty; get_thread given a resource_id answers "
        "None for another resource's thread; listings by resource see only that resource's records.",
    ),
    Rule(
        "R-RECALL",
        "Memory.recall composition",
        "Memory.recall returns the newest per_page messages oldest-first (page 1 is the next older block); the "
        "thread must belong to the given resource (OwnershipError) and exist unless the scope is resource, and "
        "semantic hits become include windows of message_range. A search string while semantic recall is off, or "
        "semantic recall without a vector store, is a ValidationError before any I/O; with exclude_recent the hits "
        "lie outside the history page; a search that finds nothing while storage holds messages warns and names "
        "reindex; a missing thread under resource scope warns, naming it.",
    ),
    Rule(
        "R-SOURCE",
        "recall marks sources and gaps",
        "Each recalled message is marked recent (history page), semantic (a hit), include or context (a hit's "
        "window), in that precedence; gaps lists each pair of neighbours in the result that are from different "
        "threads or have unreturned messages of their thread between them.",
    ),
    Rule(
        "R-BUDGET",
        "recall(max_tokens) keeps the newest that fits",
        "With max_tokens, recall keeps the newest messages of its answer whose counted tokens add up to at most "
        "max_tokens, stopping at the first that does not fit; a tool message stays with the message before it in "
        "its thread (the call), so calls and results are kept or dropped together; tokens and dropped report it.",
    ),
    Rule(
        "R-VEC",
        "vectors kept in step with messages",
        "The vector store holds exactly one point set per stored message with text (content string or text parts; "
        "empty text has none): re-saving replaces, and updates, moves, deletes and delete_thread are reflected "
        "when the call returns.",
    ),
    Rule(
        "R-HYBRID",
        "lexical and hybrid recall rank like the reference",
        "SemanticRecall(mode='lexical' | 'hybrid') ranks the scope's stored messages by the core's BM25 "
        "(memory_core.lexical), fused with the vector ranking by weighted reciprocal rank fusion in hybrid mode: "
        "every pairing returns the reference pairing's hits, never one of another resource, and never a message "
        "deleted, rewritten without the words, moved out of the thread, pruned or erased. A vector store that "
        "keeps a lexical index ranks like the reference BM25 from it, and check_index/reindex cover it.",
    ),
    Rule(
        "VECTOR-STORE",
        "vector store: layout, counts, deletes, search",
        "A vector store keeps one point per (message, chunk) in its namespace's per-dimension collection: "
        "re-upserts replace, count is distinct messages and count_points chunks, deletes by message, thread and "
        "resource reach every chunk and dimension, search returns the top_k messages by cosine (best chunk, "
        "filters ANDed), and bad input is a ValidationError before any write.",
    ),
    Rule(
        "OPS",
        "storage operations",
        "Each storage operation does what its docstring says: save_thread replaces the whole record, updates are "
        "partial (metadata and content merged one level), deletes ignore unknown ids and return how many messages "
        "they removed (of racing deletes of one message exactly one counts it), get_messages returns found ids in "
        "R-ORDER once each, and writes racing each other cannot break ownership or existence checks.",
    ),
    Rule(
        "LIFECYCLE",
        "open / close / destroy",
        "open and close are idempotent, a store opens itself on first use, and every call after close or destroy "
        "(or a close before any open) raises AdapterClosedError. An open that fails raises a BackendError naming "
        "the backend and 'open' (or a ValidationError naming the field), every time it is tried, and leaves "
        "nothing half-open: close works and a good store opens next. A store works from any event loop and "
        "thread, several at once (asyncio.run per call; threads each running a loop), never hanging. Open/close "
        "cycles with a cancelled call each leave no server connection, open file or task behind. Each option "
        "variant the adapter declares shows in the settings read back from the backend, and a process that "
        "writes and ends without closing its store exits promptly with its writes kept.",
    ),
    Rule(
        "FAULTS",
        "recovery paths on demand",
        "Every fault point the adapter declares (a write whose reads went stale, a transaction the server rolled "
        "back, a lock held by another connection, scripts the server forgot, a connection lost mid-call) is "
        "absorbed when it fires twice in a row (answers equal the "
        "reference's), gives up with a typed error after a bounded number of attempts when it never ends, a lock "
        "held past the store's wait (twice in a row, each way the backend reports it) is a retryable BackendError "
        "that writes nothing, and a lost connection is a "
        "retryable BackendError after which the store works; writes that meet what a dead writer left (ids it "
        "reserved, its last step undone) answer as the reference's.",
    ),
    Rule(
        "MODEL",
        "state machine: adapter == reference store",
        "Random sequences of every operation (writes, listings with filters, orders, pages, includes, cursors, "
        "and bad input; metadata of look-alike JSON types, 64-bit ends, NUL and nested values; times before 1970) "
        "get the same answer from the adapter as from the reference store, step by step.",
    ),
    Rule(
        "C01",
        "equal timestamps in one batch",
        "Eleven messages saved in one batch at the same created_at (or none) list in save order ASC and exactly "
        "reversed DESC, with total 11 and has_more on a page of 10.",
    ),
    Rule(
        "C02",
        "user / assistant / tool in one instant",
        "A user, an assistant and a tool message saved in three calls at the same instant list in save order "
        "(reversed DESC), include windows too.",
    ),
    Rule(
        "C03",
        "saved out of order",
        "Messages saved out of time order list by time: the newest page and an include window around an old "
        "message are right, total 10.",
    ),
    Rule(
        "C04",
        "threads by updated_at, ties across pages",
        "Threads order by updated_at after an update; five threads with identical times, paged two at a time, "
        "show each id exactly once (ties by id) with total 5 on every page, the same on a second run.",
    ),
    Rule(
        "C05",
        '"last N" is the newest N',
        "The last N messages are the newest N, returned oldest-first (page 1 the next older block), and DESC "
        "pages walk back in blocks of N.",
    ),
    Rule(
        "C06",
        "per_page=False means all",
        "per_page=False returns all 150 messages or threads: total 150, has_more false, per_page False, page 0.",
    ),
    Rule(
        "C07",
        "bad page bounds rejected alike",
        'per_page -1, 2.5, "3", True, page -1, page True and per_page False with page 1 are each a '
        "ValidationError that changes nothing; per_page 0 and pages past the end keep total and has_more right.",
    ),
    Rule(
        "C08",
        "big messages never truncated",
        "Forty 50 KB messages and one of 3,000,000 characters come back whole, in full and paged listings and by id.",
    ),
    Rule(
        "C09",
        "many threads",
        "1,200 threads of one resource list in full and in pages of 100 (page 12 empty, total kept), and another "
        "resource's threads never mix in.",
    ),
    Rule(
        "C10",
        '5 vs "5", true vs 1, null vs missing',
        'Metadata filters keep JSON types apart on threads and messages alike: 5 vs "5", true vs 1 and "true", '
        "0 vs false; 5 matches 5.0, and null matches an explicit null only.",
    ),
    Rule(
        "C11",
        "operator objects and odd keys",
        'Operator objects ({"$ne": ""}, {"$regex": ...}), dotted, quoted and dashed keys and injected order_by '
        "fields or directions are a ValidationError before any query, and the data stays intact.",
    ),
    Rule(
        "C12",
        "many openers and writers",
        "Eight instances open one new namespace at once and each saves 20 messages into its own thread while all "
        "read in a loop: no error, every message there (needs SHARED_NAMESPACE).",
    ),
    Rule(
        "C13",
        "zones, naive input, exclusive bounds",
        "With TZ=America/Los_Angeles a +02:00 time reads back in UTC with its microseconds, a naive time is "
        "stored as UTC, and an exclusive start bound excludes a message at exactly that time.",
    ),
    Rule(
        "C14",
        "updated_at bumps",
        "Under an injected clock, message saves, thread updates and message updates move their threads' "
        "updated_at (updated_at DESC order after each step), and created_at never changes.",
    ),
    Rule(
        "C15",
        "deletes reach the vectors",
        "A deleted message is never recalled, and a thread deleted and created again under its old id recalls "
        "and lists only its new messages.",
    ),
    Rule(
        "C16",
        "vector scope",
        "Semantic recall with scope thread hits only that thread's messages, with scope resource only that "
        "resource's, never another resource's.",
    ),
    Rule(
        "C17",
        "unicode",
        "Emoji, RTL text, zero-width joiners, tabs and newlines round-trip exactly in content, titles and "
        "metadata; a lone surrogate is a ValidationError naming the message, and nothing is written.",
    ),
    Rule(
        f"CAP:{Capability.PERSISTENT.value}",
        f"optional capability {Capability.PERSISTENT.value}",
        "Declared PERSISTENT: data saved through one instance is read back unchanged by a new instance on the same "
        "namespace after the first is closed (R-ORDER sequences continue), and destroy() leaves nothing behind.",
    ),
    Rule(
        f"CAP:{Capability.SHARED_NAMESPACE.value}",
        f"optional capability {Capability.SHARED_NAMESPACE.value}",
        "Declared SHARED_NAMESPACE: several open instances on one namespace see each other's writes at once, and "
        "concurrent writers through different instances raise no error and break no ownership check.",
    ),
]

RULES: dict[str, Rule] = {rule.id: rule for rule in _RULE_LIST}
"""Every rule a suite test can check, by id, in report order."""

_RULE_WORDS = "|".join(r.id.removeprefix("R-").lower() for r in _RULE_LIST if r.id.startswith("R-"))
_RULE = re.compile(rf"(?:^|_)r_({_RULE_WORDS})(?=_|$)")
_CASE = re.compile(r"^test_c(\d\d)_")
_CAPABILITY_WORDS = "|".join(sorted((c.value for c in Capability), key=len, reverse=True))
_CAPABILITY = re.compile(rf"^test_cap_({_CAPABILITY_WORDS})_")
_PREFIXES = {
    "test_ops_": "OPS",
    "test_lifecycle_": "LIFECYCLE",
    "test_faults_": "FAULTS",
    "test_stateful_": "MODEL",
    "test_vector_store_": "VECTOR-STORE",
}

TABLE_START = "<!-- rule-table: generated by `python -m memory_core_conformance.rules conformance/README.md` -->"
"""The line before the generated table in the README."""
TABLE_END = "<!-- rule-table: end -->"
"""The line after it."""


def rules_of(test_name: str) -> list[str]:
    """The rules a test checks, from its name (parameters ignored).

    Args:
        test_name: e.g. ``"test_r_page_rejects_bad_bounds[bool-page]"``.

    Returns:
        Rule ids such as ``["R-PAGE"]``; ``["OTHER"]`` when the name follows no
        convention.
    """
    name = test_name.split("[", 1)[0]
    if match := _CASE.match(name):
        return [f"C{match.group(1)}"]
    if match := _CAPABILITY.match(name):
        return [f"CAP:{match.group(1)}"]
    for prefix, rule in _PREFIXES.items():
        if name.startswith(prefix):
            return [rule]
    found = list(dict.fromkeys(f"R-{m.upper()}" for m in _RULE.findall(name.removeprefix("test"))))
    return found or ["OTHER"]


def explain(test_name: str) -> str:
    """The statements of the rules a test checks, one ``ID (title): statement``
    line each (what a failing test shows under "conformance rule")."""
    lines = []
    for rule_id in rules_of(test_name):
        rule = RULES.get(rule_id)
        lines.append(f"{rule.id} ({rule.title}): {rule.statement}" if rule else f"{rule_id}: no rule is stated")
    return "\n".join(lines)


def suite_test_names() -> list[str]:
    """Every test the shipped suites define (:class:`StorageConformance`,
    :class:`~memory_core_conformance.vector.VectorConformance` and
    :class:`~memory_core_conformance.vector_store.VectorStoreConformance`), sorted."""
    # Imported here: the pytest plugin imports this module at start-up and
    # must not load the whole suite.
    from memory_core_conformance.suite import StorageConformance
    from memory_core_conformance.vector import VectorConformance
    from memory_core_conformance.vector_store import VectorStoreConformance

    suites = (StorageConformance, VectorConformance, VectorStoreConformance)
    return sorted({name for cls in suites for name in dir(cls) if name.startswith("test_")})


def rule_table(test_names: Iterable[str] | None = None) -> str:
    """The README's Markdown table: rule id | what is checked | tests.

    Args:
        test_names: the tests to place (default: :func:`suite_test_names`).

    Returns:
        One row per rule of :data:`RULES` (in order), then one per unknown
        rule id a test names (``OTHER`` ...), each listing its tests.
    """
    tests: dict[str, list[str]] = {rule_id: [] for rule_id in RULES}
    for name in suite_test_names() if test_names is None else test_names:
        for rule_id in rules_of(name):
            tests.setdefault(rule_id, []).append(name)
    lines = ["| rule | what is checked | tests |", "|---|---|---|"]
    for rule_id, names in tests.items():
        rule = RULES.get(rule_id)
        statement = rule.statement if rule else "(no rule stated: rename the test after its rule)"
        shown = ", ".join(f"`{name}`" for name in sorted(names)) or "(no test)"
        cell = statement.replace("|", r"\|")
        lines.append(f"| {rule_id} | {cell} | {shown} |")
    return "\n".join(lines)


def update_readme(path: Path) -> bool:
    """Rewrite the table between :data:`TABLE_START` and :data:`TABLE_END` in
    ``path`` with :func:`rule_table`.

    Returns:
        Whether the file changed.

    Raises:
        ValueError: the file lacks the two marker lines.
    """
    text = path.read_text(encoding="utf-8")
    head, start, rest = text.partition(TABLE_START + "\n")
    _, end, tail = rest.partition(TABLE_END)
    if not start or not end:
        raise ValueError(f"{path} has no {TABLE_START!r} ... {TABLE_END!r} section")
    updated = f"{head}{start}{rule_table()}\n{end}{tail}"
    if updated != text:
        path.write_text(updated, encoding="utf-8")
    return updated != text


if __name__ == "__main__":  # python -m memory_core_conformance.rules [README.md]
    if len(sys.argv) > 1:
        print("updated" if update_readme(Path(sys.argv[1])) else "already up to date")
    else:
        print(rule_table())
