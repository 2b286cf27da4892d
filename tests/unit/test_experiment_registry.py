"""The experiment registry: each run selects its experiments by the data it measures, and a choice is checked."""

import dataclasses

import pytest

from harness.measure import experiments  # noqa: F401  (imported first: the run order must not depend on it)
from harness.measure.experiment_registry import experiment, listing, registered, selected
from harness.output.results import RunResults
from harness.systems.options import OptionError


def names(data, only=None):
    return [e.name for e in selected(data, only)]


def test_each_run_selects_the_experiments_of_its_data_in_registry_order():
    assert names("default") == [
        "scaling", "growing", "needles", "grouping", "judges", "realtext", "streaming", "expiring-stream",
        "agent-loop", "multi-tenant", "serving", "concurrency", "filtered", "knowledge-update",
    ]  # fmt: skip
    assert names("beam") == ["realtext", "streaming", "expiring-stream"]
    assert names("dialogue") == ["answers", "dialogue", "knowledge-update", "field-claims"]
    assert names("beir") == ["beir"]
    assert names("default", ["streaming", "judges"]) == ["judges", "streaming"]


def test_every_experiment_fills_a_results_section_and_says_what_it_measures():
    sections = {f.name for f in dataclasses.fields(RunResults)}
    for chosen in registered():
        assert chosen.section in sections and chosen.measures and chosen.data
        assert chosen.name in listing()


def test_a_choice_names_registered_experiments_that_run_on_the_data():
    with pytest.raises(OptionError, match="no experiment 'nope'"):
        selected("default", ["nope"])
    with pytest.raises(OptionError, match="'dialogue' runs on dialogue data, not on this run's"):
        selected("beam", ["dialogue"])


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        experiment("judges", section="judges", data=["default"])(lambda context: [])
