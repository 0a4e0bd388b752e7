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
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import Memory, Thread, connect, connect_vector
from memory_core.embedders import LexicalHashEmbedder, minilm_available
from memory_core.vector import BaseVectorStore
from tests.cli_run import cli, cli_environment

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
    assert lines[0].startswith("resource 'r1': 5 messages stored, 5 of them with text; index: vectors for 3 "), lines
    assert lines[0].endswith(": behind") and lines[1].endswith(": 1 orphaned"), lines
    assert lines[1].startswith("resource 'r2': 2 messages stored, 2 of them with text; index: vectors for 3 "), lines
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


def test_the_counts_say_why_lexical_documents_outnumber_vectors(tmp_path: Path) -> None:
    """Issue 26: ``12 messages stored (10 with text), 10 indexed, 12 lexical
    documents: in step`` left a user wondering why there were more
    documents than messages with text. Every message has a lexical
    document (it counts in BM25's statistics), only text gets vectors: the
    line says which count counts what."""
    url, vectors = _store(tmp_path)
    asyncio.run(_save_silent(url, vectors))
    checked = cli("check-index", url, "--vector", vectors, "--embedder", "lexical", "--resource", "r2")
    assert checked.stdout.strip() == (  # t2-m0, deleted through storage alone, keeps its entries
        "resource 'r2': 3 messages stored, 2 of them with text; index: vectors for 3 (messages with text), "
        "lexical documents for 4 (every message): 1 orphaned"
    ), checked.stdout
    assert cli("reindex", url, "--vector", vectors, "--embedder", "lexical", "--resource", "r2").returncode == 0
    again = cli("check-index", url, "--vector", vectors, "--embedder", "lexical", "--resource", "r2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip() == (
        "resource 'r2': 3 messages stored, 2 of them with text; index: vectors for 2 (messages with text), "
        "lexical documents for 3 (every message): in step"
    ), again.stdout


async def _save_silent(url: str, vectors: str) -> None:
    """A message without text (a tool call's turn) saved into t2 through Memory."""
    storage = await connect(url)
    async with Memory(storage, await connect_vector(vectors), LexicalHashEmbedder()) as memory:
        await memory.save_messages([{**_message("t2-silent", "t2"), "content": ""}])


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
    assert lines[1].startswith("resources storage no longer holds (erased or pruned without --vector): 'r2'; "), lines
    assert lines[1].endswith("index: vectors for 3 messages, lexical documents for 3: 3 orphaned"), lines
    erase = f"memory-core erase {url} --vector {vectors} --resource r2 --yes"
    assert checked.stderr.strip().startswith("1 of 2 not in step; the orphans of resources"), checked.stderr
    assert checked.stderr.strip().endswith(f"go with {erase}"), checked.stderr
    repair = f"run memory-core reindex {url} --vector {vectors} --embedder lexical"

    erased = cli("check-index", url, "--vector", vectors, "--embedder", "lexical", "--resource", "r2")
    assert erased.returncode == 1 and erased.stderr.startswith("hint: the store holds no resource 'r2'"), erased.stderr
    assert erased.stdout.startswith("resource 'r2': 0 messages stored, 0 of them with text; index: vectors for 3 ")
    assert erased.stdout.strip().endswith(": 3 orphaned"), erased.stdout

    rebuilt = cli("reindex", url, *repair.split()[4:])  # drops their vectors and documents too
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "dropped the index entries of 3 messages storage no longer holds" in rebuilt.stderr, rebuilt.stderr
    again = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines() == [lines[0]], again.stdout


def test_the_orphans_of_a_resource_erased_without_vector_go_with_the_erase_check_index_names(tmp_path: Path) -> None:
    """Issue 26: after ``erase`` without ``--vector``, check-index's advice
    for the entries of resources storage no longer holds (``erase --vector
    --resource ID``, ID the erased resource) is a command that works: the
    index is then in step. Before, the advice said ``--resource ID``, "ID
    each such resource's id", and no output named the erased resource."""
    url, vectors = _store(tmp_path)
    assert cli("reindex", url, "--vector", vectors, "--embedder", "lexical").returncode == 0
    assert cli("erase", url, "--resource", "r2", "--yes").returncode == 0  # storage alone
    checked = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert checked.returncode == 1 and "probably another store" not in checked.stderr, checked.stderr
    assert "(erased or pruned without --vector)" in checked.stdout.splitlines()[-1], checked.stdout
    assert "'r2'" in checked.stdout.splitlines()[-1], checked.stdout
    advice = checked.stderr.strip().split("go with ", 1)[1]
    followed = cli(*shlex.split(advice)[1:])  # as it is
    assert followed.returncode == 0, followed.stderr
    again = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(again.stdout.splitlines()) == 1 and again.stdout.startswith("resource 'r1'"), again.stdout


