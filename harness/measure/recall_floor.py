"""Whether `MemoryConfig.target_recall` holds as a floor on real text: recall@10 against exact search of passages
held out from the memory, for targets 0.90, 0.95 and 0.97, with the memory written in bulk and in the corpus's
written order `ORDERED_WRITE` passages at a time, before and after one sleep; the speed beside it against exact
search and FAISS HNSW (M 32, `ef_search` swept) in the same run, and the probing each search read against the
engine estimating its recall another way (`--against` another `calibration.MISS_FACTOR`, `--against-confidence`
another `calibration.CONFIDENCE`: 0.5 is the point estimate).

Run it on one part of a corpus to learn how far the memory's own estimate is from new text's recall (the
`needed factor` column: the miss factor that would have made the estimate exact), and on another part, not
tuned on, to check the floor:

    `python -m harness.measure.recall_floor beam:DIR ... --against FACTOR --probe-margin FLOOR --as-if CELLS --out FILE`

Several corpora (one BEAM chat each, say) are one memory in the order given, each encoded and cached on its own.

Queries are answered one at a time, back to back, on one CPU (`timing.one_cpu`), each timed on its own, a search's
time read as each query's fastest pass as the harness's verdicts read it (`confidence.best_of_passes`); MiniLM
vectors cached as the real-text experiment caches them (`encoding.encode_corpus`).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from harness.data.corpus import Corpus, load_corpus
from harness.data.dialogue import load_dialogue
from harness.data.encoding import CACHE, encode_corpus
from harness.data.spec import DatasetSpec
from harness.measure.timing import one_core, one_cpu
from harness.systems.registry import missing_extra
from harness.verdicts.confidence import (
    INCONCLUSIVE,
    MARGIN,
    REFUTED,
    Judgement,
    best_of_passes,
    estimate,
    judge,
    unsettled,
)
from harness.verdicts.confidence import Estimate as Interval
from reference import CellularMemory, MemoryConfig
from reference.encoders import MockEncoder
from reference.state import calibration

TARGETS = (0.90, 0.95, 0.97)
ORDERED_WRITE = 50
"""Passages per write when the memory is written in the corpus's order (a chat's messages as they come)."""
QUERIES = 2000
"""Passages held out as queries: a recall's standard error over them is about 0.002 at 0.95, below the misses
the floor is checked for."""
EF_SEARCH = (10, 12, 14, 16, 18, 20, 24, 32, 48, 64, 128)
"""From `K` up, dense where HNSW reads the recall the engine is asked for: the speed at the engine's recall is
interpolated between two neighbouring points (`Hnsw.race`)."""
K = 10
PASSES = 3
"""Timing passes over the queries; each query's fastest is kept."""
RACE_PASSES = 15
"""A race goes on past `PASSES`, up to this many passes, while a time it compares is unsettled
(`confidence.unsettled`), as the harness's own verdicts are timed."""


@dataclass(frozen=True)
class Row:
    target: float
    write: str
    slept: bool
    miss_factor: float
    recall: float
    estimate: float | None
    low: float | None
    margin: float
    reach: int
    bytes_per_search: float
    seconds_per_query: float
    race: Race | None = None


@dataclass(frozen=True)
class Timed:
    found: list[list[int]]
    latencies: list[list[int]]
    """Nanoseconds per query, one row per pass."""

    @property
    def seconds(self) -> float:
        """Per query: the median of each query's fastest pass."""
        return float(np.median(best_of_passes(np.asarray(self.latencies, dtype=np.float64)))) / 1e9


@dataclass(frozen=True)
class Race:
    """The engine at a target against HNSW at the engine's recall, timed in alternating passes (`raced`)."""

    engine_seconds: float
    how: str
    """Which `EF_SEARCH` points HNSW's time was read from."""
    speedup: Interval
    """HNSW's time over the engine's, with its bootstrap interval over the queries (`confidence.estimate`)."""
    mean_speedup: float
    """The same of the mean times, each query's fastest pass: where the median leaves out a system's slow queries."""

    @property
    def hnsw_seconds(self) -> float:
        return self.speedup.value * self.engine_seconds

    @property
    def judgement(self) -> Judgement:
        """Whether the engine is faster, as the harness judges a bar: the whole interval clear of 1 by the
        indifference zone, else too close to call (`confidence.judge`)."""
        return judge(self.speedup, 1.0, at_least=True)

    @property
    def verdict(self) -> str:
        return {REFUTED: "**slower**", INCONCLUSIVE: "too close to call"}.get(self.judgement.verdict, "faster")


