"""What the section modules share: the shape of a section's function and the columns every timed table has."""

from __future__ import annotations

from collections.abc import Callable

from harness.output.formats import share
from harness.output.results import RunResults
from harness.output.tables import Table, column

Render = Callable[[RunResults], list[Table]]
"""A section: the run's results in, its tables out (none when the run did not measure it)."""

SYSTEM = column("system", "system")
SIZE = column("N (cells)", "n_docs")
KEY = column("key", "key")
"""Which LoCoMo key a row is scored on: the original or the corrected (`--errata`)."""
P50 = column("p50 (ms)", "latency_p50_ms")
RECALL = column("recall@10 vs exact", "recall_at_10", format=share)
