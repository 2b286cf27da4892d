"""`langchain:MODULE:CLASS`: a LangChain vector store as a system, through the conformance suite, with filters of
Chroma's semantics; and the mistakes a user can make naming one."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("langchain_core", reason="LangChain stores run in their own environment: tox -e langchain")

from harness.protocol import Document, Query, SystemContext
from harness.systems.registry import SystemSpecError, resolve
from tests import peer_filters

IN_MEMORY = "langchain:langchain_core.vectorstores:InMemoryVectorStore"
pytest_plugins = ["pytester"]


def test_the_in_memory_store_passes_the_conformance_suite_for_what_it_declares(pytester):
    report = pytester.path / "report"
    pytester.runpytest_inprocess(
        "--pyargs", "harness.conformance", f"--memory-system={IN_MEMORY}", f"--conformance-report={report}",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    table = json.loads((report / "conformance.json").read_text())["requirements"]
    assert not {rid: entry["note"] for rid, entry in table.items() if entry["outcome"] == "failed"}
    skipped = {rid for rid, entry in table.items() if entry["outcome"] == "skipped"}
    assert skipped == {
        "MB-CONS-1",
        "MB-ID-1",
        "MB-MEM-1",
        "MB-MEM-2",
        "MB-PERSIST-1",
        "MB-PERSIST-2",
        "MB-SEARCH-8",
        "MB-THREAD-1",
    }


@pytest.fixture
def store(tmp_path):
    system = resolve(IN_MEMORY)(SystemContext(dim=8, workdir=tmp_path))
    yield system
    system.close()


def test_capabilities_are_read_from_the_class(store):
    assert store.name == "langchain:InMemoryVectorStore"
    assert store.capabilities == {"vectors", "delete", "get", "update", "filters", "scopes"}


def test_filters_follow_chromas_where(store):
    store.add(peer_filters.documents(8))
    for where, expected in peer_filters.CASES:
        assert peer_filters.found(store, where, 8) == expected, where
    for where in peer_filters.MALFORMED:
        with pytest.raises(ValueError):
            peer_filters.found(store, where, 8)


def test_the_store_is_given_the_harness_vectors_and_scores_are_cosines(store):
    vectors = np.eye(8)[:3] + 0.1
    store.add([Document(f"d{i}", f"text {i}", v) for i, v in enumerate(vectors)])
    hits = store.search(Query("q", "anything", vectors[1] * 3), k=3)
    assert hits[0].doc_id == "d1" and hits[0].score == pytest.approx(1.0)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert [h.score for h in hits] == pytest.approx(sorted(unit @ unit[1], reverse=True))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("langchain:langchain_core.vectorstores", "expected langchain:MODULE:CLASS"),
        ("langchain:no_such_module:Store", "cannot import 'no_such_module'"),
        ("langchain:langchain_core.documents:Document", "is not a LangChain VectorStore"),
    ],
)
def test_a_wrong_store_is_a_clear_error(spec, says):
    with pytest.raises(SystemSpecError, match=says):
        resolve(spec)
