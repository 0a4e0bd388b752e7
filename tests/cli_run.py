"""Run ``memory-core`` as a real process (``python -m memory_core``), with
this interpreter and the test run's environment (its ``PYTHONPATH``), for
tests of what a user sees: exit codes, stdout and stderr apart, signals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["cli", "cli_process"]


def cli_process(*args: str, cwd: Path | None = None, **popen: Any) -> subprocess.Popen[bytes]:
    """Start ``memory-core ARGS`` (not waited for)."""
    return subprocess.Popen([sys.executable, "-m", "memory_core", *args], cwd=cwd, env=dict(os.environ), **popen)


def cli(
    *args: str, cwd: Path | None = None, input: bytes | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``memory-core ARGS`` to its end; stdout and stderr as text, apart."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_core", *args],
        cwd=cwd,
        env=dict(os.environ),
        input=input,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )
