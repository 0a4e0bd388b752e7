"""Long server-side calls that the client's ``socket_timeout`` must not cut.

redis-py reads every reply under the connection's ``socket_timeout``
(default 5 s): right for ordinary calls, wrong for a script whose work grows
with the data (the copy of a 10^4-message thread, the delete of a long
thread or of a resource), which a loaded server can take longer than that
to finish. Cut there, a correct write fails (and its retry meets its own
finished work). :func:`call_patiently` sends such a command on one of the
client's own connections and reads its reply without that bound, while a
liveness probe on another connection tells a server that is working from
one that is gone:

- a server whose process died closes the connection: the read fails at once
  (``ConnectionError``);
- a server that answers nothing at all (host gone, process stopped) fails the
  probe: every ``socket_timeout`` seconds of waiting a ``PING`` is sent,
  which must be answered within ``socket_timeout`` + :data:`BUSY_GRACE`
  (a server running a script answers nothing until its
  ``busy-reply-threshold``, 5 s by default, then ``BUSY`` to every command:
  either answer is a sign of life). The call then raises ``TimeoutError``
  (retryable, like any timeout) and the connection is closed.

A client made with ``socket_timeout=None`` waits without probes, as its
ordinary calls do.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, NamedTuple

from redis import exceptions as redis_errors
from redis.asyncio.cluster import RedisCluster

__all__ = ["BUSY_GRACE", "call_patiently"]

BUSY_GRACE = 10.0
"""Seconds a liveness probe may wait beyond ``socket_timeout``: twice the
server's default ``busy-reply-threshold`` (5 s), before which a server busy
with a script answers no command at all."""


class _Node(NamedTuple):
    """Where one key's commands go: take and give back a connection of the
    client's own pool, and make a new connection (for a probe)."""

    take: Callable[[], Awaitable[Any]]
    give: Callable[[Any], Awaitable[None]]
    make: Callable[..., Any]


def _node(client: Any, key: str) -> _Node:
    """The client's pool (standalone) or the cluster node that serves ``key``."""
    if isinstance(client, RedisCluster):
        node = client.get_node_from_key(key)
        if node is None:
            raise redis_errors.ClusterError(f"no node serves key {key!r}")

        async def take_node() -> Any:
            return node.acquire_connection()

        async def give_node(conn: Any) -> None:
            node.release(conn)

        return _Node(take_node, give_node, partial(node.connection_class, **node.connection_kwargs))
    pool = client.connection_pool

    async def take() -> Any:
        return await pool.get_connection()

    return _Node(take, pool.release, partial(pool.connection_class, **pool.connection_kwargs))


async def call_patiently(client: Any, key: str, *command: Any) -> Any:
    """The reply of ``command`` (its key ``key`` routes it on a cluster),
    read without the connection's ``socket_timeout`` while probes show the
    server alive (see the module docstring).

    Raises:
        redis.exceptions.TimeoutError: a probe went unanswered for
            ``socket_timeout`` + :data:`BUSY_GRACE` seconds.
        redis.exceptions.RedisError: as the command itself (``ConnectionError``
            when the server went away, ``NoScriptError``, ...).
    """
    node = _node(client, key)
    conn = await node.take()
    try:
        await conn.send_command(*command)
        bound = conn.socket_timeout
        reply = asyncio.ensure_future(conn.read_response(timeout=math.inf))
        try:
            while not (await asyncio.wait({reply}, timeout=bound))[0]:
                probe = asyncio.ensure_future(_probe(node.make(socket_timeout=bound + BUSY_GRACE)))
                await asyncio.wait({reply, probe}, return_when=asyncio.FIRST_COMPLETED)
                if not probe.done():
                    probe.cancel()
                await asyncio.gather(probe, return_exceptions=True)
                if not reply.done():
                    probe.result()  # raises if the server answered no probe
            return reply.result()
        except redis_errors.ResponseError:
            raise  # the server's answer: the connection is in step
        except BaseException:
            reply.cancel()
            await conn.disconnect(nowait=True)  # a reply may still arrive: never reuse the connection
            raise
    finally:
        await node.give(conn)


async def _probe(conn: Any) -> None:
    """Connect ``conn`` (a new connection whose ``socket_timeout`` is the
    probe's bound) and send ``PING``; any answer (``PONG``, ``BUSY``) is a
    sign of life.

    Raises:
        redis.exceptions.TimeoutError: no answer in time, or none possible.
    """
    try:
        await conn.send_command("PING")
        await conn.read_response()
    except redis_errors.ResponseError:
        return  # BUSY: the server is alive, running the script
    except (redis_errors.TimeoutError, redis_errors.ConnectionError, OSError) as exc:
        raise redis_errors.TimeoutError(
            f"the server answered no liveness probe within {conn.socket_timeout} s"
        ) from exc
    finally:
        await conn.disconnect(nowait=True)
