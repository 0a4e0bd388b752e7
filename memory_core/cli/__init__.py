"""The ``memory-core`` command line: the host (:mod:`memory_core.cli.host`),
which finds its subcommands through the entry-point group ``memory_core.cli``,
and the core's own command, ``demo`` (:mod:`memory_core.cli.demo`, with the
LoCoMo loader :mod:`memory_core.cli.locomo` and the shipped sample).

``app`` is built on first access (discovery imports the command modules of
other distributions, which themselves import :mod:`memory_core.cli.host`).
"""

from __future__ import annotations

from typing import Any

from memory_core.cli.host import build_app, main

__all__ = ["app", "build_app", "main"]

_app: list[Any] = []


def __getattr__(name: str) -> Any:
    """``app``: the typer app with every installed command (built once)."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _app:
        _app.append(build_app())
    return _app[0]
