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
import atexit
import contextlib
import errno
import functools
import importlib
import logging
import os
import re
import select
import shlex
import signal
import stat
import sys
import threading
from collections.abc import Callable, Coroutine, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import Enum
from importlib.metadata import EntryPoint, PackageNotFoundError, entry_points, version
from pathlib import PurePath
from types import FrameType
from typing import IO, Annotated, Any, NoReturn, TypeVar, get_args, get_origin

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand

from memory_core.errors import BackendError, MemoryCoreError, ValidationError
from memory_core.launch import INTERRUPTED, stop_while_starting

__all__ = [
    "BACKEND_NEXT_STEP",
    "CLOSED_PIPE",
    "COMMAND_GROUP",
    "INTERRUPTED",
    "OPTION_OF_FIELD",
    "OS_NEXT_STEP",
    "PROVIDERS",
    "STOPPED",
    "USER_ERROR",
    "advice_command",
    "backend_line",
    "build_app",
    "clauses",
    "closed_pipe",
    "console",
    "end_process",
    "errors",
    "fail",
    "line_console",
    "main",
    "naming_path",
    "os_error_line",
    "plain_words",
    "run_interruptible",
    "run_quietly",
    "shell_words",
    "user_errors",
    "what_happened",
    "work_complete",
]

T = TypeVar("T")

COMMAND_GROUP = "memory_core.cli"
"""Entry-point group of ``memory-core`` subcommands: ``name = "module:function"``."""

USER_ERROR = 2
"""Exit code for a mistake in the command line (bad URL, scheme, path, option
value, missing package): one red line, no traceback."""

CLOSED_PIPE = 141
"""Exit code when the reader of stdout closed it (128 + SIGPIPE), as shells
report a filter that ``head`` stopped."""

PROVIDERS: dict[str, tuple[str, str]] = {
    "check": ("memory-core-conformance", "./conformance"),
    "bench": ("memory-core-bench", "./benchmarks"),
}
"""Commands other distributions of this project provide: name -> (distribution,
folder in a checkout). Only used to say what to install when one is missing."""


def line_console(file: IO[str] | None = None, *, stderr: bool = False) -> Console:
    """A rich Console for a command's output (``file``, else stdout or, with
    ``stderr``, stderr) that keeps each message on one line when that stream
    is not a terminal: rich would otherwise wrap it at 80 columns (its width
    off a terminal), splitting an error that names a long path across lines
    for grep and a script reading one line per message. On a terminal,
    messages wrap at its width as before; tables are laid out either way."""
    made = _LineConsole(file=file, stderr=stderr)
    made.soft_wrap = not made.is_terminal
    return made


class _LineConsole(Console):
    """A rich Console whose closed stdout ends the command as
    :func:`closed_pipe` does (exit 141): rich's own ends it with exit 1, the
    code of a verdict against the store (``check ... | head``)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _silence_stdout()
        raise SystemExit(CLOSED_PIPE)


console = line_console()
errors = line_console(stderr=True)
"""Where errors, hints and progress go: stdout may carry a command's data (an export)."""


BACKEND_NEXT_STEP = "check that the URL names the store you mean and that it (its server, its file) can be opened"
"""What a :class:`~memory_core.errors.BackendError` line says to do next
(the other errors name their own next step in their message)."""

OS_NEXT_STEP = "check the path and its permissions"
"""What a line for an ``OSError`` (a file or folder the command could not use) says to do next."""

_OS_NEXT_STEPS = {
    errno.ENOSPC: "free space there or give a path on another disk",
    errno.EDQUOT: "free space there or give a path on another disk",
}
"""The next step for the errors :data:`OS_NEXT_STEP` does not fit (a full
disk: the path and its permissions are fine)."""


