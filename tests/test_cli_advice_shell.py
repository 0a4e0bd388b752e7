"""Advice the commands print runs as printed when pasted into a shell.

Every line that names a command to run next quotes each argument a POSIX
shell would split or read (a SQLite URL's ``?timeout=5&synchronous=normal``:
unquoted, ``&`` sent half the command to the background and ran
``synchronous=normal`` as a command), and names the real URLs and options,
a placeholder in capitals (``VECTOR_URL``) only where the value cannot be
known. Each test runs the command through a real process, takes the advice
from its stderr, substitutes the placeholders, and runs it with ``bash -c``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import Memory, Thread, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder
from tests.cli_run import cli, cli_environment

pytest.importorskip("memory_core_sqlite")
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)

OLD = datetime(2025, 1, 1, tzinfo=UTC)
QUERY = "?timeout=5&synchronous=normal"


def _url(path: Path) -> str:
    """A SQLite URL whose query a shell would split at ``&``."""
    return f"sqlite:///{path}{QUERY}"


def _seed(url: str, vectors: str | None = None) -> None:
    """Resource r1 (thread t1) with three messages, indexed into ``vectors`` when given."""

    async def seed() -> None:
        storage = await connect(url)
        messages = [
            {"id": f"m{i}", "thread_id": "t1", "role": "user", "content": f"words {i}", "created_at": OLD}
            for i in range(3)
        ]
        if vectors is None:
            async with storage:
                await storage.save_thread(Thread("t1", "r1", created_at=OLD))
                await storage.save_messages(messages)
            return
        async with Memory(storage, await connect_vector(vectors), LexicalHashEmbedder()) as memory:
            await storage.save_thread(Thread("t1", "r1", created_at=OLD))
            await memory.save_messages(messages)

    asyncio.run(seed())


def _advice(stderr: str) -> str:
    """The command the last ``memory-core `` of ``stderr`` names, without
    the note in brackets that may follow it (what a placeholder stands for)."""
    start = stderr.rindex("memory-core ")
    return stderr[start:].splitlines()[0].split(" (", 1)[0]


def _bash(advice: str, placeholders: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``advice`` run by ``bash -c`` (its ``memory-core`` this checkout's,
    ``python -m memory_core``), each placeholder replaced by a quoted value."""
    for name, value in placeholders.items():
        advice = re.sub(rf"\b{name}\b", shlex.quote(value), advice)
    command = advice.replace("memory-core ", f"{shlex.quote(sys.executable)} -m memory_core ", 1)
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, env=cli_environment(), check=False
    )


def _runs(done: subprocess.CompletedProcess[str]) -> None:
    """The advice parsed and ran: exit 0, not a usage error (2) nor a shell's 'command not found' (127)."""
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    assert "command not found" not in done.stderr and "Usage:" not in done.stderr, done.stderr


def test_import_advice_builds_the_index_as_printed(tmp_path: Path) -> None:
    """Trial: ``import`` without ``--vector`` printed ``memory-core reindex
    sqlite:///amp.db?timeout=5&synchronous=normal --new --vector VECTOR_URL``
    unquoted; pasted, bash backgrounded half of it and ran the rest as a command."""
    source = _url(tmp_path / "source.db")
    _seed(source)
    exported = tmp_path / "export.jsonl"
    assert cli("export", source, "-o", str(exported)).returncode == 0
    url = _url(tmp_path / "amp.db")
    done = cli("import", url, "-i", str(exported))
    assert done.returncode == 0, done.stderr
    advice = _advice(done.stderr)
    assert shlex.quote(url) in advice and "VECTOR_URL" in advice, advice
    assert "(VECTOR_URL: " in done.stderr, done.stderr
    vectors = f"qdrant+path:///{tmp_path / 'vectors'}"
    _runs(_bash(advice, {"VECTOR_URL": vectors}, tmp_path))
    assert cli("check-index", url, "--vector", vectors).returncode == 0


def test_copy_advice_builds_the_index_as_printed(tmp_path: Path) -> None:
    """The same line after ``copy``, naming the destination."""
    source, destination = _url(tmp_path / "source.db"), _url(tmp_path / "amp.db")
    _seed(source)
    done = cli("copy", source, destination)
    assert done.returncode == 0, done.stderr
    advice = _advice(done.stderr)
    assert shlex.quote(destination) in advice, advice
    vectors = f"qdrant+path:///{tmp_path / 'vectors'}"
    _runs(_bash(advice, {"VECTOR_URL": vectors}, tmp_path))
    assert cli("check-index", destination, "--vector", vectors).returncode == 0


def test_check_index_of_a_missing_index_names_the_whole_reindex_new(tmp_path: Path) -> None:
    """Trial: ``check-index`` with a ``--vector`` naming no index ended "build
    one with memory-core reindex --new": no URL, no ``--vector``; pasted, it
    failed with ``Missing argument 'URL'``. Now the line names both, as given."""
    url = _url(tmp_path / "amp.db")
    _seed(url)
    vectors = f"qdrant+path:///{tmp_path / 'new vectors'}"
    refused = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert refused.returncode == 2, refused.stderr
    advice = _advice(refused.stderr)
    assert advice == shlex.join(["memory-core", "reindex", url, "--new", "--vector", vectors, "--embedder", "lexical"])
    _runs(_bash(advice, {}, tmp_path))
    assert cli("check-index", url, "--vector", vectors).returncode == 0


def test_check_index_repair_and_erase_note_run_as_printed(tmp_path: Path) -> None:
    """The repair ``check-index`` names (``reindex``) and the note of an
    ``erase`` without ``--vector`` (``erase --vector VECTOR_URL``) run as
    printed on such a URL."""
    url, vectors = _url(tmp_path / "amp.db"), f"qdrant+path:///{tmp_path / 'vectors'}"
    _seed(url, vectors)

    async def behind() -> None:
        async with await connect(url) as storage:
            await storage.save_messages(
                [{"id": "late", "thread_id": "t1", "role": "user", "content": "late words", "created_at": OLD}]
            )

    asyncio.run(behind())
    checked = cli("check-index", url, "--vector", vectors)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    _runs(_bash(_advice(checked.stderr), {}, tmp_path))
    assert cli("check-index", url, "--vector", vectors).returncode == 0
    erased = cli("erase", url, "--resource", "r1", "--yes")
    assert erased.returncode == 0, erased.stderr
    assert "(VECTOR_URL: " in erased.stderr, erased.stderr
    _runs(_bash(_advice(erased.stderr), {"VECTOR_URL": vectors}, tmp_path))
    assert cli("check-index", url, "--vector", vectors).returncode == 0
