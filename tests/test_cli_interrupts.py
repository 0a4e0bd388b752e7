"""Ctrl-C on the command line (issue 26), through a real ``memory-core``
process: exit 130 means work was left undone, so a Ctrl-C that arrives
after a command finished its work (while it prints its result, while the
process ends) changes nothing and the exit code stays 0; and a Ctrl-C at
any moment of a ``check``, the first seconds of imports included, stops it
with one line, no traceback and nothing left behind. Before, a prune
whose deletes were done exited 130 (typer's silent exit) when the Ctrl-C
came while it printed its report, and an early Ctrl-C was a traceback from
the import it cut."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import Thread, connect
from tests.cli_run import cli, cli_process, interrupted

pytest.importorskip("memory_core_sqlite")

OLD = datetime(2025, 1, 1, tzinfo=UTC)


def _old_messages(db: Path, count: int) -> str:
    url = f"sqlite:///{db}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1", created_at=OLD))
            row = {"thread_id": "t1", "role": "user", "content": "old", "created_at": OLD}
            await storage.save_messages([{**row, "id": f"m{i}"} for i in range(count)])

    asyncio.run(seed())
    return url


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is already full: a process writing to it blocks
    until the reader drains it."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        while True:
            os.write(write, b"." * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(write, True)
    return read, write


def _blocked_writing(pid: int) -> bool:
    """True while ``pid`` waits in a pipe write (Linux's ``wchan``)."""
    return "pipe_write" in Path(f"/proc/{pid}/wchan").read_text()


def _wait_until(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not Path("/proc/self/wchan").exists(), reason="needs Linux's /proc/PID/wchan")
def test_a_ctrl_c_after_the_work_is_done_exits_0(tmp_path: Path) -> None:
    url = _old_messages(tmp_path / "agent.db", 5)
    read, write = _full_pipe()
    # The report's line is the command's only write to stdout: it blocks on
    # the full pipe, after the deletes were done and the store was closed.
    process = cli_process("prune", url, "--older-than", "30d", stdout=write, stderr=subprocess.PIPE)
    os.close(write)
    try:
        assert _wait_until(lambda: _blocked_writing(process.pid), 120), "prune never reached its report"
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)  # the signal is handled (or not) before the pipe drains
        with os.fdopen(read, "rb") as reader:
            out = reader.read().lstrip(b".").decode()
        assert process.stderr is not None
        said = process.stderr.read().decode()
        assert process.wait(timeout=60) == 0, said
    finally:
        if process.poll() is None:
            process.kill()
    assert out.startswith("removed 5 messages from 1 thread"), out
    assert "interrupted:" not in said and "Traceback" not in said, said


def test_an_early_ctrl_c_stops_check_without_a_traceback(tmp_path: Path) -> None:
    """A Ctrl-C, sent here 0.5 s after the start, lands while the command
    imports (seconds on a busy machine). A process started with SIGINT
    ignored (a background job) keeps it ignored, by Unix convention:
    test_cli_interrupt_moments.py."""
    pytest.importorskip("memory_core_conformance")
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    data.mkdir()
    cwd.mkdir()
    process = cli_process(
        "check",
        f"sqlite:///{data / 'agent.db'}",
        "--new",
        "--profile",
        "quick",
        "-k",
        "c07",
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )
    out, err = interrupted(process, after=0.5)
    said = err.decode()
    assert process.returncode == 130, said
    assert "interrupted" in said and "Traceback" not in said, said
    assert said.count("\n") == 1 and said.endswith("\n"), said  # that one line only (no pytest-asyncio warning)
    assert b"CONFORMANT" not in out
    assert list(data.iterdir()) == []
    assert list(cwd.iterdir()) == []


