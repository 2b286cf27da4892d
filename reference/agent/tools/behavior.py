"""Personas that shape the agent's system prompt: `/behavior list | set NAME | custom TEXT | show`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..personas import PERSONAS
from .base import BaseTool, ToolResult

if TYPE_CHECKING:
    from ..agent import MemoryAgent


class BehaviorTool(BaseTool):
    name = "behavior"
    description = "list personas, set one, or set a custom one: /behavior list | set NAME | custom TEXT | show"

    def run(self, args: str, agent: MemoryAgent) -> ToolResult:
        action, _, rest = args.strip().partition(" ")
        if action in ("", "list"):
            lines = [f"{'*' if agent.persona == text else ' '} {name}: {text}" for name, text in PERSONAS.items()]
            return ToolResult(True, "\n".join(lines), {"personas": sorted(PERSONAS)})
        if action == "show":
            return ToolResult(True, agent.persona)
        if action == "set":
            if rest.strip() not in PERSONAS:
                return ToolResult(False, f"unknown persona {rest.strip()!r}; choose from {', '.join(PERSONAS)}")
            agent.persona = PERSONAS[rest.strip()]
            return ToolResult(True, f"persona set to {rest.strip()}")
        if action == "custom":
            if not rest.strip():
                return ToolResult(False, "give the persona text: /behavior custom You are …")
            agent.persona = rest.strip()
            return ToolResult(True, "custom persona set")
        return ToolResult(False, f"unknown action {action!r}; {self.description}")
