"""Each reliability test records what it ran (trials, operations, inputs) in reports/reliability.json."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

REPORT = Path(__file__).resolve().parents[2] / "reports" / "reliability.json"


def record(test: str, **counts: Any) -> None:
    REPORT.parent.mkdir(exist_ok=True)
    with open(REPORT.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers write concurrently
        data = json.loads(REPORT.read_text()) if REPORT.exists() else {}
        data[test] = counts
        REPORT.write_text(json.dumps(data, indent=1, sort_keys=True))
