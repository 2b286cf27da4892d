"""SPEC.md's requirements, one or more tests each (see the `requirement` markers)."""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from harness.conformance.plugin import DIM, SystemUnderTest
from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.measure.metrics import recall_at_k
from harness.protocol import Document, Query

N = 60
DATA = clustered_unit_vectors(N, DIM, clusters=6, spread=0.6, queries=20, seed=5)
WORDS = "amber birch cedar delta ember fjord grove harbor iris juniper kelp lumen".split()
NON_ASCII = [
    "Grüße aus Köln — ça va? 😀",
    "東京で寿司を食べました",
    "مرحبا بالعالم",
    "Ελληνικά κείμενα",
    "e\u0301clair",
]


def text_of(i: int) -> str:
    return f"note {i}: {WORDS[i % 12]} {WORDS[(i * 5) % 12]} {WORDS[(i * 7 + 3) % 12]} {i}"


def documents(system: Any, rows: Sequence[int] = range(N), texts: Sequence[str] | None = None) -> list[Document]:
    with_vectors = "vectors" in system.capabilities
    return [
        Document(f"doc-{i}", texts[j] if texts else text_of(i), DATA.vectors[i] if with_vectors else None)
        for j, i in enumerate(rows)
    ]


def query_for(system: Any, i: int) -> Query:
    """A query aimed at document i: its vector if the system takes vectors, else its text."""
    with_vectors = "vectors" in system.capabilities
    return Query(f"q-{i}", text_of(i), DATA.vectors[i] if with_vectors else None)


def probe_queries(system: Any) -> list[Query]:
    with_vectors = "vectors" in system.capabilities
    return [Query(f"p-{j}", WORDS[j % 12], DATA.queries[j] if with_vectors else None) for j in range(10)]


def sorted_best_first(scores: list[float]) -> bool:
    return all(a >= b - 1e-9 for a, b in pairwise(scores))


def finds(system: Any, i: int) -> bool:
    k = 1 if "vectors" in system.capabilities else 10
    return f"doc-{i}" in [h.doc_id for h in system.search(query_for(system, i), k=k)]


@pytest.fixture
def loaded(system_under_test: SystemUnderTest) -> Any:
    system = system_under_test.open()
    system.add(documents(system))
    return system


