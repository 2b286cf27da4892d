"""Progress a user can see, with the time the whole run has left.

A run knows its work before it starts: each experiment's planned seconds (`Experiment.work`: what it took on the
machine the defaults were measured on, scaled by the plan's sizes, systems and streams), at the pace a probe
measures before the run (`harness.measure.pace`: a shared machine's load moves it most). As experiments finish,
the run learns how much slower or faster this machine goes than planned (`pace`: seconds taken over seconds planned, an
experiment still running counted once it has taken longer than planned), and the time left is the work not yet
done at that pace. Within an experiment whose work comes in like steps (a dialogue file's conversations,
given as `Steps`), the run also learns from the steps done: the rest are expected to take as long each, which
tells the cost of a system the plan knows nothing of (one from outside the registry) before the experiment ends.
On a terminal each step is a bar (tqdm) whose postfix gives the run's time left; elsewhere (tox logs, CI, `| tee`)
each step is a line with the time since the run started and the run's time left, plus a
line every `HEARTBEAT` seconds while one step (a k-means or HNSW build, say) is still running, so a long step
never looks like a hang.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from tqdm import tqdm

from harness.measure.pace import PLANNED_PACE, Pace

T = TypeVar("T")
HEARTBEAT = 30.0
PRIOR = 60.0
"""Seconds of planned work the pace starts from (at 1): one experiment that ran over does not make the whole run
read twice as long."""
Progress = Callable[[Iterable[Any], str], Iterable[Any]]
"""What experiments take: a `RunProgress`, or `silent` where nobody watches."""


class Steps(list[T]):
    """An experiment's work in like steps (each takes about as long as another): the run's time left learns from
    the steps done."""


def silent(items: Iterable[T], label: str) -> Iterable[T]:
    """No reporting (tests, library use)."""
    return items


class RunProgress:
    """The steps of a run as they are taken, and the run's time left (`time_left`)."""

    def __init__(
        self,
        planned: Mapping[str, float],
        *,
        clock: Callable[[], float] = time.perf_counter,
        unplanned: Sequence[str] = (),
        start_pace: Pace = PLANNED_PACE,
    ) -> None:
        self.planned = dict(planned)
        """Each experiment's planned seconds, in the order the run runs them."""
        self.start_pace = start_pace
        """This machine's pace measured before the run (`measure_pace`): the pace the run starts from."""
        self.clock = clock
        self.started = clock()
        self.taken: dict[str, float] = {}
        """Seconds each finished experiment took."""
        self.current: tuple[str, float] | None = None
        """The experiment running, and when it started."""
        self.unplanned = tuple(unplanned)
        """Systems whose cost the plan does not know (from outside the registry): planned as a registered one, until
        the running experiment's steps tell."""
        self.steps: tuple[int, int] = (0, 0)
        """Of the running experiment's `Steps`: how many are done, of how many."""
        self.plan_said = False
        """Whether the plan has been printed: with the first step, so a run refused before any work prints only why."""

    @contextmanager
    def experiment(self, name: str) -> Iterator[None]:
        """Count the time of one experiment of the plan."""
        self.current, self.steps = (name, self.clock()), (0, 0)
        try:
            yield
        finally:
            self.taken[name] = self.clock() - self.current[1]
            self.current, self.steps = None, (0, 0)

    def done_share(self) -> float:
        """The share of the running experiment's `Steps` done (0 before the first is, or without any)."""
        done, of = self.steps
        return done / of if of else 0.0

    def pace(self) -> float:
        """Seconds taken per second planned so far (1 before anything is known)."""
        taken = sum(self.taken.values())
        planned = sum(self.planned.get(name, 0.0) for name in self.taken)
        if self.current is not None:
            name, since = self.current
            running, plan, share = self.clock() - since, self.planned.get(name, 0.0), self.done_share()
            if share:  # its steps done took this long
                taken, planned = taken + running, planned + plan * share
            elif running > plan:  # it has taken at least this long
                taken, planned = taken + running, planned + plan
        return (taken + PRIOR * self.start_pace.median) / (planned + PRIOR)

    def time_left(self) -> float:
        """Seconds the run has left: what the running experiment has left and the experiments still to come, at
        the pace so far. A running experiment with steps done is expected to take as long per step as they did;
        one without, that has overrun its plan, is given a tenth more of what it took."""
        pace = self.pace()
        left = sum(self.planned[name] for name in self.planned if name not in self.taken) * pace
        if self.current is not None:
            name, since = self.current
            running, share = self.clock() - since, self.done_share()
            expected = running / share if share else max(self.planned.get(name, 0.0) * pace, running * 1.1)
            left += expected - running - self.planned.get(name, 0.0) * pace
        return max(left, 0.0)

    def plan_text(self) -> str:
        """The run's planned time at the pace measured before it, and the range a shared machine's load moves it."""
        expected, low, high = self.start_pace.span(sum(self.planned.values()))
        return (
            f"plan: about {duration(expected)} ({duration(low)}–{duration(high)}): this machine goes "
            f"×{self.start_pace.median:.2f} the pace the plan was measured at, as a probe reads it now; the range is "
            "the probe's spread and how far a shared machine's load moves during a run"
        )

    def summary(self, load_average: tuple[float, ...] | None = None) -> str:
        """What the run took against its plan at the pace measured before it, and how loaded the machine was."""
        took = self.clock() - self.started
        expected, low, high = self.start_pace.span(sum(self.planned.values()))
        load = f"; load average {' / '.join(f'{x:.1f}' for x in load_average)} (1, 5, 15 min)" if load_average else ""
        span = f"{duration(low)}–{duration(high)}"
        return f"the run took {duration(took)} against {duration(expected)} planned ({span}){load}"

    def left_text(self) -> str:
        unknown = f"; {', '.join(self.unplanned)} planned as a registered system" if self.unplanned else ""
        return f"run: about {duration(self.time_left())} left{unknown}"

    def __call__(self, items: Iterable[T], label: str) -> Iterable[T]:
        """`items`, reported as they are taken: a bar on a terminal, timestamped lines otherwise; an experiment's
        `Steps` also counted as they are done."""
        listed = list(items)
        if not self.plan_said:
            self.plan_said = True
            self.say(self.plan_text())
        shown = self._bar(listed, label) if sys.stderr.isatty() else self._lines(listed, label)
        return self._counted(shown, len(listed)) if isinstance(items, Steps) and self.current else shown

    def _counted(self, items: Iterator[T], of: int) -> Iterator[T]:
        for done, item in enumerate(items, 1):
            yield item
            self.steps = (done, of)

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
