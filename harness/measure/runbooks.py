"""Streaming runbooks: an agent's memory as a sequence of writes, searches, deletes and sleeps, as data.

The shape of big-ann-benchmarks' streaming runbooks (`neurips23/streaming`): steps name cells by their
position in the stream (a corpus in its written order) and queries by their index among the queries
held out from it; recall is measured at checkpoints against exact search over the cells live at that
moment. Three runbooks are generated here:

- `agent_stream`: text arrives in turns of 1–50 cells; a search follows a turn (the first search after a
  write) and a second one follows it (a search with no write before it); the oldest share of what is
  live is forgotten at intervals (a sliding window) and random earlier cells are deleted; sleep runs
  twice where a system has it; checkpoints at each quarter of the stream.
- `agent_loop`: a memory loaded in bulk (untimed), then rounds of (write one cell, search, search again,
  find the cell by its own text): the loop an agent runs every turn.
- `expiring_stream`: big-ann-benchmarks' expiration-time runbooks with replaces: batches written at each
  timestep, each with a lifetime; half-way through it some of its cells are replaced (written again under their
  ids with new text and vector), at its end the batch expires (deleted); a checkpoint after every timestep.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, field

import numpy as np


@dataclass(frozen=True)
class Write:
    """Cells added in one write: a turn (timed) or the memory an agent starts from (a bulk load, untimed)."""

    cells: range
    timed: bool = True


@dataclass(frozen=True)
class Search:
    """A held-out query, timed; its hits are checked against the deleted cells."""

    query: int


@dataclass(frozen=True)
class FindOwn:
    """A search for one written cell by its own text and vector: is it the top hit?"""

    cell: int


@dataclass(frozen=True)
class Forget:
    """Cells deleted in one timed delete: the oldest live share (`window`) or a random few (`random`)."""

    cells: tuple[int, ...]
    why: str


@dataclass(frozen=True)
class Replace:
    """Cells written again under their ids, each with the text and vector of another stream position (its
    `sources`, never written under their own ids), in one timed write: big-ann-benchmarks' replace, where a tag
    keeps its id and its data changes."""

    cells: tuple[int, ...]
    sources: tuple[int, ...]


@dataclass(frozen=True)
class Sleep:
    """A consolidation pass, timed, where the system has one."""


@dataclass(frozen=True)
class Checkpoint:
    """Every held-out query, timed; recall@10 against exact search over the cells live now."""

    label: str


Step = Write | Search | FindOwn | Forget | Replace | Sleep | Checkpoint


@dataclass(frozen=True)
class Runbook:
    name: str
    description: str
    cells: int
    """Cells in the stream (positions 0 … cells − 1)."""
    queries: int
    steps: tuple[Step, ...]

    def live_at_checkpoints(self) -> dict[str, np.ndarray]:
        """The stream positions whose text and vector are live at each checkpoint, in position order (a
        replaced cell's are its source's)."""
        content = np.full(self.cells, -1)
        """The position whose text and vector each cell holds (-1: not live)."""
        found = {}
        for step in self.steps:
            if isinstance(step, Write):
                content[step.cells.start : step.cells.stop] = np.arange(step.cells.start, step.cells.stop)
            elif isinstance(step, Forget):
                content[list(step.cells)] = -1
            elif isinstance(step, Replace):
                content[list(step.cells)] = step.sources
            elif isinstance(step, Checkpoint):
                found[step.label] = np.sort(content[content >= 0])
        return found


@dataclass(frozen=True)
class StreamShape:
    """How `agent_stream` shapes a stream: turns of `turn` cells (uniform); about `searches` turns followed
    by searches; every `forget_every` of the stream, the oldest `window_share` of the live cells forgotten and
    a random `random_share` of them deleted; `sleeps` sleep passes; `checkpoints` checkpoints."""

    turn: tuple[int, int] = (1, 50)
    searches: int = 200
    forget_every: float = 0.1
    window_share: float = 0.1
    random_share: float = 0.02
    sleeps: int = 2
    checkpoints: int = 4


def agent_stream(cells: int, queries: int, *, seed: int = 0, shape: StreamShape = StreamShape()) -> Runbook:
    """Text arriving in turns (sizes uniform, seeded); after every turn, or every few turns, one search right
    after the write and one more; at each forgetting mark the oldest share of the live cells forgotten and a
    random few deleted; sleep passes spread over the stream; checkpoints at even shares of it (after the
    deletes due there). `shape` sets the numbers."""
    turn, searches, forget_every, window_share, random_share, sleeps, checkpoints = astuple(shape)
    rng = np.random.default_rng(seed)
    sizes: list[int] = []
    while sum(sizes) < cells:
        sizes.append(min(int(rng.integers(turn[0], turn[1] + 1)), cells - sum(sizes)))
    search_every = max(1, round(len(sizes) / searches))
    marks = {"forget": _marks(cells, round(1 / forget_every)), "sleep": _marks(cells, sleeps + 1)[:-1]}
    marks["checkpoint"] = _marks(cells, checkpoints)
    steps: list[Step] = []
    written, asked = 0, 0
    live: list[int] = []
    for number, size in enumerate(sizes):
        steps.append(Write(range(written, written + size)))
        before, written = written, written + size
        live += range(before, written)
        if number % search_every == 0:
            steps += [Search(asked % queries), Search((asked + 1) % queries)]
            asked += 2
        if _crossed(marks["forget"], before, written) and written < cells:
            oldest = live[: round(window_share * len(live))]
            rest = live[len(oldest) :]
            count = min(len(rest), round(random_share * len(live)))
            randoms = sorted(rng.choice(rest, size=count, replace=False).tolist()) if count else []
            steps += [Forget(tuple(oldest), "window"), Forget(tuple(randoms), "random")]
            gone = set(oldest) | set(randoms)
            live = [cell for cell in live if cell not in gone]
        if _crossed(marks["sleep"], before, written):
            steps.append(Sleep())
        for mark in marks["checkpoint"]:
            if before < mark <= written:
                steps.append(Checkpoint(f"{round(100 * mark / cells)}%"))
    return Runbook(
        "agent-stream",
        f"{cells:,} cells in written order, turns of {turn[0]}–{turn[1]}, a search and a second one after every "
        f"{search_every} turn(s), the oldest {window_share:.0%} and a random {random_share:.0%} of the live cells "
        f"deleted every {forget_every:.0%} of the stream, {sleeps} sleeps, {checkpoints} checkpoints",
        cells,
        queries,
        tuple(steps),
    )


def agent_loop(loaded: int, rounds: int, queries: int) -> Runbook:
    """`loaded` cells in bulk, then `rounds` of: write the next cell, search a held-out query (right after
    the write), search another (no write before it), find the cell written by its own text; a checkpoint
    at the end. The two searches ask the same kind of question, so their ratio is what the write costs."""
    steps: list[Step] = [Write(range(loaded), timed=False)]
    for number in range(rounds):
        cell = loaded + number
        steps += [Write(range(cell, cell + 1)), Search(2 * number % queries), Search((2 * number + 1) % queries)]
        steps.append(FindOwn(cell))
    steps.append(Checkpoint("end"))
    return Runbook(
        "agent-loop",
        f"{loaded:,} cells loaded in bulk, then {rounds} rounds of (write one cell, search a held-out query, "
        "search another, search for the cell written by its text)",
        loaded + rounds,
        queries,
        tuple(steps),
    )


@dataclass(frozen=True)
class ExpiryShape:
    """How `expiring_stream` shapes a stream (big-ann-benchmarks' `gen_expiration_time_runbook`): `timesteps`
    equal batches of positions; each timestep writes a share of its batch (uniform in `written`) and holds the
    rest back as replacement content; each batch lives for one of `lifetimes` timesteps (None: for ever), drawn
    with `odds`; half-way through its life the first of its cells are replaced by the held-back rest of its batch,
    and at its end it expires."""

    timesteps: int = 10
    written: tuple[float, float] = (0.5, 0.9)
    lifetimes: tuple[int | None, ...] = (None, 6, 2)
    odds: tuple[float, ...] = field(default=(0.2, 0.3, 0.5))


def expiring_stream(cells: int, queries: int, *, seed: int = 0, shape: ExpiryShape = ExpiryShape()) -> Runbook:
    """Each timestep: write its batch's share in one write; replace the cells due (a replace falls half-way
    through a batch's life, or half-way through what is left of the stream for a batch that never expires);
    delete the batches whose life ended (the expiry: cells older than their window); a search right after and
    one more; a checkpoint. Seeded; `shape` sets the numbers."""
    timesteps, (low, high), lifetimes, odds = shape.timesteps, shape.written, shape.lifetimes, shape.odds
    batch = cells // timesteps
    if batch < 2:
        raise ValueError(f"{cells} cells are too few for {timesteps} timesteps")
    rng = np.random.default_rng(seed)
    due: dict[str, dict[int, list[Step]]] = {"replace": {}, "expire": {}}
    steps: list[Step] = []
    for now in range(timesteps):
        start = now * batch
        end = start + min(batch - 1, max(1, int(rng.uniform(low, high) * batch)))
        life = lifetimes[int(rng.choice(len(lifetimes), p=odds))]
        written = range(start, end)
        spare = tuple(range(end, start + batch))[: len(written)]
        half_way = now + (life // 2 if life else (timesteps - now) // 2)
        if now < half_way < timesteps:
            due["replace"].setdefault(half_way, []).append(Replace(tuple(written[: len(spare)]), spare))
        if life and now + life < timesteps:
            due["expire"].setdefault(now + life, []).append(Forget(tuple(written), f"expired after {life} timesteps"))
        steps.append(Write(written))
        steps += due["replace"].get(now, []) + due["expire"].get(now, [])
        steps += [Search(2 * now % queries), Search((2 * now + 1) % queries), Checkpoint(f"t{now + 1}")]
    lives = ", ".join("for ever" if life is None else f"{life}" for life in lifetimes)
    return Runbook(
        "expiring-stream",
        f"{cells:,} positions in written order over {timesteps} timesteps, each writing {low:.0%}–{high:.0%} of its "
        f"batch and holding the rest back as new versions; each batch lives {lives} timesteps "
        f"(odds {', '.join(f'{p:g}' for p in odds)}), its cells replaced half-way through its life and deleted at "
        "its end; two searches and a checkpoint after every timestep",
        cells,
        queries,
        tuple(steps),
    )


def dialogue_replay(turns: int, due: list[int]) -> Runbook:
    """A conversation written turn by turn; question q is asked right after turn `due[q]` is written (its
    last evidence turn), and every question again at the end."""
    asked: dict[int, list[int]] = {}
    for question, turn in enumerate(due):
        asked.setdefault(turn, []).append(question)
    steps: list[Step] = []
    for turn in range(turns):
        steps += [Write(range(turn, turn + 1)), *(Search(q) for q in asked.get(turn, []))]
    steps += [Search(q) for q in range(len(due))]
    return Runbook(
        "dialogue-replay",
        f"{turns:,} turns written one by one; each of {len(due)} questions asked when its last evidence turn is "
        "written, and again at the end",
        turns,
        len(due),
        tuple(steps),
    )


def _marks(cells: int, parts: int) -> list[int]:
    """Positions splitting the stream into `parts` equal parts (the last is the end)."""
    return [round(cells * (i + 1) / parts) for i in range(parts)]


def _crossed(marks: list[int], before: int, after: int) -> bool:
    return any(before < mark <= after for mark in marks)
