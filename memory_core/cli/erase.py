"""``memory-core erase URL --resource ID [--vector URL]``: erase
one resource (a user: its threads, their messages, its working memory and,
with ``--vector``, its vectors), the command-line face of
:meth:`memory_core.Memory.delete_resource`.

Registered as the ``erase`` command of the entry-point group
``memory_core.cli``. Everything is checked (the id, the URLs, that the stores
exist) before a store is opened. Without ``--yes`` the command asks before
erasing, on a terminal only: when stdin is not one (a script, a pipe) it
refuses (exit 2) instead of erasing unasked. ``--dry-run`` counts what
would go and changes nothing. The storage URL is the first argument, as
for every other command; ``--storage URL`` (the first form) still works,
deprecated, with a warning line on stderr. What the erasure leaves behind on each backend
(free pages, WAL, snapshots, backups) is in docs/operators.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from memory_core.cli.host import advice_command, console, errors, fail, run_interruptible, user_errors, work_complete
from memory_core.cli.resources import absent_resource_hint
from memory_core.cli.stores import command_stores
from memory_core.validation import check_id
from memory_core.wording import amount

if TYPE_CHECKING:
    from memory_core.embedders import Embedder
    from memory_core.storage import Storage
    from memory_core.vector import VectorStore

__all__ = ["DECLINED", "Erased", "erase", "erased_line", "index_note", "nothing_line"]

DECLINED = 1
"""Exit code when the user answers no to the confirmation: nothing erased."""

_UNASKED = (
    "erase asks before erasing, and stdin is not a terminal to ask on: add --yes to erase "
    "without asking (see what would go first with --dry-run)"
)


@dataclass(frozen=True, slots=True)
class Erased:
    """What an erasure removed (or, for a dry run, would remove).

    Attributes:
        resource_id: the resource.
        threads: its threads (with their messages and working memory).
        messages: their messages.
        vectors: its vector points (one per text chunk, every dimension); None without ``--vector``.
        record: whether a resource record (working memory, metadata) went.
    """

    resource_id: str
    threads: int
    messages: int
    vectors: int | None
    record: bool


def erased_line(erased: Erased, *, dry_run: bool) -> str:
    """``erased resource 'u1': 2 threads, 40 messages, 42 vectors (text
    chunks) and its resource record`` (``would erase`` for a dry run; the
    vectors counted as :func:`~memory_core.embedders.chunk_vectors` says)."""
    from memory_core.embedders import chunk_vectors

    parts = [amount(erased.threads, "threads"), amount(erased.messages, "messages")]
    if erased.vectors is not None:
        parts.append(chunk_vectors(erased.vectors))
    what = ", ".join(parts)
    if erased.record:
        what += " and its resource record (working memory, metadata)"
    return f"{'would erase' if dry_run else 'erased'} resource {erased.resource_id!r}: {what}"


def nothing_line(resource: str, *, vector: bool, dry_run: bool) -> str:
    """The stdout line of an erasure of a resource neither store holds
    (exit 0: the resource is gone, which is what an erasure leaves):
    ``erased nothing: the store holds nothing of resource 'u9' (no record,
    thread or message; the --vector index no entry)`` (``would erase
    nothing`` for a dry run)."""
    index = "; the --vector index no entry" if vector else ""
    verb = "would erase nothing" if dry_run else "erased nothing"
    return f"{verb}: the store holds nothing of resource {resource!r} (no record, thread or message{index})"


def erase(
    resource: Annotated[str, typer.Option(help="The resource (user) to erase.")],
    url: Annotated[
        str | None, typer.Argument(help="Storage URL (sqlite:///path, redis://..., mongodb://...).", show_default=False)
    ] = None,
    vector: Annotated[str | None, typer.Option(help="Vector store URL: the resource's vectors are erased too.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would go; erase nothing.")] = False,
    yes: Annotated[
        bool,
        typer.Option("--yes", help="Erase without asking (required when stdin is not a terminal)."),
    ] = False,
    storage: Annotated[str | None, typer.Option(hidden=True, help="Deprecated: give the URL as the argument.")] = None,
) -> None:
    """Erase one resource: its threads, messages, working memory (and vectors).

    Prints what went (``erased resource 'u1': 2 threads, 40 messages, 40
    vectors``) on stdout. Without --yes it shows what would go and asks,
    on a terminal; when stdin is not one it refuses (exit 2). Answering no
    erases nothing (exit 1). A resource neither store holds prints
    "erased nothing: the store holds nothing of resource ..." on stdout and
    a hint naming close ids on stderr, exit 0 (the resource is absent, as
    an erasure leaves it: a script may rerun an erasure); one erased from
    storage alone before still has its vectors and lexical documents
    erased with --vector. Without --vector, a note on stderr says that a
    vector index serving the store keeps the resource's entries until the
    same erasure is run with --vector. Ctrl-C (exit 130) may leave the erasure partial, and a failure
    worth retrying (a SQLite file's rebuild that another connection held
    off past the busy timeout: exit 2) unfinished: run the same command
    again to finish it, even once the resource is gone. Backups, snapshots and logs of the backend
    may still hold the data: see docs/operators.md."""
    with user_errors():
        url, role = _storage_url(url, storage)
        check_id(resource, "--resource")
        if not (dry_run or yes) and not sys.stdin.isatty():
            fail(_UNASKED)
        store, vectors = command_stores(url, vector, role)
        if dry_run or not yes:
            counted, hint = run_interruptible(_count(store, vectors, resource), "nothing was erased")
            if hint is not None:
                console.print(escape(nothing_line(resource, vector=vector is not None, dry_run=True)), soft_wrap=True)
                errors.print(f"[yellow]hint: {escape(hint)}[/]", soft_wrap=True)
                return
            if dry_run:
                console.print(escape(erased_line(counted, dry_run=True)), soft_wrap=True)
                return
            errors.print(escape(erased_line(counted, dry_run=True)), soft_wrap=True)
            if not _confirmed():
                errors.print("nothing was erased", soft_wrap=True)
                raise typer.Exit(DECLINED)
            # The count closed the stores: the erasure opens them again.
            store, vectors = command_stores(url, vector, role)
        done, hint = run_interruptible(
            _erase(store, vectors, resource),
            "the erasure may be partial; run the same command again to finish it",
        )
        if hint is not None:
            console.print(escape(nothing_line(resource, vector=vector is not None, dry_run=False)), soft_wrap=True)
            errors.print(f"[yellow]hint: {escape(hint)}[/]", soft_wrap=True)
            return
    console.print(escape(erased_line(done, dry_run=False)), soft_wrap=True)
    if vector is None:
        errors.print(escape(index_note(url, resource)), soft_wrap=True)


def index_note(url: str, resource: str) -> str:
    """The note an erasure without ``--vector`` adds on stderr: a vector
    index kept beside the store (which the command was not given) still
    holds the resource's vectors and lexical documents, until the same
    erasure with ``--vector`` (which removes them though storage no longer
    holds the resource)."""
    again = advice_command("erase", url, "--vector", "VECTOR_URL", "--resource", resource, "--yes")
    return (
        "note: storage only; a vector index serving this store still holds the entries (vectors, lexical "
        f"documents) of resource {resource!r} until you run {again} (VECTOR_URL: that index's vector store)"
    )


def _storage_url(url: str | None, storage: str | None) -> tuple[str, str]:
    """The storage URL and how the user gave it (``URL``, or the deprecated
    ``--storage``, which prints a warning line on stderr).

    Raises:
        typer.Exit: neither or both given (one red line, exit 2).
    """
    if url is not None and storage is not None:
        fail("give the storage URL once: as the argument (memory-core erase URL --resource ID), not also --storage")
    if storage is not None:
        errors.print(
            "[yellow]warning: --storage is deprecated; give the URL as the argument: "
            "memory-core erase URL --resource ID[/]",
            soft_wrap=True,
        )
        return storage, "--storage"
    if url is None:
        fail("give the storage URL: memory-core erase URL --resource ID; see memory-core erase --help")
    return url, "URL"


def _confirmed() -> bool:
    """Ask on stderr and read the answer from stdin (a terminal): True for
    y or yes. (click's prompt writes part of its question to stdout, which
    carries the command's result.)"""
    errors.print(escape("erase it? [y/N] "), end="", soft_wrap=True)  # unescaped, rich reads [y/N] as a style
    return sys.stdin.readline().strip().lower() in ("y", "yes")


async def _counts(storage: Storage, vectors: VectorStore | None, resource: str) -> Erased:
    """What the resource holds now."""
    from memory_core.models import ThreadFilter

    threads = (await storage.list_threads(ThreadFilter(resource_id=resource), per_page=0)).counted_total
    messages = (await storage.list_messages_by_resource(resource, per_page=0)).counted_total
    points = None if vectors is None else await vectors.count_points(resource_id=resource)
    record = await storage.get_resource(resource) is not None
    return Erased(resource, threads, messages, points, record)


async def _count(storage: Storage, vectors: VectorStore | None, resource: str) -> tuple[Erased, str | None]:
    """The counts, and the hint when neither store holds the resource
    (storage no record or thread, ``--vector`` no point of it)."""
    from memory_core.memory import Memory

    async with Memory(storage, vectors, _embedder(vectors)) as memory:
        hint = await absent_resource_hint(memory.storage, resource, "nothing to erase")
        counted = await _counts(memory.storage, vectors, resource)
        # Erased from storage alone before: its vectors (or documents) are still there to erase.
        return counted, None if counted.vectors or await _documents(vectors, resource) else hint


async def _erase(storage: Storage, vectors: VectorStore | None, resource: str) -> tuple[Erased, str | None]:
    """Erase the resource (storage first, then its vectors), what went, and
    the hint when the store held no such resource (then nothing is erased;
    a rebuild an earlier run left pending is finished)."""
    from memory_core.memory import Memory

    async with Memory(storage, vectors, _embedder(vectors)) as memory:
        hint = await absent_resource_hint(memory.storage, resource, "nothing was erased")
        points = None if vectors is None else await vectors.count_points(resource_id=resource)
        documents = await _documents(vectors, resource)
        # An absent resource too: the call finishes what an earlier, failed run
        # left (a SQLite store's rebuild of its file; nothing else when none is pending).
        erased = await memory.delete_resource(resource)
        # Both stores are written: a Ctrl-C while they close leaves the exit code 0.
        work_complete()
        if hint is not None and not points and not documents:
            return Erased(resource, 0, 0, points, False), hint
        return Erased(resource, len(erased.thread_ids), erased.messages, points, erased.resource), None


async def _documents(vectors: VectorStore | None, resource: str) -> int:
    """The resource's lexical documents in ``vectors`` (0 without a lexical
    index): a resource erased from storage alone whose messages had no
    text holds documents and no vector, and is still there to erase."""
    from memory_core.lexical_index import LexicalIndex

    if isinstance(vectors, LexicalIndex) and vectors.lexical_index:
        return await vectors.count_documents(resource_id=resource)
    return 0


def _embedder(vectors: VectorStore | None) -> Embedder | None:
    """An erasure embeds nothing: the cheap embedder only satisfies Memory's pairing check."""
    from memory_core.embedders import LexicalHashEmbedder

    return LexicalHashEmbedder() if vectors is not None else None
