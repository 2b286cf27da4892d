"""Deliberately broken adapters: each breaks one rule of SPEC.md, and the suite must say which."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import cache

import numpy as np

from baselines.bm25 import BM25
from baselines.flat_numpy import FlatNumpy
from baselines.vectors import top_k
from harness.protocol import Document, SearchHit, check_k
from harness.systems.engine import ReferenceSystem


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
    """Declares `delete` and deletes nothing, so deleted documents come back in searches."""

    capabilities = frozenset({"vectors", "delete"})

    def delete(self, doc_ids):
        pass


class StartsFull(FlatNumpy):
    """Comes with a document nobody added."""

    def __init__(self, context):
        super().__init__(context)
        super().add([Document("left-over", "a left-over note", np.ones(context.vector_dim()))])


class MutatesInputs(FlatNumpy):
    """Normalises the vectors it is given in place."""

    def add(self, docs):
        for doc in docs:
            np.divide(doc.vector, np.linalg.norm(doc.vector) / 2, out=doc.vector)
        super().add(docs)


class RaisesOnUnknownDelete(ReferenceSystem):
    """Deletes as the engine's own API does: an unknown id is an error."""

    def delete(self, doc_ids):
        self.memory.delete(list(doc_ids))


class LeaksScopes(ReferenceSystem):
    """Takes every document's scope and ignores the query's."""

    def search(self, query, *, k, mode="similarity"):
        return super().search(replace(query, scope=None), k=k, mode=mode)


class OneCopyPerText(ReferenceSystem):
    """Stores a text once, in the first scope that adds it (a content-addressed store)."""

    def add(self, docs):
        held = {r.text for r in self.memory.get_many(self.memory.ids())}
        fresh = {d.text: d for d in reversed(docs) if d.text not in held}
        super().add([d for d in docs if fresh.get(d.text) is d])


class FiltersAfterSearching(ReferenceSystem):
    """Searches k, then drops what the filter excludes: short of hits."""

    def search(self, query, *, k, mode="similarity"):
        hits = super().search(replace(query, where=None), k=k, mode=mode)
        if query.where is None:
            return hits
        matching = {h.doc_id for h in super().search(query, k=max(1, len(self.memory)), mode=mode)}
        return [h for h in hits if h.doc_id in matching]


class UpsertKeepsOld(ReferenceSystem):
    """Adds the new ids of an upsert and keeps the stored versions of the others."""

    def upsert(self, docs):
        new = [d for d in docs if d.id not in self.memory]
        if new:
            super().add(new)


class UpsertDuplicates(ReferenceSystem):
    """Adds every upserted document under a new id."""

    def upsert(self, docs):
        super().add([replace(d, id=f"{d.id}#{len(self.memory)}") if d.id in self.memory else d for d in docs])


class UpsertAcrossScopes(ReferenceSystem):
    """Upserts by deleting the ids wherever they are, then adding: another scope's document is replaced."""

    def upsert(self, docs):
        held = [d.id for d in docs if d.id in self.memory]
        if held:
            self.memory.delete(held)
        super().add(docs)


class ScoresByTheWholeStore(ReferenceSystem):
    """Scales a scope's scores by how much the whole store holds (as BM25 statistics over every scope do)."""

    def search(self, query, *, k, mode="similarity"):
        scale = 1 / np.log(2 + len(self.memory))
        return [SearchHit(h.doc_id, h.score * scale) for h in super().search(query, k=k, mode=mode)]


class DropsMetadata(ReferenceSystem):
    """Reads documents back without their metadata (a first LanceDB adapter did: its table had no such column)."""

    def get(self, doc_ids):
        return [replace(d, metadata=None) for d in super().get(doc_ids)]


class FailsOnEveryUpsert(ReferenceSystem):
    def upsert(self, docs):
        raise RuntimeError("the disk is full")


class GetsInStoredOrder(ReferenceSystem):
    def get(self, doc_ids):
        found = {d.id: d for d in super().get(doc_ids)}
        return [found[i] for i in self.memory.ids() if i in found]


