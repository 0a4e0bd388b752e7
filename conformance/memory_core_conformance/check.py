"""``memory-core check URL``: run the suite against a live deployment.

The suite runs as ``pytest memory_core_conformance/live.py
--memory-core-url URL`` (see :mod:`memory_core_conformance.live`). The
storage class is found through the same entry-point discovery as
:func:`memory_core.connect`; every store the suite builds gets its own fresh
namespace (``from_url(url, namespace="mc_check_<random>", clock=...)``) and
is destroyed when its test ends, so a check leaves nothing behind on the
server. The result is printed as a per-rule table (pass / FAIL / skipped
with the reason), then what undeclared capabilities skipped and what their
probes saw, and the exit code is non-zero on any failure.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import signal
import sys
import tempfile
import threading
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import configuration
from rich.console import Console
from rich.markup import escape

from memory_core.cli.host import line_console, plain_words
from memory_core.clock import Clock
from memory_core.errors import MemoryCoreError, ValidationError
from memory_core.options import url_namespace
from memory_core.registry import storage_class
from memory_core.storage import BaseStorage
from memory_core_conformance.plugin import URL_OPTION
from memory_core_conformance.profiles import CHOSEN_PROFILES, ENV_VAR, PROFILES
from memory_core_conformance.progress import SuiteProgress
from memory_core_conformance.report import OutcomeRecorder, add_not_run, render, summarize
from memory_core_conformance.suite import StorageConformance
from memory_core_conformance.undeclared import TITLE, CapabilityTally

__all__ = ["INTERRUPTED", "PROBE_SECONDS", "SWEEP_SECONDS", "LiveStorages", "probe", "run_check", "sweep"]

INTERRUPTED = 130
"""Exit code of an interrupted check (128 + SIGINT, as shells report Ctrl-C)."""

PROBE_SECONDS = 5.0
"""How long :func:`probe` waits for the deployment to open, in seconds (an
unreachable server fails here, not in every test of the suite)."""


class LiveStorages:
    """Builds stores of one deployment, each in a new unique namespace.

    Args:
        url: the deployment's storage URL (its scheme picks the adapter).

    Raises:
        ValidationError: no installed adapter handles the URL's scheme, or
            the URL names a namespace (field ``option 'namespace'``: the
            stores live in namespaces of their own).
    """

    def __init__(self, url: str) -> None:
        url_namespace(url, "mc_check_<32 hex>")  # refuses a URL that names its own
        self.url = url
        self.storage_class = storage_class(url)
        self._namespaces: weakref.WeakKeyDictionary[BaseStorage, str] = weakref.WeakKeyDictionary()

    def build(self, clock: Clock | None = None) -> BaseStorage:
        """A new, unopened store in a fresh namespace ``mc_check_<32 hex>``."""
        namespace = f"mc_check_{uuid.uuid4().hex}"
        return self._make(namespace, clock)

    def reopen(self, store: BaseStorage, clock: Clock | None = None) -> BaseStorage:
        """A second, unopened instance on ``store``'s namespace."""
        return self._make(self._namespaces[store], clock)

    def _make(self, namespace: str, clock: Clock | None) -> BaseStorage:
        store: BaseStorage = self.storage_class.from_url(self.url, namespace=namespace, clock=clock)
        self._namespaces[store] = namespace
        key = (self.url, namespace)
        _LEFT[key] = self.storage_class
        destroy = store.destroy

        async def destroy_and_forget() -> None:
            await destroy()
            _LEFT.pop(key, None)

        # The namespace leaves the ledger (see sweep) once a store destroyed it.
        store.destroy = destroy_and_forget  # type: ignore[method-assign]
        return store


_LEFT: dict[tuple[str, str], Any] = {}
"""(url, namespace) -> storage class, of every store :class:`LiveStorages`
built and no store destroyed yet, in the order built: what :func:`sweep`
removes."""

SWEEP_SECONDS = 60.0
"""How long :func:`sweep` may take, in seconds, before it gives up."""


async def sweep() -> int:
    """Destroy every namespace :class:`LiveStorages` built that no store has
    destroyed: a run that Ctrl-C (or a crash, or a test's failed cleanup)
    cut short leaves nothing behind (on SQLite, no ``FILE-mc_check_<hex>.db``
    beside the target). A namespace that was never written is created and
    removed by its ``destroy``, so nothing is left either way.

    Returns:
        How many namespaces it destroyed.

    Raises:
        TimeoutError: it took more than :data:`SWEEP_SECONDS`.
    """
    done = 0
    async with asyncio.timeout(SWEEP_SECONDS):
        for (url, namespace), kind in list(_LEFT.items()):
            store = kind.from_url(url, namespace=namespace)
            try:
                await store.destroy()
                done += 1
            except MemoryCoreError:
                await store.close()
            _LEFT.pop((url, namespace), None)
    return done


