"""The ``memory-core`` command line on a fresh user's mistakes: the demo never
replaces a file it did not make, ``check`` reaches the deployment before the
suite runs, malformed LoCoMo files and bench options are one red line."""

from __future__ import annotations

import importlib.util
import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from memory_core.cli import app
from memory_core.cli.demo import DEMO_APPLICATION_ID, VECTORS_MARKER, is_demo_database, load_conversations
from memory_core.cli.locomo import load_dir, load_sample
from memory_core.errors import ValidationError
from memory_core.memory import Memory
from memory_core.reference import InMemoryStorage

HAS_QDRANT = importlib.util.find_spec("memory_core_qdrant") is not None
HAS_MONGODB = importlib.util.find_spec("memory_core_mongodb") is not None
HAS_REDIS = importlib.util.find_spec("memory_core_redis") is not None


def _one_error_line(result: Any, says: str) -> None:
    """Exit 2 and a single ``error: ...`` line that contains ``says``."""
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert says in result.output, result.output


def _demo(db: Path, *more: str) -> Any:
    return CliRunner().invoke(app, ["demo", "--db", str(db), *more])


# ---------------------------------------------------------------- demo --db


def test_demo_refuses_to_replace_a_file_it_did_not_make(tmp_path: Path) -> None:
    script = tmp_path / "notes.py"
    script.write_text("print('my work')\n")
    _one_error_line(_demo(script, "--vector", "none"), "was not made by memory-core demo; choose another --db")
    assert script.read_text() == "print('my work')\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.py"]


def test_demo_refuses_another_programs_sqlite_database(tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE t (x)")
    before = db.read_bytes()
    _one_error_line(_demo(db, "--vector", "none"), "was not made by memory-core demo")
    _one_error_line(_demo(db, "--vector", "none", "--keep"), "was not made by memory-core demo")
    assert db.read_bytes() == before


def test_demo_refuses_a_leftover_wal_without_its_database(tmp_path: Path) -> None:
    wal = tmp_path / "demo.db-wal"
    wal.write_bytes(b"not ours")
    _one_error_line(_demo(tmp_path / "demo.db", "--vector", "none"), "demo.db-wal exists")
    assert wal.read_bytes() == b"not ours" and not (tmp_path / "demo.db").exists()


def test_demo_refuses_a_vectors_folder_it_did_not_make(tmp_path: Path) -> None:
    folder = tmp_path / "demo.vectors"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    _one_error_line(_demo(tmp_path / "demo.db"), "demo.vectors exists and was not made by memory-core demo")
    assert (folder / "keep.txt").read_text() == "mine"
    # Refused before anything was made: no database either.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.vectors"]


@pytest.mark.parametrize("db", ["", "{tmp}"])
def test_demo_rejects_a_folder_as_db(db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _one_error_line(_demo(Path(db.replace("{tmp}", str(tmp_path)))), "is a folder; give a file path")
    assert list(tmp_path.iterdir()) == []


def test_demo_replaces_its_own_previous_database(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    first = _demo(db, "--vector", "none")
    assert first.exit_code == 0, first.output
    assert is_demo_database(db)
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA application_id").fetchone() == (DEMO_APPLICATION_ID,)
    second = _demo(db, "--vector", "none")
    assert second.exit_code == 0, second.output
    assert "loaded 1 resource, 3 threads, 36 messages" in second.output


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_demo_replaces_its_own_previous_vectors_folder(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    assert _demo(db).exit_code == 0
    folder = tmp_path / "demo.vectors"
    assert (folder / VECTORS_MARKER).is_file()
    stray = folder / "stale.txt"
    stray.write_text("from the last run")
    result = _demo(db)
    assert result.exit_code == 0, result.output
    assert (folder / VECTORS_MARKER).is_file() and not stray.exists()


@pytest.mark.skipif(not HAS_QDRANT, reason="memory-core-qdrant is not installed")
def test_demo_uses_memorys_default_embedder_and_names_it(tmp_path: Path) -> None:
    """MiniLM when installed, else lexical, as Memory picks; the lexical
    embedder's recall is never called semantic."""
    from memory_core.cli.demo import print_banner, recall_kind
    from memory_core.embedders import LexicalHashEmbedder, default_embedder

    default = default_embedder()
    result = _demo(tmp_path / "demo.db")
    assert result.exit_code == 0, result.output
    assert f"embedder: {default.name} ({recall_kind(default)}" in result.output
    assert f"8. {recall_kind(default)} ({default.name})" in result.output
    out = io.StringIO()
    print_banner(Console(file=out, width=200), "sqlite:///d.db", "qdrant+path:///d.vectors", LexicalHashEmbedder())
    assert "embedder: lexical-hash-" in out.getvalue() and "(lexical recall; MiniLM" in out.getvalue()
    assert recall_kind(LexicalHashEmbedder()) == "lexical recall"


# ---------------------------------------------------------------- demo progress


@pytest.mark.anyio
async def test_demo_progress_ends_with_the_loaded_count() -> None:
    out = io.StringIO()
    conversations = load_sample()
    async with Memory(InMemoryStorage()) as memory:
        report = await load_conversations(memory, conversations, Console(file=out, width=120))
    last = out.getvalue().rstrip().splitlines()[-1]
    assert report.messages == 36
    assert last.startswith("loaded 1/1 conversations") and "36/36" in last
    assert "loading" not in last


# ---------------------------------------------------------------- demo --locomo


def _turn(text: object = "hi") -> dict[str, Any]:
    turn: dict[str, Any] = {"speaker": "A", "dia_id": "D1:1"}
    if text is not None:
        turn["text"] = text
    return turn


def _conversation(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "speaker_a": "A",
        "speaker_b": "B",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [_turn()],
    }
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "bad.json: is not valid JSON (Expecting property name"),
        ("[]", "bad.json: holds an empty list, no LoCoMo conversation"),
        ("3", "bad.json: must be a JSON object (one LoCoMo conversation) or a list of them (locomo10.json), got int"),
        ("[3]", "bad.json[0]: must be a JSON object (one LoCoMo conversation), got int"),
        (
            json.dumps([{"sample_id": "conv-1", "conversation": _conversation(session_1=[_turn(None)])}]),
            "bad.json[0]: conversation.session_1[0].text: must be a JSON string",
        ),
        ("{}", "bad.json: speaker_a: must be a JSON string, got nothing"),
        (json.dumps(_conversation(session_1=[_turn(None)])), "bad.json: session_1[0].text: must be a JSON string"),
        (
            json.dumps(_conversation(session_1_date_time="yesterday")),
            "bad.json: session_1_date_time: must look like '1:56 pm on 8 May, 2023', got 'yesterday'",
        ),
        (json.dumps(_conversation(session_1=[])), "bad.json: holds no session_<N> list with a message"),
        (json.dumps(_conversation(qa=[{"answer": "x"}])), "bad.json: qa[0].question: must be a JSON string"),
    ],
)
def test_demo_names_the_file_and_key_of_a_malformed_locomo_file(content: str, says: str, tmp_path: Path) -> None:
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "bad.json").write_text(content, encoding="utf-8")
    result = CliRunner().invoke(app, ["demo", "--locomo", str(folder), "--db", str(tmp_path / "d.db")])
    _one_error_line(result, says)
    assert str(folder / "bad.json") in result.output
    assert not (tmp_path / "d.db").exists()


