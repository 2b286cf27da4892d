"""Checks on everything that enters the engine: texts, vectors, ids, k, importance, metadata, timestamps.

Each check raises a typed error before any state changes, so a failed call loses nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from ..kernels import rows as row_kernels
from .errors import DimensionMismatchError, InvalidInputError

MAX_TEXT_CHARS = 1_000_000
CHECK_BLOCK = 4096
"""Items checked together by `plain_strings`."""
MAX_INTERVAL_S = 7 * 86_400.0
"""The longest sleep interval (a week): threading's waits overflow past about 292 years, and NaN never ends."""
T = TypeVar("T")


def check_texts(texts: Any) -> list[str]:
    """A non-empty list of non-blank strings of at most `MAX_TEXT_CHARS` characters."""
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Sequence) or len(texts) == 0:
        raise InvalidInputError("texts must be a non-empty string or a non-empty list of strings")
    items = list(texts)
    if not (plain_strings(items) and not any(map(str.isspace, items)) and max(map(len, items)) <= MAX_TEXT_CHARS):
        for position, text in enumerate(items):
            check_text(text, what=f"texts[{position}]")
    return items


def plain_strings(items: list[Any]) -> bool:
    """Whether every item is a non-empty str without NUL that UTF-8 can encode, tested a block at a time
    (a few calls per block, not several per item, which a million-cell write would feel). When it is False, the
    per-item checks name the culprit."""
    for start in range(0, len(items), CHECK_BLOCK):
        block = items[start : start + CHECK_BLOCK]
        try:
            joined = "\x01".join(block)
            joined.encode("utf-8")
        except (TypeError, UnicodeEncodeError):
            return False
        if not all(block) or "\x00" in joined:
            return False
    return True


def check_text(text: Any, *, what: str = "text") -> str:
    """One non-blank string of bounded length that UTF-8 can encode (NUL bytes are rejected: stores
    truncate at them; so are lone surrogates: no store or encoder can write them)."""
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a str, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError(f"{what} is empty or only whitespace; pass some text")
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidInputError(f"{what} has {len(text):,} characters, above the limit of {MAX_TEXT_CHARS:,}; split it")
    check_encodable(text, what=what)
    if "\x00" in text:
        raise InvalidInputError(f"{what} contains a NUL character; remove it")
    return text


def check_encodable(text: str, *, what: str) -> None:
    """Text that UTF-8 can encode: a lone surrogate (half of a UTF-16 pair, e.g. "\\ud800") cannot be."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidInputError(
            f"{what} holds {error.object[error.start : error.end]!r}, which UTF-8 cannot encode"
        ) from None


def check_texts_per_item(name: str, value: Any, count: int) -> list[str]:
    """One text for every item, or one text per item (`context=`)."""
    return per_item(name, value, count, "", lambda text: check_text(text, what=name))


def check_interval(seconds: Any) -> float:
    """A sleep interval: finite seconds in (0, `MAX_INTERVAL_S`]."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds <= MAX_INTERVAL_S:
        raise InvalidInputError(
            f"the sleep interval must be a number of seconds in (0, {MAX_INTERVAL_S:g}], got {seconds!r}"
        )
    return float(seconds)


def unit_vector(vector: Any, *, dim: int, what: str = "query vector") -> np.ndarray:
    """One vector (1-D, or one row), L2-normalised: the fast path for a query (`kernels.rows.checked_unit`: its
    float64 sum of squares is NaN, infinite or zero exactly when the vector is unusable); anything unusual goes
    through `unit_rows`. Several rows are refused, never cut to the first."""
    if isinstance(vector, np.ndarray) and vector.ndim == 1 and vector.shape[0] == dim and vector.dtype.char in "fd":
        unit, usable = row_kernels.checked_unit(vector)
        if usable:
            return unit
    rows = unit_rows(vector, dim=dim, what=what)
    if len(rows) != 1:
        raise InvalidInputError(f"{what} must be one vector, got {len(rows)} rows (shape {rows.shape})")
    first: np.ndarray = rows[0]
    return first