def _many(tmp: Path, resources: int) -> tuple[str, str]:
    """Resources r00.. (one thread each: two messages with text, one
    without), indexed; then every one but r00 erased through storage alone."""
    url, vectors = f"sqlite:///{tmp / 'agent.db'}", f"qdrant+path:///{tmp / 'vectors'}"

    async def seed() -> None:
        storage = await connect(url)
        async with Memory(storage, await connect_vector(vectors), LexicalHashEmbedder()) as memory:
            for n in range(resources):
                await storage.save_thread(Thread(f"t{n:02}", f"r{n:02}", created_at=OLD))
                silent = {**_message(f"t{n:02}-silent", f"t{n:02}"), "content": ""}
                await memory.save_messages([_message(f"t{n:02}-m{i}", f"t{n:02}") for i in range(2)] + [silent])
            for n in range(1, resources):
                await storage.delete_resource(f"r{n:02}")  # storage alone

    asyncio.run(seed())
    return url, vectors


@pytest.mark.parametrize("erased", [3, 12])
def test_check_index_names_the_erased_resources_and_its_advice_runs_as_it_is(tmp_path: Path, erased: int) -> None:
    """Issue 26: the orphans of resources erased without ``--vector`` are
    listed by resource (at most ten named, the rest counted), and the advice
    is a command that runs as printed: one ``erase --vector`` per named
    resource (a shell loop), or, past ten, the whole-store reindex. Before,
    no resource was named and the advice said ``--resource ID``."""
    url, vectors = _many(tmp_path, erased + 1)
    checked = cli("check-index", url, "--vector", vectors)
    assert checked.returncode == 1, checked.stderr
    last = checked.stdout.splitlines()[-1]
    named = ", ".join(repr(f"r{n:02}") for n in range(1, min(erased, 10) + 1))
    rest = " and 2 more" if erased > 10 else ""
    assert last.startswith(f"resources storage no longer holds (erased or pruned without --vector): {named}{rest}; ")
    assert last.endswith(
        f"vectors for {2 * erased} messages, lexical documents for {3 * erased}: {3 * erased} orphaned"
    )
    advice = checked.stderr.strip().split("go with " if erased <= 10 else "; run ", 1)[1]
    if erased > 10:
        advice = advice.split(" (the whole store", 1)[0]
    assert "--resource ID " not in advice, advice
    followed = _shell(advice)
    assert followed.returncode == 0, followed.stderr
    again = cli("check-index", url, "--vector", vectors)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines() == checked.stdout.splitlines()[:1], again.stdout


def test_a_whole_store_reindex_drops_the_text_less_documents_of_erased_resources(tmp_path: Path) -> None:
    """Issue 26: after the whole-store reindex the index holds exactly the
    current storage's messages. Before, the lexical documents of erased
    resources' messages without text (no vector to find them by) stayed:
    check-index still said "lexical documents for 3: 3 orphaned"."""
    url, vectors = _many(tmp_path, 4)
    rebuilt = cli("reindex", url, "--vector", vectors)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "dropped the index entries of 9 messages storage no longer holds" in rebuilt.stderr, rebuilt.stderr

    async def held() -> tuple[set[str], dict[str, str]]:
        async with await connect_vector(vectors) as index:
            assert isinstance(index, BaseVectorStore)
            return await index.message_ids(), await index.document_ids()

    ids, documents = asyncio.run(held())
    assert ids == {"t00-m0", "t00-m1"} and set(documents) == ids | {"t00-silent"}, (ids, documents)
    checked = cli("check-index", url, "--vector", vectors)
    assert checked.returncode == 0 and len(checked.stdout.splitlines()) == 1, checked.stdout + checked.stderr


def _shell(advice: str) -> subprocess.CompletedProcess[str]:
    """Run printed advice in a shell, its ``memory-core`` this checkout's
    (``python -m memory_core`` with the test run's environment)."""
    command = advice.replace("memory-core ", f"{shlex.quote(sys.executable)} -m memory_core ")
    return subprocess.run(command, shell=True, capture_output=True, text=True, env=cli_environment(), check=False)


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
        whole = f"or build one there with memory-core reindex {url} --new --vector {vectors}"
        assert refused.returncode == 2 and whole in refused.stderr, refused.stderr
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
        assert "--new --vector NEW_URL --embedder" in lines[0], lines  # the whole store: its URL and minilm
    after = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert (after.returncode, after.stdout) == (before.returncode, before.stdout), after.stderr  # nothing written
    fresh = f"qdrant+path:///{tmp_path / 'fresh'}"
    built = cli("reindex", url, "--vector", fresh, "--embedder", "lexical", "--new")
    assert built.returncode == 0, built.stderr


