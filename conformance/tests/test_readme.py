"""conformance/README.md cannot rot: its rule table is the suite's, its code
blocks run (or are exact excerpts of the tested example files), its commands
select tests, and it names no file the package does not ship."""

from __future__ import annotations

import ast
import importlib
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from memory_core_conformance import StorageConformance
from memory_core_conformance.rules import RULES, TABLE_END, TABLE_START, rule_table, rules_of, suite_test_names

from memory_core.storage import BaseStorage

CONFORMANCE = Path(__file__).resolve().parents[1]
README = CONFORMANCE / "README.md"
PACKAGE = CONFORMANCE / "memory_core_conformance"
REPO = CONFORMANCE.parent
_EXCERPT = re.compile(r"<!-- excerpt: (\S+) -->\s*$")


@dataclass
class Block:
    """One fenced code block of the README."""

    language: str
    text: str
    line: int
    excerpt_of: str | None


def _blocks() -> list[Block]:
    blocks: list[Block] = []
    lines = README.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = lines[index].strip()
        if opening.startswith("```"):
            indent = len(lines[index]) - len(lines[index].lstrip())
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            body = "\n".join(line[indent:] for line in lines[index + 1 : end])
            before = [line for line in lines[:index] if line.strip()]
            marker = _EXCERPT.match(before[-1].strip()) if before else None
            blocks.append(Block(opening.removeprefix("```"), body + "\n", index + 1, marker and marker.group(1)))
            index = end
        index += 1
    return blocks


BLOCKS = _blocks()
PYTHON = [b for b in BLOCKS if b.language == "python"]


def _id(block: Block) -> str:
    return f"line{block.line}"


# ------------------------------------------------------------------ the rule table


def test_every_suite_test_has_a_rule_and_every_rule_a_test() -> None:
    names = suite_test_names()
    assert len(names) > 100
    unnamed = [name for name in names if rules_of(name) == ["OTHER"]]
    assert not unnamed, f"suite tests whose name names no rule (rename them test_r_<rule>_...): {unnamed}"
    covered = {rule for name in names for rule in rules_of(name)}
    assert sorted(set(RULES) - covered) == [], "rules no test checks"
    assert sorted(covered - set(RULES)) == [], "tests name rules that RULES does not state"


_ROW = re.compile(r"^\| (?P<rule>[^|]+?) \| .* \| (?P<tests>[^|]*) \|$")


def _table_cells(table: str) -> dict[str, set[str]]:
    """rule id -> the test names in its row."""
    rows: dict[str, set[str]] = {}
    for line in table.splitlines()[2:]:
        match = _ROW.match(line)
        assert match is not None, f"not a table row: {line[:80]}"
        rows[match["rule"]] = set(re.findall(r"`(test_\w+)`", match["tests"]))
    return rows


def test_readme_rule_table_matches_the_suite() -> None:
    text = README.read_text(encoding="utf-8")
    assert TABLE_START in text and TABLE_END in text
    in_readme = text.split(TABLE_START + "\n", 1)[1].split(TABLE_END, 1)[0].strip()
    generated = rule_table()
    readme_rows, suite_rows = _table_cells(in_readme), _table_cells(generated)
    readme_pairs = {(rule, test) for rule, tests in readme_rows.items() for test in tests}
    suite_pairs = {(rule, test) for rule, tests in suite_rows.items() for test in tests}
    fix = "rewrite it: python -m memory_core_conformance.rules conformance/README.md"
    assert sorted(suite_pairs - readme_pairs) == [], f"suite tests without a README row ({fix})"
    assert sorted(readme_pairs - suite_pairs) == [], f"README rows naming no suite test ({fix})"
    assert sorted(readme_rows) == sorted(suite_rows), f"rule rows differ ({fix})"
    assert in_readme == generated, f"the README's rule statements are stale ({fix})"


def test_rule_table_flags_a_test_without_a_rule_and_a_rule_without_a_test() -> None:
    table = rule_table(["test_r_page_x", "test_c07_y", "test_misnamed"])
    rows = _table_cells(table)
    assert rows["R-PAGE"] == {"test_r_page_x"} and rows["OTHER"] == {"test_misnamed"}
    assert "| R-ID | " in table and "(no test)" in table.split("| R-ID |", 1)[1].splitlines()[0]


