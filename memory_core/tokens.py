"""Token budgets for recall: count tokens, keep the newest history that fits.

:meth:`memory_core.Memory.recall` takes ``max_tokens``: it keeps the newest
messages of its result whose tokens add up to at most that, counted by a
:class:`TokenCounter`, and never separates a tool call from its results.

Counters:

- :class:`EstimateTokenCounter` (the default): no dependency, ~4 UTF-8
  bytes per token, rounded up, the rule of thumb OpenAI documents for English
  with its BPE tokenisers; it errs on the high side for non-Latin scripts.
- :class:`TiktokenCounter`: exact OpenAI counts with ``tiktoken``
  (``pip install 'memory-core[tokens]'``; tiktoken fetches an encoding file on
  its first use unless it is in its cache, ``TIKTOKEN_CACHE_DIR``).
- :class:`TokenizerCounter`: any Hugging Face ``tokenizers.Tokenizer`` (for
  example the MiniLM model's ``tokenizer.json``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from memory_core import codec
from memory_core.errors import ValidationError
from memory_core.models import Message

__all__ = [
    "MESSAGE_OVERHEAD_TOKENS",
    "EstimateTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerCounter",
    "check_token_counter",
    "message_tokens",
    "newest_within",
    "tool_units",
]

MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens added per message for its role and separators (OpenAI's chat
format spends 3-4 per message)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text (synchronous, pure)."""

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` (>= 0)."""
        ...


class EstimateTokenCounter:
    """``ceil(UTF-8 bytes / 4)``: a dependency-free estimate (the default)."""

    __slots__ = ()

    def count(self, text: str) -> int:
        """Estimated tokens of ``text``: ``ceil(len(text.encode()) / 4)``."""
        return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


class TiktokenCounter:
    """Exact counts with a tiktoken encoding.

    Args:
        encoding: a tiktoken encoding name (default ``"o200k_base"``, GPT-4o).

    Raises:
        ImportError: tiktoken is not installed (``memory-core[tokens]``).
    """

    __slots__ = ("_encoding",)

    def __init__(self, encoding: str = "o200k_base") -> None:
        try:
            import tiktoken
        except ImportError as exc:
            raise ImportError(f"TiktokenCounter: {exc}; install with: pip install 'memory-core[tokens]'") from exc
        self._encoding = tiktoken.get_encoding(encoding)

    def count(self, text: str) -> int:
        """Tokens of ``text`` in the encoding (special tokens count as text)."""
        return len(self._encoding.encode(text, disallowed_special=()))


class TokenizerCounter:
    """Counts with a Hugging Face ``tokenizers.Tokenizer`` (or anything whose
    ``encode(text, add_special_tokens=False)`` returns an object with ``ids``).

    Args:
        tokenizer: the tokenizer, e.g. ``Tokenizer.from_file("tokenizer.json")``.
            Padding never counts (only tokens whose attention mask is 1); a
            truncation setting caps counts, so switch it off
            (``no_truncation()``) for exact budgets.
    """

    __slots__ = ("_tokenizer",)

    def __init__(self, tokenizer: Any) -> None:
        if not callable(getattr(tokenizer, "encode", None)):
            raise ValidationError("tokenizer", "must have an encode(text) method")
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        """Tokens of ``text`` without special tokens or padding."""
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        mask = getattr(encoding, "attention_mask", None)
        return int(sum(mask)) if mask is not None else len(encoding.ids)


def check_token_counter(counter: Any, field: str = "token_counter") -> TokenCounter:
    """``counter`` if it has a callable ``count``; else ValidationError."""
    if not callable(getattr(counter, "count", None)):
        raise ValidationError(field, "must be a TokenCounter: an object with count(text: str) -> int")
    return counter  # type: ignore[no-any-return]


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens a message costs in a prompt: its content (a str as is; a
    structured content, tool calls included, as compact JSON) plus
    :data:`MESSAGE_OVERHEAD_TOKENS`.

    Raises:
        ValidationError: the counter returned something other than an int >= 0.
    """
    content = message.content
    text = content if isinstance(content, str) else codec.dumps(content)
    tokens = counter.count(text)
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise ValidationError("token_counter", f"count() must return an int >= 0, got {tokens!r}")
    return tokens + MESSAGE_OVERHEAD_TOKENS


def tool_units(messages: Sequence[Message]) -> list[list[Message]]:
    """Split chronologically ordered messages into units a budget keeps or
    drops whole: a ``tool`` message joins the unit of the message before it in
    its own thread (the assistant turn that called the tool, or an earlier
    result of the same call), so a call and its results stay together; every
    other message starts a unit. Units are listed in the order of their first
    message."""
    units: list[list[Message]] = []
    last_unit: dict[str, list[Message]] = {}
    for message in messages:
        unit = last_unit.get(message.thread_id)
        if message.role != "tool" or unit is None:
            unit = []
            units.append(unit)
        unit.append(message)
        last_unit[message.thread_id] = unit
    return units


def newest_within(messages: Sequence[Message], max_tokens: int, counter: TokenCounter) -> tuple[set[str], int]:
    """The newest messages whose tokens add up to at most ``max_tokens``.

    Args:
        messages: in R-ORDER ascending (oldest first).
        max_tokens: the budget (an int >= 0).
        counter: how to count.

    Returns:
        ``(kept ids, tokens used)``: walking :func:`tool_units` from the
        newest, whole units are kept until the first one that does not fit;
        what is older is dropped even if it would fit (history stays
        contiguous).
    """
    kept: set[str] = set()
    used = 0
    for unit in reversed(tool_units(messages)):
        cost = sum(message_tokens(m, counter) for m in unit)
        if used + cost > max_tokens:
            break
        used += cost
        kept.update(m.id for m in unit)
    return kept, used
