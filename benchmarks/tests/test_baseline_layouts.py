"""The raw-driver baselines repeat their adapter's layout by hand (statements,
index names, the R-BUMP expression); these tests fail when the adapter's
layout and the baseline's drift apart, so a baseline never times other work
than the adapter does."""

from __future__ import annotations

import importlib
from importlib import resources
from types import ModuleType
from typing import Any

import pytest

PROBE_US = 1_700_000_000_000_000
"""A sample ``now`` (µs) at which mirrored functions are compared."""


def _module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"{name} needs {exc.name}, which is not installed")


def _value(thing: Any) -> Any:
    return thing(PROBE_US) if callable(thing) else thing


@pytest.mark.parametrize("baseline", ["raw_sqlite", "raw_mongo", "raw_postgres"])
def test_baseline_mirrors_the_adapter_layout(baseline: str) -> None:
    module = _module(f"memory_core_bench.baselines.{baseline}")
    assert module.MIRRORED, f"{baseline} names no adapter layout it mirrors"
    for ours, theirs in module.MIRRORED.items():
        adapter_module, attribute = theirs.split(":")
        adapter = _module(adapter_module)
        assert _value(getattr(module, ours)) == _value(getattr(adapter, attribute)), (
            f"{baseline}.{ours} differs from {theirs}: update the baseline with the adapter"
        )


def test_redis_baseline_bumps_threads_as_the_adapter_script_does() -> None:
    module = _module("memory_core_bench.baselines.raw_redis")
    # the writers' helpers (the thread bump among them) live in writes.lua
    writes = resources.files("memory_core_redis").joinpath("lua/writes.lua").read_text(encoding="utf-8")
    assert module._BUMP_LUA in writes
    assert module._BUMP_LUA in module._SAVE


def test_the_sqlite_bump_saturates_at_the_end_of_r_time() -> None:
    """The drift this check was made for: the baseline's bump had no upper bound."""
    module = _module("memory_core_bench.baselines.raw_sqlite")
    assert "min(max(?, updated_at + 1), ?)" in module._BUMP
