"""What the engine asks of a store: load every cell on open (or one scope at a time), take each write as it happens.

`StoreIdentity` is what a store's vectors are; `NullStore` stands in when nothing is persisted (`path=None`, no
client). The stores: `embedded.py` (a path), `server.py` (a Chroma server), `lease.FencedStore` around the latter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..cells.table import CellBatch, CellRecord


@dataclass(frozen=True)
class StoreIdentity:
    """What the vectors of a store are: their dimension and the encoder that made them. A new store
    records both; `check_encoder=False` opens a store made by another encoder (an explicit override,
    e.g. after re-encoding elsewhere) without changing what it records."""

    dim: int
    encoder: str
    check_encoder: bool = True


class CellStore(Protocol):
    persistent: bool

    def load(self) -> CellBatch | None: ...
    def load_scope(self, scope: str) -> CellBatch | None: ...
    def count(self, scope: str | None = None) -> int: ...
    def scopes(self) -> list[str]: ...
    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]: ...
    def group_bound(self) -> int: ...
    def put(self, batch: CellBatch) -> None: ...
    def replace(self, batch: CellBatch, previous: Sequence[CellRecord]) -> None: ...
    def update(self, records: Sequence[CellRecord]) -> None: ...
    def delete(self, ids: Sequence[str], scopes: Iterable[str]) -> None: ...


class NullStore:
    """Keeps nothing: the in-memory table is all there is."""

    persistent = False

    def load(self) -> CellBatch | None:
        return None

    def load_scope(self, scope: str) -> CellBatch | None:
        return None

    def count(self, scope: str | None = None) -> int:
        return 0

    def scopes(self) -> list[str]:
        return []

    def scopes_of(self, ids: Sequence[str]) -> dict[str, str]:
        return {}

    def group_bound(self) -> int:
        return 0

    def put(self, batch: CellBatch) -> None:
        pass

    def replace(self, batch: CellBatch, previous: Sequence[CellRecord]) -> None:
        pass

    def update(self, records: Sequence[CellRecord]) -> None:
        pass

    def delete(self, ids: Sequence[str], scopes: Iterable[str]) -> None:
        pass
