"""The first thing the ``memory-core`` process does: a Ctrl-C while it
starts (the interpreter imports memory-core, numpy, typer and every
command's module: seconds on a slow machine) ends it quietly.

Importing this module does it (:func:`quiet_start`), and
``memory_core/__init__.py`` imports it first; it imports ``os``, ``signal``
and ``sys`` only, so it is in place before anything slow loads (what the
interpreter itself runs before it, about a tenth of a second, is beyond
reach). In a process that is the command line (:func:`launched_as_cli`:
``memory-core ...`` or ``python -m memory_core ...``) SIGINT is handled by
:func:`stop_while_starting` until a command begins (the command host,
:mod:`memory_core.cli.host`, sets Python's own handler back then). Any other
process importing memory-core (an application, a test run) is left alone.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

__all__ = ["INTERRUPTED", "STARTING", "launched_as_cli", "quiet_start", "stop_while_starting"]

INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""

STARTING = "interrupted: stopped while starting, before it changed anything; run the command again"
"""The line a Ctrl-C while the command line starts prints on stderr."""


def launched_as_cli() -> bool:
    """True when this process is the ``memory-core`` command line: its
    script (``argv[0]`` named ``memory-core``) or ``python [options] -m
    memory_core``."""
    if os.path.basename(sys.argv[0]) == "memory-core":
        return True
    arguments = getattr(sys, "orig_argv", [])[1:]
    for number, argument in enumerate(arguments):
        if argument == "-m":
            return arguments[number + 1 : number + 2] == ["memory_core"]
        if not argument.startswith("-"):  # a script or a -c program: not us
            return False
    return False


def stop_while_starting(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler while the command line starts: nothing has been
    done, so there is nothing to undo: print :data:`STARTING` and end with
    :data:`INTERRUPTED` at once (no traceback from the import that was
    running, no cleanup to run)."""
    os.write(2, f"{STARTING}\n".encode())
    os._exit(INTERRUPTED)


def quiet_start() -> None:
    """Install :func:`stop_while_starting` when this process is the command
    line. Also when it was started with SIGINT ignored (``cmd &`` in a
    script, a test runner in the background): Ctrl-C stops a ``memory-core``
    command at any moment, as ``check`` always did once its suite began;
    before, such a process ignored a Ctrl-C until then."""
    if launched_as_cli():
        signal.signal(signal.SIGINT, stop_while_starting)


quiet_start()  # on import: the package imports this module before anything slow
