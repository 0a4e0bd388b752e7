"""``memory-core check-index`` and ``memory-core reindex`` (issue 26):
``Memory.check_index`` and ``Memory.reindex`` on the command line, through
a real process. A store whose index fell behind (messages saved through
storage alone) or holds orphans (messages deleted through storage alone)
is reported resource by resource, exit 1 and the exact ``reindex`` command
that repairs it; after that command the index is in step (exit 0). Before,
no command offered either."""

from __future__ import annotations

import asyncio
import importlib.util
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import Memory, Thread, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder
from tests.cli_run import cli

pytest.importorskip("memory_core_sqlite")
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("memory_core_qdrant") is None, reason="memory-core-qdrant is not installed"
)

OLD = datetime(2025, 1, 1, tzinfo=UTC)


def _message(id: str, thread: str) -> dict[str, object]:
    return {"id": id, "thread_id": thread, "role": "user", "content": f"words of {id}", "created_at": OLD}


def _store(tmp: Path) -> tuple[str, str]:
    """Resources r1 (thread t1) and r2 (thread t2), three messages each, indexed;
    then two messages saved into t1 and one deleted from t2 through storage alone."""
    url, vectors = f"sqlite:///{tmp / 'agent.db'}", f"qdrant+path:///{tmp / 'vectors'}"

    async def seed() -> None:
        storage = await connect(url)
        index = await connect_vector(vectors)
        async with Memory(storage, index, LexicalHashEmbedder()) as memory:
            for thread, resource in (("t1", "r1"), ("t2", "r2")):
                await storage.save_thread(Thread(thread, resource, created_at=OLD))
                await memory.save_messages([_message(f"{thread}-m{i}", thread) for i in range(3)])
            await storage.save_messages([_message(f"t1-late{i}", "t1") for i in range(2)])
            await storage.delete_messages(["t2-m0"])

    asyncio.run(seed())
    return url, vectors


def test_check_index_reports_and_reindex_repairs(tmp_path: Path) -> None:
    url, vectors = _store(tmp_path)
    checked = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert checked.returncode == 1, checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[0].startswith("resource 'r1': 5 messages stored (5 with text), 3 indexed"), lines
    assert lines[0].endswith(": behind") and lines[1].endswith(": 1 orphaned"), lines
    assert lines[1].startswith("resource 'r2': 2 messages stored (2 with text), 3 indexed"), lines
    repair = f"run memory-core reindex {url} --vector {vectors} --embedder lexical"
    assert checked.stderr.strip() == f"2 of 2 not in step; {repair}", checked.stderr

    one = cli("check-index", url, "--vector", vectors, "--resource", "r2", "--embedder", "lexical")
    scoped = f"run memory-core reindex {url} --vector {vectors} --resource r2 --embedder lexical"
    assert one.returncode == 1 and one.stderr.strip() == f"1 of 1 not in step; {scoped}", one.stderr

    rebuilt = cli("reindex", url, *repair.split()[4:])
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stdout.strip() == "reindexed 7 messages in 2 resources", rebuilt.stdout

    again = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert again.returncode == 0, again.stderr
    assert [line.rsplit(": ", 1)[1] for line in again.stdout.splitlines()] == ["in step", "in step"], again.stdout
    plain = cli("check-index", url, "--vector", vectors)  # the embedder the index shows: lexical
    assert plain.returncode == 0, plain.stderr
    thread = cli("check-index", url, "--vector", vectors, "--embedder", "lexical", "--thread", "t1")
    assert thread.returncode == 0 and thread.stdout.startswith("thread 't1': 5 messages stored"), thread.stdout


def test_index_command_mistakes_are_one_red_line(tmp_path: Path) -> None:
    url, vectors = _store(tmp_path)
    (tmp_path / "vectrs").mkdir()
    misspelt = f"qdrant+path:///{tmp_path / 'vectrs'}"
    cases = [
        ("check-index", ["--resource", "r1", "--thread", "t1"], "give --resource or --thread, not both"),
        ("reindex", ["--thread", "t9"], "the store holds no thread 't9'; check the id"),
        ("check-index", ["--resource", ""], "--resource"),
    ]
    for command, args, says in cases:
        done = cli(command, url, "--vector", vectors, "--embedder", "lexical", *args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("error: ") and says in done.stderr and done.stderr.count("\n") == 1, done.stderr
    wrong = cli("reindex", url, "--vector", misspelt, "--embedder", "lexical")
    assert wrong.returncode == 2 and "check the URL for a typo" in wrong.stderr, wrong.stderr


def test_a_whole_store_check_finds_the_entries_of_an_erased_resource_and_reindex_drops_them(tmp_path: Path) -> None:
    """Resource r2 erased through storage alone: its 3 messages' vectors
    (and lexical documents, where kept) belong to no resource storage holds.
    Before, the whole-store check walked storage's resources only and said
    "in step" (exit 0), and reindex left them; only --resource r2 saw them."""
    url, vectors = f"sqlite:///{tmp_path / 'agent.db'}", f"qdrant+path:///{tmp_path / 'vectors'}"

    async def seed() -> None:
        storage = await connect(url)
        index = await connect_vector(vectors)
        async with Memory(storage, index, LexicalHashEmbedder()) as memory:
            for thread, resource in (("t1", "r1"), ("t2", "r2")):
                await storage.save_thread(Thread(thread, resource, created_at=OLD))
                await memory.save_messages([_message(f"{thread}-m{i}", thread) for i in range(3)])
            await storage.delete_resource("r2")  # storage alone

    asyncio.run(seed())
    checked = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[0].endswith(": in step") and len(lines) == 2, lines
    assert lines[1].startswith("resources storage no longer holds: 0 messages stored (0 with text), 3 indexed"), lines
    assert lines[1].endswith(": 3 orphaned"), lines
    repair = f"run memory-core reindex {url} --vector {vectors} --embedder lexical"
    assert checked.stderr.strip() == f"1 of 2 not in step; {repair}", checked.stderr

    erased = cli("check-index", url, "--vector", vectors, "--embedder", "lexical", "--resource", "r2")
    assert erased.returncode == 1 and erased.stderr.startswith("hint: the store holds no resource 'r2'"), erased.stderr
    assert erased.stdout.startswith("resource 'r2': 0 messages stored (0 with text), 3 indexed"), erased.stdout
    assert erased.stdout.strip().endswith(": 3 orphaned"), erased.stdout

    rebuilt = cli("reindex", url, *repair.split()[4:])
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "dropped the index entries of 3 messages storage no longer holds" in rebuilt.stderr, rebuilt.stderr
    again = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines() == [lines[0]], again.stdout


def test_an_index_of_another_store_is_flagged_and_refused_unless_forced(tmp_path: Path) -> None:
    """``--vector`` naming another store's folder: no message id in common.
    Before, check-index called it "behind" and suggested reindex, which exited
    0 and dropped every entry of the other store."""
    (tmp_path / "mine").mkdir()
    url, _ = _store(tmp_path / "mine")  # r1, r2: t1-*, t2-*
    other, theirs = f"sqlite:///{tmp_path / 'other.db'}", f"qdrant+path:///{tmp_path / 'theirs'}"

    async def seed() -> None:
        async with Memory(await connect(other), await connect_vector(theirs), LexicalHashEmbedder()) as memory:
            await memory.storage.save_thread(Thread("o1", "r1", created_at=OLD))
            await memory.save_messages([_message(f"o1-m{i}", "o1") for i in range(4)])

    asyncio.run(seed())
    checked = cli("check-index", url, "--vector", theirs, "--embedder", "lexical")
    assert checked.returncode == 1, checked.stderr
    [line] = checked.stderr.strip().splitlines()
    assert "holds the index entries of 4 messages and none of them is in this store" in line, line
    assert "probably another store's index" in line and "reindex " + url not in line, line

    refused = cli("reindex", url, "--vector", theirs, "--embedder", "lexical")
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1, refused.stderr
    assert "probably another store's index" in refused.stderr and "--force" in refused.stderr, refused.stderr
    assert cli("check-index", other, "--vector", theirs, "--embedder", "lexical").returncode == 0  # untouched

    forced = cli("reindex", url, "--vector", theirs, "--embedder", "lexical", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.strip() == "reindexed 7 messages in 2 resources", forced.stdout


def test_reindex_builds_an_index_into_a_new_or_empty_vector_store(tmp_path: Path) -> None:
    """``reindex --new`` is how an index is built for a store that has none
    (an import without ``--vector``, an index moved to a new folder): into
    an empty folder and into one that does not exist yet it builds the
    index, which ``check-index`` then finds in step. Without ``--new`` a
    vector URL naming no index is still refused as a probable typo, each
    command naming its own way out. Before: reindex refused both, advising
    to leave out the option it requires (trial 26b)."""
    url, _ = _store(tmp_path)
    (tmp_path / "fresh").mkdir()
    for folder in ("fresh", "new"):
        vectors = f"qdrant+path:///{tmp_path / folder}"
        refused = cli("check-index", url, "--vector", vectors)
        assert refused.returncode == 2 and "or build one with memory-core reindex --new" in refused.stderr
        typo = cli("reindex", url, "--vector", vectors, "--embedder", "lexical")
        assert typo.returncode == 2 and "check the URL for a typo" in typo.stderr, typo.stderr
        assert "or pass --new to build a new index there" in typo.stderr, typo.stderr
        built = cli("reindex", url, "--vector", vectors, "--embedder", "lexical", "--new")
        assert built.returncode == 0, built.stderr
        assert built.stdout.strip() == "reindexed 7 messages in 2 resources", built.stdout
        checked = cli("check-index", url, "--vector", vectors)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    one = cli("reindex", url, "--vector", f"qdrant+path:///{tmp_path / 'new'}", "--resource", "r1")
    assert one.stdout.strip() == "reindexed 5 messages in 1 resource", one.stdout


@pytest.mark.parametrize(
    ("command", "said"), [("check-index", "nothing to check"), ("reindex", "nothing was reindexed")]
)
def test_a_resource_the_store_does_not_hold_is_the_hint_alone(tmp_path: Path, command: str, said: str) -> None:
    """A misspelt ``--resource`` is one hint line naming close ids, exit 0,
    nothing on stdout. Before: ``check-index`` printed ``resource 'nobody':
    0 messages stored (0 with text), 0 indexed, 0 lexical documents: in
    step`` (a claim about nothing); ``reindex`` printed ``reindexed
    resource 'r3': 0 messages``, the hint, and ``reindexed 0 messages in 1
    resource``."""
    url, vectors = _store(tmp_path)
    done = cli(command, url, "--vector", vectors, "--embedder", "lexical", "--resource", "r3")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "", done.stdout
    assert done.stderr.startswith("hint: the store holds no resource 'r3' (no record, no thread)"), done.stderr
    assert f": {said}; it holds 'r1', 'r2'" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "reindexed resource" not in done.stderr


def test_reindex_of_part_of_an_index_with_another_embedder_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    """Before: ``reindex --resource r1 --embedder minilm`` over an index the
    lexical embedder built for r1 and r2 re-embedded r1 alone, leaving an
    index of two embedders (exit 0). The way out, a new index built whole,
    is taken by ``reindex --new`` into a new vector store. (MiniLM is never
    loaded: the refusal comes first.)"""
    url, vectors = _store(tmp_path)
    before = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    for scope in (["--resource", "r1"], ["--thread", "t2"], []):
        refused = cli("reindex", url, "--vector", vectors, "--embedder", "minilm", *scope)
        assert refused.returncode == 2 and refused.stdout == "", refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --embedder: the vector index holds"), lines
        assert "memory-core reindex URL --new --vector NEW_URL --embedder NAME" in lines[0], lines
    after = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert (after.returncode, after.stdout) == (before.returncode, before.stdout), after.stderr  # nothing written
    fresh = f"qdrant+path:///{tmp_path / 'fresh'}"
    built = cli("reindex", url, "--vector", fresh, "--embedder", "lexical", "--new")
    assert built.returncode == 0, built.stderr
