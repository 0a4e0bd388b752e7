"""What the integrations' agent tools do, once: recall under the Memory's
semantic-recall settings (of what the user and the assistant said, leaving
out the turn being answered, under a relevance floor) and working memory."""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from memory_core.arguments import check_memory
from memory_core.errors import NotFoundError, ValidationError
from memory_core.memory import Memory, MemoryConfig, SemanticRecall
from memory_core.models import Include, Message
from memory_core.validation import MAX_TOP_K, MinScore, check_min_score, check_search_text, check_text
from memory_core.vector import message_text
from memory_core.workmem import Scope

from ._threads import current_turn

__all__ = [
    "REFUSED_BLANK",
    "REFUSED_TEMPLATE",
    "RECALLED_ROLES",
    "MinScore",
    "DEFAULT_HIT_CHARS",
    "DEFAULT_TOTAL_CHARS",
    "MIN_BOUND_CHARS",
    "bound_texts",
    "can_recall",
    "check_hit_bounds",
    "check_recall_options",
    "distinct_hits",
    "check_recallable",
    "cut_marker",
    "echoed_replies",
    "FILLERS",
    "note_words",
    "notes_are_template",
    "notes_hold_nothing",
    "notes_refusal",
    "offered_tools",
    "read_working_memory",
    "recall_hits",
    "recall_json",
    "recall_texts",
    "refused_by_schema",
    "tool_recall",
    "write_working_memory",
]

REFUSED_BLANK = (
    "Not saved: the notes held nothing (no letter or digit, only blank space, invisible characters, markup, "
    'punctuation, symbols or emoji, or an empty value such as null, None, N/A, {} or ""), and the stored notes '
    "were kept. To change them, call get_working_memory and send the complete notes with your changes."
)
"""What :func:`write_working_memory` answers to notes that hold nothing
(:func:`notes_hold_nothing`)."""
REFUSED_TEMPLATE = (
    "Not saved: that is the unfilled template (reformatting it, or filling its fields with placeholders such "
    "as N/A, none, unknown or -, does not fill it in), and the stored notes were kept. Call get_working_memory "
    "and send the complete notes: what is stored plus what you learned."
)
"""What :func:`write_working_memory` answers to the configured template,
however reworded (:func:`notes_are_template`)."""


def check_recall_options(top_k: Any, min_score: Any) -> tuple[int, MinScore]:
    """A seam's recall settings, checked at construction.

    Raises:
        ValidationError: ``top_k`` is not an int from 1 to 1000, or
            ``min_score`` is not ``"auto"``, None or a number from -1 to 1.
    """
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise ValidationError("top_k", f"must be an int from 1 to {MAX_TOP_K}, got {top_k!r}", "R-RECALL")
    return int(top_k), check_min_score(min_score, "min_score")


DEFAULT_HIT_CHARS = 2000
"""The recall tools' default bound on one hit's text, in characters (code
points), marker included (:func:`bound_texts`)."""
DEFAULT_TOTAL_CHARS = 8000
"""The recall tools' default bound on the texts of one answer's hits
together, in characters, markers included (:func:`bound_texts`): four
full-size hits."""
MIN_BOUND_CHARS = 100
"""The smallest bound a recall tool accepts: room for a cut marker
(:func:`cut_marker`) and some text."""


def check_hit_bounds(max_hit_chars: Any, max_total_chars: Any) -> tuple[int | None, int | None]:
    """A seam's hit-size bounds, checked at construction.

    Raises:
        ValidationError: ``max_hit_chars`` or ``max_total_chars`` is neither
            None (no bound) nor an int >= :data:`MIN_BOUND_CHARS` (a bool
            included), naming the field.
    """
    for field, value in (("max_hit_chars", max_hit_chars), ("max_total_chars", max_total_chars)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < MIN_BOUND_CHARS):
            raise ValidationError(
                field, f"must be an int >= {MIN_BOUND_CHARS} (characters) or None (no bound), got {value!r}", "R-RECALL"
            )
    return max_hit_chars, max_total_chars


