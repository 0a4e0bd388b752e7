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

__all__ = ["INTERRUPTED", "STARTING", "launched_as_cli", "quiet_start", "started_by_cli", "stop_while_starting"]

INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""

STARTING = "interrupted: stopped while starting, before it changed anything; run the command again"
"""The line a Ctrl-C while the command line starts prints on stderr."""


def launched_as_cli() -> bool:
    """True when this process is the ``memory-core`` command line: its
    script (``python .../memory-core``, what pip's script runs) or
    ``python [options] -m memory_core``. Read from the interpreter's own
    command line (``sys.orig_argv``), not ``sys.argv``: a ``multiprocessing``
    child started by the command (``spawn``) is handed the command's
    ``sys.argv`` for its own, and is not the command line."""
    arguments: list[str] = sys.orig_argv[1:]
    number = 0
    while number < len(arguments):
        argument = arguments[number]
        if argument == "-m":
            return arguments[number + 1 : number + 2] == ["memory_core"]
        if argument == "-c":  # a -c program (a multiprocessing child): not us
            return False
        if not argument.startswith("-"):
            return os.path.basename(argument) == "memory-core"
        number += 2 if argument in _OPTIONS_WITH_A_VALUE else 1
    return False


_OPTIONS_WITH_A_VALUE = frozenset({"-X", "-W"})
"""Interpreter options whose value is the next argument."""


def started_by_cli() -> bool:
    """True when this process is a ``multiprocessing`` child (``spawn``) of
    the ``memory-core`` command line: its command line ends with
    ``--multiprocessing-fork`` and it was handed the command's ``sys.argv``
    (the ``memory-core`` script or ``memory_core/__main__.py``)."""
    if "--multiprocessing-fork" not in sys.orig_argv or not sys.argv:
        return False
    program = os.path.normpath(sys.argv[0])
    return os.path.basename(program) == "memory-core" or program.endswith(os.path.join("memory_core", "__main__.py"))


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
    ignores SIGINT all its life, and every command keeps it ignored.

    In a child the command line started (:func:`started_by_cli`), SIGINT
    is ignored: a terminal's Ctrl-C reaches every process of the job, and
    the command reports it (one ``interrupted`` line) and ends its
    children; a child would add a line or a traceback of its own."""
    if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
        return
    if launched_as_cli():
        _signal.signal(_signal.SIGINT, stop_while_starting)
    elif started_by_cli():
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)


quiet_start()  # on import: the package imports this module before anything slow
