"""Progress of a long command (``import``, ``copy``, ``export``, ``prune``;
``check`` draws its own bar, with the same plain lines off a terminal), on
stderr: a rich bar when stderr is a terminal; when it is not (an operator
piping to a log, a service manager), plain lines, one every
:data:`PLAIN_SECONDS` (``MEMORY_CORE_PROGRESS_SECONDS`` overrides it), so a
log shows the command alive and how far it got, at a few lines a minute.
A command that ends before the first line prints none (short runs stay
quiet), else one last line with the total: ``..., done in 8 s`` when the
work was complete, ``..., stopped after 8 s`` when it was not (Ctrl-C, an
error): an interrupted run's last line never says "done".
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

__all__ = ["PLAIN_SECONDS", "PLAIN_SECONDS_VARIABLE", "Tracker", "plain_seconds", "tracked"]

PLAIN_SECONDS = 5.0
"""Seconds between two plain progress lines (stderr not a terminal)."""

PLAIN_SECONDS_VARIABLE = "MEMORY_CORE_PROGRESS_SECONDS"
"""Environment variable overriding :data:`PLAIN_SECONDS` (a number >= 0)."""


class Tracker:
    """What a command reports: :meth:`total` (when known) and :meth:`done`
    (the count so far); the transfer functions' ``on_total`` and
    ``on_progress`` callbacks. This base prints plain lines (see the module
    docstring); the terminal one draws a rich bar.

    Args:
        label: the command (``"import"``), first word of each line.
        unit: what is counted (``"messages"``).
        console: where lines go (stderr's).
        every: seconds between two lines.
    """

    def __init__(self, label: str, unit: str, console: Console, every: float) -> None:
        self.label, self.unit, self.console, self.every = label, unit, console, every
        self.started = self.last = time.monotonic()
        self.count = 0
        self.of: int | None = None
        self.printed = False

    def total(self, count: int) -> None:
        """The count the command will reach."""
        self.of = count

    def done(self, count: int) -> None:
        """The count reached so far."""
        self.count = count
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self._line(now, final=None)

    def finish(self, *, complete: bool = True) -> None:
        """The last line (only after a first one): ``done in N s``, or,
        when not ``complete`` (the command stopped short: Ctrl-C, an
        error), ``stopped after N s``."""
        if self.printed:
            self._line(time.monotonic(), final="done in" if complete else "stopped after")

    def _line(self, now: float, *, final: str | None) -> None:
        seconds = max(now - self.started, 1e-9)
        counted = f"{self.count:,} of {self.of:,} {self.unit} ({100 * self.count // self.of}%)" if self.of else ""
        counted = counted or f"{self.count:,} {self.unit}"
        tail = f"{final} {seconds:.0f} s" if final else f"{self.count / seconds:,.0f}/s, {seconds:.0f} s"
        self.console.print(f"{self.label}: {counted}, {tail}", markup=False, highlight=False, soft_wrap=True)
        self.printed = True


class _Bar(Tracker):
    """A rich bar (count, rate, time left) on a terminal."""

    def __init__(self, label: str, unit: str, console: Console, every: float) -> None:
        super().__init__(label, unit, console, every)
        columns = (
            TextColumn(f"{label} {unit}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
        )
        self.bar = Progress(*columns, console=console, transient=False)
        self.task: TaskID = self.bar.add_task(label, total=None, rate="")
        self.bar.start()

    def total(self, count: int) -> None:
        self.bar.update(self.task, total=count)

    def done(self, count: int) -> None:
        self.bar.update(self.task, completed=count)
        speed = self.bar.tasks[0].speed
        self.bar.update(self.task, rate=f"{speed:,.0f}/s" if speed else "")

    def finish(self, *, complete: bool = True) -> None:
        self.bar.stop()


def plain_seconds() -> float:
    """:data:`PLAIN_SECONDS`, or the environment's override when it is a number >= 0."""
    try:
        seconds = float(os.environ.get(PLAIN_SECONDS_VARIABLE, PLAIN_SECONDS))
    except ValueError:
        return PLAIN_SECONDS
    return seconds if seconds >= 0 else PLAIN_SECONDS


@contextmanager
def tracked(label: str, console: Console, unit: str = "messages") -> Iterator[Tracker]:
    """A :class:`Tracker` for one command on ``console`` (stderr's): a bar on
    a terminal, plain lines otherwise; finished when the block ends, however
    it ends: complete when it ends without an exception, else stopped
    (:meth:`Tracker.finish`)."""
    kind = _Bar if console.is_terminal else Tracker
    tracker = kind(label, unit, console, plain_seconds())
    try:
        yield tracker
    except BaseException:
        tracker.finish(complete=False)
        raise
    tracker.finish()
