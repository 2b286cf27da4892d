"""The story world registry reports typed conflicts with severity."""

from reference import CellularMemory
from reference.agent import MemoryAgent
from reference.agent.story_world import WorldRegistry
from reference.encoders import MockEncoder


def kinds(conflicts):
    return [(c.kind, c.severity) for c in conflicts]


def test_each_kind_of_world_conflict():
    world = WorldRegistry()
    assert (
        world.record(
            "Mira is 30 years old. Mira is brave. Magic is forbidden in Eldor. Tomas won the battle of Red Hill."
        )
        == []
    )
    assert kinds(world.record("Mira is 41 years old.")) == [("attribute", "high")]
    assert kinds(world.record("Mira is cowardly.")) == [("trait", "medium")]
    assert kinds(world.record("Tomas used magic to escape.")) == [("rule", "high")]
    assert kinds(world.record("Tomas lost the battle of Red Hill.")) == [("outcome", "high")]
    assert world.record("Mira is 30 years old. Tomas won the battle of Red Hill.") == []  # as first stated
    assert kinds(world.record("Mira is brave.")) == [("trait", "medium")]  # still clashes with "cowardly"
    assert len(world.conflicts) == 5


def test_story_tool_offline_world_and_checks():
    with CellularMemory(encoder=MockEncoder()) as memory:
        agent = MemoryAgent(memory, None)
        created = agent.run_command("/story new A city that floats above the sea")
        assert created.ok and "forbidden" in created.text
        again = MemoryAgent(memory, None).run_command("/story new A city that floats above the sea")
        assert again.text == created.text  # the offline world is deterministic
        world = agent.state["story"]
        person = next(iter(world.traits))
        trait = next(iter(world.traits[person]))
        from reference.agent.story_world import OPPOSITES

        added = agent.run_command(f"/story add {person} is {OPPOSITES[trait]}.")
        assert "CONFLICT [medium] trait" in added.text
        assert "trait" in agent.run_command("/story check").text
        assert len(memory) == 3  # both worlds and the addition are stored as facts
        assert not agent.run_command("/story fly").ok
