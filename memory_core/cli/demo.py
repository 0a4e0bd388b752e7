"""``memory-core demo``: load conversations, then show a real session of use.

Registered as the ``demo`` command of the entry-point group ``memory_core.cli``.

The demo is the project's main job: it loads LoCoMo-format conversations
(the shipped sample, or ``--locomo DIR``) into the embedded default storage
(a SQLite file) with vectors in the in-process Qdrant engine, embedded by
the default embedder (:func:`memory_core.embedders.default_embedder`: MiniLM
when installed, else lexical hashing, as :class:`memory_core.Memory` picks),
then exercises the API a chat agent uses and prints each answer as a table.
"""

from __future__ import annotations

import glob
import os
import re
import resource as _rusage
import shutil
import sqlite3
import time
import uuid
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memory_core.cli.host import (
    CLOSED_PIPE,
    INTERRUPTED,
    clauses,
    console,
    errors,
    run_quietly,
    user_errors,
    work_complete,
)
from memory_core.cli.locomo import Conversation, load_dir, load_sample
from memory_core.cli.stores import command_embedder, url_role
from memory_core.embedders import Embedder, LexicalHashEmbedder
from memory_core.errors import ValidationError
from memory_core.memory import Memory, MemoryConfig, SemanticRecall, WorkingMemory
from memory_core.models import DateRange, Include, Message, MessageFilter, OrderBy, Thread, ThreadFilter
from memory_core.registry import connect, connect_vector
from memory_core.vector import BaseVectorStore
from memory_core.wording import amount

__all__ = [
    "DEMO_APPLICATION_ID",
    "DEMO_NAMESPACE_PREFIX",
    "VECTORS_MARKER",
    "DemoFiles",
    "DemoReport",
    "demo",
    "drop_earlier_demo",
    "is_demo_database",
    "load_conversations",
    "prepare_demo_files",
    "print_banner",
    "remove_demo_files",
    "run_session",
    "vectors_folder",
]

DEMO_APPLICATION_ID = int.from_bytes(b"MCDE", "big")
"""SQLite ``PRAGMA application_id`` of every database the demo creates: the
mark that lets a later run recognise (and replace) it."""

VECTORS_MARKER = "memory-core-demo.marker"
"""File the demo writes into each vectors folder it creates, for the same purpose."""

_SQLITE_HEADER = b"SQLite format 3\x00"
_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def is_demo_database(path: Path) -> bool:
    """Whether ``path`` is a SQLite file the demo created (its header carries
    :data:`DEMO_APPLICATION_ID`); reads 72 bytes, writes nothing."""
    try:
        with path.open("rb") as file:
            header = file.read(72)
    except (FileNotFoundError, IsADirectoryError):
        return False
    return header.startswith(_SQLITE_HEADER) and int.from_bytes(header[68:72], "big") == DEMO_APPLICATION_ID


def vectors_folder(db: Path) -> Path:
    """The demo's Qdrant folder beside the SQLite file ``db``: ``<stem>.vectors``."""
    return db.with_suffix(".vectors")


