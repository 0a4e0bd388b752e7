"""A command's error line names things as the user gave them (the URL, the
option with its ``--``, the path) and offers fixes they can apply from the
command line: no adapter class's repr, no collection, table or key
memory-core keeps inside a store, no Python keyword, no internal profile;
and messages joined into one line carry no glued punctuation (``.;``).
Each through a real ``memory-core`` process (trial 26c)."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from tests.cli_run import cli

pytest.importorskip("memory_core_sqlite")

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None

INTERNAL = re.compile(r"Qdrant\w*Store|PgVectorStore|memory_messages_|schema_version|:rsv\b|Storage\(")
"""What a user never typed: adapter classes (and their repr), the names of
collections, tables and keys memory-core keeps inside a store."""

GLUED = re.compile(r"[.,:;?!]\s*[;,]")
"""Two messages glued with their punctuation: ``refused.; check``."""


def _one_line(done: object, *, says: str) -> str:
    """The single red line of a refused command (exit 2, nothing on stdout)."""
    assert getattr(done, "returncode") == 2, getattr(done, "stderr")  # noqa: B009
    stderr: str = getattr(done, "stderr")  # noqa: B009
    assert getattr(done, "stdout") == "" and stderr.count("\n") == 1, stderr  # noqa: B009
    assert says in stderr, stderr
    assert not INTERNAL.search(stderr), stderr
    assert not GLUED.search(stderr), stderr
    return stderr


def _url(db: Path) -> str:
    return f"sqlite:///{db}"


def _empty_store(db: Path) -> str:
    """The URL of a new, empty SQLite store at ``db``."""

    async def make() -> None:
        from memory_core import connect

        async with await connect(f"sqlite:///{db}"):
            pass

    asyncio.run(make())
    return f"sqlite:///{db}"


def test_a_missing_folder_is_fixed_with_the_url_option_not_a_python_keyword(tmp_path: Path) -> None:
    """Before: ``... let the store make it: create_dirs=True, or sqlite:///...``."""
    export = tmp_path / "e.jsonl"
    export.write_text("")
    for args in (
        ["import", f"sqlite:///{tmp_path / 'typo' / 'agent.db'}", "-i", str(export)],
        ["demo", "--storage", f"sqlite:///{tmp_path / 'typo' / 'agent.db'}", "--vector", "none"],
    ):
        line = _one_line(cli(*args, cwd=tmp_path), says=f"folder {str(tmp_path / 'typo')!r} does not exist")
        assert "add ?create_dirs=true to the URL" in line and "create_dirs=True" not in line, line
    assert not (tmp_path / "typo").exists()


def test_a_file_that_holds_no_store_is_named_as_the_url_gave_it(tmp_path: Path) -> None:
    """Before: ``URL: '/…/x.db' holds no memory-core store (no schema_version table)``."""
    empty = tmp_path / "x.db"
    empty.touch()
    _one_line(cli("export", f"sqlite:///{empty}"), says=f"URL: the file {str(empty)!r} holds no memory-core store")


def test_a_redis_prefix_that_holds_no_store_is_named_as_the_url_gave_it(valkey_url: str) -> None:
    """Before: ``... holds no memory-core store (no trial26c:rsv key)``."""
    url = f"{valkey_url}?prefix=trial26c"
    _one_line(cli("export", url), says="URL: the key prefix 'trial26c' holds no memory-core store")


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_a_vector_store_is_named_as_the_option_not_as_its_class_or_collections(tmp_path: Path) -> None:
    """Before: ``--vector: QdrantEdgeStore('/…', namespace=None) holds no
    memory-core vectors (no memory_messages_<dimension> collection)`` and
    ``--vector: QdrantEdgeStore keeps its vectors in memory``."""
    url = _empty_store(tmp_path / "agent.db")
    (tmp_path / "vectors").mkdir()
    _one_line(
        cli("check-index", url, "--vector", f"qdrant+path:///{tmp_path / 'vectors'}"),
        says="--vector: the vector store the URL names holds no memory-core vectors",
    )
    _one_line(
        cli("prune", url, "--older-than", "1d", "--vector", "qdrant::memory:"),
        says="--vector: the vector store keeps its vectors in memory",
    )


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_an_index_of_another_embedder_names_the_options_that_fix_it(tmp_path: Path) -> None:
    """Before: ``--embedder: ... (embedder=...), or re-embed every resource
    with this one (await memory.reindex(resource_id=...) ...)``."""
    vectors = f"qdrant+path:///{tmp_path / 'vectors'}"

    async def seed() -> None:
        from memory_core import connect_vector
        from memory_core.vector import VectorPoint

        async with await connect_vector(vectors) as index:
            await index.upsert([VectorPoint("m1", 0, np.array([1.0, 0.0, 0.0], dtype=np.float32), "t1", "r1", 0)])

    asyncio.run(seed())
    export = tmp_path / "e.jsonl"
    made = cli("export", _empty_store(tmp_path / "a.db"), "-o", str(export))
    assert made.returncode == 0, made.stderr
    line = _one_line(
        cli("import", _url(tmp_path / "b.db"), "-i", str(export), "--vector", vectors, "--embedder", "lexical"),
        says="--embedder: the vector index holds 1 vector (text chunk) of a 3-dimension embedder",
    )
    assert "embedder=" not in line and "memory.reindex" not in line and "give the --embedder" in line, line


