"""Conversion between stored messages and the shapes agent code holds.

Two formats of the OpenAI APIs, which most agent frameworks speak:

- Chat Completions messages: ``{"role": "system" | "developer" | "user" |
  "assistant" | "tool", "content": str | [parts] | None, "tool_calls": [...],
  "tool_call_id": ..., "name": ...}``.
- Responses input/output items: ``{"type": "message", "role": ..., "content":
  str | [parts]}`` (``type`` may be omitted), ``{"type": "function_call",
  "call_id", "name", "arguments"}``, ``{"type": "function_call_output",
  "call_id", "output"}``, and any other item type (``reasoning`` ...).

A converted message keeps the original dict verbatim inside its content
(``{"format": "openai.chat" | "openai.responses", "message" | "item": ...}``),
so converting back gives exactly what was put in: lossless on a round trip,
whatever fields a newer API version adds. The content also carries the text
(``parts`` of ``{"type": "text"}``), which semantic recall embeds (R-VEC).
Roles map to the store's four: ``developer`` becomes ``system``; tool results
(``tool``, ``function``, ``function_call_output``) ``tool``; other Responses
items (function calls, reasoning) ``assistant``.

Messages get new time-ordered ids (:func:`memory_core.ids.new_message_id`)
and no ``created_at`` (the store assigns "now" in list order, R-CLOCK).
Note that :meth:`memory_core.Memory.save_messages` does not persist
``system`` messages, so ``system``/``developer`` turns are kept only with
``persist_system=True`` (or when saved through the storage itself).

Converting to the other format (a conversation saved as Responses items read
back as Chat Completions messages, or the reverse) keeps tool calls: a
``function_call`` item is a ``tool_calls`` entry (consecutive ones share one
assistant message, as parallel calls do) and a ``function_call_output`` a
``tool`` message with its ``tool_call_id``, and back. Other items without a
Chat Completions form (``reasoning`` ...) become an assistant message of
their text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memory_core.errors import ValidationError
from memory_core.ids import new_message_id
from memory_core.models import Message, Role
from memory_core.validation import check_id, check_json_object, check_list
from memory_core.vector import message_text

__all__ = [
    "CHAT_FORMAT",
    "RESPONSES_FORMAT",
    "from_openai_chat",
    "from_responses_items",
    "to_openai_chat",
    "to_responses_items",
]

CHAT_FORMAT = "openai.chat"
"""``content["format"]`` of a message converted from a Chat Completions message."""
RESPONSES_FORMAT = "openai.responses"
"""``content["format"]`` of a message converted from a Responses item."""

_CHAT_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_ITEM_ROLES = frozenset({"system", "developer", "user", "assistant"})
"""Roles of a Responses message item (tool results are their own item type)."""


def _texts(content: Any) -> list[str]:
    """The text pieces of a content value: a str, or the text parts of a list."""
    if isinstance(content, str):
        return [content] if content else []
    if isinstance(content, list):
        return [
            part["text"]
            for part in content
            if isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS and isinstance(part.get("text"), str)
        ]
    return []


def _stored(fmt: str, key: str, original: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    return {"format": fmt, key: original, "parts": [{"type": "text", "text": text} for text in texts]}


def _messages(
    items: Sequence[Mapping[str, Any]], thread_id: str, resource_id: str | None, field: str
) -> list[tuple[dict[str, Any], str]]:
    """Check the shared arguments; each item as a checked JSON object with its field name."""
    check_id(thread_id, "thread_id")
    if resource_id is not None:
        check_id(resource_id, "resource_id")
    items = check_list(items, field, "dicts", '[{"role": "user", "content": "hello"}, ...]')
    out = []
    for index, item in enumerate(items):
        where = f"{field}[{index}]"
        if not isinstance(item, Mapping):
            raise ValidationError(where, f"must be a dict, got {type(item).__name__}")
        out.append((check_json_object(dict(item), where), where))
    return out


def from_openai_chat(
    messages: Sequence[Mapping[str, Any]], thread_id: str, *, resource_id: str | None = None
) -> list[Message]:
    """Chat Completions messages -> :class:`Message` objects to save, in order.

    Args:
        messages: dicts with a ``role`` (``system``, ``developer``, ``user``,
            ``assistant``, ``tool``, ``function``) and any other fields
            (``content`` as str, list of parts or None, ``tool_calls``,
            ``tool_call_id``, ``name`` ...), kept verbatim.
        thread_id: the thread they belong to.
        resource_id: the owner, or None for the thread's.

    Returns:
        One Message per input, with a new id; :func:`to_openai_chat` gives the
        inputs back exactly.

    Raises:
        ValidationError: not a list of JSON objects, an unknown or missing
            role (named by index), bad ids.
    """
    out = []
    for original, where in _messages(messages, thread_id, resource_id, "messages"):
        role = original.get("role")
        if not isinstance(role, str) or role not in _CHAT_ROLES:
            raise ValidationError(f"{where}.role", f"must be one of {sorted(_CHAT_ROLES)}, got {role!r}")
        content = _stored(CHAT_FORMAT, "message", original, _texts(original.get("content")))
        out.append(Message(new_message_id(), thread_id, _CHAT_ROLES[role], content, resource_id))
    return out


def from_responses_items(
    items: Sequence[Mapping[str, Any]], thread_id: str, *, resource_id: str | None = None
) -> list[Message]:
    """Responses API items -> :class:`Message` objects to save, in order.

    Message items (``type`` ``"message"`` or absent) need a ``role``
    (``developer`` becomes ``system``); ``function_call_output`` items become
    ``tool`` messages; every other item type (``function_call``,
    ``reasoning`` ...) an ``assistant`` message. Items are kept verbatim.

    Raises:
        ValidationError: not a list of JSON objects, a message item without a
            known role, an item ``type`` that is not a str, bad ids.
    """
    out = []
    for original, where in _messages(items, thread_id, resource_id, "items"):
        kind = original.get("type", "message")
        if not isinstance(kind, str):
            raise ValidationError(f"{where}.type", f"must be a str, got {type(kind).__name__}")
        if kind == "message":
            role_name = original.get("role")
            if not isinstance(role_name, str) or role_name not in _ITEM_ROLES:
                raise ValidationError(f"{where}.role", f"must be one of {sorted(_ITEM_ROLES)}, got {role_name!r}")
            role = _CHAT_ROLES[role_name]
            texts = _texts(original.get("content"))
        elif kind == "function_call_output":
            role, texts = "tool", _texts(original.get("output"))
        else:
            role, texts = "assistant", []
        content = _stored(RESPONSES_FORMAT, "item", original, texts)
        out.append(Message(new_message_id(), thread_id, role, content, resource_id))
    return out


def _native(message: Message, fmt: str, key: str) -> dict[str, Any] | None:
    content = message.content
    if isinstance(content, dict) and content.get("format") == fmt and isinstance(content.get(key), dict):
        return dict(content[key])
    return None


def to_openai_chat(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Stored messages -> Chat Completions messages, in the given order.

    A message made by :func:`from_openai_chat` gives back its original dict.
    One made by :func:`from_responses_items` from a ``function_call`` item
    becomes a ``tool_calls`` entry of an assistant message (consecutive calls
    share one), from a ``function_call_output`` a ``tool`` message with its
    ``tool_call_id``. Any other message becomes ``{"role", "content": its
    text}`` (plus ``tool_call_id`` from its metadata for a tool message, when
    present).
    """
    out: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] | None = None  # tool_calls of the last message, while it only holds calls
    for message in messages:
        native = _native(message, CHAT_FORMAT, "message")
        if native is not None:
            out.append(native)
            calls = None
            continue
        record = _native(message, RESPONSES_FORMAT, "item")
        kind = record.get("type") if record is not None else None
        if record is not None and kind == "function_call":
            call = {
                "id": record.get("call_id"),
                "type": "function",
                "function": {"name": record.get("name"), "arguments": record.get("arguments")},
            }
            if calls is None:
                calls = []
                out.append({"role": "assistant", "content": None, "tool_calls": calls})
            calls.append(call)
            continue
        calls = None
        if record is not None and kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": record.get("call_id"), "content": message_text(message)})
            continue
        item: dict[str, Any] = {"role": message.role, "content": message_text(message)}
        if message.role == "tool" and isinstance(message.metadata.get("tool_call_id"), str):
            item["tool_call_id"] = message.metadata["tool_call_id"]
        out.append(item)
    return out


