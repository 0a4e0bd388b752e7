"""The adapters' READMEs show programs a user can paste and run (issue 26:
their snippets used a top-level ``await``, a SyntaxError in a script, and
the Qdrant README's headline used the throwaway ``qdrant::memory:``).
Every ``python`` block is plain Python that calls ``asyncio.run``; the
embedded adapters' headline programs (SQLite, Qdrant's in-process engine)
run here, twice on the same files, as a user restarting them does."""

from __future__ import annotations

import ast
import importlib.util
import re
import runpy
from pathlib import Path

import pytest

ADAPTERS = Path(__file__).resolve().parents[1] / "adapters"
READMES = sorted(ADAPTERS.glob("*/README.md"))


def _blocks(readme: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("readme", READMES, ids=[r.parent.name for r in READMES])
def test_every_block_is_a_program(readme: Path) -> None:
    for code in _blocks(readme):
        tree = ast.parse(code)  # a top-level await is a SyntaxError here
        assert "asyncio.run(" in code or not any(isinstance(n, ast.AsyncFunctionDef) for n in tree.body), code


@pytest.mark.parametrize(("adapter", "module"), [("sqlite", "memory_core_sqlite"), ("qdrant", "memory_core_qdrant")])
def test_the_embedded_headline_runs_twice(
    adapter: str, module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    code = _blocks(ADAPTERS / adapter / "README.md")[0]
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    for _ in range(2):
        runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out.splitlines() == {"sqlite": ["[]", "[]"], "qdrant": ["True", "True"]}[adapter]


def test_the_qdrant_headline_keeps_its_vectors() -> None:
    code = _blocks(ADAPTERS / "qdrant" / "README.md")[0]
    assert "qdrant+path:///" in code and "::memory:" not in code
