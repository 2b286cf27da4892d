"""Verdicts follow the measurements: supported, refuted, or not measured."""

from harness.output.results import RunResults
from harness.verdicts.claims import CLAIMS, INCONCLUSIVE, REFUTED, SUPPORTED, TARGETS, UNMEASURED
from tests.results_factory import measured, results


def verdicts(run: RunResults, claim_id: str) -> dict[str, str]:
    claim = next(c for c in (*CLAIMS, *TARGETS) if c.id == claim_id)
    return {v.system: v.verdict for v in claim.evaluate(run)}


SIZES = (1_000, 10_000, 25_000, 100_000)
SCALING = [
    *(measured("reference", n, 0.3) for n in SIZES),
    *(measured("flat-chroma", n, 1.5 + n / 1e6) for n in SIZES),
    *(measured("flat-numpy", n, n / 10_000) for n in SIZES),
    measured("faiss-ivf", 100_000, 0.2, recall=1.0, params={"nprobe": 16}),
    measured("faiss-ivf", 100_000, 0.05, recall=0.9, params={"nprobe": 1}),
]
RESULTS = results(
    scaling=SCALING, needles=[measured("reference", 200, [1.0] * 5), measured("flat-chroma", 200, [1.0] * 5, found3=4)]
)


def test_stable_latency_and_linear_growth():
    assert verdicts(RESULTS, "stable-latency") == {
        "reference": SUPPORTED,
        "flat-chroma": SUPPORTED,
        "reference-chroma": UNMEASURED,
    }
    assert verdicts(RESULTS, "flat-linear") == {"reference": REFUTED, "flat-chroma": REFUTED, "flat-numpy": SUPPORTED}


def test_needles_need_every_needle():
    found = verdicts(RESULTS, "needles-5of5")
    assert found["reference"] == SUPPORTED and found["flat-chroma"] == REFUTED
    assert found["reference-no-entities"] == UNMEASURED


def test_advantage_and_targets():
    assert verdicts(RESULTS, "latency-advantage")["reference"] == SUPPORTED
    assert verdicts(RESULTS, "speedup-vs-exact") == {"reference": SUPPORTED}  # 10 ms / 0.3 ms = 33×, recall 1.0
    low_recall = results(scaling=[*SCALING[:2], measured("reference", 100_000, 0.3, recall=0.9), *SCALING[3:]])
    assert verdicts(low_recall, "speedup-vs-exact") == {"reference": REFUTED}
    assert verdicts(RESULTS, "near-faiss") == {"reference": SUPPORTED}  # 0.3 vs 0.2 ms at equal recall: 1.5×
    assert verdicts(RESULTS, "flat-latency-fixed") == {"reference": SUPPORTED, "faiss-ivf": UNMEASURED}
    growing = results(
        scaling=SCALING, growing=[measured("reference", 10_000, 0.2), measured("reference", 100_000, 0.5)]
    )
    assert verdicts(growing, "flat-latency-growing") == {"reference": REFUTED, "faiss-ivf": UNMEASURED}


def test_a_quick_run_does_not_judge_a_100k_target_at_10k():
    quick = results(scaling=[r for r in SCALING if r.n_docs == 10_000])
    assert verdicts(quick, "speedup-vs-exact") == {"reference": UNMEASURED}
    assert verdicts(quick, "near-faiss") == {"reference": UNMEASURED}


def test_a_slowdown_is_written_as_slower_and_verdicts_carry_their_statement():
    slow = results(
        scaling=[*(measured("reference", n, 4.0) for n in SIZES), *(measured("flat-chroma", n, 1.6) for n in SIZES)]
    )
    claim = next(c for c in CLAIMS if c.id == "latency-advantage")
    verdict = next(v for v in claim.evaluate(slow) if v.system == "reference")
    assert verdict.verdict == REFUTED and "2.5× slower than flat-chroma" in verdict.measured
    assert "× faster" not in verdict.measured
    assert verdict.statement == "A latency advantage at 25K–100K cells" and verdict.source