def unit_rows(vectors: Any, *, dim: int | None, what: str = "vectors") -> np.ndarray:
    """A 2-D float32 array of L2-normalised rows; rejects NaN, inf, zero rows and a wrong dimension."""
    try:
        matrix = np.asarray(vectors)
        if matrix.dtype.kind not in "fiu":
            matrix = matrix.astype(np.float64)
    except (TypeError, ValueError) as error:
        raise InvalidInputError(f"{what} must be numeric arrays of one length: {error}") from None
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise InvalidInputError(f"{what} must be a non-empty 2-D array, got shape {matrix.shape}")
    if dim is not None and matrix.shape[1] != dim:
        raise DimensionMismatchError(
            f"{what} have dimension {matrix.shape[1]} but this memory holds {dim}-d vectors; "
            "use the same encoder for every call"
        )
    if matrix.dtype == np.float32:  # one pass for the usual input: a NaN, inf, zero or extreme row shows in its norm
        squares = np.einsum("ij,ij->i", matrix, matrix)
        if np.isfinite(squares).all() and (squares > 1e-30).all():
            fast: np.ndarray = matrix / np.sqrt(squares)[:, None]
            return fast
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise InvalidInputError(f"{what}[{int(np.flatnonzero(~finite)[0])}] contains NaN or infinity")
    scale = np.abs(matrix).max(axis=1)
    if not scale.all():
        raise InvalidInputError(f"{what}[{int(np.flatnonzero(scale == 0)[0])}] is a zero vector; it has no direction")
    if matrix.dtype != np.float32 or (scale > 1e18).any() or (scale < 1e-18).any():
        matrix = (matrix / scale[:, None]).astype(np.float32)  # rescale first: no float32 overflow
    norms: np.ndarray = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    unit: np.ndarray = matrix / norms[:, None]
    return unit


def check_result_count(k: Any) -> int:
    """A positive integer number of results."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise InvalidInputError(f"k must be a positive integer, got {k!r}")
    return int(k)


def check_ids(ids: Any) -> list[str]:
    """A list of string ids (a single id is accepted)."""
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, Sequence) or not ids:
        raise InvalidInputError("ids must be a non-empty string or a list of non-empty strings")
    items = list(ids)
    if not plain_strings(items):
        if not all(isinstance(i, str) and i for i in items):
            raise InvalidInputError("ids must be a non-empty string or a list of non-empty strings")
        for cell_id in items:
            check_encodable(cell_id, what="an id")
    return items


def check_same_length(name: str, values: Sequence[Any] | None, expected: int) -> None:
    """Per-item arguments must have one value per text."""
    if values is None:
        return
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise InvalidInputError(f"{name} must be a list with one item per text, got {type(values).__name__}")
    if len(values) != expected:
        raise InvalidInputError(f"{name} has {len(values)} items but there are {expected} texts")


def per_item(name: str, value: Any, count: int, default: T, check: Callable[[Any], T]) -> list[T]:
    """Broadcast one value (or None → default) to every item, or check a per-item list."""
    if value is None:
        return [default] * count
    if isinstance(value, Mapping | int | float | str):
        return [check(value)] * count
    check_same_length(name, value, count)
    return [check(v) for v in value]


def check_new_ids(ids: Sequence[str] | None, *, taken: Mapping[str, Any] | None) -> None:
    """Ids for new cells: strings, no duplicates, and none of them in `taken` (when given)."""
    if ids is None:
        return
    check_ids(ids)
    if len(set(ids)) != len(ids):
        raise InvalidInputError("ids contain duplicates; every cell needs its own id")
    if taken is not None:
        check_free(ids, taken)


def check_free(ids: Sequence[str], taken: Mapping[str, Any]) -> None:
    """None of these ids is in `taken`."""
    if not taken.keys().isdisjoint(ids):
        stored = [i for i in ids if i in taken]
        raise InvalidInputError(f"ids already stored: {stored[:5]}; delete them first, or add with upsert=True")


MAX_SCOPE_CHARS = 5_000
"""The longest scope name: room for names built from what users type, percent-encoded (the MCP server's three
owners of up to 128 characters, each character up to 12 once encoded)."""


def check_scope(name: Any) -> str:
    """A scope's name: a string of at most `MAX_SCOPE_CHARS` characters ("" is the default scope)."""
    if not isinstance(name, str):
        raise InvalidInputError(f"a scope is named by a str, got {type(name).__name__}")
    if len(name) > MAX_SCOPE_CHARS:
        raise InvalidInputError(f"scope has {len(name):,} characters, above the limit of {MAX_SCOPE_CHARS:,}")
    if name:
        check_text(name, what="scope")
    return name