@pytest.mark.skipif(not minilm_available(), reason="MiniLM is not installed")
def test_check_index_advice_for_another_embedder_is_a_reindex_that_works(tmp_path: Path) -> None:
    """Issue 26: check-index over a lexical index with ``--embedder minilm``
    advised ``reindex URL --vector URL --embedder NAME``, which the
    whole-store reindex then refused naming ``resource 'r1'``, a resource
    the user never passed. Now the refusal speaks of the whole index, and
    both name ``reindex URL --new --vector NEW_URL --embedder minilm``:
    followed (NEW_URL a new folder), it succeeds and the new index is in step."""
    url, vectors = _store(tmp_path)
    checked = cli("check-index", url, "--vector", vectors, "--embedder", "minilm")
    assert checked.returncode == 2 and checked.stderr.count("\n") == 1, checked.stderr
    advice = f"memory-core reindex {url} --new --vector NEW_URL --embedder minilm"
    assert advice in checked.stderr and "made by --embedder lexical" in checked.stderr, checked.stderr
    refused = cli("reindex", url, "--vector", vectors, "--embedder", "minilm")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "resource 'r" not in refused.stderr and advice in refused.stderr, refused.stderr
    assert "nothing was written" in refused.stderr, refused.stderr
    fresh = f"qdrant+path:///{tmp_path / 'minilm'}"
    followed = cli(*shlex.split(advice.replace("NEW_URL", fresh))[1:])
    assert followed.returncode == 0, followed.stderr
    again = cli("check-index", url, "--vector", fresh, "--embedder", "minilm")
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_vectors_folder_another_process_holds_is_the_same_clear_line_for_every_command(tmp_path: Path) -> None:
    """Issue 26: with ``Memory.open(..., vector="qdrant+path:///...")`` open
    in another process, check-index, reindex, ``prune --vector`` (after
    printing its cutoff) and ``erase --vector --dry-run`` said the engine's
    ``failed to open WAL ...: Kind(WouldBlock)``, while import said which
    folder is held and the ways out. Now every one says the latter, before
    anything is printed or opened."""
    url, vectors = _store(tmp_path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys\n"
            "from memory_core import Memory\n"
            "async def main():\n"
            f"    async with await Memory.open({url!r}, vector={vectors!r}, embedder='lexical'):\n"
            "        print('ready', flush=True)\n"
            "        sys.stdin.readline()\n"
            "asyncio.run(main())\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        for args in (
            ["check-index", url, "--vector", vectors],
            ["reindex", url, "--vector", vectors],
            ["reindex", url, "--vector", vectors, "--new"],
            ["prune", url, "--older-than", "30d", "--vector", vectors],
            ["erase", url, "--resource", "r1", "--vector", vectors, "--dry-run"],
        ):
            done = cli(*args)
            assert done.returncode == 2 and done.stdout == "", (args, done.stderr)
            assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, (args, done.stderr)
            assert "is open in another process or store" in done.stderr, (args, done.stderr)
            assert "WouldBlock" not in done.stderr, (args, done.stderr)
    finally:
        holder.communicate("\n", timeout=60)


@pytest.mark.skipif(not minilm_available(), reason="MiniLM is not installed (the default would be the index's own)")
def test_import_and_copy_without_embedder_follow_the_index_they_add_to(tmp_path: Path) -> None:
    """With MiniLM installed, an index the lexical embedder built is added
    to with the lexical embedder, as ``Memory`` and ``check-index`` read it
    (the default changes when MiniLM is installed, the index does not).
    Before: import and copy took MiniLM and refused the index, so an
    interrupted import could not be resumed as its own message said."""
    url, vectors = _store(tmp_path)
    exported = cli("export", url, "-o", str(tmp_path / "all.jsonl"))
    assert exported.returncode == 0, exported.stderr
    imported = cli(
        "import", f"sqlite:///{tmp_path / 'more.db'}", "-i", str(tmp_path / "all.jsonl"), "--vector", vectors
    )
    assert imported.returncode == 0, imported.stderr
    assert "re-embedded with lexical-hash-1024" in imported.stderr, imported.stderr
    copied = cli("copy", url, f"sqlite:///{tmp_path / 'copy.db'}", "--vector", vectors)
    assert copied.returncode == 0, copied.stderr
    assert "re-embedded with lexical-hash-1024" in copied.stderr, copied.stderr


def test_every_count_of_another_embedders_index_says_what_it_counts(tmp_path: Path) -> None:
    """Issue 26: over an index whose vectors another embedder made (two
    chunks for each of two messages), check-index said "holds
    vectors (4 of dimension 3)" while the index holds vectors for 2
    messages: the raw point count (``dimension_counts``) unnamed beside
    ``count()``'s. Now each names its unit: 4 vectors (text chunks)."""
    import numpy as np

    from memory_core.vector import VectorPoint

    url, vectors = f"sqlite:///{tmp_path / 'agent.db'}", f"qdrant+path:///{tmp_path / 'vectors'}"

    async def seed() -> None:
        async with await connect(url) as storage:
            await storage.save_thread(Thread("t1", "r1", created_at=OLD))
            await storage.save_messages([_message(f"m{i}", "t1") for i in range(2)])
        async with await connect_vector(vectors) as index:
            unit = np.array([1.0, 0.0, 0.0], dtype=np.float32)
            await index.upsert([VectorPoint(f"m{i}", c, unit, "t1", "r1", 0) for i in range(2) for c in range(2)])
            assert (await index.count(), await index.count_points()) == (2, 4)

    asyncio.run(seed())
    refused = cli("check-index", url, "--vector", vectors, "--embedder", "lexical")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "holds 4 vectors (text chunks) of dimension 3 that --embedder lexical" in refused.stderr, refused.stderr
