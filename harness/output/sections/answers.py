"""Answers scored: LoCoMo's LLM-free metrics per category, a judge's accuracies with Wilson intervals and the
judge's leniency beside them, McNemar's test between answer sets, and the verdicts on published accuracies."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from harness.measure.answer_judge import LENIENCY_LIMIT
from harness.output.formats import share
from harness.output.results import AnswerRow, RunResults, ScoredAnswer
from harness.output.tables import Table, column
from harness.verdicts.accuracy import ALPHA, claim_verdict, mcnemar, wilson

ALL = "all questions"
SET, KEY, SUBSET = column("answer set", "system"), column("key", "key"), column("questions", "subset")


def answers(results: RunResults) -> list[Table]:
    plain = [r for r in results.answers if not r.judge]
    judged = [r for r in results.answers if r.judge]
    if not plain:
        return []
    tables = [
        Table(
            "answers",
            "Answers scored without an LLM: LoCoMo's own metrics, per category",
            "F1: token F1 of Porter stems after LoCoMo's normalisation (multi-hop: comma-separated parts, each gold "
            "part scored by its best answer part); BLEU-1: clipped unigram precision × brevity penalty; EM: the same "
            "set of normalised tokens. Adversarial questions score 1 when the answer says 'no information available' "
            "or 'not mentioned'. `corrected`: the key with the corrections of --errata; `changed`: the row's questions "
            "they changed.",
            (
                SET,
                KEY,
                SUBSET,
                column("n", "n"),
                *(column(m, m.lower(), format=share) for m in ("F1", "BLEU-1", "EM")),
                column("changed", "changed"),
            ),
            [_plain(row, subset, chosen) for row in plain for subset, chosen in _subsets(row.answers)],
        )
    ]
    if judged:
        tables += _judged(judged)
    return tables


def _judged(rows: list[AnswerRow]) -> list[Table]:
    accuracy = Table(
        "answers-judged",
        "Answers judged by an LLM: accuracy with its Wilson 95% interval, and the judge's leniency beside it",
        "accuracy: the share of answers the judge labelled CORRECT. leniency: the share of known-wrong answers "
        "the same judge prompt accepted, per probe (`derived from the key`: each question answered with another "
        f"question's gold answer; a file: --judge-probe). A judge accepting more than {LENIENCY_LIMIT:.0%} of a "
        "probe is LENIENT: its accuracy measures the judge as much as the answers, and is never made a verdict. "
        "Every judgement and its reason is in results.json.",
        (
            SET,
            KEY,
            column("judge", "judge"),
            SUBSET,
            column("n", "n"),
            column("accuracy (95% CI)", "accuracy"),
            column("leniency", "leniency"),
            column("judge is", "lenient"),
        ),
        [_accuracy(row, subset, chosen) for row in rows for subset, chosen in _subsets(row.answers)],
    )
    tables = [accuracy]
    paired = _paired(rows)
    if paired:
        tables.append(
            Table(
                "answers-paired",
                "Two answer sets judged on the same questions: McNemar's exact test",
                "Only the questions exactly one set answered correctly tell two sets apart; the p-value is the exact "
                f"two-sided binomial test of those counts against one half. `differ`: p < {ALPHA:.2f}.",
                (
                    column("first", "first"),
                    column("second", "second"),
                    KEY,
                    column("judge", "judge"),
                    column("n", "n"),
                    column("first only", "first_only"),
                    column("second only", "second_only"),
                    column("p", "p_value", format=share),
                    column("differ", "differ"),
                ),
                paired,
            )
        )
    claims = [_claim(row) for row in rows if row.claimed is not None and row.answers]
    if claims:
        tables.append(
            Table(
                "answers-claims",
                "Published accuracies against the judged ones",
                "REPRODUCED: the published accuracy lies within the Wilson 95% interval of the accuracy judged here; "
                "REFUTED: outside it; NOT JUDGED: the judge is LENIENT.",
                (
                    SET,
                    KEY,
                    column("judge", "judge"),
                    column("claimed", "claimed", format=share),
                    column("verdict", "verdict"),
                    column("why", "why"),
                ),
                claims,
            )
        )
    return tables


def _subsets(answers: Sequence[ScoredAnswer]) -> list[tuple[str, list[ScoredAnswer]]]:
    by_category: dict[str, list[ScoredAnswer]] = defaultdict(list)
    for answer in answers:
        by_category[answer.category].append(answer)
    return [(ALL, list(answers)), *sorted(by_category.items())]


def _plain(row: AnswerRow, subset: str, chosen: list[ScoredAnswer]) -> dict[str, Any]:
    means = {
        m: float(np.mean([getattr(a, m) for a in chosen])) if chosen else float("nan") for m in ("f1", "bleu1", "exact")
    }
    return {
        "system": row.system,
        "key": row.key,
        "subset": subset,
        "n": len(chosen),
        "f1": means["f1"],
        "bleu-1": means["bleu1"],
        "em": means["exact"],
        "changed": len(set(row.changed) & {a.question_id for a in chosen}) if row.key == "corrected" else None,
    }


def _accuracy(row: AnswerRow, subset: str, chosen: list[ScoredAnswer]) -> dict[str, Any]:
    correct = sum(bool(a.correct) for a in chosen)
    shown = wilson(correct, len(chosen)).text() if chosen else None
    return {
        "system": row.system,
        "key": row.key,
        "judge": row.judge,
        "subset": subset,
        "n": len(chosen),
        "correct": correct,
        "accuracy": shown,
        "leniency": _leniency(row),
        "lenient": _mark(row),
    }


def _leniency(row: AnswerRow) -> str:
    return " · ".join(
        f"{probe}: {accepted / total:.2f} ({accepted}/{total})"
        for probe, (accepted, total) in row.leniency.items()
        if total
    )


def _mark(row: AnswerRow) -> str:
    return "LENIENT" if row.lenient else "within the limit"


def _paired(rows: list[AnswerRow]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[AnswerRow]] = defaultdict(list)
    for row in rows:
        groups[row.key, row.judge].append(row)
    paired = []
    for (key, judge), group in groups.items():
        for first, second in combinations(group, 2):
            a = {x.question_id: bool(x.correct) for x in first.answers}
            b = {x.question_id: bool(x.correct) for x in second.answers}
            common = sorted(a.keys() & b.keys())
            if not common:
                continue
            test = mcnemar([a[q] for q in common], [b[q] for q in common])
            paired.append(
                {
                    "first": first.system,
                    "second": second.system,
                    "key": key,
                    "judge": judge,
                    "n": len(common),
                    "first_only": test.first_only,
                    "second_only": test.second_only,
                    "p_value": test.p_value,
                    "differ": "yes" if test.differ else "no",
                }
            )
    return paired


def _claim(row: AnswerRow) -> dict[str, Any]:
    assert row.claimed is not None
    measured = wilson(sum(bool(a.correct) for a in row.answers), len(row.answers))
    verdict, why = claim_verdict(measured, row.claimed, lenient=row.lenient)
    return {
        "system": row.system,
        "key": row.key,
        "judge": row.judge,
        "claimed": row.claimed,
        "verdict": verdict,
        "why": why + f"; judge leniency {_leniency(row)}",
    }
