"""The reference engine behind the adapter protocol.

Options:

- `persist=True` keeps the memory in the context's work directory (embedded Chroma); `server="host:port"` in a
  Chroma server; `postgres="postgresql://..."` in a PostgreSQL database (namespace derived from the work
  directory, so reopening with the same context finds the same cells). Each declares the "persist" capability.
- `preset="prototype"` measures the seed design (`MemoryConfig.prototype()`); other options are `MemoryConfig`
  fields.
- `sleep_after_add=True` runs one sleep pass after every add (its time counts as build time).
- `concept_labels=True` labels each document with its concept instead of its group (the grouping experiment).
- `text_queries=False` searches with the query vector alone (the dense-only path, which then does not declare the
  "text" capability); a query without text (synthetic vector sets) is always a vector query.
- `date_context=False` leaves out the context below.

Document metadata may carry "timestamp" (epoch seconds) and "importance" for memory-mode scoring, and "episode"
(the cells written together: a dialogue's session), passed on when every document has one. Where every document of
a write has a "date" in its metadata (a dialogue session's), it is each cell's context (what the encoder and BM25
see).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.protocol import Document, Query, SearchHit, SystemContext, vector_of
from reference import CellularMemory, MemoryConfig, SearchMode, concept_of_group
from reference.encoders import MockEncoder
from reference.store import server_client

BASE_CAPABILITIES = frozenset(
    {"text", "vectors", "memory_scoring", "tunable", "groups", "consolidate", "delete"}
    | {"scopes", "filters", "update", "get", "threads"}
)


class _GivenVectorsOnly(MockEncoder):
    """The harness always passes vectors; an encoder call would be a harness bug."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("the reference adapter must receive vectors from the harness")


QUERY_PARAMS: dict[str, dict[str, list[Any]]] = {
    "default": {"target_recall": [0.8, 0.9, 0.95, 0.97, 0.98, 0.99]},
    "chroma": {"probe_per_sqrt_n": [2, 4, 8, 16, 32, 64]},
    "prototype": {"group_top_k": [1, 2, 3, 5, 8, 13]},
}
"""The swept query parameter of each preset: the recall target; with Chroma group collections, which the
memory does not calibrate, the candidate budget; the seed's fixed group count."""