def test_check_offers_the_profiles_a_user_chooses(tmp_path: Path) -> None:
    """Before: ``profile: 'bogus' is not a profile; choose one of ['ci',
    'deep', 'dev', 'kill', 'quick', 'stand-in']``."""
    pytest.importorskip("memory_core_conformance")
    line = _one_line(cli("check", "memory://", "--profile", "bogus"), says="--profile: 'bogus' is not a profile")
    assert line.rstrip().endswith("choose one of quick, dev, ci, deep"), line


@pytest.mark.parametrize(
    ("url", "adapter"),
    [("redis://127.0.0.1:1/0", "memory_core_redis"), ("postgresql://u:p@127.0.0.1:1/db", "memory_core_postgres")],
)
def test_a_refused_connection_is_one_line_without_glued_punctuation(url: str, adapter: str) -> None:
    """Before (Redis): ``Connect call failed ('127.0.0.1', 1).; check that the URL ...``."""
    pytest.importorskip(adapter)
    line = _one_line(cli("export", url), says="error: URL ")
    assert "; check that the URL names the store you mean" in line, line


REPR = re.compile(r"[{\[]'|'[}\]]|\w+(Error|Exception):")
"""A Python dict or list repr (``{'resources': 0``, ``['clock', ``) or a
driver exception's class name (``DatabaseError:``) in a line."""


def _seeded_store(db: Path) -> str:
    """The URL of a store at ``db`` holding one resource, one thread and 3 messages."""

    async def seed() -> None:
        from memory_core import Thread, connect

        async with await connect(f"sqlite:///{db}") as storage:
            await storage.save_thread(Thread("t1", "r1"))
            row = {"thread_id": "t1", "role": "user", "content": "words"}
            await storage.save_messages([{**row, "id": f"m{i}"} for i in range(3)])

    asyncio.run(seed())
    return f"sqlite:///{db}"


def test_counts_are_words_with_their_plurals(tmp_path: Path) -> None:
    """Before: ``imported: written {'resources': 0, 'threads': 3, 'messages':
    36}, already there {...}``, and copy's two dicts in two key orders."""
    source = _seeded_store(tmp_path / "a.db")
    export = tmp_path / "e.jsonl"
    assert cli("export", source, "-o", str(export)).returncode == 0
    imported = cli("import", _url(tmp_path / "b.db"), "-i", str(export))
    assert imported.returncode == 0, imported.stderr
    assert "imported: written 1 thread, 3 messages; already there nothing" in imported.stderr, imported.stderr
    copied = cli("copy", source, _url(tmp_path / "c.db"))
    assert copied.returncode == 0, copied.stderr
    assert "copied and verified: 1 thread, 3 messages; written 1 thread, 3 messages" in copied.stderr, copied.stderr
    assert not REPR.search(imported.stderr + copied.stderr)


def test_offered_schemes_and_options_are_words_without_test_hooks(tmp_path: Path) -> None:
    """Before: ``known: ['memory', 'mongodb', ...]`` and ``sqlite accepts
    ['busy_timeout', 'clock', ...]``: ``clock`` is a test hook no user sets."""
    line = _one_line(cli("export", "bogus://x"), says="unknown storage scheme 'bogus'")
    assert "known: memory, " in line and not REPR.search(line), line
    line = _one_line(cli("export", f"{_url(tmp_path / 'a.db')}?bogus=1"), says="option 'bogus': unknown")
    assert "sqlite accepts " in line and "clock" not in line and not REPR.search(line), line


def test_a_question_is_not_glued_to_the_next_clause() -> None:
    """Before: ``No such command 'expor'. Did you mean 'export'?; see ... --help``."""
    _one_line(cli("expor"), says="Did you mean 'export'? See ")


def test_a_truncated_export_names_one_next_step(tmp_path: Path) -> None:
    """Before: ``... stopped early; copy the whole file again; fix the input,
    or write it again with memory-core export`` (two pieces of advice)."""
    export = tmp_path / "e.jsonl"
    assert cli("export", _seeded_store(tmp_path / "a.db"), "-o", str(export)).returncode == 0
    export.write_bytes(export.read_bytes()[:-30])
    line = _one_line(cli("import", _url(tmp_path / "b.db"), "-i", str(export)), says="the export is truncated")
    assert line.rstrip().endswith("copy the whole file again") and "fix the input" not in line, line


