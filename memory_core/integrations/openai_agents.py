"""OpenAI Agents SDK integration: a ``Session`` backed by any memory-core
storage, and recall / working-memory tools (``pip install
"memory-core[openai-agents]"``).

Mapping: the owner = the thread's resource, given at construction or else
taken from the run context (``context.resource_id`` or
``context["resource_id"]``, passed by the SDK's runner as ``wrapper``; a
context naming another resource than the construction's is an error); the thread is
``openai-agents:<owner>:<session_id>`` (:data:`THREAD_NAMESPACE`,
:func:`~memory_core.integrations._threads.scoped_thread`), so every user may
name a session ``"chat"``; with ``scope_ids=False`` (stores written before
ids were scoped) the thread id is ``session_id`` itself.
Each input item is one message: ``type`` is :data:`ITEM_TYPE`, ``content`` is
``{"item": <the item, exactly>, "content": <its text>}`` (the text is what
semantic recall embeds), and ``role`` follows :func:`item_role`. Batch order
is kept (R-ORDER); ids come from
:func:`memory_core.integrations._threads.new_message_id`.

The SDK's own ``SQLiteSession`` is the reference this session is tested
against (``memory_core_conformance.integrations.openai_agents``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents import FunctionTool, RunContextWrapper, function_tool
from agents.items import TResponseInputItem
from agents.memory import SessionSettings
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit

from memory_core.arguments import check_memory
from memory_core.errors import ConflictError, ValidationError
from memory_core.memory import Memory
from memory_core.models import Message, Role
from memory_core.validation import check_bool, check_id, check_json_object, check_list

from ._threads import (
    check_limit,
    check_record,
    claim_copy,
    conversation_thread,
    delete_conversation,
    new_message_id,
    newest_messages,
    owner_of,
    pop_newest,
    save_to,
)
from ._tools import (
    DEFAULT_HIT_CHARS,
    DEFAULT_TOTAL_CHARS,
    MinScore,
    check_hit_bounds,
    check_recall_options,
    offered_tools,
    read_working_memory,
    recall_json,
    write_working_memory,
)

__all__ = ["ITEM_TYPE", "THREAD_NAMESPACE", "MemoryCoreSession", "item_role", "item_text", "memory_tools"]

ITEM_TYPE = "openai-agents/item"
"""``Message.type`` of a stored Agents SDK input item."""

THREAD_NAMESPACE = "openai-agents"
"""First part of a scoped session's thread id: ``openai-agents:<owner>:<session_id>``."""

_MESSAGE_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = frozenset({"input_text", "output_text", "text", "refusal"})


def item_role(item: Mapping[str, Any]) -> Role:
    """The memory-core role of an input item.

    A ``role`` field maps as itself (``developer`` -> ``system``). Items
    without a role: tool results (a ``type`` ending in ``_output``, such as
    ``function_call_output``) -> ``tool``; ``mcp_approval_response`` (the
    user's answer) -> ``user``; everything the model emits (``function_call``,
    ``reasoning``, ``computer_call``, ``item_reference`` ...) -> ``assistant``.
    """
    role = item.get("role")
    if isinstance(role, str) and role in _MESSAGE_ROLES:
        return _MESSAGE_ROLES[role]
    kind = item.get("type")
    if isinstance(kind, str) and kind.endswith("_output"):
        return "tool"
    if kind == "mcp_approval_response":
        return "user"
    return "assistant"