def test_locomo_loader_raises_a_validation_error_with_the_field(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps(_conversation(session_1=["hello"])), encoding="utf-8")
    with pytest.raises(ValidationError) as caught:
        load_dir(tmp_path)
    assert caught.value.field == f"{tmp_path / 'x.json'}: session_1[0]"
    assert caught.value.reason == "must be a JSON object, got str"


def test_locomo_loader_accepts_a_wellformed_file(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(json.dumps(_conversation(qa=[{"question": "q", "evidence": ["D1:1"]}])))
    [conversation] = load_dir(tmp_path)
    assert [m.id for m in conversation.messages] == ["locomo-x:D1:1"]
    assert conversation.questions[0].evidence == ("locomo-x:D1:1",)


def _official(*sample_ids: str | None) -> list[dict[str, Any]]:
    """A small file in the shape of the data set's ``locomo10.json``: a list
    of samples, turns under ``conversation``, ``qa`` beside it."""
    samples = []
    for sample_id in sample_ids:
        sample: dict[str, Any] = {
            "conversation": _conversation(session_1=[_turn("hi"), {**_turn("bye"), "dia_id": "D1:2"}]),
            "qa": [{"question": "q", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "a"}],
            "event_summary": {},
        }
        if sample_id is not None:
            sample["sample_id"] = sample_id
        samples.append(sample)
    return samples


def test_locomo_loader_reads_the_official_file_given_as_a_file_or_in_a_folder(tmp_path: Path) -> None:
    """Issue 26: the data set's one ``locomo10.json`` (a list of
    conversations) said ``no LoCoMo *.json files in .../locomo10.json`` given
    as a file and ``must be a JSON object ..., got list`` inside a folder."""
    data = tmp_path / "loc" / "locomo10.json"
    data.parent.mkdir()
    data.write_text(json.dumps(_official("conv-26", "conv-30")), encoding="utf-8")
    for given in (data, data.parent):
        first, second = load_dir(given)
        assert [first.resource_id, second.resource_id] == ["locomo-26", "locomo-30"]
        assert [m.id for m in first.messages] == ["locomo-26:D1:1", "locomo-26:D1:2"]
        assert [(q.evidence, q.answer, q.category) for q in first.questions] == [(("locomo-26:D1:2",), "a", 5)]


def test_locomo_loader_names_a_listed_conversation_without_sample_id_by_position(tmp_path: Path) -> None:
    (tmp_path / "mine.json").write_text(json.dumps([_conversation(), _official(None)[0]]), encoding="utf-8")
    assert [c.resource_id for c in load_dir(tmp_path / "mine.json")] == ["locomo-mine-1", "locomo-mine-2"]


def test_locomo_loader_refuses_two_conversations_named_alike(tmp_path: Path) -> None:
    (tmp_path / "locomo10.json").write_text(json.dumps(_official("conv-26", "conv-26")), encoding="utf-8")
    with pytest.raises(ValidationError) as caught:
        load_dir(tmp_path)
    assert caught.value.field == f"{tmp_path / 'locomo10.json'}[1]"
    assert caught.value.reason == f"is named 'locomo-26' as {tmp_path / 'locomo10.json'}[0] is"


def test_demo_runs_on_the_official_file(tmp_path: Path) -> None:
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps(_official("conv-26")), encoding="utf-8")
    args = ["--locomo", str(data), "--db", str(tmp_path / "d.db"), "--vector", "none", "--embedder", "lexical"]
    result = CliRunner().invoke(app, ["demo", *args])
    assert result.exit_code == 0, result.output
    assert "locomo-26" in result.output


