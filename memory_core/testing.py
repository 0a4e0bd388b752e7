"""Test support shared by every distribution: loopback ports, waiting for
a server to listen, and the bytes of a folder's files. Standard library only (no driver), so adapters' test-server
launchers (``memory_core_redis.testing``, ``memory_core_mongodb.testing``),
their tests, the conformance examples and the benchmarks all use these.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from typing import Any

__all__ = ["folder_bytes", "free_port", "port_is_free", "wait_listening"]


def folder_bytes(folder: str | os.PathLike[str]) -> bytes:
    """Every byte of every file under ``folder`` (recursively), concatenated
    in walk order: what an erasure test scans for an erased id (R-ERASE).
    A missing folder gives ``b""``."""
    chunks = []
    for root, _dirs, files in os.walk(folder):
        for name in sorted(files):
            with open(os.path.join(root, name), "rb") as handle:
                chunks.append(handle.read())
    return b"".join(chunks)


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a TCP socket can bind ``host:port`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1", *, also_free: int | None = None) -> int:
    """A TCP port on ``host`` that was free a moment ago (the OS picks it).

    Args:
        host: loopback address to bind.
        also_free: an offset whose port must be free too (Redis Cluster
            nodes also listen on their bus port, ``port + 10000``).

    Raises:
        RuntimeError: no such port after 200 tries.
    """
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if also_free is None or (port + also_free <= 65535 and port_is_free(port + also_free, host)):
            return port
    raise RuntimeError(f"no free port on {host}")


def wait_listening(
    port: int, *, host: str = "127.0.0.1", timeout: float = 60.0, process: subprocess.Popen[Any] | None = None
) -> None:
    """Block until something accepts TCP connections on ``host:port``.

    Args:
        port: the port to poll (every 50 ms).
        host: its address.
        timeout: seconds to wait at most.
        process: the server's process; its exit ends the wait early.

    Raises:
        RuntimeError: ``process`` exited first.
        TimeoutError: nothing listened within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server for {host}:{port} exited with {process.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listens on {host}:{port} after {timeout} s")
        time.sleep(0.05)
