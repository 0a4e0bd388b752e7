"""The README's example adapter: the whole suite runs on it (its test class
is imported from the package, so pytest collects it here), plus what only
the toy has (URL and namespace checks, the file it leaves)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from memory_core_conformance.examples.toyfile import ToyFileStorage
from memory_core_conformance.examples.toyfile_conformance import TestToyFileConformance

from memory_core.errors import BackendError, ValidationError
from memory_core.models import Thread
from memory_core.storage import BaseStorage, ComposedStorage

__all__ = ["TestToyFileConformance"]


@pytest.mark.parametrize("namespace", ["", ".hidden", "a/b", "..", "x" * 101, 5])
def test_toyfile_rejects_namespaces_that_are_not_file_names(tmp_path: Path, namespace: object) -> None:
    with pytest.raises(ValidationError) as raised:
        ToyFileStorage(tmp_path, namespace=namespace)  # type: ignore[arg-type]
    assert raised.value.field == "namespace"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("url", ["memory://", "toyfile://", "toyfile:", "toyfile:///", "toyfile://host/folder"])
def test_toyfile_rejects_other_urls(url: str) -> None:
    with pytest.raises(ValidationError) as raised:
        ToyFileStorage.from_url(url)
    assert raised.value.field == "url"


@pytest.mark.anyio
async def test_toyfile_keeps_a_namespace_in_one_file_until_destroyed(tmp_path: Path) -> None:
    first = ToyFileStorage.from_url(f"toyfile:///{tmp_path}/data", namespace="n1")  # four slashes: absolute
    assert first.path == tmp_path / "data" / "n1.pickle" and not first.path.exists()
    assert ToyFileStorage.from_url("toyfile:///relative/data").folder == Path("relative/data")  # three: relative
    async with first:
        await first.save_thread(Thread("t1", "r1"))
    assert [p.name for p in (tmp_path / "data").iterdir()] == ["n1.pickle"]
    second = ToyFileStorage(tmp_path / "data", namespace="n1")
    got = await second.get_thread("t1")
    assert got is not None and got.resource_id == "r1"
    assert await ToyFileStorage(tmp_path / "data", namespace="n2").get_thread("t1") is None
    await second.destroy()
    assert list((tmp_path / "data").iterdir()) == []


def test_toyfile_implements_only_the_simple_primitives() -> None:
    """The suite's green run on the toy is the proof that a minimal adapter
    works: every contract method it does not write is composed by
    ComposedStorage (the working-memory write is BaseStorage's default)."""
    for name in (
        "_read",
        "_read_state",
        "_save_checked",
        "_save_thread_checked",
        "_delete_found",
        "_patch_checked",
        "_delete_resource",
    ):
        assert getattr(ToyFileStorage, name) is getattr(ComposedStorage, name), name
    assert ToyFileStorage._write_memory is BaseStorage._write_memory


@pytest.mark.anyio
async def test_toyfile_preflight_checks_the_file_and_creates_nothing(tmp_path: Path) -> None:
    await ToyFileStorage(tmp_path / "missing", namespace="n1").preflight()
    with pytest.raises(ValidationError) as raised:
        await ToyFileStorage(tmp_path, namespace="n1").preflight(must_exist=True)
    assert raised.value.field == "url"
    assert not await anyio.Path(tmp_path / "missing").exists() and not await anyio.Path(tmp_path / "n1.pickle").exists()
    (tmp_path / "n1.pickle").write_bytes(b"not a pickle")
    with pytest.raises(BackendError) as failed:
        await ToyFileStorage(tmp_path, namespace="n1").preflight(must_exist=True)
    assert (failed.value.backend, failed.value.operation) == ("toyfile", "open")
    async with ToyFileStorage(tmp_path, namespace="n2") as store:
        await store.save_thread(Thread("t1", "r1"))
    await ToyFileStorage(tmp_path, namespace="n2").preflight(must_exist=True)
