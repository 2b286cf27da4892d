"""A report's table: its rows as measured (written to CSV as they are), and the columns a reader sees, each
named with its unit and formatted alike from row to row (`formats`)."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from harness.output.formats import MISSING, Format, figure


@dataclass(frozen=True)
class Column:
    """What a reader sees of one or more fields of a row: several are shown as "a / b" under one header."""

    header: str
    """The column's name with its unit, e.g. "p50 (ms)"."""
    keys: tuple[str, ...]
    format: Format = figure

    def shown(self, row: dict[str, Any]) -> str:
        values = [self.format(row.get(key)) for key in self.keys]
        return MISSING if all(v == MISSING for v in values) else " / ".join(values)


def column(header: str, *keys: str, format: Format = figure) -> Column:
    return Column(header, keys, format)


@dataclass(frozen=True)
class Table:
    """A titled table with a caption that says what its figures are and what they are measured against."""

    name: str
    """Its CSV file (`name.csv`) and the key it is known by."""
    title: str
    caption: str
    columns: Sequence[Column]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    """What a reader should know of this run's rows in particular (generated from them)."""
    plot: str = ""
    """A figure of the same data shown after the table (its file name), when the run drew it."""
    csv: bool = True
    """Written to `name.csv` (a headline view of rows another table holds is not)."""

    def markdown(self, *, level: int = 2, plots: Sequence[Path] = ()) -> list[str]:
        lines = [f"{'#' * level} {self.title}", ""]
        lines += [self.caption, ""] if self.caption else []
        lines += [self.render(), ""]
        lines += [*(f"- {note}" for note in self.notes), ""] if self.notes else []
        drawn = [p for p in plots if p.name == self.plot]
        lines += [f"![{p.stem}]({p.name})" for p in drawn] + ([""] if drawn else [])
        return lines

    def render(self) -> str:
        """The table in GitHub markdown, every cell already formatted (no number parsing by tabulate)."""
        cells = [[c.shown(row) for c in self.columns] for row in self.rows]
        return str(tabulate(cells, headers=[c.header for c in self.columns], tablefmt="github", disable_numparse=True))


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Every field of every row, unformatted."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(dict.fromkeys(key for row in rows for key in row)))
        writer.writeheader()
        writer.writerows(rows)
