"""BEIR files round-trip, and malformed ones give a clear error."""

import pytest

from harness.data.beir import DatasetFormatError, load_beir, save_beir
from harness.data.generated import needles_evalset


def test_round_trip(tmp_path):
    original = needles_evalset(30, 3, seed=2)
    loaded = load_beir(save_beir(original, tmp_path / "set"))
    assert [(d.id, d.text) for d in loaded.docs] == [(d.id, d.text) for d in original.docs]
    assert [(q.id, q.text) for q in loaded.queries] == [(q.id, q.text) for q in original.queries]
    assert loaded.qrels == original.qrels
    assert loaded.relevant() == original.relevant()


def test_titles_are_prepended_and_unjudged_queries_dropped(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "Cats", "text": "They purr."}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "purring"}\n{"_id": "q2", "text": "unjudged"}\n')
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    loaded = load_beir(tmp_path)
    assert loaded.docs[0].text == "Cats They purr."
    assert [q.id for q in loaded.queries] == ["q1"] and loaded.qrels == {"q1": {"d1": 2.0}}


@pytest.mark.parametrize("broken", ["missing", "bad-json", "bad-qrels"])
def test_malformed_directories_are_named(tmp_path, broken):
    save_beir(needles_evalset(20, 2, seed=1), tmp_path)
    if broken == "missing":
        (tmp_path / "queries.jsonl").unlink()
    elif broken == "bad-json":
        (tmp_path / "corpus.jsonl").write_text("{not json\n")
    else:
        (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\n")
    with pytest.raises(DatasetFormatError):
        load_beir(tmp_path)
