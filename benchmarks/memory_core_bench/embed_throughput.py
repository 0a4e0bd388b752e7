"""Embedder throughput on LoCoMo turns, and agreement with the reference.

For each embedder name (``get_embedder``) it embeds N turns ("Speaker:
text") once as batches and once one text per call, and prints texts/s for
both; the model's load time is excluded (one warm-up call first). With
``minilm`` and ``minilm-torch`` both given, it also prints the cosine of the
two embeddings of every turn (min and mean).

Run::

    python -m memory_core_bench.embed_throughput LOCOMO_DIR --embedder minilm --embedder minilm-torch
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from memory_core.cli.locomo import LOCOMO_DIR_HELP, load_dir, require_locomo_dir
from memory_core.embedders import get_embedder

__all__ = ["main"]


def turns(folder: Path, count: int) -> list[str]:
    """``count`` turns spread over every conversation, as ``"Speaker: text"``."""
    texts = [
        f"{m.metadata.get('speaker', '')}: {m.content}"
        for conversation in load_dir(folder)
        for m in conversation.messages
        if isinstance(m.content, str)
    ]
    return texts[:: max(1, len(texts) // count)][:count]


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m memory_core_bench.embed_throughput LOCOMO_DIR``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", type=require_locomo_dir, help=f"LOCOMO_DIR: {LOCOMO_DIR_HELP}")
    parser.add_argument("--embedder", action="append", default=None, help="lexical | minilm | minilm-torch")
    parser.add_argument("--texts", type=int, default=1000, help="turns to embed as batches")
    parser.add_argument("--single", type=int, default=200, help="turns to embed one per call")
    args = parser.parse_args(argv)
    sample = turns(args.locomo, args.texts)
    vectors: dict[str, np.ndarray] = {}
    for name in args.embedder or ["minilm"]:
        embedder = get_embedder(name)
        embed = getattr(embedder, "embed_sync", None)
        if embed is None:
            print(f"{name}: no embed_sync, skipped", file=sys.stderr)
            continue
        embed(sample[:2])  # load the model
        started = time.perf_counter()
        vectors[name] = embed(sample)
        batch = len(sample) / (time.perf_counter() - started)
        started = time.perf_counter()
        for text in sample[: args.single]:
            embed([text])
        single = args.single / (time.perf_counter() - started)
        print(f"{name}: batch {batch:,.0f} texts/s ({len(sample)} turns), single {single:,.0f} texts/s")
    if "minilm" in vectors and "minilm-torch" in vectors:
        cosines = np.sum(vectors["minilm"] * vectors["minilm-torch"], axis=1)
        print(f"cosine minilm vs minilm-torch: min {cosines.min():.6f}, mean {cosines.mean():.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