def os_error_line(exc: OSError) -> str:
    """The line for an ``OSError`` a command reports: the path (both, for a
    rename or link), what happened in words and the next step
    (``/dev/full: no space left on device; free space there or give a path
    on another disk``), never the raw ``[Errno 28] ...``. The command names
    the path when the operation did not (a write to an open file: see
    :func:`naming_path`); without one the line starts with the words."""
    words = os.strerror(exc.errno).lower() if exc.errno is not None else str(exc)
    where = [str(name) for name in (exc.filename, exc.filename2) if name is not None]
    said = f"{' -> '.join(where)}: {words}" if where else words
    return clauses(said, _OS_NEXT_STEPS.get(exc.errno or 0, OS_NEXT_STEP))


@contextmanager
def naming_path(path: object) -> Iterator[None]:
    """An ``OSError`` raised in the block without a path (a write, flush or
    close of an open file: ``[Errno 28] No space left on device``) gets
    ``path`` as its ``filename``, so :func:`os_error_line` names it
    (``path``: a file's path, or ``"stdout"``). A closed pipe
    (``BrokenPipeError``) is left as it is: it ends quietly."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None and not isinstance(exc, BrokenPipeError):
            exc.filename = str(path)
        raise


def advice_command(*arguments: str) -> str:
    """The command ``memory-core ARGUMENTS`` as advice to paste into a POSIX
    shell: every argument quoted where the shell would split or read it
    (``shlex.join``: a URL's ``?a=1&b=2`` stays one argument, not a
    background job). Every advice line that names a command builds it here;
    a placeholder (a value the advice cannot know) is written in capitals,
    ``VECTOR_URL``, which needs no quoting, and the line says what it stands
    for. Returns one line; raises nothing."""
    return shell_words(["memory-core", *arguments])


def shell_words(words: Iterable[str]) -> str:
    """``words`` as POSIX shell words, each quoted where needed (the words of
    a shell loop in advice, :func:`advice_command`'s quoting)."""
    return shlex.join(words)


def clauses(*parts: str) -> str:
    """``parts`` joined into one line with ``"; "``, each without the
    sentence end it may carry (a driver's message ending in ``.``, which
    glued to the next clause read ``refused.; check ...``) and empty ones
    left out. A part that ends in a question (click's ``Did you mean
    'export'?``) keeps its mark and starts the next as a sentence (``?
    See ...``), never ``?;``. Every CLI line made of several messages is
    joined here."""
    line = ""
    for part in parts:
        kept = part.strip().rstrip(".").rstrip()
        if not kept:
            continue
        if not line:
            line = kept
        elif line.endswith(("?", "!")):
            line = f"{line} {kept[0].upper()}{kept[1:]}"
        else:
            line = f"{line}; {kept}"
    return line


OPTION_OF_FIELD: dict[str, str] = {
    "url": "URL",
    "prefix": "URL",
    "schema": "URL",
    "database": "URL",
    "embedder": "--embedder",
    "vector": "--vector",
    "profile": "--profile",
    "batch_size": "--batch-size",
    "resource_id": "--resource",
}
"""A library error's field (a parameter's or a URL part's name) as the
command line names what the user gave: every command's storage URL is its
argument ``URL`` (``prefix``, ``schema``, ``database`` are parts of it),
and the library's ``embedder``, ``vector``, ``profile``, ``batch_size``
and ``resource_id`` are the options ``--embedder``, ``--vector``,
``--profile``, ``--batch-size`` and ``--resource`` (a URL's own ``?batch_size=`` is named with its URL:
:func:`memory_core.cli.stores.url_role`). Translated in one
place, :func:`user_errors`; fields not listed are shown as they are (the
commands name their own options, ``--resource``)."""


@contextmanager
def user_errors() -> Iterator[None]:
    """Report what the user's input caused (a memory-core error such as a bad
    URL, scheme or option; a missing file or folder; a missing optional
    package) as one red line and exit with :data:`USER_ERROR`; a closed
    stdout ends quietly (:func:`closed_pipe`). A
    :class:`~memory_core.errors.ValidationError` names its field as the
    command line does (:data:`OPTION_OF_FIELD`). Every line names the next
    step: memory-core's errors in their messages, a backend failure
    (:data:`BACKEND_NEXT_STEP`) and an ``OSError`` (its path and errno in
    words: :func:`os_error_line`) here."""
    try:
        yield
    except BrokenPipeError:
        closed_pipe()
    except BackendError as exc:
        fail(backend_line(f"{exc.backend} {exc.operation} failed", exc))
    except OSError as exc:
        fail(os_error_line(exc))
    except ValidationError as exc:
        fail(f"{OPTION_OF_FIELD.get(exc.field, exc.field)}: {exc.reason}")
    except (MemoryCoreError, ImportError) as exc:
        fail(str(exc))


def backend_line(where: str, exc: BackendError) -> str:
    """The line for a backend failure: ``where`` (what the command tried,
    or the URL it tried it on), what happened in words
    (:func:`what_happened`), :data:`BACKEND_NEXT_STEP`, and running the
    command again when the failure may pass."""
    again = "run the command again (the failure may pass)" if exc.retryable else ""
    return clauses(f"{where}: {what_happened(exc)}", BACKEND_NEXT_STEP, again)


def what_happened(exc: BackendError) -> str:
    """What a :class:`~memory_core.errors.BackendError` says happened,
    without the driver exception's class name a command-line user cannot
    act on (``DatabaseError: ``, ``ConnectionRefusedError: [Errno 111]
    Connect call failed ('127.0.0.1', 1)``): an operating-system error is
    its errno's words (``connection refused``; ``permission denied
    (/data/x.db)`` with its file), another driver error its
    message, one without a message its class name in words
    (``TimeoutError()`` -> ``timeout error``); the line names the address
    (the URL) itself. A message the adapter wrote in its own words (one
    that does not repeat the driver's: a ``qdrant+path`` folder another
    process holds, a SQLite rebuild held off) is said as written: it names
    the cause and the way out, the driver's words (``Can't init WAL:
    Kind(WouldBlock)``) neither."""
    original = exc.original
    if original is None or str(original).strip() not in exc.detail:
        return exc.detail
    if isinstance(original, OSError) and original.errno is not None:
        words = os.strerror(original.errno).lower()
        return f"{words} ({original.filename})" if original.filename else words
    said = str(original).strip()
    if said:
        return said
    return re.sub(r"(?<!^)(?=[A-Z])", " ", type(original).__name__).lower()


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
    _silence_stdout()
    raise typer.Exit(CLOSED_PIPE) from None


def _silence_stdout() -> None:
    """Point stdout at ``/dev/null``: the interpreter's last flush at exit
    then does not report the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (a test runner's buffer)
        pass


_RULE_TAG = re.compile(r"\[R-[A-Z0-9-]+\] | \(R-[A-Z0-9-]+\)")


def plain_words(message: str) -> str:
    """``message`` without the specification's rule ids: the ``[R-TIME] ``
    a :class:`~memory_core.errors.ValidationError` message starts with (the
    library's convention; ``exc.rule`` keeps the id) and a `` (R-ORDER)``
    in running text. A command line user reads the field and the reason;
    the ids name sections of a document they do not have."""
    return _RULE_TAG.sub("", message)


def fail(message: str) -> NoReturn:
    """Print ``error: <message>`` as one red line on stderr and exit with
    :data:`USER_ERROR`; Ctrl-C is ignored from here (:func:`work_complete`),
    so one that comes while the process ends keeps the error's code. Rule
    ids are left out (:func:`plain_words`).

    Raises:
        typer.Exit: always.
    """
    work_complete()  # the outcome is decided: a Ctrl-C from here changes neither the line nor the code
    errors.print(f"[red]error: {escape(plain_words(message))}[/]", soft_wrap=True)
    raise typer.Exit(USER_ERROR) from None


def run_interruptible(
    work: Coroutine[Any, Any, T],
    interrupted: str | Callable[[], str],
    *,
    complete_if: Callable[[], T | None] | None = None,
) -> T:
    """Run ``work`` (``asyncio.run``); on Ctrl-C while it runs print
    ``interrupted: <interrupted>`` in yellow on stderr and exit with
    :data:`INTERRUPTED`, without a traceback.

    Once ``work`` has returned, the command's work is complete: from then on
    Ctrl-C is ignored (:func:`work_complete`), so a Ctrl-C that arrives while
    the event loop shuts down or the command prints its result does not turn
    a finished run into an exit 130 (a script would redo it).

    Args:
        work: the command's coroutine.
        interrupted: what the user should know and do (``"resume with --before ..."``),
            or a function that says it when the Ctrl-C comes (a command
            whose first step writes nothing: ``import`` checking its input).
        complete_if: asked after a Ctrl-C that cut ``work`` short: the
            command's result when its work was complete all the same (an
            export whose file was put in place just before), else None.

    Raises:
        typer.Exit: after a Ctrl-C that left work undone (exit code 130).
    """
    finished: list[T] = []

    async def whole() -> T:
        result = await work
        finished.append(result)
        work_complete()
        return result

    main = whole()
    try:
        return run_quietly(main)
    except KeyboardInterrupt:
        if finished:  # the Ctrl-C came between the end of the work and work_complete
            return finished[0]
        work_complete()  # the outcome is decided: a second Ctrl-C does not cut the line
        for never_run in (main, work):  # cut before the loop ran them: no "never awaited" warning
            never_run.close()
        done = None if complete_if is None else complete_if()
        if done is not None:
            return done
        said = interrupted if isinstance(interrupted, str) else interrupted()
        errors.print(f"[yellow]interrupted: {escape(said)}[/]", soft_wrap=True)
        raise typer.Exit(INTERRUPTED) from None


def work_complete() -> None:
    """Say that the command's work is complete (its output written, nothing
    left undone): from now on SIGINT is ignored, and the process ends as the
    command says (exit 0 for success), however late a Ctrl-C arrives.
    Outside the main thread (a test runner's worker), where signal handlers
    cannot be set, nothing changes."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


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
        return _unavailable(clauses(reason, f"install it with: {_install_hint(entry.name, distribution)}")), True
    return loaded, False


def _versions() -> list[str]:
    """What ``memory-core --version`` prints: ``memory-core <version>``, then
    ``<distribution> <version>`` for each installed distribution other than
    memory-core that registers a storage or vector adapter (an entry point
    of :data:`~memory_core.registry.STORAGE_GROUP` or
    :data:`~memory_core.registry.VECTOR_GROUP`), sorted by name: one line
    each, for a bug report. A memory-core that is importable but not installed (a checkout
    on ``PYTHONPATH``) shows ``memory-core (not installed)``."""
    from memory_core.registry import STORAGE_GROUP, VECTOR_GROUP  # only when asked: startup stays light

    try:
        lines = [f"memory-core {version('memory-core')}"]
    except PackageNotFoundError:
        lines = ["memory-core (not installed)"]
    adapters = {
        entry.dist.name: entry.dist.version
        for group in (STORAGE_GROUP, VECTOR_GROUP)
        for entry in entry_points(group=group)
        if entry.dist is not None and entry.dist.name != "memory-core"
    }
    return lines + [f"{name} {adapters[name]}" for name in sorted(adapters)]


def _print_versions(wanted: bool) -> None:
    """``--version``'s callback (eager: it runs before any command or other
    option is looked at): print :func:`_versions` on stdout and end with exit 0."""
    if wanted:
        typer.echo("\n".join(_versions()))
        raise typer.Exit()


def _group_options(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Show memory-core's version and each installed adapter's, then exit.",
            callback=_print_versions,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """The options of ``memory-core`` itself (before a command): only ``--version``."""


def build_app(commands: Iterable[EntryPoint] | None = None, *, process: bool = False) -> typer.Typer:
    """A ``memory-core`` app holding ``commands`` (default: every entry point
    of :data:`COMMAND_GROUP`) plus, for each :data:`PROVIDERS` command not
    among them, a stand-in that names the distribution to install.

    Every command runs under :func:`_interruptible_command`: a Ctrl-C
    that no command handles (while it imports what it needs, checks its
    arguments or opens a store) ends it with one yellow line and exit
    :data:`INTERRUPTED`, never a traceback or a silent exit.

    Args:
        commands: entry points to register (tests pass a chosen set).
        process: True for the app that is the whole process (:func:`main`):
            once a command's work is complete (:func:`work_complete`), Ctrl-C
            stays ignored until the process ends. False (default; an app a
            test invokes in its own process): the SIGINT handler found when a
            command starts is restored when it ends.

    Returns:
        A fresh ``typer.Typer``; loading it imports each command's module
        (which should import its heavy dependencies only when run).
    """
    # Plain help (click's layout): typer's rich panels start with a blank line.
    app = typer.Typer(
        help="memory-core: async storage for agent conversation memory.", no_args_is_help=True, rich_markup_mode=None
    )
    # A callback keeps typer in group mode even with a single command; it
    # also takes the group's own option, --version.
    app.callback()(_group_options)
    found = {entry.name: entry for entry in (entry_points(group=COMMAND_GROUP) if commands is None else commands)}
    extra = {"allow_extra_args": True, "ignore_unknown_options": True}
    for name in sorted(found.keys() | PROVIDERS.keys()):
        if name in found:
            function, stand_in = _load(found[name])
        else:
            reason = f"the {name} command comes with {PROVIDERS[name][0]}, which is not installed"
            function, stand_in = _unavailable(clauses(reason, f"install it with: {_install_hint(name, None)}")), True
        # A stand-in accepts any arguments, so the user sees why, not a usage error.
        command = _interruptible_command(function, restore=not process)
        app.command(name=name, cls=_PlainHelpCommand, context_settings=extra if stand_in else None)(command)
    return app


_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)

_VALUE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "BOOLEAN"),
    (int, "INTEGER"),
    (float, "FLOAT"),
    (str, "TEXT"),
    (PurePath, "PATH"),
    (datetime, "DATETIME"),
)
"""Value names of option types, click's own (what typer showed before 0.29)."""


