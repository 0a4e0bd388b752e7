"""Trace one semantic recall through the library's modules.

Builds a SQLite store (in a temporary folder) with the reference vector store
and the lexical embedder, saves ``--messages`` messages to one thread, warms
up with one recall, then traces a second ``Memory.recall(thread, resource,
vector_search_string=...)`` with :func:`sys.setprofile` and prints:

- ``calls``: Python function calls that start in a library module (a
  module whose name begins with ``memory_core``; the benchmark package and
  resumptions of a suspended coroutine are not counted);
- ``functions``: distinct library functions among them;
- ``check_id``: calls of :func:`memory_core.validation.check_id` (each id
  should be checked once per call);
- ``modules``: distinct library modules among them (a layer split over
  several files counts as its first module: ``validation`` holds the checks
  of ``value_checks`` and ``query_checks``, ``vector`` the base of
  ``vector_lifecycle``; see ``_LAYER_OF``);
- ``re-entries``: calls that enter a library module from another library
  module although the trace had entered that module before (``memory`` ->
  ``validation`` -> back -> ``validation`` again counts one). A recall that
  goes down through the layers and back re-enters nothing;
- ``re-visits``: the same, but the calls one function makes into one
  module count as one visit (a loop calling a helper module per row, or a
  function calling three checks of one module, visits it once): the layers a
  call goes back into, not how often it calls them.

With ``--verbose`` each module transition is listed in order.

Usage (venv active, adapters installed)::

    python -m memory_core_bench.trace_recall [--messages 20] [--verbose]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import memory_core
from memory_core import Memory, MemoryConfig, SemanticRecall
from memory_core.embedders import get_embedder
from memory_core.reference_vector import InMemoryVectorStore

__all__ = ["Trace", "main", "trace_recall"]

_LIBRARY = "memory_core"
_EXCLUDED = "memory_core_bench"
_CHECK_ID = "memory_core.validation:check_id"
# Modules split out of one layer (to keep files short) count as that layer:
# a call between them is a call inside the layer, not a re-entry.
_LAYER_OF = {
    "memory_core.query_checks": "memory_core.validation",
    "memory_core.value_checks": "memory_core.validation",
    "memory_core.vector_lifecycle": "memory_core.vector",
}


def _library(frame: FrameType) -> str | None:
    """The library module (its layer, :data:`_LAYER_OF`) ``frame`` runs in, or None."""
    name = frame.f_globals.get("__name__")
    if isinstance(name, str) and name.startswith(_LIBRARY) and not name.startswith(_EXCLUDED):
        return _LAYER_OF.get(name, name)
    return None


@dataclass(slots=True)
class Trace:
    """What one traced call ran.

    Attributes:
        calls: library function calls (coroutine resumptions not counted).
        functions: calls per library function, by ``module:qualname``.
        modules: distinct library modules.
        transitions: ``(caller module, callee module)`` for each call that
            entered a library module from another one, in order.
        reentries: transitions into a module entered before.
        reentries_from: those re-entries by the module that made them.
        revisits: re-entries from a function that had not called into that
            module before (see the module docstring).
        revisits_from: those re-visits by the module that made them.
    """

    calls: int = 0
    functions: Counter[str] = field(default_factory=Counter)
    modules: set[str] = field(default_factory=set)
    transitions: list[tuple[str, str]] = field(default_factory=list)
    reentries: int = 0
    reentries_from: Counter[str] = field(default_factory=Counter)
    revisits: int = 0
    revisits_from: Counter[str] = field(default_factory=Counter)
    _visits: set[tuple[FrameType, str]] = field(default_factory=set)
    _started: set[FrameType] = field(default_factory=set)
    _entered: set[str] = field(default_factory=set)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """The :func:`sys.setprofile` hook."""
        if event != "call":
            return
        module = _library(frame)
        if module is None or frame in self._started:  # not ours, or a coroutine resuming
            return
        self._started.add(frame)
        self.calls += 1
        self.functions[f"{module}:{frame.f_code.co_qualname}"] += 1
        self.modules.add(module)
        caller = frame.f_back
        while caller is not None and _library(caller) is None:
            caller = caller.f_back
        origin = None if caller is None else _library(caller)
        if origin is not None and origin != module:
            self.transitions.append((origin, module))
            if module in self._entered:
                self.reentries += 1
                self.reentries_from[origin] += 1
                if caller is not None and (caller, module) not in self._visits:
                    self.revisits += 1
                    self.revisits_from[origin] += 1
            if caller is not None:
                self._visits.add((caller, module))
        self._entered.add(module)


async def trace_recall(
    messages: int = 20,
    folder: Path | None = None,
    *,
    semantic: SemanticRecall | bool = True,
    resource_id: str | None = "user-1",
) -> Trace:
    """Trace the second of two identical semantic recalls on SQLite.

    Args:
        messages: messages saved to the one thread first (int >= 1).
        folder: where the SQLite file goes (default: a temporary folder).
        semantic: the config's ``semantic_recall`` (default True: the
            defaults, resource scope).
        resource_id: the recall's ``resource_id`` (None: the thread's owner
            is read, as a caller that names only the thread makes it).

    Returns:
        The :class:`Trace` of the second recall.
    """
    with tempfile.TemporaryDirectory() as scratch:
        path = (folder or Path(scratch)) / "trace.db"
        storage = await memory_core.connect(f"sqlite:///{path}")
        memory = Memory(
            storage,
            InMemoryVectorStore(),
            get_embedder("lexical"),
            MemoryConfig(last_messages=5, semantic_recall=semantic),
            allow_volatile_vectors=True,
        )
        async with memory:
            await memory.create_thread(resource_id="user-1", thread_id="thread-1")
            topics = ("billing", "shipping", "refunds", "weather", "music")
            await memory.save_messages(
                [
                    {
                        "thread_id": "thread-1",
                        "resource_id": "user-1",
                        "role": "user" if i % 2 == 0 else "assistant",
                        "content": f"message {i} about {topics[i % len(topics)]}",
                    }
                    for i in range(messages)
                ]
            )
            await memory.recall("thread-1", resource_id, vector_search_string="refunds for billing")
            trace = Trace()
            sys.setprofile(trace.profile)
            try:
                await memory.recall("thread-1", resource_id, vector_search_string="refunds for billing")
            finally:
                sys.setprofile(None)
        return trace


def main(argv: list[str] | None = None) -> None:
    """Command-line entry: print the trace's counts (and transitions)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20, help="messages in the thread (default 20)")
    parser.add_argument("--verbose", action="store_true", help="list every module transition")
    args = parser.parse_args(argv)
    trace = asyncio.run(trace_recall(args.messages))
    if args.verbose:
        for origin, module in trace.transitions:
            print(f"  {origin} -> {module}")
        for name, count in sorted(trace.functions.items()):
            print(f"  {count:4d}  {name}")
        for origin, count in trace.reentries_from.most_common():
            print(f"  re-entries made by {origin}: {count} ({trace.revisits_from[origin]} re-visits)")
    print(
        f"calls {trace.calls}  functions {len(trace.functions)}  modules {len(trace.modules)}  "
        f"re-entries {trace.reentries}  re-visits {trace.revisits}  check_id {trace.functions[_CHECK_ID]}"
    )


if __name__ == "__main__":
    main()