MAX_EPISODE_CHARS = 200


def check_episode(name: Any) -> str:
    """An episode's name: a non-blank string of at most `MAX_EPISODE_CHARS` characters that does not
    start with "@" (inferred episodes' names do)."""
    check_text(name, what="episode")
    if len(name) > MAX_EPISODE_CHARS or name.startswith("@"):
        raise InvalidInputError(f"an episode is named by at most {MAX_EPISODE_CHARS} characters not starting with @")
    return str(name)


def check_importance(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidInputError(f"importance must be a number in [0, 1], got {value!r}")
    return float(value)


INT_RANGE = (-(2**63), 2**63 - 1)
"""The integers a store holds (SQLite's and Chroma's 64-bit signed range)."""
MAX_DEPTH = 32
"""How deeply metadata values and `where` filters may nest."""


def check_metadata(value: Any) -> dict[str, Any]:
    """A metadata mapping as it is stored: a deep copy made of JSON's types alone (string keys; strings,
    finite floats, integers in `INT_RANGE`, booleans, None; lists for tuples), so that what memory holds
    is what the store gives back and no caller's object is shared with a cell."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"metadata must be a mapping with string keys, got {type(value).__name__}")
    stored: dict[str, Any] = _stored(value, "metadata", 0, INT_RANGE)
    return stored


def check_json_object(value: Any, *, what: str) -> dict[str, Any]:
    """A mapping as JSON text holds it, copied: string keys; strings, finite floats, integers of any size,
    booleans, None; lists for tuples; at most `MAX_DEPTH` levels deep (`value` itself is the first). `what`
    names it in an error (a LangGraph item's value: "value['n']")."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a mapping with string keys, got {type(value).__name__}")
    stored: dict[str, Any] = _stored(value, what, 0, None)
    return stored


def _stored(value: Any, where: str, depth: int, integers: tuple[int, int] | None) -> Any:
    """`value` copied as JSON holds it (`check_metadata`); `where` names it in an error; `integers`: the range
    an integer must be in (None: any)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        check_encodable(value, what=where)
        return value
    if isinstance(value, int):
        if integers is not None and not integers[0] <= value <= integers[1]:
            raise InvalidInputError(f"{where} is an integer outside the 64-bit range a store holds")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{where} is {value!r}; JSON numbers are finite")
        return float(value)
    if depth >= MAX_DEPTH:
        raise InvalidInputError(f"{where} nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise InvalidInputError(f"{where} has the key {key!r}; JSON keys are strings")
            check_encodable(key, what=f"a key of {where}")
        return {key: _stored(item, f"{where}[{key!r}]", depth + 1, integers) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_stored(item, f"{where}[{i}]", depth + 1, integers) for i, item in enumerate(value)]
    raise InvalidInputError(f"{where} holds a {type(value).__name__}; only what JSON holds can be stored")


LATEST_TIMESTAMP = 253_402_300_799.0
"""The last second of the year 9999 (a `datetime`'s range), in epoch seconds."""


def check_timestamp(value: Any) -> float:
    """Epoch seconds from a datetime or a number, between ±`LATEST_TIMESTAMP`."""
    if isinstance(value, datetime):
        try:
            seconds = value.timestamp()
        except (ValueError, OverflowError, OSError) as error:
            raise InvalidInputError(f"the datetime {value!r} has no epoch timestamp here: {error}") from None
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"timestamps must be datetimes or finite epoch seconds, got {value!r}")
    else:
        seconds = value
    if not -LATEST_TIMESTAMP <= seconds <= LATEST_TIMESTAMP:  # False for NaN, and never converts a huge int
        raise InvalidInputError(
            f"timestamps must be datetimes or finite epoch seconds within ±{LATEST_TIMESTAMP:.0f}, got {value!r:.50}"
        )
    return float(seconds)
