"""The memory agent: an LLM loop over a `CellularMemory`, with function calling and tool plugins."""

from .agent import FUNCTIONS, AgentReply, MemoryAgent
from .llm import LLM, LLMReply, OllamaLLM, ScriptedLLM, ToolCall
from .tools.base import BaseTool, ToolResult, discover_tools

__all__ = [
    "FUNCTIONS",
    "LLM",
    "AgentReply",
    "BaseTool",
    "LLMReply",
    "MemoryAgent",
    "OllamaLLM",
    "ScriptedLLM",
    "ToolCall",
    "ToolResult",
    "discover_tools",
]
