"""Statistics of answer accuracy: a Wilson interval on each accuracy, McNemar's exact test for two systems
answering the same questions, and the verdict on a published accuracy from them (scipy computes both).

An accuracy is a share of questions judged correct, so its interval is a binomial proportion's; Wilson's keeps
its coverage near its level at the shares and counts answer sets have (the normal interval does not near 0 or 1).
Two systems on the same questions are paired: only the questions where exactly one is correct tell them apart,
and McNemar's exact test is the two-sided binomial test of those discordant counts against one half.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

from harness.verdicts.confidence import LEVEL, Estimate

REPRODUCED, REFUTED, NOT_JUDGED = "REPRODUCED", "REFUTED", "NOT JUDGED"
ALPHA = 1 - LEVEL
"""Two accuracies differ when McNemar's p-value is below this."""


def wilson(correct: int, total: int) -> Estimate:
    """The share `correct / total` and its Wilson score interval at `LEVEL`."""
    if total < 1 or not 0 <= correct <= total:
        raise ValueError(f"an accuracy needs 0 ≤ correct ≤ total and total ≥ 1, got {correct} of {total}")
    interval = binomtest(correct, total).proportion_ci(confidence_level=LEVEL, method="wilson")
    return Estimate(correct / total, float(interval.low), float(interval.high))


@dataclass(frozen=True)
class Paired:
    """Two systems judged on the same questions: where only the first, only the second is correct, and McNemar's
    exact two-sided p-value."""

    first_only: int
    second_only: int
    p_value: float

    @property
    def differ(self) -> bool:
        return self.p_value < ALPHA


def mcnemar(first: Sequence[bool], second: Sequence[bool]) -> Paired:
    """McNemar's exact test on paired correctness (the same questions, in the same order)."""
    if len(first) != len(second):
        raise ValueError(f"paired answers must be as many: {len(first)} vs {len(second)}")
    first_only = sum(a and not b for a, b in zip(first, second))
    second_only = sum(b and not a for a, b in zip(first, second))
    discordant = first_only + second_only
    p_value = 1.0 if discordant == 0 else float(binomtest(first_only, discordant, 0.5).pvalue)
    return Paired(first_only, second_only, p_value)


def claim_verdict(measured: Estimate, claimed: float, *, lenient: bool) -> tuple[str, str]:
    """The verdict on a published accuracy and its reason: REPRODUCED when it lies within the measured Wilson
    interval, REFUTED when outside, NOT JUDGED when the judge accepts too many known-wrong answers."""
    if lenient:
        return NOT_JUDGED, "the judge is LENIENT: its accuracies measure the judge, not the answers"
    interval = f"{measured.value:.3f} (95% CI {measured.low:.3f}–{measured.high:.3f})"
    if measured.low <= claimed <= measured.high:
        return REPRODUCED, f"claimed {claimed:.3f} lies within the measured {interval}"
    side = "above" if claimed > measured.high else "below"
    return REFUTED, f"claimed {claimed:.3f} lies {side} the measured {interval}"
