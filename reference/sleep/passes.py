"""One sleep pass over an engine's state: regroup (plan under the read lock, apply under the write
lock), then judge the groups that changed for conflicts and record them on both cells.

The regrouping policy itself (merges, k-means step, splits) is `regrouping.py`'s; this module
orchestrates it against the state and the store. `Sleeper` runs passes on a background thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Mapping

import numpy as np

from ..cells.table import CellTable
from ..common.config import MemoryConfig
from ..common.errors import BackendUnavailableError, InvalidInputError, MagneticError
from ..groups.concepts import concept_of_group, concepts_of
from ..judges import Conflict, ConflictJudge, JudgeError, Statement
from ..score.scoring import Clock
from ..state.engine import EngineState
from ..state.residency import Residency
from .regrouping import ConsolidationReport, GroupSizes, Regrouping, final_groups, plan_merges, plan_regrouping

log = logging.getLogger(__name__)
KEPT = 100
"""Reports and failures a background sleeper keeps (the latest)."""


def consolidate(
    state: EngineState,
    resident: Residency,
    config: MemoryConfig,
    judge: ConflictJudge,
    clock: Clock,
    labels: Mapping[str, Hashable] | None = None,
    scope: str | None = None,
) -> ConsolidationReport:
    """Regroup, then judge changed groups (of `scope`; None: of every scope, with `resident_cells` of those in RAM).
    The plan is made under the read lock (searches go on); only applying it takes the write lock, and a write in
    between makes it plan again."""
    started = time.perf_counter()
    held = () if scope is None else [scope]
    with resident.reading(held):
        code = None if scope is None else state.table.known_scope(scope)
        if scope is not None and code is None:  # a scope that never held a cell: nothing to do
            return ConsolidationReport([], 0, 0, 0, 0)
        version, sizes_before = state.version, GroupSizes.of(state.groups.active_sizes(code))
        ari_before = agreement(state, labels)
        plan = plan_sleep(state, config, code)
    with resident.writing(held):
        code = None if scope is None else state.table.known_scope(scope)
        if state.version != version:  # written to meanwhile: plan again, now that nothing can change
            plan = plan_sleep(state, config, code)
        moved = regroup(state, plan)
        touched = state.take_touched(code)
        sizes_after = GroupSizes.of(state.groups.active_sizes(code))
    with resident.reading(held):
        code = None if scope is None else state.table.known_scope(scope)
        ari_after = agreement(state, labels)
        concepts = concepts_of(state.groups, limit=config.concept_limit, scope=code)
        concept_ari = agreement(state, labels, concept_of_group(concepts))
    conflicts, errors = find_conflicts(state, resident, touched, judge, clock)
    return ConsolidationReport(
        plan.merges,
        sizes_before.groups,
        sizes_after.groups,
        moved,
        len(touched),
        conflicts,
        errors,
        time.perf_counter() - started,
        plan.splits,
        sizes_before,
        sizes_after,
        ari_before,
        ari_after,
        len(concepts),
        concept_ari,
    )


def plan_sleep(state: EngineState, config: MemoryConfig, scope: int | None = None) -> Regrouping:
    """The regrouping plan for the current state (adaptive: merges, k-means steps, splits), each scope's
    groups planned on their own (a sleep never merges, moves or splits across scopes), of `scope` alone when
    given; new groups are numbered after every existing one."""
    plans, slot = [], state.groups.n_slots
    for one in sorted(state.scopes) if scope is None else [scope]:
        plan = _plan_scope(state, config, np.sort(state.scope_rows(one)), one, slot)
        plans.append(plan)
        slot += plan.splits
    return Regrouping.joined(plans)


def _plan_scope(state: EngineState, config: MemoryConfig, rows: np.ndarray, scope: int, first_new: int) -> Regrouping:
    """The plan for the live `rows` (ascending) of one scope, on a state of its groups alone (`GroupState.part`,
    renumbered from 0 for planning; new groups numbered from `first_new`)."""
    part = state.groups.part([scope])
    own, ids = part.state, part.ids
    groups = state.table.group[rows]
    local = part.local(groups)
    vectors = state.index.vectors_of(rows)
    cells = len(rows)
    if not config.adaptive:
        merges = plan_merges(own, config.merge_threshold)
        target = final_groups(merges)
        after = np.asarray([target.get(g, g) for g in local.tolist()], dtype=np.int64)
        plan = Regrouping(merges, rows, after, 0)
    else:
        plan = plan_regrouping(
            own,
            rows,
            vectors,
            local,
            threshold=config.merge_threshold,
            capacity=config.group_capacity(cells),
            fragment=int(config.target_group_size(cells) / config.fragment_divisor),
            bound=config.group_bound(cells),
            rounds=config.sleep_rounds,
            settled=config.sleep_settled,
        )

    def numbered(found: np.ndarray) -> np.ndarray:
        return np.where(found < len(ids), ids[found.clip(max=len(ids) - 1)], first_new + found - len(ids))

    after = numbered(plan.groups)
    moved = after != state.table.group[plan.rows]
    merges = [m._replace(kept=int(ids[m.kept]), absorbed=int(ids[m.absorbed])) for m in plan.merges]
    return Regrouping(merges, plan.rows[moved], after[moved], plan.splits)


def regroup(state: EngineState, plan: Regrouping) -> int:
    """Move cells to their planned groups (committed by the state: store first); returns how many moved."""
    rows, after = plan.rows, plan.groups
    if not len(rows):
        return 0
    before, vectors = state.table.group[rows], state.index.vectors_of(rows)
    scopes = state.table.scope[rows]
    part = state.groups.part(np.unique(scopes).tolist())
    founded = np.unique(after[after >= part.first_new])
    part.state.new_slots(len(founded))
    part.state.set_scopes(part.local(after), scopes)
    part.state.remove_members(part.local(before), vectors)
    part.state.add_members(part.local(after), vectors)
    state.commit_regroup(rows, after, part)
    return len(rows)


def agreement(
    state: EngineState, labels: Mapping[str, Hashable] | None, concept_of: Mapping[int, int] | None = None
) -> float | None:
    """ARI of the groups (or, given `concept_of`, their concepts) of the labelled live cells against
    their labels."""
    if labels is None:
        return None
    from sklearn.metrics import adjusted_rand_score

    table = state.table
    known = [(int(table.group[table.row_of[i]]), label) for i, label in labels.items() if i in table.row_of]
    if concept_of is not None:
        known = [(concept_of[group], label) for group, label in known]
    if not known:
        raise InvalidInputError("labels name no stored cell")
    found, true = zip(*known)
    return float(adjusted_rand_score([str(t) for t in true], list(found)))


def find_conflicts(
    state: EngineState, resident: Residency, groups: set[int], judge: ConflictJudge, clock: Clock
) -> tuple[list[Conflict], list[str]]:
    """Judge each group's statements (outside any lock: a judge may be slow); record what it finds (on the cells
    as judged: one let go meanwhile is judged again at the next pass)."""
    with resident.reading(()):
        table = state.table
        members = {g: np.sort(state.index.members(g)) for g in groups}
        batches = {g: [_statement(table, r) for r in rows.tolist()] for g, rows in members.items() if len(rows) > 1}
        judged = {table.ids[r]: int(table.stamp[r]) for rows in members.values() for r in rows.tolist()}
    found, errors = [], []
    for group, statements in batches.items():
        try:
            found += judge.judge(statements)
        except (JudgeError, BackendUnavailableError) as error:
            errors.append(f"group {group}: {error}")
    with resident.writing(()):  # only on the cells as judged: one written again meanwhile is judged at the next pass
        return state.record_conflicts(found, clock(), judged), errors


def _statement(table: CellTable, row: int) -> Statement:
    """A cell as a judge reads it, with its speaker (the metadata under the table's `speaker_key`)."""
    speaker = table.metadata[row].get(table.speaker_key) if table.speaker_key else None
    return Statement(
        table.ids[row], table.texts[row], float(table.timestamp[row]), speaker if isinstance(speaker, str) else ""
    )


def recorded_conflicts(state: EngineState, scope: int | None = None) -> list[Conflict]:
    """Every recorded conflict once (of the cells of `scope`; None: of every scope in RAM), older cell first (call
    under the read lock)."""
    table = state.table
    return [
        Conflict(table.ids[row], c.other, c.reason, c.judge)
        for row in sorted(table.conflicts)
        if table.alive[row] and (scope is None or table.scope[row] == scope)
        for c in table.conflicts[row]
        if c.other_is_newer
    ]


class Sleeper:
    """Sleep passes every `interval` seconds on a background thread, their reports and failures kept for the caller
    (the latest `KEPT` of each) and failures logged, never lost."""

    def __init__(self) -> None:
        self.reports: deque[ConsolidationReport] = deque(maxlen=KEPT)
        self.errors: deque[MagneticError] = deque(maxlen=KEPT)
        self._running: tuple[threading.Thread, threading.Event] | None = None

    @property
    def running(self) -> bool:
        return self._running is not None

    def start(self, interval: float, sleep_pass: Callable[[], ConsolidationReport]) -> None:
        if self._running is not None:
            raise InvalidInputError("sleep is already running; stop_sleep() first")
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(interval):
                try:
                    self.reports.append(sleep_pass())
                except MagneticError as error:
                    self.errors.append(error)
                    log.error("sleep pass failed: %s", error)

        thread = threading.Thread(target=loop, name="cellular-sleep", daemon=True)
        self._running = (thread, stop)
        thread.start()

    def stop(self) -> None:
        """Stop, after the pass running now (if any) has finished."""
        if self._running is not None:
            thread, stop = self._running
            stop.set()
            thread.join()
            self._running = None
