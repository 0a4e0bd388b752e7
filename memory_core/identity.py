"""Store identity: whether two store handles read and write the same data.

Every storage has a :attr:`~memory_core.storage.BaseStorage.store_identity`,
a hashable value its adapter computes from what the store was built with,
without I/O (no connection, no DNS lookup): two stores with equal identities
hold the same data. :func:`same_store` compares two stores by it and
:func:`check_distinct` refuses a pair, so ``memory-core copy`` and
:func:`~memory_core.transfer.copy_store` never read and write one store
(spelled twice: ``sqlite:///a.db`` and ``sqlite:////abs/a.db``,
``redis://localhost:6379/0`` and ``redis://127.0.0.1:6379``).

The rule per adapter is the adapter's (its ``store_identity`` docstring says
what it compares); this module holds the comparison and the spellings the
server adapters share: :func:`canonical_host`, :func:`server_address` and
:func:`server_addresses`.
An identity can miss that two different addresses reach one server (a
remote host by name and by IP, two seeds of one cluster); it never calls two
different stores the same.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Hashable
from typing import Protocol

from memory_core.errors import ValidationError

__all__ = [
    "LOOPBACK",
    "Identified",
    "canonical_host",
    "check_distinct",
    "same_store",
    "server_address",
    "server_addresses",
]

LOOPBACK = "localhost"
"""How :func:`canonical_host` spells every name and address of this machine."""


class Identified(Protocol):
    """Anything with a ``store_identity`` (every storage)."""

    @property
    def store_identity(self) -> Hashable:
        """What names the store's data (see the module docstring)."""


def canonical_host(host: str) -> str:
    """``host`` spelled one way per address, for comparing stores.

    Lower-cased, without IPv6 brackets or a trailing dot; an IP address in
    its compressed form (an IPv4-mapped IPv6 address as the IPv4 one); every
    spelling of this machine (``localhost``, names under ``.localhost``,
    127.0.0.0/8, ``::1``, ``0.0.0.0``, ``::``) as :data:`LOOPBACK`. An
    absolute path (a unix socket or its folder) is resolved like a file
    (symlinks followed). Nothing is looked up: other names are compared as
    written.

    Args:
        host: a host name, IP address (IPv6 with or without ``[]``) or path.

    Returns:
        The canonical spelling (str).
    """
    if host.startswith("/"):
        return os.path.realpath(host)
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == LOOPBACK or name.endswith(".localhost"):
        return LOOPBACK
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return name
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return LOOPBACK if address.is_loopback or address.is_unspecified else str(address)


def server_address(host: str | None, port: int | None, default_port: int) -> tuple[str, int]:
    """``(canonical host, port)`` of a TCP server; a missing host is this
    machine (:data:`LOOPBACK`, what drivers connect to), a missing port
    ``default_port``.

    Args:
        host: as written in a URL, or None.
        port: the URL's port, or None.
        default_port: the protocol's port (6379, 27017, 5432 ...).
    """
    return canonical_host(host or LOOPBACK), port if port is not None else default_port


def server_addresses(hosts: str, default_port: int) -> frozenset[Hashable]:
    """The servers of a URL's comma-separated host list (MongoDB seed lists,
    libpq's multi-host URLs), as a set of :func:`server_address` pairs: order
    and spelling do not matter. Each item is ``host``, ``host:port``,
    ``[IPv6]:port``, a bare IPv6 address, or a percent-decoded absolute path
    (a unix socket, or libpq's socket folder). An empty list is this machine.

    Args:
        hosts: the host part of the URL (credentials removed, percent-decoded).
        default_port: the port of an item without one.
    """
    found: set[Hashable] = set()
    for host in hosts.split(","):
        if host.startswith("["):
            name, _, rest = host[1:].partition("]")
            port = rest.removeprefix(":")
        elif host.count(":") == 1:
            name, _, port = host.partition(":")
        else:  # a name or path without a port, or a bare IPv6 address
            name, port = host, ""
        found.add(server_address(name, int(port) if port.isdigit() else None, default_port))
    return frozenset(found)


def same_store(first: Identified, second: Identified) -> bool:
    """Whether two stores hold the same data: the same object, or equal
    :attr:`~memory_core.storage.BaseStorage.store_identity` values. No I/O."""
    return first is second or first.store_identity == second.store_identity


def check_distinct(source: Identified, destination: Identified) -> None:
    """Refuse a source and a destination that are one store (a copy would
    read what it writes), before any I/O.

    Raises:
        ValidationError: field ``destination``, when :func:`same_store`.
    """
    if same_store(source, destination):
        raise ValidationError("destination", "is the same store as the source")