def cut_marker(chars: int, hits: int) -> str:
    """What ends a text :func:`bound_texts` cut: ``" [cut: 1234 more
    characters]"``, ``" [cut: 2 more hits]"`` or both, ``"; "``-joined."""
    said = [f"{chars} more characters"] if chars else []
    said += [f"{hits} more hit{'s' if hits != 1 else ''}"] if hits else []
    return f" [cut: {'; '.join(said)}]"


def _fit(text: str, limit: float, hits: int) -> str:
    """``text`` in at most ``limit`` characters with :func:`cut_marker`
    telling what was cut: its end, and ``hits`` hits after it."""
    if len(text) <= limit and not hits:
        return text
    if len(text) + len(cut_marker(0, hits)) <= limit:
        return text + cut_marker(0, hits)
    keep = max(0, int(limit) - len(cut_marker(len(text), hits)))  # the count's digits can only shrink
    return text[:keep] + cut_marker(len(text) - keep, hits)


def bound_texts(texts: list[str], max_hit_chars: int | None, max_total_chars: int | None) -> list[str]:
    """``texts`` (hits, best first) within the recall tools' size bounds: a
    text over ``max_hit_chars`` characters is cut to that many, ending in a
    visible marker (:func:`cut_marker`: how many characters were cut); the
    texts together hold at most ``max_total_chars`` characters: the first
    text that does not fit is cut to the room left, and when less than
    :data:`MIN_BOUND_CHARS` is left it and every later hit are left out,
    the last text kept saying how many hits were cut (a short last text
    that cannot hold that marker whole is left out too). Markers count
    against both bounds, so they are hard bounds; None: no bound.

    Without these a model that quotes its hits in its answer makes the
    next answer larger: the quote is stored, recalled and quoted again.

    Returns:
        The texts kept, best first (fewer than given when hits were left
        out; the first is always kept).
    """
    per_hit = max_hit_chars if max_hit_chars is not None else math.inf
    left = max_total_chars if max_total_chars is not None else math.inf
    limits: list[float] = []
    for text in texts:
        limit = min(per_hit, left)
        if len(text) > limit and limits and limit < MIN_BOUND_CHARS:
            break
        limits.append(limit)
        left -= min(len(text), limit)
    cut = len(texts) - len(limits)
    while cut and len(limits) > 1 and limits[-1] < MIN_BOUND_CHARS:
        if len(texts[len(limits) - 1]) + len(cut_marker(0, cut)) <= limits[-1]:
            break
        limits.pop()  # its marker would leave it too little room: leave it out too
        cut += 1
    last = len(limits) - 1
    return [
        _fit(text, limit, cut if index == last else 0)
        for index, (text, limit) in enumerate(zip(texts, limits, strict=False))
    ]


RECALLED_ROLES = frozenset({"user", "assistant"})
"""The roles the recall tools search: what the user and the assistant said.
Tool results are left out (the recall tools' own among them: their text is
earlier hits, so a recall would find its own past answers and feed on them),
and so are system instructions."""

_ECHO_REACH = 8
"""How many messages before an assistant hit :func:`echoed_replies` looks
through for the tool result it repeats (its own turn's)."""


async def echoed_replies(memory: Memory, resource_id: str, hits: list[Message]) -> set[str]:
    """The ids of the ``assistant`` hits that merely repeat a tool result:
    their text is, under :func:`_text_key` (NFKC, case, whitespace), that of
    a ``tool`` message among the :data:`_ECHO_REACH` messages before them in
    their thread. Such a reply says nothing the tool result did not, and
    tool results are not recalled (:data:`RECALLED_ROLES`): a model that
    answers with its ``recall_memory`` result word for word would otherwise
    have it recalled, and quoted again, through its reply. A reply that
    quotes a result among words of its own stays recallable (its size is
    what :func:`bound_texts` bounds). One storage read, when there is an
    assistant hit with text."""
    replies = [m for m in hits if m.role == "assistant" and message_text(m).strip()]
    if not replies:
        return set()
    windows, _ = await memory.storage.read_windows([Include(m.id, _ECHO_REACH, 0) for m in replies], resource_id)
    echoed = set()
    for reply, window in zip(replies, windows, strict=True):
        key = _text_key(reply)
        if any(m.role == "tool" and m.id != reply.id and _text_key(m) == key for m in window):
            echoed.add(reply.id)
    return echoed