def to_responses_items(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Stored messages -> Responses input items, in the given order.

    A message made by :func:`from_responses_items` gives back its original
    item. One made by :func:`from_openai_chat` from an assistant message with
    ``tool_calls`` becomes its text (a message item, when there is text) and
    one ``function_call`` item per call; a ``tool`` message with a
    ``tool_call_id`` a ``function_call_output`` item. Any other message
    becomes ``{"type": "message", "role", "content": its text}`` (a ``tool``
    message: ``assistant``, as Responses has no tool role for plain
    messages).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        native = _native(message, RESPONSES_FORMAT, "item")
        if native is not None:
            out.append(native)
            continue
        chat = _native(message, CHAT_FORMAT, "message")
        if chat is not None and chat.get("role") == "assistant" and isinstance(chat.get("tool_calls"), list):
            if message_text(message):
                out.append({"type": "message", "role": "assistant", "content": message_text(message)})
            for call in chat["tool_calls"]:
                function = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(function, Mapping):
                    out.append(
                        {
                            "type": "function_call",
                            "call_id": call.get("id"),
                            "name": function.get("name"),
                            "arguments": function.get("arguments"),
                        }
                    )
            continue
        if chat is not None and chat.get("role") == "tool" and isinstance(chat.get("tool_call_id"), str):
            out.append(
                {"type": "function_call_output", "call_id": chat["tool_call_id"], "output": message_text(message)}
            )
            continue
        role = "assistant" if message.role == "tool" else message.role
        out.append({"type": "message", "role": role, "content": message_text(message)})
    return out
