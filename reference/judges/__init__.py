"""Conflict judges: the deterministic offline judge (CI's) and an LLM judge over Ollama."""

from .base import Conflict, ConflictJudge, JudgeError, Statement
from .offline import OfflineJudge
from .ollama import OllamaJudge

__all__ = ["Conflict", "ConflictJudge", "JudgeError", "OfflineJudge", "OllamaJudge", "Statement"]
