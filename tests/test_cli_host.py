"""One ``memory-core`` command, extended by entry points: ``demo`` comes from
the core, ``check`` from memory-core-conformance, ``bench`` from
memory-core-bench, each found through the group ``memory_core.cli``; a
missing one names the distribution to install."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core.cli import build_app
from memory_core.cli.host import COMMAND_GROUP

OWNERS = {"demo": "memory-core", "check": "memory-core-conformance", "bench": "memory-core-bench"}


def test_each_command_is_registered_by_its_own_distribution() -> None:
    found = {ep.name: ep for ep in entry_points(group=COMMAND_GROUP)}
    for name, distribution in OWNERS.items():
        assert name in found, f"{distribution} does not register {name!r}"
        dist = found[name].dist
        assert dist is not None and dist.name == distribution


def test_the_installed_script_lists_every_command() -> None:
    script = Path(sys.executable).with_name("memory-core")
    for command in ([str(script), "--help"], [sys.executable, "-m", "memory_core", "--help"]):
        # The checkout under test (PYTHONPATH), not whatever the install points at.
        env = {"COLUMNS": "200", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)
        assert done.returncode == 0, done.stderr
        for name in OWNERS:
            assert f"\n  {name}  " in done.stdout, done.stdout


def test_demo_runs_through_the_entry_point(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_app(), ["demo", "--db", str(tmp_path / "d.db"), "--vector", "none"])
    assert result.exit_code == 0, result.output
    assert "loaded 1 resource, 3 threads, 36 messages" in result.output


def test_check_runs_through_the_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_CORE_HYPOTHESIS_PROFILE", "quick")
    # Only the two cheapest rule tests: the whole suite runs in the conformance tests.
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k test_c07_bad_page_bounds_rejected_alike")
    result = CliRunner().invoke(build_app(), ["check", "memory://"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "C07" in result.output and "CONFORMANT" in result.output and "NOT CONFORMANT" not in result.output


def test_bench_runs_through_the_entry_point(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["bench", "--storage", "memory://", "--vector", "none", "--sizes", "200", "--workloads", "recall_newest"]
    args += ["--duration", "0", "--min-ops", "2", "--max-ops", "2", "--no-raw", "--no-peers", "--no-plots"]
    result = CliRunner().invoke(build_app(), [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "results.json").is_file() and "recall_newest" in (out / "results.md").read_text()


@pytest.mark.parametrize(("name", "folder"), [("check", "./conformance"), ("bench", "./benchmarks")])
def test_a_missing_command_names_the_distribution_to_install(name: str, folder: str) -> None:
    others = [ep for ep in entry_points(group=COMMAND_GROUP) if ep.name != name]
    result = CliRunner().invoke(build_app(others), [name, "anything", "--option"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
    assert f"the {name} command comes with {OWNERS[name]}, which is not installed" in result.output
    assert f"pip install -e {folder}" in result.output


def test_piped_messages_keep_a_long_path_on_one_line(tmp_path: Path) -> None:
    """Before: off a terminal rich wrapped every message at 80 columns, so an
    error naming a long path came out split across lines (grep and a
    one-line-per-message parser saw pieces). Here bench's unwritable
    ``--out``: a message printed without a per-call soft wrap."""
    pytest.importorskip("memory_core_bench")
    from tests.cli_run import cli

    (tmp_path / "a-file").write_text("not a folder")
    out = tmp_path / "a-file" / ("results-" + "x" * 120)
    done = cli("bench", "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    said = [line for line in (done.stdout + done.stderr).splitlines() if "cannot write results" in line]
    assert len(said) == 1 and str(out) in said[0], done.stdout + done.stderr


def test_help_into_a_closed_pipe_ends_without_a_traceback() -> None:
    """Before: ``memory-core --help | head -1`` ended in an AttributeError
    traceback (``typer._click.exceptions`` has no ``Abort``), reached by the
    exit typer makes after the closed pipe."""
    from tests.cli_run import cli_process

    process = cli_process("--help", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the help is written: its write meets a closed pipe
    errors = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, errors
    assert "Traceback" not in errors, errors


@pytest.fixture
def sigint_restored() -> object:
    """``work_complete`` ignores SIGINT in the main thread: put it back."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_that_lands_as_the_work_completes_is_no_interruption(sigint_restored: object) -> None:
    """A Ctrl-C that cut the work short just after its result was in place
    (an export's file renamed into place) ends as the complete command it
    is: ``complete_if`` says so, no "interrupted" line, no exit 130.
    Before: "FILE was not written" for a whole file (trial 25b, 1 in 30)."""
    from memory_core.cli.host import run_interruptible

    async def cut_short() -> str:
        raise KeyboardInterrupt  # what the SIGINT handler raises at the work's last await

    assert run_interruptible(cut_short(), "FILE was not written", complete_if=lambda: "whole") == "whole"


def test_a_ctrl_c_before_the_loop_runs_leaves_one_line_and_no_warning(
    monkeypatch: pytest.MonkeyPatch, sigint_restored: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C while ``asyncio.run`` builds its loop leaves the command's
    coroutines never started: they are closed, so the ``interrupted:``
    line is the only one (before: "coroutine ... was never awaited"
    warnings after it, trial 25b)."""
    import gc
    import warnings

    import typer

    from memory_core.cli import host

    def interrupted_run(main: object) -> object:
        raise KeyboardInterrupt

    async def work() -> None:
        return None

    monkeypatch.setattr(host, "run_quietly", interrupted_run)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(typer.Exit) as ended:
            host.run_interruptible(work(), "run it again")
        gc.collect()
    assert ended.value.exit_code == host.INTERRUPTED
    assert not [w for w in caught if "never awaited" in str(w.message)], [str(w.message) for w in caught]
    assert "interrupted: run it again" in capsys.readouterr().err


def test_a_ctrl_c_while_the_event_loop_is_built_waits_for_the_loop() -> None:
    """A Ctrl-C that lands while a command's runner builds its event loop is
    held until the loop exists, then raised: the runner closes a whole loop.
    Before, it could cut the loop's construction and leave a half-made loop
    whose collection printed a traceback after the one ``interrupted:``
    line (seen in a full run under load)."""
    import asyncio
    import signal

    from memory_core.cli import host

    built: list[asyncio.AbstractEventLoop] = []

    def interrupted_factory() -> asyncio.AbstractEventLoop:
        signal.raise_signal(signal.SIGINT)  # the Ctrl-C lands while the loop is being built
        loop = asyncio.new_event_loop()
        built.append(loop)
        return loop

    async def work() -> None:
        raise AssertionError("the command's work must not start")

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), host._QuietRunner(loop_factory=interrupted_factory) as runner:
            coroutine = work()
            try:
                runner.run(coroutine)
            finally:
                coroutine.close()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(built) == 1 and built[0].is_closed()
