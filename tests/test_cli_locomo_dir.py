"""Every command and script that takes a LoCoMo folder says what the folder
is, and a missing one is a single ``error:`` line with exit 2, no traceback."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core.cli import app
from tests.cli_run import cli
from tests.locomo_data import LOCOMO_DEFAULT, LOCOMO_SKIP

HAS_BENCH = importlib.util.find_spec("memory_core_bench") is not None
SCRIPTS = ["retrieval", "recall_coverage", "embed_throughput"]


def _says_what_the_folder_is(output: str, folder: Path, says: str = "no LoCoMo *.json files in {folder}") -> None:
    assert output.startswith("error: ") and output.count("\n") == 1, output
    assert says.format(folder=folder) in output and "github.com/snap-research/locomo" in output, output
    assert "does not include it" in output and "Traceback" not in output, output


@pytest.mark.skipif(not HAS_BENCH, reason="memory-core-bench is not installed")
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_script_on_a_missing_folder_is_one_line(script: str, tmp_path: Path) -> None:
    folder = tmp_path / "locomo10"
    done = subprocess.run(
        [sys.executable, "-m", f"memory_core_bench.{script}", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    _says_what_the_folder_is(done.stderr, folder, "{folder} does not exist (a typo in the path?)")


@pytest.mark.skipif(not HAS_BENCH, reason="memory-core-bench is not installed")
@pytest.mark.parametrize("script", SCRIPTS)
def test_a_bench_script_help_says_what_the_folder_is(script: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"memory_core_bench.{script}", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "LOCOMO_DIR: LoCoMo conversations: the LoCoMo data set's data/locomo10.json" in " ".join(done.stdout.split())


def test_demo_on_a_folder_without_conversations_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--db", str(tmp_path / "d.db"), "--locomo", str(tmp_path)])
    assert result.exit_code == 2, result.output
    _says_what_the_folder_is(result.output, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_readme_says_what_locomo_dir_is_and_where_the_tests_look() -> None:
    """The README's test command points at its ``LOCOMO_DIR`` section: the
    README defines it and names the tests' default location as the tests
    compute it, relative to the clone (issue 26: it said only "beside the
    clone"); no guide (README, docs/) names a machine's absolute path."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "`LOCOMO_DIR` is the LoCoMo data set's `data/locomo10.json`" in readme
    default = Path(os.path.relpath(LOCOMO_DEFAULT, root)).as_posix()
    assert default == "../shared/data/locomo10"
    assert f"`{default}`\nfrom the clone's root" in readme and "`MEMORY_CORE_LOCOMO`" in readme
    for guide in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        assert "/work/shared" not in guide.read_text(encoding="utf-8"), guide.name


def test_every_locomo_test_skips_with_one_reason_naming_both_ways() -> None:
    """Issue 26: two tests said only ``LoCoMo data not found at ...``, one
    added ``(set MEMORY_CORE_LOCOMO)``. Every test now reads the location
    and its skip reason from ``tests/locomo_data.py``."""
    assert "MEMORY_CORE_LOCOMO" in LOCOMO_SKIP and "../shared/data/locomo10" in LOCOMO_SKIP
    tests = Path(__file__).resolve().parent
    for module in sorted(tests.rglob("*.py")):
        text = module.read_text(encoding="utf-8")
        if module.name not in ("locomo_data.py", Path(__file__).name) and "load_dir(LOCOMO)" in text:
            assert "from tests.locomo_data import LOCOMO, needs_locomo" in text, module.name
            assert 'MEMORY_CORE_LOCOMO"' not in text and "LoCoMo data not found" not in text, module.name


_WHOLE = (
    b'{"speaker_a": "Caroline", "speaker_b": "Mel", "session_1": [{"text": "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"}]}'
)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        # a download cut inside the 3 bytes of 日: before, "is not UTF-8 text"
        (_WHOLE[: _WHOLE.index("日".encode()) + 1], "is truncated: it ends inside a UTF-8 character (at byte 76)"),
        # cut between two values: before, "is not valid JSON (Expecting ',' delimiter ...)"
        (_WHOLE[:40], "is truncated: its JSON stops before it is complete, at position 40 (line 1 column 41)"),
        (_WHOLE[:45], "is truncated: its JSON stops before it is complete, at position 45 (line 1 column 46)"),
        (b"", "is empty: no JSON in it"),
        (b'{"a": 1} x', "is not valid JSON (Extra data at position 9 (line 1 column 10))"),
        (b'{"a": "\xff"}', "is not UTF-8 text (invalid start byte at byte 7)"),
    ],
)
def test_demo_on_a_truncated_locomo_file_says_truncated_and_where(content: bytes, says: str, tmp_path: Path) -> None:
    """Through a real ``memory-core demo --locomo`` process."""
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "conv.json").write_bytes(content)
    done = cli("demo", "--locomo", str(folder), "--db", str(tmp_path / "d.db"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert f"{folder / 'conv.json'}: {says}" in done.stderr, done.stderr
    assert not (tmp_path / "d.db").exists()
