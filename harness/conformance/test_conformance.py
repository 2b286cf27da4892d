"""SPEC.md's requirements, one or more tests each (see the `requirement` markers).

Every failure says what failed: the requirement, the document or query, what was expected and what came back
(e.g. "MB-GET-1: get(['doc-9']) returned doc-9 with metadata {}, added {'n': 9}")."""

from __future__ import annotations

import contextlib
import copy
import math
import time
import unicodedata
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
DATA.vectors.setflags(write=False)  # a system that changes the vectors it is given must not change later tests
DATA.queries.setflags(write=False)
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
        Document(f"doc-{i}", texts[j] if texts else text_of(i), DATA.vectors[i].copy() if with_vectors else None)
        for j, i in enumerate(rows)
    ]


def query_for(system: Any, i: int) -> Query:
    """A query aimed at document i: its vector if the system takes vectors, else its text."""
    with_vectors = "vectors" in system.capabilities
    return Query(f"q-{i}", text_of(i), DATA.vectors[i].copy() if with_vectors else None)


def probe_queries(system: Any) -> list[Query]:
    with_vectors = "vectors" in system.capabilities
    return [Query(f"p-{j}", WORDS[j % 12], DATA.queries[j].copy() if with_vectors else None) for j in range(10)]


def ids(hits: Sequence[Any]) -> list[str]:
    return [h.doc_id for h in hits]


def shown(items: Sequence[Any], limit: int = 8) -> str:
    """A list as a message shows it: its first items, and how many more."""
    more = f" … and {len(items) - limit} more" if len(items) > limit else ""
    return f"{list(items[:limit])}{more}"


def own_query(system: Any, i: int) -> tuple[Query, int, str]:
    """The query that must find document i, its k, and how a message names it."""
    if "vectors" in system.capabilities:
        return query_for(system, i), 1, f"doc-{i}'s own vector at k=1"
    return query_for(system, i), 10, f"doc-{i}'s own text in the top 10"


def unfound(system: Any, rows: Sequence[int], scope: str | None = None) -> str:
    """Empty when every document of `rows` is found by its own query (in `scope`, with ids prefixed by it);
    else which are not, and what the first one's search returned."""
    missing: list[tuple[str, str, list[str]]] = []
    for i in rows:
        query, k, how = own_query(system, i)
        doc_id = f"doc-{i}" if scope is None else f"{scope}/doc-{i}"
        got = ids(system.search(replace(query, scope=scope), k=k))
        if doc_id not in got:
            missing.append((doc_id, how, got))
    if not missing:
        return ""
    doc_id, how, got = missing[0]
    where = "" if scope is None else f" in scope {scope}"
    return (
        f"{len(missing)} of {len(rows)} documents not found{where}: {shown([m[0] for m in missing])}; "
        f"{how}{where} returned {shown(got)}"
    )


def first_rise(hits: Sequence[Any]) -> str:
    """Empty when scores are finite and never rise down the list; else the first place they do."""
    for h in hits:
        if not math.isfinite(h.score):
            return f"a score that is not finite: {h.doc_id} {h.score}"
    for a, b in pairwise(hits):
        if b.score > a.score + 1e-9:
            return f"scores that rise down the list: {a.doc_id} {a.score:.6g} then {b.doc_id} {b.score:.6g}"
    return ""


def plain(metadata: Any) -> dict[str, Any] | None:
    """Metadata as a dict for a message (None stays None: a system that drops metadata says so)."""
    return None if metadata is None else dict(metadata)


def twice(found: Sequence[str]) -> list[str]:
    return sorted({i for i in found if found.count(i) > 1})


@pytest.fixture(scope="session")
def loaded_once(shared_system: Any) -> Any:
    shared_system.add(documents(shared_system))
    return shared_system


@pytest.fixture
def loaded(system_under_test: SystemUnderTest, loaded_once: Any) -> Any:
    """The session's one system holding the N documents, for tests that only search it (and leave it as it was)."""
    return loaded_once


@pytest.fixture
def fresh_loaded(system_under_test: SystemUnderTest) -> Any:
    """A system of the test's own holding the N documents, for tests that change it."""
    system = system_under_test.open()
    system.add(documents(system))
    return system


