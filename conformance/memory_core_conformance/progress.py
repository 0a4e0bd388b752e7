"""Progress of a pytest run of the suite: tests done of tests collected.
On a terminal, a rich bar with elapsed time and rich's estimate of the time
left; elsewhere (a pipe, a log), the plain lines every long ``memory-core``
command prints (:mod:`memory_core.cli.progress`: ``check: 40 of 480 tests
(8%), 3/s, 12 s`` every few seconds, then a last one).

Pass a :class:`SuiteProgress` to ``pytest.main(args, plugins=[...])``; the
bar starts when collection ends and stops when the session ends (or when
:meth:`SuiteProgress.stop` is called, e.g. after an interrupt). ``memory-core
check`` uses it with pytest's own terminal output turned off, so the bar is
the only thing drawn while the suite runs.
"""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memory_core.cli.progress import Tracker, plain_seconds

__all__ = ["SuiteProgress"]


class SuiteProgress:
    """A pytest plugin object showing the run's progress on ``console``.

    Args:
        console: where the bar is drawn (``memory-core check``: stderr's);
            on a console that is not a terminal, plain lines are printed
            instead (a live bar there only adds blank lines).
        description: the bar's label.

    Attributes:
        total: tests collected (after deselection), 0 before collection ends.
        done: tests finished (every phase of each run).
    """

    def __init__(self, console: Console, description: str = "conformance suite") -> None:
        self.total = 0
        self.done = 0
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tests"),
            TimeElapsedColumn(),
            TextColumn("elapsed, about"),
            TimeRemainingColumn(),
            TextColumn("left"),
            console=console,
            transient=True,
        )
        self._description = description
        self._task: TaskID | None = None
        self._lines: Tracker | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Start the bar at ``0 / <tests collected>`` (or the plain lines)."""
        self.total = len(session.items)
        self._task = self._progress.add_task(self._description, total=self.total)
        if self._progress.console.is_terminal:
            self._progress.start()
        else:  # a live bar there only adds blank lines; timed from here, as the bar is
            self._lines = Tracker("check", "tests", self._progress.console, plain_seconds())
            self._lines.total(self.total)

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        """Advance the bar by one finished test."""
        self.done += 1
        if self._task is not None:
            self._progress.advance(self._task)
        if self._lines is not None:
            self._lines.done(self.done)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Remove the bar; the last plain line says "done" only when every
        test ran and the run was not interrupted."""
        self.stop(complete=self.done >= self.total and exitstatus != pytest.ExitCode.INTERRUPTED)

    def stop(self, *, complete: bool = False) -> None:
        """Remove the bar, or print the last plain line (idempotent; nothing
        to do before it started): ``done in N s`` when ``complete``, else
        ``stopped after N s`` (the default: a run that ends here without
        :meth:`pytest_sessionfinish`, cut short)."""
        if self._progress.live.is_started:
            self._progress.stop()
        if self._lines is not None:
            self._lines.finish(complete=complete)
            self._lines = None
