"""The mutation script reports a drawn mutant whose code does not compile as
incompetent instead of counting its failed test run as a kill."""

from __future__ import annotations

import pytest
from memory_core_conformance.mutation import compiles, mutated_source

pytest.importorskip("cosmic_ray")

_SOURCE = """def merge(a, b, n):
    return {**a, **b}, n == 1
"""


def test_an_unpacking_made_a_binary_operator_does_not_compile() -> None:
    mutant = mutated_source(_SOURCE, "core/ReplaceBinaryOperator_Pow_RShift", 0)
    assert mutant is not None and "{>>a, **b}" in mutant
    assert not compiles(mutant)


def test_an_ordinary_mutant_compiles() -> None:
    mutant = mutated_source(_SOURCE, "core/ReplaceComparisonOperator_Eq_NotEq", 0)
    assert mutant is not None and "n != 1" in mutant
    assert compiles(mutant)


def test_no_such_occurrence_is_none() -> None:
    assert mutated_source(_SOURCE, "core/ReplaceComparisonOperator_Eq_NotEq", 5) is None
