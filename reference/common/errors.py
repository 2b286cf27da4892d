"""The engine's typed exceptions: one small hierarchy, every message says what to do."""


class MagneticError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidInputError(MagneticError, ValueError):
    """Text, vector, id, k or option that the engine cannot accept."""


class DimensionMismatchError(InvalidInputError):
    """A vector (or a store) whose dimension differs from the memory's."""


class EncoderMismatchError(InvalidInputError):
    """A store whose vectors another encoder made (same dimension, different meaning)."""


class NotFoundError(MagneticError, KeyError):
    """An id that the memory does not hold."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class BackendUnavailableError(MagneticError, ConnectionError):
    """A Chroma server, an Ollama server or an optional package that cannot be reached."""


class VectorSegmentUnreadableError(BackendUnavailableError):
    """Chroma cannot read a collection's vector segment (derived data: its records are intact)."""


class InvariantError(MagneticError, AssertionError):
    """The memory's derived state disagrees with its cells (a bug: please report it with the message)."""


class StoreDamagedError(MagneticError):
    """A persisted cell that cannot be read back; the message names it."""


class NamespaceOwnedError(BackendUnavailableError):
    """A namespace on a Chroma server that another live process serves (`store/lease.py`)."""


class LeaseLostError(BackendUnavailableError):
    """This process can no longer vouch that it alone serves its namespace: another took it over, or its
    lease could not be renewed in time (`store/lease.py`)."""


class ScopeElsewhereError(NamespaceOwnedError):
    """A scope that another engine process serves (`store/shards.py`): `address` is where to send its calls."""

    def __init__(self, message: str, address: str) -> None:
        super().__init__(message)
        self.address = address
