"""``memory-core check-index URL --vector URL`` and ``memory-core reindex
URL --vector URL``: is a store's vector and lexical index in step with its
messages, and rebuild it where it is not.

Registered as the ``check-index`` and ``reindex`` commands of the
entry-point group ``memory_core.cli``; the command-line faces of
:meth:`memory_core.Memory.check_index` and :meth:`memory_core.Memory.reindex`.
Both take one scope (``--resource`` or ``--thread``) or, by default, every
resource the store holds, one at a time. ``check-index`` prints one line per
resource (or the thread): what storage holds, what the index holds, and
whether it is in step, ``behind`` (messages without vectors or lexical
documents) or holds ``orphaned`` ones (of messages storage no longer
holds); it exits 0 when every scope is in step, else 1, with a last line on
stderr naming the ``reindex`` that repairs it. A ``--resource`` the store
does not hold gets a hint and no line (exit 0), unless the index holds
entries of it. ``reindex`` re-embeds each
scope and prints what it indexed; Ctrl-C leaves each resource either
rebuilt or as it was (exit 130): run it again. Everything is checked
(URLs, the scope, that the stores exist) before a store is opened.

An index that holds entries but shares no message id with storage
(:meth:`~memory_core.indexing.VectorIndex.foreign_entries`) is probably
another store's (``--vector`` naming the wrong folder): ``check-index``
says so instead of naming a ``reindex`` (exit 1), and ``reindex`` refuses
it before writing (exit 2) unless given ``--force``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, NoReturn, cast

import typer
from rich.markup import escape

from memory_core.cli.host import advice_command, console, errors, fail, run_interruptible, shell_words, user_errors
from memory_core.cli.resources import absent_resource_hint
from memory_core.cli.stores import command_embedder, command_storage, command_vector
from memory_core.errors import EmbedderMismatchError
from memory_core.validation import check_id

if TYPE_CHECKING:
    from memory_core.embedders import Embedder
    from memory_core.indexing import IndexStatus, VectorIndex
    from memory_core.memory import Memory
    from memory_core.storage import Storage
    from memory_core.vector import VectorStore

__all__ = ["NOT_IN_STEP", "ORPHANS_LISTED", "check_index", "reindex", "status_line"]

NOT_IN_STEP = 1
"""Exit code of ``check-index`` when some scope is behind or holds orphans."""

ORPHANS_LISTED = 10
"""How many resources storage no longer holds (whose index entries are
orphans) ``check-index`` names, the rest counted; up to this many, its
advice is the ``erase --vector`` of each, more the whole-store ``reindex``."""

_VECTOR_HELP = "Vector store URL (qdrant+path:///dir, postgresql://...): the index to check."
_EMBEDDER_HELP = (
    "The embedder that built the index: lexical | minilm | minilm-torch "
    "(default: the built-in one the index shows, else minilm if installed)."
)


def status_line(status: IndexStatus, unowned: Sequence[str] = ()) -> str:
    """One scope's line: ``resource 'r1': 12 messages stored, 11 of them with
    text; index: vectors for 11 (messages with text), lexical documents for
    12 (every message): in step`` (or ``behind``, ``N orphaned``, both).

    Vectors are made of a message's text, so a message without text (a
    tool call, an empty reply) has none; its lexical document is kept all
    the same (it counts in its scope's BM25 statistics), so a store in
    step holds more documents than vectors: the line says which counts
    which. The entries no resource of storage owns (:meth:`VectorIndex.unowned`)
    are called what they are: orphans of data erased or pruned without
    ``--vector``, of the resources ``unowned`` (sorted ids; the first
    :data:`ORPHANS_LISTED` named, the rest counted)."""
    vectors = f"vectors for {status.indexed}"
    documents = "" if status.documents is None else f", lexical documents for {status.documents}"
    found = []
    if status.behind:
        found.append("behind")
    if status.orphaned:
        found.append(f"{status.orphaned} orphaned")
    verdict = " and ".join(found) or "in step"
    if status.thread_id is None and status.resource_id is None:
        named = ", ".join(repr(r) for r in unowned[:ORPHANS_LISTED])
        if len(unowned) > ORPHANS_LISTED:
            named += f" and {len(unowned) - ORPHANS_LISTED} more"
        return (
            f"resources storage no longer holds (erased or pruned without --vector){': ' + named if named else ''}; "
            f"index: {vectors} messages{documents}: {verdict}"
        )
    scope = f"thread {status.thread_id!r}" if status.thread_id is not None else f"resource {status.resource_id!r}"
    if documents:
        documents += " (every message)"
    return (
        f"{scope}: {status.stored} messages stored, {status.embeddable} of them with text; "
        f"index: {vectors} (messages with text){documents}: {verdict}"
    )


def check_index(
    url: Annotated[str, typer.Argument(help="Storage URL (sqlite:///path, redis://..., mongodb://...).")],
    vector: Annotated[str, typer.Option(help=_VECTOR_HELP)],
    resource: Annotated[str | None, typer.Option(help="Only this resource (default: every resource).")] = None,
    thread: Annotated[str | None, typer.Option(help="Only this thread.")] = None,
    embedder: Annotated[str | None, typer.Option(help=_EMBEDDER_HELP)] = None,
) -> None:
    """Report whether the vector (and lexical) index is in step with storage.

    One line per resource (or the thread): messages stored, with text,
    indexed, lexical documents, and "in step", "behind" or "N orphaned".
    Exit 0 when every one is in step, 1 otherwise (the last line names the
    ``memory-core reindex`` that repairs it, or says the index holds none
    of the store's messages: probably another store's); reads only. A
    ``--resource`` the store does not hold is a hint naming close ids on
    stderr and no line (nothing to be in step), exit 0; if the index still
    holds entries of it, their line says orphaned, exit 1."""
    with user_errors():
        storage, vectors, model = _stores(url, vector, resource, thread, embedder, builds=False, new=False)
        (statuses, foreign, unowned), hint = run_interruptible(
            _check(storage, vectors, model, embedder, url, resource, thread), "nothing was changed; run the check again"
        )
        if hint is not None:
            errors.print(f"[yellow]hint: {escape(hint)}[/]", soft_wrap=True)
            # A resource storage does not hold is in step with nothing: no line
            # claims it, unless the index still holds its entries (orphans).
            statuses = [status for status in statuses if not status.in_step]
    for status in statuses:
        console.print(escape(status_line(status, unowned)), soft_wrap=True)
    if foreign:
        then = "memory-core reindex refuses it; with --force it rebuilds it from this store, dropping those entries"
        errors.print(f"[yellow]{escape(_foreign(foreign, then))}[/]", soft_wrap=True)
        raise typer.Exit(NOT_IN_STEP)
    stale = [s for s in statuses if not s.in_step]
    if stale:
        errors.print(
            f"[yellow]{len(stale)} of {len(statuses)} not in step; "
            f"{escape(_repair(stale, (url, vector, embedder), unowned))}[/]",
            soft_wrap=True,
        )
        raise typer.Exit(NOT_IN_STEP)


def _repair(stale: list[IndexStatus], given: tuple[str, str, str | None], unowned: Sequence[str]) -> str:
    """What removes what ``stale`` found, as commands to run as they are
    (``given``: the storage URL, ``--vector`` and ``--embedder`` as spelt):
    the ``reindex`` of the scopes storage holds (one scope's ``--resource``
    or ``--thread`` when one), and, for the orphans of the resources
    ``unowned`` that storage no longer holds (erased or pruned without
    ``--vector``), the ``erase --vector`` of each (which removes a
    resource's vectors and lexical documents though storage no longer
    holds it) when at most :data:`ORPHANS_LISTED`, else (or when the
    vector store cannot name them) the whole-store ``reindex``, which
    drops the entries of every message storage no longer holds."""
    url, vector, embedder = given
    held = [s for s in stale if s.resource_id is not None or s.thread_id is not None]
    orphans = len(held) < len(stale)
    erasable = orphans and 0 < len(unowned) <= ORPHANS_LISTED
    whole = orphans and not erasable
    steps = []
    if held or whole:
        scope = _scope_option(held[0].resource_id, held[0].thread_id) if len(held) == 1 and not whole else []
        again = ["reindex", url, "--vector", vector, *scope]
        if embedder is not None:
            again += ["--embedder", embedder]
        drops = " (the whole store: it also drops the entries of every message storage no longer holds)"
        steps.append(f"run {advice_command(*again)}{drops if whole else ''}")
    if erasable:
        erase = advice_command("erase", url, "--vector", vector)
        if len(unowned) == 1:
            command = advice_command("erase", url, "--vector", vector, "--resource", unowned[0], "--yes")
        else:
            command = f'for ID in {shell_words(unowned)}; do {erase} --resource "$ID" --yes; done'
        steps.append(f"the orphans of resources storage no longer holds go with {command}")
    return "; ".join(steps)


def reindex(
    url: Annotated[str, typer.Argument(help="Storage URL (sqlite:///path, redis://..., mongodb://...).")],
    vector: Annotated[str, typer.Option(help="Vector store URL: the index to rebuild.")],
    resource: Annotated[str | None, typer.Option(help="Only this resource (default: every resource).")] = None,
    thread: Annotated[str | None, typer.Option(help="Only this thread.")] = None,
    embedder: Annotated[str | None, typer.Option(help=_EMBEDDER_HELP)] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Rebuild even an index that holds none of the store's messages."),
    ] = False,
    new: Annotated[
        bool,
        typer.Option("--new", help="Build a new index: --vector may name a new or empty vector store."),
    ] = False,
) -> None:
    """Rebuild the vector (and lexical) index from storage; with ``--new``,
    build one into a new or empty vector store (a store imported without
    ``--vector``, an index moved elsewhere). Without it, a ``--vector``
    naming no index is refused as a probable typo.

    Every resource (or one resource, or one thread) gets its messages'
    vectors and lexical documents again; those of messages storage no
    longer holds go. Each scope is replaced whole; Ctrl-C (exit 130) leaves the scopes done
    rebuilt: run the command again to finish. An index holding entries of
    none of the store's messages (probably another store's) is refused
    before anything is written (exit 2), unless ``--force``. A ``--resource``
    the store does not hold is a hint naming close ids on stderr and nothing
    else, exit 0 (as ``check-index``: nothing to rebuild), unless the index
    still holds entries of it: they are dropped, and reported."""
    with user_errors():
        storage, vectors, model = _stores(url, vector, resource, thread, embedder, builds=True, new=new)
        done, hint = run_interruptible(
            _reindex(storage, vectors, model, resource, thread, force, (url, embedder)),
            "the resources reported were rebuilt, the one under way may be partly; run the reindex again",
        )
        if hint is not None:
            errors.print(f"[yellow]hint: {escape(hint)}[/]", soft_wrap=True)
    if not done:  # a --resource the store does not hold, nor the index: the hint says it all
        return
    total = sum(count for _, count in done)
    scopes = "thread" if thread else "resource" if len(done) == 1 else "resources"
    console.print(f"reindexed {total} messages in {len(done)} {scopes}", soft_wrap=True)


def _scope_option(resource: str | None, thread: str | None) -> list[str]:
    return ["--thread", thread] if thread is not None else ["--resource", resource] if resource is not None else []


def _stores(
    url: str,
    vector: str,
    resource: str | None,
    thread: str | None,
    embedder: str | None,
    *,
    builds: bool,
    new: bool,
) -> tuple[Storage, VectorStore, Embedder | None]:
    """The storage and vector store (built, checked, not opened: the index
    must exist, a misspelt URL would build one elsewhere, unless ``new``:
    ``reindex --new`` builds into a new or empty vector store; ``builds``:
    the command is ``reindex``, for the refusal's next step) and the
    embedder (None without ``--embedder``: the Memory takes the one the
    index shows, :func:`~memory_core.embedders.embedder_of_index`); the
    scope checked. Raises as the commands document."""
    if resource is not None and thread is not None:
        fail("give --resource or --thread, not both (a thread belongs to one resource)")
    if resource is not None:
        check_id(resource, "--resource")
    if thread is not None:
        check_id(thread, "--thread")
    storage = command_storage(url, "URL", must_exist=True)
    if builds:
        otherwise = "or pass --new to build a new index there"
    else:
        # A new index is built whole (not the one --resource or --thread checked).
        named = [] if embedder is None else ["--embedder", embedder]
        rebuild = advice_command("reindex", url, "--new", "--vector", vector, *named)
        otherwise = f"or build one there with {rebuild}"
    vectors = command_vector(vector, "--vector", must_exist=not new, otherwise=otherwise)
    return storage, vectors, None if embedder is None else command_embedder(embedder)


async def _scopes(
    memory: Memory, resource: str | None, thread: str | None, outcome: str = "nothing to check"
) -> tuple[list[str], str | None]:
    """The resource ids to walk (one, or every one the store holds), and the
    hint (``outcome``: what the command did) when ``--resource`` names none;
    ``--thread`` must name a thread."""
    from memory_core.transfer.export import resource_ids

    if thread is not None:
        if await memory.storage.get_thread(thread) is None:
            fail(f"--thread: the store holds no thread {thread!r}; check the id, or give --resource or neither")
        return [], None
    if resource is not None:
        return [resource], await absent_resource_hint(memory.storage, resource, outcome)
    return await resource_ids(memory.storage), None


def _index(memory: Memory) -> VectorIndex:
    """The whole-store index calls over ``memory``'s stores."""
    from memory_core.indexing import VectorIndex

    return VectorIndex(memory.storage, memory.vector, memory.embedder)


def _memory(storage: Storage, vectors: VectorStore, model: Embedder | None) -> Memory:
    from memory_core.memory import Memory

    return Memory(storage, vectors, model)


def _foreign(count: int, then: str) -> str:
    """The line for an index that shares no message with storage, ``then`` the next step."""
    return (
        f"--vector holds the index entries of {count} messages and none of them is in this store: "
        f"probably another store's index; check --vector ({then})"
    )


def _built(exc: EmbedderMismatchError) -> str:
    """The index's vectors another embedder made: ``50 vectors (text
    chunks) of dimension 1024, made by --embedder lexical`` (points, one per
    chunk of a message's text: :func:`~memory_core.embedders.chunk_vectors`),
    a built-in embedder named where the dimension tells it."""
    from memory_core.embedders import built_in_name, chunk_vectors

    parts = []
    for dimension, n in sorted(exc.counts.items()):
        if dimension != exc.dimension and n:
            name = built_in_name(dimension)
            parts.append(
                f"{chunk_vectors(n)} of dimension {dimension}" + (f", made by --embedder {name}" if name else "")
            )
    return ", ".join(parts)


def _new_index(url: str, given: str | None) -> str:
    """The command that builds a new index whole with the embedder ``given``
    (as spelt; NAME without ``--embedder``): the way out of an index another
    embedder built, which a reindex in place refuses to mix with (the one
    piece of advice both commands give, so it is the one that works)."""
    command = advice_command("reindex", url, "--new", "--vector", "NEW_URL", "--embedder", given or "NAME")
    return f"{command} (NEW_URL: a new or empty vector store; then use it as --vector)"


def _other_space(exc: EmbedderMismatchError, name: str, url: str, given: str | None) -> str:
    """The line for an index whose record names another embedder of the
    same dimension (``exc.recorded``) than ``name`` (``--embedder NAME`` or
    the default embedder): both named, and the fix."""
    from memory_core.embedders import built_in_of

    recorded = exc.recorded or ""
    known = built_in_of(recorded)
    built = f"{recorded!r}" + (f" (--embedder {known})" if known else "")
    return (
        f"--embedder: the vector index of dimension {exc.dimension} was built by the embedder {built} (its record), "
        f"not by {name}, whose vectors of the same dimension are of another space and must not mix with those; "
        f"nothing was written: give the --embedder that built the index, or build a new index with this one: "
        f"{_new_index(url, given)}"
    )


def _mismatch(exc: EmbedderMismatchError, given: str | None, url: str) -> NoReturn:
    """A mismatch between ``--embedder`` (``given`` as the user spelt it, None
    without the option) and the index of storage ``url``, as one red line
    naming the fix: the ``--embedder`` that built it, or a new index
    (:func:`_new_index`; a reindex in place with ``given`` is refused)."""
    name = "the default embedder" if given is None else f"--embedder {given}"
    if exc.recorded is not None:
        fail(_other_space(exc, name, url, given))
    fail(
        f"--vector holds {_built(exc)} that {name} ({exc.dimension} dimensions) "
        f"did not make; give the --embedder that built the index, or build a new index with this one: "
        f"{_new_index(url, given)}"
    )


async def _check(
    storage: Storage,
    vectors: VectorStore,
    model: Embedder | None,
    given: str | None,
    url: str,
    resource: str | None,
    thread: str | None,
) -> tuple[tuple[list[IndexStatus], int, list[str]], str | None]:
    """The statuses, :meth:`~memory_core.indexing.VectorIndex.foreign_entries`
    and, for the whole store, the resources storage no longer holds whose
    entries the index keeps (:meth:`~memory_core.indexing.VectorIndex.unowned_resources`)
    (``given``: ``--embedder`` as spelt, and ``url`` the storage URL, for a mismatch's line)."""
    async with _memory(storage, vectors, model) as memory:
        resources, hint = await _scopes(memory, resource, thread)
        foreign = await _index(memory).foreign_entries()
        try:
            if thread is not None:
                return ([await memory.check_index(thread_id=thread)], foreign, []), hint
            statuses = [await memory.check_index(resource_id=r) for r in resources]
            owners: list[str] = []
            if resource is None:  # the whole store: also what no resource of storage owns
                unowned = await _index(memory).unowned(statuses)
                if unowned.orphaned:
                    statuses.append(unowned)
                    owners = await _index(memory).unowned_resources(resources)
            return (statuses, foreign, owners), hint
        except EmbedderMismatchError as exc:
            _mismatch(exc, given, url)


async def _reindex(
    storage: Storage,
    vectors: VectorStore,
    model: Embedder | None,
    resource: str | None,
    thread: str | None,
    force: bool,
    given: tuple[str, str | None],
) -> tuple[list[tuple[str, int]], str | None]:
    """Rebuild the scope; ``given``: the storage URL and ``--embedder`` as
    spelt, for a refusal's next step."""
    async with _memory(storage, vectors, model) as memory:
        resources, hint = await _scopes(memory, resource, thread, "nothing was reindexed")
        if hint is not None and (await memory.check_index(resource_id=resource)).in_step:
            return [], hint  # storage holds none of it and the index no entry: nothing to rebuild
        foreign = 0 if force else await _index(memory).foreign_entries()
        if foreign:
            fail(_foreign(foreign, "or pass --force to rebuild it from this store, dropping those entries"))
        if thread is not None:
            return [(thread, await _rebuilt(memory, given, thread_id=thread))], hint
        done = []
        for one in resources:
            done.append((one, await _rebuilt(memory, given, resource_id=one, whole=resource is None)))
            errors.print(f"reindexed resource {escape(repr(one))}: {done[-1][1]} messages", soft_wrap=True)
        if resource is None:  # the whole store: what no resource of storage owns goes too
            dropped = await _index(memory).drop_unowned()
            if dropped:
                errors.print(f"dropped the index entries of {dropped} messages storage no longer holds", soft_wrap=True)
        return done, hint


async def _rebuilt(
    memory: Memory,
    given: tuple[str, str | None],
    *,
    thread_id: str | None = None,
    resource_id: str | None = None,
    whole: bool = False,
) -> int:
    """:meth:`Memory.reindex` of one scope; its refusal to leave an index
    mixing two embedders (:class:`EmbedderMismatchError`) one red line in the
    command line's words (``--embedder``, ``reindex --new`` with the storage
    URL and ``--embedder`` of ``given``). ``whole``: the scope is one
    resource of a whole-store reindex, whose refusal speaks of the index,
    not of a resource the user never named."""
    from memory_core.embedders import Embedder, partial_rebuild

    try:
        return await memory.reindex(thread_id=thread_id, resource_id=resource_id)
    except EmbedderMismatchError as exc:  # raised only by a Memory with an embedder
        url, name = given
        if exc.recorded is not None:
            fail(_other_space(exc, "the default embedder" if name is None else f"--embedder {name}", url, name))
        if whole:
            fail(
                f"--embedder: the vector index holds {_built(exc)} that "
                f"{'the default embedder' if name is None else f'--embedder {name}'} ({exc.dimension} dimensions) "
                "did not make; a reindex in place replaces them resource by resource and would leave an index "
                "mixing two embedders, whose searches miss one or the other; nothing was written: give the "
                f"--embedder that built the index, or build a new index whole with this one: {_new_index(url, name)}"
            )
        scope = f"thread {thread_id!r}" if thread_id is not None else f"resource {resource_id!r}"
        fail(f"--embedder: {partial_rebuild(cast(Embedder, memory.embedder), exc.counts, scope, command_line=True)}")
