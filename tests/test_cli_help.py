"""Every command's ``--help``, read as a user reads it (a real process):
plain text that starts with its usage line, arguments named as the usage
names them (``URL``), a value name after each option that takes one and
none after a flag. Before (typer 0.29's own help): a blank first line,
``[OPTIONS] {url}``, ``--dry-run <bool>`` (as if the flag took a value),
``<str>`` types and reST ````--before```` from the docstrings."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import EntryPoint, entry_points, version
from pathlib import Path
from typing import Any

import pytest
import typer

from memory_core.cli.host import PROVIDERS, build_app
from tests.cli_run import cli

_DECLARED = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
COMMANDS = sorted(set(_DECLARED["project"]["entry-points"]["memory_core.cli"]) | set(PROVIDERS))
_TYPE_TAG = re.compile(r"<[A-Za-z][^>]*>")


def _command(name: str) -> Any:
    """The click command ``name`` of the host, for the list of its parameters:
    the installed commands and those this checkout declares that the
    installed (editable) metadata does not know yet, as :mod:`tests.cli_run`
    registers them for its processes."""
    found = {entry.name: entry for entry in entry_points(group="memory_core.cli")}
    for declared, value in _DECLARED["project"]["entry-points"]["memory_core.cli"].items():
        found.setdefault(declared, EntryPoint(declared, value, "memory_core.cli"))
    return typer.main.get_command(build_app(found.values())).commands[name]  # type: ignore[attr-defined]


def _dashes(option: str) -> int:
    """How help orders an option's names: ``-o`` before ``--output``."""
    return len(option) - len(option.lstrip("-"))


def _read_as_a_user(help_text: str) -> None:
    lines = help_text.splitlines()
    assert lines and lines[0].startswith("Usage: "), help_text
    assert "{" not in lines[0], lines[0]
    assert not _TYPE_TAG.search(help_text), help_text
    assert "``" not in help_text, help_text


def test_the_command_list_reads_as_plain_text() -> None:
    done = cli("--help")
    assert done.returncode == 0, done.stderr
    _read_as_a_user(done.stdout)
    for name in COMMANDS:
        assert re.search(rf"^  {re.escape(name)}  +\S", done.stdout, re.MULTILINE), done.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_help_names_values_and_shows_flags_bare(name: str) -> None:
    done = cli(name, "--help")
    assert done.returncode == 0, done.stderr
    _read_as_a_user(done.stdout)
    usage = done.stdout.splitlines()[0]
    for param in _command(name).params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            assert re.search(rf"\b{param.name.upper()}\b", usage), usage
            assert re.search(rf"^  {param.name.upper()}  +\S", done.stdout, re.MULTILINE), done.stdout
            continue
        names = " / ".join(", ".join(sorted(opts, key=_dashes)) for opts in (param.opts, param.secondary_opts) if opts)
        row = re.search(rf"^  {re.escape(names)}( [A-Z][A-Z ]*)?( {{2,}}\S|$)", done.stdout, re.MULTILINE)
        assert row is not None, (names, done.stdout)
        shown = (row.group(1) or "").strip()
        assert (shown == "") == param.is_flag, (names, shown, done.stdout)


def test_version_names_memory_core_and_each_installed_adapter() -> None:
    """Issue 26: before, ``memory-core --version`` said ``No such option:
    --version`` (exit 2). Now one line per distribution, memory-core first:
    what a bug report needs."""
    adapters = {
        entry.dist.name: entry.dist.version
        for group in ("memory_core.storage", "memory_core.vector")
        for entry in entry_points(group=group)
        if entry.dist is not None and entry.dist.name != "memory-core"
    }
    for args in (["--version"], ["--version", "demo"]):  # eager: before any command runs
        done = cli(*args)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == f"memory-core {version('memory-core')}", done.stdout
        assert lines[1:] == [f"{name} {adapters[name]}" for name in sorted(adapters)], done.stdout
    assert "--version" in cli("--help").stdout
