"""The first thing the ``memory-core`` process does: a Ctrl-C while it
starts (the interpreter imports memory-core, numpy, typer and every
command's module: seconds on a slow machine) ends it quietly.

Importing this module does it (:func:`quiet_start`), and
``memory_core/__init__.py`` imports it first; it imports only modules the
interpreter has loaded before any program runs (``os``, ``sys`` and
``_signal``, the C module under :mod:`signal`: importing :mod:`signal` itself
loads :mod:`enum`, and :mod:`typing` is as slow, milliseconds in which a
Ctrl-C was a traceback),
so it is in place before anything slow loads. What the interpreter runs
before it (its own start, ``site``, ``runpy`` for ``python -m``, the
``import re`` of pip's ``memory-core`` script: some milliseconds, tens on a
busy machine) is beyond a package's reach: a Ctrl-C there ends the process
by SIGINT (shells report 130) or, once the interpreter handles SIGINT,
with its own traceback. In a process that is the command line (:func:`launched_as_cli`:
``memory-core ...`` or ``python -m memory_core ...``) SIGINT is handled by
:func:`stop_while_starting` until a command begins (the command host,
:mod:`memory_core.cli.host`, sets Python's own handler back then). Any other
process importing memory-core (an application, a test run) is left alone.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing itself takes milliseconds to import
if TYPE_CHECKING:
    import signal as _signal  # the types (_signal has no stubs)
    from types import FrameType
else:
    import _signal  # loaded with the interpreter; signal would import enum first

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
    line, unless it was started with SIGINT ignored (``cmd &`` in a
    non-interactive shell, ``nohup``): by Unix convention such a process
    ignores SIGINT all its life, and every command keeps it ignored."""
    if launched_as_cli() and _signal.getsignal(_signal.SIGINT) != _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, stop_while_starting)


quiet_start()  # on import: the package imports this module before anything slow
