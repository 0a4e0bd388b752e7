"""``memory-core erase URL --resource ID [--vector URL]`` through a
real process: what it counts and erases, the refusal to erase unasked when
stdin is not a terminal, the question on a terminal, errors on stderr."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from memory_core import Memory, Thread, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder
from tests.cli_run import cli, cli_process
from tests.cli_seed import seed_two_users

pytest.importorskip("memory_core_sqlite")

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None


def _seed(tmp_path: Path, vectors: bool) -> tuple[str, str | None]:
    """Resources u1 (2 threads, 5 messages, a working memory record) and u2 (1 thread, 2 messages)."""
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    vector = f"qdrant+path:///{tmp_path / 'vectors'}" if vectors else None

    seed_two_users(url, vector, working_memory="likes tea")
    return url, vector


async def _left(url: str, resource: str) -> tuple[int, int]:
    async with await connect(url) as storage:
        threads = (await storage.list_threads({"resource_id": resource}, per_page=0)).counted_total
        messages = (await storage.list_messages_by_resource(resource, per_page=0)).counted_total
        return threads, messages


def test_erase_counts_with_dry_run_refuses_unasked_then_erases_with_yes(tmp_path: Path) -> None:
    url, _ = _seed(tmp_path, vectors=False)
    dry = cli("erase", url, "--resource", "u1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == (
        "would erase resource 'u1': 2 threads, 5 messages and its resource record (working memory, metadata)\n"
    )
    unasked = cli("erase", url, "--resource", "u1")  # stdin: not a terminal
    assert unasked.returncode == 2, unasked.stderr
    assert unasked.stdout == ""
    assert unasked.stderr.startswith("error: erase asks before erasing, and stdin is not a terminal"), unasked.stderr
    assert "--yes" in unasked.stderr
    assert asyncio.run(_left(url, "u1")) == (2, 5)
    done = cli("erase", url, "--resource", "u1", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("erased resource 'u1': 2 threads, 5 messages and its resource record"), done.stdout
    assert asyncio.run(_left(url, "u1")) == (0, 0)
    assert asyncio.run(_left(url, "u2")) == (1, 2)
    again = cli("erase", url, "--resource", "u1", "--yes")
    assert again.returncode == 0, again.stderr
    nothing = "erased nothing: the store holds nothing of resource 'u1' (no record, thread or message)\n"
    assert again.stdout == nothing, again.stdout  # before: stdout empty, exit 0
    assert "hint: the store holds no resource 'u1'" in again.stderr and "'u2'" in again.stderr
    dry = cli("erase", url, "--resource", "nobody", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("would erase nothing: "), dry.stdout


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_erase_with_vector_erases_the_resources_vectors(tmp_path: Path) -> None:
    url, vector = _seed(tmp_path, vectors=True)
    assert vector is not None
    done = cli("erase", url, "--vector", vector, "--resource", "u1", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("erased resource 'u1': 2 threads, 5 messages, 5 vectors (text chunks)"), done.stdout

    async def points(resource: str) -> int:
        async with await connect_vector(vector) as index:
            return await index.count_points(resource_id=resource)

    assert asyncio.run(points("u1")) == 0
    assert asyncio.run(points("u2")) == 2


def test_erase_errors_go_to_stderr_before_anything_is_opened(tmp_path: Path) -> None:
    missing = cli("erase", f"sqlite:///{tmp_path / 'none.db'}", "--resource", "u1", "--yes")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith("error: URL: "), missing.stderr
    assert not (tmp_path / "none.db").exists()
    blank = cli("erase", f"sqlite:///{tmp_path / 'none.db'}", "--resource", " ", "--yes")
    assert blank.returncode == 2 and blank.stderr.startswith("error: --resource: "), blank.stderr


def test_erase_takes_the_storage_url_as_its_argument_like_every_command(tmp_path: Path) -> None:
    """Before: ``erase`` alone took ``--storage URL`` (a positional URL was
    "Got unexpected extra argument"). The old form still works, with a
    warning; both at once, or neither, is one red line."""
    url, _ = _seed(tmp_path, vectors=False)
    dry = cli("erase", url, "--resource", "u2", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.startswith("would erase resource 'u2': 1 thread"), dry.stderr
    old = cli("erase", "--storage", url, "--resource", "u2", "--dry-run")
    assert old.returncode == 0 and old.stdout == dry.stdout, old.stderr
    assert old.stderr.startswith("warning: --storage is deprecated; give the URL as the argument"), old.stderr
    for args in ((url, "--storage", url), ()):
        wrong = cli("erase", *args, "--resource", "u2", "--dry-run")
        assert wrong.returncode == 2 and wrong.stderr.startswith("error: give the storage URL"), wrong.stderr
        assert wrong.stderr.count("\n") == 1 and wrong.stdout == ""


@pytest.mark.parametrize(("answer", "code", "left"), [(b"n\n", 1, (2, 5)), (b"y\n", 0, (0, 0))])
def test_erase_on_a_terminal_shows_what_would_go_and_asks(
    answer: bytes, code: int, left: tuple[int, int], tmp_path: Path
) -> None:
    url, _ = _seed(tmp_path, vectors=False)
    leader, follower = os.openpty()
    process = cli_process(
        "erase", url, "--resource", "u1", stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    os.close(follower)
    try:
        os.write(leader, answer)
        out, err = process.communicate(timeout=120)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    said = err.decode()
    assert process.returncode == code, said
    assert "would erase resource 'u1': 2 threads, 5 messages" in said and "erase it? [y/N]" in said, said
    assert asyncio.run(_left(url, "u1")) == left
    if code == 0:
        assert out.decode().startswith("erased resource 'u1'"), out
    else:
        assert "nothing was erased" in said and out == b"", said


GONE = "eve.0123456789ab+x@example.com"


def _seed_rebuilt_pages(path: Path) -> list[str]:
    """Three resources whose clones and later writes make SQLite rebuild
    b-tree pages (leaving old copies of cells in the pages' gaps), one of
    :data:`GONE`'s threads cloned into another resource (its lineage names
    :data:`GONE`); returns what erasing :data:`GONE` must leave no copy of."""

    async def seed() -> None:
        async with await Memory.open(f"sqlite:///{path}") as memory:
            for user, tag in ((GONE, "gone-7731"), ("keeper", "keep"), ("third", "third")):
                text = "erasable-words-5521" if user == GONE else "kept"
                for t in range(3):
                    await memory.get_or_create_thread(user, f"{tag}-thr{t}")
                    turns = [("user", f"{text} {k}" + (" " + "y" * 6000 if k % 10 == 9 else "")) for k in range(30)]
                    await memory.append_messages(f"{tag}-thr{t}", turns)
                await memory.clone_thread(f"{tag}-thr0", f"{tag}-clone")
            await memory.clone_thread(
                "gone-7731-thr2", "keeper-copy", resource_id="keeper", source_resource_id=GONE, message_ids=[]
            )
            await memory.append_messages("gone-7731-thr1", [("user", "erasable-words-5521 one more")])

    asyncio.run(seed())
    return [GONE, "gone-7731-thr", "gone-7731-clone", "erasable-words-5521"]


def _copies(path: Path, needles: list[str]) -> dict[str, list[str]]:
    """The needles found in the raw bytes of the database's files."""
    found = {}
    for file in path.parent.glob(f"{path.name}*"):
        data = file.read_bytes()
        found[file.name] = [needle for needle in needles if needle.encode() in data]
    return {name: hits for name, hits in found.items() if hits}


