"""The awaitable that ``connect``, ``connect_vector`` and ``Memory.open`` return.

Each of them opens something and is awaited once (``storage = await
connect(url)``); what it returns is the async context manager. Written the
other way, ``async with Memory.open(url) as memory`` or ``storage =
connect(url)`` without ``await``, a plain coroutine fails with Python's
words about coroutines (``'coroutine' object does not support the
asynchronous context manager protocol``, ``'coroutine' object has no
attribute 'save_thread'``) and a "never awaited" warning. :class:`Opening`
is that coroutine, wrapped: awaited (or run by ``asyncio.run``,
``create_task``, ``gather``) it is the coroutine itself; entered with
``async with``, or asked for an attribute of what it opens, it raises
:class:`~memory_core.errors.AwaitError` giving the right form.
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from types import TracebackType
from typing import Any, Generic, NoReturn, TypeVar

from memory_core.errors import AwaitError

__all__ = ["Opening"]

T = TypeVar("T")


class Opening(Coroutine[Any, Any, T], Generic[T]):
    """A coroutine that opens a ``T`` (a storage, a vector store, a Memory).

    A :class:`collections.abc.Coroutine` (``asyncio.iscoroutine`` is true),
    so ``await``, ``asyncio.run``, ``create_task`` and ``gather`` take it as
    they take the coroutine it wraps.

    Args:
        coroutine: the coroutine that opens and returns the ``T``.
        call: the call as the user wrote it (``"memory_core.connect(url)"``).
        name: the name the right form gives the result (``"storage"``).
        opened: the class of what it opens, whose public attributes read
            from this object are refused with the right form.
    """

    __slots__ = ("_call", "_coroutine", "_name", "_opened")

    def __init__(self, coroutine: Coroutine[Any, Any, T], call: str, name: str, opened: type) -> None:
        self._coroutine = coroutine
        self._call = call
        self._name = name
        self._opened = opened

    def __await__(self) -> Generator[Any, None, T]:
        return self._coroutine.__await__()

    def send(self, value: Any) -> Any:
        """Advance the wrapped coroutine (the coroutine protocol)."""
        return self._coroutine.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        """Raise into the wrapped coroutine (the coroutine protocol)."""
        if val is None and tb is None:
            return self._coroutine.throw(typ)
        return self._coroutine.throw(typ, val, tb)  # pragma: no cover - the deprecated three-argument form

    def close(self) -> None:
        """Close the wrapped coroutine (the coroutine protocol)."""
        self._coroutine.close()

    def _right_form(self) -> str:
        name, call = self._name, self._call
        return f"`{name} = await {call}`, then `async with {name}:` (or `async with await {call} as {name}:`)"

    async def __aenter__(self) -> NoReturn:
        """Refuse ``async with`` on the call itself, naming the right form.

        Raises:
            AwaitError: always (the wrapped coroutine is closed: nothing
                was opened).
        """
        self._coroutine.close()
        raise AwaitError(f"{self._call} is awaited, not entered with `async with`: write {self._right_form()}")

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Never reached (:meth:`__aenter__` raises)."""

    def __getattr__(self, name: str) -> Any:
        """Refuse a public attribute of what this opens (the ``await`` was
        left out), naming the right form; any other name is an ordinary
        AttributeError.

        Raises:
            AwaitError: ``name`` is a public attribute of the opened class.
            AttributeError: any other name.
        """
        if not name.startswith("_") and hasattr(self._opened, name):
            raise AwaitError(
                f"{self._call} returns an awaitable, not the {self._name}: it has no {name!r} until awaited; "
                f"write {self._right_form()}"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
