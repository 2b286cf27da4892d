"""The peers that wrap their own libraries (Qdrant local, LanceDB): filters with Chroma's semantics, IVF-PQ once
trained, persistence, and a missing library named by the extra that installs it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from harness.data.generators.vectors import clustered_unit_vectors, exact_top_k
from harness.measure.metrics import recall_at_k
from harness.protocol import Document, Query, SystemContext
from harness.systems.registry import SYSTEMS
from tests import peer_filters
from tests.extras import needs

DIM = 16
PEERS = ["qdrant-local", "lancedb", "lancedb-ivfpq"]


def open_peer(name, tmp_path, dim=DIM, **options):
    needs(name)
    return SYSTEMS[name](SystemContext(dim=dim, workdir=tmp_path), **options)


@pytest.mark.parametrize("name", PEERS)
def test_filters_follow_chromas_where(name, tmp_path):
    system = open_peer(name, tmp_path)
    try:
        system.add(peer_filters.documents(DIM))
        for where, expected in peer_filters.CASES:
            assert peer_filters.found(system, where, DIM) == expected, where
        for where in peer_filters.MALFORMED:
            with pytest.raises(ValueError):
                peer_filters.found(system, where, DIM)
    finally:
        system.close()


@pytest.mark.parametrize("name", ["qdrant-local", "lancedb"])
def test_documents_and_deletes_persist(name, tmp_path):
    options = {"persist": True} if name == "qdrant-local" else {}
    system = open_peer(name, tmp_path, **options)
    assert "persist" in system.capabilities
    system.add(peer_filters.documents(DIM))
    system.delete(["m1"])
    system.upsert(
        [Document("m2", "rewritten", np.ones(DIM), {"v": 2}), Document("a1", "mine", np.ones(DIM), {}, "user:a")]
    )
    with pytest.raises(ValueError, match="another scope"):
        system.upsert([Document("m0", "taken", np.ones(DIM), {}, "user:a")])
    system.close()
    again = open_peer(name, tmp_path, **options)
    try:
        assert [(d.id, d.text, dict(d.metadata), d.scope) for d in again.get(["m2", "m1", "a1", "m0"])] == [
            ("m2", "rewritten", {"v": 2}, ""),
            ("a1", "mine", {}, "user:a"),
            ("m0", "document 0", peer_filters.METADATA[0], ""),
        ]
        assert [h.doc_id for h in again.search(Query("q", "", np.ones(DIM), scope="user:a"), k=5)] == ["a1"]
    finally:
        again.close()


def test_lancedb_ivfpq_searches_its_index_with_recall_and_complete_answers(tmp_path):
    data = clustered_unit_vectors(1200, 32, clusters=12, spread=0.6, queries=50, seed=3)
    system = open_peer("lancedb-ivfpq", tmp_path, dim=32)
    try:
        docs = [Document(f"d{i}", f"doc {i}", v, {"tenth": i % 10 == 0}) for i, v in enumerate(data.vectors)]
        system.add(docs[:1000])
        assert [i.index_type for i in system._table.list_indices()] == ["IvfPq"]
        system.add(docs[1000:])  # searched flat beside the index until the table is optimized
        truth = [[f"d{i}" for i in row] for row in exact_top_k(data.vectors, data.queries, 10).tolist()]
        found = [[h.doc_id for h in system.search(Query(f"q{j}", "", q), k=10)] for j, q in enumerate(data.queries)]
        assert recall_at_k(found, truth, 10) >= 0.9
        assert [h.doc_id for h in system.search(Query("own", "", data.vectors[1100]), k=1)] == ["d1100"]
        assert len(system.search(Query("all", "", data.queries[0]), k=1200)) == 1200
        filtered = system.search(Query("few", "", data.queries[0], where={"tenth": True}), k=200)
        assert len(filtered) == 120 and all(int(h.doc_id[1:]) % 10 == 0 for h in filtered)
        system.set_query_params(nprobes=1)
        assert len(system.search(Query("one", "", data.queries[0]), k=1200)) == 1200
    finally:
        system.close()


@pytest.mark.parametrize(("module", "extra"), [("qdrant_local", "qdrant"), ("lancedb_table", "lancedb")])
def test_a_missing_library_names_its_extra(module, extra):
    blocked = "qdrant_client" if extra == "qdrant" else "lancedb"
    script = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from harness.systems.registry import MissingExtraError\n"
        f"try:\n    import baselines.{module}\nexcept MissingExtraError as error:\n    print(error)\n"
    )
    printed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert f"pip install 'magnetic-bench[{extra}]'" in printed
