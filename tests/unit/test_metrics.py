"""Metrics on hand-computed cases."""

import math

import numpy as np
import pytest

from harness.measure.metrics import agreement, group_stats, hits_at_k, latency_stats, mrr, ndcg_at_k, recall_at_k


def test_recall_against_exact_and_against_a_single_needle():
    assert recall_at_k([["a", "b", "x"]], [["a", "b", "c"]], 3) == pytest.approx(2 / 3)
    assert recall_at_k([["x", "n"], ["y", "z"]], [["n"], ["n"]], 2) == pytest.approx(0.5)
    assert recall_at_k([["n", "x"]], [["n"]], 1) == 1.0


def test_hits_and_mrr():
    retrieved = [["a", "n"], ["n", "a"], ["a", "b"]]
    relevant = [["n"], ["n"], ["n"]]
    assert hits_at_k(retrieved, relevant, 1) == 1 and hits_at_k(retrieved, relevant, 2) == 2
    assert mrr(retrieved, relevant) == pytest.approx((1 / 2 + 1 + 0) / 3)


def test_ndcg_by_hand():
    # gains [0, 2, 1] at ranks 1..3; ideal [2, 1]
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k([["x", "a", "b"]], [{"a": 2, "b": 1}], 10) == pytest.approx(dcg / ideal)
    assert ndcg_at_k([["a", "b"]], [{"a": 2, "b": 1}], 10) == pytest.approx(1.0)


def test_latency_percentiles_and_qps():
    stats = latency_stats(np.arange(1, 101) * 1_000_000)  # 1 … 100 ms
    assert stats.p50_ms == pytest.approx(50.5)
    assert stats.p99_ms == pytest.approx(99.01)
    assert stats.qps == pytest.approx(1000 / 50.5)
    assert stats.queries == 100


def test_group_stats_and_agreement():
    stats = group_stats([0, 0, 0, 1, 2])
    assert (stats.groups, stats.size_min, stats.size_max, stats.singletons) == (3, 1, 3, 2)
    assert stats.groups_per_doc == pytest.approx(0.6)
    perfect = agreement([0, 0, 1, 1], [5, 5, 7, 7])
    assert perfect.ari == pytest.approx(1.0) and perfect.nmi == pytest.approx(1.0)
    assert agreement([0, 0, 1, 1], [0, 1, 0, 1]).ari < 0.1
