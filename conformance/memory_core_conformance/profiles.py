"""How hard the suite tries: named profiles chosen by an environment variable.

``MEMORY_CORE_HYPOTHESIS_PROFILE`` selects one of :data:`PROFILES` (default
``dev``). Each profile is also registered with Hypothesis as
``memory-core-<name>`` (see :func:`register_hypothesis_profiles`), but it is
never *loaded* globally: the suite applies it to its own tests only, so
installing the plugin changes nothing in other test suites.

========  ==========  ===========  =====  =======  ============  ==============
profile   properties  state runs   steps  repeats  derandomised  shrink (at most)
========  ==========  ===========  =====  =======  ============  ==============
kill      10          30           50     1        yes           no
quick     8           12           20     2        yes           30 s
dev       25          50           30     3        no            120 s
ci        40          200          50     5        yes           60 s
stand-in  10          25           30     2        yes           60 s
deep      400         2000         50     50       no            300 s
========  ==========  ===========  =====  =======  ============  ==============

``quick`` is for smoke runs, ``kill`` for the suite's own test that broken
adapters fail it (no shrinking: only "does it fail" matters there), ``ci`` is
what our CI runs (bounded: about a minute or two per backend on 2 cores),
``deep`` is for nightly runs, and ``stand-in`` is what an adapter's test class
may pick (the ``conformance_profile`` fixture) for a test server far slower
than the real backend, such as a pure-Python wire-compatible stand-in.
Every profile has ``deadline=None`` (networked backends vary) and no example
database (a live ``check`` leaves no files behind).

Shrinking a failure is capped in time (:func:`shrink_time_limit`): finding
it is unaffected, only how short the printed example gets; at the cap
Hypothesis prints the shortest failing example so far (with a warning that
speaks of its own five-minute default). No profile runs Hypothesis' explain
phase, which replays a shrunk failure many times to list lines "always and
only run by failing test cases": for this suite that is always the
comparison, and it used to take longer than the shrinking itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings
from hypothesis.internal.conjecture import engine

__all__ = [
    "CHOSEN_PROFILES",
    "DEFAULT_PROFILE",
    "ENV_VAR",
    "PROFILES",
    "ConformanceProfile",
    "active_profile",
    "profile_table",
    "register_hypothesis_profiles",
    "shrink_time_limit",
]

ENV_VAR = "MEMORY_CORE_HYPOTHESIS_PROFILE"
"""Environment variable naming the active profile."""

DEFAULT_PROFILE = "dev"

_SUPPRESSED = (
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
    HealthCheck.function_scoped_fixture,
)


@dataclass(frozen=True, slots=True)
class ConformanceProfile:
    """One named effort level.

    Attributes:
        name: the profile's name (``ci``).
        property_examples: Hypothesis examples per property test.
        stateful_runs: state-machine sequences per backend.
        stateful_steps: maximum steps per state-machine sequence.
        repeats: repetitions of the concurrency cases (C12 asks for 20 new
            files: the `deep` profile does more; SQLite runs its own 20 in its
            adapter tests, so `ci` keeps this at 5 to stay in budget).
        derandomize: whether Hypothesis runs are reproducible (seeded by the
            test's source).
        shrink: whether Hypothesis shrinks a failing example (off only where
            the failure itself is all that matters).
        shrink_seconds: wall-time cap on shrinking one failure, in seconds
            (see :func:`shrink_time_limit`).
    """

    name: str
    property_examples: int
    stateful_runs: int
    stateful_steps: int
    repeats: int
    derandomize: bool
    shrink: bool = True
    shrink_seconds: int = 300

    @property
    def hypothesis_name(self) -> str:
        """The name this profile is registered under with Hypothesis."""
        return f"memory-core-{self.name}"

    def property_settings(self) -> settings:
        """Hypothesis settings for the property tests."""
        phases = tuple(p for p in Phase if p is not Phase.explain and (self.shrink or p is not Phase.shrink))
        return settings(
            phases=phases,
            max_examples=self.property_examples,
            derandomize=self.derandomize,
            deadline=None,
            database=None,
            suppress_health_check=_SUPPRESSED,
            print_blob=not self.derandomize,
        )

    def describe(self) -> str:
        """One line of what the profile runs (pytest's header prints it)."""
        shrink = f"shrinking capped at {self.shrink_seconds} s" if self.shrink else "no shrinking"
        return (
            f"{self.property_examples} examples per property, {self.stateful_runs} state-machine runs "
            f"of up to {self.stateful_steps} steps, {self.repeats} repeats of the concurrency cases, "
            f"{'derandomised' if self.derandomize else 'random'}, {shrink}"
        )

    def stateful_settings(self) -> settings:
        """Hypothesis settings for the state machine (runs and steps)."""
        return settings(
            self.property_settings(),
            max_examples=self.stateful_runs,
            stateful_step_count=self.stateful_steps,
        )


PROFILES: dict[str, ConformanceProfile] = {
    p.name: p
    for p in (
        ConformanceProfile("kill", 10, 30, 50, 1, True, shrink=False),
        ConformanceProfile("quick", 8, 12, 20, 2, True, shrink_seconds=30),
        ConformanceProfile("dev", 25, 50, 30, 3, False, shrink_seconds=120),
        ConformanceProfile("ci", 40, 200, 50, 5, True, shrink_seconds=60),
        ConformanceProfile("stand-in", 10, 25, 30, 2, True, shrink_seconds=60),
        ConformanceProfile("deep", 400, 2000, 50, 50, False),
    )
}
"""Every profile by name."""

CHOSEN_PROFILES = ("quick", "dev", "ci", "deep")
"""The profiles a user chooses (``memory-core check --profile``, the
environment variable), the ones an error lists; ``kill`` and ``stand-in``
serve the project's own tests (the suite against broken adapters, an
adapter's slow test server) and are accepted, not offered."""


def active_profile() -> ConformanceProfile:
    """The profile named by ``MEMORY_CORE_HYPOTHESIS_PROFILE`` (read now, so a
    caller may change the variable between runs), default ``dev``.

    Raises:
        ValueError: the variable names no known profile.
    """
    name = os.environ.get(ENV_VAR, "").strip() or DEFAULT_PROFILE
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"{ENV_VAR}={name!r} is not a profile; choose one of {', '.join(CHOSEN_PROFILES)}") from None


def profile_table() -> str:
    """The Markdown table of :data:`PROFILES` that conformance/README.md
    carries (its test compares the two)."""
    lines = [
        "| profile | examples per property | state-machine runs | steps per run | concurrency repeats "
        "| derandomised | shrink cap |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in PROFILES.values():
        shrink = f"{p.shrink_seconds} s" if p.shrink else "no shrinking"
        lines.append(
            f"| `{p.name}` | {p.property_examples} | {p.stateful_runs} | {p.stateful_steps} | {p.repeats} "
            f"| {'yes' if p.derandomize else 'no'} | {shrink} |"
        )
    return "\n".join(lines)


def register_hypothesis_profiles() -> None:
    """Register every profile with Hypothesis as ``memory-core-<name>`` (its
    property settings), without loading any of them."""
    for profile in PROFILES.values():
        settings.register_profile(profile.hypothesis_name, profile.property_settings())


@contextmanager
def shrink_time_limit(seconds: int) -> Iterator[None]:
    """Cap the time Hypothesis spends shrinking one failure while the block runs.

    Hypothesis has no setting for this (its maintainers keep shrinking an
    internal matter); the engine holds the cap, 300 s by default, in
    ``MAX_SHRINKING_SECONDS``, which it keeps monkeypatchable on purpose. The
    previous value is restored on exit.

    Args:
        seconds: the cap, in seconds of wall time.
    """
    previous = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = seconds
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = previous
