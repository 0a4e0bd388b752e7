"""Shared fixtures for the project's own tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the backend every adapter targets)."""
    return "asyncio"
