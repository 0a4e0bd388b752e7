"""URL parsing, database naming, entry points and construction without I/O."""

from __future__ import annotations

import pytest
from memory_core_mongodb import DEFAULT_DATABASE, MongoStorage, database_name, supports_transactions
from memory_core_mongodb._url import url_database

from memory_core.errors import ValidationError
from memory_core.options import hide_password
from memory_core.registry import STORAGE_GROUP, known_schemes


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mongodb://localhost:27017", None),
        ("mongodb://localhost:27017/", None),
        ("mongodb://localhost/app", "app"),
        ("mongodb://user:p%40ss@h1:1,h2:2/app?replicaSet=rs0&w=majority", "app"),
        ("mongodb+srv://user:pw@cluster0.example.net/my_db?retryWrites=true", "my_db"),
        ("mongodb://h/?tls=true", None),
        ("MONGODB://h/Upper", "Upper"),
        ("mongodb://h/caf%C3%A9", "café"),
    ],
)
def test_database_from_url_path(url: str, expected: str | None) -> None:
    assert url_database(url) == expected


def test_database_precedence_option_then_path_then_default() -> None:
    assert database_name("mongodb://h/app") == "app"
    assert database_name("mongodb://h/app", database="other") == "other"
    assert database_name("mongodb://h") == DEFAULT_DATABASE == "memory_core"


def test_namespace_selects_a_separate_database() -> None:
    assert database_name("mongodb://h/app", namespace="tenant-7") == "app_tenant-7"
    assert database_name("mongodb://h", namespace="x") == "memory_core_x"
    assert database_name("mongodb://h/app", database="d", namespace="n_1") == "d_n_1"


@pytest.mark.parametrize("namespace", ["", "a.b", "a b", "x/y", "$x", "é", "n" * 49, 5])
def test_bad_namespace_is_refused(namespace: object) -> None:
    with pytest.raises(ValidationError, match="namespace"):
        database_name("mongodb://h/app", namespace=namespace)  # type: ignore[arg-type]


@pytest.mark.parametrize("database", ["a.b", "a b", "a$b", 'a"b', "a/b", "a\\b", "a*b", "a:b", "a|b", "a?b", "x" * 64])
def test_bad_database_name_is_refused(database: str) -> None:
    with pytest.raises(ValidationError, match="database"):
        database_name("mongodb://h", database=database)


def test_database_name_too_long_with_namespace() -> None:
    with pytest.raises(ValidationError, match="longer than 63"):
        database_name("mongodb://h/" + "d" * 40, namespace="n" * 30)


@pytest.mark.parametrize("url", ["postgres://h/db", "localhost:27017", "", "mongodb:/h"])
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="url"):
        MongoStorage.from_url(url)


def test_from_url_does_no_io_and_keeps_options() -> None:
    # Port 9 (discard) on a TEST-NET address: nothing listens; construction must not care.
    store = MongoStorage.from_url("mongodb://192.0.2.1:9/app", namespace="ns", transactions=False)
    assert store.database_name == "app_ns"
    assert store.transactions is False
    assert len(store._conns) == 0  # no client made yet


def test_repr_hides_the_password() -> None:
    store = MongoStorage.from_url("mongodb://alice:s3cret@h:27017/app")
    assert "s3cret" not in repr(store)
    assert "alice:***@h:27017" in repr(store)
    assert hide_password("mongodb://h/app") == "mongodb://h/app"


def test_entry_points_register_both_schemes() -> None:
    schemes = known_schemes(STORAGE_GROUP)
    assert schemes["mongodb"] == "memory_core_mongodb:MongoStorage"
    assert schemes["mongodb+srv"] == "memory_core_mongodb:MongoStorage"


@pytest.mark.parametrize(
    ("hello", "expected"),
    [
        ({"setName": "rs0", "logicalSessionTimeoutMinutes": 30}, True),
        ({"msg": "isdbgrid", "logicalSessionTimeoutMinutes": 30}, True),
        ({"isWritablePrimary": True, "logicalSessionTimeoutMinutes": 30}, False),
        ({"setName": "rs0"}, False),
    ],
)
def test_transaction_support_from_hello(hello: dict[str, object], expected: bool) -> None:
    assert supports_transactions(hello) is expected