_GROWTH = 4
"""How much deeper a recall tool searches again when tool results took
slots (:func:`recall_hits`)."""


def _text_key(message: Message) -> str:
    """What makes two hits the same for :func:`distinct_hits`: the searched
    text (:func:`~memory_core.vector.message_text`) under NFKC, case folding
    and runs of whitespace as one space; a message without text is its own
    (keyed by its id: an image or a call is not another one's copy)."""
    text = " ".join(unicodedata.normalize("NFKC", message_text(message)).casefold().split())
    return text if text else "\0" + message.id


def distinct_hits(hits: list[Message]) -> list[Message]:
    """``hits`` (best first) with one message per distinct normalised text
    (:func:`_text_key`): the best-ranked copy is kept, later copies dropped.
    The same question asked in several sessions, or an assistant reply
    repeated word for word, is stored once per time it was said; without
    this, the copies outrank the statement that answers them and fill
    every slot (issue 26: ``recall_memory`` returned four copies of "what is
    my pet called?" and lost "My cat is called Miso.")."""
    seen: set[str] = set()
    kept = []
    for message in hits:
        key = _text_key(message)
        if key not in seen:
            seen.add(key)
            kept.append(message)
    return kept


def tool_recall(memory: Memory, top_k: int, min_score: MinScore) -> SemanticRecall:
    """The semantic-recall settings a recall tool searches ``memory`` with:
    the Memory's own (``memory.config.semantic_recall``: ``mode``, the
    fusion weights, ``scope``; :class:`SemanticRecall` defaults while it is
    off, as a tool call is an explicit search), with the tool's ``top_k``,
    no context around hits (``message_range=0``), the turn being answered
    left out (``exclude_recent``) and the floor the tool's ``min_score``
    names: a number or None as given; ``"auto"``: the Memory's
    ``min_score`` when it sets one, else ``"auto"``, which recall reads as
    the floor measured for its embedder
    (:func:`~memory_core.embedders.relevance_floor`), the meaning it has in
    :class:`~memory_core.config.SemanticRecall`."""
    base = memory.config.semantic() or SemanticRecall()
    floor = min_score if min_score != "auto" or base.min_score is None else base.min_score
    return replace(base, top_k=top_k, message_range=0, exclude_recent=True, min_score=floor)


def can_recall(memory: Memory) -> bool:
    """Whether the recall tools can search ``memory``: it has a vector
    store, or its semantic recall runs in ``"lexical"`` mode (BM25 over
    storage, no vectors needed)."""
    semantic = memory.config.semantic()
    return memory.vector is not None or (semantic is not None and semantic.mode == "lexical")


def check_recallable(memory: Any, field: str = "memory") -> Memory:
    """``memory`` if the recall tools can search it (:func:`can_recall`).

    Raises:
        ValidationError: not a Memory (:func:`~memory_core.arguments.check_memory`),
            or (field ``<field>.vector``) a Memory without a vector store
            whose semantic recall is not in ``"lexical"`` mode, naming both fixes.
    """
    checked = check_memory(memory, field)
    if not can_recall(checked):
        raise ValidationError(
            f"{field}.vector",
            "recall needs a vector store (Memory(storage, vector) or Memory.open(url, vector=url)) or lexical "
            'semantic recall (MemoryConfig(semantic_recall=SemanticRecall(mode="lexical")))',
        )
    return checked