def prepare_demo_files(db: Path, *, database: bool, vectors: bool, keep: bool) -> DemoFiles:
    """Make the demo's files beside ``db`` ready: the SQLite file ``db`` itself
    (when ``database``) and the Qdrant folder :func:`vectors_folder` (when
    ``vectors``). Each must be missing or a previous demo's (recognised by its
    mark); a previous demo's is set aside (renamed to a hidden name beside
    it) unless ``keep``, so that a failed or interrupted run puts it back
    (:func:`remove_demo_files`) and one that ends well removes it
    (:func:`drop_earlier_demo`); a new one is created with the mark.
    ``db``'s folder must exist: no folder is ever created.
    Everything is checked before anything is removed, so a refusal leaves
    every file as it was; a symlink at any of these paths is the user's (the
    demo makes none) and is refused, never written through or removed. If
    making a file fails, what this call made already is removed.

    Returns:
        :class:`DemoFiles`: the paths this call created (the database
        and/or the vectors folder) and the earlier files it set aside.

    Raises:
        ValidationError: (field ``--db``) ``db`` is a folder, its folder is
            missing or is not one; ``db``, its ``-wal``/``-shm``/``-journal``
            file or the vectors folder exists (a symlink included) and is not
            the demo's; ``db`` is named like its own vectors folder
            (``*.vectors``); or SQLite cannot create ``db``.
        OSError: the vectors folder or its mark cannot be made.
    """
    advice = "choose another --db path"
    if db.is_dir():
        raise ValidationError("--db", f"{str(db)!r} is a folder; give a file path such as memory-core-demo.db")
    if db.parent.exists() and not db.parent.is_dir():
        raise ValidationError("--db", f"{str(db.parent)!r} is not a folder; {advice}")
    if not db.parent.exists():
        raise ValidationError("--db", f"folder {str(db.parent)!r} does not exist; create it first or {advice}")
    folder = vectors_folder(db) if vectors else None
    if folder == db:
        raise ValidationError("--db", f"{str(db)!r} is the name of its own vectors folder; {advice} (not *.vectors)")
    # lexists: a symlink counts even when dangling. The demo never makes one,
    # so one is the user's: writing through it, then removing it on a
    # failure, would touch files the demo did not make.
    files = _database_files(db) if database else []
    taken = [path for path in files if os.path.lexists(path)]
    if taken and (any(path.is_symlink() for path in taken) or not is_demo_database(db)):
        raise ValidationError("--db", f"{taken[0]} exists and was not made by memory-core demo; {advice}")
    ours = folder is not None and not folder.is_symlink() and (folder / VECTORS_MARKER).is_file()
    if folder is not None and os.path.lexists(folder) and not ours:
        raise ValidationError("--db", f"{folder} exists and was not made by memory-core demo; {advice}")
    earlier: list[Path] = []
    if not keep:
        earlier = [*taken, *([folder] if folder is not None and folder.exists() else [])]
    set_aside: list[tuple[Path, Path]] = []
    created: list[Path] = []
    try:
        set_aside = _set_aside(earlier)
        # Listed before it is made: a Ctrl-C between the two still has it removed.
        if database and not db.exists():
            created.append(db)
            _create_database(db)
        if folder is not None and not folder.exists():  # one that exists is the demo's (marked), kept
            created.append(folder)
            _create_vectors_folder(folder)
    except BaseException:
        # Made by this call (a vectors folder that cannot be made or marked): not left behind.
        remove_demo_files(DemoFiles(created, set_aside))
        raise
    return DemoFiles(created, set_aside, (*files, *([folder] if folder is not None else [])))


@dataclass(frozen=True, slots=True)
class DemoFiles:
    """What :func:`prepare_demo_files` did.

    Attributes:
        created: the paths this run created (the database, the vectors folder).
        set_aside: an earlier demo's files this run replaces, each as
            (hidden name it was renamed to, its own path): put back if the
            run fails or is interrupted, removed once it has ended well.
        own: the demo's paths (the database, its ``-wal``/``-shm``/
            ``-journal`` files, the vectors folder) whose hidden earlier
            copies a run that ends well removes, this run's and those a
            killed run (SIGKILL, power loss) could not put back.
    """

    created: list[Path]
    set_aside: list[tuple[Path, Path]]
    own: tuple[Path, ...] = ()


def _set_aside(paths: Sequence[Path]) -> list[tuple[Path, Path]]:
    """Rename ``paths`` (an earlier demo's) to hidden names beside them; all
    or, on any error or Ctrl-C, none (those renamed are put back)."""
    tag = uuid.uuid4().hex[:8]
    moved: list[tuple[Path, Path]] = []
    try:
        for path in paths:
            hidden = path.with_name(f".{path.name}.earlier-{tag}")
            path.rename(hidden)
            moved.append((hidden, path))
    except BaseException:
        remove_demo_files(DemoFiles([], moved))
        raise
    return moved


def remove_demo_files(files: DemoFiles) -> None:
    """After a failed or interrupted demo: remove what
    :func:`prepare_demo_files` created (a database with its
    ``-wal``/``-shm``/``-journal`` files, a vectors folder; paths already
    gone are skipped) and put an earlier demo's files back: a run removes
    only what it made."""
    for path in files.created:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            for file in _database_files(path):
                file.unlink(missing_ok=True)
    for hidden, path in files.set_aside:
        if hidden.exists() and not os.path.lexists(path):
            hidden.rename(path)


_HIDDEN = re.compile(r"\.(?:earlier|new)-[0-9a-f]{8}(?:-journal)?")
"""The tail of a hidden name :func:`_set_aside` (``.demo.db.earlier-1a2b3c4d``)
or :func:`_create_database` (``.demo.db.new-1a2b3c4d``, and its journal) gives."""