@dataclass(frozen=True)
class Setting:
    """The probe's configuration: its margin floor, and the size of memory whose budget share it is given."""

    floor: float = MemoryConfig().probe_margin
    as_if: int | None = None
    """A memory of this many cells: the probe's candidates (`probe_per_k`, read whatever the margin, and the budget
    `probe_per_sqrt_n`) are the share of the memory measured that they would be of one this size, so that a corpus
    small enough to encode is probed as a large memory is (None: the defaults)."""

    def config(self, cells: int, target: float) -> MemoryConfig:
        default = MemoryConfig(lexical=False, target_recall=target, probe_margin=self.floor)
        if self.as_if is None:
            return default
        share = math.sqrt(cells / self.as_if)
        per_k, per_sqrt_n = max(1, round(default.probe_per_k * share)), default.probe_per_sqrt_n * share
        return replace(default, probe_per_k=per_k, probe_per_sqrt_n=per_sqrt_n)

    def __str__(self) -> str:
        budget = "" if self.as_if is None else f", the probe's candidates the share they are of {self.as_if:,} cells"
        return f"margin floor (`probe_margin`) {self.floor}{budget}"


@dataclass(frozen=True)
class Estimate:
    """How the engine estimates its recall: each sampled miss counted `miss_factor` times, the target met by the
    estimate's lower bound at `confidence` (0.5: by the point estimate)."""

    miss_factor: float = calibration.MISS_FACTOR
    confidence: float = calibration.CONFIDENCE

    def __str__(self) -> str:
        bound = "point estimate" if self.confidence == 0.5 else f"lower bound at {self.confidence:.0%} confidence"
        return f"miss factor {self.miss_factor}, {bound}"


@contextmanager
def estimated(how: Estimate) -> Iterator[None]:
    with (
        mock.patch.object(calibration, "MISS_FACTOR", how.miss_factor),
        mock.patch.object(calibration, "CONFIDENCE", how.confidence),
    ):
        yield


@dataclass(frozen=True)
class Pass:
    """A search answering one query (`answer`, what is timed: the answer as the system gives it), how an answer
    reads as rows (`rows`, after the pass: the benchmark's bookkeeping, not the system's work), and what is set
    once before each pass (`prepare`, untimed)."""

    answer: Callable[[np.ndarray], Any]
    rows: Callable[[Any], list[int]]
    prepare: Callable[[], None] = lambda: None


def _listed(rows: np.ndarray) -> list[int]:
    listed: list[int] = rows.tolist()
    return listed


def raced(passes: dict[str, Pass], queries: np.ndarray, *, until_settled: bool = False) -> dict[str, Timed]:
    """Each search's rows for every query, and each query's time in `PASSES` passes on one CPU, the queries of a
    pass back to back; the searches take turns pass by pass, so that a change in the machine's load falls on all
    alike (load only slows a pass). `until_settled`: more passes, up to `RACE_PASSES`, while a search's median
    is unsettled."""
    latencies: dict[str, list[list[int]]] = {name: [] for name in passes}
    answers: dict[str, list[Any]] = {}
    with one_cpu(), one_core():
        for done in range(RACE_PASSES if until_settled else PASSES):
            if done >= PASSES and not unsettled(list(latencies.values())):
                break
            for name, search in passes.items():
                search.prepare()
                answers[name] = []
                latencies[name].append([])
                for query in queries:
                    start = time.perf_counter_ns()
                    answer = search.answer(query)
                    latencies[name][-1].append(time.perf_counter_ns() - start)
                    answers[name].append(answer)
    return {name: Timed([search.rows(a) for a in answers[name]], latencies[name]) for name, search in passes.items()}


def timed(search: Pass, queries: np.ndarray) -> Timed:
    return raced({"": search}, queries)[""]


