"""Continuous generation in chunks: `/infinite [--chunks N] PROMPT`.

Each chunk is streamed from the model with only the last `window` chunks as context (a rolling
window, so the prompt stays bounded however long the text grows). Generation stops when the model
writes the completion marker, when a chunk comes back empty, or at the chunk limit — whichever
comes first; the result says which.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...common.errors import MagneticError
from .base import BaseTool, ToolResult

if TYPE_CHECKING:
    from ..agent import MemoryAgent

DONE_MARKER = "[END]"
DEFAULT_CHUNKS = 5
MAX_CHUNKS = 100


class InfiniteTool(BaseTool):
    name = "infinite"
    description = f"generate a long text in chunks: /infinite [--chunks N (≤ {MAX_CHUNKS})] PROMPT"

    def __init__(self, window: int = 2) -> None:
        self.window = window

    def run(self, args: str, agent: MemoryAgent) -> ToolResult:
        limit, prompt = _parse(args)
        if limit is None or not prompt:
            return ToolResult(False, f"usage: {self.description}")
        if agent.llm is None:
            return ToolResult(False, "no language model is reachable")
        chunks: list[str] = []
        reason = "chunk limit"
        try:
            for _ in range(limit):
                context = "\n".join(chunks[-self.window :])
                messages = [
                    {
                        "role": "system",
                        "content": f"{agent.persona}\nContinue the text. Write {DONE_MARKER} when it is complete.",
                    },
                    {
                        "role": "user",
                        "content": f"Task: {prompt}\n\nThe text so far ends with:\n{context or '(start)'}",
                    },
                ]
                chunk = "".join(agent.llm.stream(messages)).strip()
                finished = DONE_MARKER in chunk
                chunk = chunk.replace(DONE_MARKER, "").strip()
                if chunk:
                    chunks.append(chunk)
                if finished or not chunk:
                    reason = "complete" if finished else "empty chunk"
                    break
        except MagneticError as error:
            return ToolResult(False, f"stopped after {len(chunks)} chunks: {error}", {"chunks": chunks})
        return ToolResult(True, "\n\n".join(chunks), {"chunks": chunks, "stopped": reason, "limit": limit})


def _parse(args: str) -> tuple[int | None, str]:
    words = args.split()
    if words[:1] == ["--chunks"]:
        if len(words) < 2 or not words[1].isdigit() or not 1 <= int(words[1]) <= MAX_CHUNKS:
            return None, ""
        return int(words[1]), " ".join(words[2:])
    return DEFAULT_CHUNKS, " ".join(words)
