"""The experiments of a run, registered with the data they run on (`experiment_registry`). Each returns typed
rows (`harness.results`) for claims, report and compare."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, NamedTuple

from reference.encoders import MockEncoder

from .beir import load_beir
from .claims import decides_a_verdict
from .corpus import Corpus
from .datasets import (
    corpus_evalset,
    needles_evalset,
    notes_evalset,
    stream_evalset,
    topics_evalset,
    vectors_evalset,
)
from .dialogue import ADVERSARIAL, load_dialogue
from .encoding import encode_corpus, encode_evalset
from .evalset import EvalSet
from .experiment_registry import RunContext, experiment
from .metrics import agreement, check_cutoff, evidence_scores, group_stats, latency_stats
from .plan import DIALOGUE_SYSTEMS, GROUPING_SYSTEMS, REGIMES, RunPlan
from .progress import Progress, silent
from .results import DialogueRow, GroupingRow, JudgeRow, Measurement, ServingRow, StreamRow, TenantRow
from .runbooks import agent_loop as loop_runbook
from .runbooks import agent_stream, dialogue_replay
from .runner import Job, group_labels, measure_together
from .streaming import replay, run_streams
from .tenants import run_tenants, tenant_data, tenant_runbook

SECTION_OF_REGIME = {"fixed": "scaling", "growing": "growing"}
"""The results section a scaling regime fills."""


def _timed(plan: RunPlan, jobs: list[Job], progress: Progress = silent, label: str = "measure") -> list[Measurement]:
    """`jobs` timed together with the plan's passes (and its extra passes while the timing is unsettled)."""
    return measure_together(jobs, passes=plan.passes, max_passes=plan.max_passes, progress=progress, label=label)


def _job(plan: RunPlan, system: str, evalset: EvalSet, encoder: str, *, sweep: bool = False, section: str = "") -> Job:
    """A job of a section; it decides a verdict when the claims judge its system's latency there."""
    slow_down = plan.slow_down.get(system, 1.0)
    return Job(system, evalset, encoder, sweep=sweep, slow_down=slow_down, decides=decides_a_verdict(section, system))


@experiment("scaling", section="scaling", data=["default"])
def scaling(context: RunContext) -> list[Measurement]:
    """Latency and recall vs exact search as memory grows, over clustered vectors (100 topics at every size)."""
    return _scaling(context.plan, context.plan.systems, context.progress, regime="fixed")


@experiment("growing", section="growing", data=["default"])
def growing(context: RunContext) -> list[Measurement]:
    """Latency and recall as memory grows with its topics (one cluster per 1,000 vectors)."""
    plan = context.plan
    return _scaling(plan, tuple(s for s in plan.growing_systems if s in plan.systems), context.progress, "growing")


def _scaling(plan: RunPlan, systems: tuple[str, ...], progress: Progress, regime: str) -> list[Measurement]:
    """Latency and recall vs exact for every system at every size of a regime (`plan.REGIMES`), all
    timed together; in the fixed regime, a query-parameter sweep at the largest size."""
    jobs = []
    largest = max(plan.sizes)
    for size in plan.sizes:
        evalset = vectors_evalset(
            size, queries=plan.queries, clusters=REGIMES[regime](size), spread=plan.spread, seed=size
        )
        sweep = plan.sweep and size == largest and regime == "fixed"
        jobs += [
            _job(plan, system, evalset, "vectors", sweep=sweep, section=SECTION_OF_REGIME[regime])
            for system in plan.systems_at(size, systems)
        ]
    return _timed(plan, jobs, progress, f"scaling ({regime})")


@experiment("needles", section="needles", data=["default"])
def needles(context: RunContext) -> list[Measurement]:
    """The published case (200 documents, 5 needles, top 3) over several seeds and encoders."""
    plan = context.plan
    results: list[Measurement] = []
    for encoder_name, encoder in context.encoders.items():
        for seed in context.progress(plan.needle_seeds, f"needles ({encoder_name})"):
            evalset = encode_evalset(needles_evalset(200, 5, seed=seed), encoder)
            jobs = [_job(plan, system, evalset, encoder_name) for system in plan.needle_systems]
            results += _timed(plan, jobs)
    return results


@experiment("grouping", section="grouping", data=["default"])
def grouping(context: RunContext) -> list[GroupingRow]:
    """ARI / NMI of each grouping system against the true topics of a topic haystack."""
    rows = []
    for encoder_name, encoder in context.encoders.items():
        evalset = encode_evalset(topics_evalset(context.plan.topic_docs, seed=11), encoder)
        for system in context.progress(GROUPING_SYSTEMS, f"grouping ({encoder_name})"):
            options = {"n_clusters": len(evalset.topics)} if system == "kmeans" else {}
            labels = group_labels(system, evalset, encoder=encoder_name, options=options)
            if evalset.labels is None:
                raise ValueError(f"{evalset.name} has no true topics to compare groups with")
            rows.append(
                GroupingRow(
                    system + (f" (k={options['n_clusters']})" if options else ""),
                    encoder_name,
                    len(evalset.docs),
                    agreement(evalset.labels.tolist(), labels),
                    group_stats(labels),
                )
            )
    return rows


