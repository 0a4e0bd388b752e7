"""A package docstring is a newcomer's map: it names every public module."""

from __future__ import annotations

import pkgutil
from types import ModuleType

import memory_core_conformance
import pytest

import memory_core


@pytest.mark.parametrize("package", [memory_core, memory_core_conformance], ids=lambda p: p.__name__)
def test_package_docstring_names_every_public_module(package: ModuleType) -> None:
    doc = package.__doc__ or ""
    modules = [m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
    assert len(modules) > 10
    unnamed = [name for name in modules if f":mod:`~{package.__name__}.{name}`" not in doc]
    assert unnamed == []
