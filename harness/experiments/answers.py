"""The `answers` experiment: answers to a LoCoMo file's questions scored on the original and the corrected key.

Answers come from answer files (`--answers NAME=FILE`: published answers re-scored without re-running anything) or
from a reader (`--reader ollama:MODEL`: a local model answering from each system's top-k retrieved turns,
`reader`). Every answer is scored by LoCoMo's own metrics, no LLM involved (`answer_scores`). With `--judge
ollama:MODEL` each answer is also judged under the published and the strict prompt, and each prompt's leniency is
measured first on known-wrong answers (`answer_judge`): a LENIENT judge's accuracies are reported, never turned into
verdicts. Adversarial questions (no answer in the dialogue) are left out of judging, as in the published scoring.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from harness.data.answers import load_answers
from harness.data.dialogue import LocomoQuestion, load_dialogue, locomo_questions
from harness.data.encoding import encode_evalset
from harness.data.errata import CORRECTED, ORIGINAL, apply_errata, load_errata
from harness.experiments.definition import Experiment, RunContext
from harness.measure.answer_judge import (
    LENIENCY_LIMIT,
    PROMPTS,
    Judged,
    OllamaAnswerJudge,
    ProbeItem,
    derived_probe,
    leniency,
    sample,
)
from harness.measure.answer_scores import ADVERSARIAL, score
from harness.measure.reader import Memory, OllamaReader, ollama_model
from harness.measure.timing import K, built
from harness.output.formats import share
from harness.output.results import AnswerRow, RunResults, ScoredAnswer
from harness.output.tables import Table, column
from harness.systems.options import OptionError
from harness.verdicts.accuracy import ALPHA, claim_verdict, mcnemar, wilson

DERIVED = "derived from the key"
READER_SYSTEMS = ("reference",)
"""The systems a reader answers through when the run names none (`--systems`)."""


@dataclass(frozen=True)
class Answering:
    """What the answers experiment scores: answer files by name, a reader, a judge, its probes, published
    accuracies by answer set, and how the models are reached."""

    files: tuple[tuple[str, Path], ...] = ()
    reader: str | None = None
    judge: str | None = None
    probes: tuple[Path, ...] = ()
    claims: Mapping[str, float] = field(default_factory=dict)
    host: str | None = None
    timeout: float = 120.0
    k: int = K

    def __post_init__(self) -> None:
        for option, spec in (("--reader", self.reader), ("--judge", self.judge)):
            if spec is not None:
                ollama_model(spec, option)
        if self.probes and not self.judge:
            raise OptionError("--judge-probe measures a judge: give --judge ollama:MODEL too")
        repeated = sorted({name for name, _ in self.files if [n for n, _ in self.files].count(name) > 1})
        if repeated:
            raise OptionError(f"--answers: each answer set needs its own name ({', '.join(repeated)} given twice)")
        if (self.judge or self.claims) and not (self.files or self.reader):
            raise OptionError("--judge and --claim need answers: give --answers NAME=FILE or --reader ollama:MODEL")

    def names(self, systems: Sequence[str] | None) -> list[str]:
        """The answer sets a run scores: each file's name, and each system's answers through the reader."""
        if not self.reader:
            return [name for name, _ in self.files]
        reader = f"ollama:{ollama_model(self.reader, '--reader')}"
        return [name for name, _ in self.files] + [f"{s} + {reader}" for s in systems or READER_SYSTEMS]

    def check_claims(self, systems: Sequence[str] | None) -> None:
        """Each published accuracy names an answer set of the run."""
        unknown = sorted(set(self.claims) - set(self.names(systems)))
        if unknown:
            known = ", ".join(self.names(systems))
            raise OptionError(f"--claim {', '.join(unknown)}: no such answer set; this run scores {known}")


def run(context: RunContext) -> list[AnswerRow]:
    """Answers (files, or a reader over each system's top k) scored by LoCoMo's F1 / BLEU-1 / EM and a judge."""
    options = context.answering
    if options is None or not (options.files or options.reader):
        return []
    assert context.dataset is not None
    options.check_claims(context.systems)
    questions = locomo_questions(context.dataset)
    keys = {ORIGINAL: questions}
    changed: list[str] = []
    if context.errata is not None:
        corrected = apply_errata(questions, load_errata(context.errata))
        keys[CORRECTED] = corrected.questions
        changed = [new.id for new, old in zip(corrected.questions, questions) if new != old]
        context.dataset_info["corrections"] = (
            f"{corrected.changed} questions changed ({corrected.answers_changed} answers, "
            f"{corrected.evidence_changed} evidence lists) by {context.errata}"
        )
    sets = {name: load_answers(path, questions) for name, path in options.files}
    if options.reader:
        sets |= read(context, options, options.reader)
    judges = []
    if options.judge:
        model = ollama_model(options.judge, "--judge")
        judges = [OllamaAnswerJudge(model, p, host=options.host, timeout=options.timeout) for p in PROMPTS]
    probes = _probes(questions, options.probes)
    measured = {
        j.name: {name: leniency(j, probe) for name, probe in probes.items()}
        for j in context.progress(judges, "judge leniency")
    }
    rows = []
    for name, given in context.progress(list(sets.items()), "answer sets"):
        for key, key_questions in keys.items():
            answered = [q for q in key_questions if q.id in given]
            scored = [_scored(q, given[q.id]) for q in answered]
            claimed, changes = options.claims.get(name), changed if key == CORRECTED else []
            rows.append(AnswerRow(name, key, scored, claimed=claimed, changed=changes))
            judgeable = [q for q in answered if q.category != ADVERSARIAL]  # no answer to judge against
            for judge in judges:
                judged = [_scored(q, given[q.id], judge.judge(q.question, q.answer, given[q.id])) for q in judgeable]
                shares = measured[judge.name]
                lenient = any(accepted > LENIENCY_LIMIT * total for accepted, total in shares.values())
                rows.append(AnswerRow(name, key, judged, judge.name, shares, lenient, claimed, changes))
    return rows


def _scored(question: LocomoQuestion, answer: str, judged: Judged | None = None) -> ScoredAnswer:
    scores = score(answer, question.answer, question.category)
    correct, reason = (judged.correct, judged.reason) if judged is not None else (None, "")
    return ScoredAnswer(question.id, question.category_name, scores.f1, scores.bleu1, scores.exact, correct, reason)


def _probes(questions: Sequence[LocomoQuestion], files: Sequence[Path]) -> dict[str, list[ProbeItem]]:
    """The built-in probe and each `--judge-probe` file's answers (all wrong by construction), sampled."""
    probes = {DERIVED: sample(derived_probe(questions))}
    by_id = {q.id: q for q in questions}
    for path in files:
        wrong = load_answers(path, questions, "--judge-probe")
        probes[path.name] = sample([ProbeItem(by_id[i].question, by_id[i].answer, a) for i, a in wrong.items()])
    return probes


def read(context: RunContext, options: Answering, reader_spec: str) -> dict[str, dict[str, str]]:
    """Each system's answers through the reader: for every question with evidence, its top-k turns (with their
    session dates) in the reader's prompt."""
    reader = OllamaReader(ollama_model(reader_spec, "--reader"), host=options.host, timeout=options.timeout)
    assert context.dataset is not None
    data = load_dialogue(context.dataset, context.turn_format)
    encoder_name, encoder = context.encoder
    systems = context.systems or READER_SYSTEMS
    answered: dict[str, dict[str, str]] = {f"{s} + {reader.name}": {} for s in systems}
    for conversation in context.progress(data.conversations, f"reading ({reader.name})"):
        evalset = encode_evalset(conversation, encoder)
        by_id = {d.id: d for d in evalset.docs}
        for system in systems:
            with built(system, evalset, encoder=encoder_name) as memory:
                for query in evalset.queries:
                    hits = memory.search(query, k=options.k)
                    turns = [by_id[h.doc_id] for h in hits if h.doc_id in by_id]
                    memories = [Memory(str(d.metadata.get("date", "")), d.text) for d in turns]
                    answered[f"{system} + {reader.name}"][query.id] = reader.answer(query.text, memories)
    return answered


ALL = "all questions"
SET, KEY, SUBSET = column("answer set", "system"), column("key", "key"), column("questions", "subset")


def table(results: RunResults) -> list[Table]:
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


ANSWERS = Experiment("answers", section="answers", data=["dialogue"], run=run, tables=(table,))