async def recall_hits(
    memory: Memory,
    resource_id: str,
    query: str,
    top_k: int,
    *,
    thread_id: str | None = None,
    min_score: MinScore = "auto",
    leave_out_turn: bool = True,
    turn_start: str | None = None,
) -> list[Message]:
    """The ``top_k`` best user and assistant messages for ``query``
    (:data:`RECALLED_ROLES`), best first, searched under the Memory's
    semantic-recall settings (:func:`tool_recall`: its mode, weights and
    scope, resource or thread), leaving out the turn being answered and
    those under the floor and assistant replies that merely repeat a tool
    result (:func:`echoed_replies`), one per distinct text
    (:func:`distinct_hits`: the best-ranked copy of a text said several
    times; further candidates fill the slots its copies took).

    The turn being answered is the newest ``user`` message (of ``thread_id``,
    or of any thread of the resource when None) and what follows it in its
    thread (:func:`~memory_core.integrations._threads.current_turn`): a
    runner stores the question before the model calls the tool, and it
    would otherwise be the first hit. The search asks for ``top_k`` more
    hits than that turn holds, so all ``top_k`` slots go to memory; when
    tool results or system messages took slots, it searches again
    :data:`_GROWTH` times deeper (up to 1000 hits) until ``top_k`` remain or
    the scope holds no more; so it does when copies of one text, or echoed
    replies, took them.

    With scope ``"thread"`` only the thread is searched: ``thread_id``, or
    (None) the thread of the turn being answered; a thread not stored yet
    holds nothing (``[]``). With scope ``"resource"`` a ``thread_id`` not
    stored yet (a conversation's first turn) is searched around, without
    the warning :meth:`~memory_core.memory.Memory.recall` logs for a thread
    that does not exist (one read more when the thread holds no turn).

    Args:
        thread_id: the conversation the tool runs in (None: any of the
            resource's, as ADK's memory service is asked without one).
        min_score: the tool's floor (:func:`tool_recall`); ``"auto"``
            (default): the Memory's, else the one measured for its embedder.
        leave_out_turn: False for a seam whose runs are stored only after
            they end (Pydantic AI's :meth:`MessageHistory.append`), or for a
            search made outside any run (ADK's ``search_memory`` called by
            the app): the newest stored turn is then a finished one, and
            stays searchable.
        turn_start: the id of the message the turn being answered begins
            with, when the seam knows it (ADK: the question the run stored,
            in ``thread_id``); the turn is that message and what follows it
            in ``thread_id``, whatever is newer elsewhere. None (default):
            the newest ``user`` message, as above.

    Raises:
        ValidationError: ``memory`` cannot be searched
            (:func:`check_recallable`), or a bad top_k or ``query`` (field
            ``query``, the tools' own argument, never the core's
            ``vector_search_string``: not a str, where None would search
            nothing, or over :data:`~memory_core.query_checks.MAX_SEARCH_CHARS`
            characters, R-RECALL), before any read.
        OwnershipError: ``thread_id`` belongs to another resource.
    """
    check_recallable(memory)
    check_search_text(query, "query")
    settings = tool_recall(memory, top_k, min_score)
    turn_thread: str | None = None
    turn = 0
    if leave_out_turn or thread_id is None:  # without a thread, the turn's thread anchors a thread-scope search
        starts = None if turn_start is None else (lambda message: message.id == turn_start)
        turn_thread, turn = await current_turn(memory, resource_id, thread_id, starts=starts)
        turn = turn if leave_out_turn else 0
    anchor = thread_id if thread_id is not None else turn_thread
    if thread_id is not None and not turn and await memory.storage.get_thread(thread_id) is None:
        # The conversation is not stored yet (a seam's first turn: Pydantic AI
        # stores a run after it): normal here, so no "missing thread" warning
        # from recall, which informs a caller who names a thread by hand.
        if settings.scope == "thread":
            return []
        anchor, _ = await current_turn(memory, resource_id, within=1)  # any thread of the resource anchors it
    if anchor is None:  # the resource holds no message: nothing to find
        return []
    # With exclude_recent the history page (the newest `turn` messages of the
    # turn's thread, i.e. the turn itself) is left out of the hits.
    where = turn_thread if turn_thread is not None and turn else anchor
    want = top_k
    while True:
        config = MemoryConfig(last_messages=0, semantic_recall=replace(settings, top_k=want))
        try:
            result = await memory.recall(
                where, resource_id, vector_search_string=query, per_page=turn, thread_config=config, total=False
            )
        except NotFoundError:  # thread scope, and the conversation is not stored yet
            return []
        found = {m.id: m for m in result.messages}
        hits = [found[hit] for hit in result.semantic_hits if hit in found]
        recalled = [m for m in hits if m.role in RECALLED_ROLES]
        echoed = await echoed_replies(memory, resource_id, recalled)
        kept = distinct_hits([m for m in recalled if m.id not in echoed])
        if len(kept) >= top_k or len(hits) < want or want >= MAX_TOP_K:
            return kept[:top_k]
        want = min(want * _GROWTH, MAX_TOP_K)