def item_text(item: Mapping[str, Any]) -> str:
    """The text semantic recall embeds for an item: a message's text parts, a
    tool output string, or a reasoning summary; ``""`` otherwise."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts: list[Any] = []
    if isinstance(content, list):
        parts = content
    elif isinstance(item.get("output"), str):
        return str(item["output"])
    elif isinstance(item.get("summary"), list):
        parts = item["summary"]
    texts = [
        p["text"]
        for p in parts
        if isinstance(p, Mapping) and (p.get("type") in _TEXT_PARTS or p.get("type") == "summary_text")
        if isinstance(p.get("text"), str)
    ]
    return "\n".join(texts)


class MemoryCoreSession:
    """An Agents SDK ``Session`` over a :class:`~memory_core.Memory`.

    Args:
        session_id: the thread id (R-ID).
        memory: a :class:`~memory_core.Memory` (storage and optional vector
            store) to keep items in; shared, not closed by the session.
        resource_id: the owner (R-ID). None (default): each call's run
            context names it. Given: the session acts for it alone, and a run
            context naming another resource is a ValidationError (field
            ``context.resource_id``): the construction argument is never
            overridden (:func:`~memory_core.integrations._threads.owner_of`).
        session_settings: the SDK's settings, a ``SessionSettings`` or a dict
            of its fields (turned into one by the SDK's own
            ``coerce_session_settings``, as its sessions do); ``limit`` is the
            default of :meth:`get_items`, meaning what ``limit`` means there
            (None: every item). A dict's ``limit`` is checked before the
            SDK's coercion, which would read ``True`` as 1, ``False`` as 0
            and ``"2"`` or ``2.0`` as 2; a ``SessionSettings`` the caller
            built has been coerced by the SDK already, so only a value set on
            it afterwards can be refused (by :meth:`get_items`). Default: an
            empty ``SessionSettings()``.
        scope_ids: True (default): the session's thread is scoped to the
            owner, ``openai-agents:<owner>:<session_id>`` (see
            :meth:`thread_id`), so two users' ``"chat"`` sessions are two
            threads. False: the thread id is ``session_id`` itself, global
            across owners (a second owner gets ``OwnershipError``): the
            setting that keeps reading and writing stores made before ids
            were scoped.

    Every method accepts the SDK's run-context ``wrapper`` keyword, so the
    runner passes it and the owner can come from ``wrapper.context``.

    ``session_id`` stays the id the session was built with, as the SDK's
    ``AdvancedSQLiteSession`` keeps its ``session_id`` while it switches
    branches. Which session each owner is on (after :meth:`branch_from_turn`
    or :meth:`switch_to`) is held per owner
    (:meth:`current_session_id`): in an app serving every user from one
    session object, one user's branch never moves another user.

    Raises:
        ValidationError: at construction, a bad id, a ``memory`` that is
            not a Memory (:func:`~memory_core.arguments.check_memory`: a URL
            goes to ``await Memory.open(url)``), or a dict
            ``session_settings`` whose ``limit`` is not an int or None
            (field ``session_settings.limit``,
            :func:`~memory_core.integrations._threads.check_limit`); a method without any owner
            (neither context nor ``resource_id``), or whose context names
            another owner than ``resource_id``.
        TypeError: ``session_settings`` is a dict with a key that is not a
            ``SessionSettings`` field (the SDK's error: ``Unknown session
            settings: ...``), or neither a dict nor ``SessionSettings``.
        OwnershipError: the session's thread belongs to another resource
            (only with ``scope_ids=False``).

    One session (and the ``Memory`` under it) may be used from several
    threads, each running its own event loop, at once, as the SDK's
    ``SQLiteSession``: every store keeps a connection per event loop.
    """

    def __init__(
        self,
        session_id: str,
        memory: Memory,
        *,
        resource_id: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        scope_ids: bool = True,
    ) -> None:
        self.session_id = check_id(session_id, "session_id")
        self._current: dict[str, str] = {}  # owner -> the session it switched to, when not session_id
        self.scope_ids = check_bool(scope_ids, "scope_ids")
        self.memory = check_memory(memory)
        self.resource_id = None if resource_id is None else check_id(resource_id, "resource_id")
        if isinstance(session_settings, Mapping):
            # Checked before the SDK's coercion, which reads True as 1 and "2" as 2.
            check_limit(session_settings.get("limit"), "session_settings.limit")
        self.session_settings: SessionSettings | None = (
            SessionSettings()
            if session_settings is None
            else coerce_session_settings(
                dict(session_settings) if isinstance(session_settings, Mapping) else session_settings
            )
        )

    def owner(self, wrapper: RunContextWrapper[Any] | None = None) -> str:
        """The resource this call acts for (see the class docstring)."""
        fix = (
            "build one session per resource, or build it without resource_id "
            "(MemoryCoreSession(session_id, memory)) to take the owner from each run's context"
        )
        return owner_of(self.resource_id, None if wrapper is None else wrapper.context, fix=fix)

    def current_session_id(self, wrapper: RunContextWrapper[Any] | None = None) -> str:
        """The session the call's owner is on: ``session_id`` until the owner
        branches (:meth:`branch_from_turn`) or switches (:meth:`switch_to`),
        then the session it went to. Held per owner in this object (one
        entry per owner who left ``session_id``; switching back drops it),
        so another user of the same object stays where they were. Not kept
        in the store: a session built again (after a restart) starts on
        ``session_id``; to resume on a branch, keep this id and build the
        session with it, or :meth:`switch_to` it.

        Raises:
            ValidationError: no owner (see the class docstring).
        """
        return self._current.get(self.owner(wrapper), self.session_id)

    def _move(self, owner: str, session_id: str) -> None:
        if session_id == self.session_id:
            self._current.pop(owner, None)
        else:
            self._current[owner] = session_id

    def thread_id(self, wrapper: RunContextWrapper[Any] | None = None) -> str:
        """The thread this call reads and writes:
        ``openai-agents:<owner>:<session>``, or ``<session>`` with
        ``scope_ids=False``, where ``<session>`` is the owner's
        :meth:`current_session_id`.

        Raises:
            ValidationError: no owner, or the id is longer than 256
                characters once mapped (field ``session_id``).
        """
        return self._where(wrapper)[0]

    def _where(self, wrapper: RunContextWrapper[Any] | None) -> tuple[str, str]:
        owner = self.owner(wrapper)
        current = self._current.get(owner, self.session_id)
        return (
            conversation_thread(THREAD_NAMESPACE, owner, current, scoped=self.scope_ids, field="session_id"),
            owner,
        )

    async def branch_from_turn(
        self, turn: int, branch_id: str | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> str:
        """Start a branch before user turn ``turn`` and switch to it, as the
        SDK's ``AdvancedSQLiteSession.create_branch_from_turn``: turn ``n``
        is the n-th user item (from 1); the branch holds every item before
        it (copied inside the store, :meth:`memory_core.Memory.branch_thread`,
        with lineage back to this session's thread), so the next run asks
        turn ``n`` again, edited ("edit an earlier message and continue").
        The session's items stay as they were: :meth:`switch_to` goes back.

        The switch is the owner's alone (:meth:`current_session_id`): other
        owners using the same session object stay on their sessions, and
        ``session_id`` keeps the id the session was built with.

        A retry is safe with an explicit ``branch_id``: a call cancelled or
        timed out (``asyncio.wait_for``) still makes its branch in the
        background, and the same call again, with the same ``branch_id``,
        finds that branch (same source session, same turn, same owner, by its
        lineage record) and switches to it instead of raising
        ConflictError. Without ``branch_id`` a timed-out call's generated id
        is never returned, and a retry makes another branch.

        Args:
            turn: the user turn to redo (int >= 1).
            branch_id: the branch's session id (R-ID); default
                ``<current session>.branch-<turn>-<8 hex digits>``. Pass one to
                make the call safe to retry after a timeout.
            wrapper: the SDK's run context (names the owner).

        Returns:
            The branch's session id (now the owner's
            :meth:`current_session_id`).

        Raises:
            ValidationError: a bad ``turn`` or ``branch_id``, or no owner;
                field ``turn``: the session has fewer than ``turn`` user
                turns; field ``branch_id``: it names the session branched
                from, or a session of the owner that is not this branch
                (another session, or a branch of another session or turn).
                A ``ValueError`` in each case, as the SDK's
                ``AdvancedSQLiteSession.create_branch_from_turn`` raises.
        """
        if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
            raise ValidationError("turn", f"must be an int >= 1 (the n-th user item), got {turn!r}")
        thread, owner = self._where(wrapper)
        source = self._current.get(owner, self.session_id)
        name = f"{source}.branch-{turn}-{new_message_id()[-8:]}" if branch_id is None else branch_id
        name = check_id(name, "branch_id")
        if name == source:
            raise ValidationError("branch_id", f"{name!r} is the session it branches from: choose another branch_id")
        target = conversation_thread(THREAD_NAMESPACE, owner, name, scoped=self.scope_ids, field="branch_id")
        items = (await self.memory.list_messages(thread, owner, per_page=False, total=False)).items
        users = [index for index, message in enumerate(items) if message.role == "user"]
        if len(users) < turn:
            raise ValidationError("turn", f"session {source!r} has {len(users)} user turns, not {turn}")
        start = users[turn - 1]
        cut = items[start - 1].id if start else None
        try:
            if cut is not None:
                await self.memory.branch_thread(thread, cut, target, resource_id=owner, source_resource_id=owner)
            else:
                await self.memory.clone_thread(
                    thread, target, resource_id=owner, source_resource_id=owner, message_limit=0
                )
        except ConflictError:
            if not await claim_copy(self.memory, target, thread, owner, cut):
                raise ValidationError(
                    "branch_id",
                    f"{name!r} is taken by another session (not the branch of session "
                    f"{source!r} before turn {turn}): choose another branch_id",
                ) from None
        self._move(owner, name)
        return name

    async def switch_to(self, session_id: str, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Point the owner at another of its sessions: a branch
        :meth:`branch_from_turn` made, or back to the one it came from. As
        the SDK's ``AdvancedSQLiteSession.switch_to_branch``, an unknown
        session is refused (a mistyped name would otherwise start a new,
        empty conversation at the next run); the owner stays where it was.
        Only the owner moves (:meth:`current_session_id`); other owners using
        this session object stay where they are.

        Args:
            session_id: the session to switch to (R-ID).
            wrapper: the SDK's run context (names the owner).

        Raises:
            ValidationError: a bad id (R-ID), no owner, or field
                ``session_id``: the owner has no such session (none was
                written, or it was cleared); a ``ValueError``, as the SDK's.
        """
        name = check_id(session_id, "session_id")
        owner = self.owner(wrapper)
        thread = conversation_thread(THREAD_NAMESPACE, owner, name, scoped=self.scope_ids, field="session_id")
        await self.memory.wait_for_writes()  # a branch still being made in the background counts
        if await self.memory.storage.get_thread(thread, owner) is None:
            raise ValidationError(
                "session_id",
                f"resource {owner!r} has no session {name!r} to switch to (none was written, or it was cleared); "
                f"the session stays on {self._current.get(owner, self.session_id)!r}",
            )
        self._move(owner, name)

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The newest ``limit`` items, oldest first (``session_settings.limit``
        when None; every item when that is None too). As the SDK's
        ``SQLiteSession``: 0 gives ``[]``, a negative limit or one over
        2**31-1 (``2**31``, ``2**63-1``: more than a session holds) every item
        (:func:`~memory_core.integrations._threads.check_limit`, the limit of
        every seam).

        Raises:
            ValidationError: a limit that is not an int or None (a bool, a
                float or a str included: ``SQLiteSession`` reads ``True`` as
                1), naming ``limit`` or ``session_settings.limit``,
                whichever gave it.
        """
        field = "limit" if limit is not None else "session_settings.limit"
        effective = check_limit(resolve_session_limit(limit, self.session_settings), field)
        thread, owner = self._where(wrapper)
        messages = await newest_messages(self.memory, thread, owner, effective)
        return [m.content["item"] for m in messages if isinstance(m.content, dict)]

    async def add_items(
        self, items: Sequence[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Append items in order, in one batch (all or nothing).

        Raises:
            ValidationError: an item that is not a JSON object (R-JSON: NaN
                and infinities included) or is too large (R-SIZE: its text
                is stored twice, so about 7.5 MiB of text fits), before
                anything is written, named by its index and the path within
                it (``items[1]['content']``).
            OwnershipError: (``scope_ids=False``) the session id is another
                resource's thread, named by the session id.
            AdapterClosedError: the store is closed (an empty list too, as
                the SDK's sessions).
        """
        items = check_list(items, "items", "input items (dicts)", '[{"role": "user", "content": "hello"}, ...]')
        if not items:
            await self.memory.storage.open()  # no I/O when open; a closed store raises
            return
        thread, owner = self._where(wrapper)
        messages = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise ValidationError(f"items[{index}]", f"must be a dict, got {type(item).__name__}", "R-JSON")
            where = f"items[{index}]"
            record = {"item": check_json_object(dict(item), where), "content": item_text(item)}
            message = Message(new_message_id(), thread, item_role(item), record, owner, ITEM_TYPE)
            messages.append(check_record(message, where))  # R-SIZE, named by index too
        await save_to(self.memory, thread, owner, messages)

    async def pop_item(self, *, wrapper: RunContextWrapper[Any] | None = None) -> TResponseInputItem | None:
        """Remove and return the newest item (None when empty); atomic under
        concurrent poppers (see :func:`~memory_core.integrations._threads.pop_newest`)."""
        message = await pop_newest(self.memory, *self._where(wrapper))
        if message is None or not isinstance(message.content, dict):
            return None
        item: TResponseInputItem = message.content["item"]
        return item

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Delete every item of the session and their vectors."""
        await delete_conversation(self.memory, *self._where(wrapper))


def memory_tools(
    session: MemoryCoreSession,
    *,
    top_k: int = 4,
    min_score: MinScore = "auto",
    max_hit_chars: int | None = DEFAULT_HIT_CHARS,
    max_total_chars: int | None = DEFAULT_TOTAL_CHARS,
) -> list[FunctionTool]:
    """Agent tools over the session's memory, acting for the run's owner.

    With working memory on in ``session.memory``'s config (off by default:
    then these two are not offered), ``get_working_memory`` and
    ``update_working_memory`` read and replace the owner's working memory
    as :meth:`~memory_core.Memory.update_working_memory` does (the owner's
    resource, or with scope ``"thread"`` the session's thread; checked
    against the config's JSON Schema); an update whose notes hold nothing
    (no letter or digit, or only fillers such as ``null``, ``N/A``,
    ``{}``), are the Memory's unfilled working-memory template (however
    reworded: :func:`~memory_core.integrations._tools.notes_refusal`) or fail the schema
    writes nothing and tells the model why and what to send
    (:func:`~memory_core.integrations._tools.write_working_memory`). When
    ``session.memory`` can be searched (a vector store, or lexical semantic
    recall), ``recall_memory(query)`` also returns up to ``top_k`` (1-1000,
    default 4) best user and assistant messages, searched under the Memory's
    semantic-recall settings (``mode``, weights, ``scope``: every thread of
    the owner, or with scope ``"thread"`` the session's own thread, so a
    branch does not recall what was edited away in its source), leaving out
    tool results (its own earlier answers among them), the turn being
    answered (the question the runner stored and what followed it) and hits
    under ``min_score`` (cosine similarity; ``"auto"``, the default: the
    Memory's ``semantic_recall.min_score`` when set, else the floor measured
    for its embedder; None: no floor) and replies that merely repeat a tool
    result; see :func:`~memory_core.integrations._tools.recall_hits`. Each
    hit's text holds at most ``max_hit_chars`` characters (default 2000) and
    the hits' texts together at most ``max_total_chars`` (default 8000),
    cut with a visible ``[cut: ...]`` marker
    (:func:`~memory_core.integrations._tools.bound_texts`; None: no bound).

    Raises:
        ValidationError: ``session`` is not a :class:`MemoryCoreSession`
            (field ``session``); ``top_k`` out of range, a bad ``min_score``,
            or a bound that is neither None nor an int >= 100; no
            tool to offer (working memory off and no recall, field
            ``memory``: :func:`~memory_core.integrations._tools.offered_tools`).
    """
    if not isinstance(session, MemoryCoreSession):
        got = f"the str {session!r}"[:100] if isinstance(session, str) else f"a value of type {type(session).__name__}"
        raise ValidationError(
            "session",
            f"must be a MemoryCoreSession, got {got}; give the tools the session the runner uses: "
            "memory_tools(MemoryCoreSession(session_id, memory))",
        )
    top_k, min_score = check_recall_options(top_k, min_score)
    max_hit_chars, max_total_chars = check_hit_bounds(max_hit_chars, max_total_chars)
    working, recall = offered_tools(session.memory)

    @function_tool
    async def get_working_memory(ctx: RunContextWrapper[Any]) -> str:
        """Read the notes kept about this user (empty when none)."""
        thread, owner = session._where(ctx)
        return await read_working_memory(session.memory, owner, thread)

    @function_tool
    async def update_working_memory(ctx: RunContextWrapper[Any], notes: str) -> str:
        """Replace the notes kept about this user with `notes` (empty notes,
        the unfilled template or notes the schema refuses are not saved: the
        stored notes stay, and the answer says why).

        Args:
            notes: the complete new notes (Markdown).
        """
        thread, owner = session._where(ctx)
        return await write_working_memory(session.memory, owner, notes, thread)

    tools = [get_working_memory, update_working_memory] if working else []
    if recall:

        @function_tool
        async def recall_memory(ctx: RunContextWrapper[Any], query: str) -> str:
            """Search this user's past conversations for messages about `query`;
            a JSON array of {thread_id, role, text, created_at}, best first.

            Args:
                query: what to look for.
            """
            thread, owner = session._where(ctx)
            return await recall_json(
                session.memory,
                owner,
                query,
                top_k,
                thread_id=thread,
                min_score=min_score,
                max_hit_chars=max_hit_chars,
                max_total_chars=max_total_chars,
            )

        tools.append(recall_memory)
    return tools
