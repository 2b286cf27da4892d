"""Renewing a claim on a namespace in the background: the Chroma server's lease and PostgreSQL's ownership both
renew themselves from a daemon thread that holds them only while renewing."""

from __future__ import annotations

import threading
import weakref
from typing import Protocol


class Renewable(Protocol):
    def renew(self) -> bool: ...


def keep_renewing(claim: weakref.ref[Renewable], stop: threading.Event, every: float) -> None:
    """Renew every `every` seconds until stopped or lost, or until the claim is dropped (held only while renewing,
    so that dropping it is never delayed by this thread)."""
    while not stop.wait(every):
        held = claim()
        if held is None or not held.renew():
            return
        del held