@pytest.mark.requirement("MB-DECL-1", "MB-DECL-2")
def test_declaration(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    assert isinstance(system.name, str) and system.name, f"MB-DECL-1: the system's name is {system.name!r}"
    assert set(system.capabilities) & {"text", "vectors"}, (
        f"MB-DECL-2: capabilities {sorted(system.capabilities)} declare neither 'text' nor 'vectors'"
    )


@pytest.mark.requirement("MB-ADD-1")
def test_every_added_document_is_searchable(loaded: Any) -> None:
    lost = unfound(loaded, range(N))
    assert not lost, f"MB-ADD-1: after add() of {N} documents, {lost}"


@pytest.mark.requirement("MB-ADD-2")
def test_texts_in_any_script_are_accepted(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    rows = range(len(NON_ASCII))
    docs = documents(system, rows, NON_ASCII)
    docs = [Document(d.id, d.text, d.vector, {"note": d.text}) for d in docs]
    try:
        system.add(docs)
    except Exception as error:
        pytest.fail(f"MB-ADD-2: add() of texts in other scripts {shown(NON_ASCII, 2)} raised {error!r:.200}")
    query = Query("u", NON_ASCII[1], DATA.vectors[1]) if "vectors" in system.capabilities else Query("u", NON_ASCII[1])
    got = ids(system.search(query, k=len(NON_ASCII)))
    assert "doc-1" in got, f"MB-ADD-2: a search for doc-1 ({NON_ASCII[1]!r}) returned {got}, not doc-1"


@pytest.mark.requirement("MB-ADD-2")
def test_texts_in_any_script_are_found_among_others(system_under_test: SystemUnderTest) -> None:
    """Each text in another script among the 60 others: its own vector finds it first (its text in the top 10),
    and with `get` it reads back as added (compared in Unicode's composed form: the same meaning)."""
    system = system_under_test.open()
    scripts = [
        Document(f"script-{j}", text, DATA.queries[j].copy() if "vectors" in system.capabilities else None,
                 {"note": text})
        for j, text in enumerate(NON_ASCII)
    ]  # fmt: skip
    system.add(documents(system) + scripts)
    for doc in scripts:
        k = 1 if doc.vector is not None else 10
        how = "its own vector at k=1" if doc.vector is not None else "its own text in the top 10"
        got = ids(system.search(Query(f"q-{doc.id}", doc.text, doc.vector), k=k))
        assert doc.id in got, (
            f"MB-ADD-2: with {N} other documents stored, {doc.id} ({doc.text!r}): {how} returned {shown(got)}, "
            f"not {doc.id}"
        )
    if "get" in system.capabilities:
        for doc, stored in zip(scripts, system.get([d.id for d in scripts]), strict=True):
            metadata = plain(stored.metadata) or {}
            same = [composed(stored.text), composed(metadata.get("note"))] == [composed(doc.text)] * 2
            assert same, (
                f"MB-ADD-2: get(['{doc.id}']) returned text {stored.text!r} and metadata {metadata}, "
                f"added {doc.text!r} and {dict(doc.metadata)}"
            )


def composed(text: Any) -> Any:
    """A text in Unicode's composed form (NFC): "e" and a combining accent read as "é"."""
    return unicodedata.normalize("NFC", text) if isinstance(text, str) else text


@pytest.mark.requirement("MB-ADD-3")
def test_documents_from_several_batches_are_all_searchable(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    for start in range(0, N, 20):
        system.add(documents(system, range(start, start + 20)))
    lost = unfound(system, (0, 19, 20, 39, 40, 59))
    assert not lost, f"MB-ADD-3: after add() of three batches of 20 documents, {lost}"


@pytest.mark.requirement("MB-SEARCH-1")
@pytest.mark.parametrize("k", [1, 3, 7])
def test_at_most_k_hits(loaded: Any, k: int) -> None:
    for query in probe_queries(loaded):
        got = ids(loaded.search(query, k=k))
        assert len(got) <= k, f"MB-SEARCH-1: search({query.id}, k={k}) returned {len(got)} hits: {shown(got, 12)}"


@pytest.mark.requirement("MB-SEARCH-2")
def test_no_document_twice(loaded: Any) -> None:
    for query in probe_queries(loaded):
        got = ids(loaded.search(query, k=10))
        assert not twice(got), f"MB-SEARCH-2: search({query.id}, k=10) returned {twice(got)} more than once: {got}"


@pytest.mark.requirement("MB-SEARCH-3")
def test_hits_are_sorted_best_first(loaded: Any) -> None:
    for query in probe_queries(loaded):
        wrong = first_rise(loaded.search(query, k=10))
        assert not wrong, f"MB-SEARCH-3: search({query.id}, k=10) returned {wrong}"


@pytest.mark.requirement("MB-SEARCH-4")
@pytest.mark.parametrize("k", [5, N + 5])
def test_complete_answers(loaded: Any, k: int) -> None:
    for query in probe_queries(loaded)[:3]:
        got = loaded.search(query, k=k)
        assert len(got) == min(k, N), (
            f"MB-SEARCH-4: search({query.id}, k={k}) with {N} documents stored returned {len(got)} hits, "
            f"expected {min(k, N)}"
        )


TOPICS = [
    "the tide tables for the harbour in March",
    "a recipe for sourdough bread with rye flour",
    "chess openings: the Sicilian defence",
    "quarterly tax filing deadlines for freelancers",
    "how to prune an apple tree in winter",
    "the orbit of Jupiter and its moons",
    "knitting a scarf with merino wool",
    "train timetable from Lyon to Geneva",
    "symptoms of a sprained ankle",
    "tuning a guitar to drop D",
    *NON_ASCII[1:4],
    "😀🎉🍕",
    "0451 7723 9910",
    "zzz qqq xxx",
]
"""Texts far apart in topic and script: an embedding model scores some of them below zero against a query
about none of them (sentence embedders do; the suite's own notes all score above zero against each other)."""
UNRELATED_QUERIES = ["a quiet legal dispute", "vacuum", "???"]


@pytest.mark.requirement("MB-SEARCH-4")
def test_hits_scoring_zero_or_below_are_still_hits(system_under_test: SystemUnderTest) -> None:
    """A system that drops hits whose similarity is zero or below answers short: a query opposite to the stored
    vectors (each document's vector is a query's negated, or a topic far from the query) must still get every
    document it asks for."""
    system = system_under_test.open()
    with_vectors = "vectors" in system.capabilities
    docs = [
        Document(f"topic-{i}", text, DATA.vectors[i].copy() if with_vectors else None) for i, text in enumerate(TOPICS)
    ]
    system.add(docs)
    opposite = -np.mean(DATA.vectors[: len(TOPICS)], axis=0)
    for j, text in enumerate(UNRELATED_QUERIES):
        query = Query(f"far-{j}", text, opposite / np.linalg.norm(opposite) if with_vectors else None)
        for k in (len(TOPICS) - 1, len(TOPICS)):
            got = ids(system.search(query, k=k))
            assert len(got) == k, (
                f"MB-SEARCH-4: search({query.id} {text!r}, k={k}) with {len(TOPICS)} documents of unrelated "
                f"topics stored returned {len(got)} hits, expected {k} (hits scoring zero or below are hits too)"
            )


@pytest.mark.requirement("MB-SEARCH-5")
def test_only_added_ids(loaded: Any) -> None:
    known = {f"doc-{i}" for i in range(N)}
    for query in probe_queries(loaded):
        invented = sorted(set(ids(loaded.search(query, k=10))) - known)
        assert not invented, f"MB-SEARCH-5: search({query.id}, k=10) returned ids never added: {shown(invented)}"


@pytest.mark.requirement("MB-SEARCH-6")
@pytest.mark.capability("vectors")
def test_own_vector_finds_the_document(loaded: Any) -> None:
    for i in range(0, N, 7):
        got = ids(loaded.search(query_for(loaded, i), k=1))
        twin = (
            len(got) == 1
            and got[0] != f"doc-{i}"
            and np.allclose(DATA.vectors[int(got[0].split("-")[1])], DATA.vectors[i])
        )
        assert got == [f"doc-{i}"] or twin, f"MB-SEARCH-6: doc-{i}'s own vector at k=1 returned {got}, not doc-{i}"


@pytest.mark.requirement("MB-SEARCH-7")
@pytest.mark.capability("vectors")
def test_recall_against_exact_search(loaded: Any) -> None:
    truth = [[f"doc-{i}" for i in row] for row in exact_top_k(DATA.vectors, DATA.queries, 10).tolist()]
    found = [
        [h.doc_id for h in loaded.search(Query(f"r{j}", f"probe {j}", q), k=10)] for j, q in enumerate(DATA.queries)
    ]
    recall = recall_at_k(found, truth, 10)
    worst = min(range(len(found)), key=lambda j: len(set(found[j]) & set(truth[j])))
    assert recall >= 0.9, (
        f"MB-SEARCH-7: recall@10 against exact search {recall:.3f}, expected at least 0.9; query r{worst} returned "
        f"{len(set(found[worst]) & set(truth[worst]))} of its 10 nearest: {shown(found[worst], 10)}, exact "
        f"{shown(truth[worst], 10)}"
    )


@pytest.mark.requirement("MB-SEARCH-8")
@pytest.mark.capability("text")
def test_exact_text_finds_the_document(loaded: Any) -> None:
    for i in range(0, N, 11):
        query = Query(f"t{i}", text_of(i), DATA.vectors[i] if "vectors" in loaded.capabilities else None)
        got = ids(loaded.search(query, k=10))
        assert f"doc-{i}" in got, f"MB-SEARCH-8: doc-{i}'s exact text {text_of(i)!r} returned {got}, not doc-{i}"


@pytest.mark.requirement("MB-ERR-1")
@pytest.mark.parametrize("k", [0, -3])
def test_k_below_one_is_refused(loaded: Any, k: int) -> None:
    query = probe_queries(loaded)[0]
    try:
        got = loaded.search(query, k=k)
    except ValueError:
        pass
    except Exception as error:
        pytest.fail(f"MB-ERR-1: search({query.id}, k={k}) raised {error!r:.200}, expected a ValueError")
    else:
        pytest.fail(f"MB-ERR-1: search({query.id}, k={k}) returned {shown(ids(got))}, expected a ValueError")
    after = loaded.search(query, k=N)
    assert len(after) == N, f"MB-ERR-1: after the refused search, search(k={N}) returned {len(after)} hits, not {N}"


@pytest.mark.requirement("MB-PERSIST-1")
@pytest.mark.capability("persist")
def test_documents_survive_close_and_reopen(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(documents(system))
    reopened = system_under_test.reopen(system)
    lost = unfound(reopened, range(N))
    assert not lost, f"MB-PERSIST-1: after add() of {N} documents, close() and reopening, {lost}"


@pytest.mark.requirement("MB-PERSIST-2")
@pytest.mark.capability("persist")
def test_adding_after_reopen_keeps_earlier_documents(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(documents(system, range(0, 30)))
    reopened = system_under_test.reopen(system)
    reopened.add(documents(reopened, range(30, N)))
    lost = unfound(reopened, (0, 29, 30, 59))
    assert not lost, f"MB-PERSIST-2: after add() of doc-0…29, reopening and add() of doc-30…{N - 1}, {lost}"


@pytest.mark.requirement("MB-CONS-1")
@pytest.mark.capability("consolidate")
def test_consolidation_loses_and_duplicates_nothing(fresh_loaded: Any) -> None:
    fresh_loaded.consolidate()
    lost = unfound(fresh_loaded, range(N))
    assert not lost, f"MB-CONS-1: after consolidate(), {lost}"
    got = ids(fresh_loaded.search(probe_queries(fresh_loaded)[0], k=N + 5))
    assert len(got) == len(set(got)) == N, (
        f"MB-CONS-1: after consolidate(), search(p-0, k={N + 5}) returned {len(got)} hits, {len(set(got))} distinct "
        f"(twice: {shown(twice(got))}), expected the {N} documents once each"
    )


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
        lost = unfound(system, sorted(live))
        assert not lost, f"MB-CHURN-1: round {round_} (deleted {sorted(gone)}, added {sorted(back)}): live {lost}"
        returned = {h.doc_id for q in probe_queries(system) for h in system.search(q, k=N)}
        ghosts = sorted(returned & {f"doc-{i}" for i in deleted})
        assert not ghosts, f"MB-CHURN-1: round {round_}: searches returned deleted documents {shown(ghosts)}"


@pytest.mark.requirement("MB-MEM-1")
@pytest.mark.capability("memory_scoring")
def test_memory_mode_answers_follow_the_search_rules(loaded: Any) -> None:
    for query in probe_queries(loaded):
        hits = loaded.search(query, k=5, mode="memory")
        got = ids(hits)
        assert len(got) <= 5, f"MB-MEM-1: search({query.id}, k=5, mode='memory') returned {len(got)} hits: {got}"
        assert not twice(got), f"MB-MEM-1: search({query.id}, k=5, mode='memory') returned {twice(got)} twice"
        wrong = first_rise(hits)
        assert not wrong, f"MB-MEM-1: search({query.id}, k=5, mode='memory') returned {wrong}"


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
    got = ids(system.search(query, k=2, mode="memory"))
    assert got == ["new", "old"], (
        f"MB-MEM-2: of two equal documents written 30 days and 1 hour ago, memory mode returned {got}, "
        "expected the newer first: ['new', 'old']"
    )
    similarity = system.search(query, k=2)
    assert similarity[0].score == pytest.approx(similarity[1].score), (
        f"MB-MEM-2: two equal documents have different similarity scores: {[tuple(h) for h in similarity]}"
    )


@pytest.mark.requirement("MB-ADD-4")
def test_a_new_system_is_empty(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    got = ids(system.search(probe_queries(system)[0], k=5))
    assert got == [], f"MB-ADD-4: a new system's search(p-0, k=5) returned {got}, expected no hits"


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
        assert doc.text == text, f"MB-ADD-5: add() changed {doc.id}'s text from {text!r} to {doc.text!r}"
        assert dict(doc.metadata) == metadata, (
            f"MB-ADD-5: add() changed {doc.id}'s metadata from {metadata} to {dict(doc.metadata)}"
        )
        assert (vector is None) == (doc.vector is None) and np.array_equal(doc.vector, vector), (  # type: ignore[arg-type]
            f"MB-ADD-5: add() changed {doc.id}'s vector (norm {_norm(vector)} before, {_norm(doc.vector)} after)"
        )
    assert np.array_equal(query.vector, query_vector), (  # type: ignore[arg-type]
        f"MB-ADD-5: search() changed the query's vector "
        f"(norm {_norm(query_vector)} before, {_norm(query.vector)} after)"
    )


def _norm(vector: np.ndarray | None) -> str:
    return "none" if vector is None else f"{float(np.linalg.norm(vector)):.4g}"


@pytest.mark.requirement("MB-DEL-1")
@pytest.mark.capability("delete")
def test_deleting_unknown_ids_is_no_error_and_deletes_nothing_else(fresh_loaded: Any) -> None:
    for gone in (["never-added"], ["doc-3"], ["doc-3", "never-added"]):
        try:
            fresh_loaded.delete(gone)
        except Exception as error:
            pytest.fail(f"MB-DEL-1: delete({gone}) raised {error!r:.200}; an id not stored must be no error")
    returned = {h.doc_id for q in probe_queries(fresh_loaded) for h in fresh_loaded.search(q, k=N)}
    assert "doc-3" not in returned, "MB-DEL-1: after delete(['doc-3']), searches still return doc-3"
    missing = sorted({f"doc-{i}" for i in range(N) if i != 3} - returned)
    assert not missing, f"MB-DEL-1: after delete(['doc-3']), searches at k={N} no longer return {shown(missing)}"
    lost = unfound(fresh_loaded, [i for i in range(N) if i != 3])
    assert not lost, f"MB-DEL-1: after delete(['doc-3']), {lost}"


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


def check_scopes_apart(system: Any, when: str) -> None:
    held = {"user:a": N, "user:b": N, "user:c": len(range(0, N, 3)), "user:nobody": 0}
    for scope, count in held.items():
        for k in (5, N):
            for j, hits in enumerate(scope_answers(system, scope, k)):
                search = f"{when}search(p-{j}, scope={scope!r}, k={k})"
                others = [h for h in hits if not h.startswith(f"{scope}/")]
                assert not others, f"MB-SCOPE-1: {search} returned other scopes' documents {shown(others)}"
                assert len(hits) == min(k, count), (
                    f"MB-SCOPE-1: {search} returned {len(hits)} hits; the scope holds {count}: expected {min(k, count)}"
                )


@pytest.mark.requirement("MB-SCOPE-1")
@pytest.mark.capability("scopes")
def test_a_search_in_a_scope_returns_only_that_scope(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(scoped_documents(system))
    check_scopes_apart(system, "")
    if "consolidate" in system.capabilities:
        system.consolidate()
        check_scopes_apart(system, "after consolidate(), ")
    if "persist" in system.capabilities:
        system = system_under_test.reopen(system)
        check_scopes_apart(system, "after reopening, ")


@pytest.mark.requirement("MB-SCOPE-2")
@pytest.mark.capability("scopes")
def test_every_document_is_found_in_its_own_scope(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add(scoped_documents(system))
    for scope in ("user:a", "user:b", "user:c"):
        lost = unfound(system, range(0, N, 3), scope)
        assert not lost, f"MB-SCOPE-2: with the same documents in user:a, user:b and user:c, {lost}"


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

    def first_change(after: list[list[tuple[str, float]]]) -> str:
        j = next(j for j, (a, b) in enumerate(zip(before, after)) if a != b)
        search = f"search({queries[j].id} {queries[j].text!r}, scope='user:a', k=10)"
        return f"{search}: its first hits were {before[j][:3]}, now {after[j][:3]}"

    before = answers()
    others = [
        replace(d, id=f"user:{owner}/{d.id}", scope=f"user:{owner}", text=d.text if owner <= 3 else f"{d.text} {extra}")
        for owner, extra in ((owner, " ".join(WORDS[:owner])) for owner in range(1, 11))
        for d in documents(system)
    ]
    system.add(others)
    after = answers()
    assert after == before, (
        f"MB-SCOPE-3: writing {len(others)} documents in 10 other scopes changed {first_change(after)}"
    )
    if "delete" in system.capabilities:
        system.delete([d.id for d in others[: len(others) // 2]])
        after = answers()
        assert after == before, (
            f"MB-SCOPE-3: deleting {len(others) // 2} documents of other scopes changed {first_change(after)}"
        )


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
    for i in range(10):
        query, k, how = own_query(system, i)
        got = ids(system.search(replace(query, scope="user:a"), k=k))
        assert f"doc-{i}" in got, (
            f"MB-SCOPE-4: after an upsert of doc-{i} in scope user:b, {how} in scope user:a returned {got}, "
            f"not user:a's doc-{i}"
        )


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
                hits = ids(system.search(replace(query, where=where), k=k))
                search = f"search({query.id}, where={where}, k={k})"
                wrong = [f"{h} {metadata[int(h.split('-')[1])]}" for h in hits if h not in matching]
                assert not wrong, f"MB-FILTER-1: {search} returned documents that do not match: {shown(wrong, 3)}"
                assert len(hits) == min(k, len(matching)), (
                    f"MB-FILTER-1: {search} returned {len(hits)} hits; {len(matching)} documents match: "
                    f"expected {min(k, len(matching))}"
                )


def moved(system: Any, i: int) -> Document:
    """Document i rewritten with the text and vector of document (i + N/2) mod N."""
    j = (i + N // 2) % N
    source = documents(system, [j])[0]
    return Document(f"doc-{i}", f"{text_of(j)} (rewritten)", source.vector, {"version": 2})


@pytest.mark.requirement("MB-UPDATE-1")
@pytest.mark.capability("update")
def test_an_upserted_document_is_searched_as_its_new_version(fresh_loaded: Any) -> None:
    rewritten = list(range(0, N, 6))
    fresh_loaded.upsert([moved(fresh_loaded, i) for i in rewritten])
    vectors = {f"doc-{i}": DATA.vectors[(i + N // 2) % N if i in rewritten else i] for i in range(N)}
    stored_ids = list(vectors)
    matrix = np.stack([vectors[i] for i in stored_ids])
    for i in rewritten:
        new = moved(fresh_loaded, i)
        query = Query(f"new-{i}", new.text, new.vector)
        how = "its new vector at k=1" if new.vector is not None else "its new text in the top 10"
        got = ids(fresh_loaded.search(query, k=1 if new.vector is not None else 10))
        assert f"doc-{i}" in got, f"MB-UPDATE-1: after an upsert of doc-{i}, {how} returned {got}, not doc-{i}"
        if "vectors" in fresh_loaded.capabilities:
            old = DATA.vectors[i]
            scores = matrix @ old / np.linalg.norm(matrix, axis=1) / np.linalg.norm(old)
            first = ids(fresh_loaded.search(Query(f"old-{i}", "", old), k=1))
            assert first != [f"doc-{i}"] or scores[stored_ids.index(f"doc-{i}")] >= scores.max() - 1e-6, (
                f"MB-UPDATE-1: after an upsert of doc-{i} with a new vector, its old vector still finds doc-{i} first "
                f"(its new vector's cosine to the old one is {scores[stored_ids.index(f'doc-{i}')]:.3f}; the best "
                f"stored document's {scores.max():.3f})"
            )
        if "get" in fresh_loaded.capabilities:
            stored = fresh_loaded.get([f"doc-{i}"])
            assert len(stored) == 1, f"MB-UPDATE-1: get(['doc-{i}']) after its upsert returned {len(stored)} documents"
            text, metadata = stored[0].text, plain(stored[0].metadata)
            assert text == new.text and metadata is not None and metadata.get("version") == 2, (
                f"MB-UPDATE-1: get(['doc-{i}']) after its upsert returned text {text!r} and metadata {metadata}, "
                f"upserted {new.text!r} and {dict(new.metadata)}"
            )


@pytest.mark.requirement("MB-UPDATE-1")
@pytest.mark.capability("update")
def test_an_upsert_replaces_the_metadata_too(system_under_test: SystemUnderTest) -> None:
    """A new version's metadata replaces the old one's, it is not merged into it: a key the new version lacks is
    gone (read back with `get`, matched by a `where` filter)."""
    system = system_under_test.open()
    if not {"get", "filters"} & system.capabilities:
        pytest.skip("the system declares neither 'get' nor 'filters': its metadata cannot be read back")
    system.add([replace(d, metadata={"old": 1, "version": 1}) for d in documents(system)])
    rewritten = list(range(0, N, 6))
    system.upsert([moved(system, i) for i in rewritten])
    if "get" in system.capabilities:
        for doc in system.get([f"doc-{i}" for i in rewritten]):
            metadata = plain(doc.metadata)
            assert metadata == {"version": 2}, (
                f"MB-UPDATE-1: get(['{doc.id}']) after an upsert with metadata {{'version': 2}} returned metadata "
                f"{metadata}; it was added with {{'old': 1, 'version': 1}}"
            )
    if "filters" in system.capabilities:
        query = probe_queries(system)[0]
        kept = ids(system.search(replace(query, where={"old": 1}), k=N))
        stale = [doc_id for doc_id in kept if int(doc_id.split("-")[1]) in rewritten]
        assert not stale, (
            f"MB-UPDATE-1: after upserts without the key 'old', search({query.id}, where={{'old': 1}}, k={N}) "
            f"still returned {shown(stale)}"
        )


@pytest.mark.requirement("MB-UPDATE-2")
@pytest.mark.capability("update")
def test_upsert_is_idempotent(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.upsert(documents(system, range(0, 40)))
    system.upsert(documents(system, range(0, 40)))
    system.upsert(documents(system, range(30, N)))
    returned = ids(system.search(probe_queries(system)[0], k=2 * N))
    assert len(returned) == len(set(returned)) == N, (
        f"MB-UPDATE-2: after upserts of doc-0…39 twice and doc-30…{N - 1}, search(p-0, k={2 * N}) returned "
        f"{len(returned)} hits, {len(set(returned))} distinct (more than once: {shown(twice(returned))}), "
        f"expected the {N} documents once each"
    )
    lost = unfound(system, (0, 35, 59))
    assert not lost, f"MB-UPDATE-2: after upserts of doc-0…39 twice and doc-30…{N - 1}, {lost}"


@pytest.mark.requirement("MB-GET-1")
@pytest.mark.capability("get")
def test_get_returns_documents_in_the_order_asked(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    docs = [Document(d.id, d.text, d.vector, {"n": i}) for i, d in enumerate(documents(system))]
    system.add(docs)
    asked = ["doc-9", "unknown", "doc-2", "doc-40"]
    found = system.get(asked)
    got = [d.id for d in found]
    assert got == ["doc-9", "doc-2", "doc-40"], (
        f"MB-GET-1: get({asked}) returned {got}, expected the stored ones in the order asked: "
        "['doc-9', 'doc-2', 'doc-40']"
    )
    for doc, i in zip(found, (9, 2, 40)):
        metadata = plain(doc.metadata)
        assert doc.text == text_of(i), (
            f"MB-GET-1: get({asked}) returned {doc.id} with text {doc.text!r}, added {text_of(i)!r}"
        )
        assert metadata is not None and metadata.get("n") == i, (
            f"MB-GET-1: get({asked}) returned {doc.id} with metadata {metadata}, added {{'n': {i}}}"
        )
    nothing = system.get([])
    assert nothing == [], f"MB-GET-1: get([]) returned {shown([d.id for d in nothing])}, expected []"


@pytest.mark.requirement("MB-ID-1")
@pytest.mark.capability("own_ids")
def test_a_system_with_its_own_ids_answers_in_the_callers(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    system.add([replace(d, metadata={"n": i}) for i, d in enumerate(documents(system))])
    known = {f"doc-{i}" for i in range(N)}

    def check(when: str) -> None:
        lost = unfound(system, range(0, N, 5))
        assert not lost, f"MB-ID-1: {when}{lost}"
        strangers = sorted({h for q in probe_queries(system) for h in ids(system.search(q, k=N))} - known)
        assert not strangers, f"MB-ID-1: {when}searches returned ids the caller never gave: {shown(strangers)}"
        if "get" in system.capabilities:
            for i, doc in zip((9, 2), system.get(["doc-9", "doc-2"]), strict=True):
                assert (doc.id, plain(doc.metadata)) == (f"doc-{i}", {"n": i}), (
                    f"MB-ID-1: {when}get(['doc-{i}']) returned {doc.id} with metadata {plain(doc.metadata)}, "
                    f"added doc-{i} with {{'n': {i}}}"
                )

    check("")
    if "persist" in system.capabilities:
        system = system_under_test.reopen(system)
        check("after reopening, ")
    if "delete" in system.capabilities:
        system.delete(["doc-3"])
        returned = {h for q in probe_queries(system) for h in ids(system.search(q, k=N))}
        assert "doc-3" not in returned, "MB-ID-1: after delete(['doc-3']), searches still return doc-3"


@pytest.mark.requirement("MB-THREAD-1")
@pytest.mark.capability("threads")
def test_searches_and_writes_from_several_threads_at_once(system_under_test: SystemUnderTest) -> None:
    system = system_under_test.open()
    first, later = range(N // 2), range(N // 2, N)
    system.add(documents(system, first))

    def write() -> None:
        for i in later:
            system.add(documents(system, [i]))

    with ThreadPoolExecutor(max_workers=5) as pool:
        searching = [pool.submit(unfound, system, [*first[offset::4]] * 3) for offset in range(4)]
        writing = pool.submit(write)
        missed = [note for done in searching if (note := done.result())]
        writing.result()
    assert not missed, f"MB-THREAD-1: searched from 4 threads while a fifth added, {missed[0]}"
    after = unfound(system, later)
    assert not after, f"MB-THREAD-1: added from another thread, {after}"
