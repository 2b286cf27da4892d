"""The perf suite's summary, `reports/perf-summary.json` (written by `tests/bench/conftest.py`): every figure of a
run, and each ratio of a figure to its baseline measured in the same run (raw Chroma, NumPy, the raw vectors) with
the spread of its paired rounds, so that `magbench compare` tells a ratio that moved from one that jittered
(`verdicts/perf_compare.py`). A ratio cancels most of what a busier machine does to both sides; its rounds' spread
is what is left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import TypeAdapter, ValidationError

SCHEMA = "magbench-perf-summary"
VERSION = 1
Better = Literal["higher", "lower"]
RATES = ("_per_s", "_qps")
"""Figure names that end so are rates (more is better); any other figure (seconds, bytes, a multiple of the raw
vectors) is better lower."""


class PerfSummaryError(ValueError):
    """A file that is not a perf summary this version reads: missing, not JSON, another schema, or malformed."""


@dataclass(frozen=True)
class Ratio:
    """A figure over its baseline's in the same run: the ratio of their medians, the quartiles of the ratios of
    their paired rounds (both the ratio itself where the figures had no paired rounds), and which way is better
    (that of the numerator)."""

    value: float
    low: float
    high: float
    better: Better


@dataclass(frozen=True)
class PerfSummary:
    figures: dict[str, float]
    ratios: dict[str, Ratio]

    @classmethod
    def of(
        cls,
        figures: Mapping[str, float],
        ratios: Mapping[str, tuple[str, str]],
        rounds: Mapping[str, Sequence[float]],
    ) -> PerfSummary:
        """The summary of a run's `figures` and of each ratio (name → numerator, denominator) whose figures were
        both recorded, each with the paired `rounds` recorded for it, if any."""
        made = {}
        for name, (numerator, denominator) in ratios.items():
            if numerator in figures and denominator in figures:
                value = figures[numerator] / figures[denominator]
                low, high = np.quantile(rounds[name], [0.25, 0.75]).tolist() if rounds.get(name) else (value, value)
                made[name] = Ratio(value, low, high, better_of(numerator))
        return cls(dict(figures), made)

    def to_json(self) -> str:
        return json.dumps({"schema": SCHEMA, "version": VERSION, **asdict(self)}, indent=2)

    def write(self, path: Path) -> None:
        path.write_text(self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path) -> PerfSummary:
        """Read a summary, refusing anything else with a message that says what to do."""
        found = _schema_of(Path(path))
        if found is None:
            raise PerfSummaryError(f"{path} is not a perf summary: give the reports/perf-summary.json of a perf run")
        body, version = found
        if version != VERSION:
            raise PerfSummaryError(
                f"{path} is a perf summary of version {version}, not {VERSION}: run the perf suite again"
            )
        try:
            return _ADAPTER.validate_python({"figures": body.get("figures"), "ratios": body.get("ratios")})
        except ValidationError as error:
            raise PerfSummaryError(f"{path} is a malformed perf summary: {error}") from error

    @staticmethod
    def is_one(path: str | Path) -> bool:
        """Whether `path` is a perf summary file (of any version), not a benchmark run's results."""
        return _schema_of(Path(path)) is not None


def better_of(figure: str) -> Better:
    return "higher" if figure.endswith(RATES) else "lower"


def _schema_of(path: Path) -> tuple[dict[str, object], object] | None:
    """The body and version of a perf summary file; None for any other file or a folder."""
    if not path.is_file():
        return None
    try:
        body = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("schema") != SCHEMA:
        return None
    return body, body.get("version")


_ADAPTER = TypeAdapter(PerfSummary)
