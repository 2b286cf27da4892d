"""MagneticBench's reference engine: cellular agent memory with online concept groups."""

from .cells.table import CellRecord as Cell
from .common.config import MemoryConfig, ScoringWeights
from .common.errors import (
    BackendUnavailableError,
    DimensionMismatchError,
    EncoderMismatchError,
    InvalidInputError,
    LeaseLostError,
    MagneticError,
    NamespaceOwnedError,
    NotFoundError,
    ScopeElsewhereError,
    StoreDamagedError,
)
from .common.ollama_connection import OllamaConnection
from .groups.concepts import Concept, concept_of_group
from .memory import CellularMemory
from .search.hit import Hit
from .search.pipeline import Mode as SearchMode
from .stats import MemoryStats

__all__ = [
    "BackendUnavailableError",
    "Cell",
    "CellularMemory",
    "Concept",
    "DimensionMismatchError",
    "EncoderMismatchError",
    "Hit",
    "InvalidInputError",
    "LeaseLostError",
    "MagneticError",
    "MemoryConfig",
    "MemoryStats",
    "NamespaceOwnedError",
    "NotFoundError",
    "OllamaConnection",
    "ScopeElsewhereError",
    "ScoringWeights",
    "SearchMode",
    "StoreDamagedError",
    "concept_of_group",
]
