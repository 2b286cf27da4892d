"""BEIR-format files: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv` (import and export)."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.data.evalset import EvalSet
from harness.protocol import Document, Query


class DatasetFormatError(ValueError):
    """A BEIR directory that is missing a file or holds malformed lines."""


def load_beir(directory: str | Path, *, split: str = "test") -> EvalSet:
    """Read a BEIR directory; the title, if any, is prepended to the text as BEIR's models do."""
    root = Path(directory)
    corpus, queries, qrels_path = root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    for path in (corpus, queries, qrels_path):
        if not path.is_file():
            raise DatasetFormatError(f"{path} is missing; a BEIR directory holds corpus.jsonl, queries.jsonl, qrels/")
    docs = [
        Document(
            str(_field(row, "_id", where)),
            document_text(row, where),
        )
        for row, where in jsonl_rows(corpus)
    ]
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    with _opened(qrels_path, newline="") as handle:
        for number, line in enumerate(csv.reader(handle, delimiter="\t"), 1):
            if number == 1 and line[:1] == ["query-id"]:
                continue  # the header
            if len(line) < 3:
                raise DatasetFormatError(f"{qrels_path}:{number}: expected query-id, corpus-id, score; got {line}")
            qrels[line[0]][line[1]] = _score(line[2], f"{qrels_path}:{number}")
    judged = [
        Query(str(_field(row, "_id", where)), _text(row, "text", where))
        for row, where in jsonl_rows(queries)
        if str(_field(row, "_id", where)) in qrels
    ]
    if not docs or not judged:
        raise DatasetFormatError(f"{root}: no documents or no judged queries")
    return EvalSet(root.name, docs, judged, dict(qrels))


def save_beir(evalset: EvalSet, directory: str | Path, *, split: str = "test") -> Path:
    """Write an evaluation set as a BEIR directory (so generated sets can be shared and reloaded)."""
    root = Path(directory)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w") as handle:
        for doc in evalset.docs:
            handle.write(json.dumps({"_id": doc.id, "title": "", "text": doc.text}) + "\n")
    with (root / "queries.jsonl").open("w") as handle:
        for query in evalset.queries:
            handle.write(json.dumps({"_id": query.id, "text": query.text}) + "\n")
    with (root / "qrels" / f"{split}.tsv").open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["query-id", "corpus-id", "score"])
        for query_id, grades in evalset.qrels.items():
            for doc_id, grade in grades.items():
                writer.writerow([query_id, doc_id, int(grade) if float(grade).is_integer() else grade])
    return root


def jsonl_rows(path: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """Each JSON object of a JSON-lines file with `file:line` for error messages."""
    with _opened(path) as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DatasetFormatError(f"{path}:{number}: {error}") from None
                if not isinstance(row, dict):
                    raise DatasetFormatError(f"{path}:{number}: expected a JSON object")
                yield row, f"{path}:{number}"


def document_text(row: dict[str, Any], where: str) -> str:
    """A corpus line's text, its title (if any) first, as BEIR's models read it."""
    return " ".join(p for p in (_text(row, "title", where, ""), _text(row, "text", where)) if p).strip()


def _field(row: dict[str, Any], key: str, where: str) -> Any:
    try:
        return row[key]
    except KeyError:
        raise DatasetFormatError(
            f'{where}: no {key!r} field (BEIR lines are {{"_id": …, "text": …}}); found {sorted(row)}'
        ) from None


def _text(row: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    """A string field (a number or a list where text belongs is a format error)."""
    value = row.get(key, default) if default is not None else _field(row, key, where)
    if not isinstance(value, str):
        raise DatasetFormatError(f"{where}: {key!r} must be a string, got {type(value).__name__}")
    return value


def _score(value: str, where: str) -> float:
    try:
        score = float(value)
    except ValueError:
        raise DatasetFormatError(f"{where}: the score {value!r} is not a number") from None
    if not math.isfinite(score):
        raise DatasetFormatError(f"{where}: the score {value!r} is not a finite number")
    return score


@contextmanager
def _opened(path: Path, newline: str | None = None) -> Iterator[Any]:
    """A text file read as UTF-8; bytes that are not UTF-8 are a format error naming the file."""
    with path.open(encoding="utf-8", newline=newline) as handle:
        try:
            yield handle
        except UnicodeDecodeError as error:
            raise DatasetFormatError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
