"""Precision and recall of a conflict judge on labelled statement pairs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.data.generators.contradictions import LabelledPair
from reference.judges import ConflictJudge, JudgeError, Statement


@dataclass(frozen=True)
class JudgeScore:
    judge: str
    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int
    errors: int
    missed_by_kind: dict[str, int] = field(default_factory=dict)
    false_alarms_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else float("nan")

    @property
    def recall(self) -> float:
        wanted = self.true_positives + self.false_negatives
        return self.true_positives / wanted if wanted else float("nan")


def score_judge(judge: ConflictJudge, pairs: Sequence[LabelledPair]) -> JudgeScore:
    """Ask the judge about each pair alone; a pair is flagged when the judge names it."""
    counts: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    false_alarms: Counter[str] = Counter()
    for index, pair in enumerate(pairs):
        statements = [Statement(f"{index}a", pair.first, 1.0), Statement(f"{index}b", pair.second, 2.0)]
        try:
            flagged = bool(judge.judge(statements))
        except JudgeError:
            counts["errors"] += 1
            flagged = False
        truth = pair.label == "contradicting"
        counts[
            {(True, True): "tp", (False, True): "fp", (True, False): "fn", (False, False): "tn"}[truth, flagged]
        ] += 1
        if truth and not flagged:
            missed[pair.kind] += 1
        if flagged and not truth:
            false_alarms[pair.kind] += 1
    return JudgeScore(
        judge.name,
        counts["tp"],
        counts["fp"],
        counts["fn"],
        counts["tn"],
        counts["errors"],
        dict(missed),
        dict(false_alarms),
    )
