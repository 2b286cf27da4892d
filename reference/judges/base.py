"""The conflict-judge protocol: read a group's statements, name the pairs that contradict."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Statement:
    """A cell as a judge reads it; `speaker` names who said it (a dialogue turn's speaker), to whom "I" and
    "my" refer ("" when unknown)."""

    id: str
    text: str
    timestamp: float
    speaker: str = ""


@dataclass(frozen=True)
class Conflict:
    """Two cells that contradict each other; `first` is the older one."""

    first: str
    second: str
    reason: str
    judge: str


class JudgeError(RuntimeError):
    """A judge could not give an answer (reported in the consolidation report, never raised through)."""


@runtime_checkable
class ConflictJudge(Protocol):
    name: str

    def judge(self, statements: Sequence[Statement]) -> list[Conflict]: ...


def ordered(first: Statement, second: Statement, reason: str, judge: str) -> Conflict:
    """A conflict with the older statement first (ties: by id), so pairs are reported once, one way."""
    a, b = sorted((first, second), key=lambda s: (s.timestamp, s.id))
    return Conflict(a.id, b.id, reason, judge)
