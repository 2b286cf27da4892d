"""Progress a user can see: a bar on a terminal (with its time left), and elsewhere (tox logs, CI, `| tee`)
one line per step with the time elapsed since the run started and the step's time left at its pace so far,
plus a line every `HEARTBEAT` seconds while one step (a
k-means or HNSW build, say) is still running, so a long build never looks like a hang."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")
STARTED = time.perf_counter()
HEARTBEAT = 30.0
Progress = Callable[[Iterable[Any], str], Iterable[Any]]
"""What experiments take: `progress`, or `silent` where nobody watches."""


def progress(items: Iterable[T], label: str, *, unit: str = "step") -> Iterable[T]:
    """`items`, reported as they are taken: a tqdm bar on a terminal, timestamped lines otherwise."""
    items = list(items)
    if sys.stderr.isatty():
        bar: Iterable[T] = tqdm(items, desc=label, unit=unit, leave=False, file=sys.stderr)
        return bar
    return _lines(items, label)


def silent(items: Iterable[T], label: str) -> Iterable[T]:
    """No reporting (tests, library use)."""
    return items


def _say(message: str) -> None:
    print(f"[{time.perf_counter() - STARTED:7.1f} s] {message}", file=sys.stderr, flush=True)


def _lines(items: list[T], label: str) -> Iterator[T]:
    started = time.perf_counter()
    for number, item in enumerate(items, 1):
        name = str(getattr(item, "name", item))[:80]  # an evaluation set by its name, not its contents
        _say(f"{label}: {name} ({number}/{len(items)}{_time_left(started, number - 1, len(items))})")
        done = threading.Event()
        threading.Thread(target=_heartbeat, args=(f"{label}: {name}", done), daemon=True).start()
        try:
            yield item
        finally:
            done.set()
    _say(f"{label}: done")


def _heartbeat(step: str, done: threading.Event) -> None:
    """A line every `HEARTBEAT` seconds until the step is done."""
    started = time.perf_counter()
    while not done.wait(HEARTBEAT):
        _say(f"{step} still running ({time.perf_counter() - started:.0f} s)")


def _time_left(started: float, done: int, total: int) -> str:
    """ ", about N s left" in this step at the pace so far (nothing before the first item is done)."""
    if not done:
        return ""
    left = (time.perf_counter() - started) / done * (total - done)
    return f", about {left:.0f} s left" if left < 120 else f", about {left / 60:.0f} min left"
