"""The mutation script leaves mutants inside unevaluated annotations out of its draw."""

from __future__ import annotations

from memory_core_conformance.mutation import annotation_spans

_FUTURE = """from __future__ import annotations

x: int | None = None


def f(a: str | None, b=1 | 2) -> dict[str, int] | None:
    return a or b
"""


def test_annotations_under_the_future_import_are_spans() -> None:
    spans = annotation_spans(_FUTURE)
    lines = _FUTURE.splitlines()
    texts = sorted(lines[start[0] - 1][start[1] : end[1]] for start, end in spans)
    assert texts == ["dict[str, int] | None", "int | None", "str | None"]


def test_a_default_value_is_no_annotation() -> None:
    spans = annotation_spans(_FUTURE)
    default = (6, _FUTURE.splitlines()[5].index("1 | 2") + 2)  # the ``|`` of ``b=1 | 2``
    assert not any(low <= default < high for low, high in spans)


def test_evaluated_annotations_are_kept() -> None:
    assert annotation_spans(_FUTURE.split("\n", 1)[1]) == []
