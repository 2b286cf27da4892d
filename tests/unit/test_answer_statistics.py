"""Wilson intervals, McNemar's exact test and the verdict on a published accuracy, against reference values."""

from __future__ import annotations

import pytest

from harness.verdicts.accuracy import NOT_JUDGED, REFUTED, REPRODUCED, claim_verdict, mcnemar, wilson


@pytest.mark.parametrize(
    ("correct", "total", "low", "high"),
    [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)],
)
def test_wilson_intervals_match_newcombes_table(correct, total, low, high):
    """Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method 3 (the score
    interval without continuity correction)."""
    interval = wilson(correct, total)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)
    assert interval.value == correct / total


def test_mcnemars_exact_test_is_the_binomial_test_of_the_discordant_pairs():
    first = [True] * 2 + [False] * 10 + [True] * 30 + [False] * 8
    second = [False] * 2 + [True] * 10 + [True] * 30 + [False] * 8
    test = mcnemar(first, second)
    assert (test.first_only, test.second_only) == (2, 10)
    assert test.p_value == pytest.approx(2 * (1 + 12 + 66) / 2**12)  # 2·P(X ≤ 2), X ~ Binomial(12, 1/2)
    assert test.differ
    assert mcnemar([True, False], [True, False]).p_value == 1.0


def test_a_published_accuracy_is_reproduced_within_the_interval_refuted_outside_and_never_judged_by_a_lenient_judge():
    measured = wilson(81, 263)
    assert claim_verdict(measured, 0.30, lenient=False)[0] == REPRODUCED
    verdict, why = claim_verdict(measured, 0.6688, lenient=False)
    assert verdict == REFUTED and "above" in why
    assert claim_verdict(measured, 0.30, lenient=True)[0] == NOT_JUDGED


def test_an_accuracy_of_nothing_is_refused():
    with pytest.raises(ValueError, match="total ≥ 1"):
        wilson(0, 0)
