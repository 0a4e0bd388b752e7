"""Where the tests find the LoCoMo data set, and the one reason every LoCoMo
test gives when it skips: ``MEMORY_CORE_LOCOMO`` (a ``LOCOMO_DIR`` folder or
the data set's ``locomo10.json``), else ``shared/data/locomo10`` in the
folder that holds the clone (``../shared/data/locomo10`` from the clone's
root; the README's "The LoCoMo data" says the same)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["LOCOMO", "LOCOMO_DEFAULT", "LOCOMO_SKIP", "needs_locomo"]

LOCOMO_DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo10"
"""The default location: ``../shared/data/locomo10`` from the clone's root."""

LOCOMO = Path(os.environ.get("MEMORY_CORE_LOCOMO") or LOCOMO_DEFAULT)
"""The LoCoMo data the tests read."""

LOCOMO_SKIP = (
    f"LoCoMo data not found at {LOCOMO}: set MEMORY_CORE_LOCOMO to a LoCoMo folder or locomo10.json, "
    f"or put the folder at ../shared/data/locomo10 from the clone ({LOCOMO_DEFAULT})"
)
"""Why a LoCoMo test skips: both ways to give it the data."""

needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason=LOCOMO_SKIP)
"""Mark for a test that reads :data:`LOCOMO`."""
