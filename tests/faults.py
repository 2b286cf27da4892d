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


FIRST_WRITE_S = 2.0


class SlowFirstWrite(FlatNumpy):
    """Pays `FIRST_WRITE_S` at the first write of the process, as loading compiled code does (once, not per
    instance): long enough that no ordinary write on a loaded machine comes near it."""

    paid = False

    def add(self, docs):
        if not SlowFirstWrite.paid:
            SlowFirstWrite.paid = True
            time.sleep(FIRST_WRITE_S)
        super().add(docs)


class KeepsOldVersions(FlatNumpy):
    """Says it updates, and keeps searching the version it had (a replace that never lands)."""

    capabilities = FlatNumpy.capabilities | {"update"}

    def upsert(self, docs):
        pass


class IgnoresFilters(FlatNumpy):
    """Says it filters, and searches every document whatever the filter."""

    capabilities = FlatNumpy.capabilities | {"filters"}


class SharesScratch(FlatNumpy):
    """Says searches may run on several threads at once, and keeps each query in one shared field while it
    searches: run alone it is exact; run at once, a search may answer another's query."""

    capabilities = FlatNumpy.capabilities | {"threads"}

    def search(self, query, *, k):
        self._query = query
        time.sleep(0.0005)
        return super().search(self._query, k=k)
