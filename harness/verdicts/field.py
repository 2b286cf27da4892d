"""The field's published claims as data, beside the seed's (`claims.py`), with verdicts from the readings a run
reproduced (`harness.experiments.field_claims`).

Each claim is one published figure: the system, the dataset and split, the metric's whole definition
(`readings.Metric`: what the memory stores, what counts as found, the score, k, which questions count, the encoder),
the models, the source. A claim is compared only with a reading under the very same metric (`readings.comparable`);
readings of the same data under the definition's other readings are listed beside it, so that a reader sees which
one the published figure matches. Verdicts:

- REPRODUCED: the claimed figure lies within the 95% interval of the reading under its own metric;
- REFUTED: it lies outside (a result, not a failure);
- NOT RUNNABLE HERE: the claim cannot be run offline here, and the reason (a reader and a judge, a file the user
  did not supply, a system or model that is not packaged);
- NOT MEASURED: runnable, but this run did not measure it (another dataset or encoder).

To add a claim: append a `FieldClaim` to `FIELD_CLAIMS` with its figure, metric and source; if no protocol of
`reproduce.py` builds its memory and scores it under that metric, give the reason in `not_runnable`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from harness.data.errata import CORRECTED, ORIGINAL
from harness.measure.readings import Metric, Reading, Score, comparable
from harness.output.results import RunResults, Verdict

REPRODUCED = "REPRODUCED"
REFUTED = "REFUTED"
NOT_RUNNABLE = "NOT RUNNABLE HERE"
NOT_MEASURED = "NOT MEASURED"
MEANING = {
    REPRODUCED: "a field claim's figure lies within the 95% interval (bootstrap over questions) of the figure this run "
    "measured under the claim's own metric definition",
    REFUTED: "a field claim's figure lies outside that interval: it does not reproduce here (a result)",
    NOT_RUNNABLE: "a field claim that cannot run offline here; the row says why",
}
MINILM = "all-MiniLM-L6-v2"
LOCOMO_10 = "LoCoMo-10, all 10 conversations (1,986 questions)"
LONGMEMEVAL_S = "LongMemEval_S (500 questions)"
MEMPALACE = "MemPalace/mempalace benchmarks/BENCHMARKS.md and benchmarks/locomo_bench.py, longmemeval_bench.py"


@dataclass(frozen=True)
class FieldClaim:
    id: str
    system: str
    text: str
    figure: float | None
    """The published figure (a share); None where the source gives none this registry could check."""
    dataset: str
    """The dataset kind a run reproduces it on (`locomo`, `longmemeval`)."""
    split: str
    metric: Metric | None
    """None for an answer-accuracy figure (a reader and a judge): no retrieval metric reproduces it."""
    models: str
    source: str
    not_runnable: str = ""
    """Why it cannot run offline here (empty: a protocol reproduces it)."""
    measure: str = "answer accuracy, judged by an LLM"
    """What the figure measures when no retrieval `metric` defines it."""

    def evaluate(self, results: RunResults) -> Verdict:
        figure = "no figure" if self.figure is None else f"{self.figure:.4g}"
        condition = f"{self.split}; {self.metric or self.measure}; {self.models}"

        def verdict(word: str, measured: str) -> Verdict:
            return Verdict(self.id, self.system, word, measured, f"claimed {figure}", condition, self.text, self.source)

        on_data = [r for r in results.field_claims if r.dataset.startswith(f"{self.dataset}-")]
        same_data = [r for r in on_data if r.key == ORIGINAL]  # published figures were measured on the original key
        own = [r for r in same_data if self.metric is not None and comparable(self.metric, r.metric)]
        if self.not_runnable:
            beside = self._beside(own, same_data) + (_corrected(own[0], on_data) if own else "")
            return verdict(NOT_RUNNABLE, self.not_runnable + beside)
        assert self.metric is not None and self.figure is not None
        if not own:
            needs = f"--dataset {self.dataset}:FILE --encoder minilm"
            read = results.run.dataset or ""
            if read.startswith(f"{self.dataset}:"):
                return verdict(NOT_MEASURED, f"needs {needs}")
            return verdict(
                NOT_RUNNABLE, f"needs {self.split}, a file the user supplies ({needs}); this run read {read}"
            )
        [reading] = own
        word = REPRODUCED if reading.holds(self.figure) else REFUTED
        measured = f"{reading.text()} on {reading.dataset}" + (f"; {reading.note}" if reading.note else "")
        return verdict(word, measured + self._matches(reading, same_data) + _corrected(reading, on_data))

    def _matches(self, reading: Reading | None, same_data: list[Reading]) -> str:
        """The other readings of the same figure (same k and encoder) whose interval holds the claimed figure."""
        if self.metric is None or self.figure is None:
            return ""
        others = [r for r in same_data if r is not reading and _readings_of(self.metric, r.metric)]
        matching = [f"{r.metric} {r.value:.3f}" for r in others if r.holds(self.figure)]
        return "; the figure matches " + ("; ".join(matching) if matching else "no other reading")

    def _beside(self, own: list[Reading], same_data: list[Reading]) -> str:
        """For a claim this project cannot run: the plain protocol under the claim's metric, named as such (it is
        not the claimed system), and the readings its figure matches."""
        if not own:
            return ""
        [reading] = own
        return (
            f" (beside it, not the claimed system: this run's {reading.protocol}-document protocol on plain "
            f"{reading.metric.encoder} under the same metric reads {reading.text()}{self._matches(reading, same_data)})"
        )


def _corrected(reading: Reading, on_data: list[Reading]) -> str:
    """The same reading on the corrected key, shown beside a verdict that is judged on the original key only."""
    corrected = [
        r for r in on_data if r.key == CORRECTED and (r.protocol, r.metric) == (reading.protocol, reading.metric)
    ]
    if not corrected:
        return ""
    return (
        f"; on the corrected key: {corrected[0].text()} (the verdict reads the original key, on which the figure was "
        "published)"
    )


def _readings_of(claimed: Metric, measured: Metric) -> bool:
    """Another reading of the same figure: same k and encoder, the definition read otherwise."""
    return (claimed.k, claimed.encoder) == (measured.k, measured.encoder)


def _session_recall(score: str, k: int, documents: str = "sessions") -> Metric:
    return Metric(documents, "session", score, k, "in", MINILM)  # type: ignore[arg-type]


FIELD_CLAIMS: tuple[FieldClaim, ...] = (
    FieldClaim(
        "mempalace-locomo-raw",
        "mempalace",
        "MemPalace, raw (no rerank), one document per session: LoCoMo session R@10 60.3%",
        0.603,
        "locomo",
        LOCOMO_10,
        _session_recall("recall", 10),
        f"{MINILM} (ChromaDB's default embedding), no LLM",
        MEMPALACE + " (the script averages the share of a question's evidence sessions in the top 10)",
    ),
    FieldClaim(
        "mempalace-locomo-hybrid",
        "mempalace",
        "MemPalace, hybrid v5 (no LLM), one document per session: LoCoMo session R@10 88.9%",
        0.889,
        "locomo",
        LOCOMO_10,
        _session_recall("recall", 10),
        f"{MINILM}, keyword, quoted-phrase and name boosts over the top 30",
        MEMPALACE,
        "its hybrid v5 re-ranking lives in MemPalace's benchmark script, not in the mempalace package, and this "
        "project does not copy it; the raw mode under the same metric is mempalace-locomo-raw",
    ),
    FieldClaim(
        "mempalace-longmemeval-any",
        "mempalace",
        "MemPalace, raw: LongMemEval_S R@5 96.6% (some evidence session in the top 5)",
        0.966,
        "longmemeval",
        LONGMEMEVAL_S,
        _session_recall("recall_any", 5),
        f"{MINILM}, the user turns of each session as one document, no LLM",
        MEMPALACE,
    ),
    FieldClaim(
        "mempalace-longmemeval-all",
        "mempalace",
        "MemPalace, raw: LongMemEval_S recall_all@5 87.0% (every evidence session in the top 5)",
        0.870,
        "longmemeval",
        LONGMEMEVAL_S,
        _session_recall("recall_all", 5),
        f"{MINILM}, the user turns of each session as one document, no LLM",
        MEMPALACE,
    ),
    FieldClaim(
        "hebb-mind-locomo",
        "hebb-mind",
        "Hebb Mind: LoCoMo session R@10 91.41% with MiniLM (a question counts when any evidence session is found)",
        0.9141,
        "locomo",
        "LoCoMo-10, 1,978 questions",
        Metric("turns", "session", "recall_any", 10, "in", MINILM),
        f"{MINILM}, no rerank",
        "afx-team.github.io/hebb-mind/benchmarks/locomo/ (afx-team/hebb-mind)",
        "its memory is Hebb Mind's own pipeline (Claude Code hooks that write utterances and turn summaries, FTS with "
        "synonyms, context-window expansion, a date boost), which is not a package here",
    ),
    FieldClaim(
        "longmemeval-paper-retrievers",
        "bm25, contriever, stella",
        "The LongMemEval paper's retrieval baselines on LongMemEval_S: BM25 ~70%, Contriever ~78%, Stella ~85% R@5",
        None,
        "longmemeval",
        LONGMEMEVAL_S,
        None,
        "BM25; Contriever; Stella V5 1.5B",
        "Wu et al., LongMemEval (ICLR 2025), as MemPalace's BENCHMARKS.md quotes them (approximate)",
        "Contriever and Stella are not packaged here (offline, the packaged MiniLM only); BM25 needs LongMemEval_S, "
        "a file the user supplies; the figures are quoted as approximate and the paper's metric reading (recall_any "
        "or recall_all, session or turn) is not stated beside them",
        "R@5, its reading not stated beside the quoted figures",
    ),
    FieldClaim(
        "mem0-locomo-paper",
        "mem0",
        "mem0: LoCoMo LLM-judged accuracy (J) 66.88%",
        0.6688,
        "locomo",
        "LoCoMo-10, categories 1-4",
        None,
        "gpt-4o-mini extracts, answers and judges",
        "Chhikara et al., Mem0 (arXiv 2504.19413, 2025)",
        "answer accuracy needs a reader model and an LLM judge; this run measures retrieval only",
    ),
    FieldClaim(
        "mem0-locomo-2026",
        "mem0",
        "mem0: LoCoMo LLM-judged accuracy 91.6%",
        0.916,
        "locomo",
        "LoCoMo-10",
        None,
        "mem0's platform with its own reader and judge",
        "mem0's 2026 announcement (mem0.ai/research)",
        "answer accuracy needs a reader model and an LLM judge; this run measures retrieval only",
    ),
)


def evaluate_field(results: RunResults) -> list[Verdict]:
    """A verdict per field claim (a run on dialogue data only: other runs read none of them)."""
    if not (results.dialogue or results.field_claims):
        return []
    return [claim.evaluate(results) for claim in FIELD_CLAIMS]


def reading_rows(readings: list[Reading]) -> list[Reading]:
    """The readings in a stable order for a table: by dataset, documents, k, questions counted and score, each on the
    original key and then the corrected one."""
    scores = get_args(Score)
    return sorted(
        readings,
        key=lambda r: (
            r.dataset,
            r.metric.documents,
            r.metric.k,
            r.metric.unanswerable,
            scores.index(r.metric.score),
            r.key != ORIGINAL,
        ),
    )
