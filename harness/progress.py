"""Progress a user can see: a bar on a terminal, and elsewhere (tox logs, CI, `| tee`) one line per step
with the time elapsed since the run started, so a long build never looks like a hang."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")
STARTED = time.perf_counter()


def progress(items: Iterable[T], label: str, *, unit: str = "step") -> Iterable[T]:
    """`items`, reported as they are taken: a tqdm bar on a terminal, timestamped lines otherwise."""
    items = list(items)
    if sys.stderr.isatty():
        return tqdm(items, desc=label, unit=unit, leave=False, file=sys.stderr)
    return _lines(items, label)


def _lines(items: list[T], label: str) -> Iterator[T]:
    for number, item in enumerate(items, 1):
        name = str(getattr(item, "name", item))[:80]  # an evaluation set by its name, not its contents
        print(
            f"[{time.perf_counter() - STARTED:7.1f} s] {label}: {name} ({number}/{len(items)})",
            file=sys.stderr,
            flush=True,
        )
        yield item
    print(f"[{time.perf_counter() - STARTED:7.1f} s] {label}: done", file=sys.stderr, flush=True)
