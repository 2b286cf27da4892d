"""Deliberately faulty systems for the streaming section: each breaks what an agent's memory must do while
writes and reads interleave, and the section must catch it."""

from __future__ import annotations

import time

from baselines.flat_numpy import FlatNumpy


class KeepsDeletedCells(FlatNumpy):
    """Says it deletes, and keeps returning what was deleted."""

    def delete(self, doc_ids):
        pass


class SlowAfterWrites(FlatNumpy):
    """Rebuilds something for 5 ms at the first search after any write (as a static index does)."""

    def __init__(self, context):
        super().__init__(context)
        self._stale = False

    def add(self, docs):
        super().add(docs)
        self._stale = True

    def search(self, query, *, k):
        if self._stale:
            time.sleep(0.005)
            self._stale = False
        return super().search(query, k=k)


class SlowFirstWrite(FlatNumpy):
    """Pays 0.2 s at the first write of the process, as loading compiled code does (once, not per instance)."""

    paid = False

    def add(self, docs):
        if not SlowFirstWrite.paid:
            SlowFirstWrite.paid = True
            time.sleep(0.2)
        super().add(docs)