def exact(cells: np.ndarray, queries: np.ndarray) -> tuple[list[set[int]], float]:
    """Each query's exact top `K` rows, and the seconds per query of finding them."""
    exactly = timed(Pass(lambda query: np.argpartition(-(cells @ query), K)[:K], _listed), queries)
    return [set(rows) for rows in exactly.found], exactly.seconds


def recall(found: list[list[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(set(f) & t) / K for f, t in zip(found, truth)]))


def built(cells: np.ndarray, write: str, target: float, setting: Setting) -> CellularMemory:
    memory = CellularMemory(encoder=MockEncoder(cells.shape[1]), config=setting.config(len(cells), target))
    step = len(cells) if write == "bulk" else ORDERED_WRITE
    for start in range(0, len(cells), step):
        rows = range(start, min(start + step, len(cells)))
        memory.add([str(r) for r in rows], vectors=cells[start : start + len(rows)], ids=[str(r) for r in rows])
    return memory


def measured(memory: CellularMemory, queries: np.ndarray, truth: list[set[int]]) -> tuple[float, float, float]:
    """Recall@`K`, seconds per query and vector bytes read per search, searching one query at a time."""
    before = memory.stats()
    searched = timed(engine_search(memory), queries)
    after = memory.stats()
    read = after.bytes_read_per_search * after.searches - before.bytes_read_per_search * before.searches
    return recall(searched.found, truth), searched.seconds, read / (after.searches - before.searches)


def engine_search(memory: CellularMemory) -> Pass:
    return Pass(lambda query: memory.search(query, k=K, vector=query), lambda hits: [int(hit.id) for hit in hits])


def engine_rows(
    cells: np.ndarray,
    queries: np.ndarray,
    truth: list[set[int]],
    how: Estimate,
    setting: Setting,
    rival: Hnsw | None = None,
) -> list[Row]:
    """The engine's rows estimating its recall this way, at this setting; at the highest target, raced against
    `rival` at the engine's recall (`Hnsw.race`), when given."""
    rows = []
    with estimated(how):
        for write in ("bulk", "in order"):
            with built(cells, write, TARGETS[0], setting) as memory:
                for slept in (False, True):
                    if slept:
                        memory.consolidate()
                    for target in TARGETS:
                        memory.set_search_options(target_recall=target)
                        got, seconds, read = measured(memory, queries, truth)
                        race = None
                        if rival is not None and target == TARGETS[-1]:
                            race = rival.race(engine_search(memory), queries, got)
                        s = memory.stats()
                        rows.append(
                            Row(
                                target,
                                write,
                                slept,
                                how.miss_factor,
                                got,
                                s.estimated_recall,
                                s.estimated_recall_low,
                                s.probe_margin,
                                s.probe_reach,
                                read,
                                seconds,
                                race,
                            )
                        )
    return rows