# ---------------------------------------------------------------- check URL


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("sqlite:///", "names no file"),
        ("sqlite:///{tmp}/y.db?foo=bar", "option 'foo'"),
        ("sqlite:////proc/memory-core-check/x.db", "folder '/proc/memory-core-check' does not exist"),
        ("bogus://x", "unknown storage scheme 'bogus'"),
    ],
)
def test_check_rejects_a_bad_url_before_running_the_suite(url: str, says: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["check", url.replace("{tmp}", str(tmp_path))])
    _one_error_line(result, says)
    assert "CONFORMANT" not in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("redis://127.0.0.1:1/0", marks=pytest.mark.skipif(not HAS_REDIS, reason="no redis adapter")),
        pytest.param("mongodb://127.0.0.1:1", marks=pytest.mark.skipif(not HAS_MONGODB, reason="no mongodb adapter")),
    ],
)
def test_check_reports_an_unreachable_server_before_running_the_suite(url: str) -> None:
    result = CliRunner().invoke(app, ["check", url])
    _one_error_line(result, f"error: cannot check {url}: ")
    assert "CONFORMANT" not in result.output


def test_check_names_an_unknown_scheme_even_without_the_conformance_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "memory_core_conformance", None)
    monkeypatch.setitem(sys.modules, "memory_core_conformance.check", None)
    _one_error_line(CliRunner().invoke(app, ["check", "bogus://x"]), "unknown storage scheme 'bogus'")


def test_check_prints_no_assert_rewrite_warnings() -> None:
    # A fresh process: the warning comes from pytest meeting the plugin
    # already imported, as it is under the real command.
    code = (
        "import sys; from memory_core_conformance.check import run_check; "
        "sys.exit(run_check('memory://', profile='quick', pytest_args=['-k', 'test_c07']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CONFORMANT" in done.stdout
    assert "PytestAssertRewriteWarning" not in done.stdout + done.stderr
    assert "warnings summary" not in done.stdout


# ---------------------------------------------------------------- bench options


@pytest.mark.parametrize(
    ("sizes", "says"),
    [
        ("-5", "--sizes: '-5': size must be >= 1"),
        ("0", "--sizes: '0': size must be >= 1"),
        ("abc", "--sizes: 'abc' is not an integer"),
        ("2", "--sizes: '2': size 2 is too small for the dataset layout"),
        (",", "--sizes: needs at least one count of messages"),
    ],
)
def test_bench_rejects_bad_sizes(sizes: str, says: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "--sizes", sizes, "--out", str(tmp_path / "out")])
    _one_error_line(result, says)
    assert not (tmp_path / "out").exists()


def test_bench_rejects_an_unknown_storage_scheme_before_running(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["bench", "--storage", "bogus://x", "--sizes", "200", "--out", str(tmp_path / "out")]
    )
    _one_error_line(result, "error: --storage bogus://x: unknown storage scheme 'bogus'")
    assert not (tmp_path / "out").exists()
