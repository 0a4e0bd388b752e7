"""The command line and the demo for a fresh user: mistakes are one red line
and exit code 2, and the demo's output shows long paths whole and marks the
messages recall found."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import re
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from memory_core import (
    Memory,
    MemoryConfig,
    Thread,
    WorkingMemory,
    connect,
)
from memory_core.cli import app, build_app
from memory_core.cli.demo import print_banner, run_session
from memory_core.cli.locomo import load_sample
from tests.cli_run import cli

pytestmark = pytest.mark.anyio

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["demo", "--storage", "bogus://x", "--vector", "none"], "unknown storage scheme 'bogus'"),
        (["demo", "--storage", "memory://", "--vector", "nope://x"], "unknown vector store scheme 'nope'"),
        (["demo", "--locomo", "/nonexistent/locomo"], "/nonexistent/locomo does not exist"),
        (["demo", "--embedder", "bogus"], "unknown embedder 'bogus'"),
        (["demo", "--storage", "sqlite:///x.db?timeout=soon", "--vector", "none"], "must be a number of seconds"),
        (["demo", "--db", "{tmp}/file.txt/x.db", "--vector", "none"], "file.txt' is not a folder"),
    ],
)
def test_cli_user_errors_are_one_red_line_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("a file, not a folder")
    result = CliRunner().invoke(app, [arg.replace("{tmp}", str(tmp_path)) for arg in args])
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1
    assert "Traceback" not in result.output


def test_cli_check_without_the_conformance_package_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Both entries: an earlier test may have imported the check module, and
    # a cached submodule would be found behind a hidden parent.
    monkeypatch.setitem(sys.modules, "memory_core_conformance", None)
    monkeypatch.setitem(sys.modules, "memory_core_conformance.check", None)
    monkeypatch.setitem(sys.modules, "memory_core_conformance.cli", None)
    # A fresh app: its `check` entry point now fails to load.
    result = CliRunner().invoke(build_app(), ["check", "memory://"])
    assert result.exit_code == 2
    assert "memory-core-conformance package is not installed" in result.output
    assert "pip install -e ./conformance" in result.output


def test_demo_banner_prints_long_paths_whole() -> None:
    out = io.StringIO()
    vector = "qdrant+path:///" + "/".join(["a-rather-long-folder-name"] * 6) + "/memory-core-demo.vectors"
    print_banner(Console(file=out, width=40), "sqlite:///memory-core-demo.db", vector)
    assert vector in out.getvalue()


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
async def test_demo_marks_the_found_messages() -> None:
    from memory_core import connect_vector

    conversation = load_sample()[0]
    out = io.StringIO()
    console = Console(file=out, width=250)
    config = MemoryConfig(working_memory=WorkingMemory(enabled=True))
    async with Memory(await connect("memory://"), await connect_vector("qdrant::memory:"), config=config) as memory:
        for thread in conversation.threads:
            await memory.storage.save_thread(thread)
        await memory.save_messages(list(conversation.messages))
        await run_session(memory, conversation, console)
    lines = out.getvalue().splitlines()
    include_step = next(i for i, line in enumerate(lines) if line.startswith("5. include window"))
    recall_step = next(i for i, line in enumerate(lines) if line.startswith("8. "))  # semantic or lexical recall
    rank = re.compile(r"^│\s+#(\d+) │")
    target_rows = [line for line in lines[include_step:recall_step] if rank.match(line)]
    assert len(target_rows) == 1 and "'locomo-sample:" in lines[include_step]
    assert target_rows[0].split("│")[3].strip() == lines[include_step].split("'")[1]
    hit_ranks = sorted(int(m.group(1)) for line in lines[recall_step:] if (m := rank.match(line)))
    assert hit_ranks == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["check-index", "sqlite:///x.db"], "error: Missing option '--vector'; see "),
        (["prune"], "error: Missing argument 'URL'; see "),
        (["import", "--bogus", "x"], "error: No such option: --bogus; see "),
        (["exprot"], "error: No such command 'exprot'. Did you mean 'export'? See "),
        (["demo", "--embedder"], "error: Option '--embedder' requires an argument; see "),
    ],
)
def test_usage_errors_are_one_red_line_on_stderr_and_exit_2(args: list[str], says: str, tmp_path: Path) -> None:
    """Before: typer's box of several lines (``Usage: ... ╭─ Error ─╮``)."""
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(says) and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.rstrip().endswith("--help"), done.stderr
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_cli_errors_show_no_rule_ids(tmp_path: Path) -> None:
    """Before: ``error: [R-TIME] --before: ...``, ``error: [R-ID] --resource:
    ...`` and ``error: line 2: [R-TIME] thread.created_at: ...``: ids of the
    specification's rules, which a command-line user has no document for.
    The field and the reason stay; the library's messages keep the id
    (``ValidationError.rule`` too)."""
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    source = f"sqlite:///{tmp_path / 'source.db'}"

    async def seed() -> None:
        async with await connect(source) as storage:
            await storage.save_thread(Thread("t1", "r1"))

    asyncio.run(seed())
    export = cli("export", source).stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text(re.sub(r'"created_at":"[^"]*"', '"created_at":"bad"', export, count=1))
    cases = [
        (["prune", source, "--before", "xyz"], "--before: not an ISO-8601 datetime"),
        (["prune", source, "--before", "1800-01-01"], "--before: 1800-01-01"),
        (["export", source, "--resource", "   "], "--resource: must not be all whitespace"),
        (["import", url, "-i", str(bad)], "line 2: thread.created_at: not an ISO-8601 datetime"),
    ]
    for args, says in cases:
        done = cli(*args)
        assert done.returncode == 2, done.stderr
        assert says in done.stderr, done.stderr
        assert "R-" not in done.stderr, done.stderr