@experiment("judges", section="judges", data=["default"])
def judges(context: RunContext, *, per_kind: int = 30, seeds: tuple[int, ...] = (0, 1, 2)) -> list[JudgeRow]:
    """Each available conflict judge's precision and recall on the labelled contradiction pairs."""
    from reference.judges import OfflineJudge

    from .generators.contradictions import contradiction_pairs
    from .judging import score_judge

    rows = []
    for seed in context.progress(seeds, "conflict judges"):
        score = score_judge(OfflineJudge(), contradiction_pairs(per_kind, seed=seed))
        pairs = score.true_positives + score.false_positives + score.false_negatives + score.true_negatives
        rows.append(
            JudgeRow(
                score.judge,
                seed,
                pairs,
                score.precision,
                score.recall,
                score.missed_by_kind,
                score.false_alarms_by_kind,
            )
        )
    return rows


@experiment("beir", section="beir", data=["beir"])
def beir(context: RunContext) -> list[Measurement]:
    """Any BEIR-format directory: recall@10, MRR and nDCG@10 from its qrels, with latency."""
    assert context.dataset is not None
    encoder_name, encoder = context.encoder
    evalset = encode_evalset(load_beir(context.dataset.location), encoder)
    jobs = [_job(context.plan, system, evalset, encoder_name) for system in context.plan.systems]
    return _timed(context.plan, jobs, context.progress, f"BEIR {evalset.name}")


