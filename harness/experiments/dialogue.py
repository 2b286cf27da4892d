"""The experiments of a run, registered with the data they run on (`experiment_registry`). Each returns typed
rows (`harness.output.results`) for claims, report and compare."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import asdict, replace
from functools import partial
from typing import Any, Literal, NamedTuple, cast

import numpy as np

from harness.data.beir import load_beir
from harness.data.corpus import Corpus
from harness.data.dialogue import load_dialogue, unanswerable
from harness.data.encoding import encode_corpus, encode_evalset
from harness.data.errata import CORRECTED, ORIGINAL, keyed_dialogue
from harness.data.evalset import EvalSet
from harness.data.generated import (
    corpus_evalset,
    needles_evalset,
    notes_evalset,
    stream_evalset,
    topics_evalset,
    updates_evalsets,
    vectors_evalset,
)
from harness.measure import work
from harness.measure.chance import Chance, chance_at_k, mean_chance
from harness.measure.experiment_registry import RunContext, experiment
from harness.measure.metrics import (
    agreement,
    check_cutoff,
    evidence_scores,
    group_stats,
    latency_stats,
    recall_at_k,
    update_scores,
)
from harness.measure.plan import DIALOGUE_SYSTEMS, NEEDLE_DOCS, NEEDLES, REGIMES, RunPlan
from harness.measure.runbooks import agent_loop as loop_runbook
from harness.measure.runbooks import agent_stream, dialogue_replay, expiring_stream
from harness.measure.timing import Job, K, built, group_labels, measure_together, query_encoding_ns, ranked_until
from harness.measure.streaming import replay, run_streams
from harness.measure.tenants import run_tenants, tenant_data, tenant_runbook
from harness.measure.tokens import BUDGETS, token_counter, within_budget
from harness.output.progress import Progress, Steps, silent
from harness.output.results import (
    ConcurrencyRow,
    DialogueRow,
    FilterRow,
    GroupingRow,
    JudgeRow,
    Measurement,
    ServingRow,
    StreamRow,
    TenantRow,
    UpdateRow,
)
from harness.protocol import ConsolidatingSystem, ScoringSystem
from harness.systems.registry import PEERS, installed
from harness.verdicts.claims import decides_a_verdict
from reference.encoders import MockEncoder

SECTION_OF_REGIME = {"fixed": "scaling", "growing": "growing"}
"""The results section a scaling regime fills."""
FILTER_PASSES = 3
"""Timing passes of the filtered searches: no verdict reads them, so fewer than the plan's."""


def _timed(plan: RunPlan, jobs: list[Job], progress: Progress = silent, label: str = "measure") -> list[Measurement]:
    """`jobs` timed together with the plan's passes (and its extra passes while the timing is unsettled)."""
    return measure_together(jobs, passes=plan.passes, max_passes=plan.max_passes, progress=progress, label=label)


def _job(plan: RunPlan, system: str, evalset: EvalSet, encoder: str, *, sweep: bool = False, section: str = "") -> Job:
    """A job of a section; it decides a verdict when the claims judge its system's latency there."""
    slow_down = plan.slow_down.get(system, 1.0)
    return Job(system, evalset, encoder, sweep=sweep, slow_down=slow_down, decides=decides_a_verdict(section, system))


@experiment("scaling", section="scaling", data=["default"], work=work.scaling)
def scaling(context: RunContext) -> list[Measurement]:
    """Latency and recall vs exact search as memory grows, over clustered vectors (as many topics at every size)."""
    return _scaling(context.plan, context.plan.systems, context.progress, regime="fixed")


@experiment("growing", section="growing", data=["default"], work=work.growing)
def growing(context: RunContext) -> list[Measurement]:
    """Latency and recall as memory grows with its topics (clusters of one size, more of them)."""
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


@experiment("needles", section="needles", data=["default"], work=work.needles)
def needles(context: RunContext) -> list[Measurement]:
    """The published case (a haystack with needles, top 3) over several seeds and encoders."""
    plan = context.plan
    results: list[Measurement] = []
    for encoder_name, encoder in context.encoders.items():
        for seed in context.progress(plan.needle_seeds, f"needles ({encoder_name})"):
            evalset = encode_evalset(needles_evalset(NEEDLE_DOCS, NEEDLES, seed=seed), encoder)
            jobs = [_job(plan, system, evalset, encoder_name) for system in plan.needle_systems]
            results += _timed(plan, jobs)
    return results


