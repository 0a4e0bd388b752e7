"""The ``memory-core`` command host: a typer app whose subcommands come from
the entry-point group ``memory_core.cli``.

Each distribution registers its own commands (``demo`` here, ``check`` in
memory-core-conformance, ``bench`` in memory-core-bench), so the core imports
none of them. An entry point names a plain function; its signature (typer
``Annotated`` options) is the command line and its docstring the help. A
command whose distribution is missing, or whose module fails to import, still
answers: one red line that names the package to install, exit 2.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from memory_core.errors import BackendError, MemoryCoreError

__all__ = [
    "BACKEND_NEXT_STEP",
    "CLOSED_PIPE",
    "COMMAND_GROUP",
    "INTERRUPTED",
    "OS_NEXT_STEP",
    "PROVIDERS",
    "USER_ERROR",
    "build_app",
    "closed_pipe",
    "console",
    "errors",
    "fail",
    "main",
    "run_interruptible",
    "user_errors",
]

T = TypeVar("T")

COMMAND_GROUP = "memory_core.cli"
"""Entry-point group of ``memory-core`` subcommands: ``name = "module:function"``."""

USER_ERROR = 2
"""Exit code for a mistake in the command line (bad URL, scheme, path, option
value, missing package): one red line, no traceback."""

INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""

CLOSED_PIPE = 141
"""Exit code when the reader of stdout closed it (128 + SIGPIPE), as shells
report a filter that ``head`` stopped."""

PROVIDERS: dict[str, tuple[str, str]] = {
    "check": ("memory-core-conformance", "./conformance"),
    "bench": ("memory-core-bench", "./benchmarks"),
}
"""Commands other distributions of this project provide: name -> (distribution,
folder in a checkout). Only used to say what to install when one is missing."""

console = Console()
errors = Console(stderr=True)
"""Where errors, hints and progress go: stdout may carry a command's data (an export)."""


BACKEND_NEXT_STEP = "check that the URL names the store you mean and that it (its server, its file) can be opened"
"""What a :class:`~memory_core.errors.BackendError` line says to do next
(the other errors name their own next step in their message)."""

OS_NEXT_STEP = "check the path and its permissions"
"""What a line for an ``OSError`` (a file or folder the command could not use) says to do next."""


@contextmanager
def user_errors() -> Iterator[None]:
    """Report what the user's input caused (a memory-core error such as a bad
    URL, scheme or option; a missing file or folder; a missing optional
    package) as one red line and exit with :data:`USER_ERROR`; a closed
    stdout ends quietly (:func:`closed_pipe`). Every line names the next
    step: memory-core's errors in their messages, a backend failure
    (:data:`BACKEND_NEXT_STEP`) and an ``OSError`` (:data:`OS_NEXT_STEP`)
    here."""
    try:
        yield
    except BrokenPipeError:
        closed_pipe()
    except BackendError as exc:
        again = "; run the command again (the failure may pass)" if exc.retryable else ""
        fail(f"{exc}; {BACKEND_NEXT_STEP}{again}")
    except OSError as exc:
        fail(f"{exc}; {OS_NEXT_STEP}")
    except (MemoryCoreError, ImportError) as exc:
        fail(str(exc))


