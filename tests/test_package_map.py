"""The package docstring is a newcomer's map: it names every public module."""

from __future__ import annotations

import pkgutil

import memory_core


def test_package_docstring_names_every_public_module() -> None:
    doc = memory_core.__doc__ or ""
    modules = [m.name for m in pkgutil.iter_modules(memory_core.__path__) if not m.name.startswith("_")]
    assert len(modules) > 20
    unnamed = [name for name in modules if f":mod:`~memory_core.{name}`" not in doc]
    assert unnamed == []
