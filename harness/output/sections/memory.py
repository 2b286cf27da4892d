"""What a memory finds: needles, grouping against true topics, conflict judges, dialogue evidence, BEIR."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from harness.measure.experiments import RANKED, SESSION, SESSION_DEPTH, TURN
from harness.measure.plan import NEEDLE_DOCS, NEEDLE_TOP, NEEDLES
from harness.measure.timing import FOUND_KS, K
from harness.measure.tokens import BUDGETS
from harness.output.formats import share
from harness.output.results import DialogueRow, Measurement, RunResults
from harness.output.sections.common import P50, SIZE, SYSTEM
from harness.output.tables import Table, column
from harness.verdicts.field import reading_rows


def needles_headline(results: RunResults) -> list[Table]:
    rows = needle_rows(results.needles)
    if not rows:
        return []
    return [
        Table(
            "needles-headline",
            f"Needles: {NEEDLES} in a haystack of {NEEDLE_DOCS} documents",
            f"How many needles each system put in its top {NEEDLE_TOP}, over every haystack (seed) of each encoder.",
            (
                SYSTEM,
                column("encoder", "encoder"),
                column(f"in the top {NEEDLE_TOP}", f"found_at_{NEEDLE_TOP}", "needles"),
            ),
            rows,
            csv=False,
        )
    ]


def needles(results: RunResults) -> list[Table]:
    rows = needle_rows(results.needles)
    if not rows:
        return []
    return [
        Table(
            "needles",
            f"Needles: {NEEDLE_DOCS} documents, {NEEDLES} needles each, per encoder",
            "A needle is a fact carrying an entity (e-mail, URL, file, code, place) asked about by a question; it is "
            "found at k when its document is among the first k hits. MRR: the mean of 1 / the needle's rank.",
            (
                SYSTEM,
                column("encoder", "encoder"),
                column("haystacks", "haystacks"),
                column("needles", "needles"),
                *(column(f"found at {k}", f"found_at_{k}") for k in FOUND_KS),
                column("MRR", "mrr", format=share),
            ),
            rows,
        )
    ]


def needle_rows(needles: Sequence[Measurement]) -> list[dict[str, Any]]:
    rows = []
    for system, encoder in sorted({(m.system, m.encoder) for m in needles}):
        mine = [m for m in needles if (m.system, m.encoder) == (system, encoder)]
        rows.append(
            {
                "system": system,
                "encoder": encoder,
                "haystacks": len(mine),
                "needles": sum(m.queries for m in mine),
                **{f"found_at_{k}": sum(m.found_at[k] for m in mine) for k in FOUND_KS},
                "mrr": sum(m.mrr * m.queries for m in mine) / sum(m.queries for m in mine),
            }
        )
    return rows


def grouping(results: RunResults) -> list[Table]:
    if not results.grouping:
        return []
    return [
        Table(
            "grouping",
            "Grouping against true topics (topic haystack)",
            "ARI and NMI: agreement of each system's groups with the true topics (1: the same partition). k-means is "
            "given the true number of topics; the reference engine finds its groups online with no k "
            "(`reference-slept`: after one sleep pass). Its groups are sized for search (a multiple of √N cells, "
            "`group_size_per_sqrt_n`), so a "
            "topic spans several groups: homogeneity near 1 with low completeness means pure but fragmented "
            "groups, which ARI penalises. `reference-concepts` scores the layer above the groups after the same "
            "sleep: groups gathered by Ward linkage of their centroids, cut at the largest gap (no k given).",
            (
                SYSTEM,
                column("encoder", "encoder"),
                column("documents", "docs"),
                column("ARI", "ari", format=share),
                column("NMI", "nmi", format=share),
                column("homogeneity", "homogeneity", format=share),
                column("completeness", "completeness", format=share),
                column("groups", "groups"),
                column("size (min / median / max)", "size_min", "size_median", "size_max"),
                column("singletons", "singletons"),
            ),
            [g.row() for g in results.grouping],
        )
    ]


def judges(results: RunResults) -> list[Table]:
    if not results.judges:
        return []
    rows = [asdict(j) | {"missed": _counts(j.missed), "false_alarms": _counts(j.false_alarms)} for j in results.judges]
    return [
        Table(
            "judges",
            "Conflict judges on labelled faker pairs",
            "Each seed's pairs are contradicting, consistent or unrelated; a pair is flagged when the judge names it "
            "a conflict. Precision and recall of the flags against the contradicting pairs; `missed` and `false "
            "alarms` count pairs by kind.",
            (
                column("judge", "judge"),
                column("seed", "seed"),
                column("pairs", "pairs"),
                column("precision", "precision", format=share),
                column("recall", "recall", format=share),
                column("missed", "missed"),
                column("false alarms", "false_alarms"),
            ),
            rows,
        )
    ]


def _counts(by_kind: dict[str, int]) -> str:
    return ", ".join(f"{kind} {count}" for kind, count in by_kind.items() if count) or "none"


def beir(results: RunResults) -> list[Table]:
    """The whole table: a BEIR run measures nothing else."""
    if not results.beir:
        return []
    return [
        Table(
            "beir",
            f"BEIR-format dataset `{results.beir[0].dataset}`",
            f"Recall@10 divides by the number of relevant documents (BEIR, MTEB); capped recall by min({K}, "
            "relevant). MRR and nDCG@10 from the qrels' grades; p50 and p95 of one query on one core.",
            (
                SYSTEM,
                column("encoder", "encoder"),
                SIZE,
                column("recall@10", "recall_at_10", format=share),
                column("capped recall@10", "capped_recall_at_10", format=share),
                column("MRR", "mrr", format=share),
                column("nDCG@10", "ndcg_at_10", format=share),
                P50,
                column("p95 (ms)", "latency_p95_ms"),
            ),
            [m.row() for m in results.beir],
        )
    ]


def dialogue_headline(results: RunResults) -> list[Table]:
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


KEY = column("key", "key")
KEYS = (
    "`key`: the evidence the figures are scored on, the file's own (`original`) or with the corrections of "
    "`--errata` (`corrected`); each ranking is scored on both. `online: when due` is scored on the original key only: "
    "its questions are asked as soon as their original evidence is written. "
)


def _keyed(rows: Sequence[DialogueRow]) -> bool:
    """Whether the rows are scored on more than the original key (a run with `--errata`)."""
    return any(r.key != "original" for r in rows)


def dialogue(results: RunResults) -> list[Table]:
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
        "unanswerable": unanswerable(row.subset),
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


def field_readings(results: RunResults) -> list[Table]:
    if not results.field_claims:
        return []
    keyed = any(r.key != "original" for r in results.field_claims)
    return [
        Table(
            "field-readings",
            "The field's retrieval claims, reproduced under each reading of their definitions",
            "Each published figure's protocol run on this run's data (`harness.measure.reproduce`): the memory built "
            "as the source's script builds it (one document per session, or per turn with sessions read off the top "
            "k turns), ranked by exact cosine on the claim's encoder, scored as the share of a question's evidence "
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


def level_of(row: DialogueRow) -> str:
    """A row's level without what its label adds (the haystacks left out)."""
    return RANKED if row.granularity.startswith(RANKED) else SESSION if row.granularity.startswith(SESSION) else TURN


def unanswerable(subset: str) -> str:
    """Whether a subset counts the questions with no answer in the memory (`experiments` names the subsets)."""
    return "in" if subset == "all questions" else "only" if subset.startswith("apart: ") else "out"


def candidates(row: DialogueRow) -> str:
    """The fewest–most candidates of a row's questions, marked where k reaches the fewest."""
    if row.candidates is None:
        return ""
    fewest, most = row.candidates
    span = f"{fewest:,}" if fewest == most else f"{fewest:,}–{most:,}"
    return f"{span} {COVERED}" if row.k_covers_candidates else span


def updates(results: RunResults) -> list[Table]:
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
