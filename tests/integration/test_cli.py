"""The `magbench` command as a user runs it (subprocesses): quick run, BEIR run, compare, demo."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.data.beir import save_beir
from harness.data.generated import needles_evalset, notes_evalset
from harness.experiments.agent_loop import SYSTEMS as LOOP_SYSTEMS
from harness.experiments.streaming import SYSTEMS as STREAM_SYSTEMS


def magbench(*args: str, timeout: int = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The command as a user runs it; `timeout` only ends a hang (each of these takes seconds, the quick run a few
    minutes on a busy machine)."""
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


QUICK_CORPUS_PASSAGES = 1_300
"""Passages of the quick run's real text here: its 1,000 held-out queries and a memory of 300, and the streams'
1,000 cells."""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """`magbench run --quick` as on a fresh clone (an empty encoding cache: the working directory is new), on real
    text of the project's own (generated notes, `--corpus`) with the mock encoder: MiniLM would first encode the
    standard library's documentation, minutes on a busy machine."""
    root = tmp_path_factory.mktemp("quick")
    corpus = root / "notes.txt"
    corpus.write_text("\n\n".join(d.text for d in notes_evalset(QUICK_CORPUS_PASSAGES, queries=1).docs))
    out = root / "out"
    done = magbench(
        "run", "--quick", "--encoder", "mock", "--corpus", str(corpus), "--out", str(out), cwd=root, timeout=3600
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done


def test_the_quick_run_encodes_only_its_small_corpus(quick_run):
    """Nothing in the CLI tests' run is encoded by MiniLM, and its real text is the small corpus given."""
    out, done = quick_run
    results = json.loads((out / "results.json").read_text())
    assert results["run"]["encoders"] == {"mock": "mock-384"}
    assert results["run"]["dataset_info"]["passages"].startswith(f"{QUICK_CORPUS_PASSAGES:,} ")
    assert "minilm" not in done.stderr.lower()


def test_a_quick_run_measures_clients_at_once_filters_and_an_expiring_stream(quick_run):
    out, _ = quick_run
    report = (out / "report.md").read_text()
    results = json.loads((out / "results.json").read_text())
    cores = results["run"]["machine"]["cpus"]
    assert f"## Concurrency: 1–2 clients at once against one system ({cores} cores here)" in report
    assert {(r["system"], r["clients"], r["writes_per_s"] > 0) for r in results["concurrency"]} == {
        (s, c, w) for s in ("reference", "flat-numpy", "chroma-server") for c in (1, 2) for w in (False, True)
    }
    assert (out / "concurrency.png").is_file() and (out / "filtered.csv").is_file()
    cases = {(r["system"], r["case"]) for r in results["filtered"] if not r["skipped"]}
    assert {("reference", c) for c in ("unfiltered", "filter 1%", "filter 99%", "scope 1%")} <= cases
    assert "## Filtered search" in report and "recall@10 (min / mean / end)" in report
    expiring = [r for r in results["streaming"] if r["runbook"] == "expiring-stream"]
    assert expiring and all(len(r["checkpoints"]) == 10 for r in expiring)


def test_quick_run_writes_a_full_report(quick_run):
    out, done = quick_run
    for name in (
        "report.md",
        "results.json",
        "scaling.csv",
        "needles.csv",
        "grouping.csv",
        "claims.csv",
        "latency_vs_n.png",
        "recall_vs_latency.png",
        "streaming-agent-stream.csv",
        "streaming-agent-loop.csv",
        "streaming.png",
    ):
        assert (out / name).is_file(), name
    report = (out / "report.md").read_text()
    assert report.index("## Reading") < report.index("### Published claims") < report.index("## Details")
    assert "needles-5of5" in report and "NOT MEASURED" in report  # a quick run cannot judge the growth claims
    results = json.loads((out / "results.json").read_text())
    assert results["schema"] == 3 and results["run"]["machine"]["cpus"] >= 1
    assert results["run"]["plan"]["sizes"] == [1000, 10000] and results["run"]["plan"]["passes"] == 3
    assert re.fullmatch("[0-9a-f]{16}", results["run"]["dataset_info"]["fingerprint"])  # the real text used
    scaling = results["scaling"]
    assert {m["system"] for m in scaling} >= {"reference", "flat-numpy", "flat-chroma", "kmeans"}
    assert all(len(m["pass_latencies_ns"]) == 3 for m in scaling)
    assert all(len(one_pass) == m["queries"] for m in scaling for one_pass in m["pass_latencies_ns"])
    timing = "timing passes (each setting's queries back to back, the settings in a rotating order, on one core)"
    assert f"{timing}: scaling 3" in report
    assert {v["verdict"] for v in results["claims"]} <= {"SUPPORTED", "NOT SUPPORTED", "NOT MEASURED"}
    assert "claim / target" in done.stdout  # the summary table
    streamed = {(row["runbook"], row["system"]) for row in results["streaming"]}
    assert streamed == {(book, s) for s in STREAM_SYSTEMS for book in ("agent-stream", "expiring-stream")} | {
        ("agent-loop", s) for s in LOOP_SYSTEMS
    }
    assert all(f"### Streaming: `{book}`" in report for book in ("agent-stream", "expiring-stream", "agent-loop"))
    assert "the run took" in done.stdout and "load average" in done.stdout  # what it took, printed by the run


@pytest.fixture(scope="module")
def beir_runs(tmp_path_factory):
    """The same small BEIR run twice: as it is, and with the engine slowed 3× on purpose (its searches take
    about 0.1 ms here, so the slowdown is above compare's 0.05 ms floor)."""
    root = tmp_path_factory.mktemp("beir-runs")
    dataset = save_beir(needles_evalset(400, 40, seed=5), root / "beir")
    runs = []
    for name, extra in (("base", []), ("slowed", ["--slow-down", "reference=3"])):
        done = magbench(
            "run", "--dataset", str(dataset), "--encoder", "mock", "--systems", "reference,flat-numpy",
            "--out", str(root / name), *extra,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(root / name)
    return runs


def test_compare_a_run_with_itself_passes_and_with_a_slowed_system_fails(beir_runs):
    base, slowed = beir_runs
    same = magbench("compare", str(base), str(base))
    assert same.returncode == 0 and "0 regression(s)" in same.stdout and "Verdicts that changed" not in same.stdout
    assert "| measurement" not in same.stdout  # no empty table when nothing changed
    failed = magbench("compare", str(base), str(slowed))
    assert failed.returncode == 1 and "REGRESSION" in failed.stdout
    assert re.search(r"regression\(s\) beyond noise and tolerance: .*beir:reference", failed.stdout), failed.stdout
    assert "deliberately slowed" in (slowed / "report.md").read_text()


def test_compare_refuses_unrelated_runs_and_old_results(quick_run, beir_runs, tmp_path):
    out, _ = quick_run
    unrelated = magbench("compare", str(out), str(beir_runs[0]))
    assert unrelated.returncode == 2 and "share no measurement" in unrelated.stdout
    old = json.loads((out / "results.json").read_text())
    del old["schema"]  # a results.json written before the schema was versioned
    (tmp_path / "results.json").write_text(json.dumps(old))
    refused = magbench("compare", str(out), str(tmp_path))
    assert refused.returncode == 2 and refused.stdout == ""
    assert "has results schema 1; this magbench reads schema 3" in refused.stderr


def test_run_on_a_beir_directory(tmp_path):
    dataset = save_beir(needles_evalset(60, 4, seed=5), tmp_path / "mini-beir")
    done = magbench(
        "run",
        "--dataset",
        str(dataset),
        "--encoder",
        "mock",
        "--systems",
        "reference,flat-numpy",
        "--out",
        str(tmp_path / "out"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["beir"]
    assert {r["system"] for r in rows} == {"reference", "flat-numpy"}
    assert all(0 <= r["ndcg_at_10"] <= 1 and r["queries"] == 4 for r in rows)


def test_demo_with_the_mock_encoder():
    done = magbench("demo", "--encoder", "mock", "--size", "300")
    assert done.returncode == 0, done.stderr
    assert "needles in the top 3: 5/5" in done.stdout and "groups" in done.stdout
    cosines = re.findall(r"  \d\.\d{3}\s+(\d\.\d{3})\s+\d\s", done.stdout)  # each best hit's cosine column
    assert len(cosines) == 5 and len(set(cosines)) > 1  # not the same number for every hit
    assert "(group_capacity: the size past which a write splits a group" in done.stdout  # why a group may exceed it
    scores = [float(s) for s in re.findall(r"  (\d\.\d{3})\s+\d\.\d{3}\s+\d\s", done.stdout)]
    assert len(scores) == 5
    if max(scores) > 1:  # the caption promises no bound a printed score passes
        assert "1 for a hit first in both" not in done.stdout and "may pass 1" in done.stdout


def test_bad_arguments_exit_with_usage():
    done = magbench("run", "--encoder", "word2vec")
    assert done.returncode == 2 and "invalid choice" in done.stderr


@pytest.mark.parametrize(("command", "needed"), [("run", []), ("compare", ["A", "B"]), ("demo", [])])
def test_an_unknown_flag_is_shown_with_its_commands_usage(command, needed):
    done = magbench(command, *needed, "--bogus-flag")
    assert done.returncode == 2
    assert done.stderr.startswith(f"usage: magbench {command} "), done.stderr
    assert f"magbench {command}: error: unrecognized arguments: --bogus-flag" in done.stderr


def test_a_run_shows_each_step_with_elapsed_time_when_not_on_a_terminal(quick_run):
    _, done = quick_run  # captured output is not a terminal
    steps = [line for line in done.stderr.splitlines() if re.match(r"\[\s*\d+\.\d s\] ", line)]
    assert any("scaling (fixed): build: kmeans N=10,000" in line for line in steps), done.stderr[-2000:]
    counted = [line for line in steps if re.search(r"\(\d+/\d+; |still running", line)]
    assert counted and all(re.search(r"; run: about (\d+ h )?\d+ (s|min) left\)", line) for line in counted)
    assert any("scaling (fixed): timing passes over" in line for line in steps)
    assert any("real text" in line for line in steps)


def test_a_run_of_chosen_experiments_measures_only_them(tmp_path):
    listed = magbench("run", "--list-experiments")
    assert listed.returncode == 0 and re.search(r"^judges\s+judges\s+default\s", listed.stdout, re.MULTILINE)
    assert listed.stdout.split()[:4] == ["experiment", "section", "runs", "on"]  # a header row first
    done = magbench("run", "--quick", "--encoder", "mock", "--experiments", "judges", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["judges"] and not results["scaling"] and not results["needles"]
    assert all(v["verdict"] != "NOT MEASURED" for v in results["claims"] + results["targets"])
    wrong = magbench("run", "--experiments", "dialogue")
    assert wrong.returncode == 2 and "runs on dialogue data, not on this run's (default)" in wrong.stderr
