"""Progress a user can see, with the time the whole run has left.

A run knows its work before it starts: each experiment's planned seconds (`Experiment.work`: what it took on the
machine the defaults were measured on, scaled by the plan's sizes, systems and streams). As experiments finish,
the run learns how much slower or faster this machine goes than planned (`pace`: seconds taken over seconds planned, an
experiment still running counted once it has taken longer than planned), and the time left is the work not yet
done at that pace. On a terminal each step is a bar (tqdm) whose postfix gives the run's time left; elsewhere
(tox logs, CI, `| tee`) each step is a line with the time since the run started and the run's time left, plus a
line every `HEARTBEAT` seconds while one step (a k-means or HNSW build, say) is still running, so a long step
never looks like a hang.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from tqdm import tqdm

T = TypeVar("T")
HEARTBEAT = 30.0
PRIOR = 60.0
"""Seconds of planned work the pace starts from (at 1): one experiment that ran over does not make the whole run
read twice as long."""
Progress = Callable[[Iterable[Any], str], Iterable[Any]]
"""What experiments take: a `RunProgress`, or `silent` where nobody watches."""


def silent(items: Iterable[T], label: str) -> Iterable[T]:
    """No reporting (tests, library use)."""
    return items


class RunProgress:
    """The steps of a run as they are taken, and the run's time left (`time_left`)."""

    def __init__(self, planned: Mapping[str, float], *, clock: Callable[[], float] = time.perf_counter) -> None:
        self.planned = dict(planned)
        """Each experiment's planned seconds, in the order the run runs them."""
        self.clock = clock
        self.started = clock()
        self.taken: dict[str, float] = {}
        """Seconds each finished experiment took."""
        self.current: tuple[str, float] | None = None
        """The experiment running, and when it started."""

    @contextmanager
    def experiment(self, name: str) -> Iterator[None]:
        """Count the time of one experiment of the plan."""
        self.current = (name, self.clock())
        try:
            yield
        finally:
            self.taken[name] = self.clock() - self.current[1]
            self.current = None

    def pace(self) -> float:
        """Seconds taken per second planned so far (1 before anything is known)."""
        taken = sum(self.taken.values())
        planned = sum(self.planned.get(name, 0.0) for name in self.taken)
        if self.current is not None:
            name, since = self.current
            running, plan = self.clock() - since, self.planned.get(name, 0.0)
            if running > plan:  # it has taken at least this long
                taken, planned = taken + running, planned + plan
        return (taken + PRIOR) / (planned + PRIOR)

    def time_left(self) -> float:
        """Seconds the run has left: what the running experiment has left and the experiments still to come, at
        the pace so far (a running experiment that has overrun its plan is given a tenth more of what it took)."""
        pace = self.pace()
        left = sum(self.planned[name] for name in self.planned if name not in self.taken) * pace
        if self.current is not None:
            name, since = self.current
            running = self.clock() - since
            expected = max(self.planned.get(name, 0.0) * pace, running * 1.1)
            left += expected - running - self.planned.get(name, 0.0) * pace
        return max(left, 0.0)

    def summary(self, load_average: tuple[float, ...] | None = None) -> str:
        """What the run took against its plan, and how loaded the machine was."""
        took = self.clock() - self.started
        planned = sum(self.planned.values())
        load = f"; load average {' / '.join(f'{x:.1f}' for x in load_average)} (1, 5, 15 min)" if load_average else ""
        return f"the run took {duration(took)} against {duration(planned)} planned{load}"

    def left_text(self) -> str:
        return f"run: about {duration(self.time_left())} left"

    def __call__(self, items: Iterable[T], label: str) -> Iterable[T]:
        """`items`, reported as they are taken: a bar on a terminal, timestamped lines otherwise."""
        listed = list(items)
        if sys.stderr.isatty():
            return self._bar(listed, label)
        return self._lines(listed, label)

    def _bar(self, items: list[T], label: str) -> Iterator[T]:
        with tqdm(items, desc=label, unit="step", leave=False, file=sys.stderr) as bar:
            for item in bar:
                bar.set_postfix_str(self.left_text())
                yield item

    def _lines(self, items: list[T], label: str) -> Iterator[T]:
        for number, item in enumerate(items, 1):
            step = f"{label}: {str(getattr(item, 'name', item))[:80]}"  # an evaluation set by its name
            self.say(f"{step} ({number}/{len(items)}; {self.left_text()})")
            done = threading.Event()
            threading.Thread(target=self._heartbeat, args=(step, done), daemon=True).start()
            try:
                yield item
            finally:
                done.set()
        self.say(f"{label}: done")

    def _heartbeat(self, step: str, done: threading.Event) -> None:
        """A line every `HEARTBEAT` seconds until the step is done."""
        started = self.clock()
        while not done.wait(HEARTBEAT):
            self.say(f"{step} still running ({self.clock() - started:.0f} s; {self.left_text()})")

    def say(self, message: str) -> None:
        print(f"[{self.clock() - self.started:7.1f} s] {message}", file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    """A time span as a person says it: "40 s", "3 min", "1 h 5 min"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"
