"""LanceDB embedded (extra `lancedb`): one table in the context's work directory, searched flat (`lancedb`) or
through an IVF-PQ index (`lancedb-ivfpq`).

A row holds the document's id, scope, text, metadata (Lance's JSON type) and vector; cosine distance, and a
hit's score is 1 − distance. `add` appends (`Table.add`), `upsert` merges on the id (`merge_insert`); ids are
unique across scopes, so an upsert of an id that another scope holds is refused (`ValueError`) and writes
nothing. A scope is a column and a `where` is SQL over the JSON metadata, both applied before the vector search
(`prefilter`). After more than 20 writes, or 100,000 rows written, since the last, the table is optimized
(compacted, new rows added to the index), as LanceDB's documentation advises. The IVF-PQ index is trained with
LanceDB's defaults when the table first holds `index_rows` rows (its PQ codebooks need 256); rows written
after it are searched flat until the next optimize. Its searches probe `nprobes` partitions, more when those
hold fewer than k matching rows, and rescore `refine_factor` × k candidates with their full vectors.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from typing import Any, ClassVar, cast

from harness.protocol import Document, Query, SearchHit, SystemContext, check_k, check_where, fold, is_number
from harness.systems.registry import missing_extra

from .vectors import refuse_other_scopes, stack_unit, vector_of


def _forget_the_data_folder() -> None:
    """LanceDB takes any imported module named `datasets` for Hugging Face's, and fails converting from it (when it
    is imported, and on every write). Where the working directory is on the path (the tests, `PYTHONPATH=.`),
    transformers imports this repository's data folder `datasets/` under that name, as a namespace package: it is
    forgotten before LanceDB is imported, and LanceDB's converter for it marked as done (the adapter writes Arrow
    tables only)."""
    module = sys.modules.get("datasets")
    if module is not None and getattr(module, "__file__", None) is None:
        del sys.modules["datasets"]


_forget_the_data_folder()
try:
    import lancedb
    import pyarrow as pa
    from lancedb import scannable
    from lancedb.query import LanceVectorQueryBuilder
except ModuleNotFoundError as error:
    raise missing_extra("lancedb", "lancedb", error) from None
scannable._registered_modules.add("datasets")

TABLE = "documents"
OPTIMIZE_AFTER_WRITES = 20
OPTIMIZE_AFTER_ROWS = 100_000
IN_LIST = 1000
"""Ids per `id IN (...)` clause."""


class LanceTable:
    query_params: ClassVar[dict[str, list[int]]] = {"nprobes": [1, 2, 4, 8, 16, 32, 64]}

    def __init__(
        self,
        context: SystemContext,
        *,
        index: str | None = None,
        index_rows: int = 256,
        nprobes: int = 20,
        refine_factor: int = 10,
    ) -> None:
        if index not in (None, "ivf_pq"):
            raise ValueError(f"index must be None (flat) or 'ivf_pq', not {index!r}")
        self.name = "lancedb-ivfpq" if index else "lancedb"
        self.capabilities = frozenset({"vectors", "persist", "delete", "scopes", "filters", "update", "get"}) | (
            {"tunable"} if index else set()
        )
        self.index_rows, self.refine_factor = index_rows, refine_factor
        self.nprobes = self.default_nprobes = nprobes
        self._indexed = index is not None
        self._schema = pa.schema(
            [
                pa.field("id", pa.string()),
                pa.field("scope", pa.string()),
                pa.field("text", pa.string()),
                pa.field("metadata", pa.json_()),
                pa.field("vector", pa.list_(pa.float32(), context.vector_dim())),
            ]
        )
        self._db = lancedb.connect(context.workdir / "lancedb")
        if TABLE in self._db.list_tables().tables:
            self._table = self._db.open_table(TABLE)
        else:
            self._table = self._db.create_table(TABLE, schema=self._schema)
        self._writing = threading.Lock()
        self._writes = self._rows_written = 0

    def add(self, docs: Sequence[Document]) -> None:
        if docs:
            with self._writing:
                self._table.add(self._rows(docs))
                self._after_write(len(docs))

    def upsert(self, docs: Sequence[Document]) -> None:
        if not docs:
            return
        with self._writing:
            scope_of = {d.id: d.scope for d in docs}
            held = self._select(list(scope_of), ["id", "scope"])
            refuse_other_scopes([(row["id"], row["scope"]) for row in held], scope_of)
            merge = self._table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            merge.execute(self._rows(docs))
            self._after_write(len(docs))

    def delete(self, doc_ids: Sequence[str]) -> None:
        with self._writing:
            for start in range(0, len(doc_ids), IN_LIST):
                self._table.delete(f"id IN ({', '.join(map(sql, doc_ids[start : start + IN_LIST]))})")
            self._after_write(0)

    def get(self, doc_ids: Sequence[str]) -> list[Document]:
        row_of = {row["id"]: row for row in self._select(doc_ids, ["id", "scope", "text", "metadata"])}
        return [
            Document(i, row_of[i]["text"], None, json.loads(row_of[i]["metadata"]), row_of[i]["scope"])
            for i in doc_ids
            if i in row_of
        ]

    def search(self, query: Query, *, k: int) -> list[SearchHit]:
        k = check_k(k)
        conditions = [] if query.scope is None else [f"scope = {sql(query.scope)}"]
        if query.where is not None:
            conditions.append(where_sql(query.where))
        search = cast(LanceVectorQueryBuilder, self._table.search(vector_of(query))).distance_type("cosine").limit(k)
        if self._indexed:
            search = search.minimum_nprobes(self.nprobes).maximum_nprobes(0).refine_factor(self.refine_factor)
        if conditions:
            search = search.where(" AND ".join(conditions), prefilter=True)
        found = search.select(["id", "_distance"]).to_arrow()
        return [SearchHit(i, 1.0 - d) for i, d in zip(found["id"].to_pylist(), found["_distance"].to_pylist())]

    def set_query_params(self, **params: Any) -> None:
        """`nprobes`; no arguments restore the default."""
        self.nprobes = int(params.get("nprobes", self.default_nprobes))

    def close(self) -> None:
        """Nothing to release: an embedded LanceDB table keeps no file open between calls."""

    def _rows(self, docs: Sequence[Document]) -> pa.Table:
        matrix = stack_unit(docs)
        columns = {
            "id": [d.id for d in docs],
            "scope": [d.scope for d in docs],
            "text": [d.text for d in docs],
            "metadata": pa.array([json.dumps(dict(d.metadata)) for d in docs], type=pa.json_()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1]),
        }
        return pa.table(columns, schema=self._schema)

    def _select(self, doc_ids: Sequence[str], columns: list[str]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for start in range(0, len(doc_ids), IN_LIST):
            where = f"id IN ({', '.join(map(sql, doc_ids[start : start + IN_LIST]))})"
            rows += self._table.search().where(where).select(columns).limit(None).to_arrow().to_pylist()
        return rows

    def _after_write(self, rows: int) -> None:
        """Optimize as LanceDB advises; train the index when the table first holds `index_rows` rows."""
        self._writes, self._rows_written = self._writes + 1, self._rows_written + rows
        if self._writes > OPTIMIZE_AFTER_WRITES or self._rows_written >= OPTIMIZE_AFTER_ROWS:
            self._table.optimize()
            self._writes = self._rows_written = 0
        if self._indexed and not self._table.list_indices() and self._table.count_rows() >= self.index_rows:
            self._table.create_index("vector", config=lancedb.index.IvfPq(distance_type="cosine"))


def sql(value: str) -> str:
    """A string as an SQL literal."""
    return "'" + value.replace("'", "''") + "'"


def where_sql(where: Any) -> str:
    """A `Query.where` as SQL over the JSON metadata column."""
    return fold(
        check_where(where),
        _clause,
        lambda parts: "(" + " AND ".join(parts) + ")",
        lambda parts: "(" + " OR ".join(parts) + ")",
    )


def _clause(key: str, operator: str, value: Any) -> str:
    if operator in ("$eq", "$in"):
        return "(" + " OR ".join(_equals(key, v) for v in (value if operator == "$in" else [value])) + ")"
    if operator in ("$ne", "$nin"):  # the key present, with another value (as Chroma's `$ne`)
        values = value if operator == "$nin" else [value]
        return f"({_json(key)} IS NOT NULL AND NOT ({' OR '.join(_equals(key, v) for v in values)}))"
    if not is_number(value):
        raise ValueError(f"{key}: {operator} compares numbers, got {value!r:.50}")
    comparison = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[operator]
    return f"COALESCE({_number(key)} {comparison} {float(value)!r}, FALSE)"


def _equals(key: str, value: Any) -> str:
    """True or false, never NULL (a key missing, or of another type, is not equal)."""
    if isinstance(value, bool):
        return f"COALESCE({_json(key)} = {sql(json.dumps(value))}, FALSE)"
    if is_number(value):
        return f"COALESCE({_number(key)} = {float(value)!r}, FALSE)"
    if isinstance(value, str):
        return f"COALESCE({_json(key)} LIKE '\"%' AND json_get_string(metadata, {sql(key)}) = {sql(value)}, FALSE)"
    raise ValueError(f"{key}: values are strings, numbers or booleans, got {value!r:.50}")


def _json(key: str) -> str:
    """The value under a top-level key as JSON text (NULL without the key)."""
    return f"json_extract(metadata, {sql('$[' + json.dumps(key) + ']')})"


def _number(key: str) -> str:
    """The value under a key as a number (NULL when it is not one)."""
    return f"TRY_CAST({_json(key)} AS DOUBLE)"
