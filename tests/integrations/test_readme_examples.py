"""The README's agent-framework examples run as written (offline), so they
cannot rot."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Agent frameworks\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_each_integration_has_an_example() -> None:
    examples = _examples()
    assert len(examples) == 3
    assert "MemoryCoreSession" in examples[0] and "MessageHistory" in examples[1]
    assert "MemoryCoreSessionService" in examples[2]


@pytest.mark.anyio
@pytest.mark.parametrize("index", range(3), ids=["openai-agents", "pydantic-ai", "google-adk"])
async def test_readme_example_runs(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the examples write their SQLite files here
    code = compile(_examples()[index], f"README.md example {index}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    # Run twice on the same files, as a user restarting the program does: the
    # second run continues the stored conversation (two more turns).
    for expected in (["3 items seen", "4", "3 contents seen"], ["7 items seen", "8", "7 contents seen"]):
        namespace: dict[str, Any] = {"__name__": f"readme_example_{index}"}
        result = eval(code, namespace)
        if result is not None:
            await result
        assert capsys.readouterr().out.strip() == expected[index]
