"""A throwaway PostgreSQL 16 server (with pgvector) for tests and benchmarks.

The ``pgserver`` package on PyPI ships PostgreSQL 16 binaries with the
pgvector extension, so a real server starts from ``pip install`` alone.
:func:`start_postgres` runs ``initdb`` on a temporary folder and starts the
``postgres`` binary on a free loopback port (not pgserver's own unix-socket
launcher, so the URL is an ordinary ``postgresql://127.0.0.1:<port>/``).
Durability is off (``fsync=off``): the data dies with the folder anyway.

Needs the test extra: ``pip install -e './adapters/postgres[test]'``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from memory_core.testing import free_port

__all__ = ["PostgresServer", "start_postgres"]

_SYSTEM_USER = "pgserver"
"""PostgreSQL refuses to run as root; as root the server runs as this user
(created if missing, as pgserver itself does)."""


_FAST = ("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300")
"""Server settings of a throwaway test server: no durability work."""


@dataclass
class PostgresServer:
    """A running test server; :meth:`stop` ends it and removes its folder.

    Attributes:
        url: ``postgresql://postgres@127.0.0.1:<port>/postgres`` (trust auth).
        folder: the temporary folder holding the data directory.
    """

    url: str
    folder: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its folder."""
        if self.process.poll() is None:
            self.process.terminate()  # SIGTERM: PostgreSQL's "smart" shutdown; SIGINT would be "fast"
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _wait_ready(host: str, port: int, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"postgres exited early:\n{log.read_text(errors='replace')}")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            # The port accepts before recovery ends: read the log's ready line.
            if "ready to accept connections" in log.read_text(errors="replace"):
                return
        time.sleep(0.05)
    raise RuntimeError(f"postgres did not start within {timeout} s:\n{log.read_text(errors='replace')}")


def start_postgres(timeout: float = 60.0) -> PostgresServer:
    """Start PostgreSQL 16 + pgvector (from ``pgserver``) on a free loopback port.

    Args:
        timeout: seconds to wait for the server to accept connections.

    Returns:
        The running :class:`PostgresServer`; call ``stop()`` when done.

    Raises:
        ImportError: ``pgserver`` is not installed.
        RuntimeError: the server did not start (its log is in the message).
    """
    from pgserver._commands import POSTGRES_BIN_PATH
    from pgserver.utils import ensure_user_exists

    folder = Path(tempfile.mkdtemp(prefix="mc-postgres-"))
    data = folder / "data"
    user = None
    if os.geteuid() == 0:
        ensure_user_exists(_SYSTEM_USER)
        folder.chmod(0o777)
        user = _SYSTEM_USER
    initdb = [str(POSTGRES_BIN_PATH / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8"]
    subprocess.run(
        [*initdb, "--locale=C", "--no-sync", "--no-instructions"], check=True, capture_output=True, user=user
    )
    port = free_port()
    log = folder / "postgres.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                str(POSTGRES_BIN_PATH / "postgres"),
                "-D",
                str(data),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-k",
                "",
                *_FAST,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            user=user,
        )
    try:
        _wait_ready("127.0.0.1", port, process, log, timeout)
    except BaseException:
        process.kill()
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", folder, process)