async def probe(live: LiveStorages, *, new: bool = False) -> None:
    """Check the store the URL names, creating nothing there
    (:meth:`~memory_core.storage.BaseStorage.preflight`: a missing folder or
    a file that is not a database fails here, as ``connect`` would; unless
    ``new``, it must hold a memory-core store, as for every command that
    reads one, so a misspelt path is not checked as an empty new store),
    then open one store of ``live`` in a fresh namespace and destroy it: the
    deployment is reachable and writable before the suite runs.

    Raises:
        ValidationError: the URL or its options are malformed, the store
            it names cannot be there (e.g. a missing folder), or (not
            ``new``) holds no memory-core store (the reason names ``--new``).
        BackendError: the backend refused to open (unreachable, unwritable,
            not a database).
        TimeoutError: it did not open within :data:`PROBE_SECONDS`.
    """
    named = live.storage_class.from_url(live.url)
    await named.preflight()
    if not new:
        try:
            await named.preflight(must_exist=True)
        except ValidationError as exc:
            hint = "or pass --new to check a deployment that holds no store yet"
            raise ValidationError(exc.field, f"{exc.reason}, {hint}", exc.rule) from None
    store = live.build()
    try:
        async with asyncio.timeout(PROBE_SECONDS):
            await store.open()
        await store.destroy()
    finally:
        await store.close()


@contextmanager
def _profile(name: str | None) -> Iterator[None]:
    if name is None:
        yield
        return
    previous = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = name
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = previous


class _Interrupts:
    """While active (main thread only), SIGINT is recorded, then raised as
    usual (KeyboardInterrupt): a test may catch that, or report it as its own
    failure, but the run is still known to be interrupted. Also a pytest
    plugin: after each test's report, a recorded SIGINT stops the session
    (``shouldstop``), for the KeyboardInterrupt Python itself drops, one
    raised while a ``gc`` callback runs (Hypothesis has one) is only
    "ignored", and the suite ran on to its end before the no-verdict line."""

    def __init__(self) -> None:
        self.seen = False
        self._session: pytest.Session | None = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        signal.default_int_handler(signum, frame)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Keep the session to stop."""
        self._session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Stop the run after a SIGINT, even one whose KeyboardInterrupt was lost."""
        if self.seen and self._session is not None:
            self._session.shouldstop = "interrupted"

    @contextmanager
    def active(self) -> Iterator[None]:
        if (
            threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        ):
            yield  # a process started with SIGINT ignored (a background job) keeps it ignored
            return
        previous = signal.signal(signal.SIGINT, self._handle)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def run_check(
    url: str,
    *,
    profile: str | None = None,
    console: Console | None = None,
    pytest_args: Sequence[str] = (),
    keyword: str | None = None,
    errors: Console | None = None,
    new: bool = False,
) -> int:
    """Run the conformance suite against the deployment at ``url``.

    The suite runs with progress on ``errors`` (tests done of collected, time
    left) and without pytest's own terminal output; the per-rule table lists every
    rule, those without a test in this run as ``not run``; the undeclared
    capabilities (tests skipped, what declaring needs, what the probe saw)
    and each failure's full report follow it.

    Args:
        url: storage URL (``sqlite:///data/memory.db``, ``redis://host:6379/0``,
            ``mongodb://host/db``, ``memory://`` ...); credentials stay in it.
        profile: Hypothesis profile (:data:`~memory_core_conformance.profiles.PROFILES`:
            ``quick``, ``dev``, ``ci``, ``deep`` ...); default:
            ``MEMORY_CORE_HYPOTHESIS_PROFILE`` or ``dev``.
        console: where the report goes (default:
            :func:`~memory_core.cli.host.line_console` on the current ``sys.stdout``).
        pytest_args: extra pytest arguments, e.g. ``["-x"]``.
        keyword: a pytest ``-k`` expression selecting tests (``"r_page or c07"``).
        errors: where errors, the no-verdict lines and the progress go (a
            bar on a terminal, else plain lines: :class:`SuiteProgress`)
            (default: :func:`~memory_core.cli.host.line_console` on the
            current ``sys.stderr``).
        new: the URL names no memory-core store yet (a fresh deployment):
            check it anyway (default False: such a URL is refused, a typo).

    Returns:
        0 when every test that ran passed; 1 on any failure (or when no test
        ran for another reason); 2 when the URL names no installed adapter,
        is malformed, or the store cannot be opened (see :func:`probe`), and
        the suite does not run, or when ``keyword`` matches no test (a
        mistake in the command line, not a verdict); 130 when interrupted (SIGINT / Ctrl-C): no verdict is given.

    Raises:
        ValidationError: ``profile`` names no profile (before anything runs).
    """
    if profile is not None and profile not in PROFILES:
        raise ValidationError("profile", f"{profile!r} is not a profile; choose one of {', '.join(CHOSEN_PROFILES)}")
    # The streams of now, kept: pytest's capture swaps sys.stdout/stderr while tests run.
    console = console or line_console(sys.stdout)
    errors = errors or line_console(sys.stderr)
    interrupts = _Interrupts()
    recorder = OutcomeRecorder()
    tally = CapabilityTally()
    # On stderr, as every long command's: stdout carries the report.
    progress = SuiteProgress(errors)
    _LEFT.clear()
    try:
        with interrupts.active(), _hypothesis_home():
            try:
                asyncio.run(probe(LiveStorages(url), new=new))
            except (MemoryCoreError, TimeoutError) as exc:
                # The URL is named just before: not again as the parameter ("url: ...").
                if isinstance(exc, ValidationError) and exc.field == "url":
                    reason = exc.reason
                else:
                    reason = str(exc) or f"it did not open within {PROBE_SECONDS:g} s"
                said = plain_words(reason)
                errors.print(f"[red]error: cannot check {escape(_redact(url))}: {escape(said)}[/]", soft_wrap=True)
                return 2
            with _profile(profile):
                plugins = [recorder, tally, progress, interrupts]
                code = pytest.main(_pytest_args(url, keyword, pytest_args), plugins=plugins)
    except KeyboardInterrupt:
        interrupts.seen = True
        code = pytest.ExitCode.INTERRUPTED
    finally:
        progress.stop()
        _clean_up(errors)
    if interrupts.seen or code == pytest.ExitCode.INTERRUPTED:
        # Tasks the interrupt abandoned would be logged when collected
        # ("Task exception was never retrieved"): the line below says it all.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        errors.print(
            f"[bold yellow]interrupted[/] after {progress.done} of {progress.total or '?'} tests: no verdict",
            soft_wrap=True,
        )
        return INTERRUPTED
    if not recorder.outcomes:
        if keyword is not None and code == pytest.ExitCode.NO_TESTS_COLLECTED:
            # A typing mistake in the command line (exit 2), not a verdict against the store (exit 1).
            said = (
                f"-k {keyword!r} matches no test; -k selects by words of test names (for example -k prune), "
                "not by rule ids: conformance/README.md lists each rule's tests"
            )
            errors.print(f"[red]error: {escape(said)}[/]", soft_wrap=True)
            return 2
        errors.print(f"[bold red]no test ran[/] (pytest exit {code}): no verdict", soft_wrap=True)
        return 1
    rows = add_not_run(summarize(recorder.outcomes.values()), StorageConformance)
    render(rows, console, title=f"memory-core conformance: {_redact(url)}")
    _print_undeclared(tally, console)
    _print_failures(recorder, console)
    failed = any(row.failed for row in rows)
    return 1 if failed or int(code) != 0 else 0