def test_a_ctrl_c_while_the_suite_runs_is_one_line_and_exit_130(tmp_path: Path) -> None:
    """SIGINT to the ``check`` process once its suite runs (the run's
    Hypothesis folder exists, then a test's SQLite namespace file):
    stderr is the one "interrupted after N of M tests: no verdict" line.
    Before, pytest-asyncio's "asyncio_default_fixture_loop_scope is unset"
    warning (4 lines) came first on every check."""
    pytest.importorskip("memory_core_conformance")
    data, temporary = tmp_path / "data", tmp_path / "tmp"
    data.mkdir()
    temporary.mkdir()
    process = cli_process(
        "check",
        f"sqlite:///{data / 'agent.db'}",
        "--new",
        "--profile",
        "quick",
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env_extra={"TMPDIR": str(temporary)},
    )
    started = []

    def suite_runs() -> None:
        started.append(_wait_until(lambda: any(temporary.glob("memory-core-check-*")), 120))
        time.sleep(1)  # the probe's namespace comes and goes first
        started.append(_wait_until(lambda: any(data.glob("*mc_check_*")), 120))  # a test's store
        time.sleep(1)

    out, err = interrupted(process, after=suite_runs)
    said = err.decode()
    assert all(started), said
    assert process.returncode == 130, said
    # off a terminal, stderr also carries plain progress lines ("check: 1 of 284 tests ...")
    told = "".join(line for line in said.splitlines(keepends=True) if not line.startswith("check: "))
    assert re.fullmatch(r"interrupted after \d+ of (\d+|\?) tests: no verdict\n", told), said
    assert b"CONFORMANT" not in out
    assert list(data.iterdir()) == []


@pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)
def test_a_ctrl_c_while_an_import_closes_its_stores_exits_0(tmp_path: Path) -> None:
    """The import's report line comes once every record and vector is
    written, before the stores close (closing a vector store takes
    seconds); a Ctrl-C then lets the closing finish and the exit code stays
    0. Before: the line came after the closing, and a Ctrl-C during it was
    exit 130 with "resume with ..." for a finished import."""
    source = _old_messages(tmp_path / "source.db", 300)
    export = tmp_path / "in.jsonl"
    exported = cli("export", source)
    assert exported.returncode == 0, exported.stderr
    export.write_text(exported.stdout)
    url = f"sqlite:///{tmp_path / 'new.db'}"
    process = cli_process(
        "import",
        url,
        "-i",
        str(export),
        "--vector",
        f"qdrant+path:///{tmp_path / 'new.vectors'}",
        "--embedder",
        "lexical",
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    said = []
    for raw in process.stderr:
        said.append(raw.decode())
        if raw.startswith(b"imported: "):
            alive = process.poll() is None
            process.send_signal(signal.SIGINT)
            break
    said.append(process.stderr.read().decode())
    code = process.wait(timeout=120)
    text = "".join(said)
    assert alive, "the import ended before its report line could be answered with a Ctrl-C"
    assert code == 0, text
    assert "interrupted" not in text, text


def _one_thread(db: Path, content: str) -> str:
    url = f"sqlite:///{db}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1", created_at=OLD))
            await storage.save_messages([{"id": "m1", "thread_id": "t1", "role": "user", "content": content}])

    asyncio.run(seed())
    return url


@pytest.mark.parametrize("vector", [[], ["--vector", "qdrant+path:///{tmp}/new.vectors", "--embedder", "lexical"]])
def test_a_ctrl_c_right_after_an_error_keeps_the_errors_exit_code(vector: list[str], tmp_path: Path) -> None:
    """A failed import (its thread exists in the destination with other
    content) ends as soon as its error is printed, and a Ctrl-C then
    changes nothing: exit 2. Before: the interpreter's finalization took a
    second or more after the line (seconds with --vector), and a Ctrl-C in
    it ended the process by the signal."""
    if vector and importlib.util.find_spec("memory_core_qdrant") is None:
        pytest.skip("memory-core-qdrant is not installed")
    exported = cli("export", _one_thread(tmp_path / "source.db", "a"))
    assert exported.returncode == 0, exported.stderr
    export = tmp_path / "in.jsonl"
    export.write_text(exported.stdout)
    destination = _one_thread(tmp_path / "destination.db", "b")
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in vector]
    process = cli_process("import", destination, "-i", str(export), *args, stderr=subprocess.PIPE)
    assert process.stderr is not None
    said = []
    for raw in process.stderr:
        said.append(raw.decode())
        if raw.startswith(b"error: "):
            process.send_signal(signal.SIGINT)
            break
    said.append(process.stderr.read().decode())
    code = process.wait(timeout=120)
    assert code == 2, "".join(said)
    assert "exists in the destination with other content" in "".join(said), said
    assert "Traceback" not in "".join(said) and "interrupted" not in "".join(said), said


