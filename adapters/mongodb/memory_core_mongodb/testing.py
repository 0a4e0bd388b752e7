"""A throwaway MongoDB-wire server for tests and benchmarks: ``secantusdb``.

:func:`start_secantus` starts ``python -m secantus`` (the ``secantusdb``
package, a MongoDB-wire-compatible server on WiredTiger) on a free loopback
port with in-memory storage; :func:`secantus_server` does the same for the
duration of a ``with`` block. The adapter's tests, the conformance examples
and ``memory-core bench --servers`` all start it here. Nothing here is
imported by the adapter itself; ``secantusdb`` is only needed when this is
called (``pip install -e './adapters/mongodb[test]'``).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from memory_core.testing import free_port, wait_listening

__all__ = ["SecantusServer", "secantus_server", "start_secantus", "unique_namespace"]


def unique_namespace() -> str:
    """A fresh store namespace (``t`` + 16 hex digits): its own database."""
    return f"t{uuid.uuid4().hex[:16]}"


@dataclass
class SecantusServer:
    """One running secantusdb server.

    Attributes:
        url: ``mongodb://<host>:<port>``.
        process: the server process (its ``pid`` for memory readings).
    """

    url: str
    process: subprocess.Popen[bytes]
    _log: IO[str]

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 15 s); idempotent."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        self._log.close()


def start_secantus(host: str = "127.0.0.1", *, startup_timeout: float = 60.0) -> SecantusServer:
    """Start a secantusdb server with in-memory storage on a free port of ``host``.

    Args:
        host: loopback address to listen on.
        startup_timeout: seconds to wait for the port to accept connections.

    Returns:
        The running server; call :meth:`SecantusServer.stop`.

    Raises:
        RuntimeError: the server exited or did not listen within
            ``startup_timeout`` (the message carries its log tail).
    """
    port = free_port(host)
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed by stop()
    command = [
        sys.executable,
        "-m",
        "secantus",
        "--host",
        host,
        "--port",
        str(port),
        "--storage-path",
        ":memory:",
        "--enable-test-commands",  # configureFailPoint: the connection_lost fault point
    ]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = SecantusServer(f"mongodb://{host}:{port}", process, log)
    try:
        wait_listening(port, host=host, timeout=startup_timeout, process=process)
    except (RuntimeError, TimeoutError) as exc:
        log.seek(0)
        tail = log.read()[-2000:]
        server.stop()
        raise RuntimeError(f"secantus did not start on {host}:{port} ({exc}):\n{tail}") from None
    except BaseException:
        server.stop()
        raise
    return server


@contextmanager
def secantus_server(host: str = "127.0.0.1", *, startup_timeout: float = 60.0) -> Iterator[str]:
    """Run a secantusdb server for the duration of the ``with`` block (see
    :func:`start_secantus`, whose errors it raises).

    Yields:
        The server's URL, ``mongodb://<host>:<port>``.
    """
    server = start_secantus(host, startup_timeout=startup_timeout)
    try:
        yield server.url
    finally:
        server.stop()
