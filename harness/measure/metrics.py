"""Metrics as pure functions with typed results. Nothing is rounded here; reports round."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import adjusted_rand_score, homogeneity_completeness_v_measure, normalized_mutual_info_score


def recall_at_k(retrieved: Sequence[Sequence[str]], relevant: Sequence[Sequence[str]], k: int) -> float:
    """Mean over queries of |top-k ∩ relevant| / |relevant| (BEIR's and MTEB's Recall@k; the share of a
    question's evidence found). Queries without relevant documents are left out."""
    values = [len(set(found[:k]) & set(wanted)) / len(wanted) for found, wanted in zip(retrieved, relevant) if wanted]
    return float(np.mean(values)) if values else float("nan")


def capped_recall_at_k(retrieved: Sequence[Sequence[str]], relevant: Sequence[Sequence[str]], k: int) -> float:
    """Mean of |top-k ∩ relevant| / min(k, |relevant|): 1.0 is reachable with more than k relevant
    (BEIR's "R_cap@k"; "recall vs exact" and needles, where |relevant| ≤ k, equal `recall_at_k`)."""
    values = [
        len(set(found[:k]) & set(wanted)) / min(k, len(wanted)) for found, wanted in zip(retrieved, relevant) if wanted
    ]
    return float(np.mean(values)) if values else float("nan")


def threshold_recall(found: Sequence[np.ndarray], kth: np.ndarray, k: int, *, tolerance: float = 1e-6) -> float:
    """Mean over queries of the share of k returned hits that score at least the k-th exact similarity
    (ann-benchmarks' recall: a hit tied with the k-th neighbour counts, so ties cannot make an exact
    search look inexact). `found[i]`: the exact similarities of query i's hits."""
    values = [
        min(k, int(np.count_nonzero(scores >= threshold - tolerance))) / k for scores, threshold in zip(found, kth)
    ]
    return float(np.mean(values)) if values else float("nan")


@dataclass(frozen=True)
class EvidenceScores:
    """Retrieval of evidence at a cutoff k, as dialogue-memory papers report it (LongMemEval's
    `recall_any@k` = hit@k: some evidence in the top k; `recall_all@k`: all of it)."""

    queries: int
    recall: float
    recall_any: float
    recall_all: float
    mrr: float
    ndcg: float


def evidence_scores(retrieved: Sequence[Sequence[str]], relevant: Sequence[Sequence[str]], k: int) -> EvidenceScores:
    """Scores over the queries that have evidence (the others cannot be scored and are left out)."""
    pairs = [(found[:k], set(wanted)) for found, wanted in zip(retrieved, relevant) if wanted]
    if not pairs:
        nan = float("nan")
        return EvidenceScores(0, nan, nan, nan, nan, nan)
    found_counts = np.asarray([len(set(found) & wanted) for found, wanted in pairs], dtype=np.float64)
    sizes = np.asarray([len(wanted) for _, wanted in pairs], dtype=np.float64)
    return EvidenceScores(
        queries=len(pairs),
        recall=float(np.mean(found_counts / sizes)),
        recall_any=float(np.mean(found_counts > 0)),
        recall_all=float(np.mean(found_counts == sizes)),
        mrr=mrr([f for f, _ in pairs], [w for _, w in pairs]),
        ndcg=ndcg_at_k([f for f, _ in pairs], [dict.fromkeys(w, 1.0) for _, w in pairs], k),
    )


@dataclass(frozen=True)
class UpdateScores:
    """How a fact that changed is retrieved at a cutoff k (LongMemEval's knowledge-update questions,
    MemoryAgentBench's fact consolidation): `current_first` is the share of facts whose current version is in
    the top k above every older version (a version ranks by its best turn; one not retrieved ranks last);
    `current_at_1` the share whose first hit is of the current version; `current_found` and `stale_found` the
    shares with the current version, and with some older version, in the top k."""

    facts: int
    current_first: float
    current_at_1: float
    current_found: float
    stale_found: float


def update_scores(
    retrieved: Sequence[Sequence[str]], versions: Sequence[Sequence[Sequence[str]]], k: int
) -> UpdateScores:
    """Scores over the facts with at least two versions, each version its turn ids, oldest first."""
    pairs = [(found[:k], fact) for found, fact in zip(retrieved, versions) if len(fact) >= 2]
    if not pairs:
        nan = float("nan")
        return UpdateScores(0, nan, nan, nan, nan)
    first, at_1, current, stale = [], [], [], []
    for found, fact in pairs:
        rank = {doc: position for position, doc in reversed(list(enumerate(found)))}
        best = [min((rank.get(turn, k) for turn in version), default=k) for version in fact]
        first.append(best[-1] < k and all(best[-1] < older for older in best[:-1]))
        at_1.append(best[-1] == 0)
        current.append(best[-1] < k)
        stale.append(min(best[:-1]) < k)
    return UpdateScores(len(pairs), *(float(np.mean(values)) for values in (first, at_1, current, stale)))


class CutoffError(ValueError):
    """A cutoff k that reaches the number of candidates (any system would find everything)."""


def check_cutoff(k: int, candidates: int, what: str) -> None:
    """Refuse a cutoff that reaches the number of candidates: every system would score perfectly."""
    if k >= candidates:
        raise CutoffError(f"k = {k} is not below the {candidates} {what} to rank: every system would find everything")


def hits_at_k(retrieved: Sequence[Sequence[str]], relevant: Sequence[Sequence[str]], k: int) -> int:
    """How many queries have at least one relevant document in their top k."""
    return sum(bool(set(found[:k]) & set(wanted)) for found, wanted in zip(retrieved, relevant))


def mrr(retrieved: Sequence[Sequence[str]], relevant: Sequence[Collection[str]]) -> float:
    """Mean reciprocal rank of the first relevant document (0 when none is retrieved)."""
    ranks = []
    for found, wanted in zip(retrieved, relevant):
        wanted_set = set(wanted)
        ranks.append(next((1.0 / (i + 1) for i, doc in enumerate(found) if doc in wanted_set), 0.0))
    return float(np.mean(ranks)) if ranks else float("nan")


def ndcg_at_k(retrieved: Sequence[Sequence[str]], graded: Sequence[Mapping[str, float]], k: int = 10) -> float:
    """Mean nDCG@k with graded relevance (gain = grade, discount = log2(rank + 1))."""
    values = []
    for found, grades in zip(retrieved, graded):
        if not grades:
            continue
        gains = np.asarray([grades.get(doc, 0.0) for doc in found[:k]], dtype=np.float64)
        ideal = np.sort(np.asarray(list(grades.values()), dtype=np.float64))[::-1][:k]
        discounts = 1.0 / np.log2(np.arange(2, k + 2))
        best = float((ideal * discounts[: len(ideal)]).sum())
        values.append(float((gains * discounts[: len(gains)]).sum()) / best if best > 0 else 0.0)
    return float(np.mean(values)) if values else float("nan")


@dataclass(frozen=True)
class LatencyStats:
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    qps: float
    queries: int


def latency_stats(latencies_ns: Sequence[int] | np.ndarray) -> LatencyStats:
    """Percentiles of per-query latencies; QPS is single-stream (1 / mean latency)."""
    ms = np.asarray(latencies_ns, dtype=np.float64) / 1e6
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    mean = float(ms.mean())
    return LatencyStats(float(p50), float(p95), float(p99), mean, 1000.0 / mean if mean > 0 else float("inf"), len(ms))


@dataclass(frozen=True)
class GroupStats:
    groups: int
    groups_per_doc: float
    size_min: int
    size_median: float
    size_max: int
    singletons: int


def group_stats(labels: Sequence[int] | np.ndarray) -> GroupStats:
    """Group count and size distribution from each document's group label."""
    _, sizes = np.unique(np.asarray(labels), return_counts=True)
    return GroupStats(
        groups=len(sizes),
        groups_per_doc=len(sizes) / max(1, int(sizes.sum())),
        size_min=int(sizes.min()),
        size_median=float(np.median(sizes)),
        size_max=int(sizes.max()),
        singletons=int((sizes == 1).sum()),
    )


@dataclass(frozen=True)
class Agreement:
    """ARI and NMI, plus homogeneity (each group holds one topic) and completeness (each topic in one group)."""

    ari: float
    nmi: float
    homogeneity: float
    completeness: float


def agreement(true_labels: Sequence[int], found_labels: Sequence[int]) -> Agreement:
    """How found groups agree with the true topics."""
    homogeneity, completeness, _ = homogeneity_completeness_v_measure(true_labels, found_labels)
    return Agreement(
        float(adjusted_rand_score(true_labels, found_labels)),
        float(normalized_mutual_info_score(true_labels, found_labels)),
        float(homogeneity),
        float(completeness),
    )
