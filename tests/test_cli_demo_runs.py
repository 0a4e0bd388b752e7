"""``memory-core demo`` says what it does and removes only what it made
(issue 26), through a real process: a run over an earlier demo's files that
is interrupted puts them back, with one ``interrupted:`` line and none of
the library's log warnings; the banner names a namespace only when one is
used; ``--embedder`` is checked even when ``--vector none`` leaves it unused."""

from __future__ import annotations

import importlib.util
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli_run import cli, cli_process, interrupted

pytest.importorskip("memory_core_sqlite")


def _messages(db: Path) -> int:
    with sqlite3.connect(db) as connection:
        return int(connection.execute("SELECT count(*) FROM messages").fetchone()[0])


def test_demo_with_vector_none_names_no_namespace(tmp_path: Path) -> None:
    """Before: ``namespace: memory_core_demo_<hex> (removed when the demo
    ends)`` while the --db file kept all 36 messages."""
    db = tmp_path / "d.db"
    done = cli("demo", "--db", str(db), "--vector", "none")
    assert done.returncode == 0, done.stderr
    assert "namespace" not in done.stdout and "removed when the demo ends" not in done.stdout, done.stdout
    assert _messages(db) == 36


def test_a_misspelt_embedder_is_refused_with_vector_none(tmp_path: Path) -> None:
    """Before: ``--embedder minlm`` was accepted silently when ``--vector
    none`` left it unused (and refused otherwise)."""
    done = cli("demo", "--db", str(tmp_path / "d.db"), "--vector", "none", "--embedder", "minlm")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --embedder: unknown embedder 'minlm'"), done.stderr
    assert done.stderr.count("\n") == 1 and list(tmp_path.iterdir()) == []


@pytest.mark.skipif(importlib.util.find_spec("memory_core_qdrant") is None, reason="needs memory-core-qdrant")
@pytest.mark.parametrize("pause", [0.0, 1.0, 2.5])
def test_a_ctrl_c_on_a_rerun_keeps_the_earlier_demo_and_is_one_line(pause: float, tmp_path: Path) -> None:
    """An earlier demo's x.db and x.vectors "stay for you to look at": a
    second run interrupted while it loads removes only what it made and
    puts them back; stderr is the demo's one ``interrupted:`` line. Before:
    both were deleted, and the library's warnings about the cut writes ("a
    Memory write was cut off by its event loop's shutdown ...") came too."""
    db = tmp_path / "x.db"
    first = cli("demo", "--db", str(db), "--embedder", "lexical")
    assert first.returncode == 0, first.stderr
    before = sorted(path.name for path in tmp_path.iterdir())
    assert before == ["x.db", "x.vectors"], before
    process = cli_process(
        "demo", "--db", str(db), "--embedder", "lexical", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )

    earlier = db.stat().st_ino

    def replaced() -> bool:  # the run has begun on the files: x.db is no longer the earlier one
        try:
            return db.stat().st_ino != earlier
        except FileNotFoundError:
            return True

    def loading() -> None:
        deadline = time.monotonic() + 60
        while not replaced() and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(pause)

    _, err = interrupted(process, after=loading)
    said = err.decode()
    if process.returncode == 0:
        pytest.skip("the demo ended before the Ctrl-C (a fast machine)")
    assert process.returncode == 130, said
    assert said.startswith("interrupted: the demo stopped") and said.count("\n") == 1, said
    assert sorted(path.name for path in tmp_path.iterdir()) == before
    assert _messages(db) == 36


@pytest.mark.skipif(importlib.util.find_spec("memory_core_qdrant") is None, reason="needs memory-core-qdrant")
def test_a_rerun_after_a_killed_run_leaves_no_hidden_earlier_copy(tmp_path: Path) -> None:
    """A run killed (SIGKILL: no clean-up runs) after setting the earlier
    demo's files aside leaves them under hidden ``.x.db.earlier-<hex>``
    names; the next run that ends well replaces the earlier demo, so it
    removes them. Before: they stayed beside x.db for good."""
    db = tmp_path / "x.db"
    assert cli("demo", "--db", str(db), "--embedder", "lexical").returncode == 0
    earlier = db.stat().st_ino
    process = cli_process(
        "demo", "--db", str(db), "--embedder", "lexical", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(tmp_path.glob(".x.db.earlier-*")):
        time.sleep(0.005)
    process.kill()
    process.wait()
    hidden = sorted(path.name for path in tmp_path.glob(".*.earlier-*"))
    if not hidden:
        pytest.skip(f"the run was killed before it set the earlier demo aside (x.db is the earlier: {db.exists()})")
    rerun = cli("demo", "--db", str(db), "--embedder", "lexical")
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["x.db", "x.vectors"]
    assert db.stat().st_ino != earlier and _messages(db) == 36


@pytest.mark.skipif(importlib.util.find_spec("memory_core_qdrant") is None, reason="needs memory-core-qdrant")
def test_the_banner_urls_are_alike_and_work_in_later_commands(tmp_path: Path) -> None:
    """Issue 26: the banner showed storage relative (``sqlite:///memory-core-demo.db``)
    and vectors absolute (``qdrant+path:////tmp/...``). Both are absolute now,
    and pasted into a later command they name the demo's files."""
    done = cli("demo", "--embedder", "lexical", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = dict(
        line.split(": ", 1) for line in done.stdout.splitlines() if line.startswith(("storage: ", "vectors: "))
    )
    assert lines["storage"] == f"sqlite:///{(tmp_path / 'memory-core-demo.db').resolve()}", done.stdout
    assert lines["vectors"] == f"qdrant+path:///{(tmp_path / 'memory-core-demo.vectors').resolve()}", done.stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    exported = cli("export", lines["storage"], "-o", str(elsewhere / "e.jsonl"), cwd=elsewhere)
    assert exported.returncode == 0, exported.stderr
    checked = cli("check-index", lines["storage"], "--vector", lines["vectors"], "--embedder", "lexical", cwd=elsewhere)
    assert checked.returncode == 0, checked.stderr
