"""Real text as passages: a user's corpus (a text file, a folder, a BEIR `corpus.jsonl`, a BEAM chat
directory) or the running interpreter's standard library documentation, split into passages.

A passage is a paragraph (text between blank lines) of at most `max_chars` characters; a longer
paragraph is packed sentence by sentence, and a sentence longer than the limit is cut at a space.
Exact duplicate passages are dropped (ties with identical vectors would make "recall vs exact"
ambiguous). The order is deterministic, so a corpus's fingerprint names its passages exactly.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.data.beir import DatasetFormatError, document_text, jsonl_rows

MAX_CHARS = 400
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
TEXT_SUFFIXES = {".txt", ".md", ".rst"}


@dataclass(frozen=True)
class Corpus:
    """Passages of real text and where they came from (`source` names the file or the Python version)."""

    name: str
    source: str
    passages: list[str]
    sha256: str = ""
    """SHA-256 of the files read (empty for text generated from the interpreter)."""

    @property
    def fingerprint(self) -> str:
        """A digest of the passages themselves: what the encoding cache is keyed by and a report records."""
        digest = hashlib.sha256()
        for passage in self.passages:
            digest.update(passage.encode("utf-8") + b"\x00")
        return digest.hexdigest()[:16]


def load_corpus(spec: str, *, max_chars: int = MAX_CHARS) -> Corpus:
    """`stdlib`, `beam:DIR`, or a path (a text file, a folder of text files, a BEIR `corpus.jsonl`)."""
    if spec == "stdlib":
        version = ".".join(map(str, sys.version_info[:3]))
        return Corpus(
            "stdlib", f"Python {version} standard library docstrings", split_passages(_stdlib_docs(), max_chars)
        )
    if spec.startswith("beam:"):
        root = Path(spec.removeprefix("beam:"))
        passages = split_passages(_beam_messages(root), max_chars)
        return Corpus(f"beam-{root.name}", str(root), passages, _sha256(sorted(root.rglob("chat.json"))))
    path = Path(spec)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
        if not files:
            raise DatasetFormatError(f"{path}: no {', '.join(sorted(TEXT_SUFFIXES))} files in this folder")
        texts: Iterable[str] = (f.read_text(errors="replace") for f in files)
        read = files
    elif path.is_file() and path.name.endswith(".jsonl"):
        texts, read = (document_text(row, where) for row, where in jsonl_rows(path)), [path]
    elif path.is_file():
        texts, read = [path.read_text(errors="replace")], [path]
    else:
        raise DatasetFormatError(
            f"{spec}: no such file or folder (give a text file, a folder, a corpus.jsonl, beam:DIR or stdlib)"
        )
    passages = split_passages(texts, max_chars)
    if not passages:
        raise DatasetFormatError(f"{spec}: no text found")
    return Corpus(path.stem, str(path), passages, _sha256(read))


def _sha256(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.read_bytes())
    return digest.hexdigest()


def split_passages(texts: Iterable[str], max_chars: int = MAX_CHARS) -> list[str]:
    """Paragraphs of at most `max_chars` characters, deduplicated, in order of appearance."""
    seen: dict[str, None] = {}
    for text in texts:
        for paragraph in PARAGRAPH_BREAK.split(text):
            for passage in _pack(" ".join(paragraph.split()), max_chars):
                seen.setdefault(passage)
    return list(seen)


def _pack(paragraph: str, max_chars: int) -> Iterator[str]:
    """Sentences packed into passages of at most `max_chars`; overlong sentences cut at a space."""
    current = ""
    for sentence in SENTENCE_END.split(paragraph):
        for piece in _cut(sentence, max_chars):
            if current and len(current) + 1 + len(piece) > max_chars:
                yield current
                current = piece
            else:
                current = f"{current} {piece}" if current else piece
    if current:
        yield current


def _cut(sentence: str, max_chars: int) -> Iterator[str]:
    while len(sentence) > max_chars:
        cut = sentence.rfind(" ", 0, max_chars + 1)
        cut = cut if cut > 0 else max_chars
        yield sentence[:cut].strip()
        sentence = sentence[cut:].strip()
    if sentence:
        yield sentence


def _beam_messages(root: Path) -> Iterator[str]:
    """Every message of every `chat.json` under a BEAM chat directory, in path order."""
    files = sorted(
        root.rglob("chat.json"), key=lambda p: [(0, int(s), "") if s.isdigit() else (1, 0, s) for s in p.parts]
    )
    if not files:
        raise DatasetFormatError(f"{root}: no chat.json below this folder (a BEAM chat directory holds <n>/chat.json)")
    for file in files:
        try:
            batches = json.loads(file.read_text(encoding="utf-8"))
            for batch in batches:
                for turn in batch["turns"]:
                    for message in turn:
                        if not isinstance(message["content"], str):
                            raise TypeError(f"a message's content is a {type(message['content']).__name__}")
                        yield message["content"]
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as error:
            raise DatasetFormatError(
                f"{file}: not a BEAM chat (a list of batches with turns of messages with content): {error!r}"
            ) from None


def _stdlib_docs() -> list[str]:
    """The standard library's documentation (`stdlib_docs.py`), read in a fresh interpreter that imports
    nothing but the standard library, whatever this process has imported."""
    script = Path(__file__).with_name("stdlib_docs.py")
    found = subprocess.run([sys.executable, "-I", "-S", str(script)], capture_output=True, text=True, check=True)
    docs: list[str] = json.loads(found.stdout)
    return docs
