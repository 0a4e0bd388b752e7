"""``memory-core import`` and the lines a stopped or failed command prints
(issues 25 and 26), through a real process.

Before: a Ctrl-C while ``import`` checked its input (the pass over the whole
file before the destination is opened) was seen only when the check ended,
seconds later (it never let the event loop run, so the cancellation waited),
and then landed in the destination's opening, which it could create; the
line said "what was written is complete ..." though nothing was. An
interrupted run's last progress line said "done in 8 s"; a full disk was
``[Errno 28] No space left on device`` without the path; an import without
``--vector`` did not say that recall's vector index was left unfilled.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_core import Thread, connect
from memory_core.cli.progress import PLAIN_SECONDS_VARIABLE
from tests.cli_run import _environment, cli, cli_process, interrupted

pytest.importorskip("memory_core_sqlite")

_LINES = 80_000
"""Message lines of the long input: seconds of checking on any machine."""


def _long_input(path: Path) -> Path:
    """An export's start (header, thread, :data:`_LINES` messages) without
    its trailer: checking it reads every line, then refuses it."""
    with path.open("w", encoding="utf-8") as file:
        file.write(json.dumps({"format": "memory-core/jsonl", "kind": "header", "messages": _LINES, "version": 1}))
        file.write("\n")
        when = "2025-01-01T00:00:00+00:00"
        thread = {"created_at": when, "id": "t1", "kind": "thread", "metadata": {}, "resource_id": "r1"}
        file.write(json.dumps({**thread, "title": "", "updated_at": when}) + "\n")
        for i in range(_LINES):
            message = {"content": f"turn {i} " + "lorem ipsum " * 8, "created_at": when, "id": f"m{i:06}"}
            rest = {"kind": "message", "metadata": {}, "resource_id": "r1", "role": "user", "thread_id": "t1"}
            file.write(json.dumps({**message, **rest, "type": "v2"}) + "\n")
    return path


def _reading(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open (Linux's ``/proc``)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the input opened")
def test_a_ctrl_c_while_import_checks_its_input_stops_at_once_and_creates_nothing(tmp_path: Path) -> None:
    given = _long_input(tmp_path / "in.jsonl")
    db = tmp_path / "dest.db"
    for pause in (0.05, 0.3):
        process = cli_process(
            "import", f"sqlite:///{db}", "-i", str(given), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        sent: list[float] = []

        def checking(
            process: subprocess.Popen[bytes] = process, pause: float = pause, sent: list[float] = sent
        ) -> None:
            deadline = time.monotonic() + 120
            while not _reading(process.pid, given) and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(pause)
            sent.append(time.monotonic())

        _, err = interrupted(process, after=checking)
        took = time.monotonic() - sent[0]
        said = err.decode()
        assert process.returncode == 130, said
        assert said == (
            "interrupted: nothing was written (the input was being checked; the destination was not opened); "
            "run the import again on the same file\n"
        )
        assert not db.exists(), "the destination was created"
        assert took < 2.0, f"{took:.2f} s from the Ctrl-C to the end"


@pytest.fixture(scope="module")
def export_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A whole export of 20,000 messages (a second or more to import)."""
    folder = tmp_path_factory.mktemp("export")
    url = f"sqlite:///{folder / 'source.db'}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1"))
            for start in range(0, 20_000, 2_000):
                rows = [
                    {"id": f"m{i:06}", "thread_id": "t1", "role": "user", "content": f"turn {i}"}
                    for i in range(start, start + 2_000)
                ]
                await storage.save_messages(rows)

    asyncio.run(seed())
    path = folder / "export.jsonl"
    done = cli("export", url, "-o", str(path))
    assert done.returncode == 0, done.stderr
    return path


