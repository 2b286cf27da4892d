"""`--systems` limits every experiment of a run: none measures a system the choice leaves out."""

from dataclasses import replace

import pytest

from harness.experiments import grouping, serving
from harness.experiments.definition import RunContext
from harness.experiments.registry import registered
from harness.measure.plan import RunPlan
from reference.encoders import MockEncoder

CHOSEN = ("my_memory:make", "reference", "flat-numpy")
"""The README's choice: an adapter of the user's beside two registered systems."""


def test_every_experiment_measures_only_the_chosen_systems():
    context = RunContext(RunPlan(), {"mock": MockEncoder()}, systems=CHOSEN)
    measured = {e.name: context.systems_of(e) for e in registered() if e.systems}
    assert len(measured) >= 12
    assert all(set(systems) <= set(CHOSEN) for systems in measured.values()), measured
    assert measured["grouping"] == ("reference",) and measured["serving"] == ("reference",)
    assert measured["scaling"] == CHOSEN  # the experiments that take any adapter measure every chosen one
    assert {"grouping", "serving", "growing"} <= {e.name for e in registered() if e.capability}


def test_without_a_choice_each_experiment_measures_its_own_systems_or_the_plans():
    context = RunContext(RunPlan.quick(), {"mock": MockEncoder()})
    for experiment in registered():
        own = context.plan.experiment_systems.get(experiment.name, experiment.systems)
        assert context.systems_of(experiment) == own
    assert context.systems_of(serving.SERVING) == serving.SYSTEMS


@pytest.mark.parametrize("experiment", [grouping.GROUPING, serving.SERVING])
def test_grouping_and_serving_measure_no_system_left_out(experiment):
    plan = replace(RunPlan.quick(), topic_docs=60, serving_clients=1, serving_calls=5)
    context = RunContext(plan, {"mock": MockEncoder()}, systems=("flat-numpy",))
    assert experiment.run(context) == []
