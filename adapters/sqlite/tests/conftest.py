"""Fixtures for the SQLite adapter's own tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (aiosqlite's loop)."""
    return "asyncio"
