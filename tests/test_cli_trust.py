"""Commands an operator can trust (issue 26), each through a real
``memory-core`` process: a mistyped ``--vector`` is refused and creates
nothing, a failed import changes nothing, an interrupted export leaves no
partial file, an interrupted prune says how to resume, and a closed pipe is a
normal end."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sqlite3
import stat
import subprocess
import threading
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import Memory, Thread, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder
from tests.cli_run import cli, cli_process, interrupted

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None

OLD = datetime(2025, 1, 1, tzinfo=UTC)


def _seed(db: Path, vectors: Path | None = None, messages: int = 6) -> str:
    """A SQLite store with ``messages`` old messages in one thread (and their
    points in a qdrant+path folder when ``vectors`` is given)."""
    url = f"sqlite:///{db}"

    async def seed() -> None:
        storage = await connect(url)
        await storage.save_thread(Thread("t1", "r1", created_at=OLD))
        index = None if vectors is None else await connect_vector(f"qdrant+path:///{vectors}")
        async with Memory(storage, index, LexicalHashEmbedder() if index is not None else None) as memory:
            await memory.save_messages(
                [
                    {"id": f"m{i}", "thread_id": "t1", "role": "user", "content": f"old words {i}", "created_at": OLD}
                    for i in range(messages)
                ]
            )

    asyncio.run(seed())
    return url


def _points(vectors: Path) -> int:
    async def count() -> int:
        async with await connect_vector(f"qdrant+path:///{vectors}") as index:
            return await index.count_points()

    return asyncio.run(count())


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_prune_with_a_mistyped_vector_folder_is_refused_and_creates_nothing(dry_run: list[str], tmp_path: Path) -> None:
    vectors = tmp_path / "agent.vectors"
    url = _seed(tmp_path / "agent.db", vectors)
    before = (tmp_path / "agent.db").read_bytes()
    typo = tmp_path / "agent.vector"
    done = cli("prune", url, "--older-than", "30d", "--vector", f"qdrant+path:///{typo}", *dry_run)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --vector: ") and "holds no memory-core vectors" in done.stderr, done.stderr
    assert not typo.exists()
    assert (tmp_path / "agent.db").read_bytes() == before
    assert _points(vectors) == 6


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_prune_with_the_right_vector_folder_removes_the_points(tmp_path: Path) -> None:
    vectors = tmp_path / "agent.vectors"
    url = _seed(tmp_path / "agent.db", vectors)
    done = cli("prune", url, "--older-than", "30d", "--vector", f"qdrant+path:///{vectors}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("removed 6 messages"), done.stdout
    assert _points(vectors) == 0


def _many_old_messages(db: Path, count: int) -> str:
    url = f"sqlite:///{db}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1", created_at=OLD))
            for start in range(0, count, 500):
                await storage.save_messages(
                    [
                        {"id": f"m{i}", "thread_id": "t1", "role": "user", "content": "old", "created_at": OLD}
                        for i in range(start, min(start + 500, count))
                    ]
                )

    asyncio.run(seed())
    return url


def _message_count(url: str) -> int:
    async def count() -> int:
        async with await connect(url) as storage:
            return (await storage.list_messages("t1", per_page=0)).counted_total

    return asyncio.run(count())


def test_an_interrupted_prune_prints_the_cutoff_and_resumes_with_before(tmp_path: Path) -> None:
    url = _many_old_messages(tmp_path / "agent.db", 10000)
    process = cli_process("prune", url, "--older-than", "30d", "--batch-size", "1", stderr=subprocess.PIPE)
    assert process.stderr is not None
    first = process.stderr.readline().decode()
    assert first.startswith("cutoff "), first
    cutoff = first.split()[1]
    # the line comes just before the store opens; a whole run takes seconds
    rest = interrupted(process, after=0.2, timeout=60)[1].decode()
    assert process.returncode == 130, rest
    assert f"interrupted: whole batches were deleted or not; resume with --before {cutoff}" in rest, rest
    assert "Traceback" not in rest
    left = _message_count(url)
    assert 0 < left <= 10000
    resumed = cli("prune", url, "--before", cutoff)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith(f"removed {left} messages from 1 thread, created before {cutoff}"), resumed.stdout
    assert _message_count(url) == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--before", "last tuesday"], "--before: not an ISO-8601 datetime: 'last tuesday'"),
        (["--before", "2025-01-01", "--older-than", "30d"], "give --older-than AGE or --before TIME (one of them)"),
        ([], "give --older-than AGE or --before TIME (one of them)"),
    ],
)
def test_prune_cutoff_mistakes_are_one_red_line(args: list[str], says: str, tmp_path: Path) -> None:
    url = _many_old_messages(tmp_path / "agent.db", 3)
    done = cli("prune", url, *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and says in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert _message_count(url) == 3


def test_a_dry_run_names_its_cutoff_without_a_resume_hint(tmp_path: Path) -> None:
    """Before: a dry run printed "an interrupted run resumes with --before"
    (it changes nothing to resume). (A ``--before`` in the future is refused:
    tests/test_cli_prune.py.)"""
    url = _many_old_messages(tmp_path / "agent.db", 3)
    done = cli("prune", url, "--dry-run", "--before", "2026-01-01")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("cutoff 2026-01-01T00:00:00+00:00"), done.stderr
    assert "resumes with" not in done.stderr and "warning" not in done.stderr, done.stderr
    assert done.stdout.startswith("would remove 3 messages"), done.stdout
    past = cli("prune", url, "--dry-run", "--older-than", "30d")
    assert "warning" not in past.stderr and "resumes with" not in past.stderr, past.stderr
    assert _message_count(url) == 3


def test_a_dash_for_output_and_input_is_stdout_and_stdin(tmp_path: Path) -> None:
    """Before: ``export -o -`` wrote a file named ``-`` and ``import -i -``
    was refused as no file; ``./-`` still names a file called ``-``."""
    url = _many_old_messages(tmp_path / "source.db", 3)
    plain = _export(url)
    dashed = cli("export", url, "-o", "-", cwd=tmp_path)
    assert dashed.returncode == 0, dashed.stderr
    assert dashed.stdout.encode() == plain
    assert not (tmp_path / "-").exists()
    into = f"sqlite:///{tmp_path / 'copy.db'}"
    imported = cli("import", into, "--input", "-", input=plain, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert _message_count(into) == 3
    named = cli("export", url, "--output", "./-", cwd=tmp_path)
    assert named.returncode == 0 and named.stdout == "", named.stderr
    assert (tmp_path / "-").read_bytes() == plain
    again = cli("import", f"sqlite:///{tmp_path / 'other.db'}", "-i", "./-", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert _message_count(f"sqlite:///{tmp_path / 'other.db'}") == 3


def test_export_writes_a_character_device_or_a_fifo_directly(tmp_path: Path) -> None:
    """Before: ``export -o /dev/null`` was refused ("exists; export never
    overwrites a file") and a named pipe too: the temporary-file-and-rename
    rule of regular files cannot apply to them. The FIFO gets the export a
    reader sees; the folder holds no temporary file after."""
    url = _many_old_messages(tmp_path / "source.db", 3)
    plain = _export(url)
    nulled = cli("export", url, "-o", os.devnull)
    assert nulled.returncode == 0, nulled.stderr
    assert nulled.stdout == ""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    try:
        piped = cli("export", url, "--output", str(fifo))
    finally:
        if reader.is_alive():  # the export never opened the pipe: let the reader go
            with open(fifo, "wb"):
                pass
        reader.join(timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert got == [plain]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pipe", "source.db"]
    assert "written directly" in " ".join(cli("export", "--help").stdout.split())


def test_export_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    url = _many_old_messages(tmp_path / "agent.db", 3000)  # far more than a pipe buffers
    process = cli_process("export", url, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    assert b'"format":"memory-core/jsonl"' in process.stdout.readline()
    process.stdout.close()  # `memory-core export URL | head -1`
    errors = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, errors
    assert errors == ""


def test_an_interrupted_export_to_a_file_leaves_no_file(tmp_path: Path) -> None:
    url = _many_old_messages(tmp_path / "agent.db", 20000)
    out = tmp_path / "out" / "backup.jsonl"
    out.parent.mkdir()
    process = cli_process("export", url, "-o", str(out), stderr=subprocess.PIPE)

    def writing() -> None:  # the Ctrl-C comes while the file is being written
        deadline = time.monotonic() + 60
        while not any(out.parent.iterdir()) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)

    said = interrupted(process, after=writing, timeout=60)[1].decode()
    assert process.returncode == 130, said
    assert f"interrupted: {out} was not written; run the export again" in said
    assert list(out.parent.iterdir()) == []


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_an_export_to_a_file_gets_the_mode_of_a_new_file(umask: int, tmp_path: Path) -> None:
    """Before: always 0600 (the temporary file's), where ``> FILE`` gives 0644."""
    url = _many_old_messages(tmp_path / "agent.db", 2)
    out = tmp_path / "out.jsonl"
    process = cli_process("export", url, "-o", str(out), preexec_fn=lambda: os.umask(umask))
    assert process.wait(timeout=120) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask


def test_an_export_to_a_file_appears_whole(tmp_path: Path) -> None:
    url = _many_old_messages(tmp_path / "agent.db", 3)
    out = tmp_path / "backup.jsonl"
    done = cli("export", url, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert '"kind":"trailer"' in out.read_text().splitlines()[-1]
    again = cli("export", url, "-o", str(out))
    assert again.returncode == 2 and "exists; export never overwrites a file" in again.stderr


def _export(url: str) -> bytes:
    done = cli("export", url)
    assert done.returncode == 0, done.stderr
    return done.stdout.encode()


def _tampered(export: bytes) -> bytes:
    lines = export.splitlines(keepends=True)
    middle = len(lines) // 2
    assert b'"kind":"message"' in lines[middle]
    lines[middle] = lines[middle].replace(b'"content":"old"', b'"content":"new"')
    return b"".join(lines)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", ": empty: no header"),
        (b"hello\n", "not a memory-core/jsonl export (line 1: not valid JSON"),
        (b'{"kind":"header","format":"other/jsonl","version":1}\n', "not a memory-core/jsonl export (line 1: "),
        (b'{"kind":"header","format":"memory-core/jsonl","version":9}\n', "line 1: format version 9"),
        ("tampered", "the records read do not match the trailer"),
        ("cut", "without a trailer: the export is incomplete"),
        ("cut mid-line", "line 23: cut off mid-line (the last line has no newline"),
        ("header count", "line 1: messages: the header counts 21 messages, the file holds 20"),
    ],
)
@pytest.mark.parametrize("through", ["stdin", "file"])
def test_a_failed_import_creates_and_changes_nothing(
    content: bytes | str, says: str, through: str, tmp_path: Path
) -> None:
    if content == "tampered":
        content = _tampered(_export(_many_old_messages(tmp_path / "source.db", 20)))
    elif content == "cut":
        content = b"".join(_export(_many_old_messages(tmp_path / "source.db", 20)).splitlines(keepends=True)[:-1])
    elif content == "cut mid-line":  # a copy that stopped inside a record: before, "not valid JSON"
        export = _export(_many_old_messages(tmp_path / "source.db", 20))
        content = export[: export.rindex(b'"kind":"trailer"') - 40]
    elif content == "header count":  # before, imported with exit 0: the header was never compared
        content = _export(_many_old_messages(tmp_path / "source.db", 20)).replace(
            b'"messages":20,', b'"messages":21,', 1
        )
    assert isinstance(content, bytes)
    file = tmp_path / "in.jsonl"
    file.write_bytes(content)
    new = tmp_path / "new.db"
    args = ["-i", str(file)] if through == "file" else []
    stdin = content if through == "stdin" else None
    done = cli("import", f"sqlite:///{new}", *args, input=stdin)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and says in done.stderr, done.stderr
    assert not new.exists()
    existing = tmp_path / "existing.db"
    url = _many_old_messages(existing, 2)
    before = existing.read_bytes()
    again = cli("import", url, *args, input=stdin)
    assert again.returncode == 2 and says in again.stderr, again.stderr
    assert existing.read_bytes() == before
    assert _message_count(url) == 2


def test_an_export_cut_inside_a_character_is_called_truncated(tmp_path: Path) -> None:
    """Before: "not UTF-8 text ('utf-8' codec can't decode byte ...)", as
    if the file were another encoding; it is an export cut short."""
    url = f"sqlite:///{tmp_path / 'source.db'}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1", created_at=OLD))
            await storage.save_messages([{"id": "m1", "thread_id": "t1", "role": "user", "content": "café 日本"}])

    asyncio.run(seed())
    export = _export(url)
    cut = export[: export.index("日".encode()) + 1]  # a copy that stopped inside 日 (3 bytes)
    file = tmp_path / "cut.jsonl"
    file.write_bytes(cut)
    done = cli("import", f"sqlite:///{tmp_path / 'new.db'}", "-i", str(file))
    assert done.returncode == 2, done.stderr
    line = cut.count(b"\n") + 1
    assert done.stderr.startswith(f"error: {file} line {line}: cut off inside a UTF-8 character"), done.stderr
    assert "the export is truncated" in done.stderr and "copy the whole file again" in done.stderr, done.stderr
    assert "not UTF-8" not in done.stderr
    assert not (tmp_path / "new.db").exists()


