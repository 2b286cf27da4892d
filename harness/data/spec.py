"""What `--dataset` names, parsed once: `locomo:FILE`, `longmemeval:FILE`, `beam:DIR`, or a BEIR directory."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from harness.data.beir import DatasetFormatError

Kind = Literal["locomo", "longmemeval", "beam", "beir"]
PREFIXED: tuple[Kind, ...] = ("locomo", "longmemeval", "beam")


@dataclass(frozen=True)
class DatasetSpec:
    kind: Kind
    location: Path

    @classmethod
    def parse(cls, text: str) -> DatasetSpec:
        """`kind:PATH` for the prefixed kinds; anything else is a BEIR directory."""
        kind, colon, location = text.partition(":")
        for known in PREFIXED:
            if colon and kind == known:
                if not location:
                    raise DatasetFormatError(f"{text}: give {kind}:PATH")
                return cls(known, Path(location))
        return cls("beir", Path(text))

    @property
    def dialogue(self) -> bool:
        """A dialogue benchmark: one memory per conversation."""
        return self.kind in ("locomo", "longmemeval")

    def __str__(self) -> str:
        return str(self.location) if self.kind == "beir" else f"{self.kind}:{self.location}"
