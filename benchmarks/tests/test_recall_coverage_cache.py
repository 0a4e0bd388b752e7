"""recall_coverage's embedding cache: every text is embedded once, the
vectors are the embedder's own, and the coverage rows equal an uncached
run's."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from memory_core.embedders import Matrix, get_embedder

from memory_core_bench.recall_coverage import MemoEmbedder, run_coverage


class CountingEmbedder:
    """The lexical embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = get_embedder("lexical")
        self.name = self.inner.name
        self.dimension = self.inner.dimension
        self.max_input_chars = self.inner.max_input_chars
        self.embedded: list[str] = []

    async def embed(self, texts: Sequence[str]) -> Matrix:
        self.embedded += texts
        return await self.inner.embed(texts)


@pytest.mark.anyio
async def test_memo_embedder_embeds_each_unseen_text_once_with_the_inner_vectors() -> None:
    counting = CountingEmbedder()
    known = await counting.inner.embed(["alpha beta"])
    memo = MemoEmbedder(counting, {"alpha beta": known[0]})
    got = await memo.embed(["gamma", "alpha beta", "gamma", "delta"])
    assert counting.embedded == ["gamma", "delta"] and memo.misses == 2
    assert np.array_equal(got, await counting.inner.embed(["gamma", "alpha beta", "gamma", "delta"]))
    assert got.dtype == np.float32 and got.shape == (4, memo.dimension)
    again = await memo.embed(["delta", "gamma"])
    assert counting.embedded == ["gamma", "delta"] and memo.misses == 2
    assert np.array_equal(again, got[[3, 0]])
    assert (await memo.embed([])).shape == (0, memo.dimension)


def _locomo(folder: Path) -> Path:
    turns = [
        ("A", "I adopted a grey cat called Pixel last spring"),
        ("B", "Nice! I went hiking in the Alps with my sister"),
        ("A", "Pixel loves sleeping on my keyboard while I code"),
        ("B", "My sister broke her ankle on the second day of hiking"),
    ]
    conversation = {
        "speaker_a": "A",
        "speaker_b": "B",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(turns[:2])],
        "session_2_date_time": "2:10 pm on 9 May, 2023",
        "session_2": [{"speaker": s, "dia_id": f"D2:{i + 1}", "text": t} for i, (s, t) in enumerate(turns[2:])],
        "qa": [
            {"question": "What is the name of A's cat?", "evidence": ["D1:1"], "category": 4},
            {"question": "Who broke an ankle hiking?", "evidence": ["D2:2"], "category": 4},
            {"question": "Where does the cat sleep?", "evidence": ["D2:1"], "category": 1},
        ],
    }
    folder.mkdir()
    (folder / "1.json").write_text(json.dumps(conversation), encoding="utf-8")
    return folder


@pytest.mark.anyio
async def test_cached_coverage_equals_uncached_and_a_second_run_embeds_nothing(tmp_path: Path) -> None:
    folder = _locomo(tmp_path / "locomo")
    args = ("lexical", [1, 2], [0, 1], "memory://", 0, ["vector", "lexical", "hybrid"])
    plain = await run_coverage(folder, *args)
    first = await run_coverage(folder, *args, cache_dir=tmp_path / "cache")
    second = await run_coverage(folder, *args, cache_dir=tmp_path / "cache")
    keys = ("mode", "top_k", "message_range", "questions", "coverage", "mean_messages_returned")
    assert [[row[k] for k in keys] for row in first] == [[row[k] for k in keys] for row in plain]
    assert [[row[k] for k in keys] for row in second] == [[row[k] for k in keys] for row in plain]
    assert {row["embedded_uncached"] for row in plain} == {None}
    assert {row["embedded_uncached"] for row in first + second} == {0}
    assert len(list((tmp_path / "cache").iterdir())) == 2
