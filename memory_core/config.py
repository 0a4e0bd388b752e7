"""Memory settings: :class:`MemoryConfig` and its :class:`SemanticRecall` part
(working-memory settings live with working memory,
:class:`~memory_core.working_memory.WorkingMemory`).

Every field is checked at construction and raises a
:class:`~memory_core.errors.ValidationError` naming it, so a config that
exists is valid; a per-call ``thread_config`` mapping becomes one through
:func:`resolve`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, NamedTuple

from memory_core.errors import ValidationError
from memory_core.hybrid import SEARCH_MODES, SearchMode
from memory_core.models import Message, Thread
from memory_core.validation import (
    MAX_TOP_K,
    MinScore,
    check_bool,
    check_min_score,
    check_non_negative_int,
    check_per_page,
    coerce_model,
    config_field,
    unknown_field,
)
from memory_core.working_memory import WorkingMemory, check_scope
from memory_core.workmem import Scope

__all__ = ["MemoryConfig", "RecallSettings", "SemanticRecall", "TitleGenerator", "recall_settings", "resolve"]

TitleGenerator = Callable[[Thread, list[Message]], Awaitable[str]]
"""``async (thread, new_messages) -> title``: called once a thread with an
empty title receives its first user message."""

_RANGE_KEYS = frozenset({"before", "after"})


@dataclass(frozen=True, slots=True)
class SemanticRecall:
    """Semantic recall settings (R-RECALL step 4).

    Attributes:
        top_k: vector hits to fetch, 1 to
            :data:`~memory_core.validation.MAX_TOP_K` (1000). Default 4.
        message_range: messages of context around each hit (ints from 0 to
            2**63-1): an int for both sides, ``(before, after)`` (a list is
            accepted too) or Mastra's ``{"before": n, "after": m}`` (a missing
            side is 0; other keys are an error). Stored as an int or a tuple.
            Default 2.
        scope: ``"resource"`` searches every thread of the resource (needs a
            ``resource_id``); ``"thread"`` only the current thread.
        exclude_recent: when True, the ``top_k`` hits are the best messages
            outside the recall's history page (the search asks for ``top_k``
            plus the page's size, capped at ``MAX_TOP_K``, and drops hits in
            the page), so no slot is spent on a message the prompt already
            has. Default False: Mastra's behaviour (R-RECALL step 4), where a
            hit may be a recent message.
        min_score: a relevance floor: hits whose cosine similarity to the
            query (-1 to 1; the score of the message's best chunk, as
            :class:`~memory_core.vector.VectorHit` carries it) is below it
            are dropped, so an unrelated query returns fewer than ``top_k``
            hits, or none. None (the default): no floor, always ``top_k``
            hits when the scope holds that many (Mastra's behaviour).
            ``"auto"``: the floor declared for the Memory's embedder
            (:data:`~memory_core.embedders.RELEVANCE_FLOORS`, measured on
            LoCoMo: :func:`~memory_core.embedders.relevance_floor`), read at
            each recall; no floor for an embedder that declares none (one
            of your own, or none at all in ``"lexical"`` mode). The
            agent-framework tools' default ``"auto"`` means the same.
            Scores depend on the embedder: a floor chosen for one means
            little for another. In ``"hybrid"`` mode it filters the vector
            ranking before fusion.
        mode: how hits are ranked (:mod:`memory_core.hybrid`):
            ``"vector"`` (the default, as before: cosine similarity of the
            embeddings), ``"lexical"`` (BM25 over the scope's message text,
            :mod:`memory_core.lexical`) or ``"hybrid"`` (both, fused by
            weighted reciprocal rank fusion, Cormack et al. 2009). Hits of
            every mode are marked ``"semantic"`` in ``sources``. Only
            ``"lexical"`` works without a vector store and embedder.
        vector_weight / lexical_weight: the fusion weights of the two
            rankings in ``"hybrid"`` mode (finite floats >= 0, not both 0).
            Defaults 1.0 and 1.0 (plain RRF, Cormack et al. 2009);
            ``docs/design.md`` ("Hybrid recall") reports the weights half
            of LoCoMo prefers per embedder.

    Raises:
        ValidationError: a field of the wrong type or out of range (at
            construction, field ``semantic_recall.<name>``).
    """

    top_k: int = 4
    message_range: int | tuple[int, int] = 2
    scope: Scope = "resource"
    exclude_recent: bool = False
    min_score: MinScore = None
    mode: SearchMode = "vector"
    vector_weight: float = 1.0
    lexical_weight: float = 1.0

    def __post_init__(self) -> None:
        top_k = self.top_k
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise ValidationError(
                "semantic_recall.top_k", f"must be an int from 1 to {MAX_TOP_K}, got {top_k!r}", "R-RECALL"
            )
        object.__setattr__(self, "top_k", int(top_k))  # an IntEnum becomes a plain int
        object.__setattr__(self, "message_range", _message_range(self.message_range))
        check_scope(self.scope, "semantic_recall.scope")
        check_bool(self.exclude_recent, "semantic_recall.exclude_recent")
        object.__setattr__(self, "min_score", check_min_score(self.min_score, "semantic_recall.min_score"))
        if self.mode not in SEARCH_MODES:
            raise ValidationError("semantic_recall.mode", f"must be one of {SEARCH_MODES}, got {self.mode!r}")
        for name in ("vector_weight", "lexical_weight"):
            weight = getattr(self, name)
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < float("inf"):
                raise ValidationError(f"semantic_recall.{name}", f"must be a finite number >= 0, got {weight!r}")
            object.__setattr__(self, name, float(weight))
        if self.vector_weight == self.lexical_weight == 0:
            raise ValidationError("semantic_recall.lexical_weight", "vector_weight and lexical_weight are both 0")

    def window(self) -> tuple[int, int]:
        """``(before, after)`` message counts around each hit."""
        if isinstance(self.message_range, tuple):
            return self.message_range
        return self.message_range, self.message_range


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Memory behaviour (R-RECALL, R-VEC); per-call ``thread_config`` overrides it.

    Attributes:
        last_messages: default history page size for :meth:`~memory_core.memory.Memory.recall`
            (an int from 0 to :data:`~memory_core.validation.MAX_PER_PAGE`,
            as R-PAGE), or ``False`` for no history page. Default 10.
        semantic_recall: ``False`` (off), ``True`` (defaults),
            :class:`SemanticRecall`, or a mapping of its fields (``topK``,
            ``messageRange`` accepted). Default None: on with its defaults
            when the :class:`~memory_core.memory.Memory` has a vector store,
            else off (settled when the Memory is built; a config used
            elsewhere reads None as off).
        working_memory: :class:`WorkingMemory` settings, or a mapping of its
            fields.
        generate_title: optional :data:`TitleGenerator` hook (a callable).

    Raises:
        ValidationError: a field of the wrong type or out of range (at
            construction), naming the field.
    """

    last_messages: int | Literal[False] = 10
    semantic_recall: SemanticRecall | bool | None = None
    working_memory: WorkingMemory = field(default_factory=WorkingMemory)
    generate_title: TitleGenerator | None = None

    def __post_init__(self) -> None:
        if self.last_messages is not False:
            check_per_page(self.last_messages, "last_messages")
        semantic: Any = self.semantic_recall
        if isinstance(semantic, Mapping):
            semantic = coerce_model(semantic, SemanticRecall, "semantic_recall")
        elif semantic is not None and not isinstance(semantic, bool | SemanticRecall):
            raise ValidationError(
                "semantic_recall",
                f"must be a bool, a SemanticRecall, a mapping or None, got {type(semantic).__name__}",
            )
        object.__setattr__(self, "semantic_recall", semantic)
        wm: Any = self.working_memory
        if isinstance(wm, Mapping):
            wm = coerce_model(wm, WorkingMemory, "working_memory")
        elif not isinstance(wm, WorkingMemory):
            raise ValidationError("working_memory", f"must be a WorkingMemory or a mapping, got {type(wm).__name__}")
        object.__setattr__(self, "working_memory", wm)
        if self.generate_title is not None and not callable(self.generate_title):
            raise ValidationError("generate_title", "must be an async callable (thread, messages) -> str, or None")

    def semantic(self) -> SemanticRecall | None:
        """The effective semantic-recall settings, or None when off."""
        if self.semantic_recall is True:
            return _DEFAULT_SEMANTIC
        return self.semantic_recall or None


def _message_range(value: Any) -> int | tuple[int, int]:
    """``message_range`` as an int or ``(before, after)``; see SemanticRecall."""
    field = "semantic_recall.message_range"
    if isinstance(value, Mapping):
        unknown = sorted(map(str, set(value) - _RANGE_KEYS))
        if unknown:
            raise ValidationError(f"{field}.{unknown[0]}", "unknown key; use 'before' and 'after'", "R-RECALL")
        value = (value.get("before", 0), value.get("after", 0))
    if isinstance(value, tuple | list):
        if len(value) != 2:
            raise ValidationError(field, f"must be (before, after), got {len(value)} items", "R-RECALL")
        before = check_non_negative_int(value[0], f"{field}.before", "R-RECALL")
        return before, check_non_negative_int(value[1], f"{field}.after", "R-RECALL")
    return check_non_negative_int(value, field, "R-RECALL")


_DEFAULT_SEMANTIC = SemanticRecall()
"""What ``semantic_recall=True`` means (built once: it is immutable)."""


def resolve(config: MemoryConfig, thread_config: MemoryConfig | Mapping[str, Any] | None) -> MemoryConfig:
    """The config of one call: ``config`` overridden by ``thread_config``
    (a MemoryConfig replaces it; a mapping overrides the fields it names,
    camelCase aliases accepted; None keeps ``config``).

    Raises:
        ValidationError: ``thread_config`` is neither; an unknown field; a
            bad value (field ``<name>``, as :class:`MemoryConfig` names it).
    """
    if thread_config is None:
        return config
    if isinstance(thread_config, MemoryConfig):
        return thread_config  # validated when it was built
    if not isinstance(thread_config, Mapping):
        raise ValidationError("thread_config", "must be a MemoryConfig or a mapping of its fields")
    names = {f.name for f in fields(MemoryConfig)}
    overrides: dict[str, Any] = {}
    for key, value in thread_config.items():
        name = config_field(key)
        if name not in names:
            raise unknown_field(f"thread_config.{key}", key, names, "MemoryConfig")
        overrides[name] = value
    # MemoryConfig checks (and converts mappings of) every field it is given.
    return replace(config, **overrides)


class RecallSettings(NamedTuple):
    """What one recall runs under (:func:`recall_settings`)."""

    last_messages: int
    """The default history page size (0 when ``last_messages`` is False)."""
    semantic: SemanticRecall | None
    """Semantic-recall settings, or None when off."""
    window: tuple[int, int]
    """``(before, after)`` around each hit (``(0, 0)`` when off)."""


def recall_settings(config: MemoryConfig, thread_config: MemoryConfig | Mapping[str, Any] | None) -> RecallSettings:
    """The settings of one recall under ``config`` overridden by
    ``thread_config`` (as :func:`resolve`).

    Raises:
        ValidationError: as :func:`resolve`.
    """
    effective = resolve(config, thread_config)
    last, semantic = effective.last_messages, effective.semantic()
    return RecallSettings(0 if last is False else last, semantic, (0, 0) if semantic is None else semantic.window())
