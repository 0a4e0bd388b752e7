"""Raw-driver baselines and peer libraries, found by backend.

- ``raw_subject(adapter)``: the raw driver doing the adapter's work on the
  adapter's own schema/keys (sqlite: aiosqlite; redis: redis-py; mongodb:
  PyMongo async). None when there is none for the scheme or its driver or
  adapter is not installed.
- ``peer_subjects(backend, workdir)``: other libraries doing the nearest
  equivalent work (sqlite: the OpenAI Agents SDK ``SQLiteSession`` and
  LangGraph's ``AsyncSqliteStore``), each only if its package imports.
- ``vector_baselines(backend, workdir, url=...)``: numpy brute force (exact)
  and the Qdrant engine behind ``url`` driven directly.

Driver modules are imported lazily, so the core never needs them.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from memory_core_bench.subjects import AdapterSubject, Subject, VectorSubject

__all__ = ["PEERS_HINT", "missing_peers", "peer_subjects", "raw_subject", "vector_baselines"]

PEERS_HINT = "pip install 'memory-core-bench[peers]' (from a clone: pip install -e './benchmarks[peers]')"

_RAW = {
    "sqlite": "memory_core_bench.baselines.raw_sqlite",
    "redis": "memory_core_bench.baselines.raw_redis",
    "rediss": "memory_core_bench.baselines.raw_redis",
    "redis+cluster": "memory_core_bench.baselines.raw_redis",
    "rediss+cluster": "memory_core_bench.baselines.raw_redis",
    "mongodb": "memory_core_bench.baselines.raw_mongo",
    "postgresql": "memory_core_bench.baselines.raw_postgres",
    "postgres": "memory_core_bench.baselines.raw_postgres",
}

_RAW_VECTOR = {
    "qdrant": "memory_core_bench.baselines.raw_qdrant",
    "qdrant+path": "memory_core_bench.baselines.raw_qdrant",
    "qdrant+http": "memory_core_bench.baselines.raw_qdrant",
    "qdrant+https": "memory_core_bench.baselines.raw_qdrant",
}

_PEERS = {
    "sqlite": ("memory_core_bench.baselines.peer_openai", "memory_core_bench.baselines.peer_langgraph"),
}


def _scheme(url: str) -> str:
    return url.split(":", 1)[0].lower()


def raw_subject(adapter: AdapterSubject) -> Subject | None:
    """The raw driver for ``adapter``'s backend, sharing its (opened) data,
    or None when no baseline applies or its packages are missing."""
    name = _RAW.get(_scheme(adapter.url))
    if name is None:
        return None
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    subject: Subject | None = module.make(adapter)
    return subject


def peer_subjects(backend: str, workdir: Path) -> list[Subject]:
    """Peer libraries comparable with ``backend`` (installed ones only); each
    keeps its own files under ``workdir``."""
    found: list[Subject] = []
    for name in _PEERS.get(backend, ()):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        peer: Subject | None = module.make(backend, workdir)
        if peer is not None:
            found.append(peer)
    return found


def missing_peers(backend: str) -> list[str]:
    """One line per peer of ``backend`` that cannot be imported, saying what
    is missing and what to install (empty when every peer imports)."""
    lines: list[str] = []
    for name in _PEERS.get(backend, ()):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            label = name.rsplit(".", 1)[-1].removeprefix("peer_")
            lines.append(f"peer {label} not run on {backend}: {exc}; {PEERS_HINT}")
    return lines


def vector_baselines(backend: str, workdir: Path, *, raw: bool = True, url: str | None = None) -> list[VectorSubject]:
    """numpy brute force (always) and, with ``raw``, the Qdrant engine driven
    directly (the engine behind ``url``: qdrant-edge in-process for
    ``qdrant::memory:``/``qdrant+path``, qdrant-client for a server) when its
    package is installed."""
    from memory_core_bench.baselines.numpy_brute import NumpyBruteForce

    found: list[VectorSubject] = [NumpyBruteForce(backend)]
    if raw and url is not None:
        name = _RAW_VECTOR.get(_scheme(url))
        if name is not None:
            try:
                module = importlib.import_module(name)
            except ImportError:
                return found
            subject: VectorSubject | None = module.make(backend, url, workdir)
            if subject is not None:
                found.append(subject)
    return found