def _plain(text: str | None) -> str | None:
    """``text`` as help shows it: reST literals (a docstring's ````--before````) as plain words."""
    return None if text is None else _LITERAL.sub(r"\1", text)


def _value_name(annotation: Any) -> str:
    """What an option of type ``annotation`` shows after its name in help:
    ``TEXT``, ``INTEGER``, ``PATH``..., a choice's values ``[a|b]``, one
    name per item of a tuple, the item's name for a list (a repeated option)."""
    if get_origin(annotation) is list:
        return _value_name(get_args(annotation)[0])
    if get_origin(annotation) is tuple:
        return " ".join(_value_name(item) for item in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "[" + "|".join(str(member.value) for member in annotation) + "]"
    found = (name for kind, name in _VALUE_NAMES if isinstance(annotation, type) and issubclass(annotation, kind))
    return next(found, "VALUE")


class _PlainHelpCommand(TyperCommand):
    """A command whose help reads as plain text, whatever typer's version
    renders by default: an argument is named as the usage line names it
    (``URL``, ``[URL]`` when optional, not ``{url}``), an option that takes
    a value shows the value's kind (``--older-than TEXT``, ``--batch-size
    INTEGER``), a flag shows none (not ``--dry-run <bool>``, which reads as
    if it took one), and docstring markup (````--before````) is left out.
    The command list shows each command's whole first paragraph.

    Every command of :func:`build_app` is one: its help is built here only."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = _plain(self.help)
        if self.help and not self.short_help:
            self.short_help = " ".join(self.help.strip().split("\n\n")[0].split())
        for param in self.params:
            param.help = _plain(getattr(param, "help", None))  # type: ignore[attr-defined]
            if param.metavar is not None:
                continue
            if param.param_type_name == "argument":
                param.metavar = (param.name or "").upper()
            elif not getattr(param, "is_flag", False) and (found := getattr(param, "type_descriptor", None)):
                param.metavar = _value_name(found.annotation)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS]`` then each argument: ``URL``, ``[URL]`` when optional,
        ``URL...`` when repeated."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = f"{param.metavar}..." if param.nargs != 1 else str(param.metavar)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        """The Arguments and Options sections: each argument under its usage
        name alone (typer adds its type), each option as typer writes it."""
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((str(param.metavar), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _interruptible_command(function: Callable[..., Any], *, restore: bool) -> Callable[..., Any]:
    """``function`` (a command) with Ctrl-C handled from its first line to
    its end: Python's handler replaces the command line's start-up one
    (:mod:`memory_core.launch`), and a Ctrl-C the command lets through
    (while it imports what it needs, checks its arguments, opens a store)
    is ``interrupted: <STOPPED>`` (yellow, stderr) and exit
    :data:`INTERRUPTED`, not typer's silent 130. With ``restore``, the
    SIGINT handler found at the start is set again at the end (see
    :func:`work_complete`); without it, a command that returned has done
    its work, and Ctrl-C is ignored from then on (:func:`work_complete`).
    A process started with SIGINT ignored keeps it ignored. Typer reads the signature and help of
    ``function`` through ``__wrapped__``."""

    @functools.wraps(function)
    def command(*args: Any, **kwargs: Any) -> Any:
        main_thread = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGINT) if main_thread else None
        try:
            if previous is stop_while_starting:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            result = function(*args, **kwargs)
            if not restore:  # the command's work is complete: a late Ctrl-C keeps its exit 0
                work_complete()
            return result
        except KeyboardInterrupt:
            work_complete()  # the outcome is decided: a second Ctrl-C does not cut the line
            errors.print(f"[yellow]interrupted: {escape(STOPPED)}[/]", soft_wrap=True)
            raise typer.Exit(INTERRUPTED) from None
        finally:
            if restore and previous is not None:
                signal.signal(signal.SIGINT, previous)
                if previous is stop_while_starting:  # logging as it was, had a Ctrl-C disabled it
                    logging.disable(logging.NOTSET)

    return command


class _QuietRunner(asyncio.Runner):  # type: ignore[misc]  # final in typeshed; its _on_sigint is the hook
    """``asyncio.Runner`` whose Ctrl-C also stops log records: from the
    Ctrl-C on, the library's warnings about the writes it cuts ("a Memory
    write was cut off ...") are for a Python caller; the command's one
    ``interrupted:`` line says what happened and what to do. The runner's
    own handling stays (the main task cancelled, the loop shut down
    whole: its worker threads stopped): it installs its handler only while
    Python's own is the process's (``signal.default_int_handler``), so the
    command line keeps that one and extends the runner's."""

    def _on_sigint(self, signum: int, frame: FrameType | None, main_task: asyncio.Task[Any]) -> None:
        logging.disable(logging.CRITICAL)
        super()._on_sigint(signum, frame, main_task)  # type: ignore[misc]

    def _lazy_init(self) -> None:
        # A Ctrl-C while the event loop was being built left a half-made loop
        # whose collection printed a traceback ("Exception ignored in
        # BaseEventLoop.__del__"): SIGINT is held until the loop exists, then
        # delivered (a KeyboardInterrupt the runner's close ends whole).
        if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
            super()._lazy_init()  # type: ignore[misc]
            return
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            super()._lazy_init()  # type: ignore[misc]
        finally:
            try:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a held Ctrl-C raises here
            except KeyboardInterrupt:
                self.close()  # raised in __enter__: no __exit__ would close the loop
                raise


def run_quietly(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` for a command: a Ctrl-C cancels ``main`` and
    stops log records (:class:`_QuietRunner`)."""
    with _QuietRunner() as runner:
        return runner.run(main)


STOPPED = "stopped before its work was done; run the command again"
"""What a Ctrl-C that a command does not report itself says."""


def _click_exceptions() -> Any:
    """The exceptions module of the click typer runs on: its own copy
    (``typer._click``, typer 0.2x) or, for an older typer, click itself."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


def main() -> None:  # pragma: no cover - console entry point
    """Entry point of the ``memory-core`` script and ``python -m memory_core``.

    A command-line mistake typer would show in a box (a missing argument or
    option, an unknown option or command, a bad choice) is one red line
    ``error: <what>; see <command> --help`` on stderr and exit
    :data:`USER_ERROR`, like every other user error; ``memory-core`` alone
    prints its help. Help (or anything typer and click print) into a
    closed pipe (``memory-core --help | head -1``) exits
    :data:`CLOSED_PIPE`, as every command's output does, not their 1."""
    click = _click_exceptions()
    stdout = _stdout_identity()
    command = typer.main.get_command(build_app(process=True))
    try:
        code = command.main(standalone_mode=False)
    except click.NoArgsIsHelpError as exc:  # the help, on stdout as --help's (click's goes to stderr)
        try:
            typer.echo(exc.format_message())
            code = USER_ERROR
        except BrokenPipeError:
            _silence_stdout()
            code = CLOSED_PIPE
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "memory-core"
        message = clauses(exc.format_message(), f"see {where} --help")
        errors.print(f"[red]error: {escape(message)}[/]", soft_wrap=True)
        code = USER_ERROR
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except typer.Abort:  # not in typer._click (typer 0.2x keeps it in typer.exceptions)
        code = 1
    except SystemExit as exc:
        code = exc.code
    if code == 1 and _reader_gone(stdout):  # typer's help (rich) or click into a closed pipe
        code = CLOSED_PIPE
    end_process(code if isinstance(code, int) else 0)


def _stdout_identity() -> tuple[int, int] | None:
    """What file descriptor 1 is (device, inode), None without one."""
    try:
        found = os.fstat(1)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _reader_gone(started: tuple[int, int] | None) -> bool:
    """Whether the reader of stdout went away during the command, as typer
    and click handle it: rich's console (typer's ``--help``, its error
    boxes) then points stdout at ``/dev/null`` and exits 1 (its own
    ``on_broken_pipe``, which :class:`_LineConsole` overrides for
    memory-core's own output); click leaves a pipe whose reader is gone
    (``poll`` reports an error on it) and exits 1."""
    now = _stdout_identity()
    if now is None:
        return False
    if now != started:
        try:
            null = os.stat(os.devnull)
        except OSError:
            return False
        return now == (null.st_dev, null.st_ino)
    try:
        if not stat.S_ISFIFO(os.fstat(1).st_mode):
            return False
        watch = select.poll()
        watch.register(1, select.POLLOUT)
        return any(events & select.POLLERR for _, events in watch.poll(0))
    except (OSError, AttributeError):  # no poll on this platform
        return False


def end_process(code: int) -> NoReturn:
    """End the ``memory-core`` process with ``code`` at once, the command
    being over (its stores closed, its output written): Ctrl-C is ignored
    from here, threads that are not daemons are waited for, ``atexit``
    handlers run and the output is flushed; then the interpreter's
    finalization (freeing every module and native object: a second or more
    on a loaded machine, with the embedder and vector engine loaded) is
    skipped. Before, a failed ``import --vector`` printed its error seconds
    before the process ended, and a Ctrl-C in that window ended it by
    signal instead of with the error's exit code."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more to say
            stream.flush()
    os._exit(code)