@experiment("realtext", section="realtext", data=["default", "beam"])
def realtext(context: RunContext) -> list[Measurement]:
    """Recall against exact search and latency on real text (held-out passages as vector queries)."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder)
    room = len(corpus.passages) - plan.realtext_queries
    sizes = sorted({*(n for n in plan.realtext_sizes if n < room), room})
    jobs = []
    for size in sizes:
        evalset = corpus_evalset(corpus, vectors, size, queries=plan.realtext_queries)
        sweep = plan.sweep and size == sizes[-1]
        jobs += [
            _job(plan, system, evalset, encoder.name, sweep=sweep, section="realtext")
            for system in plan.systems_at(size, plan.realtext_systems)
        ]
    measured = _timed(plan, jobs, context.progress, f"real text ({corpus.name})")
    context.dataset_info = _corpus_info(corpus, measured)
    return measured


def _corpus_info(corpus: Corpus, measured: list[Measurement]) -> dict[str, Any]:
    """What the header says of a real-text corpus: its source, its passages and how the run used them, the
    fingerprint of the passages themselves (`Corpus.fingerprint`: the standard library's documentation differs
    between Python builds), and the SHA-256 of its files (none for text generated from this interpreter)."""
    largest = max((m.n_docs for m in measured), default=0)
    held_out = max((m.queries for m in measured), default=0)
    used = f"{len(corpus.passages):,} ({largest:,} in the largest memory, {held_out} held out as queries)"
    facts = {"corpus": corpus.source, "passages": used, "fingerprint": corpus.fingerprint}
    return facts | ({"sha256": corpus.sha256} if corpus.sha256 else {})


@experiment("streaming", section="streaming", data=["default", "beam"])
def streaming(context: RunContext) -> list[StreamRow]:
    """Writes, deletes and searches interleaved over real text in its written order (a streaming runbook)."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder)
    room = len(corpus.passages) - plan.stream_queries
    whole = len(corpus.passages) if context.data == "beam" else plan.stream_cells  # BEAM: every passage
    cells = min(room, context.stream_size or whole)
    data = stream_evalset(corpus, vectors, cells, queries=plan.stream_queries)
    options = {"faiss-ivf": {"train_after": max(1, cells // 10)}}  # trained on the first 10 % of the stream
    book = agent_stream(cells, plan.stream_queries)
    return run_streams(book, data, plan.stream_systems, encoder.name, context.progress, options)


@experiment("agent-loop", section="streaming", data=["default"])
def agent_loop(context: RunContext) -> list[StreamRow]:
    """The agent's loop: write a turn, search for it, search again (synthetic notes, the mock encoder)."""
    plan = context.plan
    encoder = MockEncoder(384)
    notes = notes_evalset(plan.loop_cells + plan.loop_rounds, queries=max(2 * plan.loop_rounds, 100))
    data = encode_evalset(notes, encoder, cache=None)  # hashing is cheaper than the cache
    book = loop_runbook(plan.loop_cells, plan.loop_rounds, len(data.queries))
    return run_streams(book, data, plan.loop_systems, encoder.name, context.progress)


@experiment("multi-tenant", section="tenants", data=["default"])
def multi_tenant(context: RunContext) -> list[TenantRow]:
    """Many users in one memory: interleaved writes, then one scope's searches against its cells alone."""
    plan = context.plan
    book = tenant_runbook(plan.tenant_scopes, plan.tenant_cells)
    return run_tenants(book, tenant_data(book), plan.tenant_systems, "vectors", context.progress)


@experiment("serving", section="serving", data=["default"])
def serving(context: RunContext) -> list[ServingRow]:
    """Many clients at once making agents' memory calls: the engine in process and through its MCP server."""
    from .serving import serving_rows

    plan = context.plan
    return serving_rows(plan.serving_clients, plan.serving_calls, context.progress)


class Answer(NamedTuple):
    """One question answered by one system: what it retrieved against the question's evidence."""

    category: str
    found: list[str]
    wanted: list[str]
    session_of: Mapping[str, str]


BULK, WHEN_DUE, AT_THE_END = "bulk", "online: when due", "online: at the end"
"""How a dialogue memory was filled when a question was asked: every turn first (the published setup); turn
by turn, the question asked as soon as its last evidence turn is written; turn by turn, asked at the end."""


@experiment("dialogue", section="dialogue", data=["dialogue"])
def dialogue(context: RunContext, *, k: int = 10) -> list[DialogueRow]:
    """Evidence recall per question of a dialogue benchmark, loaded in bulk and replayed online.

    One memory per conversation; each question's retrieved turns scored against its evidence turns
    (and, through their sessions, at session level). Each conversation is measured loaded in bulk and
    replayed online (`runbooks.dialogue_replay`). Adversarial and abstention questions apart."""
    assert context.dataset is not None
    systems, (encoder_name, encoder) = context.systems or DIALOGUE_SYSTEMS, context.encoder
    data = load_dialogue(context.dataset, context.turn_format)
    context.dataset_info = {"file": str(data.path), "sha256": data.sha256, "turn_format": asdict(context.turn_format)}
    progress = context.progress
    answers: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    latencies: dict[tuple[str, str], list[int]] = defaultdict(list)
    too_few_sessions = 0
    for conversation in progress(data.conversations, f"{data.name} conversations"):
        check_cutoff(k, len(conversation.docs), f"turns of {conversation.name}")
        evalset = encode_evalset(conversation, encoder)
        assert evalset.conversation is not None  # every dialogue set has one
        categories, session_of = evalset.conversation.category, evalset.conversation.session_of
        if len(set(session_of.values())) <= k:  # session level would rank every session: not scored
            too_few_sessions += 1
            session_of = {}
        wanted = evalset.relevant()
        jobs = [Job(system, evalset, encoder_name) for system in systems]
        for system, measured in zip(systems, measure_together(jobs, k=k)):
            latencies[system, BULK] += measured.latencies_ns
            for query, found, evidence in zip(evalset.queries, measured.retrieved, wanted):
                answers[system, BULK].append(Answer(categories[query.id], found, evidence, session_of))
        position = {doc.id: i for i, doc in enumerate(evalset.docs)}
        due = [max(position[turn] for turn in evidence) for evidence in wanted]
        book = dialogue_replay(len(evalset.docs), due)
        for system in systems:
            row, asked = replay(book, evalset, system, encoder_name)
            latencies[system, WHEN_DUE] += [t for kind in ("search_after_write", "search") for t in _times(row, kind)]
            for number, (question, found) in enumerate(asked):
                query = evalset.queries[question]
                at_the_end = number >= len(asked) - len(due)
                if at_the_end or due[question] >= k:  # asked among at most k turns, any system finds it all
                    mode = AT_THE_END if at_the_end else WHEN_DUE
                    answers[system, mode].append(Answer(categories[query.id], found, wanted[question], session_of))
    rows = []
    for (system, mode), answered in answers.items():
        p50 = latency_stats(latencies[system, BULK if mode == BULK else WHEN_DUE]).p50_ms
        subsets = {
            "all questions": answered,
            "answerable": [a for a in answered if not _set_apart(a.category)],
        }
        for category in sorted({a.category for a in answered}):
            subsets[("apart: " if _set_apart(category) else "") + category] = [
                a for a in answered if a.category == category
            ]
        for subset, chosen in subsets.items():
            turn = evidence_scores([a.found for a in chosen], [a.wanted for a in chosen], k)
            rows.append(DialogueRow(system, "turn", subset, turn, p50, mode))
            scored = [a for a in chosen if a.session_of]  # haystacks with more than k sessions
            sessions = [(_sessions(a.found, a.session_of), sorted({a.session_of[t] for t in a.wanted})) for a in scored]
            level = "session" + (
                f" ({too_few_sessions} haystacks of ≤ {k} sessions left out)" if too_few_sessions else ""
            )
            session_scores = evidence_scores([f for f, _ in sessions], [w for _, w in sessions], k)
            rows.append(DialogueRow(system, level, subset, session_scores, p50, mode))
    return rows


def _times(row: StreamRow, kind: str) -> list[int]:
    try:
        return row.operation(kind).latencies_ns
    except LookupError:
        return []


def _set_apart(category: str) -> bool:
    """Questions with no answer in the memory (LoCoMo's adversarial, LongMemEval's abstention)."""
    return category == ADVERSARIAL or category.endswith("-abstention")


def _sessions(turns: list[str], session_of: Mapping[str, str]) -> list[str]:
    """The sessions of retrieved turns in rank order, each once (a session ranks by its best turn)."""
    return list(dict.fromkeys(session_of[t] for t in turns))