def closed_pipe() -> None:
    """End quietly after the reader of stdout went away (``memory-core export
    URL | head``): for a Unix filter that is a normal end, not an error. No
    message and no traceback; exit :data:`CLOSED_PIPE` (141, what a shell
    reports for a program SIGPIPE ended, as ``yes | head`` gives), and
    stdout is pointed at ``/dev/null`` so the interpreter's last flush at exit
    does not report the closed pipe again (the recipe of Python's
    :mod:`signal` documentation).

    Raises:
        typer.Exit: always.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test runner's buffer)
        pass
    raise typer.Exit(CLOSED_PIPE) from None


def fail(message: str) -> None:
    """Print ``error: <message>`` as one red line on stderr and exit with :data:`USER_ERROR`.

    Raises:
        typer.Exit: always.
    """
    errors.print(f"[red]error: {escape(message)}[/]", soft_wrap=True)
    raise typer.Exit(USER_ERROR) from None


def run_interruptible(work: Coroutine[Any, Any, T], interrupted: str) -> T:
    """Run ``work`` (``asyncio.run``); on Ctrl-C print ``interrupted: <interrupted>``
    in yellow on stderr and exit with :data:`INTERRUPTED`, without a traceback.

    Args:
        work: the command's coroutine.
        interrupted: what the user should know and do (``"resume with --before ..."``).

    Raises:
        typer.Exit: after Ctrl-C (exit code 130).
    """
    try:
        return asyncio.run(work)
    except KeyboardInterrupt:
        errors.print(f"[yellow]interrupted: {escape(interrupted)}[/]", soft_wrap=True)
        raise typer.Exit(INTERRUPTED) from None


def _install_hint(name: str, distribution: str | None) -> str:
    dist, folder = PROVIDERS.get(name, (distribution or "the package that provides it", ""))
    if folder:  # ours: not on PyPI, installed from a clone
        return f"pip install -e {folder} ({dist}, from a clone of memory-core; it is not on PyPI)"
    return f"pip install {dist}"


def _unavailable(reason: str) -> Callable[..., None]:
    """A stand-in command that fails with ``reason``."""

    def command(ctx: typer.Context) -> None:
        fail(reason)

    command.__doc__ = f"(unavailable: {reason})"
    return command


def _load(entry: EntryPoint) -> tuple[Callable[..., Any], bool]:
    """The command function of ``entry``, or a stand-in (second item True)
    when its module cannot be imported."""
    distribution = entry.dist.name if entry.dist is not None else None
    try:
        loaded: Callable[..., Any] = entry.load()
    except ImportError as exc:
        missing = (exc.name or "a dependency").split(".")[0]
        owner = distribution or PROVIDERS.get(entry.name, ("its package", ""))[0]
        if missing == entry.value.split(".")[0].split(":")[0]:
            reason = f"the {owner} package is not installed"
        else:
            reason = f"{owner} needs {missing}, which is not installed"
        return _unavailable(f"{reason}; install it with: {_install_hint(entry.name, distribution)}"), True
    return loaded, False


def build_app(commands: Iterable[EntryPoint] | None = None) -> typer.Typer:
    """A ``memory-core`` app holding ``commands`` (default: every entry point
    of :data:`COMMAND_GROUP`) plus, for each :data:`PROVIDERS` command not
    among them, a stand-in that names the distribution to install.

    Args:
        commands: entry points to register (tests pass a chosen set).

    Returns:
        A fresh ``typer.Typer``; loading it imports each command's module
        (which should import its heavy dependencies only when run).
    """
    app = typer.Typer(help="memory-core: async storage for agent conversation memory.", no_args_is_help=True)
    # A callback keeps typer in group mode even with a single command.
    app.callback()(lambda: None)
    found = {entry.name: entry for entry in (entry_points(group=COMMAND_GROUP) if commands is None else commands)}
    extra = {"allow_extra_args": True, "ignore_unknown_options": True}
    for name in sorted(found.keys() | PROVIDERS.keys()):
        if name in found:
            function, stand_in = _load(found[name])
        else:
            reason = f"the {name} command comes with {PROVIDERS[name][0]}, which is not installed"
            function, stand_in = _unavailable(f"{reason}; install it with: {_install_hint(name, None)}"), True
        # A stand-in accepts any arguments, so the user sees why, not a usage error.
        app.command(name=name, context_settings=extra if stand_in else None)(function)
    return app


def main() -> None:  # pragma: no cover - console entry point
    """Entry point of the ``memory-core`` script and ``python -m memory_core``."""
    build_app()()