async def recall_texts(
    memory: Memory,
    resource_id: str,
    query: str,
    top_k: int,
    *,
    thread_id: str | None = None,
    min_score: MinScore = "auto",
    leave_out_turn: bool = True,
    max_hit_chars: int | None = DEFAULT_HIT_CHARS,
    max_total_chars: int | None = DEFAULT_TOTAL_CHARS,
) -> list[dict[str, Any]]:
    """:func:`recall_hits` as the tools return it: ``{"thread_id", "role",
    "text", "created_at"}`` (ISO-8601 UTC) per hit, best first, the texts
    within ``max_hit_chars`` each and ``max_total_chars`` together
    (characters, cut with a visible marker: :func:`bound_texts`; None: no
    bound), so fewer hits when the bound left some out.

    Raises:
        As :func:`recall_hits`.
    """
    hits = await recall_hits(
        memory, resource_id, query, top_k, thread_id=thread_id, min_score=min_score, leave_out_turn=leave_out_turn
    )
    texts = bound_texts([message_text(m) for m in hits], max_hit_chars, max_total_chars)
    return [
        {
            "thread_id": m.thread_id,
            "role": m.role,
            "text": text,
            "created_at": m.created_at.isoformat() if m.created_at else "",
        }
        for m, text in zip(hits, texts, strict=False)
    ]


async def recall_json(
    memory: Memory,
    resource_id: str,
    query: str,
    top_k: int,
    *,
    thread_id: str | None = None,
    min_score: MinScore = "auto",
    leave_out_turn: bool = True,
    max_hit_chars: int | None = DEFAULT_HIT_CHARS,
    max_total_chars: int | None = DEFAULT_TOTAL_CHARS,
) -> str:
    """What every seam's ``recall_memory`` tool returns: :func:`recall_texts`
    as one JSON text (an array of ``{"thread_id", "role", "text",
    "created_at"}``, best first, texts within the size bounds; ``"[]"`` when nothing clears the floor,
    non-ASCII kept as it is), so the model reads the same format whichever
    framework runs it (a list returned by a tool would reach an OpenAI
    Agents model as Python's repr, quoted with ``'``).

    Raises:
        As :func:`recall_hits`.
    """
    hits = await recall_texts(
        memory,
        resource_id,
        query,
        top_k,
        thread_id=thread_id,
        min_score=min_score,
        leave_out_turn=leave_out_turn,
        max_hit_chars=max_hit_chars,
        max_total_chars=max_total_chars,
    )
    return json.dumps(hits, ensure_ascii=False)


def offered_tools(memory: Memory) -> tuple[bool, bool]:
    """Which tools a seam offers over ``memory``: ``(working_memory,
    recall)``. The working-memory tools only when the Memory's config turns
    working memory on (``MemoryConfig(working_memory={"enabled": True})``; off
    by default, and then :meth:`~memory_core.memory.Memory.read_working_memory`
    refuses too); ``recall_memory`` only when the Memory can be searched
    (:func:`can_recall`: a vector store, or lexical semantic recall).

    Raises:
        ValidationError: field ``memory``: neither (no tool to offer), naming
            both ways to turn one on.
    """
    working, recall = memory.config.working_memory.enabled, can_recall(memory)
    if not working and not recall:
        raise ValidationError(
            "memory",
            "no memory tool to offer: working memory is off (turn it on with "
            'MemoryConfig(working_memory={"enabled": True})) and the Memory has no vector store for recall_memory '
            '(Memory.open(url, vector="qdrant+path:///app.vectors")) nor lexical semantic recall '
            '(MemoryConfig(semantic_recall=SemanticRecall(mode="lexical")))',
        )
    return working, recall


