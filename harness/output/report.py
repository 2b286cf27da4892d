"""Write a run's report: `report.md`, `results.json` (everything, raw latencies included), a CSV per table and
the PNG figures. Every figure in them comes from the run's measurements.

`report.md` reads from the top: what was run, the reading and the verdicts, the headline tables (a section's
largest size), then the details (every table of every experiment, `harness.experiments`), the peers measured against the
engine's targets, each claim in full, and how the run was timed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np
from tabulate import tabulate

from harness.experiments.registry import figures, headline_tables, report_tables
from harness.output.reading import claim_list, kinds, meanings, reading, verdict_table
from harness.output.results import RunResults
from harness.output.tables import Table, write_csv
from harness.verdicts.claims import decides_a_verdict

VERDICT_TITLES = {
    "published claims": "Published claims",
    "field claims": "The field's published claims",
    "targets": "Targets for the reference engine",
}


def write_report(out: Path, results: RunResults) -> Path:
    """Everything of one run into `out/`; returns the path of report.md."""
    out.mkdir(parents=True, exist_ok=True)
    details = [table for render in report_tables() for table in render(results)]
    headlines = [table for render in headline_tables() for table in render(results)]
    for table in headlines + details:
        if table.csv and table.rows:
            write_csv(out / f"{table.name}.csv", table.rows)
    for name, verdicts in (("claims", results.claims), ("targets", results.targets)):
        if verdicts:
            write_csv(out / f"{name}.csv", [asdict(v) for v in verdicts])
    figures = draw(out, results)
    (out / "results.json").write_text(results.to_json(), encoding="utf-8")
    report = out / "report.md"
    report.write_text(markdown(results, headlines, details, figures), encoding="utf-8")
    return report


def draw(out: Path, results: RunResults) -> list[Path]:
    """The figures this run's measurements make (each experiment's, `Experiment.figures`)."""
    return [path for figure in figures() for path in figure(out, results)]


def summary_table(results: RunResults) -> str:
    """The end-of-run summary printed to the terminal."""
    rows = [
        [v.claim, v.system + (" (peer)" if v.peer else ""), v.shown, v.measured]
        for v in [*results.claims, *results.targets]
    ]
    return str(
        tabulate(rows, headers=["claim / target", "system", "verdict", "measured"], maxcolwidths=[None, None, None, 80])
    )


def markdown(results: RunResults, headlines: list[Table], details: list[Table], figures: list[Path]) -> str:
    lines = [*header(results), "## Reading", "", *reading(results), ""]
    by_kind = kinds(results)
    if any(by_kind[kind] for kind in VERDICT_TITLES):
        lines += ["## Verdicts", ""]
        for kind, title in VERDICT_TITLES.items():
            if by_kind[kind]:
                lines += [f"### {title}", "", verdict_table(by_kind[kind]), ""]
        lines += ["Each claim's statement, source, bar and conditions, and what a verdict means: under Details.", ""]
    if headlines:
        lines += ["## Headline figures", ""]
        for table in headlines:
            lines += table.markdown(level=3)
    lines += ["## Details", ""]
    for table in details:
        lines += table.markdown(level=3, plots=figures)
    if by_kind["peers"]:
        lines += [
            "### Peers measured against the engine's targets",
            "",
            "Other systems held to the same bars as the engine, for comparison: no targets of theirs.",
            "",
            verdict_table(by_kind["peers"]),
            "",
        ]
    if results.claims or results.targets:
        lines += ["### Claims and targets in full", "", *claim_list([*results.claims, *results.targets]), ""]
        lines += ["### What a verdict means", "", *meanings(), ""]
    lines += ["### How this run was timed", "", *timing_lines(results), ""]
    lines += ["Raw per-query latencies, parameters and machine details: `results.json`; tables: `*.csv`.", ""]
    return "\n".join(lines)


def header(results: RunResults) -> list[str]:
    """What was run, where, for how long, on which commit and data."""
    run = results.run
    machine = run.machine
    load = f" (load average {run.load_average[-1]:.1f} over the last 15 min)" if run.load_average else ""
    lines = [
        f"# MagneticBench run {run.id}",
        "",
        f"`{run.command}` took {_duration(run.duration_s)} on {machine.cpus} CPUs{load} · commit "
        f"`{run.commit[:12]}`{' (uncommitted changes)' if run.dirty else ''} · Python {machine.python} · "
        f"{machine.platform}",
        "",
    ]
    facts = [
        *(f"- {key}: `{value}`" for key, value in run.dataset_info.items()),
        *(
            f"- **deliberately slowed** (`--slow-down`, to check `compare`): `{system}` ×{factor:g}"
            for system, factor in run.plan.slow_down.items()
        ),
    ]
    return lines + ([*facts, ""] if facts else [])


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def timing_lines(results: RunResults) -> list[str]:
    """How latency was timed, how much the machine moved between passes, and which measurements were noisy."""
    passes = {
        section: (min(counts), max(counts))
        for section in results.TIMED_SECTIONS
        if (counts := [len(m.pass_latencies_ns) for m in getattr(results, section)])
    }
    spreads = np.asarray([m.pass_spread for m in results.measurements().values() if len(m.pass_latencies_ns) > 1])
    lines = []
    plan = results.run.plan
    if passes:
        more = (
            f"; more, up to {plan.max_passes}, while the medians are unsettled" if plan.max_passes > plan.passes else ""
        )
        lines.append(
            "- timing passes (each setting's queries back to back, the settings in a rotating order, "
            f"on one core{more}): "
            + ", ".join(
                f"{section} {low}" + (f"–{high}" if high > low else "") for section, (low, high) in passes.items()
            )
        )
    if spreads.size:
        lines.append(
            f"- between-pass spread of a measurement's median (slowest / fastest pass − 1): median "
            f"{np.median(spreads):.1%}, 90th percentile {np.percentile(spreads, 90):.1%}, largest {spreads.max():.1%}"
        )
    noisy = [(key, m) for key, m in results.measurements().items() if m.noisy]
    deciding = [(key, m) for key, m in noisy if decides_a_verdict(key.section, key.system)]
    if deciding:
        lines.append(
            "- **noisy measurements** (one timing pass stood out beyond the run's noise; the verdicts they decide "
            "say so): "
            + "; ".join(
                f"{key.section} `{m.system}` at {m.n_docs:,}"
                + (f" ({key.params})" if key.params else "")
                + f": {m.passes_text()}"
                for key, m in deciding
            )
        )
    if others := Counter(key.section for key, _ in noisy if not decides_a_verdict(key.section, key.system)):
        lines.append(
            "- noisy measurements whose latency decides no verdict: "
            + ", ".join(f"{count} in {section}" for section, count in others.items())
        )
    run = results.run
    if run.took and run.pace is not None:
        pace = run.pace
        lines.append(
            f"- each experiment's seconds, planned at the pace a probe measured before the run (×{pace.median:.2f} "
            f"the plan's, ×{pace.low:.2f}–{pace.high:.2f} over its passes) → taken: "
            + ", ".join(
                f"{name} {run.planned.get(name, 0.0) * pace.median:,.0f} → {took:,.0f}"
                for name, took in run.took.items()
            )
        )
    machine = run.machine
    packages = ", ".join(f"{name} {version}" for name, version in machine.packages.items() if version)
    lines.append(f"- machine: {machine.processor}, {machine.cpus} CPUs; {packages}")
    return lines
