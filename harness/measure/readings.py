"""What a published retrieval figure measures (`Metric`), and a figure measured under one such definition
(`Reading`) with its 95% interval: the field's claims (`harness.verdicts.field`) are compared only to readings whose
metric is theirs.

Published dialogue-memory figures share a name ("session recall@10") and differ in what the memory stores (one
document per turn or per session), what counts as found (a turn, or a session), how a question scores (the share
of its evidence found, some of it, all of it), k, and which questions count (with or without the unanswerable
ones). A `Metric` names all of them, so that two figures are compared only when every one agrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Documents = Literal["turns", "sessions"]
Score = Literal["recall", "recall_any", "recall_all", "accuracy"]
INTERVAL_DRAWS = 2000
"""Bootstrap resamples of the questions behind a reading's interval."""


@dataclass(frozen=True)
class Metric:
    """A retrieval figure's definition. `documents`: what the memory stores, one per turn or one per session (the
    text each holds is the protocol's). `level`: what counts as found (a turn, or a session: with turn documents, the
    sessions of the top-k turns). `score`: per question, the share of its evidence found (`recall`), whether some is
    (`recall_any`, hit@k) or all is (`recall_all`); `accuracy` is an answer judged right (a reader and a judge).
    `unanswerable`: whether questions with no answer in the memory count (LoCoMo's category 5, LongMemEval's
    abstentions). `encoder`: the embedding model."""

    documents: Documents
    level: Literal["turn", "session"]
    score: Score
    k: int
    unanswerable: Literal["in", "out"]
    encoder: str

    def __str__(self) -> str:
        per = "turn" if self.documents == "turns" else "session"
        found = "" if self.level == self.documents[:-1] else f", {self.level}s of the top-k {self.documents}"
        counted = "every question" if self.unanswerable == "in" else "answerable questions"
        return f"{self.score}@{self.k}, one document per {per}{found}, {counted}, {self.encoder}"


def comparable(claimed: Metric, measured: Metric) -> bool:
    """Whether a measured figure may be set against a claimed one: only under the very same definition."""
    return claimed == measured


@dataclass(frozen=True)
class Reading:
    """A figure measured under one metric on one dataset, with the 95% bootstrap interval over its questions."""

    protocol: str
    """The protocol that produced it (`reproduce.PROTOCOLS`)."""
    dataset: str
    metric: Metric
    value: float
    low: float
    high: float
    questions: int
    note: str = ""
    """What differs from the source's run that the figure cannot show (fewer conversations, questions left out)."""
    key: str = "original"
    """The evidence key it is scored on: the dataset's own, or `corrected` by `--errata` (LoCoMo)."""

    def holds(self, figure: float) -> bool:
        """Whether a claimed figure lies within this reading's interval."""
        return self.low <= figure <= self.high

    def text(self) -> str:
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}] over {self.questions:,} questions"


def per_question(found: Sequence[Sequence[str]], wanted: Sequence[Sequence[str]], k: int, score: Score) -> np.ndarray:
    """Each question's score at k (the questions without evidence are left out, as `metrics.evidence_scores` does)."""
    values = []
    for ranked, evidence in zip(found, wanted):
        if not evidence:
            continue
        hits = len(set(ranked[:k]) & set(evidence))
        share = hits / len(set(evidence))
        values.append(share if score == "recall" else float(hits > 0) if score == "recall_any" else float(share == 1))
    return np.asarray(values, dtype=np.float64)


def interval(values: np.ndarray, *, seed: int = 0) -> tuple[float, float]:
    """The 95% percentile-bootstrap interval of the mean of `values` (seeded: a rerun draws the same)."""
    if len(values) == 0:
        return float("nan"), float("nan")
    draws = np.random.default_rng(seed).integers(0, len(values), size=(INTERVAL_DRAWS, len(values)))
    means = values[draws].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)
