"""Each row of a report means what it says: an estimate beside the measurement of the same ranking, no reading
shown as a figure, the true reason a verdict was not measured, no change named where the commit measured is
unchanged."""

import re
import subprocess
from dataclasses import replace

import matplotlib.pyplot as plt
import pytest

from harness.benchmark import uncommitted
from harness.experiments.concurrency import concurrency_figure
from harness.experiments.concurrency import draw as draw_concurrency
from harness.experiments.concurrency import table as concurrency
from harness.experiments.realtext import headline as realtext_headline
from harness.experiments.realtext import table as realtext
from harness.experiments.scaling import headline as scaling_headline
from harness.experiments.scaling import table as scaling
from harness.output.results import ConcurrencyRow, RunResults
from harness.verdicts.claims import UNMEASURED, evaluate
from tests.results_factory import measured, run_info


def _engine(system: str, recall: float, *, by_words: bool):
    row = measured(system, 5_000, 1.0, recall=recall)
    return replace(row, describe={"estimated_recall": 0.962, "text_queries": by_words, "groups": 40})


def test_an_engine_searched_by_words_too_shows_no_dense_estimate_beside_its_recall_and_says_why():
    rows = [_engine("reference", 0.525, by_words=True), _engine("reference-dense", 0.958, by_words=False)]
    results = RunResults(run=run_info(), realtext=[*rows, measured("flat-numpy", 5_000, 3.0)])
    for [table] in (realtext_headline(results), realtext(results)):
        lines = table.render().splitlines()
        [hybrid] = [line for line in lines if line.startswith("| reference ")]
        [dense] = [line for line in lines if line.startswith("| reference-dense ")]
        assert "0.525" in hybrid and "0.962" not in hybrid  # no estimate of another ranking beside it
        assert "0.958" in dense and "0.962" in dense  # the dense engine's estimate is of what it measured
        [note] = table.notes
        assert note.startswith("`reference`: searched by the query's text and vector together")


def test_no_growth_of_resident_memory_reads_as_no_reading_not_as_zero_bytes():
    rows = [replace(measured("flat-numpy", 1_000, 1.0), rss_bytes_per_doc=0.0), measured("reference", 1_000, 1.0)]
    rows[1] = replace(rows[1], rss_bytes_per_doc=1_234.0)
    [table] = scaling(RunResults(run=run_info(), scaling=rows))
    column = [c.header for c in table.columns].index("RSS (bytes/cell)")
    cells = [line.split("|") for line in table.render().splitlines()[2:]]
    cells = {row[1].strip(): row[column + 1].strip() for row in cells}
    assert cells == {"flat-numpy": "–", "reference": "1,234"}
    assert "where it did not grow" in table.caption


def test_a_system_left_out_by_systems_is_not_measured_for_that_reason():
    rows = [measured("reference", n, 1.0) for n in (1_000, 25_000)]
    results = RunResults(run=replace(run_info(), systems=("reference", "flat-numpy")), scaling=rows)
    claims, targets = evaluate(results)
    left_out = [v for v in claims + targets if v.system not in ("reference", "flat-numpy")]
    assert left_out and all(v.verdict == UNMEASURED for v in left_out)
    assert {v.measured for v in left_out} == {"not in this run: not selected by --systems"}
    chosen = [v for v in claims + targets if v.system == "reference" and v.verdict == UNMEASURED]
    assert chosen and not any("--systems" in v.measured for v in chosen)  # its own reasons stay


