"""``memory-core export``, ``import`` and ``copy`` on real SQLite files: the
round trip, the verification failure, and user errors refused before any
data is touched (one red line, exit 2)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core import Storage, Thread, connect, connect_vector
from memory_core.cli import app
from memory_core.transfer import summarize
from tests.cli_run import cli
from tests.transfer.stores import fill

runner = CliRunner()


def _store(path: Path, seed: int | None = 3) -> str:
    url = f"sqlite:///{path}"

    async def make() -> None:
        storage = await connect(url)
        if seed is not None:
            await fill(storage, seed, resources=3, messages=50)
        await storage.close()

    asyncio.run(make())
    return url


def _summary(url: str, resource: str | None = None) -> dict:  # type: ignore[type-arg]
    async def read() -> dict:  # type: ignore[type-arg]
        storage: Storage = await connect(url)
        try:
            return await summarize(storage, resource)
        finally:
            await storage.close()

    return asyncio.run(read())


def test_export_then_import_through_stdin_and_stdout(tmp_path: Path) -> None:
    source = _store(tmp_path / "a.db")
    exported = runner.invoke(app, ["export", source])
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    assert json.loads(lines[0])["format"] == "memory-core/jsonl"
    destination = f"sqlite:///{tmp_path / 'b.db'}"
    imported = runner.invoke(app, ["import", destination], input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    assert _summary(destination) == _summary(source) == json.loads(lines[-1])


def test_export_to_file_and_import_from_file_of_one_resource(tmp_path: Path) -> None:
    source = _store(tmp_path / "a.db")
    resource = "res-3-0-ü"
    file = tmp_path / "out.jsonl"
    assert runner.invoke(app, ["export", source, "--resource", resource, "-o", str(file)]).exit_code == 0
    destination = f"sqlite:///{tmp_path / 'b.db'}"
    result = runner.invoke(app, ["import", destination, "-i", str(file)])
    assert result.exit_code == 0, result.output
    assert _summary(destination) == _summary(source, resource)
    assert _summary(destination)["counts"]["resources"] == 1


def test_copy_verifies_and_a_second_copy_changes_nothing(tmp_path: Path) -> None:
    source = _store(tmp_path / "a.db")
    destination = f"sqlite:///{tmp_path / 'b.db'}"
    first = runner.invoke(app, ["copy", source, destination])
    assert first.exit_code == 0, first.output
    assert "copied and verified" in first.output
    second = runner.invoke(app, ["copy", source, destination])
    assert second.exit_code == 0, second.output
    assert "written nothing;" in second.output  # the second copy writes no record
    assert _summary(destination) == _summary(source)


@pytest.mark.parametrize("scope", [[], ["--resource", "res-3-0-ü"]])
def test_copy_into_a_store_holding_other_threads_is_refused_before_writing(scope: list[str], tmp_path: Path) -> None:
    """operators.md: a copy goes into an empty store. One that holds a thread
    the source does not is one red line naming DESTINATION and the way out
    (an empty store, or export and import to merge), exit 2, nothing
    written. Before: everything was written, then "verification failed:
    thread 'already-there': the destination holds it, the source does not",
    exit 1."""
    source = _store(tmp_path / "a.db")
    destination = _store(tmp_path / "b.db", seed=None)

    async def extra() -> None:
        storage = await connect(destination)
        await storage.save_thread(Thread("already-there", "res-3-0-ü", "other"))
        await storage.close()

    asyncio.run(extra())
    before = _summary(destination)
    result = cli("copy", source, destination, *scope)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"error: DESTINATION {destination} holds thread 'already-there'"), result.stderr
    assert "empty store" in result.stderr and "export the source and import" in result.stderr
    assert _summary(destination) == before


def test_copy_resumes_into_the_part_an_interrupted_copy_left(tmp_path: Path) -> None:
    """A destination holding part of the source (what an interrupted copy
    leaves) is not refused: the copy completes it."""
    source = _store(tmp_path / "a.db")
    destination = f"sqlite:///{tmp_path / 'b.db'}"
    first = cli("copy", source, destination, "--resource", "res-3-0-ü")
    assert first.returncode == 0, first.stderr
    whole = cli("copy", source, destination)
    assert whole.returncode == 0, whole.stderr
    assert _summary(destination) == _summary(source)


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["export", "nosuch://x"], "unknown storage scheme 'nosuch'"),
        (["export", "sqlite:///{tmp}/missing.db"], "missing.db does not exist"),
        (["copy", "sqlite:///{tmp}/missing.db", "sqlite:///{tmp}/b.db"], "missing.db does not exist"),
        (["copy", "sqlite:///{tmp}/a.db", "sqlite:///{tmp}/a.db"], "SOURCE and DESTINATION are the same store"),
        (["copy", "sqlite:///{tmp}/a.db", "nosuch://x"], "unknown storage scheme"),
        (["export", "sqlite:///{tmp}/a.db", "-o", "{tmp}/a.db"], "never overwrites"),
        (["export", "sqlite:///{tmp}/a.db", "--resource", " "], "--resource"),
        (["import", "sqlite:///{tmp}/b.db", "-i", "{tmp}/nothing.jsonl"], "is not a file"),
        (["import", "sqlite:///{tmp}/nofolder/b.db"], "nofolder' does not exist"),
        (["copy", "sqlite:///{tmp}/a.db", "sqlite:///{tmp}/nofolder/b.db"], "nofolder' does not exist"),
        (["import", "sqlite:///{tmp}/b.db", "--vector", "sqlite:///x.db"], "not a vector store URL"),
        (["copy", "sqlite:///{tmp}/a.db", "sqlite:///{tmp}/b.db", "--vector", "nosuch://"], "unknown vector"),
        (
            ["import", "sqlite:///{tmp}/b.db", "--vector", "qdrant::memory:"],
            "--vector: the vector store keeps its vectors in memory",
        ),
        (
            ["import", "sqlite:///{tmp}/b.db", "--vector", "memory://"],
            "--vector: the vector store keeps its vectors in memory",
        ),
        (["copy", "sqlite:///{tmp}/a.db", "sqlite:///{tmp}/b.db", "--vector", "memory://"], "vectors in memory"),
    ],
)
def test_user_errors_are_one_line_and_touch_nothing(args: list[str], reason: str, tmp_path: Path) -> None:
    _store(tmp_path / "a.db")
    before = sorted(p.name for p in tmp_path.iterdir())
    result = runner.invoke(app, [arg.format(tmp=tmp_path) for arg in args], input="")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert reason in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_import_of_a_malformed_line_names_it(tmp_path: Path) -> None:
    destination = f"sqlite:///{tmp_path / 'b.db'}"
    header = json.dumps({"kind": "header", "format": "memory-core/jsonl", "version": 1, "messages": 0})
    result = runner.invoke(app, ["import", destination], input=f"{header}\n{{oops\n")
    assert result.exit_code == 2
    assert "line 2: not valid JSON" in result.output


@pytest.mark.parametrize("through", ["stdin", "file"])
def test_import_of_a_line_that_is_not_utf8_names_it(through: str, tmp_path: Path) -> None:
    destination = f"sqlite:///{tmp_path / 'b.db'}"
    header = json.dumps({"kind": "header", "format": "memory-core/jsonl", "version": 1, "messages": 0})
    # \xff\xfe first: a BOM json.loads would take for UTF-16.
    data = header.encode() + b'\n\xff\xfe{"kind": "x"}\n'
    (tmp_path / "in.jsonl").write_bytes(data)
    args = ["import", destination] + (["-i", str(tmp_path / "in.jsonl")] if through == "file" else [])
    result = runner.invoke(app, args, input=data if through == "stdin" else b"")
    assert result.exit_code == 2, result.output
    assert "line 2: not UTF-8 text: invalid start byte at byte 1" in result.output


def test_copy_re_embeds_into_a_persistent_vector_store(tmp_path: Path) -> None:
    pytest.importorskip("memory_core_qdrant")
    source, destination = _store(tmp_path / "a.db"), f"sqlite:///{tmp_path / 'b.db'}"
    vectors = f"qdrant+path:///{tmp_path / 'vectors'}"
    result = runner.invoke(app, ["copy", source, destination, "--vector", vectors])
    assert result.exit_code == 0, result.output

    async def count() -> int:
        store = await connect_vector(vectors)
        try:
            return await store.count()
        finally:
            await store.close()

    assert asyncio.run(count()) > 0  # still there after the command: persistent


def _with_lonely_record(url: str) -> None:
    """Add a resource with a record and no thread to the store at ``url``."""

    async def add() -> None:
        storage = await connect(url)
        await storage.update_resource("lonely", working_memory="# only a record")
        await storage.close()

    asyncio.run(add())


def test_whole_store_export_and_copy_include_a_record_without_threads(tmp_path: Path) -> None:
    source = _store(tmp_path / "a.db")
    _with_lonely_record(source)
    exported = runner.invoke(app, ["export", source])
    assert exported.exit_code == 0, exported.output
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert {"kind": "resource", "id": "lonely"}.items() <= next(r for r in records if r.get("id") == "lonely").items()
    destination = f"sqlite:///{tmp_path / 'b.db'}"
    copied = runner.invoke(app, ["copy", source, destination])
    assert copied.exit_code == 0, copied.output
    assert _summary(destination) == _summary(source) == records[-1]
    assert "lonely" in records[-1]["resources"]


@pytest.mark.parametrize("command", ["export", "copy"])
def test_an_absent_resource_is_a_hint_and_an_empty_export(command: str, tmp_path: Path) -> None:
    source = _store(tmp_path / "a.db")
    args = [command, source] + ([f"sqlite:///{tmp_path / 'b.db'}"] if command == "copy" else [])
    result = runner.invoke(app, [*args, "--resource", "nobody"])
    assert result.exit_code == 0, result.output
    done = "exported" if command == "export" else "copied"
    assert f"hint: the store holds no resource 'nobody' (no record, no thread): nothing was {done}" in result.stderr
    if command == "export":
        kinds = [json.loads(line)["kind"] for line in result.stdout.splitlines()]
        assert kinds == ["header", "trailer"]
    present = runner.invoke(app, [*args, "--resource", "res-3-0-ü"])
    assert present.exit_code == 0, present.output
    assert "hint" not in present.stderr
