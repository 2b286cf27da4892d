"""Real-text corpora: passage splitting, the sources a user can give, typed errors, held-out queries."""

import json

import numpy as np
import pytest

from harness.data.beir import DatasetFormatError
from harness.data.corpus import load_corpus, split_passages
from harness.data.generated import corpus_evalset


def test_paragraphs_become_passages_of_bounded_length_without_duplicates():
    long = " ".join(f"Sentence number {i} says something." for i in range(40))
    passages = split_passages([f"First paragraph.\n\nSecond one.\n\n{long}", "First paragraph."], max_chars=120)
    assert passages[:2] == ["First paragraph.", "Second one."]
    assert all(len(p) <= 120 for p in passages) and len(passages) == len(set(passages))
    assert " ".join(passages[2:]) == long
    word = "".join(str(i % 7) for i in range(250))  # no space to cut at: a hard cut
    assert [len(p) for p in split_passages([word], max_chars=100)] == [100, 100, 50]


def test_a_folder_a_text_file_a_corpus_jsonl_and_a_beam_directory(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Alpha text.\n\nBeta text.")
    (tmp_path / "docs" / "skip.bin").write_bytes(b"\x00\x01")
    assert load_corpus(str(tmp_path / "docs")).passages == ["Alpha text.", "Beta text."]
    (tmp_path / "notes.txt").write_text("Gamma.")
    assert load_corpus(str(tmp_path / "notes.txt")).passages == ["Gamma."]
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "1", "title": "T", "text": "Delta."}) + "\n")
    assert load_corpus(str(tmp_path / "corpus.jsonl")).passages == ["T Delta."]
    chat = [{"batch_number": 1, "turns": [[{"role": "user", "id": 1, "content": "Epsilon?\n\nZeta."}]]}]
    (tmp_path / "beam" / "1").mkdir(parents=True)
    (tmp_path / "beam" / "1" / "chat.json").write_text(json.dumps(chat))
    beam = load_corpus(f"beam:{tmp_path / 'beam'}")
    assert beam.passages == ["Epsilon?", "Zeta."] and len(beam.fingerprint) == 16


@pytest.fixture(scope="module")
def stdlib():
    """The stdlib corpus, read once for the tests below (a fresh interpreter imports the whole library: 5 s)."""
    return load_corpus("stdlib")


def test_the_standard_library_corpus_needs_no_files(stdlib):
    assert len(stdlib.passages) > 3_000 and stdlib.source.startswith("Python 3.")


def test_the_standard_library_corpus_is_the_same_whatever_this_process_patched(stdlib, monkeypatch):
    import textwrap

    monkeypatch.setattr(textwrap, "dedent", json.dumps)  # as a package that replaces a standard function does
    assert load_corpus("stdlib").fingerprint == stdlib.fingerprint


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing.txt", "no such file"),
        (lambda p: (p / "bad.jsonl").write_text('{"id": 1}\n') and p / "bad.jsonl", r"bad.jsonl:1"),
        (lambda p: (p / "beam").mkdir() or f"beam:{p / 'beam'}", "no chat.json"),
    ],
)
def test_unreadable_corpora_are_typed_errors_naming_the_place(tmp_path, make, message):
    with pytest.raises(DatasetFormatError, match=message):
        load_corpus(str(make(tmp_path)))


def test_held_out_queries_are_not_documents_and_their_truth_is_exact(stdlib):
    vectors = np.random.default_rng(0).standard_normal((len(stdlib.passages), 8)).astype(np.float32)
    evalset = corpus_evalset(stdlib, vectors, 500, queries=20)
    doc_ids = {d.id for d in evalset.docs}
    assert len(evalset.docs) == 500 and not doc_ids & {q.id.replace("q", "p") for q in evalset.queries}
    query = evalset.queries[0]
    scores = {d.id: float(d.vector @ query.vector) for d in evalset.docs}
    assert set(evalset.relevant()[0]) == set(sorted(scores, key=scores.get, reverse=True)[:10])