def test_an_untracked_file_is_no_change_to_the_commit_measured(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True, timeout=60)

    git("init", "-q")
    (tmp_path / "engine.py").write_text("x = 1\n")
    git("add", "engine.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    (tmp_path / "my_memory.py").write_text("the adapter the README asks for\n")
    assert not uncommitted(tmp_path)
    (tmp_path / "engine.py").write_text("x = 2\n")
    assert uncommitted(tmp_path)


def test_the_headline_speed_up_is_the_verdicts_figure_and_says_which_rule_it_follows():
    busy = (1.0, 1.0, 4.0)  # one timing pass slowed by load, as on a shared machine
    rows = [
        measured("reference", 100_000, 0.1, pass_factors=(1.0, 1.0, 1.0)),
        measured("flat-numpy", 100_000, [20.0] * 25 + [30.0] * 25, pass_factors=busy),
    ]
    results = RunResults(run=run_info(), scaling=rows)
    [verdict] = [v for v in evaluate(results)[1] if v.claim == "speedup-vs-exact"]
    [table] = scaling_headline(results)
    [shown] = [line.split("|")[3].strip() for line in table.render().splitlines() if line.startswith("| reference ")]
    judged = float(re.match(r"N=100,000: ([\d.]+)×", verdict.measured).group(1))
    assert float(shown.replace(",", "")) == pytest.approx(judged, rel=0.01)  # one pair, one figure, one rule
    assert "by the rule of the speed-up verdicts" in table.caption


def test_a_verdict_that_needs_a_system_left_out_names_it_and_why():
    results = RunResults(run=replace(run_info(), systems=("reference",)), scaling=[measured("reference", 100_000, 0.1)])
    [verdict] = [v for v in evaluate(results)[1] if v.claim == "speedup-vs-exact"]
    assert verdict.verdict == UNMEASURED
    assert verdict.measured == "not in this run: no scaling measurement of flat-numpy (not selected by --systems)"


def _level(system: str, clients: int, writing: float, windows: list[float], tails: list[float]) -> ConcurrencyRow:
    qps = sorted(windows)[len(windows) // 2]
    return ConcurrencyRow(
        system, "threads in process", 2_000, clients, writing, 90, qps, 1.0, 3.0, 1.0, 0, windows, tails
    )


def test_a_concurrency_level_shows_its_windows_spread_in_the_table_and_the_plot(tmp_path):
    rows = [
        _level("reference", 1, 0.0, [900.0, 1_015.0, 2_270.0], [2.5, 3.0, 7.25]),
        _level("reference", 2, 0.0, [531.0, 1_124.0, 1_598.0], [4.0, 4.5, 11.0]),
        _level("reference", 1, 20.0, [800.0], [3.0]),
    ]
    results = RunResults(run=run_info(), concurrency=rows)
    [table] = concurrency(results)
    lines = table.render().splitlines()
    header = [cell.strip() for cell in lines[0].split("|")]
    first, second = ([cell.strip() for cell in line.split("|")] for line in lines[2:4])
    assert first[header.index("windows")] == "900–2,270" and second[header.index("windows")] == "531–1,598"
    assert first[header.index("p99 windows")] == "2.50–7.25" and second[header.index("p99 windows")] == "4.00–11.0"
    assert not re.search(r"\d", first[header.index("writing: p99 windows")])  # one window: no spread to show
    assert "windows of time taken in turn" in table.caption and "overlap" in table.caption
    assert draw_concurrency(tmp_path / "concurrency.png", rows).stat().st_size > 0


def test_the_concurrency_plot_gives_each_system_its_own_panels_with_a_band_of_its_windows():
    rows = [
        _level(system, clients, writing, [qps, qps * 2, qps * 3], [1.0, 2.0, 4.0])
        for system, qps in (("reference", 100.0), ("flat-numpy", 300.0), ("faiss-hnsw", 900.0))
        for writing in (0.0, 20.0)
        for clients in (1, 2, 4, 8)
    ]
    figure, panels = concurrency_figure(rows)
    try:
        assert [qps.get_title().split()[0] for qps, _ in panels] == ["reference", "flat-numpy", "faiss-hnsw"]
        for qps, p99 in panels:
            for axes in (qps, p99):
                assert len(axes.lines) == 2 and len(axes.collections) == 2  # alone and writing, each with its band
                assert axes.get_ylim() == panels[0][axes is p99].get_ylim()  # one scale for every system
            line, band = qps.lines[0].get_ydata(), qps.collections[0].get_paths()[0].vertices[:, 1]
            assert band.max() == 3 * band.min() == 1.5 * max(line)  # from the lowest window to the highest
            assert list(p99.lines[0].get_ydata()) == [2.0] * 4  # the median window's p99, inside its band
    finally:
        plt.close(figure)
