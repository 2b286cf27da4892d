"""Filtered and scoped search at 100K text cells (`MAGBENCH_PERF_N`) in memory: 1% of the cells match.

The cells belong to 100 users, one in a hundred each: in the first memory the user is a metadata field
(`where={"user": ...}`), in the second a scope (`scope=...`). A third memory holds the same cells in two
scopes of half each (a search there probes its scope's groups). Each search is timed 30 times beside the same
text searches unfiltered; every filtered search must return k hits, all of the user's. The summary gives
the medians and their ratios.
"""

from __future__ import annotations

import itertools

import pytest

from reference import CellularMemory
from tests.bench.conftest import N, record, record_ratio, time_queries
from tests.bench.test_agent_loop import ENCODER, loop_texts

ROUNDS = 30
USERS = 100
K = 10


@pytest.fixture(scope="module")
def users():
    """One memory with the user in each cell's metadata, one with the user as each cell's scope, and one with
    the cells in two scopes."""
    texts = loop_texts(N)
    owners = [f"u{i % USERS}" for i in range(N)]
    by_field, by_scope, by_half = (CellularMemory(encoder=ENCODER) for _ in range(3))
    for start in range(0, N, 50_000):
        part = slice(start, start + 50_000)
        vectors = ENCODER.encode(texts[part])
        by_field.add(texts[part], vectors=vectors, metadata=[{"user": owner} for owner in owners[part]])
        by_scope.add(texts[part], vectors=vectors, scope=owners[part])
        by_half.add(texts[part], vectors=vectors, scope=[f"h{i % 2}" for i in range(start, start + len(vectors))])
    queries = itertools.cycle(loop_texts(1_000, start=3))
    for memory in (by_field, by_scope, by_half):
        memory.search(next(queries), k=K)  # the first search of the process loads the compiled kernels
    yield by_field, by_scope, by_half, queries
    for memory in (by_field, by_scope, by_half):
        memory.close()


def timed(benchmark, search, queries, name: str) -> list:
    found: list = []
    time_queries(
        benchmark,
        lambda text: found.append(search(text)),
        setup=lambda: ((next(queries),), {}),
        rounds=ROUNDS,
        warmup_rounds=2,
    )
    record(name, benchmark.stats.stats.median)
    return found


def test_unfiltered_text_search(benchmark, users):
    by_field, _, _, queries = users
    found = timed(benchmark, lambda text: by_field.search(text, k=K), queries, "filter_unfiltered_search_s")
    assert all(len(hits) == K for hits in found)


def test_text_search_filtered_to_one_percent(benchmark, users):
    by_field, _, _, queries = users
    where = {"user": "u7"}
    found = timed(benchmark, lambda text: by_field.search(text, k=K, where=where), queries, "filter_where_search_s")
    record_ratio("filter_where_vs_unfiltered", "filter_where_search_s", "filter_unfiltered_search_s")
    assert all(len(hits) == K and {h.metadata["user"] for h in hits} == {"u7"} for hits in found)


def test_text_search_in_a_scope_of_one_percent(benchmark, users):
    _, by_scope, _, queries = users
    owned = set(by_scope.ids(scope="u7"))
    found = timed(benchmark, lambda text: by_scope.search(text, k=K, scope="u7"), queries, "filter_scope_search_s")
    record_ratio("filter_scope_vs_unfiltered", "filter_scope_search_s", "filter_unfiltered_search_s")
    assert all(len(hits) == K and {h.id for h in hits} <= owned for hits in found)


def test_text_search_in_one_of_two_scopes(benchmark, users):
    *_, by_half, queries = users
    owned = set(by_half.ids(scope="h1"))
    found = timed(benchmark, lambda text: by_half.search(text, k=K, scope="h1"), queries, "filter_half_scope_search_s")
    record_ratio("filter_half_scope_vs_unfiltered", "filter_half_scope_search_s", "filter_unfiltered_search_s")
    assert all(len(hits) == K and {h.id for h in hits} <= owned for hits in found)
