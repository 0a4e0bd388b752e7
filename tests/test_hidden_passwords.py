"""A URL passed where an object goes is named in the error with its password
hidden: error messages end up in logs (trial: ``Memory(url)`` and the seams
repeated ``postgresql://app:S3cret@...`` twice)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest

from memory_core import Memory, ValidationError
from memory_core.options import hide_password

URL = "postgresql://app:S3cretPassw0rd@127.0.0.1:5432/test?schema=x"
CARELESS: Any = URL  # what a user passes where an object goes


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (URL, "postgresql://app:***@127.0.0.1:5432/test?schema=x"),
        ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
        ("mongodb://alice:s3cret@h1,h2/app", "mongodb://alice:***@h1,h2/app"),
        ("mongodb://h/app", "mongodb://h/app"),
        ("sqlite:///tmp/a@b.db", "sqlite:///tmp/a@b.db"),
        ("redis://user@h", "redis://user@h"),
        ("postgresql://u:pw@[bad/x", "***@[bad/x"),
        ("not a url", "not a url"),
    ],
)
def test_hide_password(url: str, shown: str) -> None:
    assert hide_password(url) == shown


def _calls() -> list[Callable[[], Any]]:
    calls: list[Callable[[], Any]] = [lambda: Memory(CARELESS), lambda: Memory(CARELESS, CARELESS)]
    if importlib.util.find_spec("agents") is not None:
        from memory_core.integrations.openai_agents import MemoryCoreSession

        calls.append(lambda: MemoryCoreSession("chat", CARELESS))
    if importlib.util.find_spec("pydantic_ai") is not None:
        from memory_core.integrations.pydantic_ai import MessageHistory

        calls.append(lambda: MessageHistory(CARELESS, "u"))
    return calls


@pytest.mark.parametrize("call", _calls())
def test_a_url_in_the_wrong_place_is_named_without_its_password(call: Callable[[], Any]) -> None:
    with pytest.raises(ValidationError) as caught:
        call()
    assert "S3cret" not in str(caught.value)
    assert "app:***@127.0.0.1" in str(caught.value)