def drop_earlier_demo(files: DemoFiles) -> None:
    """After a demo that ended well: remove the earlier demo's files it
    replaced, and any hidden earlier copy of the demo's paths, or database
    half made, that a killed run left (a run killed between setting them
    aside and its end cannot put them back; the run that replaces it
    removes them)."""
    stale = [
        hidden
        for path in files.own
        if path.parent.is_dir()
        for hidden in path.parent.glob(f".{glob.escape(path.name)}.*")
        if _HIDDEN.fullmatch(hidden.name, len(path.name) + 1)
    ]
    for hidden in {*(hidden for hidden, _ in files.set_aside), *stale}:
        if hidden.is_dir() and not hidden.is_symlink():
            shutil.rmtree(hidden, ignore_errors=True)
        else:
            hidden.unlink(missing_ok=True)


def _database_files(db: Path) -> list[Path]:
    return [db, *(Path(f"{db}{suffix}") for suffix in _SQLITE_SIDE_FILES)]


def _create_database(db: Path) -> None:
    """An empty SQLite file with the demo's mark (the adapter adds its
    schema), made under a hidden name beside ``db`` and renamed into place:
    ``db`` never exists without its mark, so a run killed meanwhile
    (SIGKILL) leaves no file a later run must refuse as not the demo's
    (the hidden one is removed by the next run that ends well,
    :func:`drop_earlier_demo`)."""
    made = db.with_name(f".{db.name}.new-{uuid.uuid4().hex[:8]}")
    try:
        connection = sqlite3.connect(made)
        try:
            connection.execute(f"PRAGMA application_id = {DEMO_APPLICATION_ID}")
            connection.commit()
        finally:
            connection.close()
        made.rename(db)
    except BaseException as exc:  # a Ctrl-C too: the hidden half goes with the run
        for file in _database_files(made):
            file.unlink(missing_ok=True)
        if isinstance(exc, sqlite3.Error | OSError):
            raise ValidationError("--db", clauses(f"cannot create {db}: {exc}", "give another --db path")) from None
        raise


def _create_vectors_folder(folder: Path) -> None:
    """The vectors folder with the demo's mark, made under a hidden name
    beside it and renamed into place, as :func:`_create_database` makes the
    database: it never exists without its mark."""
    made = folder.with_name(f".{folder.name}.new-{uuid.uuid4().hex[:8]}")
    try:
        made.mkdir()
        (made / VECTORS_MARKER).write_text("made by memory-core demo; the next demo run replaces this folder\n")
        made.rename(folder)
    except BaseException:
        shutil.rmtree(made, ignore_errors=True)
        raise


@dataclass(frozen=True, slots=True)
class DemoReport:
    """What the load step did: counts and wall time in seconds."""

    resources: int
    threads: int
    messages: int
    seconds: float


async def load_conversations(memory: Memory, conversations: Sequence[Conversation], console: Console) -> DemoReport:
    """Save every thread and message (one batch per thread), with a progress bar."""
    total = sum(len(c.messages) for c in conversations)
    started = time.perf_counter()
    threads = 0
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("[bold]loading[/]", total=total)
        for conversation in conversations:
            progress.update(task, description=f"[bold]loading[/] {conversation.resource_id}")
            by_thread: dict[str, list[Message]] = {}
            for message in conversation.messages:
                by_thread.setdefault(message.thread_id, []).append(message)
            for thread in conversation.threads:
                await memory.storage.save_thread(thread)
                threads += 1
                batch = by_thread.get(thread.id, [])
                if batch:
                    await memory.save_messages(batch)
                progress.advance(task, len(batch))
        # The bar stays on screen: its last words say the load is over.
        progress.update(task, description=f"[bold]loaded[/] {len(conversations)}/{len(conversations)} conversations")
    return DemoReport(len(conversations), threads, total, time.perf_counter() - started)


def recall_kind(embedder: Embedder) -> str:
    """What recall with ``embedder`` matches on, for the demo's output:
    ``"semantic recall"``, or ``"lexical recall"`` for the lexical hashing
    embedder (shared words and word forms, not meaning)."""
    return "lexical recall" if isinstance(embedder, LexicalHashEmbedder) else "semantic recall"


def print_banner(console: Console, storage_url: str, vector_url: str | None, embedder: Embedder | None = None) -> None:
    """The demo's title, then the storage and vector URLs in full (printed with
    soft wrap, so a long path is wrapped by the terminal, never cut short) and
    the embedder used, saying whether its recall is semantic or lexical."""
    console.rule("[bold]memory-core demo[/]")
    console.print(f"[bold]storage:[/] {escape(storage_url)}", soft_wrap=True)
    vectors = escape(vector_url) if vector_url else "none (semantic recall off)"
    console.print(f"[bold]vectors:[/] {vectors}", soft_wrap=True)
    if embedder is not None:
        hint = "" if recall_kind(embedder) == "semantic recall" else "; MiniLM (memory-core[minilm]) matches meaning"
        console.print(f"[bold]embedder:[/] {escape(embedder.name)} ({recall_kind(embedder)}{hint})", soft_wrap=True)


