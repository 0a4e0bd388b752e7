"""Progress of long commands when stderr is not a terminal (issue 26): an
operator piping ``memory-core import``/``copy``/``export``/``prune`` to a log saw
nothing for minutes (rich draws its bar only on a terminal). Now plain
lines, one every few seconds (``MEMORY_CORE_PROGRESS_SECONDS``; 0 here, so
every update prints), through a real process with stderr a pipe."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import Thread, connect
from memory_core.cli.progress import PLAIN_SECONDS_VARIABLE
from tests.cli_run import _environment

pytest.importorskip("memory_core_sqlite")

OLD = datetime(2025, 1, 1, tzinfo=UTC)
COUNT = 1200


def _run(*args: str, seconds: str) -> subprocess.CompletedProcess[str]:
    environment = {**_environment(), PLAIN_SECONDS_VARIABLE: seconds}
    return subprocess.run(
        [sys.executable, "-m", "memory_core", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _seed(db: Path) -> str:
    url = f"sqlite:///{db}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1", created_at=OLD))
            rows = [
                {"id": f"m{i:05}", "thread_id": "t1", "role": "user", "content": f"turn {i}", "created_at": OLD}
                for i in range(COUNT)
            ]
            await storage.save_messages(rows)

    asyncio.run(seed())
    return url


def _progress_lines(stderr: str, label: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"{label}: ")]


def test_long_commands_print_plain_progress_lines_when_stderr_is_a_pipe(tmp_path: Path) -> None:
    source = _seed(tmp_path / "source.db")
    export_file = tmp_path / "export.jsonl"
    exported = _run("export", source, "-o", str(export_file), seconds="0")
    assert exported.returncode == 0, exported.stderr
    lines = _progress_lines(exported.stderr, "export")
    assert len(lines) >= 2 and lines[-1].endswith(" s") and "done in" in lines[-1], exported.stderr
    assert re.fullmatch(r"export: [\d,]+ records, [\d,]+/s, \d+ s", lines[0]), lines[0]
    assert "\x1b[" not in exported.stderr and "━" not in exported.stderr  # plain text, no bar

    imported = _run("import", f"sqlite:///{tmp_path / 'new.db'}", "-i", str(export_file), seconds="0")
    assert imported.returncode == 0, imported.stderr
    lines = _progress_lines(imported.stderr, "import")
    assert lines, imported.stderr
    assert lines[-1].startswith(f"import: {COUNT:,} of {COUNT:,} messages (100%), done in"), lines[-1]

    copied = _run("copy", source, f"sqlite:///{tmp_path / 'copy.db'}", seconds="0")
    assert copied.returncode == 0, copied.stderr
    lines = _progress_lines(copied.stderr, "copy")
    assert lines and lines[-1].startswith(f"copy: {COUNT:,} of {COUNT:,} messages (100%), done in"), copied.stderr


def test_a_short_command_prints_no_progress_line(tmp_path: Path) -> None:
    """Under the default interval (seconds), a run that ends first stays quiet."""
    source = _seed(tmp_path / "source.db")
    exported = _run("export", source, "-o", str(tmp_path / "e.jsonl"), seconds="3600")
    assert exported.returncode == 0, exported.stderr
    assert _progress_lines(exported.stderr, "export") == [], exported.stderr


def test_prune_prints_plain_progress_lines_when_stderr_is_a_pipe(tmp_path: Path) -> None:
    url = _seed(tmp_path / "old.db")  # every message created in 2025: all older than 30 days
    pruned = _run("prune", url, "--older-than", "30d", "--batch-size", "100", seconds="0")
    assert pruned.returncode == 0, pruned.stderr
    lines = _progress_lines(pruned.stderr, "prune")
    assert lines and re.fullmatch(r"prune: 1 deletes, [\d,]+/s, \d+ s", lines[0]), pruned.stderr
    assert lines[-1].startswith(f"prune: {COUNT // 100} deletes, done in"), lines[-1]
    assert pruned.stdout.startswith(f"removed {COUNT:,} messages".replace(",", "")), pruned.stdout
