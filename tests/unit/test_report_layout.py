"""What a new user reads first: the reading and the verdicts, then the headline tables, then the details; every
table with its units and what it is measured against; numbers in one format; nothing a run could not judge
spread over many rows."""

import ast
import dataclasses
import re
import sys
from pathlib import Path

import pytest

import harness.experiments
from harness.experiments.registry import registered
from harness.measure import plan, tenants, timing, tokens
from harness.output import sections
from harness.output.report import write_report
from harness.output.results import Operation, RunResults, StreamCheckpoint, StreamRow
from harness.verdicts.claims import evaluate
from tests.results_factory import measured, run_info

SIZES = (1_000, 10_000, 25_000, 100_000)


def full_run() -> RunResults:
    scaling = [
        *(measured("reference", n, 0.3, recall=0.97) for n in SIZES),
        *(measured("flat-chroma", n, 1.5 + n / 1e5) for n in SIZES),
        *(measured("flat-numpy", n, n / 10_000) for n in SIZES),
        *(measured("faiss-ivf", n, 0.2) for n in SIZES),
        *(measured("reference", 100_000, 0.3, recall=0.97, params={"target_recall": t}) for t in (0.9, 0.95, 0.99)),
        measured("faiss-ivf", 100_000, 0.05, recall=0.9, params={"nprobe": 1}),
        measured("faiss-ivf", 100_000, 1390.0, recall=1.0, params={"nprobe": 64}),
    ]
    run = RunResults(run=run_info(), scaling=scaling, needles=[measured("reference", 200, [1.0] * 5)])
    claims, targets = evaluate(run)
    return RunResults(run=run.run, scaling=scaling, needles=run.needles, claims=claims, targets=targets)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return write_report(out, full_run()).read_text()


def test_the_reading_and_verdicts_come_first_then_the_headlines_then_the_details(report):
    order = ["## Reading", "## Verdicts", "### Published claims", "### Targets for the reference engine",
             "## Headline figures", "## Details", "### Scaling (synthetic)", "### What a verdict means"]  # fmt: skip
    positions = [report.index(heading) for heading in order]
    assert positions == sorted(positions)


def test_the_engines_targets_leave_the_peers_to_their_own_table(report):
    targets = report[report.index("### Targets for the reference engine") : report.index("## Headline figures")]
    assert not re.search(r"^\|[^|]+\| faiss-ivf", targets, re.MULTILINE)
    peers = report[report.index("### Peers measured against the engine's targets") :]
    assert re.search(r"\| flat-latency-fixed\s+\| faiss-ivf", peers)


def test_a_hoped_for_failure_is_said_to_be_one(report):
    reading = report[report.index("## Reading") : report.index("## Verdicts")]
    assert "1 of them as hoped" in reading and "As hoped, `flat-linear` does not hold for `reference`" in reading
    assert "NOT SUPPORTED (as hoped)" in report


def test_verdicts_not_measured_for_one_reason_fold_into_one_row(report):
    verdicts = report[report.index("### Published claims") : report.index("### Targets")]
    rows = [line for line in verdicts.splitlines() if "NOT MEASURED" in line]
    assert len(rows) == len({line.split("|")[1] for line in rows})  # one row per claim
    assert any("reference-chroma, flat-chroma" in line or "reference-no-entities, flat-chroma" in line for line in rows)


def test_numbers_read_alike_without_exponents_and_headers_carry_units(report):
    assert not re.search(r"\d[eE][+-]\d", report)
    assert "1,390" in report  # faiss-ivf's slowest setting, not 1.39e+03
    for header in ("p50 (ms)", "build (s)", "ingest (cells/s)", "recall@10 vs exact", "× faster than exact"):
        assert re.search(rf"\| {re.escape(header)}\s+\|", report), header
    assert not re.search(r"CI -|–-", report)


def test_a_sweep_that_reads_the_same_at_every_setting_says_so(report):
    assert "`reference` at N = 100,000 read the same recall@10 (0.970) and bytes at every `target_recall`" in report


def test_the_captions_read_the_plans_constants(report):
    from harness.measure.plan import FIXED_CLUSTERS, NEEDLE_DOCS, NEEDLES
    from harness.measure.timing import WARMUP_QUERIES

    assert f"{FIXED_CLUSTERS} clustered topics at every N" in report
    assert f"after {WARMUP_QUERIES} untimed warm-up queries" in report
    assert f"Needles: {NEEDLES} in a haystack of {NEEDLE_DOCS} documents" in report


def test_stream_recall_says_what_it_is_measured_against_and_names_each_systems_queries(tmp_path):
    checkpoint = StreamCheckpoint("end", 1_000, 900, 0.62, 0.4, 0.3, 0)
    rows = [
        StreamRow("agent-stream", system, "d", "minilm", 1_000, 100, "a stream", query,
                  [Operation("write", [1_000_000, 2_000_000], 30), Operation("search", [400_000] * 3)], [checkpoint])
        for system, query in (("reference", "text + vector"), ("reference-dense", "vector"))
    ]  # fmt: skip
    text = write_report(tmp_path, RunResults(run=run_info(), streaming=rows)).read_text()
    assert "exact dense neighbours of each held-out query's vector" in text
    assert re.search(r"\| reference\s+\| text \+ vector", text) and re.search(r"\| reference-dense\s+\| vector", text)
    assert "write (ms, p50 / p99)" in text and "1.50 / 1.99" in text
    assert (tmp_path / "streaming.png").is_file()


def test_no_caption_retypes_a_constant_of_what_a_run_measures():
    """A number in a section's text that equals a constant of the plan or of the experiments is that constant
    retyped: it must be read (an f-string), or it goes stale when the plan changes. 1 is every unit and a float32's
    4 bytes are no plan's."""
    experiments = {sys.modules[e.run.__module__] for e in registered()}
    modules = [plan, timing, tenants, tokens, *experiments]
    held = {
        float(value)
        for module in modules
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, int | float) and not isinstance(value, bool)
    }
    held |= {float(f.default) for f in dataclasses.fields(plan.RunPlan) if type(f.default) in (int, float)}
    retyped = []
    folders = (Path(sections.__file__).parent, Path(harness.experiments.__file__).parent)
    for path in sorted(path for folder in folders for path in folder.glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                text = node.value.replace("4 bytes per dimension", "")
                for number in re.findall(r"(?<![\w.@])\d+(?:,\d{3})*(?:\.\d+)?(?![\w.]\w)", text):
                    if float(number.replace(",", "")) in held - {1.0}:
                        retyped.append(f"{path.name}:{node.lineno}: {number} in {node.value!r}")
    assert retyped == []