def _stored(db: Path) -> int:
    """Messages in the SQLite file at ``db`` (0 while it has no table yet), read only."""
    try:
        connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(connection.execute("SELECT count(*) FROM messages").fetchone()[0])
        finally:
            connection.close()
    except sqlite3.Error:
        return 0


@pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)
def test_a_ctrl_c_during_an_import_with_vectors_is_one_line_that_says_the_index_may_be_behind(
    tmp_path: Path,
) -> None:
    """The re-embedding in flight finishes before the stores close, so the
    only line is the documented one, and it says how the vector index is
    repaired. Before: a second line from the cut write ("a Memory write
    whose caller was cancelled failed: ... qdrant vector store is closed",
    "Shard is not initialized"), and a hint about the records only."""
    url = f"sqlite:///{tmp_path / 'source.db'}"

    async def seed() -> None:
        async with await connect(url) as storage:
            for r in range(40):
                await storage.save_thread(Thread(f"t{r}", f"r{r}", created_at=OLD))
                row = {"thread_id": f"t{r}", "role": "user", "created_at": OLD}
                await storage.save_messages([{**row, "id": f"m{r}-{i}", "content": f"words {i}"} for i in range(50)])

    asyncio.run(seed())
    exported = cli("export", url)
    assert exported.returncode == 0, exported.stderr
    export = tmp_path / "in.jsonl"
    export.write_text(exported.stdout)
    destination = tmp_path / "new.db"
    vectors = f"qdrant+path:///{tmp_path / 'new.vectors'}"
    process = cli_process(
        "import",
        f"sqlite:///{destination}",
        "-i",
        str(export),
        "--vector",
        vectors,
        "--embedder",
        "lexical",
        stderr=subprocess.PIPE,
    )
    wrote = []
    _, err = interrupted(process, after=lambda: wrote.append(_wait_until(lambda: _stored(destination) >= 100, 120)))
    assert all(wrote), "the import never wrote"
    said = [line for line in err.decode().splitlines() if line.strip() and not line.startswith("import: ")]
    if process.returncode == 0:
        pytest.skip("the import finished before the Ctrl-C (a fast machine)")
    assert process.returncode == 130, said
    assert len(said) == 1 and said[0].startswith("interrupted: "), said
    assert "the --vector index may be behind" in said[0] and "repairs it" in said[0], said


def test_a_ctrl_c_once_the_export_file_is_in_place_exits_0(tmp_path: Path) -> None:
    """``export -o FILE`` renames its temporary file into place when every
    record is written; a Ctrl-C from then on (while the store closes) keeps
    exit 0. Before: exit 130 with "FILE was not written; run the export
    again", and running it again failed on the existing FILE (trial 25:
    6 of 10 on SQLite, 10 of 10 on PostgreSQL)."""
    url = _old_messages(tmp_path / "agent.db", 200)
    for attempt in range(3):
        output = tmp_path / f"out-{attempt}.jsonl"
        process = cli_process("export", url, "-o", str(output), stderr=subprocess.PIPE)

        def in_place(output: Path = output) -> None:
            deadline = time.monotonic() + 120
            while not output.exists() and time.monotonic() < deadline:  # no sleep: the store closes in ms
                pass

        _, err = interrupted(process, after=in_place, timeout=60)
        said = err.decode()
        assert output.exists(), "the export never put its file in place"
        assert process.returncode == 0, said
        assert "interrupted" not in said and "was not written" not in said, said
        assert output.read_text().count("\n") > 200  # header, thread, messages, trailer