def _messages_table(
    title: str, messages: Sequence[Message], hits: Sequence[str] = (), starred: frozenset[str] = frozenset()
) -> Table:
    """Messages as rows. With ``hits`` (message ids, best first) a ``hit``
    column shows each found message's rank and its row is bold; ``starred``
    ids get a ★ before the id."""
    rank = {message_id: number for number, message_id in enumerate(hits, 1)}
    table = Table(title=title, title_justify="left", show_lines=False)
    if rank:
        table.add_column("hit", no_wrap=True, justify="right")
    table.add_column("created_at (UTC)", no_wrap=True)
    table.add_column("id", no_wrap=True)
    table.add_column("speaker", no_wrap=True)
    table.add_column("text")
    for message in messages:
        if message.created_at is None:
            raise ValidationError("message.created_at", "a stored message has its time; this one has none", "R-TIME")
        star = "[bold yellow]★ [/]" if message.id in starred else ""
        text = message.content if isinstance(message.content, str) else str(message.content)
        cells = [
            message.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            star + escape(message.id),
            escape(str(message.metadata.get("speaker", message.role))),
            escape(text if len(text) <= 110 else text[:107] + "..."),
        ]
        if rank:
            cells.insert(0, f"#{rank[message.id]}" if message.id in rank else "")
        table.add_row(*cells, style="bold" if message.id in rank else None)
    return table


