"""A re-run of ``memory-core import`` or ``copy`` after the destination was
written to (a prune, a new message) refuses, naming the thread and what
differs, and changes nothing (docs/operators.md: a thread counts as the
file's only when it equals the record, ``updated_at`` included), through the
real command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from memory_core import Message, Storage, connect
from tests.cli_run import cli
from tests.transfer.stores import fill, snapshot

_RESOURCE = "res-3-0-ü"


def _on(url: str, work: Callable[[Storage], Coroutine[Any, Any, Any]]) -> Any:
    async def run() -> Any:
        storage = await connect(url)
        try:
            return await work(storage)
        finally:
            await storage.close()

    return asyncio.run(run())


def _imported(tmp_path: Path) -> tuple[Path, str]:
    """An export of a seeded store, imported into a new SQLite store."""
    source = f"sqlite:///{tmp_path / 'src.db'}"
    _on(source, lambda storage: fill(storage, 3, resources=3, messages=50))
    export = tmp_path / "src.jsonl"
    assert cli("export", source, "-o", str(export)).returncode == 0
    destination = f"sqlite:///{tmp_path / 'x.db'}"
    first = cli("import", destination, "-i", str(export))
    assert first.returncode == 0, first.stderr
    return export, destination


async def _append(storage: Storage) -> None:
    await storage.save_messages([Message("after-cutover", "th-3-0-0", "user", "new", resource_id=_RESOURCE)])


def _prune(destination: str) -> None:
    pruned = cli("prune", destination, "--older-than", "1s", "--resource", _RESOURCE)
    assert pruned.returncode == 0, pruned.stderr


@pytest.mark.parametrize("write", ["prune", "append"])
def test_a_reimport_after_a_destination_write_refuses_and_writes_nothing(write: str, tmp_path: Path) -> None:
    export, destination = _imported(tmp_path)
    if write == "prune":
        _prune(destination)
    else:
        _on(destination, _append)
    before = _on(destination, snapshot)
    again = cli("import", destination, "-i", str(export))
    assert again.returncode != 0, again.stderr
    [line] = again.stderr.strip().splitlines()
    assert "thread 'th-3-0-" in line and "updated_at: destination" in line, line
    assert "a write after the export changed it" in line, line
    assert _on(destination, snapshot) == before


def test_a_copy_into_a_pruned_copy_refuses_and_writes_nothing(tmp_path: Path) -> None:
    _, destination = _imported(tmp_path)
    _prune(destination)
    before = _on(destination, snapshot)
    again = cli("copy", f"sqlite:///{tmp_path / 'src.db'}", destination)
    assert again.returncode != 0, again.stderr
    assert "thread 'th-3-0-" in again.stderr and "a write after the export changed it" in again.stderr
    assert _on(destination, snapshot) == before


def test_a_reimport_of_an_unchanged_destination_skips_everything(tmp_path: Path) -> None:
    export, destination = _imported(tmp_path)
    before = _on(destination, snapshot)
    again = cli("import", destination, "-i", str(export))
    assert again.returncode == 0, again.stderr
    counts = json.loads(export.read_text().splitlines()[-1])["counts"]
    assert f"{counts['messages']} messages" in again.stderr.split("already there")[1], again.stderr
    assert _on(destination, snapshot) == before
