"""The `answers` experiment: answers to a LoCoMo file's questions scored on the original and the corrected key.

Answers come from answer files (`--answers NAME=FILE`: published answers re-scored without re-running anything) or
from a reader (`--reader ollama:MODEL`: a local model answering from each system's top-k retrieved turns,
`reader`). Every answer is scored by LoCoMo's own metrics, no LLM involved (`answer_scores`). With `--judge
ollama:MODEL` each answer is also judged under the published and the strict prompt, and each prompt's leniency is
measured first on known-wrong answers (`answer_judge`): a LENIENT judge's accuracies are reported, never turned into
verdicts. Adversarial questions (no answer in the dialogue) are left out of judging, as in the published scoring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.data.answers import load_answers
from harness.data.dialogue import LocomoQuestion, load_dialogue, locomo_questions
from harness.data.encoding import encode_evalset
from harness.data.errata import CORRECTED, ORIGINAL, apply_errata, load_errata
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
from harness.measure.experiment_registry import RunContext, experiment
from harness.measure.reader import Memory, OllamaReader, ollama_model
from harness.measure.timing import K, built
from harness.output.results import AnswerRow, ScoredAnswer
from harness.systems.options import OptionError

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


@experiment("answers", section="answers", data=["dialogue"])
def answers(context: RunContext) -> list[AnswerRow]:
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
