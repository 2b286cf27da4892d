"""Conflict judges: precision and recall of each available judge on labelled contradiction pairs."""

from __future__ import annotations

from dataclasses import asdict

from harness.experiments.definition import Experiment, RunContext
from harness.output.formats import share
from harness.output.results import JudgeRow, RunResults
from harness.output.tables import Table, column


def run(context: RunContext, *, per_kind: int = 30, seeds: tuple[int, ...] = (0, 1, 2)) -> list[JudgeRow]:
    """Each available conflict judge's precision and recall on the labelled contradiction pairs."""
    from harness.data.generators.contradictions import contradiction_pairs
    from harness.measure.judging import score_judge
    from reference.judges import OfflineJudge

    rows = []
    for seed in context.progress(seeds, "conflict judges"):
        score = score_judge(OfflineJudge(), contradiction_pairs(per_kind, seed=seed))
        pairs = score.true_positives + score.false_positives + score.false_negatives + score.true_negatives
        rows.append(
            JudgeRow(
                score.judge,
                seed,
                pairs,
                score.precision,
                score.recall,
                score.missed_by_kind,
                score.false_alarms_by_kind,
            )
        )
    return rows


SECONDS = 2.0


def work(context: RunContext) -> float:
    return SECONDS


def table(results: RunResults) -> list[Table]:
    if not results.judges:
        return []
    rows = [asdict(j) | {"missed": _counts(j.missed), "false_alarms": _counts(j.false_alarms)} for j in results.judges]
    return [
        Table(
            "judges",
            "Conflict judges on labelled faker pairs",
            "Each seed's pairs are contradicting, consistent or unrelated; a pair is flagged when the judge names it "
            "a conflict. Precision and recall of the flags against the contradicting pairs; `missed` and `false "
            "alarms` count pairs by kind.",
            (
                column("judge", "judge"),
                column("seed", "seed"),
                column("pairs", "pairs"),
                column("precision", "precision", format=share),
                column("recall", "recall", format=share),
                column("missed", "missed"),
                column("false alarms", "false_alarms"),
            ),
            rows,
        )
    ]


def _counts(by_kind: dict[str, int]) -> str:
    return ", ".join(f"{kind} {count}" for kind, count in by_kind.items() if count) or "none"


JUDGES = Experiment("judges", section="judges", data=["default"], run=run, work=work, tables=(table,))
