"""The recall estimates (`calibration.py`) kept from a close to the next open, so that an open estimates by the rule
a running memory follows (`calibration.due`: again once the cells written or deleted since an estimate reach
`TURNOVER` times the cells it was made over, or after a sleep pass), not on every open.

A memory that loads every cell saves, as it closes, each scope's probe setting with the cells turned over since it
was made, the estimator and settings it was made with, and a digest of the cells (ids in order) and their groups;
the store adds its own mark of its last write (`EmbeddedCellStore.keep_estimates`). An open takes them back only
when all of these match what it loaded: cells written, deleted, replaced or regrouped since the close (by a process
that died before closing, or by a version that keeps none), another estimator or another setting each leave the
open estimating as it did before.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import numpy as np

from ..common.config import MemoryConfig
from . import calibration
from .calibration import ProbeSetting

if TYPE_CHECKING:
    from .engine import EngineState

FORMAT = 1
SETTINGS = ("target_recall", "probe_margin", "probe_per_k", "probe_per_sqrt_n", "probe_cost_cells", "probing")
"""The configuration an estimate reads (with the numpy group index, the one that is estimated)."""


def saved(state: EngineState, config: MemoryConfig) -> str:
    """The estimates in force and what they hold for, as `restore` reads them (under the lock, before closing)."""
    estimates = [
        {
            "scope": None if scope is None else state.table.scope_names[scope],
            "margin": setting.margin,
            "estimated_recall": setting.estimated_recall,
            "recall_low": setting.recall_low,
            "cells": setting.cells,
            "reach": setting.reach,
            "since": state.turnover(scope) - setting.turnover,
        }
        for scope, setting in state.estimates().items()
    ]
    return json.dumps({**_made_for(state, config), "estimates": estimates})


def restore(state: EngineState, config: MemoryConfig, kept: str | None) -> None:
    """Put back the estimates `saved` kept (None: none kept) if they were made with this estimator and configuration
    over the cells and groups the state holds now (just loaded, none written since), each with its turnover since;
    otherwise leave every scope to be estimated."""
    if kept is None:
        return
    found = json.loads(kept)
    if {key: found.get(key) for key in ("format", "estimator", "settings", "cells")} != _made_for(state, config):
        return
    for estimate in found["estimates"]:
        scope = None if estimate["scope"] is None else state.table.known_scope(estimate["scope"])
        if estimate["scope"] is not None and scope is None:
            continue
        setting = ProbeSetting(
            estimate["margin"],
            estimate["estimated_recall"],
            estimate["recall_low"],
            estimate["cells"],
            estimate["reach"],
            turnover=state.turnover(scope) - estimate["since"],
            scope=scope,
        )
        state.commit_probe(setting, config.target_recall, config.probe_margin, scope)


def _made_for(state: EngineState, config: MemoryConfig) -> dict[str, Any]:
    """What an estimate was made with and over, as JSON would read it back."""
    estimator = [
        calibration.K,
        calibration.SAMPLE,
        calibration.CONFIDENCE,
        list(calibration.MARGINS),
        calibration.MAX_REACH,
        calibration.REFINEMENTS,
        calibration.MISS_FACTOR,
        calibration.TIE_TOLERANCE,
    ]
    settings = {name: getattr(config, name) for name in SETTINGS}
    return {"format": FORMAT, "estimator": estimator, "settings": settings, "cells": _cells_digest(state)}


def _cells_digest(state: EngineState) -> str:
    """A digest of the live cells' ids, in order, and of their groups."""
    table = state.table
    live = table.live_rows()
    digest = hashlib.blake2b(digest_size=16)
    digest.update("\0".join([table.ids[row] for row in live.tolist()]).encode())
    digest.update(np.ascontiguousarray(table.group[live], dtype="<i8").tobytes())
    return digest.hexdigest()
