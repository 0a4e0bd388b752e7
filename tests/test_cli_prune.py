"""``memory-core prune``: the retention command on a real SQLite file."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_core import Thread, connect
from memory_core.cli import app
from memory_core.cli.prune import parse_age
from memory_core.errors import ValidationError

pytest.importorskip("memory_core_sqlite")

OLD = datetime(2025, 1, 1, tzinfo=UTC)


def _seed(url: str) -> None:
    async def seed() -> None:
        async with await connect(url) as store:
            await store.save_thread(Thread("stale", "r1", created_at=OLD))
            await store.save_thread(Thread("live", "r2", created_at=OLD))
            await store.save_messages(
                [
                    {"id": "s1", "thread_id": "stale", "role": "user", "content": "a", "created_at": OLD},
                    {"id": "l1", "thread_id": "live", "role": "user", "content": "b", "created_at": OLD},
                    {"id": "l2", "thread_id": "live", "role": "user", "content": "c"},  # now
                ]
            )

    asyncio.run(seed())


def _state(url: str) -> tuple[list[str], list[str]]:
    async def read() -> tuple[list[str], list[str]]:
        async with await connect(url) as store:
            threads = sorted(t.id for t in (await store.list_threads(per_page=False)).items)
            messages = sorted(m.id for m in await store.get_messages(["s1", "l1", "l2"]))
            return threads, messages

    return asyncio.run(read())


def test_prune_messages_dry_run_then_for_real(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    _seed(url)
    dry = CliRunner().invoke(app, ["prune", url, "--older-than", "30d", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("would remove 2 messages from 2 threads, created before ")
    assert dry.stdout.rstrip().endswith("in the whole store")
    assert _state(url) == (["live", "stale"], ["l1", "l2", "s1"])
    done = CliRunner().invoke(app, ["prune", url, "--older-than", "30d", "--resource", "r2"])
    assert done.exit_code == 0 and done.stdout.rstrip().endswith("in resource 'r2'")
    assert _state(url) == (["live", "stale"], ["l2", "s1"])


@pytest.mark.parametrize(
    ("resource", "says"),
    [
        ("r 2", "did you mean 'r2'?"),
        ("nobody", "it holds 'r1', 'r2': give one of its resource ids"),
    ],
)
def test_prune_of_a_resource_the_store_lacks_says_so_and_names_close_ids(
    resource: str, says: str, tmp_path: Path
) -> None:
    """Before: a mistyped ``--resource`` printed "removed 0 messages" and nothing else."""
    from tests.cli_run import cli

    url = f"sqlite:///{tmp_path / 'm.db'}"
    _seed(url)
    for dry_run, outcome in (["--dry-run"], "nothing would be pruned"), ([], "nothing was pruned"):
        result = cli("prune", url, "--older-than", "30d", "--resource", resource, *dry_run)
        assert result.returncode == 0, result.stderr
        hint = f"hint: the store holds no resource {resource!r} (no record, no thread): {outcome}; {says}"
        assert hint in " ".join(result.stderr.split()), result.stderr
    assert _state(url) == (["live", "stale"], ["l1", "l2", "s1"])
    present = cli("prune", url, "--older-than", "30d", "--resource", "r2", "--dry-run")
    assert present.returncode == 0 and "hint" not in present.stderr, present.stderr


def test_a_prune_that_empties_its_resource_gives_no_hint_that_it_was_absent(tmp_path: Path) -> None:
    """Before: the "holds no resource" hint was read after the prune, so a
    prune that removed the resource's last thread contradicted its own
    "removed 1 threads" line (an operator trial)."""
    from tests.cli_run import cli

    url = f"sqlite:///{tmp_path / 'm.db'}"
    _seed(url)
    result = cli("prune", url, "--older-than", "30d", "--threads", "--resource", "r1")  # its only thread
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("removed 1 thread ") and "hint" not in result.stderr, result.stderr


def test_prune_threads(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    _seed(url)
    done = CliRunner().invoke(app, ["prune", url, "--older-than", "4w", "--threads", "--batch-size", "1"])
    assert done.exit_code == 0 and done.stdout.startswith("removed 1 thread (1 message) last active before ")
    assert _state(url) == (["live"], ["l1", "l2"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--older-than", "30x"], "--older-than: must look like 30d"),
        (["--older-than", "0d"], "--older-than: must be more than zero"),
        (["--older-than", "999999999w"], "--older-than: too long: at most 999,999,999 days"),
        (["--older-than", "99999999999999999999d"], "--older-than: too long"),
        (["--older-than", "1d", "--threads", "--messages"], "give --threads or --messages, not both"),
        (["--older-than", "1d", "--resource", " "], "--resource: "),
        (["--older-than", "1d", "--batch-size", "0"], "--batch-size: must be an int from 1"),
        (["--older-than", "1d", "--vector", "nope://x"], "unknown vector store scheme 'nope'"),
    ],
)
def test_prune_user_errors_touch_nothing(args: list[str], says: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'e.db'}"
    _seed(url)
    result = CliRunner().invoke(app, ["prune", url, *args])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and result.output.count("\n") == 1 and says in result.output
    assert _state(url) == (["live", "stale"], ["l1", "l2", "s1"])


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_prune_refuses_a_before_in_the_future_and_writes_nothing(dry_run: list[str], tmp_path: Path) -> None:
    """Before: a yellow warning, then everything up to now was pruned (the
    whole store for a typo'd year)."""
    from tests.cli_run import cli

    db = tmp_path / "f.db"
    url = f"sqlite:///{db}"
    _seed(url)
    files = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    started = datetime.now(UTC)
    result = cli("prune", url, "--before", "2099-01-31T00:00:00", *dry_run)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    line = result.stderr.strip()
    assert line.startswith("error: --before 2099-01-31T00:00:00+00:00 is in the future (now "), line
    now = datetime.fromisoformat(line.split("(now ", 1)[1].split(")", 1)[0])
    assert started <= now <= datetime.now(UTC)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == files
    assert _state(url) == (["live", "stale"], ["l1", "l2", "s1"])


def test_prune_refuses_an_unknown_scheme() -> None:
    result = CliRunner().invoke(app, ["prune", "bogus://x", "--older-than", "1d"])
    assert result.exit_code == 2 and "unknown storage scheme 'bogus'" in result.output


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_prune_refuses_a_missing_sqlite_file_and_creates_none(dry_run: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    result = CliRunner().invoke(app, ["prune", f"sqlite:///{missing}", "--older-than", "1d", *dry_run])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: URL: ") and "typo.db does not exist" in result.output
    assert not missing.exists()


def test_parse_age_sums_units() -> None:
    assert parse_age("1d12h") == timedelta(days=1, hours=12)
    assert parse_age("90min") == timedelta(minutes=90)
    assert parse_age("1h30min15s") == timedelta(hours=1, minutes=30, seconds=15)
    for bad in ("", "d", "1.5d", "1d ", "-1d", "1y", "1mo", "90m", "1h30m", "1M", "1mins"):
        with pytest.raises(ValidationError):
            parse_age(bad)


@pytest.mark.parametrize("age", ["1m", "90m", "1d1m"])
def test_an_age_in_m_is_refused_as_minutes_or_months(age: str, tmp_path: Path) -> None:
    """Before: ``--older-than 1m`` was one minute, so a user who meant a
    month saw (and, without ``--dry-run``, got) every message but the
    newest minute's go. ``m`` is refused, naming ``min`` for minutes and
    ``d`` for a month; nothing is opened."""
    from tests.cli_run import cli

    url = f"sqlite:///{tmp_path / 'm.db'}"
    _seed(url)
    for dry_run in (["--dry-run"], []):
        done = cli("prune", url, "--older-than", age, *dry_run)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
        line = done.stderr
        assert line.startswith("error: --older-than: ") and "min" in line and "30d" in line, line
    assert _state(url) == (["live", "stale"], ["l1", "l2", "s1"])
    minutes = cli("prune", url, "--older-than", age.replace("m", "min"), "--dry-run")
    assert minutes.returncode == 0 and minutes.stdout.startswith("would remove 2 messages"), minutes.stderr


def test_prune_refuses_a_missing_sqlite_file_and_creates_nothing(tmp_path: Path) -> None:
    # A typo must not become an empty new database reported as "removed 0".
    missing = tmp_path / "typo" / "m.db"
    result = CliRunner().invoke(app, ["prune", f"sqlite:///{missing}", "--older-than", "1d"])
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.output and result.output.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