def test_a_ratio_whose_interval_straddles_the_bar_is_inconclusive():
    import numpy as np

    rng = np.random.default_rng(3)

    def spread(name: str, n: int, median_ms: float):
        return measured(name, n, median_ms * rng.lognormal(0, 0.8, 60))

    # reference at 0.5 ms against exact search at 10 ms: 20× exactly, but the queries scatter widely
    noisy = results(scaling=[spread("reference", 100_000, 0.5), spread("flat-numpy", 100_000, 10.0)])
    assert verdicts(noisy, "speedup-vs-exact") == {"reference": INCONCLUSIVE}
    clear = results(scaling=[spread("reference", 100_000, 0.1), spread("flat-numpy", 100_000, 10.0)])
    assert verdicts(clear, "speedup-vs-exact") == {"reference": SUPPORTED}


def test_a_quick_run_cannot_judge_claims_about_growth():
    quick = results(scaling=[r for r in SCALING if r.n_docs <= 10_000])  # --quick: 1K and 10K
    assert set(verdicts(quick, "stable-latency").values()) == {UNMEASURED}
    assert set(verdicts(quick, "flat-linear").values()) == {UNMEASURED}


def test_load_that_slows_some_passes_does_not_move_a_verdict():
    """The same 14.3× median is refuted whether the passes were steady or some were slowed by load (up to 5×):
    a verdict reads each query's fastest pass."""
    steady = results(scaling=[measured("reference", 100_000, 0.7), measured("flat-numpy", 100_000, 10.0)])
    assert verdicts(steady, "speedup-vs-exact") == {"reference": REFUTED}
    loaded = results(
        scaling=[
            measured("reference", 100_000, 0.7, pass_factors=(1.0, 5.0, 1.3, 1.0, 2.0)),
            measured("flat-numpy", 100_000, 10.0, pass_factors=(3.0, 1.0, 1.0, 1.6, 1.0)),
        ]
    )
    assert verdicts(loaded, "speedup-vs-exact") == {"reference": REFUTED}


def test_an_interval_that_ends_within_the_margin_of_its_bar_is_inconclusive():
    from harness.verdicts.confidence import Estimate, judge

    assert judge(Estimate(22.0, 21.0, 25.0), 20.0, at_least=True).verdict == INCONCLUSIVE  # 21 < 20 × 1.1
    assert judge(Estimate(24.0, 22.5, 25.0), 20.0, at_least=True).verdict == SUPPORTED
    assert judge(Estimate(17.0, 16.0, 18.0), 20.0, at_least=True).verdict == REFUTED  # 18 < 20 / 1.1
    assert judge(Estimate(1.4, 1.3, 1.45), 1.5, at_least=False).verdict == INCONCLUSIVE  # 1.45 > 1.5 / 1.1
    assert judge(Estimate(1.2, 1.1, 1.3), 1.5, at_least=False).verdict == SUPPORTED


def test_a_figure_within_what_moves_between_runs_of_an_edge_names_the_verdict_beyond_it():
    """The realtext-high-recall figures of two identical runs: 24.1× (CI 20.0–27.7×), then 23.7× (CI 20.1–27.0×),
    either side of the edge of NOT SUPPORTED at 30 / 1.1 = 27.3×: each names the other's verdict as its neighbour
    (`compare` then lists the change apart: test_compare)."""
    from harness.verdicts.confidence import Estimate, all_of, certain, judge

    first, second = (
        judge(Estimate(24.1, 20.0, 27.7), 30.0, at_least=True),
        judge(Estimate(23.7, 20.1, 27.0), 30.0, at_least=True),
    )
    assert (first.verdict, first.neighbours) == (INCONCLUSIVE, (REFUTED,))
    assert (second.verdict, second.neighbours) == (REFUTED, (INCONCLUSIVE,))
    far = judge(Estimate(12.0, 10.0, 14.0), 30.0, at_least=True)
    assert (far.verdict, far.neighbours) == (REFUTED, ())
    # with a condition that fails on every run, the edge of the other no longer matters
    assert all_of([first, certain(REFUTED)]).neighbours == ()
    assert all_of([first, certain(SUPPORTED)]).neighbours == (REFUTED,)


