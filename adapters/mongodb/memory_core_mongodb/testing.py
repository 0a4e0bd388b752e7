"""A throwaway MongoDB-wire server for tests and benchmarks: ``secantusdb``.

:func:`secantus_server` starts ``python -m secantus`` (the ``secantusdb``
package, a MongoDB-wire-compatible server on WiredTiger) on a free loopback
port with in-memory storage, yields its URL, and stops it. Nothing here is
imported by the adapter itself; ``secantusdb`` is only needed when this is
called (``pip install -e './adapters/mongodb[test]'``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["free_port", "secantus_server", "unique_namespace"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def unique_namespace() -> str:
    """A fresh store namespace (``t`` + 16 hex digits): its own database."""
    return f"t{uuid.uuid4().hex[:16]}"


def _accepting(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def secantus_server(host: str = "127.0.0.1", *, startup_timeout: float = 60.0) -> Iterator[str]:
    """Run a secantusdb server for the duration of the ``with`` block.

    Args:
        host: loopback address to listen on.
        startup_timeout: seconds to wait for the port to accept connections.

    Yields:
        The server's URL, ``mongodb://<host>:<port>``.

    Raises:
        RuntimeError: the server exited or did not listen within
            ``startup_timeout`` (the message carries its log tail).
    """
    port = free_port(host)
    with tempfile.TemporaryFile(mode="w+") as log:
        command = [sys.executable, "-m", "secantus", "--host", host, "--port", str(port), "--storage-path", ":memory:"]
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env={**os.environ}
        )
        try:
            deadline = time.monotonic() + startup_timeout
            while not _accepting(host, port):
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read()[-2000:]
                    raise RuntimeError(f"secantus did not start on {host}:{port} (exit {process.poll()}):\n{tail}")
                time.sleep(0.1)
            yield f"mongodb://{host}:{port}"
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
