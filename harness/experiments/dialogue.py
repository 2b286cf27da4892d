"""Dialogue memory: evidence recall per question of a dialogue benchmark (`--dataset locomo:FILE`,
`longmemeval:FILE`), loaded in bulk and replayed online."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from harness.data.dialogue import unanswerable
from harness.data.encoding import encode_evalset
from harness.data.errata import CORRECTED, ORIGINAL, keyed_dialogue
from harness.experiments.definition import Experiment, RunContext
from harness.measure.chance import Chance, chance_at_k, mean_chance
from harness.measure.metrics import check_cutoff, evidence_scores, latency_stats, recall_at_k
from harness.measure.replay import replay
from harness.measure.runbooks import dialogue_replay
from harness.measure.timing import Job, K, measure_together, query_encoding_ns, ranked_until
from harness.measure.tokens import BUDGETS, token_counter, within_budget
from harness.output.formats import share
from harness.output.progress import Steps
from harness.output.results import DialogueRow, RunResults, StreamRow
from harness.output.sections.common import KEY, SYSTEM
from harness.output.tables import Table, column
from harness.systems.registry import PEERS, installed

SYSTEMS = (
    "reference",
    "reference-fusion",
    "reference-episodes",
    "reference-neighbours",
    "reference-turns",
    "reference-undated",
    "reference-dense",
    "flat-numpy",
    "bm25",
    "hybrid-rrf",
)
"""Dialogue memory, with the engine's ablations: fusion alone, + episodes, + neighbours, + turn form (questions
and speakers), all of them (the engine, each session's date as context), and the engine without the date."""


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


def run(context: RunContext, *, k: int = K) -> list[DialogueRow]:
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
        systems = (*SYSTEMS, *peers)
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


SECONDS_PER_MB = 40.0
"""A dialogue file's evidence retrieval, per megabyte of the file and per system (a file's turns and questions grow
with its size); a system from outside the registry is planned as a registered one until its first conversation
is timed (`progress.Steps`)."""


def work(context: RunContext) -> float:
    assert context.dataset is not None
    megabytes = context.dataset.location.stat().st_size / 1e6
    return SECONDS_PER_MB * megabytes * len(context.systems or SYSTEMS)


def headline(results: RunResults) -> list[Table]:
    chosen = [r for r in results.dialogue if r.mode == "bulk" and r.subset == "answerable"]
    rows = [r for level in (TURN, SESSION) for r in chosen if level_of(r) == level]
    if not rows:
        return []
    keyed = _keyed(rows)
    return [
        Table(
            "dialogue-headline",
            "Dialogue memory: answerable questions, every turn loaded first",
            f"Evidence retrieval at k = {K}: recall = the share of a question's evidence turns (at session level: "
            "sessions, those of the top-k turns) found. "
            + FLAGS
            + (KEYS if keyed else "")
            + "Every mode, level and category is under Dialogue memory below.",
            (SYSTEM, column("level", "level"), *([KEY] if keyed else []), *DIALOGUE[1:]),
            [dialogue_fields(r) for r in rows],
            csv=False,
        )
    ]


DIALOGUE = (
    SYSTEM,
    column("questions", "questions"),
    column("unanswerable", "unanswerable"),
    column("candidates", "candidates"),
    column("recall@10 / chance", "recall", "chance_recall", format=share),
    column("recall_any@10 (hit) / chance", "recall_any", "chance_any", format=share),
    column("recall_all@10 / chance", "recall_all", "chance_all", format=share),
    column("MRR", "mrr", format=share),
    column("nDCG@10", "ndcg", format=share),
    column("search p50 (ms)", "p50_ms"),
    column("query given", "given"),
    column("query encoding p50 (ms)", "query_encoding_p50_ms"),
    column("ingest (ms/turn)", "ingest_ms_per_turn"),
    column(f"tokens (top {K})", "tokens_at_10"),
    *(column(f"recall@10 within {budget:,} tokens", f"budget_{budget}", format=share) for budget in BUDGETS),
)


COVERED = "⚠ k ≥ n"
"""The mark of a row where k reaches the candidates of some question it counts: each of those is found whole."""


FLAGS = (
    f"`/ chance`: what a random ranking of the same candidates scores (exact, `harness.measure.chance`); "
    f"`candidates`: the fewest–most turns (sessions, at session level) a question was ranked among, marked "
    f"`{COVERED}` where k = {K} reaches the fewest. `unanswerable`: whether the questions with no answer in the "
    "memory (LoCoMo's adversarial category, LongMemEval's abstentions) are counted: `in` (every question, as "
    "published figures count them), `out`, or `only`. "
)


KEYS = (
    "`key`: the evidence the figures are scored on, the file's own (`original`) or with the corrections of "
    "`--errata` (`corrected`); each ranking is scored on both. `online: when due` is scored on the original key only: "
    "its questions are asked as soon as their original evidence is written. "
)


def _keyed(rows: Sequence[DialogueRow]) -> bool:
    """Whether the rows are scored on more than the original key (a run with `--errata`)."""
    return any(r.key != "original" for r in rows)


def table(results: RunResults) -> list[Table]:
    if not results.dialogue:
        return []
    keyed = _keyed(results.dialogue)
    return [
        Table(
            "dialogue",
            f"Dialogue memory: one memory per conversation, evidence retrieval at k = {K}",
            f"recall = share of a question's evidence found; recall_any = hit@{K} (some evidence found); recall_all "
            "= all of it. "
            + FLAGS
            + (KEYS if keyed else "")
            + "Session level: the sessions of the top-k turns. Questions with no answer in the memory "
            "(adversarial, abstention) are reported apart; `all questions` includes them as published figures do. "
            "`memory`: `bulk` loads every turn before the questions (the published setup); `online: when due` "
            "writes the conversation turn by turn and asks each question as soon as its last evidence turn is "
            "written (questions due while at most k turns are written are left out: any system finds them all); "
            "`online: at the end` asks every question of that memory after its last turn. `questions`: how many "
            "questions the row scores. `search p50`: one search call on one core (an online row's: the searches taken "
            "between writes), given what `query given` says: `vector`, the question's vector, which the harness "
            "encoded before the clock started (`query encoding p50`: the run's encoder on one question alone, which "
            "such a system pays on top), or `text`, which the system turns into what it searches with inside the "
            "timed search (a system that embeds with its own model pays that there). "
            f"`session (ranked)`: the first {K} "
            f"sessions of a deeper ranking (its first {SESSION_DEPTH} turns at least), a session ranked by its best "
            f"turn. `tokens (top {K})`: the tokens of a question's top {K} hits, counted as the run's header says; "
            "`within N tokens`: evidence recall when hits are taken in rank order until a context of N tokens is "
            "spent (memories loaded in bulk, from a deeper ranking). `ingest`: the time to write the memories per "
            "turn (bulk: each conversation's build; online: its turn-by-turn writes).",
            (
                SYSTEM,
                column("memory", "memory"),
                column("level", "level"),
                column("subset", "subset"),
                *([KEY] if keyed else []),
                *DIALOGUE[1:],
            ),
            [dialogue_fields(r) for r in results.dialogue],
        )
    ]


def dialogue_fields(row: DialogueRow) -> dict[str, Any]:
    scores = row.scores
    return {
        "system": row.system,
        "memory": row.mode,
        "level": row.granularity,
        "subset": row.subset,
        "key": row.key,
        "questions": scores.queries,
        "recall": scores.recall,
        "recall_any": scores.recall_any,
        "recall_all": scores.recall_all,
        "mrr": scores.mrr,
        "ndcg": scores.ndcg,
        "p50_ms": row.latency_p50_ms,
        "ingest_ms_per_turn": row.ingest_ms_per_turn,
        "given": row.given,
        "query_encoding_p50_ms": row.query_encoding_p50_ms,
        "tokens_at_10": row.tokens_at_10,
        "unanswerable": unanswerable_counted(row.subset),
        "candidates": candidates(row),
        **(
            {
                "chance_recall": row.chance.recall,
                "chance_any": row.chance.recall_any,
                "chance_all": row.chance.recall_all,
            }
            if row.chance
            else {}
        ),
        **{f"budget_{budget}": recall for budget, recall in row.budget_recall.items()},
    }


def level_of(row: DialogueRow) -> str:
    """A row's level without what its label adds (the haystacks left out)."""
    return RANKED if row.granularity.startswith(RANKED) else SESSION if row.granularity.startswith(SESSION) else TURN


def unanswerable_counted(subset: str) -> str:
    """Whether a subset counts the questions with no answer in the memory (`run` names the subsets)."""
    return "in" if subset == "all questions" else "only" if subset.startswith("apart: ") else "out"


def candidates(row: DialogueRow) -> str:
    """The fewest–most candidates of a row's questions, marked where k reaches the fewest."""
    if row.candidates is None:
        return ""
    fewest, most = row.candidates
    span = f"{fewest:,}" if fewest == most else f"{fewest:,}–{most:,}"
    return f"{span} {COVERED}" if row.k_covers_candidates else span


DIALOGUE_EXPERIMENT = Experiment(
    "dialogue",
    section="dialogue",
    data=["dialogue"],
    run=run,
    systems=SYSTEMS,
    work=work,
    headlines=(headline,),
    tables=(table,),
)
