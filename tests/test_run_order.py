"""The repository's conftest.py runs the heaviest tests first (so that the
two pytest-xdist workers of the README's test command finish together),
keeping every other test in collection order."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import ModuleType

from memory_core_conformance.plugin import MARKERS

ROOT = Path(__file__).resolve().parents[1]


def _root_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_repository_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Item:
    """A collected test as the hook sees it: a name and its markers."""

    def __init__(self, name: str, *markers: str) -> None:
        self.name = name
        self.markers = markers

    def get_closest_marker(self, name: str) -> object | None:
        return object() if name in self.markers else None


def test_heavy_tests_run_first_and_the_rest_keep_their_order() -> None:
    items = [
        _Item("a"),
        _Item("property", "conformance", "conformance_property"),
        _Item("b"),
        _Item("machine", "conformance", "conformance_stateful"),
        _Item("c", "conformance"),
        _Item("kills", "heavy"),
        _Item("property-2", "conformance_property"),
        _Item("d"),
    ]
    _root_conftest().pytest_collection_modifyitems(items)
    assert [item.name for item in items] == ["machine", "kills", "property", "property-2", "a", "b", "c", "d"]


def test_the_ranked_markers_are_registered() -> None:
    """A renamed marker would silently stop the ordering: each ranked marker
    is one the conformance plugin or pyproject.toml registers."""
    registered = {entry.split("(")[0] for entry in MARKERS}
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    registered |= {entry.split(":")[0] for entry in config["tool"]["pytest"]["ini_options"]["markers"]}
    assert set(_root_conftest().RANKS) <= registered