def test_plain_words_drops_rule_ids_only() -> None:
    from memory_core.cli.host import plain_words
    from memory_core.errors import ValidationError

    exc = ValidationError("message.sequence", "a stored message has its sequence (R-ORDER); none here", "R-ORDER")
    assert str(exc).startswith("[R-ORDER] ")  # the library's convention stays
    assert plain_words(str(exc)) == "message.sequence: a stored message has its sequence; none here"
    assert plain_words("line 2: [R-TIME] x: y (R-TIME-2)") == "line 2: x: y"
    assert plain_words("keeps [R-] and R-ID alone") == "keeps [R-] and R-ID alone"


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_a_missing_vectors_folder_is_named_by_the_option_that_gave_it(tmp_path: Path) -> None:
    """Before: ``demo --vector qdrant+path:///missing/v`` said ``error: url:
    folder ... does not exist``: no option is called url."""
    storage = f"sqlite:///{tmp_path / 'agent.db'}"
    done = cli("demo", "--storage", storage, "--vector", f"qdrant+path:///{tmp_path / 'no' / 'v'}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --vector: folder "), done.stderr
    missing = cli("demo", "--storage", f"sqlite:///{tmp_path / 'no' / 'agent.db'}", "--vector", "none")
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.startswith("error: --storage: folder "), missing.stderr


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
@pytest.mark.parametrize("command", [["demo"], ["reindex", "{db}", "--new"], ["import", "{db}"]])
def test_a_misspelt_embedder_is_named_as_the_option(command: list[str], tmp_path: Path) -> None:
    """``--embedder lexcal`` is refused naming ``--embedder`` (the option
    the user typed), not the library's field ``embedder`` (trial 26b)."""
    db = f"sqlite:///{tmp_path / 'agent.db'}"

    async def made() -> None:
        async with await connect(db):
            pass

    asyncio.run(made())
    args = [a.replace("{db}", db) for a in command]
    done = cli(*args, "--vector", f"qdrant+path:///{tmp_path / 'vectors'}", "--embedder", "lexcal")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --embedder: unknown embedder 'lexcal'"), done.stderr
