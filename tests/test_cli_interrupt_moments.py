"""Ctrl-C at any moment of a ``memory-core`` command (issue 26, a fresh
user's trial), through a real process: from its first milliseconds on it
ends with one ``interrupted: ...`` line and exit 130 (or, already done, as
it would have), never a traceback from memory-core's code; and an
interrupted command leaves the store's folder as it found it. Before, a
Ctrl-C while ``memory_core.launch`` imported :mod:`signal` (which loads
:mod:`enum`: milliseconds) was a traceback, and one while ``check-index``
or ``reindex`` opened the vector store left empty ``-wal``/``-shm`` files
beside the SQLite database (``Memory.__aenter__`` did not close the
storage it had opened)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from memory_core import Thread, connect
from tests.cli_run import cli, cli_process, interrupted, script

pytest.importorskip("memory_core_sqlite")

_DELAYS = [step / 200 for step in range(21)] + [0.15, 0.2, 0.3]
"""Seconds between the start and the SIGINT: every 5 ms over the first
100 ms (the interpreter's start, then memory-core's imports), then later."""

_OURS = re.compile(r'File "[^"]*/(memory_core|typer|click|rich)/')
"""A traceback frame in code past the interpreter's own start (memory-core's, its command line's)."""


def _seed(db: Path) -> str:
    url = f"sqlite:///{db}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1"))
            rows = [{"id": f"m{i}", "thread_id": "t1", "role": "user", "content": f"hello {i}"} for i in range(20)]
            await storage.save_messages(rows)

    asyncio.run(seed())
    return url


def _acceptable(code: int, said: str) -> bool:
    """How an interrupted command may end: killed by the signal with nothing
    said (it came before the interpreter handles SIGINT; a shell reports
    130), the one ``interrupted:`` line and exit 130, done (0), or a
    traceback wholly inside the interpreter's own start (``site``, pip's
    script importing ``re``, finding and compiling memory-core's
    ``__init__``), which no package can reach: no frame of its code; or
    the interpreter's own exit 1 there ("KeyboardInterrupt", "Fatal Python
    error: init_import_site", "init_sys_streams"), as the operators guide says."""
    if code == -signal.SIGINT and said == "":
        return True
    if code == 130 and re.fullmatch(r"interrupted: [^\n]*\n", said) is not None:
        return True
    if code == 0 and "Traceback" not in said:
        return True
    if code == 1 and ("KeyboardInterrupt" in said or "Fatal Python error" in said) and "interrupted:" not in said:
        return _OURS.search(said) is None  # the interpreter's own start (site): exit 1, its own words
    return "Traceback" in said and _OURS.search(said) is None


@pytest.mark.parametrize("command", [["export"], ["prune", "--older-than", "30d", "--dry-run"]])
def test_a_ctrl_c_in_the_first_moments_is_one_line_and_exit_130(command: list[str], tmp_path: Path) -> None:
    url = _seed(tmp_path / "agent.db")
    seen = []
    for delay in _DELAYS:
        process = cli_process(
            command[0],
            url,
            *command[1:],
            as_script=script() is not None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _, err = interrupted(process, after=delay)
        seen.append((delay, process.returncode, err.decode("utf-8", "replace")))
    wrong = [(delay, code, said[-600:]) for delay, code, said in seen if not _acceptable(code, said)]
    assert wrong == [], wrong
    assert any(code == 130 for _, code, _ in seen), seen  # some SIGINT landed in memory-core's own start


def test_a_process_started_with_sigint_ignored_keeps_it_ignored(tmp_path: Path) -> None:
    """A background job (``cmd &`` in a script) has SIGINT ignored: by Unix
    convention it runs on, so the export finishes (exit 0). Before, the
    command line's start-up handler replaced the ignore and stopped it."""
    url = _seed(tmp_path / "agent.db")
    process = cli_process(
        "export",
        url,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    out, err = interrupted(process, after=0.1, repeat=5)
    assert process.returncode == 0, err.decode()
    assert out.decode().count("\n") == 23, out  # header, the thread, 20 messages, the trailer
    assert "interrupted" not in err.decode()


@pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)
@pytest.mark.parametrize("command", ["check-index", "reindex"])
def test_a_ctrl_c_while_an_index_command_opens_its_stores_leaves_no_file(command: str, tmp_path: Path) -> None:
    """SIGINT once the SQLite store is open (its ``-wal`` file exists),
    while the vector store loads and after: the folder holds what it held
    before the command (the vector folder's inside is Qdrant's: its engine
    compacts segments on load, interrupted or not)."""
    store = tmp_path / "store"
    store.mkdir()
    db = store / "agent.db"
    source = _seed(tmp_path / "source.db")
    export = tmp_path / "in.jsonl"
    exported = cli("export", source)
    assert exported.returncode == 0, exported.stderr
    export.write_text(exported.stdout)
    url, vector = f"sqlite:///{db}", f"qdrant+path:///{store / 'vectors'}"
    imported = cli("import", url, "-i", str(export), "--vector", vector, "--embedder", "lexical")
    assert imported.returncode == 0, imported.stderr
    before = sorted(os.listdir(store))
    for extra in (0.0, 0.0, 0.05, 0.3):
        process = cli_process(
            command, url, "--vector", vector, "--embedder", "lexical", stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

        def opened(process: subprocess.Popen[bytes] = process, extra: float = extra) -> None:
            deadline = time.monotonic() + 120
            while not Path(f"{db}-wal").exists() and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(extra)

        _, err = interrupted(process, after=opened)
        said = err.decode()
        assert process.returncode in (0, 130), said
        assert "Traceback" not in said, said
        after = sorted(os.listdir(store))
        assert after == before, (extra, said)
