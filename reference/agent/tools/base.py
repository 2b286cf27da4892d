"""Tool plugins: a name, a slash command, a description and a `run` that returns a typed result.

Every tool, the built-in ones included (see `pyproject.toml`), is a `BaseTool` subclass registered
under the entry-point group `magnetic_bench.tools`; `discover_tools()` loads them, by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from ..agent import MemoryAgent

ENTRY_POINT_GROUP = "magnetic_bench.tools"


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    text: str
    data: dict[str, Any] = field(default_factory=dict)


class BaseTool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]

    @property
    def command(self) -> str:
        """The slash command that runs it: its name after a slash."""
        return f"/{self.name}"

    @abstractmethod
    def run(self, args: str, agent: MemoryAgent) -> ToolResult:
        """Do the work for `/command args`; never raise for bad user input, say what went wrong."""


def discover_tools() -> list[BaseTool]:
    """Every tool registered under the entry-point group, built-ins and plugins alike, by name."""
    tools: list[BaseTool] = []
    for entry_point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        tool_class = entry_point.load()
        if not (isinstance(tool_class, type) and issubclass(tool_class, BaseTool)):
            raise TypeError(f"entry point {entry_point.name!r} is not a BaseTool subclass")
        tools.append(tool_class())
    return tools
