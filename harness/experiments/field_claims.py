"""The field's retrieval claims reproduced on the run's dialogue data (`harness.verdicts.field` judges them).

A protocol builds each memory as the source's benchmark script does and ranks by the run's encoder with exact
cosine (what a Chroma collection of one conversation's few dozen documents returns):

- `sessions`: one document per session (MemPalace's `benchmarks/locomo_bench.py`, raw mode, session granularity:
  each LoCoMo turn a line `speaker said, "text"`; its `longmemeval_bench.py`: a LongMemEval session's user turns,
  one a line), a question ranked against the sessions;
- `turns`: one document per turn with the same text, a session found when one of its turns is in the top k.

Every reading of an ambiguous definition is scored: the share of a question's evidence sessions found (`recall`,
what MemPalace's LoCoMo script averages), some of them (`recall_any`, what Hebb Mind reads the same figure as), all
of them (`recall_all`), with and without the unanswerable questions, at each k a claim names. With LoCoMo's
corrections (`--errata`) each ranking is scored on the original and on the corrected key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Literal

import numpy as np

from harness.data.dialogue import TurnFormat, unanswerable
from harness.data.encoding import encode_evalset
from harness.data.errata import keyed_dialogue
from harness.data.evalset import EvalSet
from harness.experiments.definition import Experiment, RunContext
from harness.measure.readings import Documents, Metric, Reading, Score, interval, per_question
from harness.output.formats import share
from harness.output.results import RunResults
from harness.output.sections.common import KEY
from harness.output.tables import Table, column
from harness.protocol import Document
from harness.verdicts.field import reading_rows
from reference.encoders import Encoder

KS = (5, 10)
"""The cutoffs the field's retrieval claims name."""
ENCODER = "minilm"
"""The encoder the claims name (all-MiniLM-L6-v2); a run on another encoder reproduces none of them."""
ENCODER_NAME = "all-MiniLM-L6-v2"
DOCUMENTS: tuple[Documents, ...] = ("sessions", "turns")
SCORES: tuple[Score, ...] = ("recall", "recall_any", "recall_all")


def sessions_of(evalset: EvalSet, kind: str) -> Iterator[tuple[str, list[Document]]]:
    """A conversation's sessions in order, each with the turns its document holds (LongMemEval: the user's)."""
    assert evalset.conversation is not None
    session_of = evalset.conversation.session_of
    grouped: dict[str, list[Document]] = {}
    for doc in evalset.docs:
        if kind != "longmemeval" or doc.metadata.get("speaker") == "user":
            grouped.setdefault(session_of[doc.id], []).append(doc)
    yield from grouped.items()


def line(doc: Document, kind: str) -> str:
    """A turn as the source's script writes it: LoCoMo `speaker said, "text"`, LongMemEval the text alone."""
    return doc.text if kind == "longmemeval" else f'{doc.metadata.get("speaker", "?")} said, "{doc.text}"'


def ranked_sessions(evalset: EvalSet, kind: str, documents: Documents, encoder: Encoder) -> list[list[str]]:
    """Each question's sessions in rank order under one protocol (turn documents: by their best turn)."""
    assert evalset.conversation is not None
    grouped = list(sessions_of(evalset, kind))
    if documents == "sessions":
        docs = [Document(s, "\n".join(line(d, kind) for d in turns)) for s, turns in grouped]
        session = [s for s, _ in grouped]
    else:
        docs = [Document(d.id, line(d, kind)) for _, turns in grouped for d in turns]
        session = [s for s, turns in grouped for _ in turns]
    built = encode_evalset(EvalSet(f"{evalset.name}-{documents}-{kind}", docs, evalset.queries, {}), encoder)
    matrix = np.stack([d.vector for d in built.docs if d.vector is not None])
    ranked = []
    for query in built.queries:
        assert query.vector is not None
        order = np.argsort(-(matrix @ query.vector), kind="stable")
        ranked.append(list(dict.fromkeys(session[i] for i in order)))
    return ranked


