"""MagneticBench's reference engine: cellular agent memory with online concept groups."""

from .cells import CellRecord as Cell
from .concepts import Concept
from .config import MemoryConfig, ScoringWeights
from .errors import (
    BackendUnavailableError,
    DimensionMismatchError,
    EncoderMismatchError,
    InvalidInputError,
    MagneticError,
    NotFoundError,
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
    "MagneticError",
    "MemoryConfig",
    "MemoryStats",
    "NotFoundError",
    "ScoringWeights",
    "StoreDamagedError",
]
