"""pytest plugin: ADK's session-service tests on ``MemoryCoreSessionService``.

Loaded with ``-p memory_core_conformance.integrations.framework_suites.google_adk``
in a checkout of github.com/google/adk-python, it makes the test module's
``get_session_service`` answer the ``DATABASE`` service type with a
``MemoryCoreSessionService`` over a memory-core SQLite store (in the test's
``tmp_path`` when it has one); run with ``-k DATABASE`` so only those cases
run. :data:`REFERENCE_INTERNAL` lists the cases that test ADK's own
services' internals.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from memory_core.integrations.google_adk import MemoryCoreSessionService
from memory_core.memory import Memory
from memory_core.registry import build_storage

__all__ = ["REFERENCE_INTERNAL", "SUITE_FILES", "seam_service"]

SUITE_FILES = (PurePosixPath("tests", "unittests", "sessions", "test_session_service.py").as_posix(),)
"""ADK's session-service test file (path inside its repository)."""

REFERENCE_INTERNAL: dict[str, str] = {}
"""ADK test function -> why it tests ADK's own services (none known among
the ``DATABASE`` cases: every one goes through the public service API)."""


def seam_service(tmp_path: Path | None = None) -> MemoryCoreSessionService:
    """A ``MemoryCoreSessionService`` over a fresh SQLite store (a file in
    ``tmp_path``, else in a new temporary folder)."""
    folder = Path(tmp_path) if tmp_path is not None else Path(tempfile.mkdtemp(prefix="mc-adk-"))
    return MemoryCoreSessionService(Memory(build_storage(f"sqlite:///{folder.resolve() / 'memory-core.db'}")))


def _substitute(original: Callable[..., Any], database: Any) -> Callable[..., Any]:
    def get_session_service(service_type: Any = None, tmp_path: Path | None = None, *args: Any, **kwargs: Any) -> Any:
        if service_type == database:
            return seam_service(tmp_path)
        return original(service_type, tmp_path, *args, **kwargs) if tmp_path is not None else original(service_type)

    return get_session_service


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Swap the ``DATABASE`` service of every collected module that has ADK's
    ``get_session_service`` / ``SessionServiceType`` for the seam."""
    for module in {item.module for item in items if isinstance(item, pytest.Function) and item.module is not None}:
        kinds = getattr(module, "SessionServiceType", None)
        original = getattr(module, "get_session_service", None)
        if kinds is not None and original is not None and hasattr(kinds, "DATABASE"):
            module.get_session_service = _substitute(original, kinds.DATABASE)
