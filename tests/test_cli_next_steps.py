"""Every error line of the command line says what to do next (issue 26):
one case of each kind of error the commands report (a file in the way, a
missing folder or file, a URL that names no store, an input that is no
export, a record the destination holds otherwise, two options that do not
go together, the same store twice, a backend that cannot open, an ``OSError``),
each through a real ``memory-core`` process. Before, ``--output exists``,
"exists in the destination with other content" and "holds no memory-core
vectors" (among others) stopped at the diagnosis."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from pathlib import Path

import pytest

import memory_core
from memory_core import Thread, connect
from tests.cli_run import cli

pytest.importorskip("memory_core_sqlite")

HAS_QDRANT = "qdrant" in memory_core.registry.known_schemes(memory_core.registry.VECTOR_GROUP)

NEXT_STEP = re.compile(
    r"[;:,] (?:or )?(?:check|give|create|remove|run|pass|add|leave out|import|delete|install|use|open|fix|name)\b"
    r"|did you mean|pip install"
)
"""An imperative after the diagnosis: the shape of a next step."""


def _store(path: Path, title: str = "a") -> str:
    url = f"sqlite:///{path}"

    async def seed() -> None:
        async with await connect(url) as store:
            await store.save_thread(Thread("t1", "r1", title=title))

    asyncio.run(seed())
    return url


def _cases(tmp: Path) -> list[tuple[list[str], str]]:
    """``(arguments, the next step the error line must name)``, one per kind."""
    source = _store(tmp / "a.db")
    other = _store(tmp / "b.db", title="another title")
    export = tmp / "a.jsonl"
    done = cli("export", source, "-o", str(export))
    assert done.returncode == 0, done.stderr
    not_export = tmp / "notes.txt"
    not_export.write_text("my notes\n")
    empty = tmp / "empty.db"
    empty.touch()
    not_db = tmp / "script.py"
    not_db.write_text("print('my work')\n")
    cases = [
        (["export", source, "-o", str(export)], "give another --output path, or remove the file first"),
        (["export", source, "-o", str(tmp / "nofolder" / "x.jsonl")], "create it first (mkdir -p"),
        (["export", f"sqlite:///{tmp / 'agnet.db'}"], "check the path for a typo"),
        (["export", f"sqlite:///{empty}"], "check the URL for a typo"),
        (["export", f"sqlite:///{not_db}"], "check that the URL names the store you mean"),
        (["export", source, "-o", "/proc/memory-core.jsonl"], "check the path and its permissions"),
        (["import", other, "-i", str(tmp)], "give the path of an export"),
        (["import", other, "-i", str(not_export)], "give a file that memory-core export wrote"),
        (["import", other, "-i", str(export)], "import into a store that does not hold it, or delete it there first"),
        (["import", other, "-i", str(export), "--embedder", "lexical"], "add --vector URL or leave out --embedder"),
        (["copy", source, source], "give a DESTINATION that names another store"),
        (["export", source, "-o", str(tmp)], "give a file path, for example"),
        (["export", f"sqlite:///{tmp}"], "name a file beside it, e.g. sqlite:///"),
        (["prune", source, "--older-than", "1d", "--threads", "--messages"], "give --threads or --messages"),
    ]
    if HAS_QDRANT:
        (tmp / "vectors").mkdir()
        vectors = f"qdrant+path:///{tmp / 'vectors'}"
        cases.append((["prune", source, "--older-than", "1d", "--vector", vectors], "check the URL for a typo"))
    return cases


def test_every_cli_error_names_a_next_step(tmp_path: Path) -> None:
    failures = []
    for args, step in _cases(tmp_path):
        done = cli(*args)
        text = " ".join(done.stderr.split())
        line = text[text.find("error: ") :]  # after a progress bar, if one was drawn
        if done.returncode != 2 or "error: " not in text or "Traceback" in done.stderr:
            failures.append(f"{args}: exit {done.returncode}, {done.stderr!r}")
        elif step not in line or not NEXT_STEP.search(line):
            failures.append(f"{args}: no next step ({step!r}) in {line!r}")
    assert failures == [], "\n".join(failures)


def test_cli_errors_spell_it_URL(tmp_path: Path) -> None:
    """Every error line about a URL says "URL" (or the argument's name), never
    "url" (issue 26). Before: "url: unknown storage scheme ...", "url option
    'journal': given twice", "cannot check ...: url: folder ... does not exist"."""
    source = _store(tmp_path / "a.db")
    cases = [
        (["export", "bogus://x"], "URL: unknown storage scheme 'bogus'"),
        (["export", f"{source}?timeout=1&timeout=2"], "URL option 'timeout': given twice"),
        (["copy", source, "bogus://x"], "DESTINATION: unknown storage scheme 'bogus'"),
        (
            ["prune", source, "--older-than", "1d", "--vector", "bogus://x"],
            "--vector: unknown vector store scheme 'bogus'",
        ),
    ]
    if importlib.util.find_spec("memory_core_conformance") is not None:
        missing = tmp_path / "missing"
        cases.append((["check", f"sqlite:///{missing}/x.db"], f": folder '{missing}' does not exist"))
        cases.append((["check", "bogus://x"], "URL: unknown storage scheme 'bogus'"))
    for args, says in cases:
        done = cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr and re.search(r"\burl\b", done.stderr) is None, (args, done.stderr)