def _clean_up(errors: Console) -> None:
    """Run :func:`sweep`, even after Ctrl-C; a second Ctrl-C, or a store
    that cannot be destroyed in time, leaves what is left and says so."""
    if not _LEFT:
        return
    with suppress(KeyboardInterrupt, TimeoutError, MemoryCoreError, OSError):
        asyncio.run(sweep())
    if _LEFT:
        names = ", ".join(sorted(namespace for _, namespace in _LEFT))
        errors.print(f"[yellow]could not remove the check's namespaces: {escape(names)}[/]", soft_wrap=True)


@contextmanager
def _hypothesis_home() -> Iterator[None]:
    """Point Hypothesis's storage (its example database, its cache of
    constants; ``./.hypothesis`` by default) at a temporary folder for the
    run, removed afterwards: a check leaves no folder in the working
    directory. The previous setting is restored."""
    previous = getattr(configuration, "__hypothesis_home_directory", None)
    with tempfile.TemporaryDirectory(prefix="memory-core-check-") as home:
        configuration.set_hypothesis_home_dir(home)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(previous)


def _pytest_args(url: str, keyword: str | None, extra: Sequence[str]) -> list[str]:
    live = Path(__file__).with_name("live.py")
    return [
        str(live),
        f"{URL_OPTION}={url}",
        # The progress bar and the per-rule table replace pytest's output;
        # capturing sys only leaves the terminal to the bar.
        "-p",
        "no:terminal",
        "--capture=sys",
        "-p",
        "no:cacheprovider",
        # No project's pytest configuration applies: the suite runs as shipped.
        "-c",
        os.devnull,
        "--rootdir",
        str(live.parent),
        # The plugin is imported before pytest starts, so pytest cannot
        # rewrite its asserts (they still run, with plain messages).
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        # pytest-asyncio, when installed, warns on stderr that its loop
        # scope is unset (the empty configuration): the suite runs on anyio.
        *(["-o", "asyncio_default_fixture_loop_scope=function"] if importlib.util.find_spec("pytest_asyncio") else []),
        *(["-k", keyword] if keyword else []),
        *extra,
    ]


def _print_undeclared(tally: CapabilityTally, console: Console) -> None:
    """What undeclared capabilities skipped and what their probes saw."""
    lines = tally.lines()
    if lines:
        console.rule(f"[yellow]{TITLE}[/]")
        for line in lines:
            console.print(line, markup=False, highlight=False, soft_wrap=True)


def _print_failures(recorder: OutcomeRecorder, console: Console) -> None:
    """Each failing test's full report (pytest's, with the conformance rule)."""
    for outcome in recorder.outcomes.values():
        if outcome.outcome == "failed" and outcome.report:
            console.rule(f"[red]{escape(outcome.name)}[/]")
            console.print(outcome.report, markup=False, highlight=False, soft_wrap=True)


def _redact(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url
