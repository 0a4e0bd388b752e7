"""``memory-core check URL``: run the suite against a live deployment.

The suite runs as ``pytest memory_core_conformance/live.py
--memory-core-url URL`` (see :mod:`memory_core_conformance.live`). The
storage class is found through the same entry-point discovery as
:func:`memory_core.connect`; every store the suite builds gets its own fresh
namespace (``from_url(url, namespace="mc_check_<random>", clock=...)``) and
is destroyed when its test ends, so a check leaves nothing behind on the
server. The result is printed as a per-rule table (pass / FAIL / skipped
with the reason) and the exit code is non-zero on any failure.
"""

from __future__ import annotations

import asyncio
import os
import uuid
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.markup import escape

from memory_core.clock import Clock
from memory_core.errors import MemoryCoreError
from memory_core.registry import storage_class
from memory_core.storage import BaseStorage
from memory_core_conformance.plugin import URL_OPTION
from memory_core_conformance.profiles import ENV_VAR, PROFILES
from memory_core_conformance.report import OutcomeRecorder, render, summarize

__all__ = ["PROBE_SECONDS", "LiveStorages", "probe", "run_check"]

PROBE_SECONDS = 5.0
"""How long :func:`probe` waits for the deployment to open, in seconds (an
unreachable server fails here, not in every test of the suite)."""


class LiveStorages:
    """Builds stores of one deployment, each in a new unique namespace.

    Args:
        url: the deployment's storage URL (its scheme picks the adapter).

    Raises:
        ValidationError: no installed adapter handles the URL's scheme.
    """

    def __init__(self, url: str) -> None:
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
        return store


async def probe(live: LiveStorages) -> None:
    """Open one store of ``live`` in a fresh namespace, then destroy it: the
    deployment is reachable and writable before the suite runs.

    Raises:
        ValidationError: the URL or its options are malformed.
        BackendError: the backend refused to open (unreachable, unwritable).
        TimeoutError: it did not open within :data:`PROBE_SECONDS`.
    """
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
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}")
    previous = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = name
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = previous


def run_check(
    url: str,
    *,
    profile: str | None = None,
    console: Console | None = None,
    pytest_args: Sequence[str] = (),
) -> int:
    """Run the conformance suite against the deployment at ``url``.

    Args:
        url: storage URL (``sqlite:///data/memory.db``, ``redis://host:6379/0``,
            ``mongodb://host/db``, ``memory://`` ...); credentials stay in it.
        profile: Hypothesis profile (``quick``, ``dev``, ``ci``, ``deep``);
            default: ``MEMORY_CORE_HYPOTHESIS_PROFILE`` or ``dev``.
        console: where the report goes (default: a new rich Console).
        pytest_args: extra pytest arguments, e.g. ``["-k", "r_page"]``.

    Returns:
        0 when every test that ran passed; 1 on any failure (or when no test
        ran); 2 when the URL names no installed adapter, is malformed, or the
        deployment cannot be opened (see :func:`probe`); the suite does not
        run then.
    """
    console = console or Console()
    try:
        asyncio.run(probe(LiveStorages(url)))
    except (MemoryCoreError, TimeoutError) as exc:
        reason = str(exc) or f"it did not open within {PROBE_SECONDS:g} s"
        console.print(f"[red]error: cannot check {escape(_redact(url))}: {escape(reason)}[/]", soft_wrap=True)
        return 2
    recorder = OutcomeRecorder()
    live = Path(__file__).with_name("live.py")
    args: list[Any] = [
        str(live),
        f"{URL_OPTION}={url}",
        "-q",
        "--tb=short",
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
        *pytest_args,
    ]
    with _profile(profile):
        code = pytest.main(args, plugins=[recorder])
    rows = summarize(recorder.outcomes.values())
    render(rows, console, title=f"memory-core conformance: {_redact(url)}")
    failed = any(row.failed for row in rows)
    if failed or not recorder.outcomes or int(code) not in (0,):
        return 1
    return 0


def _redact(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    if "@" not in url or "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    credentials, host = rest.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}" if ":" in credentials else url
