"""A command starts without the test tools: the ``check`` command's
registration (an entry point of memory-core-conformance) must not import
pytest or Hypothesis, or every command would take seconds to start and a
Ctrl-C in that time would print a traceback instead of "interrupted"."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import atexit, runpy, sys
sys.argv = ["memory-core", "export", "--help"]
# The command host ends the process itself (its atexit handlers run first).
atexit.register(lambda: print(sorted(name for name in ("pytest", "_pytest", "hypothesis") if name in sys.modules)))
runpy.run_module("memory_core", run_name="__main__")
"""


def test_a_command_starts_without_importing_pytest_or_hypothesis() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_conformance_package_still_exports_its_names_on_first_use() -> None:
    import memory_core_conformance as conformance

    assert conformance.StorageConformance.__name__ == "StorageConformance"
    assert conformance.strategies.__name__ == "memory_core_conformance.strategies"
    assert set(conformance.__all__) <= set(dir(conformance)) | set(conformance._HOMES)