def test_erase_leaves_no_copy_in_a_sqlite_file_and_a_rerun_finishes_a_held_off_rebuild(tmp_path: Path) -> None:
    """Issue 25: after ``erase``, the erased user's ids and text were still
    in the SQLite file (old copies of cells in rebuilt pages). The erasure
    now rebuilds the file; when a reader holds an older snapshot past the
    timeout the command fails retryably (one red line, exit 2), and running
    it again, though the resource is gone, finishes the rebuild."""
    path = tmp_path / "agent.db"
    needles = _seed_rebuilt_pages(path)
    reader = sqlite3.connect(path, isolation_level=None)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM messages").fetchone()
        held = cli("erase", "--storage", f"sqlite:///{path}?timeout=0.2", "--resource", GONE, "--yes")
        assert held.returncode == 2 and held.stdout == "", held.stderr
        assert "run the command again" in held.stderr, held.stderr
        reader.execute("COMMIT")  # still open: its close would checkpoint the rebuilt file as the last one
        assert _copies(path, needles)
        again = cli("erase", "--storage", f"sqlite:///{path}", "--resource", GONE, "--yes")
        assert again.returncode == 0 and again.stdout.startswith("erased nothing: "), again.stderr
        assert f"hint: the store holds no resource {GONE!r}" in again.stderr, again.stderr
        assert _copies(path, needles) == {}
    finally:
        reader.close()
    assert asyncio.run(_left(f"sqlite:///{path}", "keeper")) == (5, 120)


