"""Explain helpers shared by the index and plan tests: capture the commands
the adapter sends, split a read plan's aggregate into its branches, explain
each one and collect the stages of the winning plan."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pymongo import monitoring


class Recorder(monitoring.CommandListener):
    """Keeps every find / aggregate command the adapter sends."""

    def __init__(self) -> None:
        self.commands: list[dict[str, Any]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name in ("find", "aggregate"):
            self.commands.append(dict(event.command))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if "stage" in node:
            yield node
        for key, value in node.items():
            if key != "rejectedPlans":
                yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def winning_stages(explain: dict[str, Any]) -> list[dict[str, Any]]:
    """Every stage of the winning plan(s) anywhere in an explain reply."""
    found: list[dict[str, Any]] = []

    def plans(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "winningPlan":
                    found.extend(_walk(value))
                elif key != "rejectedPlans":
                    plans(value)
        elif isinstance(node, list):
            for item in node:
                plans(item)

    plans(explain)
    return found


def queries(command: dict[str, Any]) -> list[dict[str, Any]]:
    """The queries one command runs, each as a command of its own: a find;
    an aggregate's own pipeline (with its hint) and each ``$unionWith``
    branch on its collection (MongoDB takes no hint there: the server's
    planner picks the index)."""
    keep = ("find", "aggregate", "filter", "sort", "hint", "skip", "limit", "projection")
    own = {k: v for k, v in command.items() if k in keep}
    if "aggregate" not in own:
        return [own]
    pipeline = command["pipeline"]
    cut = next((i for i, stage in enumerate(pipeline) if "$unionWith" in stage), len(pipeline))
    branches = [{**own, "pipeline": pipeline[:cut]}]
    for stage in pipeline[cut:]:
        union = stage["$unionWith"]
        branches.append({"aggregate": union["coll"], "pipeline": union["pipeline"]})
    return branches


def _first_match(query: dict[str, Any]) -> dict[str, Any]:
    if "filter" in query:
        return dict(query["filter"])
    stages = query["pipeline"]
    return dict(stages[0].get("$match", {})) if stages else {}


def by_id(query: dict[str, Any]) -> bool:
    """A lookup by ``_id`` (threads, resources, include targets)."""
    return "_id" in _first_match(query)


def is_sorted(query: dict[str, Any]) -> bool:
    """A page: its order must come from the index (a find's sort, or a pipeline's
    leading ``$match`` + ``$sort``)."""
    if "find" in query:
        return "sort" in query
    stages = query["pipeline"]
    return len(stages) > 1 and "$sort" in stages[1]


def explain_command(query: dict[str, Any]) -> dict[str, Any]:
    """The ``explain`` command (verbosity ``queryPlanner``) of one query."""
    if "aggregate" in query:
        query = {**query, "cursor": {}}
    return {"explain": query, "verbosity": "queryPlanner"}
