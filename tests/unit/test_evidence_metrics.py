"""Evidence metrics by hand, and the IR metrics cross-checked against ranx (a maintained implementation)."""

import numpy as np
import pytest

from harness.measure.metrics import (
    capped_recall_at_k,
    check_cutoff,
    evidence_scores,
    mrr,
    ndcg_at_k,
    recall_at_k,
    update_scores,
)


def test_evidence_scores_by_hand():
    retrieved = [["a", "x", "b"], ["y", "z", "c"], ["q", "r", "s"], ["n"]]
    relevant = [["a", "b"], ["c", "d"], ["t"], []]  # the last query has no evidence: left out
    scores = evidence_scores(retrieved, relevant, k=3)
    assert scores.queries == 3
    assert scores.recall == pytest.approx((1 + 0.5 + 0) / 3)
    assert scores.recall_any == pytest.approx(2 / 3)
    assert scores.recall_all == pytest.approx(1 / 3)
    assert scores.mrr == pytest.approx((1 + 1 / 3 + 0) / 3)


def test_recall_divides_by_relevant_and_the_capped_variant_by_min_k():
    retrieved, relevant = [["a", "b"]], [["a", "b", "c", "d"]]
    assert recall_at_k(retrieved, relevant, 2) == pytest.approx(0.5)
    assert capped_recall_at_k(retrieved, relevant, 2) == pytest.approx(1.0)


def test_a_cutoff_that_reaches_the_candidates_is_refused():
    check_cutoff(10, 11, "turns")
    with pytest.raises(ValueError, match="every system would find everything"):
        check_cutoff(10, 10, "sessions")


def test_ir_metrics_agree_with_ranx():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(40)]
    retrieved = [list(rng.permutation(docs)[:10]) for _ in range(30)]
    relevant = [list(rng.choice(docs, size=int(rng.integers(1, 6)), replace=False)) for _ in range(30)]
    qrels = ranx.Qrels({f"q{i}": dict.fromkeys(rel, 1) for i, rel in enumerate(relevant)})
    run = ranx.Run({f"q{i}": {d: 10.0 - r for r, d in enumerate(found)} for i, found in enumerate(retrieved)})
    theirs = ranx.evaluate(qrels, run, ["recall@10", "mrr@10", "ndcg@10", "hit_rate@10"])
    ours = evidence_scores(retrieved, relevant, 10)
    assert recall_at_k(retrieved, relevant, 10) == pytest.approx(theirs["recall@10"])
    assert ours.recall == pytest.approx(theirs["recall@10"])
    assert mrr(retrieved, relevant) == pytest.approx(theirs["mrr@10"])
    assert ndcg_at_k(retrieved, [dict.fromkeys(r, 1.0) for r in relevant], 10) == pytest.approx(theirs["ndcg@10"])
    assert ours.recall_any == pytest.approx(theirs["hit_rate@10"])


def test_update_scores_by_hand():
    versions = [
        (("old",), ("new",)),  # current above the older one
        (("old",), ("new",)),  # older one first
        (("a",), ("b",), ("c1", "c2")),  # current (by its best turn) above both, not first
        (("old",), ("new",)),  # current not retrieved
        (("only",),),  # one version: not an update, left out
    ]
    retrieved = [["new", "x", "old"], ["old", "new"], ["x", "c2", "a", "c1"], ["old", "x"], ["only"]]
    scores = update_scores(retrieved, versions, k=3)
    assert scores.facts == 4
    assert scores.current_first == pytest.approx(2 / 4)
    assert scores.current_at_1 == pytest.approx(1 / 4)
    assert scores.current_found == pytest.approx(3 / 4)  # c1 at rank 4 is past k, c2 counts
    assert scores.stale_found == pytest.approx(4 / 4)
