"""memory_core.tokens: counters, tool-call units and the newest-that-fits rule."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from memory_core.errors import ValidationError
from memory_core.models import Message
from memory_core.tokens import (
    MESSAGE_OVERHEAD_TOKENS,
    EstimateTokenCounter,
    TiktokenCounter,
    TokenizerCounter,
    check_token_counter,
    message_tokens,
    newest_within,
    tool_units,
)


def _m(message_id: str, role: str = "user", content: Any = "", thread_id: str = "t1") -> Message:
    return Message(message_id, thread_id, role, content)  # type: ignore[arg-type]


def test_estimate_is_utf8_bytes_over_four_rounded_up() -> None:
    counter = EstimateTokenCounter()
    assert [counter.count(t) for t in ("", "a", "abcd", "abcde", "é", "世界", "👋🏽")] == [0, 1, 1, 2, 1, 2, 2]


def test_message_tokens_counts_structured_content_as_json() -> None:
    counter = EstimateTokenCounter()
    assert message_tokens(_m("a", content="abcdefgh"), counter) == 2 + MESSAGE_OVERHEAD_TOKENS
    call = {"parts": [{"type": "tool-invocation", "toolInvocation": {"args": {"q": "x" * 100}}}]}
    assert message_tokens(_m("b", "assistant", call), counter) > 25 + MESSAGE_OVERHEAD_TOKENS


def test_counter_answers_are_checked() -> None:
    class Negative:
        def count(self, text: str) -> int:
            return -1

    with pytest.raises(ValidationError, match="token_counter"):
        message_tokens(_m("a", content="x"), Negative())
    with pytest.raises(ValidationError, match="token_counter"):
        check_token_counter(object())
    assert isinstance(check_token_counter(EstimateTokenCounter()), EstimateTokenCounter)


def test_tool_results_stay_with_the_call_in_their_own_thread() -> None:
    messages = [
        _m("u1"),
        _m("call", "assistant"),
        _m("other", "user", thread_id="t2"),  # another thread between a call and its results
        _m("r1", "tool"),
        _m("r2", "tool"),
        _m("orphan", "tool", thread_id="t3"),  # its call is not in the list
        _m("u2"),
    ]
    units = [[m.id for m in unit] for unit in tool_units(messages)]
    assert units == [["u1"], ["call", "r1", "r2"], ["other"], ["orphan"], ["u2"]]


def test_newest_within_stops_at_the_first_unit_that_does_not_fit() -> None:
    counter = EstimateTokenCounter()
    messages = [_m("old", content="x" * 4), _m("big", content="x" * 400), _m("new", content="x" * 4)]
    kept, used = newest_within(messages, 20, counter)
    # "old" would fit after "new", but history stays contiguous: "big" stops the walk.
    assert kept == {"new"} and used == 1 + MESSAGE_OVERHEAD_TOKENS
    assert newest_within(messages, 0, counter) == (set(), 0)


def test_tokenizer_counter_uses_the_tokenizer() -> None:
    from memory_core.minilm import packaged_model_path

    path = packaged_model_path()
    if importlib.util.find_spec("tokenizers") is None or path is None:
        pytest.skip("tokenizers or the packaged MiniLM tokenizer is not installed")
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))  # it pads to 128: padding must not count
    counter = TokenizerCounter(tokenizer)
    assert counter.count("hello world") == 2
    tokenizer.no_truncation()
    assert counter.count("word " * 300) == 300
    assert counter.count("") == 0
    with pytest.raises(ValidationError, match="tokenizer"):
        TokenizerCounter(object())


def test_tiktoken_counter_names_its_extra_when_missing() -> None:
    if importlib.util.find_spec("tiktoken") is not None:
        pytest.skip("tiktoken is installed (its encodings may need a download, so no count is tested here)")
    with pytest.raises(ImportError, match=r"memory-core\[tokens\]"):
        TiktokenCounter()
