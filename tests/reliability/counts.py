"""Each reliability test records what it ran (trials, operations, inputs) in one JSON file: the file
MAGBENCH_RELIABILITY_REPORT names (by default in the test session's temporary folder, `tests/conftest.py`)."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

REPORT = "MAGBENCH_RELIABILITY_REPORT"
"""The variable that names the file."""


def record(test: str, **counts: Any) -> None:
    report = Path(os.environ[REPORT])
    report.parent.mkdir(parents=True, exist_ok=True)
    with open(report.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers write concurrently
        data = json.loads(report.read_text()) if report.exists() else {}
        data[test] = counts
        report.write_text(json.dumps(data, indent=1, sort_keys=True))
