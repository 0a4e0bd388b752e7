"""``ToyFileStorage``: a complete, file-backed toy adapter.

It has the shape every adapter has: a ``from_url`` that takes ``namespace``
and ``clock``, a constructor that does no I/O, ``_open`` / ``_close`` /
``_destroy``, a ``preflight`` that checks its file without creating it, and
its optional capabilities declared as data. Its data handling is borrowed
from :class:`~memory_core.reference.InMemoryStorage` (a real adapter
implements every primitive for its backend), a
:class:`~memory_core.storage.ComposedStorage`: it writes only the simple
primitives, and every read plan, checked save and erasure is composed from
them. The whole state is
read from ``<folder>/<namespace>.pickle`` on open and written back on close.
So a second instance sees the first one's data once that one is closed
(``Capability.PERSISTENT``), but two open instances do not share writes (no
``SHARED_NAMESPACE``). A toy: pickle is fine only for files nobody else writes.
"""

from __future__ import annotations

import pickle
import re
from itertools import count
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio

from memory_core.capabilities import Capability
from memory_core.clock import Clock
from memory_core.errors import BackendGuard, ValidationError
from memory_core.reference import InMemoryStorage
from memory_core.storage import no_store

__all__ = ["ToyFileStorage"]

_NAMESPACE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")


class ToyFileStorage(InMemoryStorage):
    """The reference store, kept in one file per namespace. URL (the path
    convention of ``sqlite://``): ``toyfile:////absolute/folder`` (four
    slashes: the empty host, then an absolute path) or
    ``toyfile:///relative/folder`` (relative to the working directory).

    Args:
        folder: the directory holding the namespaces' files (created on the
            first close).
        namespace: which file: ``<folder>/<namespace>.pickle``; 1-100 of
            ``A-Z a-z 0-9 _ . -``, not starting with a dot. Default
            ``"default"``.
        clock: injectable clock (default: the system clock).

    Raises:
        ValidationError: a namespace that is not a plain file name.
    """

    backend_name = "toyfile"
    capabilities = frozenset({Capability.PERSISTENT})

    def __init__(self, folder: str | Path, *, namespace: str = "default", clock: Clock | None = None) -> None:
        if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
            raise ValidationError("namespace", f"must be 1-100 of A-Z a-z 0-9 _ . - (not a leading dot): {namespace!r}")
        super().__init__(clock=clock)
        self.folder = Path(folder)
        self.namespace = namespace
        self.path = self.folder / f"{namespace}.pickle"
        self._destroyed = False

    @classmethod
    def from_url(cls, url: str, **options: Any) -> ToyFileStorage:
        """Build from ``toyfile:////absolute/folder`` or
        ``toyfile:///relative/folder`` (no I/O): what follows the empty host's
        ``/`` is the path, as in ``sqlite://`` URLs. Options: ``namespace``
        and ``clock``, as for the constructor.

        Raises:
            ValidationError: another scheme, a host part, or no folder in the URL.
        """
        parts = urlsplit(url)
        folder = parts.path[1:]
        if parts.scheme != "toyfile" or parts.netloc or not folder:
            raise ValidationError(
                "url", f"must look like toyfile:////absolute/folder or toyfile:///relative/folder, got {url!r}"
            )
        return cls(unquote(folder), **options)

    async def preflight(self, *, must_exist: bool = False, writes: bool = False) -> None:
        """Check, creating nothing, that this namespace can be opened: an
        existing file must be a toy store (``memory-core check`` and the
        commands that move data call this first).

        Args:
            must_exist: the namespace's file must be there already.
            writes: the command writes into it: nothing more to check (an
                existing file that is not a toy store is refused anyway).

        Raises:
            ValidationError: ``must_exist`` and no file for the namespace
                (:func:`memory_core.storage.no_store`, naming the next step).
            BackendError: the file is not a toy store (as ``open`` would fail).
        """
        if self._threads or self._messages or self._resources:
            return  # this handle holds data not yet written (the file is written at close)
        if not await anyio.Path(self.path).exists():
            if must_exist:
                raise no_store("url", str(self.path), "no such file")  # the wording every adapter shares
            return
        with BackendGuard(self, "open"):
            await self._load()

    async def _load(self) -> dict[str, Any] | None:
        """The namespace's saved state, or None when it has no file.

        Raises:
            pickle.UnpicklingError, KeyError, OSError ...: the file is not a
            toy store (the core wraps them in ``BackendError``).
        """
        if not await anyio.Path(self.path).exists():
            return None
        state: dict[str, Any] = pickle.loads(await anyio.Path(self.path).read_bytes())
        missing = {"threads", "messages", "resources", "next_sequence"} - set(state)
        if missing:
            raise KeyError(f"{self.path} is not a toyfile store: no {sorted(missing)}")
        return state

    async def _open(self) -> None:
        state = await self._load()
        if state is not None:
            self._threads, self._messages, self._resources = state["threads"], state["messages"], state["resources"]
            self._sequence = count(state["next_sequence"])

    async def _close(self) -> None:
        if self._destroyed:  # destroy() closes too, and must leave no file behind
            return
        state = {
            "threads": self._threads,
            "messages": self._messages,
            "resources": self._resources,
            "next_sequence": next(self._sequence),
        }
        await anyio.Path(self.folder).mkdir(parents=True, exist_ok=True)
        await anyio.Path(self.path).write_bytes(pickle.dumps(state))

    async def _destroy(self) -> None:
        await super()._destroy()
        await anyio.Path(self.path).unlink(missing_ok=True)
        self._destroyed = True
