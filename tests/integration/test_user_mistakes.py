"""What a new user gets wrong ends in one clear line and exit status 2, before any work or report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.chat import ChatSession
from reference import CellularMemory
from reference.agent import MemoryAgent
from reference.common.errors import EncoderMismatchError, InvalidInputError
from reference.encoders import MockEncoder

ROOT = Path(__file__).resolve().parents[2]


def magbench(*args: str, cwd=None, timeout: int = 120) -> subprocess.CompletedProcess:
    """The command as a user runs it; PYTHONPATH makes this file's adapters importable, as the README says."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env
    )


def one_line_error(done: subprocess.CompletedProcess, *fragments: str) -> None:
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


class OtherMock(MockEncoder):
    """Same dimension as the mock encoder, different vectors."""

    def __init__(self) -> None:
        super().__init__(32)
        self.name = "other-32"


def test_a_store_refuses_an_encoder_other_than_the_one_that_made_it(tmp_path):
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(32)) as memory:
        memory.add(["a cat sat on a mat", "stock markets fell sharply today"])
    with pytest.raises(EncoderMismatchError, match=r"mock-32.*other-32"):
        CellularMemory(path=str(tmp_path), encoder=OtherMock())
    with CellularMemory(path=str(tmp_path), encoder=OtherMock(), check_encoder=False) as memory:
        assert len(memory) == 2  # the explicit override opens it


def test_a_store_created_without_the_check_still_records_its_encoder(tmp_path):
    with CellularMemory(path=str(tmp_path), encoder=MockEncoder(32), check_encoder=False) as memory:
        memory.add(["a cat sat on a mat"])
    with pytest.raises(EncoderMismatchError, match=r"mock-32.*other-32"):
        CellularMemory(path=str(tmp_path), encoder=OtherMock())


def test_a_file_where_a_store_folder_should_be_is_a_typed_error(tmp_path):
    (tmp_path / "memory").write_text("not a folder")
    with pytest.raises(InvalidInputError, match="is a file"):
        CellularMemory(path=str(tmp_path / "memory"), encoder=MockEncoder(32))


def test_the_demo_run_twice_does_not_grow_its_store(tmp_path):
    for _ in range(2):
        done = magbench("demo", "--encoder", "mock", "--size", "120", "--path", str(tmp_path / "store"))
        assert done.returncode == 0, done.stderr[-2000:]
    assert "120 were already stored; the memory holds 120 cells" in done.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("run", "--dataset", "/missing"), ("/missing does not exist",)),
        (("run", "--dataset", "locomo:/missing.json"), ("/missing.json does not exist",)),
        (("run", "--systems", "reference,no-such-system"), ("unknown system 'no-such-system'",)),
        (("run", "--systems", "not_a_module_anywhere:make"), ("cannot import", "PYTHONPATH")),
        (("run", "--turn-format", "speaker,emoji"), ("unknown turn format",)),
        (("compare", "/missing-a", "/missing-b"), ("no results.json",)),
        (("conformance", "no-such-system"), ("unknown system",)),
        (("conformance", "tests.integration.test_user_mistakes:make_without_context"), ("factory(context",)),
    ],
)
def test_cli_mistakes_end_in_one_line_and_exit_2_before_any_work(tmp_path, args, fragments):
    done = magbench(*args, cwd=tmp_path)
    one_line_error(done, *fragments)  # one line on stderr: no progress line, so no step of work had started
    assert not (tmp_path / "reports").exists()  # no report written, none overwritten


def make_without_context(**options):  # the mistake: no context parameter
    raise AssertionError("never called")


def test_a_beir_line_without_an_id_names_the_file_and_line(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n" + json.dumps({"id": "d2"}))
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    done = magbench("run", "--dataset", str(tmp_path), "--encoder", "mock", "--systems", "flat-numpy")
    one_line_error(done, "corpus.jsonl:2", "'_id'")


def test_debug_shows_the_traceback():
    done = magbench("--debug", "compare", "/missing-a", "/missing-b")
    assert done.returncode != 0 and "Traceback" in done.stderr


def test_demo_refuses_a_negative_size():
    done = magbench("demo", "--size", "-5")
    assert done.returncode == 2 and "must be at least 1" in done.stderr


def test_a_typo_in_a_chat_command_gets_a_usage_line_and_the_session_goes_on():
    lines = iter(["/sleep start abc", "/sleep sideways", "/remember still here", "/quit"])
    written: list[str] = []
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        session = ChatSession(MemoryAgent(memory, None), lambda: next(lines, None), written.append)
        session.loop()
        assert len(memory) == 1
    assert written[0].startswith("usage: /sleep") and "'abc'" in written[0]
    assert written[1].startswith("usage: /sleep") and written[2].startswith("remembered")


def test_a_reply_without_a_model_says_why():
    with CellularMemory(encoder=MockEncoder(32)) as memory:
        memory.add("Maria lives in Lisbon", vectors=np.ones((1, 32)))
        reply = MemoryAgent(memory, None).reply("Where does Maria live?")
    assert reply.text == "" and "no language model is reachable" in reply.error


def test_the_bench_environment_can_run_external_adapters_and_the_conformance_suite():
    import configparser

    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    bench = tox["testenv:bench"]
    assert "PYTHONPATH" in bench["passenv"].split()  # tox drops the caller's PYTHONPATH unless passed on
    assert "test" in [extra.strip() for extra in bench["extras"].split(",")]  # pytest, for `magbench conformance`
