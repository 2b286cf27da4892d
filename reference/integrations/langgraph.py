"""`CellularStore`: the engine as a LangGraph `BaseStore` (extra `langgraph`), long-term memory for graphs.

    store = CellularStore(index={"dims": 384, "embed": embeddings, "fields": ["text"]}, path="memory")
    store.put(("users", "alice"), "home", {"text": "Alice lives in Lisbon", "kind": "fact"})
    store.search(("users",), query="where does Alice live?", filter={"kind": "fact"}, limit=4)
    graph = builder.compile(store=store)   # nodes take `store: BaseStore`, or call `langgraph.config.get_store()`

How items are held:

- a namespace is an engine scope; an item is a cell whose id names its namespace and key;
- the cell holds the value whole as JSON text (JSON's types: integers of any size, tuples come back as lists, at
  most `MAX_DEPTH` levels with the value the first), its `created_at` (kept when the key is written again) and
  its `updated_at`;
- a refused value is named by its key and namespace and the path inside it (`value['a'][0]`); keys of any length
  are held.

As in LangGraph's `InMemoryStore`, the reads of a batch see the store as it was before the batch's writes, and of
several puts of one key in a batch the last wins. Search:

- with a query, items rank by the cosine of their best vector (the engine's vector search), then the items
  without vectors follow (score None);
- without a query, or without an index, items come most recently updated first (LangGraph's SQLite store's order);
- `filter=` matches value fields as `InMemoryStore` does (equality, nested mappings and lists,
  `$eq $ne $gt $gte $lt $lte`); a filter key names a field even when it starts with `$` (`{"$and": ...}` is the
  field "$and"); a range takes a finite number and never matches a value that is not one, where `InMemoryStore`
  raises.

`list_namespaces` lists the namespaces that hold items. Calls from several threads are safe; TTLs are not
supported.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import operator
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from ..cells.table import CellRecord
from ..common.config import MemoryConfig
from ..common.errors import DimensionMismatchError, InvalidInputError
from ..common.validation import MAX_DEPTH, MAX_EPISODE_CHARS, MAX_TEXT_CHARS, check_json_object, check_text
from ..encoders import Encoder
from ..memory import CellularMemory
from .langchain import EmbeddingsEncoder

Namespace = tuple[str, ...]
DEFAULTS: dict[str, Any] = {"namespace": "langgraph", "lexical": False}
"""Engine settings of a store unless given: its own collection, and no lexical index (queries are vectors)."""
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "$eq": operator.eq, "$ne": operator.ne, "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt,
    "$lte": operator.le,
}  # fmt: skip
RANGES = frozenset({"$gt", "$gte", "$lt", "$lte"})


class _Put(NamedTuple):
    """A checked put: the value as stored (None: a delete) and the texts of it to embed."""

    namespace: Namespace
    key: str
    value: dict[str, Any] | None
    texts: list[str]


class _Plan(NamedTuple):
    """What a batch writes (one put per key, the last) and what it embeds (each distinct text once)."""

    puts: list[_Put]
    queries: list[str]
    texts: list[str]


class _Embedded(NamedTuple):
    """A batch's embeddings: per query its vector (None: no direction), per text its vector."""

    queries: dict[str, np.ndarray | None]
    texts: dict[str, np.ndarray | None]


class _Unindexed:
    """The encoder of a store without an index: nothing is embedded, every cell holds one fixed vector."""

    name = "langgraph:unindexed"
    dim = 1

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.ones((len(texts), 1), dtype=np.float32)


