"""``memory-core destroy URL [--vector URL] --yes``: remove a whole store
(an application retired, a test store done with), the command-line face of
:meth:`memory_core.storage.BaseStorage.destroy` and
:meth:`memory_core.vector.BaseVectorStore.destroy`.

Registered as the ``destroy`` command of the entry-point group
``memory_core.cli``. Both URLs are checked, and both stores must exist
(:func:`memory_core.cli.stores.command_stores`: a misspelt URL is refused,
not "destroyed") before anything is opened. Without ``--yes`` it prints
what would go (the store's kind and place, its threads and vectors) on
stderr and refuses (exit 2), on a terminal too: there is no question to
answer by mistake. ``--dry-run`` prints the same on stdout, exit 0. What
goes on each backend: a SQLite file with its ``-wal``, ``-shm`` and
``-journal`` files; a PostgreSQL schema; a Redis prefix's keys; a MongoDB
database; a vector store's collections (a Qdrant folder's shards; the
folder itself stays). Backups, snapshots and replicas are not touched:
see docs/operators.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from memory_core.cli.host import advice_command, console, errors, fail, run_interruptible, user_errors
from memory_core.cli.stores import command_stores
from memory_core.options import hide_password
from memory_core.vector import BaseVectorStore
from memory_core.wording import amount

if TYPE_CHECKING:
    from memory_core.storage import Storage
    from memory_core.vector import VectorStore

__all__ = ["Doomed", "destroy", "doomed_lines"]

_UNASKED = (
    "destroy removes the whole store and asks no question: add --yes to destroy it "
    "(what would go is listed above; --dry-run lists it on stdout)"
)


@dataclass(frozen=True, slots=True)
class Doomed:
    """What a destroy removes (or removed), said before it starts.

    Attributes:
        storage: the storage's kind and place (its ``store_place``) and URL.
        threads: its threads, every resource's.
        vectors: the ``--vector`` store's kind and place and URL; None without ``--vector``.
        points: its vector points (every dimension); None without ``--vector``.
    """

    storage: str
    threads: int
    vectors: str | None
    points: int | None


def doomed_lines(doomed: Doomed, verb: str) -> list[str]:
    """One line per store, storage first: ``would destroy storage SQLite
    file /srv/m.db (with its -wal, -shm and -journal files), URL
    sqlite:////srv/m.db: 12 threads (messages included)`` and, with
    ``--vector``, ``... vector index Qdrant folder /srv/v: collections
    memory_messages_<dim> ..., URL ...: 40 vectors``. ``verb`` is
    ``would destroy`` or ``destroyed``."""
    lines = [f"{verb} storage {doomed.storage}: {amount(doomed.threads, 'threads')} (messages included)"]
    if doomed.vectors is not None and doomed.points is not None:
        lines.append(f"{verb} vector index {doomed.vectors}: {amount(doomed.points, 'vectors')}")
    return lines


def destroy(
    url: Annotated[str, typer.Argument(help="Storage URL (sqlite:///path, redis://..., mongodb://...).")],
    vector: Annotated[str | None, typer.Option(help="Vector store URL: its index is destroyed too.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would go; destroy nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Destroy (required: without it nothing is removed).")] = False,
) -> None:
    """Remove a whole store (and, with --vector, its vector index).

    What goes: a SQLite file with its -wal, -shm and -journal files; a
    PostgreSQL schema; a Redis prefix's keys; a MongoDB database; the
    vector store's collections (a Qdrant folder's shards). The URL must
    name an existing store (a typo is refused, exit 2, nothing opened).
    Without --yes it lists what would go on stderr and refuses (exit 2),
    on a terminal too; --dry-run lists it on stdout (exit 0). Done, it
    prints what went on stdout. Ctrl-C (exit 130) may leave a store partly
    removed: the line says which, and running the command it names again
    finishes it. Backups, snapshots and replicas keep their copies: see
    docs/operators.md."""
    with user_errors():
        storage, vectors = command_stores(url, vector, "URL")
        if vectors is not None and not isinstance(vectors, BaseVectorStore):
            fail(f"--vector: {type(vectors).__name__} has no destroy; remove its data with its own tools")
        if dry_run or not yes:
            doomed = run_interruptible(_count(storage, vectors, url, vector), "nothing was destroyed")
            lines = doomed_lines(doomed, "would destroy")
            if dry_run:
                for line in lines:
                    console.print(escape(line), soft_wrap=True)
                return
            for line in lines:
                errors.print(escape(line), soft_wrap=True)
            fail(_UNASKED)
        step = _Step(url, vector)
        done = run_interruptible(_destroy(storage, vectors, url, vector, step), step.interrupted)
    for line in doomed_lines(done, "destroyed"):
        console.print(escape(line), soft_wrap=True)


class _Step:
    """Which store a destroy is removing, for the line a Ctrl-C prints."""

    def __init__(self, url: str, vector: str | None) -> None:
        self.url = url
        self.vector = vector
        self.now = "counting"

    def interrupted(self) -> str:
        """What a Ctrl-C left, truthfully, and the command that finishes it."""
        again = ["destroy", self.url, *([] if self.vector is None else ["--vector", self.vector])]
        if self.now == "counting":
            return "nothing was destroyed"
        if self.now == "vectors":
            finish = advice_command(*again, "--yes")
            return f"storage is untouched; the vector index may be partly removed: run {finish} to finish"
        if self.vector is not None:
            return (
                "the vector index is removed; storage may be partly removed: "
                f"run {advice_command('destroy', self.url, '--yes')} (without --vector) to finish"
            )
        return f"storage may be partly removed: run {advice_command(*again, '--yes')} to finish"


def _place(store: object, url: str) -> str:
    """The store's kind and place (``store_place``; a store that does not
    derive from the base classes: its repr) and its URL, password hidden."""
    place = getattr(store, "store_place", None)
    return f"{place if isinstance(place, str) else repr(store)}, URL {hide_password(url)}"


async def _counts(storage: Storage, vectors: VectorStore | None, url: str, vector: str | None) -> Doomed:
    """What the stores hold now (both open)."""
    threads = (await storage.list_threads(per_page=0)).counted_total
    points = None if vectors is None else await vectors.count_points()
    place = None if vectors is None or vector is None else _place(vectors, vector)
    return Doomed(_place(storage, url), threads, place, points)


async def _count(storage: Storage, vectors: VectorStore | None, url: str, vector: str | None) -> Doomed:
    """The counts, both stores closed after."""
    async with storage:
        if vectors is None:
            return await _counts(storage, None, url, vector)
        async with vectors:
            return await _counts(storage, vectors, url, vector)


async def _destroy(
    storage: Storage, vectors: BaseVectorStore | None, url: str, vector: str | None, step: _Step
) -> Doomed:
    """Count, then destroy the vector index (when given) and the storage,
    in that order: the storage, which the command names first, goes last,
    so a run cut short during the index leaves a storage a rerun finds."""
    await storage.open()
    try:
        if vectors is not None:
            await vectors.open()
        doomed = await _counts(storage, vectors, url, vector)
        if vectors is not None:
            step.now = "vectors"
            await vectors.destroy()
        step.now = "storage"
        await storage.destroy()
    finally:
        # Idempotent: only what an error or Ctrl-C left open is closed here.
        if vectors is not None:
            await vectors.close()
        await storage.close()
    return doomed