class ReferenceSystem:
    def __init__(
        self,
        context: SystemContext,
        *,
        name: str = "reference",
        persist: bool = False,
        server: str | None = None,
        postgres: str | None = None,
        text_queries: bool = True,
        sleep_after_add: bool = False,
        concept_labels: bool = False,
        date_context: bool = True,
        preset: str = "default",
        **config: Any,
    ) -> None:
        if context.dim is None:
            raise ValueError("the reference adapter needs vectors")
        self.name = name
        self.text_queries = text_queries
        self.sleep_after_add = sleep_after_add
        self.concept_labels = concept_labels
        self.date_context = date_context
        self.capabilities = (BASE_CAPABILITIES - ({"text"} if not text_queries else set())) | (
            {"persist"} if persist or server or postgres else set()
        )
        encoder = _GivenVectorsOnly(context.dim)
        make_config: Callable[..., MemoryConfig] = MemoryConfig.prototype if preset == "prototype" else MemoryConfig
        chroma_groups = preset == "default" and config.get("group_backend") == "chroma"
        self.query_params = QUERY_PARAMS["chroma" if chroma_groups else preset]
        if server or postgres:
            namespace = f"mb{zlib.crc32(str(context.workdir).encode()):08x}"
            self.memory = CellularMemory(
                encoder=encoder,
                client=server_client(server) if server else None,
                dsn=postgres,
                config=make_config(namespace=namespace, **config),
            )
        else:
            path = str(context.workdir / "memory") if persist else None
            self.memory = CellularMemory(path=path, encoder=encoder, config=make_config(**config))
        self._default_params = {name: getattr(self.memory.config, name) for name in self.query_params}
        self._setting = tuple(sorted(self._default_params.items()))
        self._reads: dict[tuple[tuple[str, Any], ...], list[float]] = {}
        """Searches and vector bytes read in each query setting (the engine counts them over all settings)."""
        self._counts_bytes = self.memory.config.group_backend == "numpy" and self.memory.config.probing == "budget"
        """The engine counts the bytes of its compiled probe and of flat searches; Chroma's group collections read
        their own index, and the seed's fixed group count searches groups uncounted."""
        self._counted = (0, 0.0)

    def add(self, docs: Sequence[Document]) -> None:
        self._write(docs, upsert=False)

    def upsert(self, docs: Sequence[Document]) -> None:
        self._write(docs, upsert=True)

    def _write(self, docs: Sequence[Document], *, upsert: bool) -> None:
        now = self.memory.clock()
        episodes = [d.metadata.get("episode") for d in docs]
        self.memory.add(
            [d.text for d in docs],
            vectors=np.stack([vector_of(d) for d in docs]),
            ids=[d.id for d in docs],
            metadata=[dict(d.metadata) for d in docs],
            timestamps=[float(d.metadata.get("timestamp", now)) for d in docs],
            importance=[
                float(d.metadata.get("importance", self.memory.config.importance_of("episodic"))) for d in docs
            ],
            episode=[str(e) for e in episodes] if all(episodes) else None,
            context=self._dates(docs),
            scope=[d.scope for d in docs],
            upsert=upsert,
        )
        if self.sleep_after_add:
            self.memory.consolidate()

    def _dates(self, docs: Sequence[Document]) -> list[str] | None:
        """Each document's date as its context, when every one has a date (and `date_context` is on)."""
        dates = [d.metadata.get("date") for d in docs]
        return [f"[{date}]" for date in dates] if self.date_context and all(dates) else None

    def search(self, query: Query, *, k: int, mode: SearchMode = "similarity") -> list[SearchHit]:
        scope, where = query.scope, query.where
        if self.text_queries and query.text:
            hits = self.memory.search(query.text, k=k, vector=query.vector, mode=mode, scope=scope, where=where)
        else:
            hits = self.memory.search(vector_of(query), k=k, mode=mode, scope=scope, where=where)
        return [SearchHit(h.id, h.score) for h in hits]

    def get(self, doc_ids: Sequence[str]) -> list[Document]:
        return [Document(r.id, r.text, r.vector, r.metadata, r.scope) for r in self.memory.get_many(list(doc_ids))]

    def delete(self, doc_ids: Sequence[str]) -> None:
        """Deletes the stored ones of these ids (an id not stored is no error: MB-DEL-1)."""
        stored = [doc_id for doc_id in doc_ids if doc_id in self.memory]
        if stored:
            self.memory.delete(stored)

    def consolidate(self) -> None:
        self.memory.consolidate()

    def set_query_params(self, **params: Any) -> None:
        """The swept parameter; no arguments restore the preset's value."""
        self._tally()
        setting = {**self._default_params, **params}
        self.memory.set_search_options(**setting)
        self._setting = tuple(sorted(setting.items()))

    def _tally(self) -> None:
        """Put the searches since the last switch, and the bytes they read, to the setting they ran in."""
        stats = self.memory.stats()
        searches, read = stats.searches, stats.bytes_read_per_search * stats.searches
        tally = self._reads.setdefault(self._setting, [0, 0.0])
        tally[0] += searches - self._counted[0]
        tally[1] += read - self._counted[1]
        self._counted = (searches, read)

    def group_labels(self, doc_ids: Sequence[str]) -> list[int]:
        """Each document's group or, with `concept_labels=True`, its concept (the topic layer)."""
        groups = [self.memory.get(doc_id).group_id for doc_id in doc_ids]
        if not self.concept_labels:
            return groups
        concept_of = concept_of_group(self.memory.concepts())
        return [concept_of[group] for group in groups]

    def describe(self) -> dict[str, Any]:
        """Figures a report shows next to this system's results; bytes read per search are the current setting's
        (none where the engine does not count them)."""
        self._tally()
        searches, read = self._reads[self._setting]
        stats = {**self.memory.stats().as_dict(), "text_queries": self.text_queries}
        if not self._counts_bytes:
            return {key: value for key, value in stats.items() if key != "bytes_read_per_search"}
        return {**stats, "bytes_read_per_search": read / searches if searches else 0.0}

    def close(self) -> None:
        self.memory.close()
