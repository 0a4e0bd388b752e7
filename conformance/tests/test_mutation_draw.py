"""The mutation script's draw depends on the seed and the mutations only,
not on the order Cosmic Ray lists its work items in (its job ids are
random, and two ``init`` runs of the same sources list them differently:
the same seed drew a different sample each run)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
from memory_core_conformance.mutation import drawn

work_item: Any = pytest.importorskip("cosmic_ray.work_item")


def _items() -> list[Any]:
    """90 single-mutation work items over three modules, with random job ids."""
    return [
        work_item.WorkItem.single(
            uuid.uuid4().hex,
            work_item.MutationSpec(f"pkg/m{module}.py", "core/AddNot", occurrence, (line, 4), (line, 9)),
        )
        for module in range(3)
        for occurrence, line in enumerate(range(10, 40))
    ]


def _mutations(items: list[Any], ids: set[str]) -> set[tuple[str, int]]:
    return {(str(i.mutations[0].module_path), i.mutations[0].occurrence) for i in items if i.job_id in ids}


def test_the_same_seed_draws_the_same_mutants_whatever_the_listing_order() -> None:
    items = _items()
    first = _mutations(items, drawn(items, 10, 28))
    assert len(first) == 10
    for shuffle in range(5):
        listed = list(items)
        random.Random(shuffle).shuffle(listed)
        assert _mutations(items, drawn(listed, 10, 28)) == first


def test_another_seed_draws_others_and_a_small_population_whole() -> None:
    items = _items()
    assert _mutations(items, drawn(items, 10, 28)) != _mutations(items, drawn(items, 10, 29))
    assert len(drawn(items[:4], 10, 28)) == 4
