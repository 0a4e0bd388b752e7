"""Close the socket of a PyMongo connect cut off by a cancellation.

PyMongo's async connect (``pymongo.pool_shared._async_create_connection``,
used by every pool connection and by each server monitor's) makes a socket
and awaits ``loop.sock_connect``; it closes the socket when the connect
fails with ``OSError`` or times out, but not when it is cancelled (PyMongo
4.13 to 4.20 at least; upstream PYTHON-5867, unmerged). ``asyncio.run``
cancels every task of its loop as it ends, the monitor's first check among
them: a store used once per ``asyncio.run`` (as sync frameworks call async
code) whose loop ended while its client was still connecting left that
socket open until the garbage collector found it ("ResourceWarning:
unclosed <socket.socket ...>", a few per 25 loops), however the store then
closed its client.

:func:`close_cut_off_connects` wraps that function once per process: a
connect ended by ``CancelledError`` (or ``KeyboardInterrupt``, ``GeneratorExit``) closes the
socket it had made, found in the connect's own frame in the exception's
traceback, and the exception propagates unchanged. Nothing else changes;
closing a socket PyMongo already closed does nothing, so the wrapper stays
correct once PyMongo closes it itself.
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from pymongo import pool_shared

__all__ = ["close_cut_off_connects"]

_Connect = Callable[..., Awaitable[socket.socket]]


def close_cut_off_connects() -> None:
    """Make PyMongo's async connect close its socket when cancelled (see the
    module docstring). Idempotent; does nothing on a PyMongo without that
    function."""
    connect: _Connect | None = getattr(pool_shared, "_async_create_connection", None)
    if connect is None or getattr(connect, "__wrapped__", None) is not None:
        return
    pool_shared._async_create_connection = _closing_when_cut_off(connect)  # type: ignore[attr-defined,assignment]


def _closing_when_cut_off(connect: _Connect) -> _Connect:
    code = getattr(connect, "__code__", None)

    @functools.wraps(connect)
    async def closing(*args: Any, **kwargs: Any) -> socket.socket:
        try:
            return await connect(*args, **kwargs)
        except BaseException as cut:
            if not isinstance(cut, Exception):  # cancelled, interrupted: PyMongo closes on OSError only
                _close_sockets_of(cut.__traceback__, code)
            raise

    return closing


def _close_sockets_of(trace: TracebackType | None, code: object) -> None:
    """Close the ``sock`` of each frame of ``code`` along ``trace``."""
    while trace is not None:
        if trace.tb_frame.f_code is code:
            made = trace.tb_frame.f_locals.get("sock")
            if isinstance(made, socket.socket):
                made.close()
        trace = trace.tb_next