@pytest.mark.requirement("MB-DECL-1", "MB-DECL-2")
def test_declaration(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    assert isinstance(system.name, str) and system.name
    assert set(system.capabilities) & {"text", "vectors"}


@pytest.mark.requirement("MB-ADD-1")
def test_every_added_document_is_searchable(loaded: Any) -> None:
    missing = [i for i in range(N) if not finds(loaded, i)]
    assert not missing, f"documents not found after add: {missing[:10]}"


@pytest.mark.requirement("MB-ADD-2")
def test_texts_in_any_script_are_accepted(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    rows = range(len(NON_ASCII))
    docs = documents(system, rows, NON_ASCII)
    docs = [Document(d.id, d.text, d.vector, {"note": d.text}) for d in docs]
    system.add(docs)
    query = Query("u", NON_ASCII[1], DATA.vectors[1]) if "vectors" in system.capabilities else Query("u", NON_ASCII[1])
    assert "doc-1" in [h.doc_id for h in system.search(query, k=len(NON_ASCII))]


@pytest.mark.requirement("MB-ADD-3")
def test_documents_from_several_batches_are_all_searchable(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    for start in range(0, N, 20):
        system.add(documents(system, range(start, start + 20)))
    assert all(finds(system, i) for i in (0, 19, 20, 39, 40, 59))


@pytest.mark.requirement("MB-SEARCH-1")
@pytest.mark.parametrize("k", [1, 3, 7])
def test_at_most_k_hits(loaded: Any, k: int) -> None:
    for query in probe_queries(loaded):
        assert len(loaded.search(query, k=k)) <= k


@pytest.mark.requirement("MB-SEARCH-2")
def test_no_document_twice(loaded: Any) -> None:
    for query in probe_queries(loaded):
        ids = [h.doc_id for h in loaded.search(query, k=10)]
        assert len(ids) == len(set(ids))


@pytest.mark.requirement("MB-SEARCH-3")
def test_hits_are_sorted_best_first(loaded: Any) -> None:
    for query in probe_queries(loaded):
        scores = [h.score for h in loaded.search(query, k=10)]
        assert all(math.isfinite(s) for s in scores)
        assert sorted_best_first(scores), scores


@pytest.mark.requirement("MB-SEARCH-4")
@pytest.mark.parametrize("k", [5, N + 5])
def test_complete_answers(loaded: Any, k: int) -> None:
    for query in probe_queries(loaded)[:3]:
        assert len(loaded.search(query, k=k)) == min(k, N)


@pytest.mark.requirement("MB-SEARCH-5")
def test_only_added_ids(loaded: Any) -> None:
    known = {f"doc-{i}" for i in range(N)}
    for query in probe_queries(loaded):
        assert {h.doc_id for h in loaded.search(query, k=10)} <= known


@pytest.mark.requirement("MB-SEARCH-6")
@pytest.mark.capability("vectors")
def test_own_vector_finds_the_document(loaded: Any) -> None:
    for i in range(0, N, 7):
        [hit] = loaded.search(query_for(loaded, i), k=1)
        assert hit.doc_id == f"doc-{i}" or np.allclose(DATA.vectors[int(hit.doc_id.split("-")[1])], DATA.vectors[i])


@pytest.mark.requirement("MB-SEARCH-7")
@pytest.mark.capability("vectors")
def test_recall_against_exact_search(loaded: Any) -> None:
    truth = [[f"doc-{i}" for i in row] for row in exact_top_k(DATA.vectors, DATA.queries, 10).tolist()]
    found = [
        [h.doc_id for h in loaded.search(Query(f"r{j}", f"probe {j}", q), k=10)] for j, q in enumerate(DATA.queries)
    ]
    recall = recall_at_k(found, truth, 10)
    assert recall >= 0.9, f"recall@10 {recall:.3f}"


@pytest.mark.requirement("MB-SEARCH-8")
@pytest.mark.capability("text")
def test_exact_text_finds_the_document(loaded: Any) -> None:
    for i in range(0, N, 11):
        query = Query(f"t{i}", text_of(i), DATA.vectors[i] if "vectors" in loaded.capabilities else None)
        assert f"doc-{i}" in [h.doc_id for h in loaded.search(query, k=10)]


@pytest.mark.requirement("MB-ERR-1")
@pytest.mark.parametrize("k", [0, -3])
def test_k_below_one_is_refused(loaded: Any, k: int) -> None:
    with pytest.raises(ValueError):
        loaded.search(probe_queries(loaded)[0], k=k)
    assert len(loaded.search(probe_queries(loaded)[0], k=N)) == N


@pytest.mark.requirement("MB-PERSIST-1")
@pytest.mark.capability("persist")
def test_documents_survive_close_and_reopen(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(documents(system))
    reopened = system_under_test.reopen(system)
    missing = [i for i in range(N) if not finds(reopened, i)]
    assert not missing, f"lost on reopen: {missing[:10]}"


@pytest.mark.requirement("MB-PERSIST-2")
@pytest.mark.capability("persist")
def test_adding_after_reopen_keeps_earlier_documents(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(documents(system, range(0, 30)))
    reopened = system_under_test.reopen(system)
    reopened.add(documents(reopened, range(30, N)))
    assert all(finds(reopened, i) for i in (0, 29, 30, 59))


@pytest.mark.requirement("MB-CONS-1")
@pytest.mark.capability("consolidate")
def test_consolidation_loses_and_duplicates_nothing(loaded: Any) -> None:
    loaded.consolidate()
    assert all(finds(loaded, i) for i in range(N))
    ids = [h.doc_id for h in loaded.search(probe_queries(loaded)[0], k=N + 5)]
    assert len(ids) == len(set(ids)) == N


@pytest.mark.requirement("MB-CHURN-1")
@pytest.mark.capability("delete")
def test_churn_never_loses_a_live_document_nor_returns_a_deleted_one(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(documents(system, range(0, 40)))
    live, deleted = set(range(40)), set[int]()
    rng = np.random.default_rng(3)
    for round_ in range(4):
        gone = {int(i) for i in rng.choice(sorted(live), size=8, replace=False)}
        system.delete([f"doc-{i}" for i in sorted(gone)])
        back = set(sorted(deleted)[:4]) | ({40 + round_ * 5 + j for j in range(5)} & set(range(N)))
        system.add(documents(system, sorted(back)))
        live, deleted = (live - gone) | back, (deleted | gone) - back
        if "consolidate" in system.capabilities:
            system.consolidate()
        if "persist" in system.capabilities:
            system = system_under_test.reopen(system)
        lost = [i for i in sorted(live) if not finds(system, i)]
        assert not lost, f"round {round_}: live documents not found: {lost[:10]}"
        returned = {h.doc_id for q in probe_queries(system) for h in system.search(q, k=N)}
        ghosts = sorted(returned & {f"doc-{i}" for i in deleted})
        assert not ghosts, f"round {round_}: deleted documents returned: {ghosts[:10]}"


@pytest.mark.requirement("MB-MEM-1")
@pytest.mark.capability("memory_scoring")
def test_memory_mode_answers_follow_the_search_rules(loaded: Any) -> None:
    for query in probe_queries(loaded):
        hits = loaded.search(query, k=5, mode="memory")
        scores = [h.score for h in hits]
        assert len(hits) <= 5 and len({h.doc_id for h in hits}) == len(hits)
        assert sorted_best_first(scores), scores


@pytest.mark.requirement("MB-MEM-2")
@pytest.mark.capability("memory_scoring")
def test_memory_mode_prefers_the_more_recent_of_two_equal_documents(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    vector = DATA.vectors[0] if "vectors" in system.capabilities else None
    now = time.time()
    system.add(
        [
            Document("old", "the meeting is on Monday", vector, {"timestamp": now - 30 * 86_400}),
            Document("new", "the meeting is on Monday", vector, {"timestamp": now - 3_600}),
        ]
    )
    query = Query("m", "the meeting is on Monday", vector)
    assert [h.doc_id for h in system.search(query, k=2, mode="memory")] == ["new", "old"]
    similarity = system.search(query, k=2)
    assert similarity[0].score == pytest.approx(similarity[1].score)


@pytest.mark.requirement("MB-ADD-4")
def test_a_new_system_is_empty(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    assert system.search(probe_queries(system)[0], k=5) == []


@pytest.mark.requirement("MB-ADD-5")
def test_inputs_are_left_as_they_were(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    docs = [Document(d.id, d.text, d.vector, {"tags": ["a", "b"], "n": 1}) for d in documents(system)]
    kept = [(d.text, None if d.vector is None else d.vector.copy(), copy.deepcopy(dict(d.metadata))) for d in docs]
    system.add(docs)
    query = probe_queries(system)[0]
    query_vector = None if query.vector is None else query.vector.copy()
    system.search(query, k=10)
    for doc, (text, vector, metadata) in zip(docs, kept):
        assert doc.text == text and dict(doc.metadata) == metadata
        assert (vector is None) == (doc.vector is None) and np.array_equal(doc.vector, vector)  # type: ignore[arg-type]
    assert np.array_equal(query.vector, query_vector)  # type: ignore[arg-type]


@pytest.mark.requirement("MB-DEL-1")
@pytest.mark.capability("delete")
def test_deleting_unknown_ids_is_no_error_and_deletes_nothing_else(loaded: Any) -> None:
    loaded.delete(["never-added"])
    loaded.delete(["doc-3"])
    loaded.delete(["doc-3", "never-added"])
    returned = {h.doc_id for q in probe_queries(loaded) for h in loaded.search(q, k=N)}
    assert "doc-3" not in returned and len(returned) == N - 1
    assert all(finds(loaded, i) for i in range(N) if i != 3)


def scoped_documents(system: Any) -> list[Document]:
    """Every document twice, in scopes "user:a" and "user:b" (same text and vector), and a third of them
    in "user:c"."""
    return [
        Document(f"{scope}/{d.id}", d.text, d.vector, d.metadata, scope)
        for scope, rows in (("user:a", range(N)), ("user:b", range(N)), ("user:c", range(0, N, 3)))
        for d in documents(system, rows)
    ]


def scope_answers(system: Any, scope: str, k: int) -> list[list[str]]:
    return [[h.doc_id for h in system.search(replace(q, scope=scope), k=k)] for q in probe_queries(system)]


def check_scopes_apart(system: Any) -> None:
    held = {"user:a": N, "user:b": N, "user:c": len(range(0, N, 3)), "user:nobody": 0}
    for scope, count in held.items():
        for k in (5, N):
            for hits in scope_answers(system, scope, k):
                assert all(h.startswith(f"{scope}/") for h in hits), f"scope {scope} returned {hits[:5]}"
                assert len(hits) == min(k, count), f"scope {scope}: {len(hits)} hits of {min(k, count)}"


@pytest.mark.requirement("MB-SCOPE-1")
@pytest.mark.capability("scopes")
def test_a_search_in_a_scope_returns_only_that_scope(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(scoped_documents(system))
    check_scopes_apart(system)
    if "consolidate" in system.capabilities:
        system.consolidate()
        check_scopes_apart(system)
    if "persist" in system.capabilities:
        system = system_under_test.reopen(system)
        check_scopes_apart(system)


@pytest.mark.requirement("MB-SCOPE-2")
@pytest.mark.capability("scopes")
def test_every_document_is_found_in_its_own_scope(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(scoped_documents(system))
    k = 1 if "vectors" in system.capabilities else 10
    for scope in ("user:a", "user:b", "user:c"):
        for i in range(0, N, 3):
            hits = system.search(replace(query_for(system, i), scope=scope), k=k)
            assert f"{scope}/doc-{i}" in [h.doc_id for h in hits], (scope, i, hits)


@pytest.mark.requirement("MB-SCOPE-3")
@pytest.mark.capability("scopes")
def test_a_scoped_search_does_not_change_when_other_scopes_change(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add([replace(d, id=f"user:a/{d.id}", scope="user:a") for d in documents(system)])

    queries = probe_queries(system)  # and two words each: a word common elsewhere must not outweigh the other
    queries += [replace(q, id=f"{q.id}-2", text=f"{q.text} {WORDS[(j + 5) % 12]}") for j, q in enumerate(queries)]

    def answers() -> list[list[tuple[str, float]]]:
        return [[(h.doc_id, round(h.score, 6)) for h in system.search(replace(q, scope="user:a"), k=10)]
                for q in queries]  # fmt: skip

    before = answers()
    others = [
        replace(d, id=f"user:{owner}/{d.id}", scope=f"user:{owner}", text=d.text if owner <= 3 else f"{d.text} {extra}")
        for owner, extra in ((owner, " ".join(WORDS[:owner])) for owner in range(1, 11))
        for d in documents(system)
    ]
    system.add(others)
    assert answers() == before, "writing other scopes' documents changed a scoped search's hits or scores"
    if "delete" in system.capabilities:
        system.delete([d.id for d in others[: len(others) // 2]])
        assert answers() == before, "deleting other scopes' documents changed a scoped search's hits or scores"


@pytest.mark.requirement("MB-SCOPE-4")
@pytest.mark.capability("scopes")
@pytest.mark.capability("update")
def test_an_upsert_in_one_scope_never_changes_another_scopes_documents(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    owned = [replace(d, scope="user:a") for d in documents(system)]
    system.add(owned)
    intruders = [
        Document(d.id, f"{text_of((i + N // 2) % N)} (written by another scope)", other.vector, {"by": "b"}, "user:b")
        for i, (d, other) in enumerate(zip(owned[:10], documents(system, range(N // 2, N // 2 + 10))))
    ]
    with contextlib.suppress(Exception):  # refusing the upsert is one of the two rules a system may choose
        system.upsert(intruders)
    k = 1 if "vectors" in system.capabilities else 10
    for i in range(10):
        hits = [h.doc_id for h in system.search(replace(query_for(system, i), scope="user:a"), k=k)]
        assert f"doc-{i}" in hits, f"after an upsert of doc-{i} in scope user:b, user:a's doc-{i} is not found: {hits}"


FILTERED: list[tuple[dict[str, Any], Callable[[dict[str, Any]], bool]]] = [
    ({"colour": "red"}, lambda m: m["colour"] == "red"),
    ({"colour": {"$in": ["red", "blue"]}}, lambda m: m["colour"] in ("red", "blue")),
    ({"colour": {"$ne": "red"}}, lambda m: m["colour"] != "red"),
    ({"rank": {"$gte": 50}}, lambda m: m["rank"] >= 50),
    ({"rank": {"$lt": 4}}, lambda m: m["rank"] < 4),
    ({"$and": [{"colour": "green"}, {"rank": {"$gt": 20}}]}, lambda m: m["colour"] == "green" and m["rank"] > 20),
    ({"$or": [{"rank": 7}, {"rank": {"$lte": 1}}]}, lambda m: m["rank"] in (0, 1, 7)),
    ({"colour": "violet"}, lambda m: False),
]


@pytest.mark.requirement("MB-FILTER-1")
@pytest.mark.capability("filters")
def test_a_filtered_search_returns_only_and_enough_matching_documents(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    colours = ["red", "green", "blue"]
    metadata = [{"colour": colours[i % 3], "rank": i} for i in range(N)]
    system.add([Document(d.id, d.text, d.vector, metadata[i]) for i, d in enumerate(documents(system))])
    for where, keep in FILTERED:
        matching = {f"doc-{i}" for i in range(N) if keep(metadata[i])}
        for k in (1, 10):
            for query in probe_queries(system)[:4]:
                hits = [h.doc_id for h in system.search(replace(query, where=where), k=k)]
                assert set(hits) <= matching, f"{where}: returned {sorted(set(hits) - matching)[:5]}"
                assert len(hits) == min(k, len(matching)), f"{where}, k={k}: {len(hits)} hits"


def moved(system: Any, i: int) -> Document:
    """Document i rewritten with the text and vector of document (i + N/2) mod N."""
    j = (i + N // 2) % N
    source = documents(system, [j])[0]
    return Document(f"doc-{i}", f"{text_of(j)} (rewritten)", source.vector, {"version": 2})


@pytest.mark.requirement("MB-UPDATE-1")
@pytest.mark.capability("update")
def test_an_upserted_document_is_searched_as_its_new_version(loaded: Any) -> None:
    rewritten = list(range(0, N, 6))
    loaded.upsert([moved(loaded, i) for i in rewritten])
    vectors = {f"doc-{i}": DATA.vectors[(i + N // 2) % N if i in rewritten else i] for i in range(N)}
    ids = list(vectors)
    matrix = np.stack([vectors[i] for i in ids])
    for i in rewritten:
        new = moved(loaded, i)
        query = Query(f"new-{i}", new.text, new.vector)
        assert f"doc-{i}" in [h.doc_id for h in loaded.search(query, k=1 if new.vector is not None else 10)]
        if "vectors" in loaded.capabilities:
            old = DATA.vectors[i]
            scores = matrix @ old / np.linalg.norm(matrix, axis=1) / np.linalg.norm(old)
            [first] = loaded.search(Query(f"old-{i}", "", old), k=1)
            assert first.doc_id != f"doc-{i}" or scores[ids.index(f"doc-{i}")] >= scores.max() - 1e-6
        if "get" in loaded.capabilities:
            [stored] = loaded.get([f"doc-{i}"])
            assert stored.text == new.text and dict(stored.metadata).get("version") == 2


@pytest.mark.requirement("MB-UPDATE-2")
@pytest.mark.capability("update")
def test_upsert_is_idempotent(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.upsert(documents(system, range(0, 40)))
    system.upsert(documents(system, range(0, 40)))
    system.upsert(documents(system, range(30, N)))
    returned = [h.doc_id for h in system.search(probe_queries(system)[0], k=2 * N)]
    assert len(returned) == len(set(returned)) == N
    assert all(finds(system, i) for i in (0, 35, 59))


@pytest.mark.requirement("MB-GET-1")
@pytest.mark.capability("get")
def test_get_returns_documents_in_the_order_asked(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    docs = [Document(d.id, d.text, d.vector, {"n": i}) for i, d in enumerate(documents(system))]
    system.add(docs)
    asked = ["doc-9", "unknown", "doc-2", "doc-40"]
    found = system.get(asked)
    assert [d.id for d in found] == ["doc-9", "doc-2", "doc-40"]
    assert [(d.text, dict(d.metadata).get("n")) for d in found] == [(text_of(i), i) for i in (9, 2, 40)]
    assert system.get([]) == []


@pytest.mark.requirement("MB-THREAD-1")
@pytest.mark.capability("threads")
def test_searches_and_writes_from_several_threads_at_once(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    first, later = range(N // 2), range(N // 2, N)
    system.add(documents(system, first))

    def search(offset: int) -> list[str]:
        return [f"doc-{i}" for i in [*first[offset::4]] * 3 if not finds(system, i)]

    def write() -> None:
        for i in later:
            system.add(documents(system, [i]))

    with ThreadPoolExecutor(max_workers=5) as pool:
        searching = [pool.submit(search, offset) for offset in range(4)]
        writing = pool.submit(write)
        missed = [doc for done in searching for doc in done.result()]
        writing.result()
    assert not missed, f"searched from 4 threads while a fifth added, {missed[:5]} were not found by their own query"
    unfound = [f"doc-{i}" for i in later if not finds(system, i)]
    assert not unfound, f"added from another thread, {unfound[:5]} were not found by their own query"
