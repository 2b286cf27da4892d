"""What a server store answers without reading its cells: the scopes that hold cells and the bounds of the ids it
hands out, in the collection `{namespace}_scopes` beside the cells'.

A record per scope (its id `scope:` + the name) and, in the collection's metadata, the layout the cells are in and
two bounds: every stored `seq` is below `seq`, every stored group id below `groups`. Both are raised before a write
that would pass them (by more than it needs, so few writes pay for it), so they hold whenever a process dies, and a
scope is recorded before its first cell is written, and forgotten after its last is deleted: the records list every
scope that holds cells (perhaps one more, emptied by a process that died before forgetting it). One process writes
them, the namespace's owner (`lease.py`), so what is read on open stays true while it serves.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from ..common.chroma import guarded

LAYOUT = 2
"""The cells' layout that `server.py` writes: each cell's scope a metadata key of its own."""
SEQS_AHEAD = 4096
GROUPS_AHEAD = 64
"""How far past what a write needs each bound is raised (a reopened memory numbers new groups from the bound)."""
PREFIX = "scope:"


def ledger_name(namespace: str) -> str:
    return f"{namespace}_scopes"


class Ledger:
    """The scopes of a namespace's cells and its bounds, read on open and kept up to date by each write."""

    def __init__(self, client: Any, namespace: str) -> None:
        self.name = ledger_name(namespace)
        self._collection = guarded(
            f"opening collection {self.name}", client.get_or_create_collection, self.name, embedding_function=None
        )
        metadata = self._collection.metadata or {}
        self.current = metadata.get("layout") == LAYOUT
        """Whether the cells are in this layout and the bounds hold (else `server.py` brings them up to it)."""
        self.seq_bound, self.group_bound = int(metadata.get("seq", 0)), int(metadata.get("groups", 0))
        found = guarded(f"reading {self.name}", self._collection.get, include=[])["ids"]
        self._scopes = {record.removeprefix(PREFIX) for record in found}
        self._mutex = threading.Lock()
        """Writes change the scopes under the engine's write lock while `scopes` reads them under its read lock."""

    def scopes(self) -> list[str]:
        with self._mutex:
            return list(self._scopes)

    def hold(self, scopes: Iterable[str], seqs: int, groups: int) -> None:
        """Before writing cells of these scopes, with `seq`s below `seqs` and group ids below `groups`: record the
        scopes not recorded yet and raise the bounds that would not hold."""
        if new := sorted(set(scopes) - self._scopes):
            ids = [PREFIX + scope for scope in new]
            guarded(f"writing {self.name}", self._collection.upsert, ids=ids, embeddings=[[1.0]] * len(ids))
            with self._mutex:
                self._scopes.update(new)
        if seqs > self.seq_bound or groups > self.group_bound:
            self.settle(
                self.seq_bound if seqs <= self.seq_bound else seqs + SEQS_AHEAD,
                self.group_bound if groups <= self.group_bound else groups + GROUPS_AHEAD,
            )

    def forget(self, scopes: Iterable[str]) -> None:
        """After deleting the last cells of these scopes."""
        if gone := sorted(set(scopes) & self._scopes):
            guarded(f"writing {self.name}", self._collection.delete, ids=[PREFIX + scope for scope in gone])
            with self._mutex:
                self._scopes.difference_update(gone)

    def settle(self, seqs: int, groups: int) -> None:
        """Set the bounds and mark the layout current (the last step of bringing a store up to it)."""
        metadata = {"layout": LAYOUT, "seq": seqs, "groups": groups}
        guarded(f"writing {self.name}", self._collection.modify, metadata=metadata)
        self.current, self.seq_bound, self.group_bound = True, seqs, groups