async def read_working_memory(memory: Memory, resource_id: str, thread_id: str | None = None) -> str:
    """What ``get_working_memory`` answers: the notes where the Memory's
    config keeps them (:meth:`~memory_core.memory.Memory.read_working_memory`:
    the resource's, or with scope ``"thread"`` the thread ``thread_id``'s);
    while none are stored, the configured template
    (``memory.config.working_memory.template``, the notes the model is asked
    to fill in, as Mastra's tool shows it), else ``""``.

    Raises:
        ValidationError: scope ``"thread"`` and no ``thread_id``.
        OwnershipError: ``thread_id`` belongs to another resource.
    """
    settings = memory.config.working_memory
    try:
        state = await memory.read_working_memory(_home(settings.scope, thread_id), resource_id)
    except NotFoundError:  # thread scope, and the conversation is not stored yet
        return settings.template or ""
    return state.text or ""


def _home(scope: Scope, thread_id: str | None) -> str | None:
    """The thread a working-memory call names: ``thread_id`` with thread
    scope; None with resource scope (the resource is named, so the tools
    work before the conversation's thread is stored)."""
    return thread_id if scope == "thread" else None


_INVISIBLE = frozenset({"Cf", "Cc", "Mn", "Me"})
"""Unicode categories that show as nothing on their own: format characters
(zero-width space U+200B, BOM U+FEFF, word joiner U+2060), controls (line
breaks and tabs are kept: they are whitespace), and
combining marks with no letter to sit on (combining grapheme joiner U+034F,
variation selectors U+FE00-U+FE0F)."""
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols drawn as blank space: the Hangul fillers (Unicode's
Default_Ignorable_Code_Point property lists them, DerivedCoreProperties.txt)
and the Braille blank U+2800."""
_FENCE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^`\n]*$", re.MULTILINE)
"""A Markdown code-fence line (an opening one may name a language)."""
_LIST_MARKER = re.compile(r"^\s*\d+[.)]\s+", re.MULTILINE)
"""A numbered-list marker at a line's start (``1.``, ``2)``): markup, not
a number the notes hold."""
_HTML_TAG = re.compile(r"</?[^\W\d_][\w-]*(?:\s[^<>]*)?/?>")
"""An HTML tag (``<b>``, ``</i>``, ``<br/>``): markup, not words."""
_INITIALISM = re.compile(r"(?<!\w)[^\W\d_](?:[./][^\W\d_])+(?!\w)\.?")
"""Single letters joined by ``/`` or ``.`` (``n/a``, ``n.a.``, ``t.b.d.``):
read as one word (``na``, ``tbd``) so the fillers below match them."""
_UNWRAPS = 4
"""How many JSON string literals inside one another notes are decoded
from (``"\\"# User\\\\n\\""``)."""
FILLERS = frozenset({"na", "none", "null", "nil", "undefined", "unknown", "unset", "tbd", "tba", "todo"})
"""Placeholder fillers: words a model writes in a field it has no value
for, compared after NFKC and case folding (``N/A``, ``n.a.`` and ``n/a``
read as ``na``; ``T.B.D.`` as ``tbd``). Fillers made of punctuation alone
(``?``, ``-``, ``...``, ``""``, ``''``) need no entry: punctuation is never
a word (:func:`note_words`). A field whose true value is one of these
words must say it in other words (``Allergies: no allergies``, not
``Allergies: none``)."""


def _visible(text: str) -> str:
    """``text`` without what shows as nothing (:data:`_INVISIBLE`,
    :data:`_BLANK_LETTERS`) and without code-fence lines."""
    kept = "".join(
        c for c in text if c.isspace() or (unicodedata.category(c) not in _INVISIBLE and c not in _BLANK_LETTERS)
    )
    return _FENCE.sub("", kept)


def _unwrapped(text: str) -> str:
    """``text`` under NFKC, visible (:func:`_visible`), stripped, and
    decoded while it is a JSON string literal (at most :data:`_UNWRAPS`
    times): a model that JSON-encodes its argument twice sends
    ``"# User\\n..."`` with the quotes and escapes in the notes."""
    seen = _visible(unicodedata.normalize("NFKC", text)).strip()
    for _ in range(_UNWRAPS):
        if len(seen) < 2 or seen[0] != '"' or seen[-1] != '"':
            break
        try:
            value = json.loads(seen)
        except ValueError:
            break
        if not isinstance(value, str):
            break
        seen = _visible(unicodedata.normalize("NFKC", value)).strip()
    return seen


_ALNUM_RUN = re.compile(r"[^\W_]+")
"""A run of letters and digits (Python's ``str.isalnum``)."""


@functools.cache
def _mark_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A combining mark (Unicode category M up to U+1FFFF; the variation
    selectors past it are removed before, with every mark :func:`_visible`
    drops), and a word of :func:`note_words` where marks may occur: letters,
    digits and the marks among them, holding at least one letter or digit.
    Built on first use (a scan of 131,072 code points, ~0.1 s)."""
    ranges: list[list[int]] = []
    for point in range(0x20000):
        if unicodedata.category(chr(point))[0] == "M":
            if ranges and ranges[-1][1] == point - 1:
                ranges[-1][1] = point
            else:
                ranges.append([point, point])
    marks = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)
    return re.compile(f"[{marks}]"), re.compile(f"[{marks}]*[^\\W_](?:[^\\W_]|[{marks}])*")


def _words(seen: str) -> list[str]:
    """:func:`note_words` of text already :func:`_unwrapped`."""
    folded = _LIST_MARKER.sub(" ", _HTML_TAG.sub(" ", seen.casefold()))
    folded = _INITIALISM.sub(lambda match: re.sub(r"[./]", "", match.group()), folded)
    if folded.isascii():
        return _ALNUM_RUN.findall(folded)
    mark, word = _mark_patterns()
    return (word if mark.search(folded) else _ALNUM_RUN).findall(folded)  # without marks, the same words


def note_words(text: str) -> list[str]:
    """The words of notes, as the working-memory tools compare them, in
    order: the text under NFKC (fullwidth letters and colons, U+FF01-U+FF5E,
    read as ASCII), without what shows as nothing (:func:`_visible`: format
    and control characters, marks alone, blank letters, code-fence lines),
    decoded while it is a JSON string literal, case-folded, without HTML
    tags, numbered-list markers and initialisms' dots and slashes (``n/a``
    is ``na``); then each run of letters, digits and their combining marks
    that holds a letter or a digit. Punctuation, symbols (emoji, U+FFFC,
    U+FFFD among them), Markdown and whitespace separate words and are
    never one."""
    return _words(_unwrapped(text))


def _empty_json(value: Any) -> bool:
    """Whether a JSON value holds nothing: null, a str that holds nothing
    (:func:`notes_hold_nothing`), or an array or object whose every item
    holds nothing (``{}``, ``[]``, ``{"name": null}``,
    ``{"name": "N/A"}``). False, 0 and any other value are content."""
    if value is None:
        return True
    if isinstance(value, str):
        return notes_hold_nothing(value)
    if isinstance(value, list):
        return all(_empty_json(item) for item in value)
    if isinstance(value, dict):
        return all(_empty_json(item) for item in value.values())
    return False


def notes_hold_nothing(text: str) -> bool:
    """Whether notes sent to ``update_working_memory`` hold nothing, so
    storing them would erase the notes kept: every word of ``text``
    (:func:`note_words`) is a placeholder filler (:data:`FILLERS`), or it
    has none, as when it is whitespace, invisible characters, markup
    (``- \\n- ``, ``** **``), punctuation or symbols alone (U+FFFC, U+FFFD,
    and emoji: an emoji-only note such as 👍 is an acknowledgement, not
    notes, and is refused; ``1️⃣`` holds a digit and is kept); or ``text``
    is JSON (an object or array, bare or as a JSON string literal) whose
    every value holds nothing (:func:`_empty_json`: ``{}``, ``[]``,
    ``{"name": null}``, ``{"name": "N/A"}``)."""
    return _holds_nothing(_unwrapped(text))


def _holds_nothing(seen: str, words: list[str] | None = None) -> bool:
    """:func:`notes_hold_nothing` of text already :func:`_unwrapped`
    (``words``: its :func:`_words`, when known)."""
    if seen[:1] in ("{", "["):
        try:
            return _empty_json(json.loads(seen))
        except (ValueError, RecursionError):
            pass
    return all(word in FILLERS for word in (_words(seen) if words is None else words))


def notes_are_template(text: str, template: str) -> bool:
    """Whether ``text`` is still the unfilled ``template``, told by its
    words, not its form: once the placeholder fillers (:data:`FILLERS`) are
    left out, every word of ``text`` (:func:`note_words`) is a word of
    ``template``, each used at most as many times as the template uses it.
    So the template with other bullets, headings, case, markup or
    fullwidth forms, with its heading or a field dropped, as a JSON string
    literal, or with fields "filled" with ``N/A``, ``none``, ``unknown``,
    ``-`` or ``""`` is the template; one field holding a word of its own
    (``Name: Alice`` on a ``Name:`` template) is not."""
    return _only_template_words(note_words(text), template)


def _only_template_words(words: list[str], template: str) -> bool:
    """:func:`notes_are_template` of notes whose words are ``words``."""
    return Counter(word for word in words if word not in FILLERS) <= Counter(note_words(template))


def notes_refusal(text: str, template: str | None) -> str | None:
    """Why ``update_working_memory`` must not store ``text``, the one rule
    every seam's tool applies (:func:`write_working_memory`): notes that
    hold nothing (:func:`notes_hold_nothing`) are answered with
    :data:`REFUSED_BLANK`; with a ``template``, notes that are the
    unfilled template (:func:`notes_are_template`) with
    :data:`REFUSED_TEMPLATE`; None when ``text`` may be stored."""
    seen = _unwrapped(text)
    words = _words(seen)
    if _holds_nothing(seen, words):
        return REFUSED_BLANK
    if template is not None and _only_template_words(words, template):
        return REFUSED_TEMPLATE
    return None


def refused_by_schema(reason: str, schema: Mapping[str, Any]) -> str:
    """What ``update_working_memory`` answers to notes the Memory's JSON
    Schema refuses: why, and the schema the notes must match."""
    return (
        f"Not saved (working memory {reason}), and the stored notes were kept. Call get_working_memory and send "
        f"the complete notes as one JSON value that matches this JSON Schema: {json.dumps(schema, ensure_ascii=False)}"
    )


async def write_working_memory(memory: Memory, resource_id: str, text: str, thread_id: str | None = None) -> str:
    """What ``update_working_memory`` does: replace the notes atomically
    through :meth:`~memory_core.memory.Memory.update_working_memory` (where
    the Memory's config keeps them: the resource's, or with scope
    ``"thread"`` those of ``thread_id``, a thread created for
    ``resource_id`` when not stored yet; checked against its JSON Schema when
    one is set), unless :func:`notes_refusal` refuses them: they hold
    nothing (:func:`notes_hold_nothing`) or are the unfilled template
    however reworded (:func:`notes_are_template`); a model that calls the
    tool with either would erase the notes it was meant to keep (Mastra
    issue #12253, issue 25).

    Returns:
        ``text`` when it was stored; otherwise the refusal the model reads
        as the tool's result, saying why and what to send (nothing written):
        :data:`REFUSED_BLANK`, :data:`REFUSED_TEMPLATE`, or
        :func:`refused_by_schema` with the schema's complaint.

    Raises:
        ValidationError: field ``notes`` (the tools' argument): ``text`` is
            not a str, or the notes are over the 15 MiB a record holds
            (R-SIZE); scope ``"thread"`` and no ``thread_id``; nothing is
            written.
        OwnershipError: ``thread_id`` belongs to another resource.
    """
    check_text(text, "notes")
    settings = memory.config.working_memory
    refusal = notes_refusal(text, settings.template)
    if refusal is not None:
        return refusal
    thread = _home(settings.scope, thread_id)
    try:
        try:
            await memory.update_working_memory(thread, text, resource_id)
        except NotFoundError:  # thread scope, the conversation not stored yet (checked, nothing written)
            if thread is None:
                raise
            await memory.get_or_create_thread(resource_id, thread)
            await memory.update_working_memory(thread, text, resource_id)
    except ValidationError as error:
        if error.rule == "R-SIZE":  # storage names its record, not the tool's argument
            raise ValidationError(
                "notes",
                f"{error.reason}: the notes are {len(text.encode())} bytes of UTF-8; keep them shorter",
                "R-SIZE",
            ) from None
        if settings.schema is not None and error.field == "working_memory":
            return refused_by_schema(error.reason, settings.schema)
        raise
    return text
