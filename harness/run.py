"""`magbench run`: every experiment of a plan, the claims' verdicts, and the written report."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Iterable
from dataclasses import asdict, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from reference.encoders import Encoder, make_encoder

from . import experiments
from .claims import UNMEASURED, evaluate
from .corpus import Corpus
from .dataset_spec import DatasetSpec
from .dialogue import SPEAKER_CAPTIONS, TurnFormat
from .plan import DIALOGUE_SYSTEMS, RunPlan
from .progress import progress
from .report import summary_table, write_report
from .results import Machine, Measurement, RunInfo, RunResults, Sections

SOURCE = Path(__file__).resolve().parents[1]
"""Where this code lives: read for the commit it runs (never written to: an installed copy may be read-only)."""
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
) -> tuple[Path, RunResults]:
    """Run the plan, or only `dataset` when given (`locomo:FILE`, `longmemeval:FILE`, `beam:DIR`, or a
    BEIR directory); write and return the report."""
    started = time.time()
    run_id = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = out or REPORTS / run_id
    if systems:
        plan = replace(
            plan,
            systems=systems,
            needle_systems=systems,
            realtext_systems=systems,
            stream_systems=systems,
            loop_systems=systems,
        )
    encoders = _encoders((encoder,) if encoder else plan.encoders)
    sections: Sections = {}
    name, chosen = next(iter(encoders.items()))
    dataset_info: dict[str, Any] = {}
    if dataset and dataset.dialogue:
        data, sections["dialogue"] = experiments.dialogue(
            dataset, systems or DIALOGUE_SYSTEMS, name, chosen, progress, turn_format=turn_format
        )
        dataset_info = {"file": str(data.path), "sha256": data.sha256, "turn_format": asdict(turn_format)}
    elif dataset and dataset.kind == "beam":
        found, sections["realtext"] = experiments.realtext(
            plan, str(dataset), systems or plan.realtext_systems, name, chosen, progress
        )
        whole = stream_size or len(found.passages)  # the ordered real-text runbook over every passage
        sections["streaming"] = experiments.streaming(plan, found, chosen, progress, cells=whole)
        dataset_info = _corpus_info(found, sections["realtext"])
    elif dataset:
        sections["beir"] = experiments.beir(plan, dataset.location, plan.systems, name, chosen, progress)
    else:
        sections["scaling"] = experiments.scaling(plan, plan.systems, progress)
        growing_systems = tuple(s for s in plan.growing_systems if s in plan.systems)
        sections["growing"] = experiments.scaling(plan, growing_systems, progress, regime="growing")
        sections["needles"] = experiments.needles(plan, plan.needle_systems, encoders, progress)
        sections["grouping"] = experiments.grouping(plan, encoders, progress)
        sections["judges"] = experiments.judges(progress)
        text_encoder = encoders.get("minilm", chosen)
        found, sections["realtext"] = experiments.realtext(
            plan, corpus, plan.realtext_systems, text_encoder.name, text_encoder, progress
        )
        sections["streaming"] = [
            *experiments.streaming(plan, found, text_encoder, progress, cells=stream_size),
            *experiments.agent_loop(plan, progress),
        ]
        dataset_info = _corpus_info(found, sections["realtext"])
    info = RunInfo(
        id=run_id,
        started=datetime.fromtimestamp(started, UTC).isoformat(),
        duration_s=time.time() - started,
        command=command,
        commit=_git("rev-parse", "HEAD"),
        dirty=bool(_git("status", "--porcelain")),
        machine=_machine(),
        plan=plan,
        encoders={name: e.name for name, e in encoders.items()},
        dataset=None if dataset is None else str(dataset),
        dataset_info=dataset_info,
    )
    results = RunResults(run=info, **sections)
    claims, targets = evaluate(results)
    if dataset:  # one dataset measures few claims (the real-text targets): leave out what it could not judge
        claims, targets = ([v for v in verdicts if v.verdict != UNMEASURED] for verdicts in (claims, targets))
    results = replace(results, claims=claims, targets=targets)
    report = write_report(out, results)
    print(summary_table(results) if results.claims or results.targets else "")
    print(f"\nreport: {report}")
    return report, results


def _corpus_info(corpus: Corpus, measured: list[Measurement]) -> dict[str, Any]:
    """What the header says of a real-text corpus: its source, its passages and how the run used them, and
    the SHA-256 of its files (none for text generated from this interpreter)."""
    largest = max((m.n_docs for m in measured), default=0)
    held_out = max((m.queries for m in measured), default=0)
    used = f"{len(corpus.passages):,} ({largest:,} in the largest memory, {held_out} held out as queries)"
    return {"corpus": corpus.source, "passages": used} | ({"sha256": corpus.sha256} if corpus.sha256 else {})


def _encoders(names: Iterable[str]) -> dict[str, Encoder]:
    return {name: make_encoder(name) for name in names}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=SOURCE, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


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
