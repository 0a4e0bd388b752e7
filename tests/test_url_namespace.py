"""A ``namespace`` in a URL's query names the store ``connect(url,
namespace=...)`` opens, for programs and for every command (an operator
reaches a program's namespaced store), and is refused where it is ambiguous."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from memory_core import Thread, ValidationError, connect
from memory_core.options import url_namespace
from tests.cli_run import cli

pytest.importorskip("memory_core_sqlite")
pytestmark = pytest.mark.anyio


async def _seed(folder: Path) -> str:
    """A thread in namespace ``t1`` of ``memory.db``, none in the plain store; the plain URL."""
    url = f"sqlite:///{folder / 'memory.db'}"
    async with await connect(url, namespace="t1") as store:
        await store.save_thread(Thread("chat", "alice", title="namespaced"))
    async with await connect(url):
        pass
    return url


async def test_a_url_namespace_opens_the_keyword_namespace(tmp_path: Path) -> None:
    url = await _seed(tmp_path)
    for same in (f"{url}?namespace=t1", f"{url}?timeout=5&namespace=t1", f"{url}?namespace=t1&timeout=5"):
        async with await connect(same) as store:
            found = await store.get_thread("chat")
            assert found is not None and found.title == "namespaced"
    async with await connect(url) as plain:
        assert await plain.get_thread("chat") is None
    assert sorted([path.name async for path in anyio.Path(tmp_path).glob("*.db")]) == ["memory-t1.db", "memory.db"]


@pytest.mark.parametrize(
    ("query", "keyword", "says"),
    [
        ("?namespace=", None, "is empty in the URL"),
        ("?namespace=a&namespace=b", None, "is named 2 times in the URL"),
        ("?namespace=a", "b", "the URL names 'a' and the caller 'b'"),
    ],
)
async def test_an_ambiguous_url_namespace_is_refused_before_any_io(
    tmp_path: Path, query: str, keyword: str | None, says: str
) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}{query}"
    with pytest.raises(ValidationError, match="option 'namespace'") as caught:
        await connect(url, namespace=keyword)
    assert says in str(caught.value)
    assert not [path async for path in anyio.Path(tmp_path).iterdir()]


def test_url_namespace_keeps_the_rest_of_the_url_as_written() -> None:
    assert url_namespace("redis://h:1/0?prefix=a%2Fb&namespace=x#f") == ("redis://h:1/0?prefix=a%2Fb#f", "x")
    assert url_namespace("qdrant::memory:?namespace=x") == ("qdrant::memory:", "x")
    assert url_namespace("sqlite:///m.db?namespacex=1", "k") == ("sqlite:///m.db?namespacex=1", "k")
    assert url_namespace("sqlite:///m.db?namespace=t1", "t1") == ("sqlite:///m.db", "t1")


async def test_commands_reach_a_namespaced_store_and_check_refuses_one(tmp_path: Path) -> None:
    url = await _seed(tmp_path)
    exported = cli("export", f"{url}?namespace=t1")
    assert exported.returncode == 0, exported.stderr
    threads = [json.loads(line) for line in exported.stdout.splitlines() if '"kind":"thread"' in line]
    assert [thread["id"] for thread in threads] == ["chat"]
    checked = cli("check", f"{url}?namespace=t1")
    assert checked.returncode == 2
    assert "option 'namespace'" in checked.stderr and "namespaces of their own" in checked.stderr
    assert checked.stdout == ""
