"""``memory-core export``, ``import`` and ``copy``: move a store's data
through the ``memory-core/jsonl`` format (:mod:`memory_core.transfer`).

Each command checks its arguments and URLs (scheme known, adapter installed,
URL well formed, source and destination not one store however spelled, a
``--vector`` store that keeps what it is given) before it opens a store; a
user error is one red line and exit 2. ``copy`` exits 1 when the
verification finds a difference, naming the first differing thread.
``--resource`` naming a resource the source does not hold (no record, no
thread) is a yellow hint on stderr, not an error: the export (or copy) is
valid and empty and the exit code 0. Ctrl-C
leaves what was written complete record by record and message batch by
batch (:func:`~memory_core.transfer.import_lines` says what a reader may see
meanwhile): run the same command again to resume (exit 130 meanwhile); ``export -o FILE`` writes a temporary
file beside FILE and renames it at the end, so FILE is whole or absent; a
character device or FIFO (``-o /dev/null``, a named pipe) cannot be replaced
that way and is written directly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from pathlib import Path
from typing import Annotated, BinaryIO, TextIO, cast

import anyio
import typer
from rich.markup import escape

from memory_core.cli.host import (
    INTERRUPTED,
    advice_command,
    errors,
    fail,
    naming_path,
    run_interruptible,
    user_errors,
    work_complete,
)
from memory_core.cli.progress import tracked
from memory_core.cli.resources import absent_resource_hint
from memory_core.cli.stores import command_embedder, command_storage, command_vector, copy_storages
from memory_core.embedders import Embedder
from memory_core.errors import ValidationError
from memory_core.options import hide_password
from memory_core.storage import Storage
from memory_core.transfer import (
    ImportReport,
    Reembedder,
    TransferError,
    check_copy_target,
    check_fits,
    copy_store,
    export_lines,
    import_lines,
    reembedder,
    verify_lines,
)
from memory_core.validation import check_id
from memory_core.vector import BaseVectorStore, VectorStore
from memory_core.wording import counted

__all__ = ["copy", "export", "import_"]

VERIFY_FAILED = 1
"""Exit code of ``copy`` when the two sides differ after the copy."""

# Progress and messages go to stderr: stdout carries the export.
_err = errors


_ELSEWHERE = "give another --output path, or remove the file first"


_STANDARD_STREAM = "-"
"""``--output -`` / ``--input -``: stdout / stdin, the Unix convention (``./-`` names a file called ``-``)."""


def _file_or_stream(value: str | None) -> Path | None:
    """The file an ``--output`` or ``--input`` names; None for the standard
    stream: the option left out, or :data:`_STANDARD_STREAM`."""
    return None if value is None or value == _STANDARD_STREAM else Path(value)


def _check_resource(resource: str | None) -> None:
    if resource is not None:
        check_id(resource, "--resource")


async def _hint_if_absent(storage: Storage, resource: str | None, outcome: str) -> None:
    """Say on stderr that ``--resource`` named a resource the source does not
    hold, naming close ids (:func:`~memory_core.cli.resources.absent_resource_hint`).
    Not an error: the export is a valid, empty one and the exit code stays 0,
    so a script exporting resources that may have been erased keeps working,
    and a mistyped id is still visible."""
    hint = await absent_resource_hint(storage, resource, outcome)
    if hint is not None:
        _err.print(f"[yellow]hint: {escape(hint)}[/]", soft_wrap=True)


async def _absent(store: Storage | VectorStore | None) -> bool:
    """Whether the store a destination URL names is not there yet (its
    ``preflight(must_exist=True)`` refuses it; reads only, before the
    store is opened): the command's open creates it, and an import or copy
    that writes nothing removes it again (:func:`_unless_written`)."""
    if store is None or not isinstance(store, (Storage, BaseVectorStore)):
        return False
    try:
        await store.preflight(must_exist=True)
    except ValidationError:
        return True
    return False


@asynccontextmanager
async def _unless_written(
    store: Storage | VectorStore | None, new: bool, report: ImportReport, removed: list[str]
) -> AsyncIterator[None]:
    """``store`` opened for the block (nothing for None) and closed after
    it; when the block (or the open itself) ends by an error or a Ctrl-C
    before the first record was written (``report``), a store this
    command created (``new``: :func:`_absent` said so) is destroyed, file
    or folder and all (its name added to ``removed``), so an interrupted
    or refused import or copy leaves no new destination behind. (A
    Ctrl-C inside the in-process Qdrant engine's own open may leave its
    folder: the engine's thread still holds it; the line then does not
    claim it removed.)"""
    if store is None:
        yield
        return
    try:
        await store.open()
        yield
    except BaseException:
        if new and not report.may_have_written:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await cast(Storage | BaseVectorStore, store).destroy()
                removed.append("the --vector index" if isinstance(store, BaseVectorStore) else "the storage")
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await store.close()


@asynccontextmanager
async def _opened(
    store: VectorStore | None, embedder: Embedder | None, new: bool, report: ImportReport, removed: list[str]
) -> AsyncIterator[None]:
    """``store`` opened (nothing for None), refused when it holds vectors of
    another dimension than ``embedder`` makes (:func:`check_fits`; None:
    the embedder follows the index, nothing to refuse); removed again when
    ``new`` and the block wrote nothing (:func:`_unless_written`)."""
    async with _unless_written(store, new, report, removed):
        if store is not None and embedder is not None:
            await check_fits(store, embedder)
        yield


@asynccontextmanager
async def _settled(reindex: Reembedder | None) -> AsyncIterator[None]:
    """On the way out (an error, a Ctrl-C), let a re-embedding in flight
    finish before the stores close (:meth:`Reembedder.settle`): closing them
    under it would print its failures ("store is closed", "Shard is not
    initialized") beside the command's one line."""
    try:
        yield
    finally:
        if reindex is not None:
            await reindex.settle()


def _stopped(report: ImportReport, again: str, removed: list[str], behind: str = "") -> str:
    """What an interrupted import or copy says: nothing was written (and
    which new destination stores it removed: ``removed``), or the records
    written (whole records and message batches, in the input's order) and
    how to resume (``again``; ``behind``: what the rerun also repairs)."""
    landing = (
        f"; a batch of {report.in_flight:,} messages being written landed whole or not at all (the rerun tells)"
        if report.in_flight
        else ""
    )
    if not report.may_have_written:
        them = "them" if len(removed) > 1 else "it"
        stores = " and ".join(sorted(removed, key=lambda store: "vector" in store))
        gone = f" (this run had created {stores} and removed {them})" if removed else ""
        return f"nothing was written{gone}; {again}"
    return (
        f"written before the stop: {counted(report.written)}, each record and message batch whole{landing}, "
        f"the rest not yet; to resume, {again}{behind}"
    )


def _device_or_pipe(path: Path) -> bool:
    """Whether ``path`` names a character device (``/dev/null``, a terminal)
    or a FIFO (a named pipe): an export writes it directly, as ``>`` does,
    since a temporary file renamed over it would replace the device or pipe."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


@contextmanager
def _whole_file(path: Path) -> Iterator[TextIO]:
    """A text file that appears at ``path`` only once the block has ended
    without an error, with the mode a newly created file gets (0666 less
    the umask): it is written under a temporary name in the same folder
    (``.<name>.<random>.partial``), then linked to ``path``, which never
    replaces a file made there meanwhile; on any error, Ctrl-C included, the
    temporary file is removed and ``path`` never existed.

    Raises:
        ValidationError: ``path`` was created while the block ran (field ``--output``).
    """
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        # mkstemp makes the file 0600; the export gets the mode of a file the
        # shell would create (0666 less the umask), as ``> FILE`` gives it.
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(descriptor, 0o666 & ~mask)
        with open(descriptor, "w", encoding="utf-8") as handle:
            yield handle
        try:
            os.link(partial, path)
        except FileExistsError:
            raise ValidationError("--output", f"{path} exists; export never overwrites a file: {_ELSEWHERE}") from None
    finally:
        os.unlink(partial)


@contextmanager
def _input_named(given: str | None) -> Iterator[None]:
    """A :class:`~memory_core.transfer.TransferError` about the input named
    as the user gave it: the file's path as typed (``stdin`` without one)
    for the input as a whole (``e.jsonl: not a memory-core/jsonl export
    (line 1: ...)``), followed by the line for a line (``e.jsonl line 7:
    ...``); the library's ``input`` names neither.

    Raises:
        ValidationError: the same reason and rule, the field so named.
    """
    try:
        yield
    except TransferError as exc:
        name = "stdin" if _file_or_stream(given) is None else str(given)
        raise ValidationError(name if exc.field == "input" else f"{name} {exc.field}", exc.reason, exc.rule) from None


@contextmanager
def _readable_twice(path: Path | None, interrupted: str) -> Iterator[BinaryIO]:
    """``path`` opened for reading bytes, or, for None, stdin copied into a
    temporary file (under ``TMPDIR``, removed on exit): an import reads its
    input twice, to verify it whole, then to write it. Call it outside the
    event loop: a Ctrl-C while stdin is read (its writer slow or stalled)
    stops the read at once, as ``interrupted: <interrupted>`` and exit
    :data:`~memory_core.cli.host.INTERRUPTED` (within the loop the first
    Ctrl-C only cancels the task, which a blocked read never sees).

    Raises:
        typer.Exit: Ctrl-C while stdin was read.
    """
    if path is not None:
        with path.open("rb") as file:
            yield file
        return
    with tempfile.TemporaryFile() as spool:
        try:
            with naming_path("stdin"):
                shutil.copyfileobj(sys.stdin.buffer, spool)
        except KeyboardInterrupt:
            work_complete()  # the outcome is decided: a second Ctrl-C does not cut the line
            _err.print(f"[yellow]interrupted: {escape(interrupted)}[/]", soft_wrap=True)
            raise typer.Exit(INTERRUPTED) from None
        spool.seek(0)
        yield spool


_EMBEDDER_HELP = (
    "With --vector: lexical | minilm | minilm-torch (default: the built-in one the index was built with, "
    "else minilm if installed)."
)


def _reembedding(
    storage: Storage, vector: str | None, embedder: str | None
) -> tuple[VectorStore | None, Embedder | None, Reembedder | None]:
    """The vector store of ``--vector`` (built, not opened), the embedder
    ``--embedder`` names (None: the one the index shows, else the default,
    settled by the re-embed hook) and that hook; checked before any I/O.

    Raises:
        ValidationError: ``--embedder`` without ``--vector``, an unknown
            embedder, or a vector store that is not persistent.
        ImportError: an embedder whose extra is not installed.
    """
    if vector is None:
        if embedder is not None:
            raise ValidationError(
                "--embedder",
                "goes with --vector (the store to re-embed into); add --vector URL or leave out --embedder",
            )
        return None, None, None
    # None: the built-in embedder the index shows, else the default, as Memory settles it.
    model = None if embedder is None else command_embedder(embedder)
    vectors = command_vector(vector, "--vector", must_exist=False)
    return vectors, model, reembedder(storage, vectors, "--vector", model)


def _reembedded_note(reindex: Reembedder) -> str:
    """The closing line of a transfer with ``--vector``: the embedder used."""
    model = reindex.embedder
    return f"re-embedded with {model.name} ({model.dimension} dimensions): recall must use the same embedder"


def export(
    url: Annotated[str, typer.Argument(help="Storage URL to export from.")],
    resource: Annotated[
        str | None, typer.Option(help="Export only this resource (one it does not hold: a hint, an empty export).")
    ] = None,
    given_output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help=(
                "Write here instead of stdout ('-': stdout). A file is written whole or not at all "
                "(a temporary file beside it, renamed at the end) and never overwritten; a character "
                "device or FIFO (/dev/null, a named pipe) is written directly."
            ),
        ),
    ] = None,
) -> None:
    """Write a store (every resource it holds, or one) as memory-core/jsonl to stdout."""
    output = _file_or_stream(given_output)
    direct = output is not None and _device_or_pipe(output)
    with user_errors():
        storage = command_storage(url, "URL", must_exist=True)
        _check_resource(resource)
        if output is not None and not direct:
            if output.is_dir():
                fail(f"--output {output} is a folder: give a file path, for example {output / 'export.jsonl'}")
            if output.exists():
                fail(f"--output {output} exists; export never overwrites a file: {_ELSEWHERE}")
            if not output.parent.is_dir():
                fail(f"--output: folder {output.parent} does not exist; create it first (mkdir -p {output.parent})")

        # A FIFO's open waits for its reader: here, where Ctrl-C ends it as any wait of the command.
        # A write that fails (a full disk, /dev/full) names the file, or stdout.
        with (
            naming_path("stdout" if output is None else output),
            output.open("w", encoding="utf-8") if output is not None and direct else nullcontext() as device,
        ):

            async def work() -> None:
                async with storage:
                    with (
                        nullcontext(sys.stdout)
                        if output is None
                        else nullcontext(device)
                        if device is not None
                        else _whole_file(output) as target,
                        tracked("export", _err, "records") as progress,
                    ):
                        async for line in export_lines(storage, resource):
                            target.write(line)
                            target.write("\n")
                            progress.done(progress.count + 1)
                        # A write that fails (a full disk) fails here, named, not unseen at exit.
                        target.flush()
                    work_complete()  # the export is in place: a Ctrl-C from here must not call it unwritten
                    await _hint_if_absent(storage, resource, "nothing was exported")

            whole = output is not None and not direct
            run_interruptible(
                work(),
                f"{output} was not written; run the export again" if whole else "run the export again",
                # a Ctrl-C just as the file was put in place: the export is whole all the same
                complete_if=(lambda: "written" if output is not None and output.exists() else None) if whole else None,
            )


def import_(
    url: Annotated[str, typer.Argument(help="Storage URL to import into.")],
    given_input: Annotated[
        str | None, typer.Option("--input", "-i", help="Read this file instead of stdin ('-': stdin).")
    ] = None,
    vector: Annotated[str | None, typer.Option(help="Vector URL: re-embed each imported resource into it.")] = None,
    embedder: Annotated[
        str | None,
        typer.Option(help=_EMBEDDER_HELP),
    ] = None,
) -> None:
    """Import memory-core/jsonl from stdin; records already there are skipped.

    The input is checked whole first (header, every record, the trailer's
    digests; stdin is kept in a temporary file meanwhile), before the
    destination is opened: a file that fails changes nothing."""
    input = _file_or_stream(given_input)
    with user_errors():
        storage = command_storage(url, "URL", must_exist=False)
        if input is not None and not input.is_file():
            fail(f"--input {input} is not a file; give the path of an export (or pipe it to stdin without --input)")
        vectors, model, reindex = _reembedding(storage, vector, embedder)
        again = (
            "run the import again on the same file"
            if input is not None
            else "pipe the same export into the same import again"
        )
        # Until the destination is opened nothing was written (nor created).
        unwritten = f"nothing was written (the input was being checked; the destination was not opened); {again}"
        writing = False
        report = ImportReport()
        new = [False, False]  # storage, --vector: created by this import
        removed: list[str] = []  # what of them an unwritten run removed

        async def work(source: BinaryIO) -> None:
            nonlocal writing
            with _input_named(given_input):
                # The whole file is checked before the destination is opened
                # (which may create it): a failed import changes nothing.
                await verify_lines(source)
                source.seek(0)
                new[:] = [await _absent(storage), await _absent(vectors)]
                writing = True
                # Storage first (what is written first), then the index; each
                # created here is removed again when nothing is written.
                async with (
                    _unless_written(storage, new[0], report, removed),
                    _opened(vectors, model, new[1], report, removed),
                    _settled(reindex),
                ):
                    with tracked("import", _err) as progress:
                        await import_lines(
                            storage,
                            source,
                            on_total=progress.total,
                            on_progress=progress.done,
                            on_resource=reindex,
                            report=report,
                        )
                    # Every record is committed: closing the stores (seconds for
                    # a vector store) finishes even after a Ctrl-C, and exit 0.
                    work_complete()
                    _err.print(f"imported: written {counted(report.written)}; already there {counted(report.skipped)}")
                    closing = (
                        _reembedded_note(reindex) if reindex else _no_vectors_note(url, report.written["messages"])
                    )
                    if closing:
                        _err.print(closing)

        rerun = again + ("" if input is not None else " (records already there are skipped)")
        behind = (
            ""
            if vector is None
            else (
                " (the --vector index may be behind what was written, check-index says so: "
                "the rerun re-embeds every resource it reads and repairs it)"
            )
        )
        # Bytes, so a line that is not UTF-8 is a numbered error, not a traceback.
        with _readable_twice(input, unwritten) as source:
            run_interruptible(work(source), lambda: _stopped(report, rerun, removed, behind) if writing else unwritten)


def _no_vectors_note(url: str, messages: int) -> str:
    """The closing line of an ``import`` or ``copy`` without ``--vector``
    that wrote messages: recall's vector index was not filled, and the
    command that builds it (``reindex --new``: without it, ``reindex``
    refuses a ``--vector`` naming no index as a probable typo). Empty when
    no message was written (a rerun: the index was dealt with before, or
    not wanted)."""
    if not messages:
        return ""
    return (
        "no vector index was filled (no --vector): recall finds these messages by meaning only once one is built; "
        f"build it with {advice_command('reindex', hide_password(url), '--new', '--vector', 'VECTOR_URL')} "
        "(VECTOR_URL: the new or empty vector store to build it in)"
    )


def copy(
    source: Annotated[str, typer.Argument(help="Storage URL to copy from.")],
    destination: Annotated[str, typer.Argument(help="Storage URL to copy into.")],
    resource: Annotated[str | None, typer.Option(help="Copy only this resource.")] = None,
    vector: Annotated[str | None, typer.Option(help="Vector URL: re-embed each copied resource into it.")] = None,
    embedder: Annotated[
        str | None,
        typer.Option(help=_EMBEDDER_HELP),
    ] = None,
) -> None:
    """Copy a store into another, then verify counts and per-thread digests."""
    with user_errors():
        src, dst = copy_storages(source, destination)
        _check_resource(resource)
        vectors, model, reindex = _reembedding(dst, vector, embedder)
        partial = ImportReport()
        new = [False, False]  # DESTINATION, --vector: created by this copy
        removed: list[str] = []  # what of them an unwritten run removed

        async def work() -> None:
            new[:] = [await _absent(dst), await _absent(vectors)]
            # A refused embedder or destination, or a Ctrl-C before the first
            # record, removes what this copy created (_unless_written).
            async with (
                src,
                _unless_written(dst, new[0], partial, removed),
                _opened(vectors, model, new[1], partial, removed),
                _settled(reindex),
            ):
                try:  # before anything is written
                    await check_copy_target(src, dst, resource)
                except ValidationError as exc:
                    if exc.field != "destination":
                        raise
                    fail(f"DESTINATION {hide_password(destination)} {exc.reason}")
                with tracked("copy", _err) as progress:
                    report = await copy_store(
                        src,
                        dst,
                        resource,
                        on_total=progress.total,
                        on_progress=progress.done,
                        on_resource=reindex,
                        report=partial,
                    )
                await _hint_if_absent(src, resource, "nothing was copied")
                work_complete()  # copied and verified: closing the stores finishes after a Ctrl-C
            if report.difference is not None:
                difference = report.difference.between("the source", "the destination")
                _err.print(f"[red]verification failed: {escape(difference)}[/]", soft_wrap=True)
                raise typer.Exit(VERIFY_FAILED)
            _err.print(
                f"copied and verified: {counted(report.imported.trailer['counts'])}; "
                f"written {counted(report.imported.written)}; already there {counted(report.imported.skipped)}"
            )
            written = report.imported.written["messages"]
            closing = _reembedded_note(reindex) if reindex else _no_vectors_note(destination, written)
            if closing:
                _err.print(closing)

        behind = "" if vector is None else " (the --vector index may be behind: the rerun re-embeds and repairs it)"
        run_interruptible(work(), lambda: _stopped(partial, "run the copy again", removed, behind))
