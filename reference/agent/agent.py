"""`MemoryAgent`: recall → prompt → LLM with function calling → remember the exchange.

1. Recall: `memory.search(user_text, mode="memory")` (importance, recency and access count, and
   the memory's `score_threshold` drops weak memories).
2. Prompt: the persona, then the recalled memories, then recent turns and the user's message.
3. The LLM may call `search_memory(query, max_results)` and `store_memory(content, kind,
   importance)`; results go back to it, for at most `max_tool_rounds` rounds, then it must answer.
4. The exchange is stored as an episodic memory (importance 0.3); a failed reply is not stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import MagneticError
from ..hit import Hit
from ..memory import CellularMemory
from .llm import LLM, LLMReply, ToolCall
from .personas import PERSONAS
from .tools.base import BaseTool, ToolResult, discover_tools

FUNCTIONS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search_memory",
            "description": "Search long-term memory for facts and past conversations.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "what to look for"},
                    "max_results": {"type": "integer", "description": "1 to 20, default 5"},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "store_memory",
            "description": "Remember something for later. Use kind 'fact' for lasting facts.",
            "parameters": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "kind": {"type": "string", "enum": ["episodic", "fact"]},
                    "importance": {"type": "number", "description": "0 to 1; defaults by kind"},
                },
                "required": ["content"],
            },
        },
    },
]


@dataclass
class AgentReply:
    text: str
    recalled: list[Hit] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    stored_id: str | None = None
    error: str | None = None


class MemoryAgent:
    def __init__(
        self,
        memory: CellularMemory,
        llm: LLM | None,
        *,
        persona: str = PERSONAS["assistant"],
        recall_k: int = 5,
        max_tool_rounds: int = 3,
        history_turns: int = 6,
        tools: list[BaseTool] | None = None,
    ) -> None:
        self.memory = memory
        self.llm = llm
        self.persona = persona
        self.recall_k = recall_k
        self.max_tool_rounds = max_tool_rounds
        self.history_turns = history_turns
        self.history: list[dict[str, str]] = []
        self.tools = {tool.command: tool for tool in (tools if tools is not None else discover_tools())}
        self.state: dict[str, Any] = {}
        """Where tools keep what lasts between commands (the story world, …)."""

    def reply(self, text: str) -> AgentReply:
        """Answer one user message (see the module docstring for the loop)."""
        if self.llm is None:
            return AgentReply("", error="no language model is reachable; memory commands still work")
        recalled = self.memory.search(text, k=self.recall_k, mode="memory")
        messages = [
            {"role": "system", "content": self.system_prompt(recalled)},
            *self.history,
            {"role": "user", "content": text},
        ]
        calls: list[ToolCall] = []
        try:
            answer = self._converse(messages, calls)
        except MagneticError as error:
            return AgentReply("", recalled, calls, error=str(error))
        self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
        self.history = self.history[-2 * self.history_turns :]
        [stored] = self.memory.add(f"User: {text}\nAssistant: {answer}", kind="episodic")
        return AgentReply(answer, recalled, calls, stored)

    def run_command(self, line: str) -> ToolResult:
        """Run a tool's slash command, e.g. `/story new …`."""
        command, _, args = line.strip().partition(" ")
        tool = self.tools.get(command)
        if tool is None:
            return ToolResult(False, f"unknown command {command}; tools: {', '.join(sorted(self.tools))}")
        return tool.run(args, self)

    def system_prompt(self, recalled: list[Hit]) -> str:
        lines = [self.persona, "", "What you remember (most relevant first):"]
        for hit in recalled:
            cell = self.memory.get(hit.id)
            when = datetime.fromtimestamp(cell.timestamp, UTC).strftime("%Y-%m-%d")
            lines.append(f"- [{cell.kind}, {when}] {hit.text}")
        if not recalled:
            lines.append("- (nothing relevant)")
        return "\n".join(lines)

    def _converse(self, messages: list[dict[str, Any]], calls: list[ToolCall]) -> str:
        assert self.llm is not None
        for _round in range(self.max_tool_rounds):
            reply = self.llm.chat(messages, FUNCTIONS)
            if not reply.tool_calls:
                return reply.content
            messages.append(_assistant_message(reply))
            for call in reply.tool_calls:
                calls.append(call)
                messages.append({"role": "tool", "tool_name": call.name, "content": self._call(call)})
        return self.llm.chat(messages, None).content  # out of tool rounds: it must answer now

    def _call(self, call: ToolCall) -> str:
        """Run one function call; bad arguments become an error message for the model, not an exception."""
        args = call.arguments
        try:
            if call.name == "search_memory":
                limit = max(1, min(20, int(args.get("max_results", 5))))
                hits = self.memory.search(str(args["query"]), k=limit, mode="memory")
                return json.dumps([{"text": h.text, "score": round(h.score, 3)} for h in hits])
            if call.name == "store_memory":
                kind = str(args.get("kind", "episodic"))
                importance = args.get("importance")
                [cell] = self.memory.add(
                    str(args["content"]), kind=kind, importance=None if importance is None else float(importance)
                )
                return json.dumps({"stored": cell, "kind": kind})
            return json.dumps({"error": f"unknown function {call.name}"})
        except (KeyError, TypeError, ValueError, MagneticError) as error:
            return json.dumps({"error": f"{type(error).__name__}: {error}"})


def _assistant_message(reply: LLMReply) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": reply.content,
        "tool_calls": [{"function": {"name": c.name, "arguments": c.arguments}} for c in reply.tool_calls],
    }
