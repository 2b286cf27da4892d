"""The cells' Chroma collection (`{namespace}_cells`, cosine space): ids and embeddings (and documents, in the
server layout), opened with the store's identity check and written in chunks of Chroma's batch limit. Both
stores write through it (`embedded.py`, `server.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..cells.table import CellBatch
from ..common.chroma import backend_errors, guarded
from ..common.errors import (
    BackendUnavailableError,
    DimensionMismatchError,
    EncoderMismatchError,
    VectorSegmentUnreadableError,
)
from .protocol import StoreIdentity

CONFIGURATION = {"hnsw": {"space": "cosine", "ef_construction": 16, "max_neighbors": 16}}
"""How the cells' collection is made: cosine space, and an HNSW graph built with a short construction search. The
engine searches its own group index and reads Chroma's records by id, never by vector, so the graph Chroma builds
with every write is work no search uses. Its neighbour count stays Chroma's default: sparser graphs make Chroma's
own graph code crash now and then (chroma-core/chroma#6979). A collection made with the default graph keeps it."""


def cells_name(namespace: str) -> str:
    return f"{namespace}_cells"


class ChromaCells:
    """The cells' collection: opened with the identity check, written in chunks of Chroma's batch limit."""

    def __init__(self, client: Any, namespace: str, identity: StoreIdentity) -> None:
        self.name = cells_name(namespace)
        dim, encoder = identity.dim, identity.encoder
        self._collection = guarded(
            f"opening collection {self.name}",
            client.get_or_create_collection,
            self.name,
            embedding_function=None,
            configuration=CONFIGURATION,
            metadata={"dim": dim, "encoder": encoder, "normalised": True},
        )
        stored = self._collection.metadata or {}
        if stored.get("dim", dim) != dim:
            raise DimensionMismatchError(
                f"collection {self.name} holds {stored['dim']}-d vectors but the encoder makes {dim}-d ones; "
                "open it with the encoder it was built with, or use another path or namespace"
            )
        made_by = stored.get("encoder", "unknown")
        if identity.check_encoder and made_by not in ("unknown", encoder):
            raise EncoderMismatchError(
                f"collection {self.name} holds vectors made by encoder {made_by!r}, not {encoder!r}: their "
                f"similarities would be meaningless; open it with {made_by!r}, use another path or namespace, "
                "or pass check_encoder=False if you know the two encoders make the same vectors"
            )
        self.batch = guarded("reading the batch limit", client.get_max_batch_size)
        """Cells per Chroma write (its limit)."""

    def count(self) -> int:
        return int(guarded(f"counting {self.name}", self._collection.count))

    def read(self, include: list[str], where: dict[str, Any] | None = None) -> dict[str, Any]:
        """Every record's `include` fields (of the records `where` matches, when given; `ids` and each field: a
        list), read a batch limit's worth at a time: Chroma fails a read of more records with their metadata than
        SQLite takes variables in one statement. Every id alone (no field, no `where`) is read in one call, which
        that limit does not reach and which reading page after page makes cost in proportion to the square of the
        records. Chroma 1.5.9 opens the vector segment (and applies its pending log) on every read, so a segment
        damaged by a kill fails the read: that raises `VectorSegmentUnreadableError`, which opening the store by
        path repairs (`embedded.py`)."""
        if not include and where is None:
            return {"ids": self._page([], None)["ids"]}
        found: dict[str, Any] = {"ids": [], **{field: [] for field in include}}
        while True:
            page = self._page(include, where, limit=self.batch, offset=len(found["ids"]))
            for field, values in found.items():
                values.extend(page[field])
            if len(page["ids"]) < self.batch:
                return found

    def _page(
        self, include: list[str], where: dict[str, Any] | None, *, limit: int | None = None, offset: int = 0
    ) -> dict[str, Any]:
        """One page of `read`: at most `limit` records (None: every one) from `offset`."""
        paging = {} if limit is None else {"limit": limit, "offset": offset}
        try:
            page: dict[str, Any] = self._collection.get(
                include=include, **paging, **({} if where is None else {"where": where})
            )
            return page
        except backend_errors() as error:
            if "hnsw" not in str(error).lower():
                raise BackendUnavailableError(f"Chroma failed while reading {self.name}: {error}") from error
            raise VectorSegmentUnreadableError(
                f"Chroma cannot read the vector segment of {self.name} ({error}); its records are intact: "
                "opening the store by path (CellularMemory(path=...)) rebuilds the segment"
            ) from error

    def holds(self, where: dict[str, Any]) -> bool:
        """Whether any record matches `where` (one id read at most)."""
        return bool(guarded(f"reading {self.name}", self._collection.get, where=where, limit=1, include=[])["ids"])

    def present(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids the collection holds (read from its records)."""
        return set(self.records(ids, [])["ids"])

    def records(self, ids: Sequence[str], include: list[str]) -> dict[str, Any]:
        """The `include` fields of those of these ids the collection holds (`ids` and each field: a list)."""
        found: dict[str, Any] = {"ids": [], **{field: [] for field in include}}
        for start in range(0, len(ids), self.batch):
            chunk = guarded(
                f"reading {self.name}", self._collection.get, ids=list(ids[start : start + self.batch]), include=include
            )
            for field, values in found.items():
                values.extend(chunk[field])
        return found

    def add(
        self, batch: CellBatch, metadatas: Sequence[dict[str, Any]] | None = None, *, documents: bool = True
    ) -> None:
        """Write a batch in chunks (its texts as documents unless `documents` is False), all or nothing: a failed
        write removes what it may have written (the chunk that failed included: Chroma commits records before
        it updates the vector segment)."""
        attempted = 0
        try:
            for start in range(0, len(batch), self.batch):
                attempted = min(start + self.batch, len(batch))
                chunk = slice(start, attempted)
                guarded(
                    f"writing to {self.name}",
                    self._collection.add,
                    ids=batch.ids[chunk],
                    embeddings=batch.vectors[chunk],
                    **({"documents": batch.texts[chunk]} if documents else {}),
                    **({} if metadatas is None else {"metadatas": list(metadatas[chunk])}),
                )
        except Exception as error:
            try:
                self._collection.delete(ids=batch.ids[:attempted])
            except Exception as rollback_error:
                error.add_note(f"removing the batch's partial write failed as well: {rollback_error}")
            raise

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), self.batch):
            guarded(f"deleting from {self.name}", self._collection.delete, ids=list(ids[start : start + self.batch]))

    def upsert(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        texts: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Write these cells over the ones of the same ids (in chunks; not all or nothing); without `texts`
        the documents stay as they are."""
        for start in range(0, len(ids), self.batch):
            chunk = slice(start, start + self.batch)
            guarded(
                f"updating {self.name}",
                self._collection.upsert,
                ids=list(ids[chunk]),
                embeddings=vectors[chunk],
                **({} if texts is None else {"documents": list(texts[chunk])}),
                **({} if metadatas is None else {"metadatas": list(metadatas[chunk])}),
            )

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Set some metadata keys of these cells (Chroma merges them into what is stored)."""
        for start in range(0, len(ids), self.batch):
            stop = start + self.batch
            guarded(
                f"updating {self.name}", self._collection.update, ids=ids[start:stop], metadatas=metadatas[start:stop]
            )