def run(context: RunContext) -> list[Reading]:
    """The field's published retrieval figures reproduced under each reading of their definitions (MiniLM runs)."""
    assert context.dataset is not None
    encoder_name, encoder = context.encoder
    if encoder_name != ENCODER:
        return []
    kind = context.dataset.kind
    keyed = keyed_dialogue(context.dataset, TurnFormat.parse("plain"), context.errata)
    data = keyed.data
    readings = []
    for documents in DOCUMENTS:
        found: list[list[str]] = []
        wanted: dict[str, list[list[str]]] = {key: [] for key in keyed.evidence}
        apart: list[bool] = []
        for evalset in context.progress(data.conversations, f"field claims: {documents} documents"):
            assert evalset.conversation is not None
            session_of, category = evalset.conversation.session_of, evalset.conversation.category
            found += ranked_sessions(evalset, kind, documents, encoder)
            for key, evidence in keyed.evidence.items():  # one ranking, scored on each key
                wanted[key] += [sorted({session_of[t] for t in evidence.get(q.id, [])}) for q in evalset.queries]
            apart += [unanswerable(category[q.id]) for q in evalset.queries]
        for key, lists in wanted.items():
            readings += _readings(data.name, documents, found, lists, apart, _note(keyed.unscored[key]), key)
    return readings


def _readings(
    dataset: str,
    documents: Documents,
    found: list[list[str]],
    wanted: list[list[str]],
    apart: list[bool],
    note: str,
    key: str,
) -> list[Reading]:
    subsets: Mapping[Literal["in", "out"], list[bool]] = {"in": [True] * len(found), "out": [not a for a in apart]}
    readings = []
    for unanswerable_counted, keep in subsets.items():
        kept_found = [f for f, k in zip(found, keep) if k]
        kept_wanted = [w for w, k in zip(wanted, keep) if k]
        for k in KS:
            for score in SCORES:
                values = per_question(kept_found, kept_wanted, k, score)
                low, high = interval(values)
                metric = Metric(documents, "session", score, k, unanswerable_counted, ENCODER_NAME)
                readings.append(
                    Reading(documents, dataset, metric, float(values.mean()), low, high, len(values), note, key)
                )
    return readings


def _note(unscored: int) -> str:
    """What the readings leave out that a source's script may count."""
    if not unscored:
        return ""
    return f"{unscored} questions whose evidence names no turn left out (MemPalace's LoCoMo script scores them 1.0)"


def table(results: RunResults) -> list[Table]:
    if not results.field_claims:
        return []
    keyed = any(r.key != "original" for r in results.field_claims)
    return [
        Table(
            "field-readings",
            "The field's retrieval claims, reproduced under each reading of their definitions",
            "Each published figure's protocol run on this run's data (`harness.experiments.field_claims`): the memory "
            "built as the source's script builds it (one document per session, or per turn with sessions read off the "
            "top k turns), ranked by exact cosine on the claim's encoder, scored as the share of a question's evidence "
            "sessions found (`recall`), some (`recall_any`) or all (`recall_all`), with the unanswerable questions in "
            "or out. A claim is judged only against the reading under its own definition (the verdicts above); "
            "the other readings show which definition a published figure matches. 95% interval: bootstrap over "
            "questions."
            + (
                " `key`: each ranking scored on the file's own evidence (`original`) and on the evidence corrected by "
                "`--errata` (`corrected`); a claim is judged on the original key, on which its figure was published."
                if keyed
                else ""
            ),
            (
                column("protocol (documents)", "documents"),
                column("k", "k"),
                column("score", "score"),
                column("unanswerable", "unanswerable"),
                *([KEY] if keyed else []),
                column("questions", "questions"),
                column("figure", "value", format=share),
                column("95% interval", "low", "high", format=share),
                column("left out", "note"),
            ),
            [
                {
                    "dataset": r.dataset,
                    "documents": r.metric.documents,
                    "k": r.metric.k,
                    "score": r.metric.score,
                    "unanswerable": r.metric.unanswerable,
                    "questions": r.questions,
                    "value": r.value,
                    "low": r.low,
                    "high": r.high,
                    "note": r.note,
                    "key": r.key,
                    "encoder": r.metric.encoder,
                }
                for r in reading_rows(results.field_claims)
            ],
        )
    ]


FIELD_CLAIMS = Experiment("field-claims", section="field_claims", data=["dialogue"], run=run, tables=(table,))
