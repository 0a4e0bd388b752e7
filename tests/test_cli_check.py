"""``memory-core check`` gives an honest verdict: Ctrl-C is no verdict, the
store named by the URL is checked (and never created) before the suite runs,
rules no test ran are listed as not run, and the run shows its progress."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from memory_core_conformance.check import INTERRUPTED, run_check
from rich.console import Console
from typer.testing import CliRunner

from memory_core.cli import app
from tests.cli_run import cli, cli_process, interrupted

SCRIPT = shutil.which("memory-core")


def _one_error_line(result: Any, says: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert says in result.output, result.output
    assert "CONFORMANT" not in result.output and "Traceback" not in result.output


@pytest.mark.skipif(SCRIPT is None, reason="the memory-core script is not installed")
def test_ctrl_c_is_interrupted_with_no_verdict_and_exit_130(tmp_path: Path) -> None:
    assert SCRIPT is not None
    url = f"sqlite:///{tmp_path}/check.db"
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        # The ci profile takes minutes on SQLite: the interrupt lands mid-suite.
        process = cli_process(
            "check", url, "--new", "--profile", "ci", as_script=True, stdout=sink, stderr=subprocess.STDOUT
        )

        def in_the_run() -> None:
            # Once the run's first store exists (the probe's, then the
            # suite's), the check is past its imports: the interrupt lands
            # in the run (an earlier one is "stopped while starting").
            deadline = time.monotonic() + 120
            while not list(tmp_path.glob("check-mc_check_*.db")) and time.monotonic() < deadline:
                time.sleep(0.005)
            assert process.poll() is None, out.read_text()

        interrupted(process, after=in_the_run)
        code = process.returncode
    text = out.read_text()
    assert code == INTERRUPTED == 130, text
    assert "interrupted after" in text and "no verdict" in text, text
    assert "CONFORMANT" not in text and "Traceback" not in text, text


def test_check_of_a_missing_folder_creates_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["check", f"sqlite:///{tmp_path}/missing/deeper/x.db"])
    _one_error_line(result, f"folder '{tmp_path}/missing/deeper' does not exist")
    assert list(tmp_path.iterdir()) == []


def test_check_of_a_file_that_is_not_a_database_fails_like_connect(tmp_path: Path) -> None:
    script = tmp_path / "notes.py"
    script.write_text("print('my work')\n")
    result = CliRunner().invoke(app, ["check", f"sqlite:///{script}"])
    _one_error_line(result, f"sqlite open failed: {script} is not an SQLite database file")
    assert script.read_text() == "print('my work')\n"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.py"]


def test_check_of_a_new_file_leaves_nothing_behind(tmp_path: Path) -> None:
    args = ["check", f"sqlite:///{tmp_path}/new.db", "--new", "--profile", "quick", "-k", "c07"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == []


def test_check_of_a_misspelt_file_is_refused_naming_the_fix(tmp_path: Path) -> None:
    """Before: ``check`` on a misspelt SQLite path checked a new, empty
    store there and passed. A command that reads a store refuses a URL that
    names none (as ``export`` and ``prune --vector`` do); ``--new`` is the
    way to check a deployment that holds no store yet."""
    from tests.cli_run import cli

    done = cli("check", f"sqlite:///{tmp_path}/agnet.db", "--profile", "quick", "-k", "c07", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "" and "CONFORMANT" not in done.stderr
    line = " ".join(done.stderr.split())
    assert line.startswith(f"error: cannot check sqlite:///{tmp_path}/agnet.db: "), line
    assert "agnet.db does not exist; check the path for a typo" in line, line
    assert "or pass --new to check a deployment that holds no store yet" in line, line
    assert list(tmp_path.iterdir()) == []
    empty = tmp_path / "empty.db"
    empty.touch()  # a file that is there but holds no memory-core store
    done = cli("check", f"sqlite:///{empty}", "--profile", "quick", "-k", "c07", cwd=tmp_path)
    assert done.returncode == 2 and "holds no memory-core store" in done.stderr and "--new" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["empty.db"] and empty.stat().st_size == 0


def test_report_lists_rules_that_did_not_run() -> None:
    result = CliRunner().invoke(
        app, ["check", "memory://", "--profile", "quick", "-k", "test_c07"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("│ ")}
    assert "pass" in rows["C07"]
    assert "not run" in rows["R-VEC"] and "not in this suite" in rows["R-VEC"], rows["R-VEC"]
    assert "not run" in rows["R-PAGE"] and "deselected" in rows["R-PAGE"], rows["R-PAGE"]
    assert "rule(s) not run" in result.output.splitlines()[-1]


def test_a_k_that_matches_no_test_is_a_user_error_naming_k(tmp_path: Path) -> None:
    """A -k that selects nothing is a typing mistake (exit 2, one red line
    naming -k and what it matched), not a verdict against the store (exit 1,
    operators.md). Before: "no test ran ... no verdict", exit 1."""
    result = cli("check", f"sqlite:///{tmp_path / 'agent.db'}", "--new", "-k", "working")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("check: ")]
    assert len(lines) == 1 and lines[0].startswith("error: -k 'working' matches no test"), result.stderr
    # a rule id is the natural first try (an operator trial): the line says what -k matches
    assert "not by rule ids" in lines[0], result.stderr
    assert "CONFORMANT" not in result.stdout and list(tmp_path.iterdir()) == []


def test_an_unknown_profile_is_one_red_line() -> None:
    _one_error_line(CliRunner().invoke(app, ["check", "memory://", "--profile", "bogus"]), "'bogus' is not a profile")


def test_profile_option_reaches_the_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kill profile runs one repeat of C12; dev runs three.
    monkeypatch.delenv("MEMORY_CORE_HYPOTHESIS_PROFILE", raising=False)
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    assert run_check("memory://", profile="kill", console=console, keyword="test_c07") == 0, out.getvalue()
    assert "MEMORY_CORE_HYPOTHESIS_PROFILE" not in os.environ


def test_progress_counts_collected_and_done_tests() -> None:
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    errors = Console(file=err, width=200, force_terminal=True, color_system=None)
    assert run_check("memory://", profile="quick", console=console, errors=errors, keyword="test_c07 or test_c06") == 0
    text = err.getvalue()
    assert "conformance suite" in text and "0/2 tests" in text and "left" in text, text
    assert "conformance suite" not in out.getvalue()  # the report's stream stays free of it


def test_check_prints_plain_progress_lines_on_stderr_off_a_terminal() -> None:
    """Before: with stdout piped, check showed no progress at all (its bar was
    drawn on stdout, and only on a terminal), unlike import/export/prune."""
    from memory_core.cli.progress import PLAIN_SECONDS_VARIABLE
    from tests.cli_run import _environment

    done = subprocess.run(
        [sys.executable, "-m", "memory_core", "check", "memory://", "--profile", "quick", "-k", "test_c07 or test_c06"],
        env={**_environment(), PLAIN_SECONDS_VARIABLE: "0"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("check: ")]
    assert lines and lines[0].startswith("check: 1 of 2 tests (50%), "), done.stderr
    assert lines[-1].startswith("check: 2 of 2 tests (100%), done in "), done.stderr
    assert "check: " not in done.stdout and "CONFORMANT" in done.stdout, done.stdout


def _children_started(pid: int, seconds: float) -> bool:
    """Wait until ``pid`` has a ``multiprocessing`` child (Linux's /proc) and
    that child has had time to import memory-core."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            for child in children.read_text().split():
                with contextlib.suppress(OSError):
                    if b"--multiprocessing-fork" in Path(f"/proc/{child}/cmdline").read_bytes():
                        time.sleep(1)
                        return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(SCRIPT is None, reason="the memory-core script is not installed")
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
def test_a_ctrl_c_that_reaches_the_checks_child_process_is_one_line(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the whole job: ``check`` and the child
    process a case of its suite started (``multiprocessing``, ``spawn``). The one line is check's
    "interrupted after N of M tests: no verdict". Before, the child (which
    took the parent's ``sys.argv``, ``memory-core``, for its own) printed
    "interrupted: stopped while starting, before it changed anything" too."""
    process = cli_process(
        "check",
        f"sqlite:///{tmp_path / 'agent.db'}",
        "--new",
        "--profile",
        "quick",
        as_script=True,
        new_group=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    started = []
    _, err = interrupted(process, after=lambda: started.append(_children_started(process.pid, 120)), group=True)
    said = [line for line in err.decode().splitlines() if line.strip() and not line.startswith("check: ")]
    assert started == [True], said
    assert process.returncode == 130, said
    assert len(said) == 1 and said[0].startswith("interrupted after "), said
