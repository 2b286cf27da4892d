"""`magbench run`: every experiment of a plan, the claims' verdicts, and the written report."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import psutil

from harness.data.dialogue import SPEAKER_CAPTIONS, TurnFormat
from harness.data.spec import DatasetSpec
from harness.experiments.answers import Answering
from harness.experiments.definition import RunContext
from harness.experiments.registry import selected
from harness.measure.pace import measure_pace
from harness.measure.plan import RunPlan
from harness.output.progress import RunProgress
from harness.output.report import summary_table, write_report
from harness.output.results import Machine, RunInfo, RunResults, Sections
from harness.systems.registry import unregistered
from harness.verdicts.claims import UNMEASURED, evaluate
from reference.encoders import Encoder, make_encoder

SOURCE = Path(__file__).resolve().parents[1]
"""Where this code lives: read for the commit it runs (never written to: an installed copy may be read-only)."""
UNKNOWN = "unknown"
"""What a git question reads where git cannot answer (no git, or not a clone)."""
REPORTS = Path("reports")
"""Reports go under the working directory (or where --out says)."""


def run_benchmark(
    plan: RunPlan,
    *,
    out: Path | None,
    dataset: DatasetSpec | None,
    encoder: str | None,
    systems: tuple[str, ...] | None,
    command: str,
    corpus: str = "stdlib",
    turn_format: TurnFormat = SPEAKER_CAPTIONS,
    stream_size: int | None = None,
    only: Sequence[str] | None = None,
    errata: Path | None = None,
    answering: Answering | None = None,
) -> tuple[Path, RunResults]:
    """Run the registered experiments for the data asked for (the default run, or `dataset`: `locomo:FILE`,
    `longmemeval:FILE`, `beam:DIR`, or a BEIR directory), or only those `only` names; write and return the
    report."""
    started = time.time()
    run_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = out or REPORTS / run_id
    encoders = _encoders((encoder,) if encoder else plan.encoders)
    context = RunContext(plan, encoders, dataset, systems, corpus, turn_format, stream_size)
    context.errata, context.answering = errata, answering
    chosen = selected(context.data, only)
    context.chosen = tuple(e.name for e in chosen)
    planned = {e.name: e.work(context) for e in chosen}
    progress = RunProgress(planned, unplanned=unregistered(systems or ()), start_pace=measure_pace())
    context.progress = progress
    sections: dict[str, list[Any]] = defaultdict(list)
    for experiment in chosen:
        with progress.experiment(experiment.name):
            sections[experiment.section] += experiment.run(context)
    info = RunInfo(
        id=run_id,
        started=datetime.fromtimestamp(started, UTC).isoformat(),
        duration_s=time.time() - started,
        command=command,
        commit=_git("rev-parse", "HEAD"),
        dirty=uncommitted(),
        machine=_machine(),
        plan=context.plan,
        encoders={name: e.name for name, e in encoders.items()},
        dataset=None if dataset is None else str(dataset),
        dataset_info=context.dataset_info,
        load_average=psutil.getloadavg(),
        took=progress.taken,
        planned=progress.planned,
        pace=progress.start_pace,
        systems=systems,
    )
    results = RunResults(run=info, **cast(Sections, sections))
    claims, targets = evaluate(results)
    if dataset or only:  # a dataset or a choice measures few claims: leave out what it could not judge
        claims, targets = ([v for v in verdicts if v.verdict != UNMEASURED] for verdicts in (claims, targets))
    results = replace(results, claims=claims, targets=targets)
    report = write_report(out, results)
    print(summary_table(results) if results.claims or results.targets else "")
    print(f"\nreport: {report}")
    print(progress.summary(info.load_average))
    return report, results


def _encoders(names: Iterable[str]) -> dict[str, Encoder]:
    return {name: make_encoder(name) for name in names}


def _git(*args: str, source: Path = SOURCE) -> str:
    try:
        return subprocess.run(["git", *args], cwd=source, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN


def uncommitted(source: Path = SOURCE) -> bool:
    """Whether the code run differs from its commit: a tracked file changed. An untracked file (the adapter the
    README asks a user to write, a report) is no change to the commit measured."""
    return _git("status", "--porcelain", "--untracked-files=no", source=source) not in ("", UNKNOWN)


def _machine() -> Machine:
    versions: dict[str, str | None] = {}
    for package in ("numpy", "chromadb", "faiss-cpu", "scikit-learn", "sentence-transformers", "torch"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return Machine(
        platform=platform.platform(),
        processor=platform.processor() or platform.machine(),
        cpus=os.cpu_count(),
        python=platform.python_version(),
        packages=versions,
    )
