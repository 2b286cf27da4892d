"""`--systems` limits every experiment of a run: none measures a system the choice leaves out."""

from dataclasses import fields, replace

import pytest

from harness.measure import experiments
from harness.measure.experiment_registry import RunContext
from harness.measure.plan import CAPABILITY_SYSTEMS, RunPlan
from reference.encoders import MockEncoder

CHOSEN = ("my_memory:make", "reference", "flat-numpy")
"""The README's choice: an adapter of the user's beside two registered systems."""


def test_every_list_of_systems_in_the_plan_keeps_only_the_chosen():
    plan = RunContext(RunPlan(), {"mock": MockEncoder()}, systems=CHOSEN).plan
    lists = {f.name: getattr(plan, f.name) for f in fields(plan) if f.name.endswith("systems")}
    assert len(lists) >= 12
    assert all(set(systems) <= set(CHOSEN) for systems in lists.values()), lists
    assert plan.grouping_systems == ("reference",) and plan.serving_systems == ("reference",)
    assert plan.systems == CHOSEN  # the experiments that take any adapter measure every chosen one
    assert set(CAPABILITY_SYSTEMS) < set(lists)


@pytest.mark.parametrize("experiment", [experiments.grouping, experiments.serving])
def test_grouping_and_serving_measure_no_system_left_out(experiment):
    plan = replace(RunPlan.quick(), topic_docs=60, serving_clients=1, serving_calls=5)
    context = RunContext(plan, {"mock": MockEncoder()}, systems=("flat-numpy",))
    assert experiment(context) == []
