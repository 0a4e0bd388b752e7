"""``memory-core prune URL --older-than 30d`` (or ``--before TIME``): apply a
retention policy.

Registered as the ``prune`` command of the entry-point group
``memory_core.cli``. Everything is checked (age or cutoff, a ``--before`` in
the future being refused, flags, URLs, and
that a SQLite file exists: pruning never creates a store; a ``--vector``
store that keeps its points and already holds vectors, else the real index
would keep the pruned ones) before a store is opened; the cutoff is fixed
then and printed on stderr, again on Ctrl-C as the ``--before`` that resumes
the run. The run is :meth:`memory_core.Memory.prune` (with ``--vector``,
whose points go with their messages) or
:meth:`memory_core.storage.BaseStorage.prune`; semantics in
:mod:`memory_core.retention`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from memory_core.cli.host import advice_command, console, errors, fail, run_interruptible, user_errors, work_complete
from memory_core.cli.progress import tracked
from memory_core.cli.resources import absent_resource_hint
from memory_core.cli.stores import command_stores
from memory_core.errors import ValidationError
from memory_core.retention import MAX_BATCH, PruneReport, PruneTarget, RetentionPolicy
from memory_core.validation import check_datetime
from memory_core.wording import amount

if TYPE_CHECKING:
    from memory_core.storage import Storage
    from memory_core.vector import VectorStore

__all__ = ["parse_age", "prune"]

_UNITS = {"s": "seconds", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_AGE = re.compile(r"(\d+)([a-zA-Z]+)")
_FORM = "must look like 30d, 12h, 90min, 2w or 1d12h (units s, min, h, d, w)"


def parse_age(text: str) -> timedelta:
    """An age such as ``30d``, ``12h``, ``90min``, ``2w`` or ``1d12h`` (units
    s, min, h, d, w; summed) as a timedelta. ``m`` alone is no unit: minutes
    to some, months to others (``1m`` as one minute prunes nearly
    everything); the error names ``min`` and days.

    Raises:
        ValidationError: anything else, an age of zero, or one longer than
            ``timedelta`` holds (999,999,999 days) (field ``--older-than``).
    """
    parts = _AGE.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValidationError("--older-than", f"{_FORM}, got {text!r}")
    if any(unit == "m" for _, unit in parts):
        raise ValidationError(
            "--older-than",
            f"'m' could be minutes or months: write min for minutes (90min), days for months (30d), got {text!r}",
        )
    if unknown := [unit for _, unit in parts if unit not in _UNITS]:
        raise ValidationError("--older-than", f"{_FORM}; {unknown[0]!r} is not one, got {text!r}")
    age = timedelta(0)
    try:
        for number, unit in parts:
            age += timedelta(**{_UNITS[unit]: int(number)})
    except OverflowError:
        raise ValidationError("--older-than", f"too long: at most {timedelta.max.days:,} days, got {text!r}") from None
    if age <= timedelta(0):
        raise ValidationError("--older-than", "must be more than zero")
    return age


def prune(
    url: Annotated[str, typer.Argument(help="Storage URL (sqlite:///path, redis://..., mongodb://...).")],
    older_than: Annotated[
        str | None, typer.Option("--older-than", help="Age: 30d, 12h, 90min, 2w, 1d12h (s, min, h, d, w).")
    ] = None,
    before: Annotated[
        str | None,
        typer.Option(
            "--before", help="Or an absolute cutoff, ISO-8601 (the one an interrupted run printed, to resume it)."
        ),
    ] = None,
    resource: Annotated[str | None, typer.Option(help="Only this resource (default: the whole store).")] = None,
    threads: Annotated[
        bool, typer.Option("--threads", help="Delete whole threads whose last message is older (with messages).")
    ] = False,
    messages: Annotated[
        bool, typer.Option("--messages", help="Delete older messages, keep threads (the default).")
    ] = False,
    vector: Annotated[str | None, typer.Option(help="Vector store URL: its points go with their messages.")] = None,
    batch_size: Annotated[int, typer.Option(help=f"Records per read and delete (1-{MAX_BATCH}).")] = 500,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would go; delete nothing.")] = False,
) -> None:
    """Delete messages (or threads) older than an age or a cutoff; print what went.

    The cutoff is printed on stderr when the run starts and again on Ctrl-C
    (exit 130), as the ``--before`` that resumes the run with the same result.
    A ``--before`` in the future is a usage error (exit 2, nothing opened).
    A ``--resource`` the store does not hold gets a hint naming close ids."""
    with user_errors():
        if threads and messages:
            fail("give --threads or --messages, not both")
        if (older_than is None) == (before is None):
            fail("give --older-than AGE or --before TIME (one of them)")
        target: PruneTarget = "threads" if threads else "messages"
        if older_than is not None:
            # Fixed now, not when the store opens: the line below can then name it.
            age = RetentionPolicy(target, older_than=parse_age(older_than))
            cutoff = age.cutoff(datetime.now(UTC))
        else:
            # ISO-8601; without an offset, UTC (R-TIME, as the library reads it).
            cutoff = check_datetime(before, "--before")
            now = datetime.now(UTC)
            if cutoff > now:
                # Such a cutoff selects everything up to now (a typo'd year, a
                # local time read as UTC): refused, not run as a whole-store wipe.
                fail(
                    f"--before {cutoff.isoformat()} is in the future (now {now.isoformat()}); "
                    "give a past time, or --older-than AGE"
                )
        policy = RetentionPolicy(target, before=cutoff, resource_id=resource, batch_size=batch_size)
        # A missing SQLite file is a typo here, not an empty store to create.
        storage, vectors = command_stores(url, vector, "URL")
        resume = f"--before {cutoff.isoformat()}"
        if dry_run:
            errors.print(f"cutoff {cutoff.isoformat()}", soft_wrap=True)
        else:
            errors.print(f"cutoff {cutoff.isoformat()} (an interrupted run resumes with {resume})", soft_wrap=True)
        interrupted = f"whole batches were deleted or not; resume with {resume}"
        if vector is not None:
            drops = advice_command("reindex", url, "--vector", vector)
            interrupted += f" (the last batch's vectors may remain: {drops} drops them)"
        report, hint = run_interruptible(_prune(storage, vectors, policy, dry_run), interrupted)
        if hint is not None:
            errors.print(f"[yellow]hint: {escape(hint)}[/]", soft_wrap=True)
    verb = "would remove" if report.dry_run else "removed"
    scope = f"resource {report.resource_id!r}" if report.resource_id is not None else "the whole store"
    if report.target == "threads":
        what = f"{amount(len(report.threads), 'threads')} ({amount(report.message_count, 'messages')}) last active"
    else:
        what = f"{amount(report.message_count, 'messages')} from {amount(len(report.messages), 'threads')}, created"
    console.print(f"{verb} {what} before {report.cutoff.isoformat()} in {scope}", soft_wrap=True)


async def _prune(
    storage: Storage, vectors: VectorStore | None, policy: RetentionPolicy, dry_run: bool
) -> tuple[PruneReport, str | None]:
    """The report, and the hint when ``--resource`` named no resource."""
    from memory_core.embedders import LexicalHashEmbedder
    from memory_core.memory import Memory
    from memory_core.retention import PruneBatch

    # Pruning embeds nothing: the cheap embedder only satisfies Memory's pairing check.
    embedder = LexicalHashEmbedder() if vectors is not None else None
    async with Memory(storage, vectors, embedder) as memory:
        # Asked before pruning: a prune that empties the resource leaves none to find.
        outcome = "nothing would be pruned" if dry_run else "nothing was pruned"
        hint = await absent_resource_hint(storage, policy.resource_id, outcome)
        with tracked("prune", errors, "deletes") as progress:

            async def deleted(batch: PruneBatch) -> None:
                progress.done(progress.count + 1)

            report = await memory.prune(policy, dry_run=dry_run, after_batch=deleted)
        # Every batch is committed: a Ctrl-C while the stores close (seconds
        # for a vector store) no longer makes a finished prune exit 130.
        work_complete()
        return report, hint
