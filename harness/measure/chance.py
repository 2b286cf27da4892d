"""What a random ranking scores: the chance level of evidence recall at k, computed exactly.

A question's candidates are the turns (or sessions) a memory could return, `n` of them; its evidence is a list of
groups, each the candidates that count as finding one piece of evidence (one turn at turn level; the turns of one
session when sessions are read off the top-k turns; one session when sessions are ranked). The top k of a
uniformly random ranking is a uniformly random k-subset, so, with C the binomial coefficient:

- a group of g candidates is hit with probability 1 − C(n − g, k) / C(n, k);
- `recall` (the share of groups hit) is the mean of those;
- `recall_any` (some group hit) is 1 − C(n − G, k) / C(n, k), G the groups' total size;
- `recall_all` (every group hit) is, by inclusion–exclusion, Σ over subsets A of the groups of
  (−1)^|A| C(n − size(A), k) / C(n, k), summed by subset size through the polynomial Π (1 − x^g).

With k ≥ n every candidate is returned: each figure is 1, and a table marks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import comb


@dataclass(frozen=True)
class Chance:
    """The expected `recall`, `recall_any` and `recall_all` at k of a random ranking."""

    recall: float
    recall_any: float
    recall_all: float


def chance_at_k(candidates: int, groups: Sequence[int], k: int) -> Chance:
    """The chance level of one question: `candidates` to rank, evidence `groups` (their sizes), cutoff `k`."""
    if k < 1 or not groups or any(g < 1 for g in groups) or sum(groups) > candidates:
        raise ValueError(f"chance needs k ≥ 1 and evidence groups of ≥ 1 within {candidates} candidates")
    if k >= candidates:
        return Chance(1.0, 1.0, 1.0)
    total = comb(candidates, k)

    def missed(size: int) -> Fraction:
        return Fraction(comb(candidates - size, k), total)

    signed = {0: 1}  # Π (1 − x^g): coefficient of each subset size
    for g in groups:
        grown = dict(signed)
        for size, coefficient in signed.items():
            grown[size + g] = grown.get(size + g, 0) - coefficient
        signed = grown
    every = sum((c * comb(candidates - size, k) for size, c in signed.items()), 0)
    return Chance(
        recall=float(sum(1 - missed(g) for g in groups) / len(groups)),
        recall_any=float(1 - missed(sum(groups))),
        recall_all=float(Fraction(every, total)),
    )


def mean_chance(chances: Sequence[Chance]) -> Chance:
    """The chance level of a set of questions: the mean of theirs (NaN for none)."""
    if not chances:
        nan = float("nan")
        return Chance(nan, nan, nan)
    count = len(chances)
    return Chance(
        sum(c.recall for c in chances) / count,
        sum(c.recall_any for c in chances) / count,
        sum(c.recall_all for c in chances) / count,
    )
