"""Small, hand-made results for the claims and compare tests (no benchmark run needed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.measure.plan import RunPlan
from harness.output.results import Machine, Measurement, RunInfo, RunResults

MACHINE = Machine(platform="linux", processor="x86_64", cpus=2, python="3.11.7", packages={"numpy": "2.3"})


def run_info(machine: Machine = MACHINE) -> RunInfo:
    return RunInfo(
        id="test",
        started="2026-11-30T00:00:00+00:00",
        duration_s=1.0,
        command="magbench run",
        commit="0" * 40,
        dirty=False,
        machine=machine,
        plan=RunPlan(),
        encoders={},
    )


def measured(
    system: str,
    n: int,
    latencies_ms: Any,
    *,
    recall: float = 1.0,
    params: dict | None = None,
    found3: int = 5,
    pass_factors: Sequence[float] = (1.0,),
) -> Measurement:
    """A measurement of these per-query latencies (a number: 50 equal queries), one pass per factor (the
    machine running that much slower or faster in that pass)."""
    one_pass = list(latencies_ms) if hasattr(latencies_ms, "__len__") else [latencies_ms] * 50
    return Measurement.timed(
        [[int(t * factor * 1e6) for t in one_pass] for factor in pass_factors],
        system=system,
        dataset="d",
        encoder="e",
        n_docs=n,
        params=params or {},
        build_s=1.0,
        ingest_per_s=n,
        rss_bytes_per_doc=0.0,
        recall_at_10=recall,
        capped_recall_at_10=recall,
        mrr=1.0,
        ndcg_at_10=1.0,
        found_at={1: found3, 3: found3, 10: 5},
        queries=len(one_pass),
    )


def results(machine: Machine = MACHINE, **sections: Any) -> RunResults:
    return RunResults(run=run_info(machine), **sections)
