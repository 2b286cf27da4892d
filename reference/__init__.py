"""MagneticBench's reference engine: cellular agent memory with online concept groups."""

from .cells import CellRecord as Cell
from .concepts import Concept
from .config import MemoryConfig, ScoringWeights
from .errors import (
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
from .hit import Hit
from .memory import CellularMemory
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
    "ScopeElsewhereError",
    "ScoringWeights",
    "StoreDamagedError",
]