# ------------------------------------------------------------------ code blocks


def test_the_readme_has_the_blocks_this_file_checks() -> None:
    languages = sorted({b.language for b in BLOCKS})
    assert languages == ["", "bash", "python", "toml"], languages
    assert len(PYTHON) >= 4 and sum(1 for b in PYTHON if b.excerpt_of) >= 2


def _chunks(block: Block) -> list[str]:
    """The block split at lines that are only ``...`` (gaps in an excerpt)."""
    parts = re.split(r"(?m)^[ \t]*\.\.\.[ \t]*(?:#.*)?\n", block.text)
    return [part for part in parts if part.strip()]


@pytest.mark.parametrize("block", [b for b in PYTHON if b.excerpt_of], ids=_id)
def test_excerpt_blocks_are_verbatim_in_the_tested_example(block: Block) -> None:
    assert block.excerpt_of is not None
    source = (CONFORMANCE / block.excerpt_of).read_text(encoding="utf-8")
    position = 0
    for chunk in _chunks(block):
        found = source.find(chunk, position)
        assert found >= 0, f"README line {block.line}: not in {block.excerpt_of} (in order):\n{chunk}"
        position = found + len(chunk)


@pytest.mark.anyio
@pytest.mark.parametrize("block", [b for b in PYTHON if not b.excerpt_of], ids=_id)
async def test_python_blocks_run(block: Block) -> None:
    """Each block runs on its own (top-level ``await`` allowed, as in
    ``python -m asyncio``); a class overriding suite tests must name tests
    that exist."""
    code = compile(block.text, f"README.md:{block.line}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {"__name__": f"readme_line{block.line}"}
    result = eval(code, namespace)  # a coroutine when the block awaits
    if result is not None:
        await result
    for value in namespace.values():
        if isinstance(value, type) and issubclass(value, StorageConformance) and value is not StorageConformance:
            overridden = [name for name in vars(value) if name.startswith("test_")]
            unknown = [name for name in overridden if not hasattr(StorageConformance, name)]
            assert overridden and not unknown, f"README line {block.line} overrides no such test: {unknown}"


def test_toml_block_registers_a_storage_class() -> None:
    (block,) = [b for b in BLOCKS if b.language == "toml"]
    entry_points = tomllib.loads(block.text)["project"]["entry-points"]["memory_core.storage"]
    for value in entry_points.values():
        module, _, name = value.partition(":")
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, BaseStorage) and callable(cls.from_url)


def _commands() -> list[list[str]]:
    """The commands of the "Running" section's block (the first bash block)."""
    block = next(b for b in BLOCKS if b.language == "bash")
    return [shlex.split(line, comments=True) for line in block.text.splitlines() if line.strip()]


class _Collected:
    """A pytest plugin counting the tests a run collects."""

    def __init__(self) -> None:
        self.count = 0

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.count = len(session.items)


@pytest.mark.parametrize("command", [c for c in _commands() if "pytest" in c], ids=" ".join)
def test_bash_pytest_commands_select_tests(command: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each documented pytest line collects (without running) at least one test."""
    while "=" in command[0]:
        name, _, value = command.pop(0).partition("=")
        monkeypatch.setenv(name, value)
    assert command[0] == "pytest"
    monkeypatch.chdir(REPO)
    counter = _Collected()
    code = pytest.main([*command[1:], "--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[counter])
    assert code == 0 and counter.count > 0, f"{shlex.join(command)}: exit {code}, {counter.count} tests"


def test_bash_block_other_commands_are_known() -> None:
    others = [c for c in _commands() if "pytest" not in c]
    assert others == [["memory-core", "check", "URL"]]


# ------------------------------------------------------------------ self-contained


def test_readme_and_package_name_no_file_they_do_not_ship() -> None:
    texts = {README: README.read_text(encoding="utf-8")}
    texts.update({path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py")})
    found = [
        f"{path.relative_to(CONFORMANCE)}: {name}"
        for path, text in texts.items()
        for name in (f"{stem}.md" for stem in ("SPEC", "CASES", "DESIGN"))  # spelled apart: not a citation
        if name in text
    ]
    assert found == []