def test_check_interrupted_leaves_nothing_behind(tmp_path: Path) -> None:
    pytest.importorskip("memory_core_conformance")
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    data.mkdir()
    cwd.mkdir()
    process = cli_process(
        "check",
        f"sqlite:///{data / 'agent.db'}",
        "--new",
        "--profile",
        "ci",
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    def in_the_suite() -> None:  # while the suite's stores exist (after the probe's went)
        time.sleep(4)
        deadline = time.monotonic() + 60
        while not list(data.glob("agent-mc_check_*.db")) and time.monotonic() < deadline:
            time.sleep(0.005)

    out, err = interrupted(process, after=in_the_suite)
    assert process.returncode == 130, err.decode()
    assert b"interrupted after" in err and b"no verdict" in err and b"interrupted" not in out
    assert list(data.iterdir()) == []
    assert list(cwd.iterdir()) == []  # no .hypothesis folder either


def test_check_errors_go_to_stderr(tmp_path: Path) -> None:
    pytest.importorskip("memory_core_conformance")
    done = cli("check", f"sqlite:///{tmp_path}/missing/agent.db", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("error: cannot check ") and "does not exist" in done.stderr
    none = cli("check", "memory://", "-k", "no_such_test_anywhere", cwd=tmp_path)
    assert none.returncode == 2 and "matches no test" in none.stderr and none.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_check_leaves_no_hypothesis_folder(tmp_path: Path) -> None:
    pytest.importorskip("memory_core_conformance")
    done = cli("check", "memory://", "--profile", "quick", "-k", "c07 or prop", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_demo_on_a_storage_url_creates_no_vectors_folder(tmp_path: Path) -> None:
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    data.mkdir()
    cwd.mkdir()
    done = cli("demo", "--storage", f"sqlite:///{data / 'agent.db'}", "--embedder", "lexical", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert list(cwd.iterdir()) == []  # no ./memory-core-demo.vectors
    assert list(data.iterdir()) == []  # the namespace's database is removed too


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_demo_on_a_new_vector_folder_leaves_no_folder(tmp_path: Path) -> None:
    """Before: exit 0 and an empty ``./new.vectors/`` left behind (the guide: no folder is created)."""
    done = cli("demo", "--vector", "qdrant+path:///new.vectors", "--embedder", "lexical", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "new.vectors").exists()
    kept = tmp_path / "kept.vectors"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    again = cli("demo", "--vector", f"qdrant+path:///{kept}", "--embedder", "lexical", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert sorted(path.name for path in kept.iterdir()) == ["notes.txt"]  # a folder it did not make stays


def _other_application(db: Path) -> bytes:
    """A SQLite file holding another application's table (and no memory-core store): its bytes."""
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE foo (x)")
    connection.commit()
    connection.close()
    return db.read_bytes()


@pytest.mark.parametrize("command", ["import", "copy"])
def test_a_write_into_another_applications_database_is_refused_and_changes_nothing(
    command: str, tmp_path: Path
) -> None:
    """Before: ``import`` exited 0 and wrote memory-core's tables beside ``foo``."""
    source = _many_old_messages(tmp_path / "source.db", 3)
    other = tmp_path / "other.db"
    before = _other_application(other)
    if command == "import":
        file = tmp_path / "in.jsonl"
        file.write_bytes(_export(source))
        done = cli("import", f"sqlite:///{other}", "-i", str(file))
        role = "URL"
    else:
        done = cli("copy", source, f"sqlite:///{other}")
        role = "DESTINATION"
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"error: {role}: {str(other)!r} is another application's database (table 'foo'), not a memory-core store"
    ), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert other.read_bytes() == before
    assert (
        sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl", "other.db", "source.db"][command == "copy" :]
    )


def _into_a_closed_pipe(*args: str, cwd: Path | None = None) -> tuple[int, str]:
    """Run ``memory-core ARGS | head -0``: stdout's reader is gone before the
    command writes; the exit code and stderr."""
    process = cli_process(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    errors = process.stderr.read().decode()
    return process.wait(timeout=300), errors


def test_every_command_into_a_closed_pipe_exits_141(tmp_path: Path) -> None:
    """Before: only export's raw writes ended with 141; a command printing
    through rich (check-index, prune, reindex, check, demo) exited 1, the
    code of a verdict against the store."""
    url = _many_old_messages(tmp_path / "agent.db", 3)
    code, errors = _into_a_closed_pipe("prune", url, "--older-than", "1d", "--dry-run")
    assert code == 141, errors
    assert "Traceback" not in errors


def test_help_into_a_closed_pipe_exits_141() -> None:
    """``memory-core --help | head -1``, and every command's ``--help``:
    typer's help goes through rich's console, whose closed-pipe handling
    exited 1 (the code of a verdict) where every command's output exits 141."""
    declared = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    commands = sorted(declared["project"]["entry-points"]["memory_core.cli"])
    for args in [["--help"], []] + [[name, "--help"] for name in commands]:
        code, errors = _into_a_closed_pipe(*args)
        assert (args, code) == (args, 141), errors
        assert "Traceback" not in errors, errors


def test_a_demo_into_a_closed_pipe_keeps_its_files(tmp_path: Path) -> None:
    """Before: ``memory-core demo | head -1`` counted the closed pipe as a
    failure and removed the demo's files (those of the run before too, which
    it had just replaced)."""
    db = tmp_path / "memory-core-demo.db"
    code, errors = _into_a_closed_pipe("demo", "--db", str(db), "--vector", "none", cwd=tmp_path)
    assert code == 141, errors
    assert db.exists()