@experiment("grouping", section="grouping", data=["default"], work=work.grouping)
def grouping(context: RunContext) -> list[GroupingRow]:
    """ARI / NMI of each grouping system against the true topics of a topic haystack."""
    rows = []
    for encoder_name, encoder in context.encoders.items():
        evalset = encode_evalset(topics_evalset(context.plan.topic_docs, seed=11), encoder)
        for system in context.progress(context.plan.grouping_systems, f"grouping ({encoder_name})"):
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


@experiment("judges", section="judges", data=["default"], work=work.judges)
def judges(context: RunContext, *, per_kind: int = 30, seeds: tuple[int, ...] = (0, 1, 2)) -> list[JudgeRow]:
    """Each available conflict judge's precision and recall on the labelled contradiction pairs."""
    from harness.data.generators.contradictions import contradiction_pairs
    from harness.measure.judging import score_judge
    from reference.judges import OfflineJudge

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


@experiment("beir", section="beir", data=["beir"], work=work.dataset)
def beir(context: RunContext) -> list[Measurement]:
    """Any BEIR-format directory: recall@10, MRR and nDCG@10 from its qrels, with latency."""
    assert context.dataset is not None
    encoder_name, encoder = context.encoder
    evalset = encode_evalset(load_beir(context.dataset.location), encoder)
    jobs = [_job(context.plan, system, evalset, encoder_name) for system in context.plan.systems]
    return _timed(context.plan, jobs, context.progress, f"BEIR {evalset.name}")


