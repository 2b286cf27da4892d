"""BEIR-format files: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv` (import and export)."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .evalset import EvalSet
from .protocol import Document, Query


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
    with qrels_path.open(newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader, None)
        if header and header[0] != "query-id":
            qrels[header[0]][header[1]] = float(header[2])
        for line in reader:
            if len(line) < 3:
                raise DatasetFormatError(f"{qrels_path}: expected query-id, corpus-id, score; got {line}")
            qrels[line[0]][line[1]] = float(line[2])
    judged = [
        Query(str(_field(row, "_id", where)), str(_field(row, "text", where)))
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
    with path.open() as handle:
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
    return " ".join(p for p in (row.get("title", ""), _field(row, "text", where)) if p).strip()


def _field(row: dict[str, Any], key: str, where: str) -> Any:
    try:
        return row[key]
    except KeyError:
        raise DatasetFormatError(
            f'{where}: no {key!r} field (BEIR lines are {{"_id": …, "text": …}}); found {sorted(row)}'
        ) from None
