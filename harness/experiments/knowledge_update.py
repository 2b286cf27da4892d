"""Facts that change: whether a search ranks a fact's current version above its older ones."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import asdict, replace
from typing import Literal, cast

from harness.data.dialogue import load_dialogue
from harness.data.encoding import encode_evalset
from harness.data.evalset import EvalSet
from harness.data.generated import updates_evalsets
from harness.experiments.definition import DATASET_SECONDS, DEFAULT_PLAN, Experiment, RunContext
from harness.measure.metrics import update_scores
from harness.measure.timing import K, built
from harness.output.formats import share
from harness.output.results import RunResults, UpdateRow
from harness.output.sections.common import SYSTEM
from harness.output.tables import Table, column
from harness.protocol import ConsolidatingSystem, ScoringSystem

SYSTEMS = ("reference", "reference-dense", "flat-numpy", "bm25", "hybrid-rrf")
"""The engine in both scoring modes, before and after sleep, beside the systems that rank by similarity alone."""


def run(context: RunContext, *, k: int = K) -> list[UpdateRow]:
    """Facts that changed: the share whose current version a search ranks above its older ones (top 10).

    Generated dialogues (`generated.updates_evalsets`) in the default run, a LongMemEval file's knowledge-update
    questions with `--dataset longmemeval:FILE` (a file without them measures nothing). Each conversation is
    replayed as if its questions were asked now: its turns' times keep their distance from the questions' time,
    which is the memory's clock (memory-mode recency). Every system answers in similarity mode, a system with
    memory scoring in memory mode too; a system that sleeps answers again after one sleep pass."""
    if context.dataset is not None:
        loaded = load_dialogue(context.dataset, context.turn_format)
        encoder = context.encoder[1]
        families = {loaded.name: [s for s in loaded.conversations if s.conversation and s.conversation.versions]}
    else:
        encoder = context.text_encoder
        generated = updates_evalsets(context.plan.update_conversations, turn_format=context.turn_format)
        families = {f"generated {name}": sets for name, sets in generated.items()}
    systems = context.systems_of(KNOWLEDGE_UPDATE)
    rows = []
    for name, sets in families.items():
        found: dict[tuple[str, str, bool], list[list[str]]] = defaultdict(list)
        versions: list[tuple[tuple[str, ...], ...]] = []
        for evalset in context.progress(sets, f"knowledge updates ({name})"):
            evalset = _asked_now(encode_evalset(evalset, encoder))
            assert evalset.conversation is not None
            versions += [evalset.conversation.versions.get(q.id, ()) for q in evalset.queries]
            for system in systems:
                label, answered = _update_answers(system, evalset, encoder.name, k)
                for key, answers in answered.items():
                    found[(label, *key)] += answers
        rows += [
            UpdateRow(system, f"{name} ({encoder.name})", mode, slept, update_scores(answers, versions, k))
            for (system, mode, slept), answers in found.items()
        ]
    return rows


def _update_answers(
    spec: str, evalset: EvalSet, encoder: str, k: int
) -> tuple[str, dict[tuple[str, bool], list[list[str]]]]:
    """The system's name and each question's hits from it, by (mode, slept): similarity mode, memory mode where it
    scores memories, both again after a sleep pass where it sleeps."""
    answers: dict[tuple[str, bool], list[list[str]]] = {}
    with built(spec, evalset, encoder=encoder) as system:
        modes: tuple[Literal["similarity", "memory"], ...] = (
            ("similarity", "memory") if "memory_scoring" in system.capabilities else ("similarity",)
        )
        for slept in (False, True) if "consolidate" in system.capabilities else (False,):
            if slept:
                cast(ConsolidatingSystem, system).consolidate()
            for mode in modes:
                answers[mode, slept] = [
                    [h.doc_id for h in cast(ScoringSystem, system).search(q, k=k, mode=mode)]
                    if mode == "memory"
                    else [h.doc_id for h in system.search(q, k=k)]
                    for q in evalset.queries
                ]
        return system.name, answers


def _asked_now(evalset: EvalSet) -> EvalSet:
    """The set with its turns' times moved so that its questions are asked now (the systems' clock)."""
    assert evalset.conversation is not None
    asked = evalset.conversation.asked_at
    if asked is None:
        return evalset
    shift = time.time() - asked
    docs = [
        replace(d, metadata={**d.metadata, "timestamp": float(d.metadata["timestamp"]) + shift})
        if "timestamp" in d.metadata
        else d
        for d in evalset.docs
    ]
    return replace(evalset, docs=docs)


SECONDS = 100.0


def work(context: RunContext) -> float:
    if context.dataset is not None:
        return DATASET_SECONDS
    return context.scaled(
        SECONDS, KNOWLEDGE_UPDATE, context.plan.update_conversations, DEFAULT_PLAN.update_conversations
    )


def table(results: RunResults) -> list[Table]:
    if not results.updates:
        return []
    return [
        Table(
            "updates",
            f"Knowledge updates: facts that changed, the current version against the older ones (top {K})",
            "Each question asks for a fact stated again later with a new value (generated dialogues and fact streams, "
            "or a LongMemEval file's knowledge-update questions); its versions are the turns that stated it. "
            f"`current first`: the current version is in the top {K} above every older version (the headline); "
            "`current@1`: the first hit is the current version; `current found` / `stale found`: the current / "
            f"some older version in the top {K}. `memory` mode ranks by importance, recency and conflicts as well; "
            "`slept`: after one sleep pass (the conflict judge records contradictions; the older cell of one loses "
            "`superseded_penalty` in memory mode). The memory's clock reads the time of the questions.",
            (
                SYSTEM,
                column("data", "data"),
                column("mode", "mode"),
                column("slept", "slept"),
                column("facts", "facts"),
                column("current first", "current_first", format=share),
                column("current@1", "current_at_1", format=share),
                column("current found", "current_found", format=share),
                column("stale found", "stale_found", format=share),
            ),
            [
                {"system": r.system, "data": r.data, "mode": r.mode, "slept": r.slept, **asdict(r.scores)}
                for r in results.updates
            ],
        )
    ]


KNOWLEDGE_UPDATE = Experiment(
    "knowledge-update",
    section="updates",
    data=["default", "dialogue"],
    run=run,
    systems=SYSTEMS,
    work=work,
    tables=(table,),
)