def _threads_table(title: str, threads: Sequence[Thread]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("id", "title", "created_at", "updated_at"):
        table.add_column(column, no_wrap=True)
    for thread in threads:
        if thread.created_at is None or thread.updated_at is None:
            raise ValidationError("thread.created_at", "a stored thread has its times; this one has none", "R-TIME")
        table.add_row(
            thread.id, thread.title, f"{thread.created_at:%Y-%m-%d %H:%M}", f"{thread.updated_at:%Y-%m-%d %H:%M:%S}"
        )
    return table


async def run_session(memory: Memory, conversation: Conversation, console: Console) -> dict[str, Any]:
    """Show one session of use on ``conversation``; returns key figures."""
    resource = conversation.resource_id
    speaker_b = conversation.speakers[1]
    facts: dict[str, Any] = {}

    page = await memory.list_threads(ThreadFilter(resource_id=resource), page=0, per_page=5)
    console.print(
        _threads_table(
            f"1. list_threads(resource={resource!r}, per_page=5): page {page.page}, "
            f"total {page.total}, has_more {page.has_more}",
            page.items,
        )
    )
    facts["threads_total"] = page.total

    longest = max(conversation.threads, key=lambda t: sum(1 for m in conversation.messages if m.thread_id == t.id))
    latest = conversation.threads[-1]
    recent = await memory.recall(latest.id, resource_id=resource, per_page=6)
    console.print(
        _messages_table(
            f"2. recall({latest.id!r}, per_page=6): newest 6 of {recent.total}, oldest first, "
            f"has_more {recent.has_more}",
            recent.messages,
        )
    )

    if latest.created_at is None:
        raise ValidationError("message.created_at", "a stored message has its time; this one has none", "R-TIME")
    window = DateRange(start=latest.created_at + timedelta(seconds=2), end=latest.created_at + timedelta(seconds=5))
    dated = await memory.recall(
        latest.id,
        resource_id=resource,
        per_page=10,
        filter=MessageFilter(date_range=window),
        order_by=OrderBy("created_at", "ASC"),
    )
    console.print(
        _messages_table(
            f"3. date-range recall: created_at in [{window.start:%H:%M:%S}, {window.end:%H:%M:%S}] "
            f"-> total {dated.total}",
            dated.messages,
        )
    )

    spoken = await memory.recall(
        longest.id, resource_id=resource, per_page=4, filter=MessageFilter(metadata={"speaker": speaker_b})
    )
    console.print(
        _messages_table(
            f"4. metadata filter {{speaker: {speaker_b!r}}} in {longest.id!r}: newest 4 of {spoken.total}",
            spoken.messages,
        )
    )
    facts["speaker_total"] = spoken.total

    in_longest = [m for m in conversation.messages if m.thread_id == longest.id]
    target = in_longest[len(in_longest) // 2]
    around = await memory.list_messages(
        longest.id, resource_id=resource, per_page=0, include=[Include(target.id, with_previous=2, with_next=2)]
    )
    console.print(
        _messages_table(
            f"5. include window: 2 before and 2 after {target.id!r} (the hit, in bold)", around.items, [target.id]
        )
    )

    walked: list[str] = []
    pages = 0
    cursor: str | None = None
    while True:
        step = await memory.list_messages(longest.id, resource_id=resource, per_page=10, cursor=cursor)
        pages += 1
        walked.extend(m.id for m in step.items)
        cursor = step.next_cursor
        if cursor is None:
            break
    console.print(
        f"[bold]6. cursor walk[/] through {longest.id!r}: {pages} pages of 10, {len(walked)} messages, "
        f"{len(set(walked))} distinct, first {walked[0]!r}, last {walked[-1]!r}"
    )
    facts["walked"] = len(walked)

    note = f"# {conversation.speakers[0]}\n- talks with {speaker_b}\n- threads so far: {page.total}"
    await memory.update_working_memory(latest.id, note, resource_id=resource)
    stored = await memory.get_working_memory(latest.id, resource_id=resource)
    console.print(f"[bold]7. working memory[/] (resource scope) after update_working_memory:\n{stored}")
    facts["working_memory"] = stored

    question = next((q for q in conversation.questions if q.evidence), None)
    if question is not None and memory.vector is not None and memory.embedder is not None:
        found = await memory.recall(
            latest.id,
            resource_id=resource,
            vector_search_string=question.question,
            per_page=0,
            thread_config={"semantic_recall": {"top_k": 5, "message_range": 1, "scope": "resource"}},
        )
        evidence = frozenset(question.evidence)
        hit = sorted(evidence & set(found.semantic_hits))
        console.print(
            _messages_table(
                f"8. {recall_kind(memory.embedder)} ({memory.embedder.name}) for {question.question!r} "
                f"(answer: {question.answer}); top 5 hits ±1 message "
                f"(hit = rank, in bold), ★ = evidence; evidence found among hits: {len(hit)}/{len(evidence)}",
                found.messages,
                found.semantic_hits,
                evidence,
            )
        )
        facts["evidence_found"] = len(hit)
    return facts


WM_TEMPLATE = "# User\n- name:\n- interests:\n"


def _peak_rss_mib() -> float:
    # ru_maxrss is KiB on Linux.
    return _rusage.getrusage(_rusage.RUSAGE_SELF).ru_maxrss / 1024


def demo(
    db: Annotated[Path, typer.Option(help="SQLite file for the embedded default storage.")] = Path(
        "memory-core-demo.db"
    ),
    locomo: Annotated[
        Path | None,
        typer.Option(
            help="LoCoMo data: the data set's locomo10.json, or a folder of LoCoMo *.json files "
            "(default: the shipped sample)."
        ),
    ] = None,
    storage: Annotated[
        str | None,
        typer.Option(
            help="Storage URL instead of --db (e.g. redis://...): used in a namespace of its own, removed at the end."
        ),
    ] = None,
    vector: Annotated[
        str | None,
        typer.Option(
            help="Vector URL (default: the in-process Qdrant engine next to --db; a URL gets a namespace of its own, "
            "removed at the end); 'none' = off."
        ),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(help="lexical | minilm | minilm-torch (default: minilm when installed, else lexical)"),
    ] = None,
    keep: Annotated[bool, typer.Option(help="Keep an existing --db file instead of starting fresh.")] = False,
) -> None:
    """Load conversations into the embedded default and show a session of use.

    The --db file and its vectors folder stay for you to look at; a URL given
    with --storage or --vector is used in a fresh namespace (a key prefix, a
    database, a file beside the URL's) that the demo removes when it ends. A
    failed demo removes whatever it created."""
    with user_errors():
        conversations = load_dir(locomo) if locomo is not None else load_sample()
        if storage is not None and vector is None:
            # The demo removes its --storage namespace, so its vectors go too:
            # the engine in a temporary folder, not a folder beside --db.
            vector = "qdrant::memory:"
        # Checked whether or not it is used (--vector none), before any file is made.
        model = None if embedder is None else command_embedder(embedder)
        files = DemoFiles([], [])
        work = None
        try:
            if storage is None or vector is None:
                # Never replaces a file the demo did not make (see prepare_demo_files).
                files = prepare_demo_files(db, database=storage is None, vectors=vector is None, keep=keep)
            work = _demo(
                # Both URLs absolute, as the banner shows them: pasted into a
                # later command from any folder they name these files.
                storage or f"sqlite:///{db.resolve()}",
                storage is not None,
                None if vector == "none" else vector or f"qdrant+path:///{vectors_folder(db).resolve()}",
                vector not in (None, "none"),
                model,
                conversations,
            )
            run_quietly(work)
            work_complete()  # the demo ran whole: a late Ctrl-C does not cut the clean-up below
        except SystemExit as ended:
            if ended.code != CLOSED_PIPE:  # the reader of stdout going away is no failure: the files stay
                remove_demo_files(files)
            else:
                drop_earlier_demo(files)
            raise
        except KeyboardInterrupt:
            work_complete()  # the outcome is decided: a second Ctrl-C does not cut the clean-up or the line
            if work is not None:
                work.close()  # cut before the loop ran it: no "never awaited" warning
            remove_demo_files(files)
            errors.print(f"[yellow]interrupted: {escape(DEMO_STOPPED)}[/]", soft_wrap=True)
            raise typer.Exit(INTERRUPTED) from None
        except BaseException:
            remove_demo_files(files)
            raise
        drop_earlier_demo(files)


DEMO_STOPPED = "the demo stopped and removed what it made (an earlier demo's files are as they were); nothing to resume"
"""The demo's line after a Ctrl-C."""


DEMO_NAMESPACE_PREFIX = "memory_core_demo_"
"""Start of the namespace a demo run uses on a --storage or --vector URL
(then 8 random hex digits); the run removes it when it ends."""


async def _demo(
    storage_url: str,
    own_storage_namespace: bool,
    vector_url: str | None,
    own_vector_namespace: bool,
    model: Embedder | None,
    conversations: list[Conversation],
) -> None:
    """Run the demo; a URL flagged ``own_*_namespace`` gets a fresh namespace
    destroyed at the end, whether the demo succeeds or fails (the banner
    names it only then). ``model`` None: Memory's default embedder; without
    a vector store, none is used."""
    started = time.perf_counter()
    embedder = model if vector_url else None
    namespace = f"{DEMO_NAMESPACE_PREFIX}{uuid.uuid4().hex[:8]}"
    async with AsyncExitStack() as stack:
        # An error about a URL names the option that gave it (a --vector folder that is missing: --vector).
        with url_role("--storage" if own_storage_namespace else "--db"):
            store = await connect(storage_url, **({"namespace": namespace} if own_storage_namespace else {}))
        stack.push_async_callback(store.destroy if own_storage_namespace else store.close)
        vectors = None
        if vector_url:
            with url_role("--vector" if own_vector_namespace else "--db"):
                vectors = await connect_vector(vector_url, **({"namespace": namespace} if own_vector_namespace else {}))
            # Every vector adapter subclasses BaseVectorStore, which can destroy its namespace.
            if own_vector_namespace and isinstance(vectors, BaseVectorStore):
                stack.push_async_callback(vectors.destroy)
            else:
                stack.push_async_callback(vectors.close)
        config = MemoryConfig(
            last_messages=10,
            # Semantic recall needs a vector store (Memory refuses it otherwise).
            semantic_recall=SemanticRecall(top_k=5, message_range=1, scope="resource") if vectors else False,
            working_memory=WorkingMemory(enabled=True, scope="resource", template=WM_TEMPLATE),
        )
        # The stack closes or destroys the stores, not Memory. Vectors at a
        # --vector URL are removed at the end anyway, so in-memory ones are fine.
        memory = Memory(
            store, vectors, embedder, config, owns_stores=False, allow_volatile_vectors=own_vector_namespace
        )
        print_banner(console, storage_url, vector_url, memory.embedder)
        if own_storage_namespace or own_vector_namespace:
            console.print(f"[bold]namespace:[/] {namespace} (removed when the demo ends)")
        report = await load_conversations(memory, conversations, console)
        rate = report.messages / report.seconds if report.seconds else float("inf")
        console.print(
            f"loaded {amount(report.resources, 'resources')}, {amount(report.threads, 'threads')}, "
            f"{amount(report.messages, 'messages')} "
            f"in {report.seconds:.2f} s ({rate:,.0f} messages/s)"
        )
        await run_session(memory, conversations[0], console)
    console.rule(f"done in {time.perf_counter() - started:.2f} s wall, peak RSS {_peak_rss_mib():.0f} MiB")