class SharesItsQuery(FlatNumpy):
    """Declares that several threads may search at once, and keeps each query in one field while it searches."""

    capabilities = FlatNumpy.capabilities | {"threads"}

    def search(self, query, *, k):
        self._query = query
        time.sleep(0.001)
        return super().search(self._query, k=k)


@cache
def _minilm():
    from reference.encoders import SentenceTransformerEncoder

    return SentenceTransformerEncoder()


class DropsHitsBelowZero:
    """Embeds texts itself (MiniLM) and keeps only hits whose similarity is above zero, as mem0 and txtai do."""

    name = "drops-hits-below-zero"
    capabilities = frozenset({"text"})

    def __init__(self, context):
        self._ids, self._vectors = [], np.zeros((0, 384), dtype=np.float32)

    def add(self, docs):
        self._ids += [d.id for d in docs]
        self._vectors = np.vstack([self._vectors, _minilm().encode([d.text for d in docs])])

    def search(self, query, *, k):
        k = check_k(k)
        scores = self._vectors @ _minilm().encode([query.text])[0]
        best = top_k(scores, min(k, len(scores))).tolist()
        return [SearchHit(self._ids[i], float(scores[i])) for i in best if scores[i] > 0]

    def close(self):
        pass


class IndexesAsciiOnly(BM25):
    """Tokenizes only ASCII: a text in another script is stored, but indexed as what is left of it."""

    def add(self, docs):
        super().add([replace(d, text=d.text.encode("ascii", "ignore").decode()) for d in docs])


class UpsertMergesMetadata(ReferenceSystem):
    """Merges an upsert's metadata into the stored version's, as mem0's and Chroma's upserts do: a key the new
    version lacks is kept."""

    def upsert(self, docs):
        stored = {d.id: d.metadata for d in self.get([d.id for d in docs])}
        super().upsert([replace(d, metadata={**stored.get(d.id, {}), **d.metadata}) for d in docs])


class ShowsItsIdKey(ReferenceSystem):
    """Makes ids of its own and keeps the caller's in each document's metadata, which `get` shows."""

    def __init__(self, context):
        super().__init__(context)
        self.capabilities = self.capabilities | {"own_ids"}

    def get(self, doc_ids):
        return [replace(d, metadata={**d.metadata, "caller_id": d.id}) for d in super().get(doc_ids)]


class ScopedOnly(ReferenceSystem):
    """Not broken: refuses a search without a scope, as mem0 does, and declares it (`scoped_only`)."""

    def __init__(self, context):
        super().__init__(context)
        self.capabilities = self.capabilities | {"scoped_only"}

    def search(self, query, *, k, mode="similarity"):
        if query.scope is None:
            raise ValueError("a search needs a scope")
        return super().search(query, k=k, mode=mode)


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
starts_full = factory(StartsFull)
mutates_inputs = factory(MutatesInputs)
raises_on_unknown_delete = factory(RaisesOnUnknownDelete)
leaks_scopes = factory(LeaksScopes)
one_copy_per_text = factory(OneCopyPerText)
filters_after_searching = factory(FiltersAfterSearching)
upsert_keeps_old = factory(UpsertKeepsOld)
upsert_duplicates = factory(UpsertDuplicates)
gets_in_stored_order = factory(GetsInStoredOrder)
drops_metadata = factory(DropsMetadata)
fails_on_every_upsert = factory(FailsOnEveryUpsert)
scores_by_the_whole_store = factory(ScoresByTheWholeStore)
upsert_across_scopes = factory(UpsertAcrossScopes)
shares_its_query = factory(SharesItsQuery)
drops_hits_below_zero = factory(DropsHitsBelowZero)
indexes_ascii_only = factory(IndexesAsciiOnly)
upsert_merges_metadata = factory(UpsertMergesMetadata)
shows_its_id_key = factory(ShowsItsIdKey)
scoped_only = factory(ScopedOnly)