def test_a_bad_value_is_named_by_the_option_or_url_that_gave_it(tmp_path: Path) -> None:
    """Before: ``batch_size: must be an int from 1 to 10000``: the library's
    keyword, not ``--batch-size``; a URL's own ``?timeout=`` names the URL."""
    url = _seeded_store(tmp_path / "a.db")
    _one_line(cli("prune", url, "--older-than", "1d", "--batch-size", "0"), says="error: --batch-size: must be an int")
    _one_line(cli("export", f"{url}?timeout=x"), says="error: URL: option 'timeout' must be a number of seconds")


def test_a_folder_given_as_a_database_is_fixed_with_a_file_beside_it(tmp_path: Path) -> None:
    """Before: ``name a file, e.g. sqlite:////…/vectors/memory.db``: a
    database inside the folder (often the vectors folder)."""
    (tmp_path / "vectors").mkdir()
    line = _one_line(cli("export", _url(tmp_path / "vectors")), says="is a folder, not a database file")
    assert f"e.g. sqlite:///{tmp_path / 'vectors'}.db" in line and "vectors/memory.db" not in line, line


def test_a_misspelt_embedder_gets_a_did_you_mean(tmp_path: Path) -> None:
    """Before: ``--embedder: unknown embedder 'lexicl'; known: lexical, ...``."""
    line = _one_line(
        cli("demo", "--db", str(tmp_path / "d.db"), "--embedder", "lexicl"), says="unknown embedder 'lexicl'"
    )
    assert "did you mean 'lexical'? known: lexical, minilm" in line, line


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"a": 1}\n', 'line 1: not a memory-core record: it has no "kind"'),  # before: unknown record kind None
        (b"\xf3\xff\n", "line 1: not UTF-8 text: invalid continuation byte at byte 1"),  # before: 'utf-8' codec ...
        (b"hello\n", "line 1: not valid JSON: expecting value at column 1"),  # before: (char 0)
    ],
)
def test_a_file_that_is_not_an_export_is_named_and_said_in_words(content: bytes, says: str, tmp_path: Path) -> None:
    """Before: ``line 1: unknown record kind None``, ``not UTF-8 text
    ('utf-8' codec can't decode byte 0xf3 ...)``, ``not valid JSON
    (Expecting value: line 1 column 1 (char 0))``: neither the file nor
    what it is."""
    given = tmp_path / "notes.jsonl"
    given.write_bytes(content)
    line = _one_line(
        cli("import", _url(tmp_path / "b.db"), "-i", str(given)),
        says=f"error: {given}: not a memory-core/jsonl export ({says}); give a file that memory-core export wrote",
    )
    assert "codec" not in line and "char 0" not in line and "None" not in line, line
    piped = cli("import", _url(tmp_path / "b.db"), input=content)
    _one_line(piped, says="error: stdin: not a memory-core/jsonl export (line 1: ")


def test_a_url_of_the_other_kind_names_where_it_goes_on_the_command_line(tmp_path: Path) -> None:
    """Before: ``--vector: 'sqlite' is a storage URL, not a vector store URL:
    open it with connect()``: a Python function a CLI user cannot call."""
    url = _seeded_store(tmp_path / "a.db")
    line = _one_line(
        cli("check-index", url, "--vector", url), says="--vector: 'sqlite' is a storage URL, not a vector store URL"
    )
    assert "connect" not in line and "the command's URL argument; give --vector a vector store URL" in line, line
    if HAS_QDRANT:
        line = _one_line(cli("export", "qdrant://127.0.0.1:6333"), says="URL: 'qdrant' is a vector store URL")
        assert "connect" not in line and "it goes with --vector" in line, line


def test_a_backend_failure_names_the_url_and_what_happened_not_the_driver_class(tmp_path: Path) -> None:
    """Before: ``sqlite open failed: DatabaseError: file is not a
    database``, ``postgresql open failed: ConnectionRefusedError: [Errno
    111] Connect call failed ('127.0.0.1', 1)`` and ``qdrant preflight
    failed: ResponseHandlingException: All connection attempts failed``:
    a class name and no address (or one as a Python tuple)."""
    notes = tmp_path / "notes.db"
    notes.write_text("my notes, not a database\n")
    line = _one_line(
        cli("export", _url(notes)), says=f"error: URL {_url(notes)}: {notes} is not an SQLite database file"
    )
    assert not REPR.search(line), line
    if importlib.util.find_spec("memory_core_postgres") is not None:
        line = _one_line(
            cli("export", "postgresql://u:secret@127.0.0.1:1/db"),
            says="error: URL postgresql://u:***@127.0.0.1:1/db: connection refused; check that the URL",
        )
        assert not REPR.search(line) and "('127.0.0.1', 1)" not in line and "secret" not in line, line
    if HAS_QDRANT:
        line = _one_line(
            cli("check-index", _seeded_store(tmp_path / "a.db"), "--vector", "qdrant://127.0.0.1:1"),
            says="error: --vector qdrant://127.0.0.1:1: ",
        )
        assert not REPR.search(line), line
