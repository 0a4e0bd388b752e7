"""Load LoCoMo-format conversations into memory-core records.

The LoCoMo benchmark ("Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024) stores one two-person conversation per JSON file; its
README (``shared/data/locomo10/README.md``) gives the mapping used here:

- one conversation = one resource (``locomo-<file stem>``);
- one session K = one thread (``<resource>:s<K>``), created at the session's
  date-time (read as UTC);
- turn n of a session = one message (id ``<resource>:<dia_id>``), created at
  the session time + n seconds, role ``user`` for ``speaker_a`` and
  ``assistant`` for ``speaker_b``, metadata ``{speaker, dia_id, session}``;
- a question's ``evidence`` names the message ids recall should find.

The project's own sample conversation (``memory_core/data/sample.json``) uses
the same format.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from memory_core.models import Message, Thread

__all__ = ["Conversation", "Question", "load_conversation", "load_dir", "load_sample", "parse_session_time"]

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
    """``"1:56 pm on 8 May, 2023"`` -> aware UTC datetime (LoCoMo has no zone)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load_conversation(data: dict[str, Any], name: str) -> Conversation:
    """Map one parsed LoCoMo JSON object (named ``name``) onto records."""
    resource_id = f"locomo-{name}"
    speaker_a, speaker_b = data["speaker_a"], data["speaker_b"]
    sessions = sorted(int(m.group(1)) for key in data if (m := _SESSION.fullmatch(key)))
    threads: list[Thread] = []
    messages: list[Message] = []
    for number in sessions:
        turns = data[f"session_{number}"]
        started = parse_session_time(data[f"session_{number}_date_time"])
        thread_id = f"{resource_id}:s{number}"
        threads.append(Thread(thread_id, resource_id, f"Session {number}", {"session": number}, started, started))
        for index, turn in enumerate(turns):
            messages.append(
                Message(
                    id=f"{resource_id}:{turn['dia_id']}",
                    thread_id=thread_id,
                    role="user" if turn["speaker"] == speaker_a else "assistant",
                    content=turn["text"],
                    resource_id=resource_id,
                    metadata={"speaker": turn["speaker"], "dia_id": turn["dia_id"], "session": number},
                    created_at=started + timedelta(seconds=index),
                )
            )
    questions = [
        Question(
            str(q["question"]),
            str(q.get("answer", q.get("adversarial_answer", ""))),
            tuple(f"{resource_id}:{e}" for e in q.get("evidence", []) if isinstance(e, str)),
            int(q.get("category", 0)),
        )
        for q in data.get("qa", [])
    ]
    return Conversation(resource_id, (speaker_a, speaker_b), threads, messages, questions)


def load_dir(path: str | Path) -> list[Conversation]:
    """Every ``*.json`` conversation in ``path``, by file name.

    Raises:
        FileNotFoundError: ``path`` is not a folder or holds no JSON file.
    """
    folder = Path(path)
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no LoCoMo *.json files in {folder}")
    return [load_conversation(json.loads(f.read_text(encoding="utf-8")), f.stem) for f in files]


def load_sample() -> list[Conversation]:
    """The small sample conversation shipped with memory-core."""
    text = resources.files("memory_core").joinpath("data/sample.json").read_text(encoding="utf-8")
    return [load_conversation(json.loads(text), "sample")]