def test_real_text_targets_need_50k_passages_and_match_faiss_at_equal_recall():
    def realtext(n: int) -> list:
        return [
            measured("reference-slept", n, 0.40, recall=0.963),
            measured("reference-dense", n, 0.45, recall=0.885),
            measured("flat-numpy", n, 8.0),
            measured("faiss-ivf", n, 0.20, recall=0.955, params={"nprobe": 16}),
            measured("faiss-ivf", n, 0.25, recall=0.965, params={"nprobe": 24}),
            measured("faiss-ivf", n, 0.31, recall=0.973, params={"nprobe": 32}),
        ]

    run = results(realtext=realtext(51_551))
    assert verdicts(run, "realtext-vs-exact") == {"reference-slept": SUPPORTED, "reference-dense": REFUTED}
    speedup = next(c for c in TARGETS if c.id == "realtext-vs-exact").evaluate(run)[0].measured
    assert "faiss-ivf at that recall (nprobe 24): 32.0×" in speedup  # FAISS's own ratio beside ours: 8.0 / 0.25
    # equal recall: nprobe 24 (0.965 ≥ 0.963 − 0.005), not the slower nprobe 32: 0.40 / 0.25 = 1.6×
    assert verdicts(run, "realtext-near-faiss")["reference-slept"] == INCONCLUSIVE
    small = results(realtext=realtext(5_942))  # the default run's stdlib corpus (6,942 passages, 1,000 held out)
    assert set(verdicts(small, "realtext-vs-exact").values()) == {UNMEASURED}


def test_the_high_recall_target_judges_the_sweep_point_against_hnsw_and_ivf_at_equal_recall():
    target = {"target_recall": 0.97}
    peers = [
        measured("reference-dense", 51_551, 0.30, recall=0.95),
        measured("flat-numpy", 51_551, 8.0),
        measured("faiss-hnsw", 51_551, 0.15, recall=0.973, params={"ef_search": 16}),
        measured("faiss-hnsw", 51_551, 0.20, recall=0.993, params={"ef_search": 32}),
        measured("faiss-ivf", 51_551, 0.31, recall=0.973, params={"nprobe": 32}),
    ]
    fast = results(realtext=[*peers, measured("reference-dense", 51_551, 0.12, recall=0.975, params=target)])
    # 8.0 / 0.12 = 67×; hnsw ef 16 at 0.973 ≥ 0.975 − 0.005: 0.12 / 0.15 = 0.8×; ivf: 0.39×
    assert verdicts(fast, "realtext-high-recall")["reference-dense"] == SUPPORTED
    slow = results(realtext=[*peers, measured("reference-dense", 51_551, 0.40, recall=0.98, params=target)])
    # 20×; hnsw: only ef 32 reaches 0.98 − 0.005, 0.40 / 0.20 = 2×
    assert verdicts(slow, "realtext-high-recall")["reference-dense"] == REFUTED
    short = results(realtext=[*peers, measured("reference-dense", 51_551, 0.16, recall=0.96, params=target)])
    assert verdicts(short, "realtext-high-recall")["reference-dense"] == REFUTED  # fast, but below 0.97
    assert verdicts(results(realtext=peers), "realtext-high-recall")["reference-dense"] == UNMEASURED  # no sweep


def test_the_engine_hopes_flat_rags_claim_fails_for_it_and_peers_are_no_targets():
    [engine] = [v for v in CLAIMS[1].evaluate(RESULTS) if v.system == "reference"]
    assert engine.verdict == REFUTED and engine.as_hoped and engine.shown == "NOT SUPPORTED (as hoped)"
    [flat] = [v for v in CLAIMS[1].evaluate(RESULTS) if v.system == "flat-chroma"]
    assert not flat.as_hoped and flat.shown == "NOT SUPPORTED"
    fixed = next(c for c in TARGETS if c.id == "flat-latency-fixed")
    assert {(v.system, v.peer) for v in fixed.evaluate(RESULTS)} == {("reference", False), ("faiss-ivf", True)}
