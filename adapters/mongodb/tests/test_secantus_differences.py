"""Where secantusdb (the test server) differs from MongoDB's documented behaviour.

Each test pins one difference *on secantusdb only*, so a secantusdb release
that changes the behaviour makes the test fail and the note in the README
gets revisited. The adapter avoids or neutralises every one of them (named
in each docstring), so it stays correct on real MongoDB.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from bson.int64 import Int64
from memory_core_mongodb.testing import unique_namespace
from pymongo import AsyncMongoClient, IndexModel
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

pytestmark = pytest.mark.anyio

Doc = dict[str, Any]


@pytest.fixture
async def collection(secantus_url: str) -> AsyncIterator[AsyncCollection[Doc]]:
    client: AsyncMongoClient[Doc] = AsyncMongoClient(secantus_url)
    db = client[f"diff_{unique_namespace()}"]
    coll = db["m"]
    await coll.create_indexes(
        [
            IndexModel([("thread_id", 1), ("created_at", 1), ("seq", 1)], name="thread_order"),
            IndexModel([("thread_id", 1), ("meta.k", 1), ("meta.v", 1)], name="thread_meta"),
        ]
    )
    await coll.insert_many(
        [
            {
                "_id": f"m{i}",
                "thread_id": f"t{i % 10}",
                "resource_id": f"r{i % 2}",
                "created_at": Int64(i // 3),
                "seq": Int64(i),
                "meta": [{"k": "tag", "v": i % 3}],
            }
            for i in range(300)
        ]
    )
    try:
        yield coll
    finally:
        await client.drop_database(db.name)
        await client.close()


def _stages(explain: Doc) -> list[str]:
    names: list[str] = []
    node: Any = explain["queryPlanner"]["winningPlan"]
    while isinstance(node, dict):
        names.append(node["stage"])
        node = node.get("inputStage")
    return names


async def test_secantus_differs_var_path_over_array_of_documents(collection: AsyncCollection[Doc]) -> None:
    """MongoDB: ``"$$arr.k"`` over an array of documents is the array of their
    ``k`` values. secantusdb: null. The adapter's merge pipeline uses the
    portable ``{"$map": {"input": "$$arr", "in": "$$e.k"}}`` instead."""
    cursor = await collection.aggregate(
        [
            {"$match": {"_id": "m1"}},
            {
                "$project": {
                    "_id": 0,
                    "path": {"$let": {"vars": {"a": "$meta"}, "in": "$$a.k"}},
                    "mapped": {"$map": {"input": "$meta", "as": "e", "in": "$$e.k"}},
                }
            },
        ]
    )
    doc = await cursor.to_list()
    assert doc == [{"path": None, "mapped": ["tag"]}]  # MongoDB gives path == ["tag"]


async def test_secantus_differs_planner_scans_the_collection_without_a_hint(collection: AsyncCollection[Doc]) -> None:
    """MongoDB picks the ``thread_order`` index for equality on its prefix plus
    another field. secantusdb's planner scans the collection (and picks a
    multikey index for a plain thread query). The adapter hints every query."""
    explain = (
        await collection.find({"thread_id": "t3", "resource_id": "r1"}).sort([("created_at", 1), ("seq", 1)]).explain()
    )
    assert "COLLSCAN" in _stages(explain)
    hinted = (
        await collection.find({"thread_id": "t3", "resource_id": "r1"})
        .sort([("created_at", 1), ("seq", 1)])
        .hint("thread_order")
        .explain()
    )
    assert "COLLSCAN" not in _stages(hinted) and "IXSCAN" in _stages(hinted)


async def test_secantus_differs_sort_is_never_taken_from_the_index(collection: AsyncCollection[Doc]) -> None:
    """MongoDB reads ``thread_order`` in order and needs no SORT stage (a page
    of k rows costs O(k)). secantusdb fetches the matching range and sorts it
    in memory (correct results, cost O(thread size) per page). Results are
    equal; only the cost differs, which matters for benchmarks on secantusdb."""
    explain = (
        await collection.find({"thread_id": "t3"})
        .sort([("created_at", 1), ("seq", 1)])
        .hint("thread_order")
        .limit(5)
        .explain()
    )
    assert _stages(explain)[0] == "SORT"
    ids = [d["_id"] async for d in collection.find({"thread_id": "t3"}).sort([("created_at", 1), ("seq", 1)]).limit(3)]
    assert ids == ["m3", "m13", "m23"]


async def test_secantus_differs_count_stage_inside_union_with(collection: AsyncCollection[Doc]) -> None:
    """MongoDB runs ``$count`` in any pipeline, a ``$unionWith`` branch
    included. secantusdb refuses it there ("Unrecognized expression
    '$count'") though it runs it at the top level. The adapter's read plans
    count with ``{"$group": {"_id": None, "n": {"$sum": 1}}}`` (the same
    exact count) in every branch."""
    empty: Doc = {"$match": {"_id": "none"}}
    branch: list[Doc] = [{"$match": {"thread_id": "t3"}}, {"$count": "n"}]
    with pytest.raises(OperationFailure, match=r"\$count"):
        await collection.aggregate([empty, {"$unionWith": {"coll": collection.name, "pipeline": branch}}])
    top = await (await collection.aggregate(branch)).to_list()
    grouped: list[Doc] = [{"$match": {"thread_id": "t3"}}, {"$group": {"_id": None, "n": {"$sum": 1}}}]
    union = await (
        await collection.aggregate([empty, {"$unionWith": {"coll": collection.name, "pipeline": grouped}}])
    ).to_list()
    assert top == [{"n": 30}] and union == [{"_id": None, "n": 30}]