def test_erase_of_a_sqlite_store_leaves_no_copy_in_its_files(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    needles = _seed_rebuilt_pages(path)
    assert _copies(path, needles)
    done = cli("erase", "--storage", f"sqlite:///{path}", "--resource", GONE, "--yes")
    assert done.returncode == 0, done.stderr
    assert _copies(path, needles) == {}


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_erase_without_vector_says_the_index_keeps_the_entries_and_a_rerun_with_vector_erases_them(
    tmp_path: Path,
) -> None:
    """Issue 26: ``erase`` without ``--vector`` printed ``erased resource
    'u1': ...`` and no word that a vector index serving the store still
    holds her entries. Now one note line on stderr names the rerun that
    erases them; that rerun (storage no longer holds the resource) erases
    them, counted first by ``--dry-run`` (before: "nothing to erase"),
    and the index is then in step."""
    url, vectors = _seed(tmp_path, vectors=True)
    assert vectors is not None
    done = cli("erase", url, "--resource", "u1", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("erased resource 'u1': 2 threads"), done.stdout
    [note] = done.stderr.splitlines()
    again = f"memory-core erase {url} --vector VECTOR_URL --resource u1 --yes"
    assert note.startswith("note: storage only; a vector index") and f"until you run {again} (VECTOR_URL: " in note
    counted = cli("erase", url, "--vector", vectors, "--resource", "u1", "--dry-run")
    assert counted.returncode == 0 and counted.stdout.startswith("would erase resource 'u1': 0 threads"), counted
    assert " 0 vectors" not in counted.stdout and "vectors" in counted.stdout, counted.stdout
    rerun = cli(*again.replace("VECTOR_URL", vectors).split()[1:])
    assert rerun.returncode == 0 and rerun.stderr == "", rerun.stderr
    assert "0 messages" in rerun.stdout and " 0 vectors" not in rerun.stdout, rerun.stdout
    checked = cli("check-index", url, "--vector", vectors)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "u1" not in checked.stdout, checked.stdout


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_erase_vector_removes_the_lexical_documents_of_text_less_messages_storage_no_longer_holds(
    tmp_path: Path,
) -> None:
    """Issue 26: a resource erased from storage alone whose messages had no
    text keeps lexical documents and no vector; ``erase --vector`` then
    said "nothing was erased" (it counted vectors only) though it removed
    them. Now it reports the erasure, and check-index is in step after."""
    url, vector = _seed(tmp_path, vectors=True)
    assert vector is not None

    async def silent() -> None:
        async with Memory(await connect(url), await connect_vector(vector), LexicalHashEmbedder()) as memory:
            await memory.storage.save_thread(Thread("t9", "u9"))
            await memory.save_messages([{"id": "t9-0", "thread_id": "t9", "role": "assistant", "content": ""}])
            await memory.storage.delete_resource("u9")  # storage alone

    asyncio.run(silent())
    done = cli("erase", url, "--vector", vector, "--resource", "u9", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("erased resource 'u9': 0 threads, 0 messages, 0 vectors"), done.stdout
    assert "hint" not in done.stderr, done.stderr
    checked = cli("check-index", url, "--vector", vector)
    assert checked.returncode == 0, checked.stdout + checked.stderr