@dataclass(frozen=True)
class Hnsw:
    """FAISS HNSW (M 32, efConstruction 40; the `faiss` extra) over the memory's cells, and its (ef_search, recall,
    seconds per query) at each of `EF_SEARCH`."""

    index: Any
    points: list[tuple[int, float, float]]

    @classmethod
    def built(cls, cells: np.ndarray, queries: np.ndarray, truth: list[set[int]]) -> Hnsw:
        try:
            import faiss
        except ModuleNotFoundError as error:
            raise missing_extra("faiss-hnsw", "faiss", error) from None
        index = faiss.IndexHNSWFlat(cells.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 40
        index.add(cells)
        hnsw = cls(index, [])
        for ef in EF_SEARCH:
            swept = raced({"": hnsw.search(ef)}, queries)[""]
            hnsw.points.append((ef, recall(swept.found, truth), swept.seconds))
        return hnsw

    def search(self, ef: int) -> Pass:
        """A search at this `ef_search`, set once before each pass."""

        def at_ef() -> None:
            self.index.hnsw.efSearch = ef

        return Pass(lambda query: self.index.search(query[None, :], K)[1][0], _listed, at_ef)

    def race(self, engine: Pass, queries: np.ndarray, at: float) -> Race | None:
        """The engine against HNSW at the engine's recall `at`: the engine and the `EF_SEARCH` points around `at`
        timed in alternating passes until settled, HNSW's time interpolated linearly between the two by their
        recall (the point itself when one reads exactly `at`, the lowest when every one reads more); None when
        none reads as much. The speedup's interval is the harness's bootstrap over the queries."""
        for (low_ef, low, _), (high_ef, high, _) in pairwise([(0, -1.0, 0.0), *self.points]):
            if high < at:
                continue
            if low < 0 or high in (at, low):
                return self._raced(engine, queries, {high_ef: 1.0}, f"ef {high_ef}")
            share = (at - low) / (high - low)
            return self._raced(
                engine, queries, {low_ef: 1 - share, high_ef: share}, f"ef {low_ef}–{high_ef} interpolated"
            )
        return None

    def _raced(self, engine: Pass, queries: np.ndarray, weights: dict[int, float], how: str) -> Race:
        """The engine against HNSW's time taken as the `weights`' sum of its times at those `ef_search` values."""
        points = {f"ef {ef}": self.search(ef) for ef in weights}
        times = raced({"engine": engine, **points}, queries, until_settled=True)
        weight = np.asarray(list(weights.values()))

        def speedup_of(medians: np.ndarray) -> np.ndarray:  # HNSW's time over the engine's
            ratio: np.ndarray = (medians[..., :-1] @ weight) / medians[..., -1]
            return ratio

        latencies = [*(times[name].latencies for name in points), times["engine"].latencies]
        speedup = estimate(latencies, speedup_of)
        means = np.asarray([best_of_passes(np.asarray(each, dtype=np.float64)).mean() for each in latencies])
        return Race(times["engine"].seconds, how, speedup, float(speedup_of(means)))


def change(new: float, old: float) -> str:
    """`new` against `old` as a signed percentage to 0.1 %: "+0.0%" for figures that differ only by how a mean of
    the same bytes rounds (never "-0.0%")."""
    return f"{round(new / old - 1, 3) + 0.0:+.1%}"


def corpus_of(spec: str) -> Corpus:
    """`locomo:PATH`: every conversation's turns as LoCoMo's retrieval setup renders them, one passage each; anything
    else a corpus of `load_corpus`."""
    if not spec.startswith("locomo:"):
        return load_corpus(spec)
    dialogue = load_dialogue(DatasetSpec.parse(spec))
    turns = [doc.text for conversation in dialogue.conversations for doc in conversation.docs]
    return Corpus(dialogue.name, str(dialogue.path), list(dict.fromkeys(turns)), dialogue.sha256)


def passage_vectors(specs: list[str], cache: Path) -> tuple[str, np.ndarray]:
    """The corpora's names and their passages' MiniLM vectors, one memory in the order given: each corpus encoded
    and cached on its own, a passage an earlier corpus gave dropped (ties would make recall against exact ambiguous)."""
    from reference.encoders import SentenceTransformerEncoder

    encoder = SentenceTransformerEncoder()
    names, parts, seen = [], [], set()
    for spec in specs:
        corpus = corpus_of(spec)
        vectors = encode_corpus(corpus, encoder, cache=cache)
        new = [i for i, passage in enumerate(corpus.passages) if passage not in seen]
        seen.update(corpus.passages)
        names.append(corpus.name)
        parts.append(vectors[new])
    return ", ".join(names), np.concatenate(parts)


def report(
    specs: list[str], against: Estimate, setting: Setting, *, queries: int = QUERIES, cache: Path = CACHE, seed: int = 0
) -> str:
    name, vectors = passage_vectors(specs, cache)
    held = np.sort(np.random.default_rng(seed).choice(len(vectors), queries, replace=False))
    kept = np.setdiff1d(np.arange(len(vectors)), held)
    cells, asked = np.ascontiguousarray(vectors[kept]), np.ascontiguousarray(vectors[held])
    truth, exact_seconds = exact(cells, asked)
    rival = Hnsw.built(cells, asked, truth)
    ours = engine_rows(cells, asked, truth, Estimate(), setting, rival)
    theirs = {(r.target, r.write, r.slept): r for r in engine_rows(cells, asked, truth, against, setting)}
    lines = [
        f"# Recall target as a floor: {name}",
        "",
        f"{len(cells):,} passages in the memory (in written order), {len(asked):,} held out as queries, MiniLM; "
        f"recall@10 against exact search; one CPU, queries back to back, the median of each query's fastest of "
        f"{PASSES} passes; exact search {exact_seconds * 1e3:.2f} ms a query (the speeds against it move with the "
        f"load between settings; the race at the end is paired, its interval the harness's bootstrap over the "
        f"queries, its verdict the harness's rule for a bar: faster only when the whole interval clears 1 by "
        f"{MARGIN:.0%}). {setting}; the engine's estimate: {Estimate()} "
        f"(`calibration.MISS_FACTOR`, `calibration.CONFIDENCE`), against {against}.",
        "",
        "| target | write | sleep | recall@10 | met | estimate [lower bound] | needed factor | margin | reach "
        "| speed vs exact | bytes read per search | against: recall, margin | probing added |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in ours:
        old = theirs[(r.target, r.write, r.slept)]
        needed = "–"
        if r.estimate is not None and r.estimate < 1:
            needed = f"{(1 - r.recall) / ((1 - r.estimate) / r.miss_factor):.2f}"
        estimate = "–" if r.estimate is None else f"{r.estimate:.3f} [{r.low:.3f}]"
        lines.append(
            f"| {r.target} | {r.write} | {'after' if r.slept else 'before'} | {r.recall:.3f} "
            f"| {'yes' if r.recall >= r.target else '**no**'} | {estimate} | {needed} | {r.margin:.3f} | {r.reach} "
            f"| {exact_seconds / r.seconds_per_query:.0f}× | {r.bytes_per_search:,.0f} "
            f"| {old.recall:.3f}, {old.margin:.3f} | {change(r.bytes_per_search, old.bytes_per_search)} |"
        )
    lines += [
        "",
        "FAISS HNSW (M 32, efConstruction 40), same queries:",
        "",
        "| ef_search | recall@10 | speed vs exact |",
        "|---|---|---|",
    ]
    lines += [f"| {ef} | {got:.3f} | {exact_seconds / seconds:.0f}× |" for ef, got, seconds in rival.points]
    lines += ["", "At the highest target, the engine and HNSW at the engine's recall, timed in alternating passes:", ""]
    for r in (r for r in ours if r.target == TARGETS[-1]):
        where = f"At {r.target}, {r.write}, {'after' if r.slept else 'before'} sleep: the engine {r.recall:.3f}"
        if r.race is None:
            lines.append(f"- {where}; no HNSW point reads as high.")
            continue
        rerun = r.race.judgement.neighbours
        lines.append(
            f"- {where} at {r.race.engine_seconds * 1e6:.1f} µs a query, HNSW ({r.race.how}) at "
            f"{r.race.hnsw_seconds * 1e6:.1f} µs: HNSW's time over the engine's {r.race.speedup.text('×')} "
            f"(of the means {r.race.mean_speedup:.2f}×), the engine {r.race.verdict}"
            f"{' (a rerun may read otherwise)' if rerun else ''}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "corpus",
        nargs="+",
        help="beam:DIR, locomo:PATH, a text file or folder (`load_corpus`); several are one memory",
    )
    parser.add_argument("--against", type=float, default=1.0, help="the miss factor to compare probing against")
    parser.add_argument(
        "--against-confidence",
        type=float,
        default=0.5,
        help="the confidence of the bound the compared engine meets its target with (0.5: the point estimate)",
    )
    parser.add_argument(
        "--probe-margin",
        type=float,
        default=MemoryConfig().probe_margin,
        help="the margin floor; below the default, the target alone sets the probe of a memory whose floor already "
        "exceeds every target",
    )
    parser.add_argument("--as-if", type=int, help="give the probe the budget share of a memory of this many cells")
    parser.add_argument("--queries", type=int, default=QUERIES, help="passages held out as queries")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where encoded passages are cached")
    parser.add_argument("--out", type=Path, help="write the report here (default: print it)")
    args = parser.parse_args()
    against = Estimate(args.against, args.against_confidence)
    setting = Setting(args.probe_margin, args.as_if)
    text = report(args.corpus, against, setting, queries=args.queries, cache=args.cache)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
