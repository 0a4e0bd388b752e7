"""Run ``memory-core`` as a real process (``python -m memory_core``), with
this interpreter and the test run's environment (its ``PYTHONPATH``), for
tests of what a user sees: exit codes, stdout and stderr apart, signals.

A command this checkout's ``pyproject.toml`` declares that the installed
(editable) metadata does not know yet (an install made before the command
was added) is registered for the process by a small ``.dist-info`` on its
``PYTHONPATH`` (:func:`_environment`), so the tests run the checkout's
commands through the real entry-point discovery either way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

__all__ = ["cli", "cli_environment", "cli_process", "interrupted", "script"]

_CHECKOUT = Path(__file__).resolve().parent.parent


@cache
def _environment() -> dict[str, str]:
    """This process's environment, plus the missing commands' ``.dist-info``
    (in a folder that lives as long as the test run) on ``PYTHONPATH``."""
    environment = dict(os.environ)
    declared = tomllib.loads((_CHECKOUT / "pyproject.toml").read_text())["project"]["entry-points"]["memory_core.cli"]
    installed = {entry.name for entry in entry_points(group="memory_core.cli")}
    missing = {name: value for name, value in declared.items() if name not in installed}
    if missing:
        folder = Path(tempfile.mkdtemp(prefix="memory-core-commands-"))
        info = folder / "memory_core_checkout_commands-0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: memory-core-checkout-commands\nVersion: 0\n")
        lines = "".join(f"{name} = {value}\n" for name, value in missing.items())
        (info / "entry_points.txt").write_text(f"[memory_core.cli]\n{lines}")
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), environment.get("PYTHONPATH")]))
    return environment


def cli_environment() -> dict[str, str]:
    """The environment :func:`cli` runs ``memory-core`` with (a copy), for
    a test that runs printed advice through a shell."""
    return dict(_environment())


def script() -> Path | None:
    """The ``memory-core`` script installed beside this interpreter (what a
    user runs; it imports memory-core from ``PYTHONPATH`` as ``-m`` does), if any."""
    found = Path(sys.executable).parent / "memory-core"
    return found if found.is_file() else None


def cli_process(
    *args: str,
    cwd: Path | None = None,
    env_extra: dict[str, str] | None = None,
    as_script: bool = False,
    new_group: bool = False,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start ``memory-core ARGS`` (not waited for); ``env_extra`` adds to its
    environment; ``as_script`` runs the installed script (:func:`script`,
    which must exist) instead of ``python -m memory_core``. It starts as a
    terminal's foreground job does, SIGINT at its default and not blocked,
    whatever the test process has (a test runner's worker may ignore or
    block it, and a child inherits both); a ``preexec_fn`` given replaces
    that (a test of a background job). ``new_group`` makes it the leader of
    a process group of its own, as a shell makes a job: ``interrupted(...,
    group=True)`` then reaches it and every process it started, as a
    terminal's Ctrl-C does."""
    environment = {**_environment(), **(env_extra or {})}
    command = [str(script())] if as_script else [sys.executable, "-m", "memory_core"]
    popen.setdefault("preexec_fn", _foreground_job if new_group else _foreground)
    return subprocess.Popen([*command, *args], cwd=cwd, env=environment, **popen)


def interrupted(
    process: subprocess.Popen[bytes],
    after: float | Callable[[], object] = 0.0,
    *,
    repeat: int = 1,
    timeout: float = 120,
    group: bool = False,
) -> tuple[bytes, bytes]:
    """Ctrl-C ``process`` (from :func:`cli_process`) at a moment, then read
    it to its end: what a user's Ctrl-C does to a command.

    Args:
        process: the running command.
        after: seconds to wait before the SIGINT, or a callable that returns
            when the moment has come (it waits for a file, a line, a count;
            its result is the caller's to check).
        repeat: SIGINTs to send, ``after`` seconds apart (a number ``after``).
        timeout: seconds ``communicate`` waits for the process to end.
        group: send each SIGINT to the process group ``process`` leads
            (started with ``new_group``): the command and its children, as
            a terminal's Ctrl-C reaches them all.

    Returns:
        Its stdout and stderr (``b""`` for a stream that was not piped);
        ``process.returncode`` is its exit code.

    Whatever fails (the wait, the read, a timeout), a process still running
    is killed: a test leaves none behind.
    """
    try:
        for _ in range(repeat):
            if callable(after):
                after()
            else:
                time.sleep(after)
            if group:
                os.killpg(process.pid, signal.SIGINT)
            else:
                process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=timeout)
        return out or b"", err or b""
    finally:
        if process.poll() is None:
            process.kill()
        if group:  # children it left running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


def _foreground() -> None:
    """In the child before ``exec``: SIGINT as a terminal's foreground job has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _foreground_job() -> None:
    """In the child before ``exec``: :func:`_foreground`, in a process group of its own."""
    os.setpgid(0, 0)
    _foreground()


def cli(
    *args: str, cwd: Path | None = None, input: bytes | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run ``memory-core ARGS`` to its end; stdout and stderr as text, apart."""
    done = subprocess.run(
        [sys.executable, "-m", "memory_core", *args],
        cwd=cwd,
        env=dict(_environment()),
        input=input,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )
