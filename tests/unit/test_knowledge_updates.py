"""The knowledge-update experiment: facts that change, scored by whether the current version ranks first."""

from dataclasses import replace

from harness.experiments.definition import RunContext
from harness.experiments.knowledge_update import run as knowledge_update
from harness.measure.plan import RunPlan
from reference.encoders import MockEncoder


def test_generated_updates_are_scored_for_every_system_mode_and_sleep():
    plan = replace(RunPlan.quick(), update_conversations=2)
    context = RunContext(plan, {"mock": MockEncoder()}, systems=("reference", "flat-numpy"))
    rows = {(r.system, r.data, r.mode, r.slept): r.scores for r in knowledge_update(context)}
    assert set(rows) == {
        (system, f"generated {data} (mock-384)", mode, slept)
        for data in ("dialogues", "facts")
        for system, mode, slept in [
            ("reference", "similarity", False),
            ("reference", "memory", False),
            ("reference", "similarity", True),
            ("reference", "memory", True),
            ("flat-numpy", "similarity", False),
        ]
    }
    facts = "generated facts (mock-384)"
    assert rows["reference", facts, "memory", False].facts == 2 * 40
    # sleep's judge records the changed facts; memory mode then ranks the older versions below the current ones
    slept, awake = rows["reference", facts, "memory", True], rows["reference", facts, "similarity", True]
    assert slept.current_first > awake.current_first + 0.2
