"""The README's examples run as written (offline), each pasted into a file
and run as ``__main__`` (no top-level ``await``: each calls ``asyncio.run``),
twice on the same files as a user restarting the program does, each run
printing the same (an example writes into persistent files, so it reads
what is there or starts its conversation afresh), so they cannot rot. They
run in this process (``runpy``), whose imports they share: a subprocess
each would cost seconds of imports per run."""

from __future__ import annotations

import ast
import re
import runpy
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _examples(heading: str) -> list[str]:
    """The ``python`` blocks of the README section under ``## <heading>``."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Callable[[str], str]:
    """``run(code)``: run ``code`` as the script ``example.py`` in
    ``tmp_path`` (the working directory, where it writes its files); its stdout."""
    monkeypatch.chdir(tmp_path)

    def run(code: str) -> str:
        ast.parse(code)  # plain Python: a top-level await would be a SyntaxError here
        script = tmp_path / "example.py"
        script.write_text(code, encoding="utf-8")
        runpy.run_path(str(script), run_name="__main__")
        return capsys.readouterr().out.strip()

    return run


def test_each_integration_has_an_example() -> None:
    examples = _examples("Agent frameworks")
    assert len(examples) == 3
    assert "MemoryCoreSession" in examples[0] and "MessageHistory" in examples[1]
    assert "MemoryCoreSessionService" in examples[2]


def test_the_examples_keep_vectors_beside_their_database() -> None:
    """A SQLite file with in-memory vectors loses the index on restart: the
    examples show the setup to copy."""
    for code in [*_examples("What you get"), *_examples("Agent frameworks")]:
        assert "Memory.open(" in code and "::memory:" not in code and '"memory://"' not in code


@pytest.mark.parametrize("index", range(3), ids=["openai-agents", "pydantic-ai", "google-adk"])
def test_readme_example_runs_and_prints_the_same_when_run_again(index: int, run: Callable[[str], str]) -> None:
    """Issue 26: a second run printed other counts (7 items seen: it appended
    to the stored conversation). Each example starts its conversation afresh."""
    code = _examples("Agent frameworks")[index]
    first = run(code)
    assert first == ["3 items seen", "4", "3 contents seen"][index]
    assert run(code) == first


def test_what_you_get_runs_and_survives_a_restart(run: Callable[[str], str], tmp_path: Path) -> None:
    """A second run reads the conversation the first stored, and prints the
    same (before: it appended the two turns again)."""
    code = _examples("What you get")[0]
    first = run(code).splitlines()
    assert first == ["recent I fly to Lisbon in April", "recent Noted!", "1 thread(s)"]
    assert run(code).splitlines() == first
    assert (tmp_path / "memory.db").is_file() and (tmp_path / "memory.vectors").is_dir()


def test_hybrid_example_runs_twice_without_duplicating_its_notes(
    run: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's ``hybrid.py`` (SQLite + Qdrant's engine) finds the locker
    code first, and a second run answers the same: its notes are saved once."""
    monkeypatch.setattr(sys, "argv", ["hybrid.py"])
    code = _examples("What you get")[1]
    assert "hybrid.py" in code
    first = run(code).splitlines()
    assert first[0] == "semantic My gym locker code is 7Q-4411"
    assert "stored=3" in first[-1], first
    assert run(code).splitlines() == first


def test_every_python_example_of_the_readme_is_run_twice_here() -> None:
    """Every ``python`` block of the README is one of those above (each run
    twice, its output compared), so a new example cannot be left unchecked."""
    text = README.read_text(encoding="utf-8")
    assert len(re.findall(r"```python\n", text)) == len(_examples("What you get")) + len(_examples("Agent frameworks"))
