"""Metadata and `where` filters on which every peer must agree with Chroma's semantics (`where_syntax`): a
key missing matches no condition, `$ne` / `$nin` need the key, a boolean is never a number, 2 and 2.0 are equal,
"3" and 3 are not, keys may hold dots, quotes and non-ASCII letters."""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.protocol import Document, Query

METADATA: list[dict[str, Any]] = [
    {"colour": "red", "rank": 0, "flag": True, "ratio": 0.5, "code": "3"},
    {"colour": "blue", "rank": 1, "flag": False, "ratio": 1.5},
    {"colour": "red", "rank": 2.0, "code": 3},
    {"rank": 3, "a.b": "dot", "it's": "Grüße"},
    {"colour": "green", "flag": 1},
    {},
]

CASES: list[tuple[dict[str, Any], set[int]]] = [
    ({"colour": "red"}, {0, 2}),
    ({"colour": {"$eq": "blue"}}, {1}),
    ({"colour": {"$ne": "red"}}, {1, 4}),
    ({"colour": {"$nin": ["red", "blue"]}}, {4}),
    ({"colour": {"$in": ["blue", "green"]}}, {1, 4}),
    ({"flag": True}, {0}),
    ({"flag": 1}, {4}),
    ({"rank": {"$gte": 2}}, {2, 3}),
    ({"rank": {"$lte": 1}}, {0, 1}),
    ({"rank": 2}, {2}),
    ({"ratio": 0.5}, {0}),
    ({"ratio": {"$gt": 1}}, {1}),
    ({"code": "3"}, {0}),
    ({"code": 3}, {2}),
    ({"a.b": "dot"}, {3}),
    ({"it's": "Grüße"}, {3}),
    ({"$or": [{"rank": {"$lt": 1}}, {"colour": "green"}]}, {0, 4}),
    ({"$and": [{"colour": "red"}, {"rank": {"$gt": 0}}]}, {2}),
    ({"rank": {"$lt": 10}, "colour": "red"}, {0, 2}),
    ({"colour": "violet"}, set()),
]


def nested(levels: int) -> dict[str, Any]:
    """A filter whose `$and` nests `levels` deep (deeper than any walk of it could recurse, when `levels` is large)."""
    where: dict[str, Any] = {"rank": 1}
    for _ in range(levels):
        where = {"$and": [where]}
    return where


MALFORMED: list[Any] = [
    {"rank": {"$gt": "a"}},
    {"$xor": [{"rank": 1}]},
    {"rank": {"$in": []}},
    {},
    {"rank": float("nan")},
    {"rank": {"$lt": float("inf")}},
    {"colour": ["red"]},
    {"rank": 2**63},
    {"rank": {"$gte": -(2**63) - 1}},
    {"rank": {"$in": [1, 2**64]}},
    nested(5000),
]


def documents(dim: int) -> list[Document]:
    vectors = np.random.default_rng(0).normal(size=(len(METADATA), dim))
    return [Document(f"m{i}", f"document {i}", vectors[i], metadata) for i, metadata in enumerate(METADATA)]


def found(system: Any, where: Any, dim: int) -> set[int]:
    """The documents a filtered search of every document returns."""
    query = Query("q", "document", np.ones(dim), where=where)
    return {int(h.doc_id[1:]) for h in system.search(query, k=len(METADATA))}
