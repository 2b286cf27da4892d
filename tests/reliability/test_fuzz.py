"""Fuzz the public API: arbitrary text, vectors and ids; only the engine's typed errors may escape,
and the memory stays consistent."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from reference import CellularMemory, MagneticError
from reference.common.validation import MAX_TEXT_CHARS
from reference.encoders import MockEncoder
from tests.reliability.counts import record

DIM = 16
TRIED: dict[str, int] = {"examples": 0, "operations": 0, "typed_errors": 0, "accepted": 0}

texts = st.one_of(
    st.text(),  # any unicode, control characters, surrogates excluded by hypothesis
    st.text(st.characters(codec="utf-8", exclude_categories=()), min_size=1),
    st.sampled_from(["", " ", "\x00", "\u202e\u200b", "x" * MAX_TEXT_CHARS, "y" * (MAX_TEXT_CHARS + 1)]),
    st.integers(),
    st.none(),
    st.binary(max_size=20),
    st.floats(),
)
special = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1e308, -1e-308, 1.0])
vectors = st.one_of(
    st.none(),
    arrays(
        np.float64,
        st.tuples(st.integers(0, 3), st.sampled_from([0, 1, DIM - 1, DIM, DIM + 1])),
        elements=st.one_of(st.floats(-1e6, 1e6), special),
    ),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=DIM + 1),
    st.text(max_size=5),
)
ids = st.one_of(st.text(max_size=8), st.lists(st.text(max_size=8), max_size=4), st.integers(), st.none())
words = st.lists(
    st.sampled_from("cat dog Lisbon Maria Lopez tax rain ünïcødé 東京 report.pdf".split()), min_size=1, max_size=5
).map(" ".join)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5), st.sampled_from([10**400, -(2**63) - 1])
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3),
    max_leaves=12,
)
metadatas = st.dictionaries(st.text(max_size=4), values, max_size=4) | values
filter_leaves = st.one_of(
    st.dictionaries(st.text(max_size=3), scalars, min_size=1, max_size=2),
    st.builds(lambda key, op, value: {key: {op: value}}, st.sampled_from(["n", "tag"]),
              st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$regex"]),
              scalars | st.lists(scalars, max_size=3)),
)  # fmt: skip
filters = st.recursive(
    filter_leaves,
    lambda inner: st.builds(
        lambda op, parts: {op: parts}, st.sampled_from(["$and", "$or"]), st.lists(inner, max_size=3)
    ),
    max_leaves=8,
) | st.integers(2, 60).map(lambda depth: deep_filter(depth))


def deep_filter(depth: int) -> dict:
    """`$and` nested `depth` levels (the limit is 32)."""
    where: dict = {"tag": "x"}
    for _ in range(depth):
        where = {"$and": [where]}
    return where


operations = st.lists(
    st.one_of(
        st.tuples(st.just("add_meta"), words, metadatas, st.one_of(st.none(), st.integers(), st.floats())),
        st.tuples(st.just("search_where"), words, filters, st.one_of(st.none(), st.integers(), st.floats())),
        st.tuples(st.just("update"), ids, words, metadatas),
        st.tuples(st.just("add"), st.lists(words, min_size=1, max_size=4), st.none(), st.none()),
        st.tuples(st.just("search"), words, st.integers(1, 8)),
        st.tuples(st.just("add"), st.lists(texts, max_size=3) | texts, vectors, st.one_of(st.none(), ids)),
        st.tuples(st.just("search"), st.one_of(texts, vectors), st.one_of(st.integers(-2, 12), st.floats(), st.none())),
        st.tuples(st.just("delete"), ids),
        st.tuples(st.just("get"), ids),
    ),
    max_size=12,
)


def consistent(memory: CellularMemory) -> None:
    live = memory.ids()
    assert len(live) == len(set(live)) == len(memory)
    memory.check_invariants()  # groups, centroids, group, entity and lexical indexes agree with the cells


def apply(memory: CellularMemory, operation: tuple) -> None:
    name, *args = operation
    if name == "add":
        memory.add(args[0], vectors=args[1], ids=args[2])
    elif name == "search":
        memory.search(args[0], k=args[1])
    elif name == "delete":
        memory.delete(args[0])
    elif name == "add_meta":
        [cell] = memory.add(args[0], metadata=args[1], timestamps=None if args[2] is None else [args[2]])
        given = {} if args[1] is None else args[1][0] if isinstance(args[1], list) else args[1]  # one, or one per text
        assert memory.get(cell).metadata == json.loads(json.dumps(given))  # held as a store gives it back
    elif name == "search_where":
        memory.search(args[0], where=args[1], since=args[2])
    elif name == "update":
        target = args[0] if isinstance(args[0], str) and args[0] in memory else (memory.ids() or ["none"])[0]
        memory.update(target, text=args[1], metadata=args[2])
    else:
        memory.get(args[0])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(operations)
def test_only_typed_errors_escape_and_the_memory_stays_consistent(sequence):
    with CellularMemory(encoder=MockEncoder(DIM)) as memory:
        memory.add(["a seed note", "another seed note"])
        for operation in sequence:
            TRIED["operations"] += 1
            try:
                apply(memory, operation)
                TRIED["accepted"] += 1
            except MagneticError:
                TRIED["typed_errors"] += 1
            consistent(memory)
    TRIED["examples"] += 1
    record("fuzz", **TRIED)  # after every example: xdist may run this test anywhere
