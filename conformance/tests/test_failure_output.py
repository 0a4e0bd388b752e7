"""What a failing suite test tells the adapter author: where the answers
differ (never two whole dumps), the script of a failing state-machine run,
the rule it checks, and Hypothesis settings that keep shrinking bounded."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import Phase
from hypothesis.internal.conjecture import engine
from memory_core_conformance.compare import (
    ABSENT,
    Failed,
    assert_same,
    brief,
    describe_difference,
    first_difference,
    summary,
)
from memory_core_conformance.harness import StoreSnapshot
from memory_core_conformance.plugin import RULE_SECTION
from memory_core_conformance.profiles import PROFILES, shrink_time_limit
from memory_core_conformance.stateful import run_storage_machine

from memory_core import InMemoryStorage
from memory_core.clock import Clock
from memory_core.models import Message, Page, Thread
from memory_core.query import MessageQuery

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _message(message_id: str, **fields: object) -> Message:
    return Message(
        id=message_id,
        thread_id="t1",
        role="user",
        content=f"{message_id} " + "x" * 200,
        resource_id="r1",
        created_at=T0,
        **fields,  # type: ignore[arg-type]
    )


def _page(items: list[Message], **fields: object) -> Page[Message]:
    values: dict[str, object] = {
        "total": len(items),
        "page": 0,
        "per_page": False,
        "has_more": False,
        "next_cursor": None,
        **fields,
    }
    return Page(items=items, **values)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the difference


def test_assert_same_shows_the_first_difference_not_both_answers() -> None:
    items = [_message(f"m{i:02}") for i in range(40)]
    changed = [*items[:3], _message("m03", metadata={"k": 1.0}), *items[4:]]
    with pytest.raises(AssertionError) as raised:
        assert_same(_page(changed), _page(items), "await store.list_messages('t1', per_page=False)")
    text = str(raised.value)
    assert text.splitlines() == [
        "await store.list_messages('t1', per_page=False): the adapter and the reference store disagree",
        "  first difference at answer.items[3, id='m03'].metadata['k']:",
        "    adapter:         1.0",
        "    reference store: <absent>",
    ]


def test_a_listing_difference_gives_counts_ids_and_every_differing_field() -> None:
    items = [_message(f"m{i:02}") for i in range(20)]
    adapter = _page(items[:2] + items[3:], per_page=25, total=19, next_cursor="abc")
    with pytest.raises(AssertionError) as raised:
        assert_same(adapter, _page(items, per_page=25), "list")
    lines = str(raised.value).splitlines()
    assert lines[1:4] == [
        "  first difference at answer.items[2].id:",
        "    adapter:         'm03'",
        "    reference store: 'm02'",
    ]
    assert lines[4] == (
        "  items: adapter 19 ['m00', 'm01', 'm03', 'm04', 'm05', 'm06', 'm07', 'm08', 'm09', 'm10', "
        "'m11', 'm12'] +7 more; reference store 20 ['m00', 'm01', 'm02', 'm03', 'm04', 'm05', 'm06', "
        "'m07', 'm08', 'm09', 'm10', 'm11'] +8 more"
    )
    assert lines[5] == (
        "  fields that differ (adapter / reference store): items, total 19 / 20, next_cursor a cursor / None"
    )
    assert len(lines) == 6


def test_a_store_snapshot_difference_lists_the_ids_of_each_differing_listing() -> None:
    threads = [Thread("t1", "r1", "", {}, T0, T0)]
    after = StoreSnapshot(threads, [_message("m1"), _message("m2")], [])
    before = StoreSnapshot(threads, [_message("m1")], [])
    assert describe_difference(after, before, ("after", "before"), root="store") == [
        "first difference at store.messages[1]:",
        "  after:  " + summary(_message("m2"))[:199] + "… (340 chars)",
        "  before: <absent>",
        "messages: after 2 ['m1', 'm2']; before 1 ['m1']",
    ]


def test_first_difference_keeps_json_types_and_ignores_sequence_and_cursor_text() -> None:
    assert first_difference({"a": [1, 2]}, {"a": [1, 2.0]}) == ("answer['a'][1]", 2, 2.0)
    assert first_difference({"a": True}, {"a": 1}) == ("answer['a']", True, 1)
    assert first_difference([1], [1, None]) == ("answer[1]", ABSENT, None)
    assert first_difference(_message("m1", sequence=3), _message("m1", sequence=9)) is None
    assert first_difference(_page([], next_cursor="x"), _page([], next_cursor="y")) is None
    failed = Failed(RuntimeError("driver"))
    assert first_difference(failed, _page([])) == ("answer", failed, _page([]))
    assert describe_difference(_page([]), _page([])) == []


def test_summary_is_one_line_per_answer() -> None:
    page = _page([_message("m1"), _message("m2")], total=5, per_page=2, has_more=True, next_cursor="c")
    assert summary(page) == "Page(ids=['m1', 'm2'], total=5, page=0, per_page=2, has_more=True, next_cursor=a cursor)"
    assert summary([_message("m1"), _message("m2")]) == "[Message 'm1', 'm2']"
    assert summary(Thread("t1", "r1", "", {}, T0, T0)) == (
        "Thread(id='t1', resource_id='r1', title='', metadata={}, created_at=2025-01-01T00:00:00+00:00, "
        "updated_at=2025-01-01T00:00:00+00:00, last_message_at=None)"
    )
    assert summary([]) == "[]" and summary(None) == "None"
    assert brief("x" * 500) == "'" + "x" * 198 + "… (502 chars)"
    assert brief(datetime(2025, 1, 1)) == "2025-01-01T00:00:00 (naive)"


# ------------------------------------------------------------------ Hypothesis settings


def test_no_profile_runs_the_explain_phase_and_shrinking_follows_the_profile() -> None:
    for profile in PROFILES.values():
        for chosen in (profile.property_settings(), profile.stateful_settings()):
            assert Phase.explain not in chosen.phases, profile.name
            assert Phase.generate in chosen.phases and Phase.reuse in chosen.phases
            assert (Phase.shrink in chosen.phases) == profile.shrink, profile.name
    assert PROFILES["ci"].shrink_seconds == PROFILES["stand-in"].shrink_seconds == 60
    assert PROFILES["deep"].shrink_seconds == 300


def test_shrink_time_limit_sets_and_restores_hypothesis_cap() -> None:
    before = engine.MAX_SHRINKING_SECONDS
    with pytest.raises(KeyError), shrink_time_limit(7):
        assert engine.MAX_SHRINKING_SECONDS == 7
        raise KeyError("the cap is restored on errors too")
    assert before == engine.MAX_SHRINKING_SECONDS


# ------------------------------------------------------------------ a real failing run


class _PerPageFalseIsZero(InMemoryStorage):
    """per_page=False answered with no messages (LIMIT 0): a real adapter bug."""

    async def _list_messages(self, query: MessageQuery) -> list[Message]:
        return [] if query.limit is None else await super()._list_messages(query)


def _broken(clock: Clock | None = None) -> InMemoryStorage:
    return _PerPageFalseIsZero(clock=clock)


def test_a_failing_state_machine_run_reads_as_a_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_CORE_HYPOTHESIS_PROFILE", "quick")
    with pytest.raises(AssertionError) as raised:
        run_storage_machine(_broken)
    message = str(raised.value).splitlines()
    operation, _, verdict = message[0].partition(": ")
    assert operation.startswith("await ") and verdict == "the adapter and the reference store disagree"
    assert message[1].startswith("  first difference at answer.") and len(message) <= 8
    notes = raised.value.__notes__
    steps = [note for note in notes if note.startswith("await store.")]
    answers = [note for note in notes if note.startswith("# -> ")]
    assert any("per_page=False" in step for step in steps) or "snapshot" in operation
    assert notes.index(steps[0]) + 1 == notes.index(answers[0]), "each store call is followed by its answer"
    assert len(answers) == len(steps) and all("\n" not in answer for answer in answers)
    assert any(note.startswith(operation) for note in notes), "the failing call ends the script"
    assert not any("Explanation:" in note for note in notes)


def test_a_failing_suite_test_states_its_rule(tmp_path: Path) -> None:
    module = tmp_path / "test_rule_section.py"
    module.write_text(
        textwrap.dedent("""
        import pytest
        from memory_core.query import MessageQuery
        from memory_core.reference import InMemoryStorage
        from memory_core_conformance import StorageConformance

        class Broken(InMemoryStorage):
            async def _list_messages(self, query: MessageQuery):
                return [] if query.limit is None else await super()._list_messages(query)

        class TestBroken(StorageConformance):
            @pytest.fixture
            def storage_factory(self):
                return lambda clock=None: Broken(clock=clock)

        def test_not_in_the_suite():
            assert False
    """),
        encoding="utf-8",
    )
    sections: dict[str, list[tuple[str, str]]] = {}

    class Recorder:
        def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
            if report.when == "call":
                sections[report.nodeid.rsplit("::", 1)[-1]] = report.sections

    pytest.main(
        [
            str(module),
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-k",
            "per_page_false_means_all or per_page_zero or not_in_the_suite",
        ],
        plugins=[Recorder()],
    )
    rule = [text for title, text in sections["test_r_page_per_page_false_means_all"] if title == RULE_SECTION]
    assert len(rule) == 1 and rule[0].startswith("R-PAGE (page / per_page bounds, total, has_more): page is an int")
    assert sections["test_r_page_per_page_zero_counts_total"] == []  # passed
    assert all(title != RULE_SECTION for title, _ in sections["test_not_in_the_suite"])