def test_an_interrupted_import_s_last_progress_line_says_stopped_not_done(export_file: Path, tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        process = cli_process(
            "import",
            f"sqlite:///{tmp_path / 'dest.db'}",
            "-i",
            str(export_file),
            env_extra={PLAIN_SECONDS_VARIABLE: "0"},
            stdout=subprocess.PIPE,
            stderr=stderr,
        )

        def writing() -> None:
            deadline = time.monotonic() + 120
            while "import: " not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)

        interrupted(process, after=writing)
    lines = log.read_text().splitlines()
    assert process.returncode == 130, lines
    progress = [line for line in lines if line.startswith("import: ")]
    assert "stopped after" in progress[-1] and "done" not in progress[-1], lines
    assert "of 20,000 messages" in progress[-1] and "(100%)" not in progress[-1], lines
    assert lines[-1].startswith("interrupted: written before the stop: 1 thread, "), lines
    assert lines[-1].endswith("to resume, run the import again on the same file"), lines


def test_a_whole_import_without_vector_names_the_command_that_builds_the_index(
    export_file: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'dest.db'}"
    done = cli("import", url, "-i", str(export_file))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[-2].startswith("imported: written"), lines
    assert lines[-1] == (
        "no vector index was filled (no --vector): recall finds these messages by meaning only once one is "
        f"built; build it with memory-core reindex {url} --new --vector VECTOR_URL "
        "(VECTOR_URL: the new or empty vector store to build it in)"
    )
    again = cli("import", url, "-i", str(export_file))  # nothing written: nothing to build
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines()[-1].startswith("imported: written nothing"), again.stderr
    assert "vector index" not in again.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device that is always full)")
def test_a_full_disk_names_the_path_in_words(export_file: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dest.db'}"
    assert cli("import", url, "-i", str(export_file)).returncode == 0
    done = cli("export", url, "-o", "/dev/full")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "error: /dev/full: no space left on device; free space there or give a path on another disk"
    )
    assert "Errno" not in done.stderr
    with open("/dev/full", "wb") as full:  # stdout a full device: named as stdout
        written = subprocess.run(
            [sys.executable, "-m", "memory_core", "export", url],
            env=dict(_environment()),
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
    said = written.stderr.decode()
    assert written.returncode == 2, said
    assert said.splitlines()[-1].startswith("error: stdout: no space left on device"), said


@pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)
@pytest.mark.parametrize("pause", [0.0, 0.02, 0.1])
def test_an_import_cut_as_it_opens_its_destination_says_what_it_wrote_and_leaves_no_new_store(
    export_file: Path, tmp_path: Path, pause: float
) -> None:
    """Issue 26: Ctrl-C just after import opened a new destination said
    "what was written is complete record by record ..." when nothing was
    written, and left the new SQLite file (and the vectors folder, created
    first). Now the line says what was written: nothing (and the new stores
    it removed, which are gone), or the records written, which are there."""
    db, folder = tmp_path / "dest.db", tmp_path / "vectors"
    process = cli_process(
        "import",
        f"sqlite:///{db}",
        "-i",
        str(export_file),
        "--vector",
        f"qdrant+path:///{folder}",
        "--embedder",
        "lexical",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def opening() -> None:
        deadline = time.monotonic() + 120
        while not (db.exists() or folder.exists()) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        time.sleep(pause)

    _, err = interrupted(process, after=opening)
    said = err.decode().strip().splitlines()[-1]
    assert process.returncode == 130, err.decode()
    assert "complete record by record" not in said, said
    if said.startswith("interrupted: nothing was written"):
        assert "created the storage" in said and not db.exists(), said  # the store was new: removed
        assert "the --vector index" not in said or not folder.exists(), said
    else:
        assert said.startswith("interrupted: written before the stop: 1 thread, "), said
        written = int(said.split("1 thread, ", 1)[1].split(" messages", 1)[0].replace(",", ""))

        async def count() -> int:
            async with await connect(f"sqlite:///{db}") as storage:
                return (await storage.list_messages("t1", per_page=0)).counted_total

        assert asyncio.run(count()) == written, said
