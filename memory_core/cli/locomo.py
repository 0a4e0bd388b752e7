"""Load LoCoMo-format conversations into memory-core records.

The LoCoMo benchmark ("Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024) releases its ten two-person conversations as one file,
``data/locomo10.json``: a JSON list of samples ``{sample_id, conversation:
{speaker_a, speaker_b, session_<N>, session_<N>_date_time}, qa, ...}``. A
file may also hold one conversation as a flat object (``{speaker_a, ...,
session_<N>, qa}``, the form the data set's split folders use), or a list of
those. The mapping used here:

- one conversation = one resource (``locomo-<sample_id>`` for a sample of the
  list, without its ``conv-`` prefix as the split files ``26.json`` ... name
  it; ``locomo-<file stem>`` for a file holding one conversation);
- one session K = one thread (``<resource>:s<K>``), created at the session's
  date-time (read as UTC);
- turn n of a session = one message (id ``<resource>:<dia_id>``), created at
  the session time + n seconds, role ``user`` for ``speaker_a`` and
  ``assistant`` for ``speaker_b``, metadata ``{speaker, dia_id, session}``;
- a question's ``evidence`` names the message ids recall should find.

The project's own sample conversation (``memory_core/cli/data/sample.json``) uses
the same format.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from memory_core.errors import ValidationError
from memory_core.json_text import UnreadableJSON, load_json_text
from memory_core.models import Message, Thread

__all__ = [
    "LOCOMO_DIR_HELP",
    "Conversation",
    "Question",
    "load_conversation",
    "load_dir",
    "load_sample",
    "parse_session_time",
    "require_locomo_dir",
]

_SESSION = re.compile(r"session_(\d+)")


@dataclass(frozen=True, slots=True)
class Question:
    """A LoCoMo question; ``evidence`` holds message ids (may be empty)."""

    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation mapped onto memory-core records."""

    resource_id: str
    speakers: tuple[str, str]
    threads: list[Thread]
    messages: list[Message]
    questions: list[Question]


