"""Deliberately broken adapters: each breaks one rule of SPEC.md, and the suite must say which."""

from __future__ import annotations

from baselines.flat_numpy import FlatNumpy
from harness.protocol import SearchHit


class DuplicateIds(FlatNumpy):
    def search(self, query, *, k):
        hits = super().search(query, k=k)
        return hits[:1] + hits[: k - 1] if k > 1 else hits


class UnsortedScores(FlatNumpy):
    def search(self, query, *, k):
        return list(reversed(super().search(query, k=k)))


class IgnoresK(FlatNumpy):
    def search(self, query, *, k):
        return super().search(query, k=10)


class MoreThanK(FlatNumpy):
    def search(self, query, *, k):
        hits = super().search(query, k=k + 1)
        return hits if len(hits) > k else [*hits, SearchHit("invented", -1.0)]


class ForgetsOnReopen(FlatNumpy):
    capabilities = frozenset({"vectors", "persist"})


class FailsOnNonAscii(FlatNumpy):
    def add(self, docs):
        for doc in docs:
            doc.text.encode("ascii")
        super().add(docs)


class DropsDocuments(FlatNumpy):
    def add(self, docs):
        super().add([d for d in docs if not d.id.endswith("7")])


class KeepsDeleted(FlatNumpy):
    """Declares `delete` but only forgets the ids, so deleted documents come back in searches."""

    capabilities = frozenset({"vectors", "delete"})

    def delete(self, doc_ids):
        pass


def factory(cls):
    return lambda context, **options: cls(context)


duplicate_ids = factory(DuplicateIds)
unsorted_scores = factory(UnsortedScores)
ignores_k = factory(IgnoresK)
more_than_k = factory(MoreThanK)
forgets_on_reopen = factory(ForgetsOnReopen)
fails_on_non_ascii = factory(FailsOnNonAscii)
drops_documents = factory(DropsDocuments)
keeps_deleted = factory(KeepsDeleted)
