"""Every command over a server nothing answers (issue 26): one error line
naming the store, within the bound the URL sets or the adapter's documented
default, never a silent wait. Before, MongoDB's added ``timeoutMS`` (60 s)
replaced the URL's ``serverSelectionTimeoutMS`` in PyMongo, so ``memory-core
prune 'mongodb://localhost:1/db?serverSelectionTimeoutMS=500'`` printed
nothing for a minute. Nothing listens on port 1; the subprocess timeout is
a hang guard, not a speed target."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
from pathlib import Path

import pytest

from memory_core import Memory
from tests.cli_run import cli

HANG_GUARD = 45.0
"""Seconds a command may take before it counts as hanging: several times
the bounds at stake (0.5 s from the URL, 5 s by default), for a loaded machine."""

SERVERS = [
    pytest.param(url, marks=pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=f"no {module}"))
    for url, module in [
        ("mongodb://localhost:1/db?serverSelectionTimeoutMS=500", "memory_core_mongodb"),
        ("mongodb://127.0.0.1:1/db", "memory_core_mongodb"),  # no bound in the URL: FIRST_CONTACT_MS
        ("postgresql://postgres@127.0.0.1:1/test", "memory_core_postgres"),
        ("redis://127.0.0.1:1/0", "memory_core_redis"),
    ]
]


def _export(tmp: Path) -> Path:
    """An export of a SQLite store holding one thread (the input of ``import``)."""
    pytest.importorskip("memory_core_sqlite")
    source = f"sqlite:///{tmp / 'source.db'}"

    async def seed() -> None:
        async with await Memory.open(source) as memory:
            await memory.create_thread("r1", thread_id="t1")

    asyncio.run(seed())
    path = tmp / "export.jsonl"
    done = cli("export", source, "-o", str(path))
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize("url", SERVERS)
def test_every_command_ends_with_one_error_line_when_the_server_does_not_answer(url: str, tmp_path: Path) -> None:
    commands = [
        ["prune", url, "--older-than", "30d"],
        ["export", url],
        ["erase", url, "--resource", "r1", "--yes"],
        ["copy", url, f"sqlite:///{tmp_path / 'copy.db'}"],
        ["import", url, "-i", str(_export(tmp_path))],
    ]
    for args in commands:
        try:
            done = cli(*args, timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            pytest.fail(f"memory-core {' '.join(args)} still ran after {HANG_GUARD} s, printing nothing")
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1, (args, done.stderr)
        address = url.split("//")[1].split("/")[0]  # the line names the server as the URL gave it
        assert lines[0].startswith("error: ") and address in lines[0], (args, lines)
        assert done.stdout == "", (args, done.stdout)
