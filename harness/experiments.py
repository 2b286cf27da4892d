"""The experiments of a run. Each returns plain rows (dicts) and raw figures for the report."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any

from reference.encoders import Encoder

from .beir import load_beir
from .datasets import needles_evalset, topics_evalset, vectors_evalset
from .encoding import encode_evalset
from .metrics import agreement, group_stats
from .plan import GROUPING_SYSTEMS, REGIMES, RunPlan
from .runner import Measurement, group_labels, measure

Progress = Callable[[Iterable[Any], str], Iterable[Any]]


def scaling(plan: RunPlan, systems: tuple[str, ...], progress: Progress, *, regime: str = "fixed") -> list[Measurement]:
    """Latency and recall vs exact for every system at every size of a regime (`plan.REGIMES`);
    in the fixed regime, a query-parameter sweep at the largest size."""
    results: list[Measurement] = []
    largest = max(plan.sizes)
    for size in plan.sizes:
        evalset = vectors_evalset(size, queries=plan.queries, clusters=REGIMES[regime](size), seed=size)
        for system in progress(plan.systems_at(size, systems), f"scaling ({regime}) N={size:,}"):
            sweep = plan.sweep and size == largest and regime == "fixed"
            results += measure(system, evalset, encoder="vectors", sweep=sweep)
    return results


def needles(
    plan: RunPlan,
    systems: tuple[str, ...],
    encoders: dict[str, Encoder],
    progress: Progress,
) -> list[Measurement]:
    """The published case (200 documents, 5 needles, top 3) over several seeds and encoders."""
    results: list[Measurement] = []
    for encoder_name, encoder in encoders.items():
        for seed in progress(plan.needle_seeds, f"needles ({encoder_name})"):
            evalset = encode_evalset(needles_evalset(200, 5, seed=seed), encoder)
            for system in systems:
                results += measure(system, evalset, encoder=encoder_name)
    return results


def grouping(plan: RunPlan, encoders: dict[str, Encoder], progress: Progress) -> list[dict[str, Any]]:
    """ARI / NMI of each grouping system against the true topics of a topic haystack."""
    rows = []
    for encoder_name, encoder in encoders.items():
        evalset = encode_evalset(topics_evalset(plan.topic_docs, seed=11), encoder)
        for system in progress(GROUPING_SYSTEMS, f"grouping ({encoder_name})"):
            options = {"n_clusters": len(evalset.info["topics"])} if system == "kmeans" else {}
            labels = group_labels(system, evalset, encoder=encoder_name, options=options)
            rows.append(
                {
                    "system": system + (f" (k={options['n_clusters']})" if options else ""),
                    "encoder": encoder_name,
                    "docs": len(evalset.docs),
                    **asdict(agreement(evalset.labels, labels)),
                    **asdict(group_stats(labels)),
                }
            )
    return rows


def judges(progress: Progress, *, per_kind: int = 30, seeds: tuple[int, ...] = (0, 1, 2)) -> list[dict[str, Any]]:
    """Each available conflict judge's precision and recall on the labelled contradiction pairs."""
    from reference.judges import OfflineJudge

    from .generators.contradictions import contradiction_pairs
    from .judging import score_judge

    rows = []
    for seed in progress(seeds, "conflict judges"):
        score = score_judge(OfflineJudge(), contradiction_pairs(per_kind, seed=seed))
        rows.append(
            {
                "judge": score.judge,
                "seed": seed,
                "pairs": score.true_positives + score.false_positives + score.false_negatives + score.true_negatives,
                "precision": score.precision,
                "recall": score.recall,
                "missed": score.missed_by_kind,
                "false_alarms": score.false_alarms_by_kind,
            }
        )
    return rows


def beir(
    directory: str,
    systems: tuple[str, ...],
    encoder_name: str,
    encoder: Encoder,
    progress: Progress,
) -> list[Measurement]:
    """Any BEIR-format directory: recall@10, MRR and nDCG@10 from its qrels, with latency."""
    evalset = encode_evalset(load_beir(directory), encoder)
    return [
        m
        for system in progress(systems, f"BEIR {evalset.name}")
        for m in measure(system, evalset, encoder=encoder_name)
    ]
