"""The tests leave the checkout and the home folder as they found them: what they record, and what the libraries
they import make, goes to the session's temporary folder (`tests/conftest.py`)."""

import json
import os
from pathlib import Path

import pytest

from tests.reliability.counts import REPORT, record

CHECKOUT = Path(__file__).resolve().parents[2]


def test_reliability_counts_go_to_the_file_named_and_by_default_outside_the_checkout(tmp_path, monkeypatch):
    assert CHECKOUT not in Path(os.environ[REPORT]).parents  # not reports/reliability.json
    monkeypatch.setenv(REPORT, str(tmp_path / "counts.json"))
    record("churn", rounds=3)
    record("soak", searches=10)
    assert json.loads((tmp_path / "counts.json").read_text()) == {"churn": {"rounds": 3}, "soak": {"searches": 10}}


def test_ranx_makes_its_folders_in_the_sessions_temporary_folder():
    pytest.importorskip("ranx")  # ranx imports ir_datasets, which makes a folder per dataset on import
    home = Path(os.environ["IR_DATASETS_HOME"])
    assert home.is_dir() and any(home.iterdir())
    assert Path.home() not in home.parents and CHECKOUT not in home.parents
