"""MagneticBench's reference engine: cellular agent memory with online concept groups."""

from .cells import CellRecord as Cell
from .config import MemoryConfig, ScoringWeights
from .errors import BackendUnavailableError, DimensionMismatchError, InvalidInputError, MagneticError, NotFoundError
from .hit import Hit
from .memory import CellularMemory
from .stats import MemoryStats

__all__ = [
    "BackendUnavailableError",
    "Cell",
    "CellularMemory",
    "DimensionMismatchError",
    "Hit",
    "InvalidInputError",
    "MagneticError",
    "MemoryConfig",
    "MemoryStats",
    "NotFoundError",
    "ScoringWeights",
]
