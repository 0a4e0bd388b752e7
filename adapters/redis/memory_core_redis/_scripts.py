"""The Lua scripts, loaded once per client and called by SHA (EVALSHA).

Each script is the core's constants (``TIME_MAX_US``), ``lua/lib.lua``
(shared helpers), then ``lua/reads.lua`` for the scripts that read pages and
windows (:data:`READERS`) or ``lua/writes.lua`` for the others, then its own
file. Every call runs the whole preamble (it defines the helpers), so a read
script carries none of the writers' helpers.
``KEYS[1]`` is always the base of one slot's keys (``{P:R}:`` or ``{P}:``),
which routes the call on Redis Cluster; the script builds every other key
from it, so a script never leaves its slot.
"""

from __future__ import annotations

import hashlib
from importlib.resources import files
from typing import Any

from memory_core.clock import TIME_MAX_US
from redis.exceptions import NoScriptError

from memory_core_redis._patient import call_patiently

INTENT_LEASE_MS = 30_000
"""How long (ms) an intent of a multi-slot write is presumed in flight: an
older one whose write never finished is rolled forward or back by whoever
meets it (README.md, "Crash safety"). Far above any step's duration."""

__all__ = ["INTENT_LEASE_MS", "SCRIPT_NAMES", "Scripts", "script_text"]

SCRIPT_NAMES = (
    "apply",
    "backfill",
    "claim",
    "copy_thread",
    "delete_messages",
    "delete_thread",
    "erase",
    "forget",
    "get_messages",
    "get_threads",
    "locate",
    "messages",
    "patch_messages",
    "patch_resource",
    "patch_thread",
    "put_resource",
    "put_thread",
    "read",
    "register",
    "resources",
    "save_messages",
    "solo",
    "solo_record",
    "state",
    "threads",
    "unlist",
    "window",
)


READERS = frozenset({"messages", "read", "threads", "window"})
"""The scripts built with ``lua/reads.lua`` (page, count and window helpers);
every other script gets ``lua/writes.lua``."""

COMPOSITES = {
    "solo": (
        "claim",
        "save_messages",
        "put_thread",
        "copy_thread",
        "patch_thread",
        "delete_thread",
        "patch_messages",
        "delete_messages",
        "state",
        "apply",
    ),
    "solo_record": ("register", "put_resource", "patch_resource"),
    "copy_thread": ("put_thread",),
}
"""Scripts built from other scripts: each step's body becomes a local
function ``step_<name>`` the composite's body calls. Standalone only (a
whole write in one call): ``lua/solo.lua`` (claim, the write in each
resource slot, apply) and ``lua/solo_record.lua`` (a resource record's
registration, then its write). Any server: ``lua/copy_thread.lua`` (a
thread's insert, then the copy of messages into it, in one resource slot:
a step of a clone, which solo.lua runs as a step in turn)."""


def script_text(name: str) -> str:
    """The full source of script ``name`` (constants + helpers + steps of a
    composite + body)."""
    folder = files("memory_core_redis") / "lua"
    constants = f"local TIME_MAX_US = {TIME_MAX_US}\nlocal INTENT_LEASE_MS = {INTENT_LEASE_MS}\n"
    parts = [constants, (folder / "lib.lua").read_text("utf-8")]
    parts.append((folder / ("reads.lua" if name in READERS else "writes.lua")).read_text("utf-8"))
    for step in COMPOSITES.get(name, ()):
        parts.append(f"local function step_{step}()\n{(folder / f'{step}.lua').read_text('utf-8')}\nend")
    parts.append((folder / f"{name}.lua").read_text("utf-8"))
    return "\n".join(parts)


class Scripts:
    """The registered scripts of one client.

    Args:
        client: a ``redis.asyncio.Redis`` or ``RedisCluster`` (decoding
            responses to str).
    """

    __slots__ = ("_client", "_shas", "_texts")

    def __init__(self, client: Any) -> None:
        self._client = client
        self._texts = {name: script_text(name) for name in SCRIPT_NAMES}
        self._shas = {
            name: hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()
            for name, text in self._texts.items()
        }

    async def load(self) -> None:
        """SCRIPT LOAD every script (on a cluster: on every primary), so the
        first calls need no retry."""
        for text in self._texts.values():
            await self._client.script_load(text)

    async def run(self, name: str, base: str, args: list[Any], *, long: bool = False) -> Any:
        """EVALSHA script ``name`` in the slot of ``base`` with ``args``;
        ``long`` (a script whose work grows with the data) reads the reply
        without the client's ``socket_timeout``, probing the server's
        liveness instead (:func:`~memory_core_redis._patient.call_patiently`).

        Reloads the script and retries once if the server lost it (restart,
        failover, SCRIPT FLUSH). EVALSHA goes straight to the client's
        ``execute_command``: redis-py's ``Script`` wrapper costs about 7 µs a
        call more (an import and argument copies on every call).
        """
        sha = self._shas[name]
        try:
            return await self._evalsha(sha, base, args, long)
        except NoScriptError:
            await self._client.script_load(self._texts[name])
            return await self._evalsha(sha, base, args, long)

    async def _evalsha(self, sha: str, base: str, args: list[Any], long: bool) -> Any:
        if long:
            return await call_patiently(self._client, base, "EVALSHA", sha, 1, base, *args)
        return await self._client.execute_command("EVALSHA", sha, 1, base, *args)