@experiment("realtext", section="realtext", data=["default", "beam"], work=work.realtext)
def realtext(context: RunContext) -> list[Measurement]:
    """Recall against exact search and latency on real text (held-out passages as vector queries)."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder, progress=context.progress)
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


@experiment("streaming", section="streaming", data=["default", "beam"], work=work.streaming)
def streaming(context: RunContext) -> list[StreamRow]:
    """Writes, deletes and searches interleaved over real text in its written order (a streaming runbook)."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder, progress=context.progress)
    room = len(corpus.passages) - plan.stream_queries
    whole = len(corpus.passages) if context.data == "beam" else plan.stream_cells  # BEAM: every passage
    cells = min(room, context.stream_size or whole)
    data = stream_evalset(corpus, vectors, cells, queries=plan.stream_queries)
    options = {"faiss-ivf": {"train_after": max(1, cells // 10)}}  # trained on the first 10 % of the stream
    book = agent_stream(cells, plan.stream_queries)
    return run_streams(book, data, plan.stream_systems, encoder.name, context.progress, options)


@experiment("expiring-stream", section="streaming", data=["default", "beam"], work=work.expiring_stream)
def expiring(context: RunContext) -> list[StreamRow]:
    """Replaces and expiry over real text in its written order (big-ann-benchmarks' expiration-time runbooks)."""
    plan, corpus, encoder = context.plan, context.corpus, context.text_encoder
    vectors = encode_corpus(corpus, encoder)
    cells = min(len(corpus.passages) - plan.stream_queries, context.stream_size or plan.expiry_cells)
    data = stream_evalset(corpus, vectors, cells, queries=plan.stream_queries)
    options = {"faiss-ivf": {"train_after": max(1, cells // 10)}}  # trained on the first 10 % of the stream
    book = expiring_stream(cells, plan.stream_queries)
    return run_streams(book, data, plan.stream_systems, encoder.name, context.progress, options)


@experiment("agent-loop", section="streaming", data=["default"], work=work.agent_loop)
def agent_loop(context: RunContext) -> list[StreamRow]:
    """The agent's loop: write a turn, search for it, search again (synthetic notes, the mock encoder)."""
    plan = context.plan
    encoder = MockEncoder(384)
    notes = notes_evalset(plan.loop_cells + plan.loop_rounds, queries=max(2 * plan.loop_rounds, 100))
    data = encode_evalset(notes, encoder, cache=None)  # hashing is cheaper than the cache
    book = loop_runbook(plan.loop_cells, plan.loop_rounds, len(data.queries))
    return run_streams(book, data, plan.loop_systems, encoder.name, context.progress)


@experiment("multi-tenant", section="tenants", data=["default"], work=work.tenants)
def multi_tenant(context: RunContext) -> list[TenantRow]:
    """Many users in one memory: interleaved writes, then one scope's searches against its cells alone."""
    plan = context.plan
    book = tenant_runbook(plan.tenant_scopes, plan.tenant_cells)
    return run_tenants(book, tenant_data(book), plan.tenant_systems, "vectors", context.progress)


@experiment("serving", section="serving", data=["default"], work=work.serving)
def serving(context: RunContext) -> list[ServingRow]:
    """Many clients at once making agents' memory calls: the engine in process and through its MCP server."""
    from harness.measure.serving import serving_rows

    plan = context.plan
    return serving_rows(plan.serving_systems, plan.serving_clients, plan.serving_calls, context.progress)


@experiment("concurrency", section="concurrency", data=["default"], work=work.concurrency)
def concurrency(context: RunContext) -> list[ConcurrencyRow]:
    """QPS and p50 / p99 of 1–8 clients at once, searches alone and while writing, in process and through servers."""
    from harness.measure.concurrency import concurrency_rows

    plan = context.plan
    return concurrency_rows(
        plan.concurrency_systems,
        cells=plan.concurrency_cells,
        queries=plan.queries,
        levels=plan.concurrency_levels,
        seconds=plan.concurrency_seconds,
        rate=plan.concurrency_write_rate,
        windows=plan.concurrency_windows,
        progress=context.progress,
    )


@experiment("filtered", section="filtered", data=["default"], work=work.filtered)
def filtered(context: RunContext) -> list[FilterRow]:
    """Recall and latency of searches filtered to 1 % and 99 % of the documents, and in a scope of 1 %."""
    from harness.measure.filtered import filtered_rows

    plan = context.plan
    return filtered_rows(
        plan.filter_systems,
        cells=plan.filter_cells,
        queries=plan.queries,
        spread=plan.spread,
        passes=min(plan.passes, FILTER_PASSES),
        progress=context.progress,
    )


class Answer(NamedTuple):
    """One question answered by one system: what it retrieved against the question's evidence, the tokens of its
    top-k hits, and (bulk-loaded memories) the hits taken within each context budget (`tokens.BUDGETS`) and the
    first k sessions of a deeper ranking."""

    category: str
    found: list[str]
    wanted: list[str]
    session_of: Mapping[str, str]
    tokens: int
    within: Mapping[int, list[str]] = {}
    ranked_sessions: list[str] | None = None
    chance: Mapping[str, Chance] = {}
    """What a random ranking of the candidates scores at each level (`TURN`, `SESSION`, `RANKED`)."""
    candidates: Mapping[str, int] = {}
    """How many candidates each level ranks: the turns written when the question was asked, their sessions."""


SESSION_DEPTH = 100
"""Turns a deeper ranking reads at least, to rank sessions (a session ranks by its best turn; the first k sessions
are scored)."""


TURN, SESSION, RANKED = "turn", "session", "session (ranked)"
"""The levels of a dialogue table: turns; the sessions of the top-k turns; the first k sessions of a deeper ranking."""
BULK, WHEN_DUE, AT_THE_END = "bulk", "online: when due", "online: at the end"
"""How a dialogue memory was filled when a question was asked: every turn first (the published setup); turn
by turn, the question asked as soon as its last evidence turn is written; turn by turn, asked at the end."""


@experiment("dialogue", section="dialogue", data=["dialogue"], work=work.dialogue)
def dialogue(context: RunContext, *, k: int = K) -> list[DialogueRow]:
    """Evidence recall per question of a dialogue benchmark, loaded in bulk and replayed online.

    One memory per conversation; each question's retrieved turns scored against its evidence turns
    (and, through their sessions, at session level). Each conversation is measured loaded in bulk and
    replayed online (`runbooks.dialogue_replay`). Adversarial and abstention questions apart. The tokens of
    each question's top-k hits are counted (`tokens.token_counter`) and, loaded in bulk, its evidence recall
    within each context budget (`tokens.BUDGETS`) from a deeper ranking, untimed. With LoCoMo's corrections
    (`context.errata`) each ranking is scored on the original and on the corrected key; a question is asked when due
    on the original key's evidence, so `WHEN_DUE` is scored on the original key only."""
    assert context.dataset is not None
    encoder_name, encoder = context.encoder
    skipped: list[str] = []
    if context.systems:
        systems = context.systems
    else:
        peers, skipped = installed(PEERS)
        systems = (*DIALOGUE_SYSTEMS, *peers)
    keyed = keyed_dialogue(context.dataset, context.turn_format, context.errata)
    data = keyed.data
    counter = token_counter(encoder)
    context.dataset_info = (
        {
            "file": str(data.path),
            "sha256": data.sha256,
            "turn_format": asdict(context.turn_format),
            "tokens": counter.rule,
            "questions left out": data.unscored if len(keyed.unscored) == 1 else keyed.unscored,
        }
        | ({"corrections": keyed.corrections} if keyed.corrections else {})
        | ({"peers skipped": skipped} if skipped else {})
    )
    progress = context.progress
    answers: dict[tuple[str, str, str], list[Answer]] = defaultdict(list)
    latencies: dict[tuple[str, str], list[int]] = defaultdict(list)
    ingest_s: dict[tuple[str, str], float] = defaultdict(float)
    ingested: dict[tuple[str, str], int] = defaultdict(int)
    label: dict[str, str] = {}
    given: dict[str, str] = {}
    encoding: list[int] = []
    too_few_sessions = 0
    for conversation in progress(Steps(data.conversations), f"{data.name} conversations"):
        check_cutoff(k, len(conversation.docs), f"turns of {conversation.name}")
        evalset = encode_evalset(conversation, encoder)
        encoding += query_encoding_ns(encoder, evalset.queries)
        assert evalset.conversation is not None  # every dialogue set has one
        categories, session_of = evalset.conversation.category, evalset.conversation.session_of
        if len(set(session_of.values())) <= k:  # session level would rank every session: not scored
            too_few_sessions += 1
            session_of = {}
        wanted = {key: [turns.get(q.id, []) for q in evalset.queries] for key, turns in keyed.evidence.items()}
        tokens_of = dict(zip((d.id for d in evalset.docs), counter.count([d.text for d in evalset.docs])))
        enough = partial(_deep_enough, tokens_of, max(BUDGETS), min(SESSION_DEPTH, len(evalset.docs)))
        turn_ids = [d.id for d in evalset.docs]
        odds = {
            key: [_chances(turn_ids, evidence, session_of, k) for evidence in lists] for key, lists in wanted.items()
        }
        jobs = [Job(system, evalset, encoder_name) for system in systems]
        for system, measured in zip(systems, measure_together(jobs, k=k)):
            label[system], given[system] = measured.system, measured.given  # as its adapter names it
            latencies[system, BULK] += measured.latencies_ns
            ingest_s[system, BULK] += measured.build_s
            ingested[system, BULK] += len(evalset.docs)
            deep = ranked_until(system, evalset, encoder=encoder_name, enough=enough)
            for number, (query, found, ranked) in enumerate(zip(evalset.queries, measured.retrieved, deep)):
                costs = [tokens_of[turn] for turn in ranked]
                within = {budget: within_budget(ranked, costs, budget) for budget in BUDGETS}
                tokens = sum(tokens_of[turn] for turn in found)
                sessions = _sessions(ranked[:SESSION_DEPTH], session_of)[:k] if session_of else None
                for key, lists in wanted.items():  # one ranking, scored on each key that has the question
                    if lists[number]:
                        chance, candidates = odds[key][number]
                        answers[system, BULK, key].append(
                            Answer(
                                categories[query.id],
                                found,
                                lists[number],
                                session_of,
                                tokens,
                                within,
                                sessions,
                                chance,
                                candidates,
                            )
                        )
        position = {doc.id: i for i, doc in enumerate(evalset.docs)}
        asked_on = [ORIGINAL if wanted[ORIGINAL][q] else CORRECTED for q in range(len(evalset.queries))]
        due = [max(position[turn] for turn in wanted[key][q]) for q, key in enumerate(asked_on)]
        book = dialogue_replay(len(evalset.docs), due)
        for system in systems:
            row, asked = replay(book, evalset, system, encoder_name)
            latencies[system, WHEN_DUE] += [t for kind in ("search_after_write", "search") for t in _times(row, kind)]
            ingest_s[system, WHEN_DUE] += sum(_times(row, "write")) / 1e9
            ingested[system, WHEN_DUE] += len(evalset.docs)
            for number, (question, found) in enumerate(asked):
                query = evalset.queries[question]
                at_the_end = number >= len(asked) - len(due)
                if not at_the_end and due[question] < k:  # asked among at most k turns, any system finds it all
                    continue
                mode = AT_THE_END if at_the_end else WHEN_DUE
                tokens = sum(tokens_of[turn] for turn in found)
                written = turn_ids if at_the_end else turn_ids[: due[question] + 1]
                for key in wanted if at_the_end else [ORIGINAL]:  # asked when due on the original key's evidence
                    evidence = wanted[key][question]
                    if evidence:
                        chance, candidates = _chances(written, evidence, session_of, k)
                        answers[system, mode, key].append(
                            Answer(
                                categories[query.id],
                                found,
                                evidence,
                                session_of,
                                tokens,
                                chance=chance,
                                candidates=candidates,
                            )
                        )
    rows = []
    encoding_p50 = latency_stats(encoding).p50_ms
    for (system, mode, key), answered in answers.items():
        filled = BULK if mode == BULK else WHEN_DUE
        p50 = latency_stats(latencies[system, filled]).p50_ms
        flags = partial(_flags, k=k, ingest_ms=1000 * ingest_s[system, filled] / max(ingested[system, filled], 1))
        encoding_ms = encoding_p50 if given[system] == "vector" else np.nan
        timing: dict[str, Any] = {"given": given[system], "query_encoding_p50_ms": encoding_ms}
        subsets = {
            "all questions": answered,
            "answerable": [a for a in answered if not unanswerable(a.category)],
        }
        for category in sorted({a.category for a in answered}):
            subsets[("apart: " if unanswerable(category) else "") + category] = [
                a for a in answered if a.category == category
            ]
        for subset, chosen in subsets.items():
            turn = evidence_scores([a.found for a in chosen], [a.wanted for a in chosen], k)
            per_query = float(np.mean([a.tokens for a in chosen])) if chosen else float("nan")
            rows.append(
                DialogueRow(
                    label[system],
                    TURN,
                    subset,
                    turn,
                    p50,
                    mode,
                    per_query,
                    _budget_recall(chosen),
                    **flags(chosen, TURN),
                    **timing,
                    key=key,
                )
            )
            scored = [a for a in chosen if a.session_of]  # haystacks with more than k sessions
            left_out = f" ({too_few_sessions} haystacks of ≤ {k} sessions left out)" if too_few_sessions else ""
            levels = {SESSION: [(_sessions(a.found, a.session_of), a) for a in scored]}
            if mode == BULK:
                levels[RANKED] = [(a.ranked_sessions or [], a) for a in scored]
            for level, sessions_found in levels.items():
                wanted_sessions = [sorted({a.session_of[t] for t in a.wanted}) for _, a in sessions_found]
                session_scores = evidence_scores([f for f, _ in sessions_found], wanted_sessions, k)
                rows.append(
                    DialogueRow(
                        label[system],
                        level + left_out,
                        subset,
                        session_scores,
                        p50,
                        mode,
                        per_query,
                        **flags(scored, level),
                        **timing,
                        key=key,
                    )
                )
    return rows


def _chances(
    written: list[str], wanted: list[str], session_of: Mapping[str, str], k: int
) -> tuple[dict[str, Chance], dict[str, int]]:
    """A question's chance level at each level, over the turns written when it is asked (none without evidence;
    no session levels without sessions to score)."""
    if not wanted:
        return {}, {}
    chance, candidates = {TURN: chance_at_k(len(written), [1] * len(set(wanted)), k)}, {TURN: len(written)}
    if session_of:
        size = Counter(session_of[turn] for turn in written)
        evidence = sorted({session_of[turn] for turn in wanted})
        chance[SESSION] = chance_at_k(len(written), [size[s] for s in evidence], k)
        chance[RANKED] = chance_at_k(len(size), [1] * len(evidence), k)
        candidates[SESSION] = candidates[RANKED] = len(size)
    return chance, candidates


def _flags(answers: list[Answer], level: str, *, k: int, ingest_ms: float) -> dict[str, Any]:
    """What a reader needs beside a row's figures: the chance level, the candidates ranked (fewest, most: k at or
    past the fewest returns every candidate of some question), k, and the ingest cost per turn."""
    counted = [a for a in answers if level in a.chance]
    numbers = [a.candidates[level] for a in counted]
    return {
        "chance": mean_chance([a.chance[level] for a in counted]),
        "candidates": (min(numbers), max(numbers)) if numbers else None,
        "k": k,
        "ingest_ms_per_turn": ingest_ms,
    }


def _deep_enough(tokens_of: Mapping[str, int], budget: int, depth: int, found: list[str]) -> bool:
    """A deeper ranking is deep enough when it holds `depth` turns and more tokens than the largest budget."""
    return len(found) >= depth and sum(tokens_of[turn] for turn in found) > budget


def _budget_recall(answers: list[Answer]) -> dict[int, float]:
    """Evidence recall within each context budget, where the answers have their budgeted hits (bulk)."""
    if not answers or not all(a.within for a in answers):
        return {}
    recall = {}
    for budget in BUDGETS:
        taken = [a.within[budget] for a in answers]
        recall[budget] = recall_at_k(taken, [a.wanted for a in answers], max(map(len, taken)))
    return recall


def _times(row: StreamRow, kind: str) -> list[int]:
    try:
        return row.operation(kind).latencies_ns
    except LookupError:
        return []


def _sessions(turns: list[str], session_of: Mapping[str, str]) -> list[str]:
    """The sessions of retrieved turns in rank order, each once (a session ranks by its best turn)."""
    return list(dict.fromkeys(session_of[t] for t in turns))


@experiment("knowledge-update", section="updates", data=["default", "dialogue"], work=work.knowledge_update)
def knowledge_update(context: RunContext, *, k: int = K) -> list[UpdateRow]:
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
    systems = context.systems or context.plan.update_systems
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