class CellularStore(BaseStore):
    """A `CellularMemory` behind LangGraph's `BaseStore` interface, sync and async (thread-safe).

    `put`, `get`, `search`, `delete`, `list_namespaces` and their async forms are `BaseStore`'s, each one
    operation of `batch`; what differs from `InMemoryStore` is in the module's docstring.

    Args:
        index: None (nothing embedded; searches order by time) or LangGraph's index configuration: `dims`, `embed`
            (an `Embeddings`, a function, or a provider string) and `fields` (JSON paths, by default the whole
            value); each text found at those paths of a put is one vector of the item (`put(..., index=False)`:
            none, `index=[paths]`: these), and writing the key again replaces them.
        path: None keeps the memory in this process; a folder is an embedded store, persisted.
        **options: `MemoryConfig` fields (by default its own namespace, "langgraph", and no lexical index).

    Raises:
        InvalidInputError: a bad index configuration or option.
        EncoderMismatchError, DimensionMismatchError: a store at `path` made with another embedding model.

    Example:
        ```python
        with CellularStore(index={"dims": 384, "embed": embeddings, "fields": ["text"]}, path="memory") as store:
            store.put(("users", "alice"), "home", {"text": "Alice lives in Lisbon"})
            [item] = store.search(("users",), query="where does Alice live?", limit=1)
        ```
    """

    def __init__(self, *, index: IndexConfig | None = None, path: str | None = None, **options: Any) -> None:
        self.index_config = index
        self.embeddings: Embeddings | None = None
        self._fields: list[tuple[str, str | list[str]]] = []
        encoder: Encoder = _Unindexed()
        if index is not None:
            dims, self.embeddings, self._fields = _index(index)
            encoder = EmbeddingsEncoder(self.embeddings, dims)
        self._dim = encoder.dim
        self._memory = CellularMemory(path=path, encoder=encoder, config=MemoryConfig(**{**DEFAULTS, **options}))
        self._writing = threading.Lock()
        self._keys = _Keys(self._memory.ids())

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `GetOp`, `PutOp`, `SearchOp` and `ListNamespacesOp` operations: every one checked before any runs,
        the reads against the store as it was, then the puts as one engine write (all or nothing).

        Returns:
            One result per operation, in order (an `Item` or None, None, a list of `SearchItem`, a list of
            namespaces).

        Raises:
            InvalidInputError: a bad operation (its namespace, key, value, filter, page or paths); nothing runs.
            InvalidNamespaceError: a namespace LangGraph refuses (empty, a label with ".", the root "langgraph").
            NotImplementedError: a put with a TTL.
            DimensionMismatchError: the embedding model returned vectors of another dimension.
        """
        checked = _checked(ops)
        plan = self._plan(checked)
        return self._run(checked, plan, self._embedded(plan))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch`, embedding with the model's async methods and running the engine's work on a thread."""
        checked = _checked(ops)
        plan = self._plan(checked)
        embedded = await self._aembedded(plan)
        return await asyncio.to_thread(self._run, checked, plan, embedded)

    def close(self) -> None:
        """Close the memory (persisting it); further calls raise."""
        self._memory.close()

    def __enter__(self) -> CellularStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- planning and embedding ----------------------------------------------------------

    def _plan(self, ops: list[Op]) -> _Plan:
        puts = {(op.namespace, op.key): self._put(op) for op in ops if isinstance(op, PutOp)}
        queries = [op.query for op in ops if isinstance(op, SearchOp) and op.query] if self.embeddings else []
        texts = [text for put in puts.values() for text in put.texts]
        return _Plan(list(puts.values()), list(dict.fromkeys(queries)), list(dict.fromkeys(texts)))

    def _put(self, op: PutOp) -> _Put:
        if op.value is None:
            return _Put(op.namespace, op.key, None, [])
        try:
            value = check_json_object(op.value, what="value")
        except InvalidInputError as error:
            raise InvalidInputError(f"the value of key {op.key!r:.80} in namespace {op.namespace}: {error}") from None
        return _Put(op.namespace, op.key, value, self._texts(value, op.index))

    def _texts(self, value: dict[str, Any], index: Any) -> list[str]:
        """The texts of a value to embed, as `InMemoryStore` finds them (each text of a path, in order)."""
        if self.embeddings is None or index is False:
            return []
        fields = self._fields if index is None else [_field(path) for path in index]
        return [text for _, tokens in fields for text in get_text_at_path(value, tokens)]

    def _embedded(self, plan: _Plan) -> _Embedded:
        if self.embeddings is None:
            return _Embedded({}, {})
        queries = [self.embeddings.embed_query(query) for query in plan.queries]
        texts = self.embeddings.embed_documents(plan.texts) if plan.texts else []
        return _embedded(plan, queries, texts, self._dim)

    async def _aembedded(self, plan: _Plan) -> _Embedded:
        if self.embeddings is None:
            return _Embedded({}, {})
        queries = await asyncio.gather(*(self.embeddings.aembed_query(query) for query in plan.queries))
        texts = await self.embeddings.aembed_documents(plan.texts) if plan.texts else []
        return _embedded(plan, list(queries), texts, self._dim)

    # ---- running a batch -----------------------------------------------------------------

    def _run(self, ops: list[Op], plan: _Plan, embedded: _Embedded) -> list[Result]:
        """Every read against the store as it is, then the writes."""
        results = [self._read(op, embedded) for op in ops]
        if plan.puts:
            self._write(plan.puts, embedded.texts)
        return results

    def _read(self, op: Op, embedded: _Embedded) -> Result:
        if isinstance(op, GetOp):
            item = _cell_id(op.namespace, op.key)
            record = self._records([item]).get(item)
            return None if record is None else _item(record)
        if isinstance(op, SearchOp):
            return self._search(op, embedded.queries.get(op.query) if op.query else None)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        return None

    def _write(self, puts: list[_Put], vectors: dict[str, np.ndarray | None]) -> None:
        """The puts as one engine write (all or nothing), then the cells they left unused deleted."""
        cells = _Cells(self._dim)
        unused: list[str] = []
        with self._writing:
            now = datetime.now(UTC)  # under the lock: a key's updated_at never goes back
            old = self._records([_cell_id(put.namespace, put.key) for put in puts])
            for put in puts:
                before = old.get(_cell_id(put.namespace, put.key))
                written = 0 if put.value is None else cells.add_item(put, before, now, vectors)
                unused += [_cell_id(put.namespace, put.key, slot) for slot in range(written, _cell_count(before))]
            if cells.ids:
                self._memory.add(
                    cells.texts, vectors=cells.vectors, ids=cells.ids, metadata=cells.metadata,
                    scope=cells.scopes, upsert=True,
                )  # fmt: skip
            self._keys.add([put for put in puts if put.value is not None])
            unused = [cell_id for cell_id in unused if cell_id in self._memory]
            if unused:
                self._memory.delete(unused)
            self._keys.remove([put for put in puts if put.value is None])

    # ---- reading -------------------------------------------------------------------------

    def _search(self, op: SearchOp, vector: np.ndarray | None) -> list[SearchItem]:
        """Scored items (best first), then the others newest first; the page `op` asks for."""
        need = op.offset + op.limit
        if op.limit == 0:
            return []
        ids = self._item_ids(op.namespace_prefix)
        records = None
        if op.filter:
            records = [r for r in self._records(ids).values() if _matches(_value(r), op.filter)]
            ids = [r.id for r in records]
        restricted = bool(op.namespace_prefix or op.filter)
        found = [] if vector is None else self._ranked(vector, ids, need, restricted=restricted)
        if len(found) < need:
            scored = {record.id for record, _ in found}
            rest = list(self._records(ids).values()) if records is None else records
            found += [(r, None) for r in _newest_first(rest) if r.id not in scored and _unscored(r, vector)]
        return [_search_item(record, score) for record, score in found[op.offset : need]]

    def _ranked(
        self, vector: np.ndarray, ids: list[str], need: int, *, restricted: bool
    ) -> list[tuple[CellRecord, float | None]]:
        """The best `need` items by their best vector's cosine (more hits asked for until enough items)."""
        if not ids:
            return []
        where: dict[str, Any] = {"indexed": True}
        if restricted:
            where = {"$and": [where, {"item": {"$in": ids}}]}
        k = need
        while True:
            hits = self._memory.search(vector, k=k, where=where)
            records = self._records(list(dict.fromkeys(hit.metadata["item"] for hit in hits)))
            best: dict[str, tuple[CellRecord, float | None]] = {}
            for hit in hits:
                record = records.get(hit.metadata["item"])
                if record is not None and record.id not in best and hit.metadata["slot"] < _cell_count(record):
                    best[record.id] = (record, hit.score)
            if len(best) >= need or len(hits) < k:
                return list(best.values())[:need]
            k *= 2

    def _namespaces(self, op: ListNamespacesOp) -> list[Namespace]:
        held = self._keys.namespaces()
        matching = [ns for ns in held if all(_path_matches(c, ns) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            matching = list({ns[: op.max_depth] for ns in matching})
        return sorted(matching)[op.offset : op.offset + op.limit]

    def _item_ids(self, prefix: Namespace) -> list[str]:
        """The ids of the items in every namespace that starts with `prefix`."""
        return self._keys.item_ids(prefix)

    def _records(self, ids: list[str]) -> dict[str, CellRecord]:
        return {record.id: record for record in self._memory.get_many(ids)} if ids else {}


class _Keys:
    """Namespace → the keys of its items: what a search's namespace prefix and `list_namespaces` read, so that
    neither scans every cell id. Built from the memory's ids when the store opens, then kept by its writes."""

    def __init__(self, cell_ids: Iterable[str]) -> None:
        self._keys: dict[Namespace, set[str]] = {}
        self._lock = threading.Lock()
        """Guards the mapping: searches read it while a write changes it."""
        for cell_id in cell_ids:
            parsed = _parsed(cell_id)
            if parsed is not None:
                self._keys.setdefault(parsed[0], set()).add(parsed[1])

    def namespaces(self) -> list[Namespace]:
        """The namespaces that hold items."""
        with self._lock:
            return list(self._keys)

    def item_ids(self, prefix: Namespace) -> list[str]:
        """The first-cell ids of the items of every namespace that starts with `prefix`."""
        with self._lock:
            held = [(ns, list(keys)) for ns, keys in self._keys.items() if ns[: len(prefix)] == prefix]
        return [_cell_id(ns, key) for ns, keys in held for key in keys]

    def add(self, puts: Iterable[_Put]) -> None:
        """Items the memory now holds."""
        with self._lock:
            for put in puts:
                self._keys.setdefault(put.namespace, set()).add(put.key)

    def remove(self, puts: Iterable[_Put]) -> None:
        """Items the memory no longer holds (a namespace left without items is no longer listed)."""
        with self._lock:
            for put in puts:
                keys = self._keys.get(put.namespace, set())
                keys.discard(put.key)
                if not keys:
                    self._keys.pop(put.namespace, None)


class _Cells:
    """The cells of one engine write, column by column."""

    def __init__(self, dim: int) -> None:
        self.placeholder = np.eye(1, dim, dtype=np.float32)[0]
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.vectors: list[np.ndarray] = []
        self.metadata: list[dict[str, Any]] = []
        self.scopes: list[str] = []

    def add_item(
        self, put: _Put, before: CellRecord | None, now: datetime, vectors: dict[str, np.ndarray | None]
    ) -> int:
        """An item's cells: slot 0 holds its value (and its first vector), each further slot a vector. Returns
        how many cells it has."""
        item = _cell_id(put.namespace, put.key)
        embedded = [(text, vector) for text in put.texts if (vector := vectors.get(text)) is not None]
        created = now if before is None else _times(before)[0]
        first_text, first_vector = embedded[0] if embedded else (item, self.placeholder)
        record = {"item": item, "slot": 0, "indexed": bool(embedded), "vectors": len(embedded),
                  "value": json.dumps(put.value, ensure_ascii=False), "times": [_iso(created), _iso(now)]}  # fmt: skip
        self._cell(item, _cell_text(first_text, item), first_vector, record, put.namespace)
        for slot, (text, vector) in enumerate(embedded[1:], start=1):
            metadata = {"item": item, "slot": slot, "indexed": True}
            self._cell(_cell_id(put.namespace, put.key, slot), _cell_text(text, item), vector, metadata, put.namespace)
        return max(1, len(embedded))

    def _cell(self, cell_id: str, text: str, vector: np.ndarray, metadata: dict[str, Any], ns: Namespace) -> None:
        self.ids.append(cell_id)
        self.texts.append(text)
        self.vectors.append(vector)
        self.metadata.append(metadata)
        self.scopes.append(_scope(ns))


# ---- ids, scopes and items ---------------------------------------------------------------


def _cell_id(namespace: Namespace, key: str, slot: int = 0) -> str:
    """An item's cell id: JSON of its namespace and key (and, past its first cell, the slot)."""
    return json.dumps([list(namespace), key] if slot == 0 else [list(namespace), key, slot])


def _parsed(cell_id: str) -> tuple[Namespace, str] | None:
    """The namespace and key of an item's first cell; None for its other cells and ids no store made."""
    try:
        parts = json.loads(cell_id)
    except ValueError:
        return None
    if not (isinstance(parts, list) and len(parts) == 2 and isinstance(parts[0], list) and isinstance(parts[1], str)):
        return None
    return tuple(parts[0]), parts[1]


def _scope(namespace: Namespace) -> str:
    """A namespace's scope: its JSON, or the JSON's SHA-256 when longer than a scope's name may be."""
    encoded = json.dumps(list(namespace))
    return encoded if len(encoded) <= MAX_EPISODE_CHARS else "sha256:" + hashlib.sha256(encoded.encode()).hexdigest()


def _cell_count(record: CellRecord | None) -> int:
    return 0 if record is None else max(1, int(record.metadata["vectors"]))


def _unscored(record: CellRecord, query: np.ndarray | None) -> bool:
    """Whether an item follows the scored ones: every item without a query, only those without vectors with one."""
    return query is None or record.metadata["vectors"] == 0


def _item(record: CellRecord) -> Item:
    found = _search_item(record, None)
    return Item(value=found.value, key=found.key, namespace=found.namespace, created_at=found.created_at,
                updated_at=found.updated_at)  # fmt: skip


def _search_item(record: CellRecord, score: float | None) -> SearchItem:
    parsed = _parsed(record.id)
    assert parsed is not None, record.id
    created, updated = _times(record)
    return SearchItem(parsed[0], parsed[1], _value(record), created, updated, score)


def _value(record: CellRecord) -> dict[str, Any]:
    """An item's value: JSON text in its first cell (integers of any size, nesting the engine's metadata would
    refuse); a mapping in a store written before."""
    held = record.metadata["value"]
    value: dict[str, Any] = json.loads(held) if isinstance(held, str) else held
    return value


def _times(record: CellRecord) -> tuple[datetime, datetime]:
    created, updated = record.metadata["times"]
    return datetime.fromisoformat(created), datetime.fromisoformat(updated)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def _newest_first(records: Iterable[CellRecord]) -> list[CellRecord]:
    """Most recently updated first; ties by namespace and key."""
    by_name = sorted(records, key=lambda r: _parsed(r.id) or ((), ""))
    return sorted(by_name, key=lambda r: _times(r)[1], reverse=True)


def _cell_text(text: str, item: str) -> str:
    """A text as a cell holds it; one the engine refuses (blank, a NUL, too long) is stood in for by the item's id
    (the value holds the text, the vector is its embedding), cut to a text's length: the id is JSON, escaped to
    ASCII, so any cut of it is a text."""
    try:
        return check_text(text)
    except InvalidInputError:
        return item[:MAX_TEXT_CHARS]


# ---- index configuration and embeddings --------------------------------------------------


def _index(index: Any) -> tuple[int, Embeddings, list[tuple[str, str | list[str]]]]:
    """The dimension, embedding model and fields of an index configuration."""
    if not isinstance(index, Mapping) or "embed" not in index or "dims" not in index:
        raise InvalidInputError('index must be a mapping with "dims" and "embed" (and optionally "fields")')
    dims, fields = index["dims"], index.get("fields") or ["$"]
    if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
        raise InvalidInputError(f'index["dims"] must be a positive integer, got {dims!r}')
    _check_paths(fields, 'index["fields"]')
    return dims, ensure_embeddings(index["embed"]), [_field(path) for path in fields]


def _field(path: str) -> tuple[str, str | list[str]]:
    """A JSON path and its tokens (the whole value, "$", as itself), as `InMemoryStore` reads it."""
    return (path, path) if path == "$" else (path, tokenize_path(path))


def _embedded(plan: _Plan, queries: list[list[float]], texts: list[list[float]], dims: int) -> _Embedded:
    """A batch's embeddings, checked: one per text, each of the index's dimension."""
    if len(texts) != len(plan.texts):
        raise InvalidInputError(f"the embedding model returned {len(texts)} vectors for {len(plan.texts)} texts")
    return _Embedded(
        {query: _direction(vector, dims) for query, vector in zip(plan.queries, queries)},
        {text: _direction(vector, dims) for text, vector in zip(plan.texts, texts)},
    )


def _direction(vector: Sequence[float], dims: int) -> np.ndarray | None:
    """An embedding as an array; None when it has no direction (zero, NaN or infinite), so ranks nothing."""
    try:
        array = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(f"the embedding model returned a {type(vector).__name__}, not numbers") from None
    if array.shape != (dims,):
        raise DimensionMismatchError(
            f"the embedding model returned vectors of shape {array.shape}, but the index has dims={dims}"
        )
    norm = float(np.linalg.norm(array))
    return array if np.isfinite(norm) and norm > 0 else None


# ---- filters and namespace patterns ------------------------------------------------------


def _matches(value: Mapping[str, Any], filter: Mapping[str, Any]) -> bool:
    """Whether a value matches a checked filter, as `InMemoryStore` matches it."""
    return all(_compare(value.get(key), wanted) for key, wanted in filter.items())


def _compare(held: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if _is_operators(wanted):
            return all(_apply(held, name, operand) for name, operand in wanted.items())
        return isinstance(held, Mapping) and all(_compare(held.get(k), w) for k, w in wanted.items())
    if isinstance(wanted, list | tuple):
        return isinstance(held, list | tuple) and len(held) == len(wanted) and all(map(_compare, held, wanted))
    return bool(held == wanted)


def _apply(held: Any, name: str, operand: Any) -> bool:
    if name not in RANGES:
        return bool(OPERATORS[name](held, operand))
    try:
        number = float(held)
    except (TypeError, ValueError, OverflowError):
        return False
    return bool(OPERATORS[name](number, float(operand)))


def _is_operators(condition: Mapping[Any, Any]) -> bool:
    return any(isinstance(key, str) and key.startswith("$") for key in condition)


def _path_matches(condition: MatchCondition, namespace: Namespace) -> bool:
    """Whether a namespace starts (or ends) with a pattern's labels, "*" matching any label."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(wanted in ("*", label) for wanted, label in zip(path, labels))


# ---- checks on operations ----------------------------------------------------------------


def _checked(ops: Iterable[Op]) -> list[Op]:
    """Every operation checked before any runs: a batch with a bad one does nothing."""
    if isinstance(ops, str | bytes | Mapping) or not isinstance(ops, Iterable):
        raise InvalidInputError(f"batch takes an iterable of operations, got {type(ops).__name__}")
    checked = list(ops)
    for op in checked:
        _check_op(op)
    return checked


def _check_op(op: Any) -> None:
    if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
        raise InvalidInputError(f"unknown operation {type(op).__name__}; use GetOp, PutOp, SearchOp, ListNamespacesOp")
    if isinstance(op, ListNamespacesOp):
        _check_listing(op)
    else:
        _check_namespace(op.namespace_prefix if isinstance(op, SearchOp) else op.namespace)
    validate_op_namespace(op)
    if isinstance(op, PutOp):
        _check_put(op)
    elif isinstance(op, GetOp):
        _check_key(op.key)
    elif isinstance(op, SearchOp):
        _check_search(op)


def _check_namespace(namespace: Any) -> None:
    if not isinstance(namespace, tuple):
        raise InvalidNamespaceError(
            f"a namespace is a tuple of strings, e.g. ('users', 'alice'), got {type(namespace).__name__} "
            f"{namespace!r:.80}"
        )


def _check_key(key: Any) -> None:
    if not isinstance(key, str):
        raise InvalidInputError(f"a key is a str, got {type(key).__name__}")


def _check_put(op: PutOp) -> None:
    if not op.namespace:
        raise InvalidNamespaceError("an item's namespace cannot be empty")
    if op.namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'the root label of a namespace cannot be "langgraph", got {op.namespace}')
    _check_key(op.key)
    if op.value is not None and not isinstance(op.value, Mapping):
        raise InvalidInputError(f"a value is a mapping with string keys (None deletes), got {type(op.value).__name__}")
    if op.index is not None and op.index is not False:
        _check_paths(op.index, "index")
    if op.ttl is not None:
        raise NotImplementedError("CellularStore does not support TTLs; put with ttl=None")


def _check_paths(paths: Any, what: str) -> None:
    if not isinstance(paths, list | tuple) or not all(isinstance(path, str) and path for path in paths):
        raise InvalidInputError(f"{what} must be False, None or a list of JSON paths (strings), got {paths!r:.100}")


def _check_search(op: SearchOp) -> None:
    if op.query is not None and not isinstance(op.query, str):
        raise InvalidInputError(f"a query is a str, got {type(op.query).__name__}")
    _check_filter(op.filter)
    _check_page(op.limit, op.offset)


def _check_listing(op: ListNamespacesOp) -> None:
    conditions = op.match_conditions or ()
    if not isinstance(conditions, tuple | list):
        raise InvalidInputError(f"match_conditions must be a tuple of MatchCondition, got {type(conditions).__name__}")
    for condition in conditions:
        if not isinstance(condition, MatchCondition) or condition.match_type not in ("prefix", "suffix"):
            raise InvalidInputError(f"a match condition is a MatchCondition of 'prefix' or 'suffix', got {condition!r}")
        _check_namespace(condition.path)
    depth = op.max_depth
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise InvalidInputError(f"max_depth must be None or an integer >= 0, got {depth!r}")
    _check_page(op.limit, op.offset)


def _check_page(limit: Any, offset: Any) -> None:
    for name, number in (("limit", limit), ("offset", offset)):
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise InvalidInputError(f"{name} must be an integer >= 0, got {number!r}")


def _check_filter(filter: Any) -> None:
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidInputError(f"filter must be a mapping of value fields to conditions, got {type(filter).__name__}")
    for key, wanted in filter.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"filter keys name value fields (strings), got {key!r}")
        _check_condition(key, wanted)


def _check_condition(field: str, wanted: Any, depth: int = 1) -> None:
    """A filter's condition on a field; nested at most `MAX_DEPTH` levels, as a value is (a deeper one could match
    no value, and a walk of it could exhaust the stack)."""
    if depth > MAX_DEPTH:
        raise InvalidInputError(f"filter on {field!r:.200} nests deeper than {MAX_DEPTH} levels")
    if isinstance(wanted, list | tuple):
        for part in wanted:
            _check_condition(field, part, depth + 1)
    elif isinstance(wanted, Mapping) and _is_operators(wanted):
        for name, operand in wanted.items():
            if name not in OPERATORS:
                raise InvalidInputError(f"filter on {field!r}: unknown operator {name!r}; use {sorted(OPERATORS)}")
            if name in RANGES and not _finite_number(operand):
                raise InvalidInputError(f"filter on {field!r}: {name} compares finite numbers, got {operand!r:.50}")
    elif isinstance(wanted, Mapping):
        for key, part in wanted.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"filter on {field!r}: keys of nested conditions are strings, got {key!r}")
            _check_condition(f"{field}.{key}", part, depth + 1)


def _finite_number(value: Any) -> bool:
    """A number (not a bool) that a range compares as a finite float."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False
