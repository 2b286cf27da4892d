"""Story writing with a consistent world: `/story new PREMISE | add TEXT | world | check`.

`new` generates a world (with the LLM when one is reachable, else a seeded offline generator) and
files its facts in a `WorldRegistry`; `add` files more of the story and reports the typed
conflicts it creates (kind and severity). Story facts are also stored as memories.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from faker import Faker

from ...common.errors import MagneticError
from ..story_world import OPPOSITES, WorldRegistry
from .base import BaseTool, ToolResult

if TYPE_CHECKING:
    from ..agent import MemoryAgent

WORLD_PROMPT = (
    "Invent a small story world for this premise: {premise}\n"
    "Write 6 to 10 short declarative sentences, one per line: characters with an age and a trait, "
    "one place, one world rule of the form 'X is forbidden', one past event of the form "
    "'NAME won the battle of PLACE'."
)


class StoryTool(BaseTool):
    name = "story"
    description = "build a consistent story world: /story new PREMISE | add TEXT | world | check"

    def run(self, args: str, agent: MemoryAgent) -> ToolResult:
        action, _, rest = args.strip().partition(" ")
        registry: WorldRegistry = agent.state.setdefault("story", WorldRegistry())
        if action == "new":
            if not rest.strip():
                return ToolResult(False, "give a premise: /story new A city floating above the sea")
            agent.state["story"] = registry = WorldRegistry()
            try:
                world = self._generate(rest.strip(), agent)
            except MagneticError as error:
                return ToolResult(False, f"could not generate the world: {error}")
            return self._file(world, registry, agent, heading="A new world:\n" + world)
        if action == "add":
            if not rest.strip():
                return ToolResult(False, "give the story text: /story add …")
            return self._file(rest.strip(), registry, agent, heading="filed")
        if action == "world":
            return ToolResult(True, registry.summary())
        if action == "check":
            lines = [f"[{c.severity}] {c.kind} — {c.subject}: {c.detail}" for c in registry.conflicts]
            return ToolResult(True, "\n".join(lines) or "no conflicts", {"conflicts": registry.conflicts})
        return ToolResult(False, f"unknown action {action!r}; {self.description}")

    def _file(self, text: str, registry: WorldRegistry, agent: MemoryAgent, *, heading: str) -> ToolResult:
        conflicts = registry.record(text)
        agent.memory.add(text, kind="fact", metadata={"story": True})
        lines = [heading] + [f"CONFLICT [{c.severity}] {c.kind} — {c.subject}: {c.detail}" for c in conflicts]
        return ToolResult(True, "\n".join(lines), {"conflicts": conflicts})

    def _generate(self, premise: str, agent: MemoryAgent) -> str:
        if agent.llm is not None:
            reply = agent.llm.chat([{"role": "user", "content": WORLD_PROMPT.format(premise=premise)}])
            return " ".join(line.strip().rstrip(".") + "." for line in reply.content.splitlines() if line.strip())
        return offline_world(premise)


def offline_world(premise: str) -> str:
    """A small deterministic world for a premise (same premise, same world)."""
    fake = Faker("en_US")
    fake.seed_instance(zlib.crc32(premise.encode()))
    traits = sorted(OPPOSITES)
    place = fake.city()
    people = [fake.first_name() for _ in range(3)]
    sentences = [f"The story takes place in {place}: {premise.rstrip('.')}."]
    for person in people:
        sentences.append(f"{person} is {fake.random_int(18, 70)} years old.")
        sentences.append(f"{person} is {fake.random_element(traits)}.")
    sentences.append(f"{fake.random_element(['Magic', 'Flying', 'Sailing at night'])} is forbidden in {place}.")
    sentences.append(f"{people[0]} won the battle of {fake.city()}.")
    return " ".join(sentences)
