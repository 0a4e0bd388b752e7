"""Every adapter checks its URL options before its driver sees them, with
one shared rule (:func:`memory_core.options.check_option_names`): a typo
is a ``ValidationError`` that names the option meant, never a driver's
``TypeError`` at connect nor an option silently ignored."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable

import pytest

from memory_core.errors import ValidationError
from memory_core.registry import build_storage, build_vector
from tests.cli_run import cli


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


@pytest.mark.parametrize(
    ("module", "url", "meant"),
    [
        ("memory_core_sqlite", "sqlite:///x.db?timout=5", "timeout"),
        ("memory_core_redis", "redis://127.0.0.1:1/0?prefx=abc", "prefix"),
        ("memory_core_redis", "redis://127.0.0.1:1/0?socket_timout=5", "socket_timeout"),
        ("memory_core_mongodb", "mongodb://127.0.0.1:1/db?conectTimeoutMS=5", "connecttimeoutms"),
        ("memory_core_postgres", "postgresql://u@127.0.0.1:1/db?schem=app", "schema"),
        ("memory_core_postgres", "postgresql://u@127.0.0.1:1/db?sslmod=require", "sslmode"),
    ],
)
def test_a_storage_url_option_typo_names_the_option_meant(module: str, url: str, meant: str) -> None:
    _needs(module)
    with pytest.raises(ValidationError, match=f"did you mean '{meant}'"):
        build_storage(url)  # no I/O: nothing listens on port 1


@pytest.mark.parametrize(
    ("module", "url", "meant"),
    [
        ("memory_core_qdrant", "qdrant+path:///vectors?overfech=2", "overfetch"),
        ("memory_core_qdrant", "qdrant://127.0.0.1:1?api_ky=k", "api_key"),
        ("memory_core_postgres", "postgresql://u@127.0.0.1:1/db?ef_serch=40", "ef_search"),
    ],
)
def test_a_vector_url_option_typo_names_the_option_meant(module: str, url: str, meant: str) -> None:
    _needs(module)
    with pytest.raises(ValidationError, match=f"did you mean '{meant}'"):
        build_vector(url)


def test_a_mongodb_option_pymongo_would_only_warn_about_is_refused() -> None:
    _needs("memory_core_mongodb")
    with pytest.raises(ValidationError, match="option 'prefx': unknown"):
        build_storage("mongodb://127.0.0.1:1/db?prefx=abc")


@pytest.mark.parametrize(
    ("module", "url"),
    [
        ("memory_core_redis", "redis://127.0.0.1:1/0?db=1&socket_timeout=5&prefix=p&cluster=false"),
        ("memory_core_mongodb", "mongodb://127.0.0.1:1/db?replicaSet=rs0&connectTimeoutMS=5&appName=a"),
        # PostgreSQL's session settings (any case), dotted (extension) settings and libpq's options.
        ("memory_core_postgres", "postgresql://u@127.0.0.1:1/db?schema=s&sslmode=disable&application_name=a"),
        ("memory_core_postgres", "postgresql://u@127.0.0.1:1/db?statement_timeout=5&DateStyle=ISO&timezone=UTC"),
        ("memory_core_postgres", "postgresql://u@127.0.0.1:1/db?pg_trgm.similarity_threshold=0.3&options=-c%20a%3D1"),
    ],
)
def test_driver_options_still_pass(module: str, url: str) -> None:
    _needs(module)
    build_storage(url)


@pytest.mark.parametrize("build", [build_storage, build_vector])
@pytest.mark.parametrize(
    ("query", "reason"),
    [
        # Before: passed to the server as a setting, which refused the connection (a BackendError).
        ("prefx=abc", "option 'prefx': unknown; postgresql accepts batch_size, "),
        ("statment_timeout=5", "option 'statment_timeout': unknown; did you mean 'statement_timeout'?"),
        ("search_path=app", "option 'search_path': is set by the store to its schema; name the schema with ?schema="),
        ("connect_timeout=5", "option 'connect_timeout': is a libpq parameter that asyncpg "),
    ],
)
def test_a_postgresql_url_option_no_one_reads_is_refused_before_connecting(
    build: Callable[[str], object], query: str, reason: str
) -> None:
    """Issue 26: every name is asyncpg's, the server's or the adapter's, or is refused."""
    _needs("memory_core_postgres")
    with pytest.raises(ValidationError) as caught:
        build(f"postgresql://u@127.0.0.1:1/db?{query}")
    assert str(caught.value).startswith(reason), caught.value
    if "unknown" in reason:
        assert "?options=-c%20name%3Dvalue" in str(caught.value) and "PostgreSQL URLs" in str(caught.value)


def test_the_redis_typo_on_the_command_line_is_one_red_line() -> None:
    _needs("memory_core_redis")
    done = cli("export", "redis://127.0.0.1:1/0?prefx=abc")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("error: ") and "did you mean 'prefix'?" in done.stderr, done.stderr
    assert "TypeError" not in done.stderr


@pytest.mark.parametrize(
    ("module", "build", "url", "meant"),
    [
        ("memory_core_sqlite", build_storage, "sqlit:///app1.db", "sqlite"),
        ("memory_core_postgres", build_storage, "postgress://u@127.0.0.1:1/db", "postgres"),
        ("memory_core_qdrant", build_vector, "qdrnt+path:///vectors", "qdrant+path"),
        ("memory_core", build_vector, "memroy://", "memory"),
    ],
)
def test_a_url_scheme_typo_names_the_scheme_meant(
    module: str, build: Callable[[str], object], url: str, meant: str
) -> None:
    """Issue 26: before, ``sqlit:///app1.db`` said only ``unknown storage
    scheme 'sqlit'`` while an option typo names the option meant."""
    _needs(module)
    said = f"scheme {url.split(':')[0]!r}: did you mean {meant!r}? "
    with pytest.raises(ValidationError, match=re.escape(said)):
        build(url)


def test_a_scheme_nothing_resembles_offers_no_guess() -> None:
    with pytest.raises(ValidationError) as caught:
        build_storage("bogus://x")
    assert "did you mean" not in str(caught.value) and "known: memory, " in str(caught.value)


def test_the_scheme_typo_on_the_command_line_is_one_red_line() -> None:
    _needs("memory_core_sqlite")
    done = cli("export", "sqlit:///app1.db")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("error: URL: unknown storage scheme 'sqlit': did you mean 'sqlite'? "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