def parse_session_time(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> aware UTC datetime (LoCoMo has no zone).

    Raises:
        ValueError: ``text`` is not in that form.
    """
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


_JSON_NAMES = {str: "string", list: "array", dict: "object", int: "integer"}


def _get(container: dict[str, Any], key: str, kind: type, where: str) -> Any:
    """``container[key]`` when it is a ``kind``; else a ValidationError whose
    field is ``where`` (file and key path)."""
    value = container.get(key)
    if not isinstance(value, kind):
        got = type(value).__name__ if key in container else "nothing"
        raise ValidationError(where, f"must be a JSON {_JSON_NAMES[kind]}, got {got}")
    return value


def load_conversation(data: Any, name: str, source: str | None = None) -> Conversation:
    """Map one parsed LoCoMo conversation (named ``name``) onto records: a
    flat object ``{speaker_a, speaker_b, session_<N>, session_<N>_date_time,
    qa}`` or a sample of the data set's ``locomo10.json``, whose turns are
    under ``conversation`` and whose ``qa`` is beside it.

    Args:
        data: the parsed JSON of one conversation.
        name: the conversation's name (the resource id is ``locomo-<name>``).
        source: where ``data`` came from, for error fields (default ``name``).

    Raises:
        ValidationError: ``data`` is not a LoCoMo conversation: not an object,
            a missing or mistyped key (``speaker_a``, ``session_<N>``, a turn's
            ``speaker``/``dia_id``/``text``, a question), an unparseable
            ``session_<N>_date_time``, or no session with a message. The field
            names the source and the key, e.g. ``"26.json: session_3[4].text"``
            or ``"locomo10.json[0]: conversation.session_3[4].text"``.
    """
    source = source or name
    if not isinstance(data, dict):
        raise ValidationError(source, f"must be a JSON object (one LoCoMo conversation), got {type(data).__name__}")
    body, at = (data["conversation"], f"{source}: conversation.") if "conversation" in data else (data, f"{source}: ")
    if not isinstance(body, dict):
        raise ValidationError(at.removesuffix("."), f"must be a JSON object, got {type(body).__name__}")
    resource_id = f"locomo-{name}"
    speaker_a = _get(body, "speaker_a", str, f"{at}speaker_a")
    speaker_b = _get(body, "speaker_b", str, f"{at}speaker_b")
    sessions = sorted(int(m.group(1)) for key in body if (m := _SESSION.fullmatch(key)))
    threads: list[Thread] = []
    messages: list[Message] = []
    for number in sessions:
        key = f"session_{number}"
        turns = _get(body, key, list, f"{at}{key}")
        when = _get(body, f"{key}_date_time", str, f"{at}{key}_date_time")
        try:
            started = parse_session_time(when)
        except ValueError:
            raise ValidationError(
                f"{at}{key}_date_time", f"must look like '1:56 pm on 8 May, 2023', got {when!r}"
            ) from None
        thread_id = f"{resource_id}:s{number}"
        threads.append(Thread(thread_id, resource_id, f"Session {number}", {"session": number}, started, started))
        for index, turn in enumerate(turns):
            where = f"{at}{key}[{index}]"
            if not isinstance(turn, dict):
                raise ValidationError(where, f"must be a JSON object, got {type(turn).__name__}")
            speaker = _get(turn, "speaker", str, f"{where}.speaker")
            dia_id = _get(turn, "dia_id", str, f"{where}.dia_id")
            messages.append(
                Message(
                    id=f"{resource_id}:{dia_id}",
                    thread_id=thread_id,
                    role="user" if speaker == speaker_a else "assistant",
                    content=_get(turn, "text", str, f"{where}.text"),
                    resource_id=resource_id,
                    metadata={"speaker": speaker, "dia_id": dia_id, "session": number},
                    created_at=started + timedelta(seconds=index),
                )
            )
    if not messages:
        raise ValidationError(source, "holds no session_<N> list with a message")
    qa = _get(data, "qa", list, f"{source}: qa") if "qa" in data else []
    questions = [_question(q, f"{source}: qa[{index}]", resource_id) for index, q in enumerate(qa)]
    return Conversation(resource_id, (speaker_a, speaker_b), threads, messages, questions)


def _question(q: Any, where: str, resource_id: str) -> Question:
    """One ``qa`` entry (at ``where``) as a :class:`Question`."""
    if not isinstance(q, dict):
        raise ValidationError(where, f"must be a JSON object, got {type(q).__name__}")
    evidence = _get(q, "evidence", list, f"{where}.evidence") if "evidence" in q else []
    return Question(
        _get(q, "question", str, f"{where}.question"),
        str(q.get("answer", q.get("adversarial_answer", ""))),
        tuple(f"{resource_id}:{e}" for e in evidence if isinstance(e, str)),
        _get(q, "category", int, f"{where}.category") if "category" in q else 0,
    )


LOCOMO_DIR_HELP = (
    "LoCoMo conversations: the LoCoMo data set's data/locomo10.json (github.com/snap-research/locomo), "
    "or a folder of *.json files, each that file's list of conversations or one conversation "
    "(keys speaker_a, speaker_b, session_<N>, session_<N>_date_time, qa); a clone of memory-core does not include it"
)
"""What a LoCoMo file or folder argument is: for help texts and error messages."""


def load_dir(path: str | Path) -> list[Conversation]:
    """The conversations of ``path``: a LoCoMo JSON file, or a folder whose
    ``*.json`` files are read by file name. A file holds a list of
    conversations (the data set's ``locomo10.json``; each is named by its
    ``sample_id``, else ``<file stem>-<position from 1>``) or one
    conversation (named by the file stem); see :func:`load_conversation`.

    Raises:
        FileNotFoundError: ``path`` is neither a file nor a folder holding a
            JSON file (the message says what it should be:
            :data:`LOCOMO_DIR_HELP`).
        ValidationError: a file is not UTF-8 JSON, neither a conversation
            nor a list of them, a conversation is malformed (see
            :func:`load_conversation`), or two are named alike; the field
            names the file, its position and the key.
    """
    given = Path(path)
    files = [given] if given.is_file() else sorted(given.glob("*.json")) if given.is_dir() else []
    if not files:
        raise FileNotFoundError(_no_files(given))
    conversations: list[Conversation] = []
    seen: dict[str, str] = {}
    for file in files:
        for where, conversation in _file_conversations(file):
            if conversation.resource_id in seen:
                raise ValidationError(
                    where, f"is named {conversation.resource_id!r} as {seen[conversation.resource_id]} is"
                )
            seen[conversation.resource_id] = where
            conversations.append(conversation)
    return conversations


def _file_conversations(file: Path) -> list[tuple[str, Conversation]]:
    """The conversations in ``file``, each with where it is (the file, and
    its position in a list): a list of them or one."""
    data = _read_json(file)
    if isinstance(data, dict):
        return [(str(file), load_conversation(data, file.stem, str(file)))]
    if not isinstance(data, list):
        raise ValidationError(
            str(file),
            f"must be a JSON object (one LoCoMo conversation) or a list of them (locomo10.json), "
            f"got {type(data).__name__}",
        )
    if not data:
        raise ValidationError(str(file), "holds an empty list, no LoCoMo conversation")
    found = []
    for index, item in enumerate(data):
        where = f"{file}[{index}]"
        sample = item.get("sample_id") if isinstance(item, dict) else None
        # The release names its samples conv-26 ...; its split files 26.json ...: one id either way.
        name = str(sample).removeprefix("conv-") if isinstance(sample, str | int) and str(sample) else ""
        name = name or f"{file.stem}-{index + 1}"
        found.append((where, load_conversation(item, name, where)))
    return found


def require_locomo_dir(path: str | Path) -> Path:
    """For a script's command line (an argparse ``type=``): ``path`` when it
    is a file or a folder holding ``*.json`` files; otherwise one line
    ``error: ...`` on stderr (what it should be) and exit 2, with no traceback.

    Raises:
        SystemExit: (code 2) ``path`` is missing, or a folder without ``*.json`` files.
    """
    given = Path(path)
    if not given.is_file() and not (given.is_dir() and any(given.glob("*.json"))):
        sys.stderr.write(f"error: {_no_files(given)}\n")
        raise SystemExit(2)
    return given


def _no_files(given: Path) -> str:
    if not given.exists():
        return f"{given} does not exist (a typo in the path?); give {LOCOMO_DIR_HELP}"
    return f"no LoCoMo *.json files in {given}; give {LOCOMO_DIR_HELP}"


def _read_json(path: Path) -> Any:
    """The parsed JSON in ``path``; ValidationError (field: the path) when it
    is not UTF-8 JSON (truncated, not UTF-8, invalid: :func:`load_json_text`)."""
    try:
        return load_json_text(path.read_bytes())
    except UnreadableJSON as exc:
        raise ValidationError(str(path), exc.reason) from None


def load_sample() -> list[Conversation]:
    """The small sample conversation shipped with memory-core."""
    text = resources.files("memory_core.cli").joinpath("data/sample.json").read_text(encoding="utf-8")
    return [load_conversation(json.loads(text), "sample")]
