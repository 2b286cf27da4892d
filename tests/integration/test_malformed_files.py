"""Malformed datasets, results files and options: one line naming what to fix, exit status 2, and no run
starts (nothing is written)."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.data.beir import DatasetFormatError
from harness.data.corpus import load_corpus

LOCOMO = {
    "speaker_a": "A",
    "speaker_b": "B",
    "session_1_date_time": "1 May 2023",
    "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hello"}],
    "qa": [{"question": "hi?", "evidence": ["D1:1"], "category": 4}],
}
LONGMEMEVAL = [
    {
        "question_id": "q1",
        "question": "what?",
        "haystack_sessions": [[{"role": "user", "content": "hello", "has_answer": True}]],
        "haystack_session_ids": ["s1"],
        "haystack_dates": ["2023/05/01"],
    }
]


def locomo(**changes):
    return {**LOCOMO, **changes}


def longmemeval(**changes):
    return [{**LONGMEMEVAL[0], **changes}]


def fails_in_one_line(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(list(args))
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines and lines[-1].startswith("magbench ")
    return lines[-1]


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("locomo", locomo(qa=5)),
        ("locomo", locomo(qa=[{"question": "hi?", "evidence": 7}])),
        ("locomo", {"conversation": [1, 2], "qa": []}),
        ("longmemeval", longmemeval(haystack_sessions=[5])),
        ("longmemeval", longmemeval(haystack_dates=5)),
    ],
)
def test_malformed_dialogue_files(tmp_path, capsys, kind, data):
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))
    line = fails_in_one_line(
        capsys, "run", "--dataset", f"{kind}:{path}", "--encoder", "mock", "--out", str(tmp_path / "out")
    )
    assert str(path) in line
    assert not (tmp_path / "out" / "report.md").exists()


def beir(root, corpus: bytes, qrels: str):
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_bytes(corpus)
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "hello"}) + "\n")
    (root / "qrels" / "test.tsv").write_text(qrels)
    return root


@pytest.mark.parametrize(
    ("corpus", "qrels", "named"),
    [
        (b'{"_id": "d1", "text": 5}\n', "query-id\tcorpus-id\tscore\nq1\td1\t1\n", "'text' must be a string"),
        (b'{"_id": "d1", "text": "hi"}\n', "query-id\tcorpus-id\tscore\nq1\td1\tabc\n", "'abc' is not a number"),
        (b'{"_id": "d1", "text": "caf\xff"}\n', "query-id\tcorpus-id\tscore\nq1\td1\t1\n", "not UTF-8"),
        (b'{"_id": "d1", "text": "hi"}\n', "q1\n", "expected query-id, corpus-id, score"),
    ],
)
def test_malformed_beir_directories(tmp_path, capsys, corpus, qrels, named):
    root = beir(tmp_path / "beir", corpus, qrels)
    line = fails_in_one_line(capsys, "run", "--dataset", str(root), "--encoder", "mock", "--out", str(tmp_path / "out"))
    assert named in line


def test_beam_folders_named_with_letters_load_and_content_that_is_not_text_is_refused(tmp_path):
    for folder, content in (("1", "first chat"), ("b", "second chat")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "chat.json").write_text(json.dumps([{"turns": [[{"content": content}]]}]))
    assert load_corpus(f"beam:{tmp_path}").passages == ["first chat", "second chat"]
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "chat.json").write_text(json.dumps([{"turns": [[{"content": 5}]]}]))
    with pytest.raises(DatasetFormatError, match="content is a int"):
        load_corpus(f"beam:{tmp_path}")


@pytest.mark.parametrize("content", [b"\x89PNG\x00\xff\xfe", b"[" * 100_000 + b"]" * 100_000])
def test_results_files_that_are_not_results(tmp_path, capsys, content):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_bytes(content)
    line = fails_in_one_line(capsys, "compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert "results" in line


def test_an_option_without_a_value_is_refused_before_any_test_runs(capsys):
    line = fails_in_one_line(capsys, "conformance", "flat-numpy", "--option", "novalue")
    assert "expected KEY=VALUE" in line


def test_an_unusable_report_folder_stops_the_run_before_it_starts(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    line = fails_in_one_line(capsys, "run", "--quick", "--out", str(blocker))
    assert "a file is in the way" in line


@pytest.mark.parametrize("spread", ["nan", "inf", "-1", "0"])
def test_a_spread_that_is_not_a_finite_positive_number_is_refused(capsys, spread):
    with pytest.raises(SystemExit) as stopped:
        main(["run", "--quick", "--spread", spread])
    assert stopped.value.code == 2 and "must be a finite number above 0" in capsys.readouterr().err
